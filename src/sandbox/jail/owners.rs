//! Things a Reasonix makes that outlive it if it is killed, named for the process that owns them
//! (`<prefix><pid>-…`): a run's cgroups (`cgroup::reclaim`), a plan's in-memory upper layers
//! (`uppers`) and its temporary folder (`plan_folder`). The next Reasonix that makes one finds
//! those whose owner is gone here. A pid alive again as someone else's process keeps its
//! entries until that process is gone too: an entry is left rather than a live run's taken.

use std::path::Path;

/// The entries of `dir` named `<prefix><pid>-…` whose owner (that pid) is no longer running.
pub(super) fn gone(dir: &Path, prefix: &str) -> Vec<std::fs::DirEntry> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| owner_gone(&e.file_name(), prefix))
        .collect()
}

/// Whether `name` is `<prefix><pid>-…` and that pid is no longer running.
pub(super) fn owner_gone(name: &std::ffi::OsStr, prefix: &str) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix(prefix))
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<i32>().ok())
        .is_some_and(|owner| !alive(owner))
}

/// Removes, whole, the folders of `dir` named `<prefix><pid>-…` whose owner is gone.
pub(super) fn remove_gone(dir: &Path, prefix: &str) {
    for e in gone(dir, prefix) {
        let _ = std::fs::remove_dir_all(e.path());
    }
}

/// Whether process `pid` exists (a signal 0 reaches it, or it is someone else's).
fn alive(pid: i32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e != nix::errno::Errno::ESRCH,
    }
}
