//! What a finished run leaves for the next runs of its plan: its cgroups and its TMPDIR,
//! emptied, so that the spawn path makes and removes neither.
//!
//! Making and removing a cgroup costs about 0.1 ms per controller. Making and removing a folder
//! costs more than the rest of a jailed spawn together on a filesystem like this machine's `/`
//! (ext4 without a journal: `mkdir` skips every inode removed in the last minute, and each run
//! removes one; 1.6–2.6 ms for a `mkdir` and `rmdir` of `/tmp` measured here, 10 µs on tmpfs).
//!
//! Only what is known to be empty of the run is kept:
//!
//! - cgroups, once every process in them is gone, and only from a run that had every cgroup its
//!   plan promised, so that a run that takes them has them all;
//! - a TMPDIR, only when the run's cgroups showed every process of the run gone (a process left
//!   behind could otherwise reach the next run's files through the folder its Landlock domain
//!   grants), and only once emptied whole: the next run finds it as a new one, mode `0700`,
//!   empty. A jailed run without cgroups (no cgroup can be made here) gets a new folder each
//!   time. Under `sandbox.bash: off` the TMPDIR is kept whatever is left: no run is confined
//!   there, so a process left behind reaches every folder of Reasonix's user anyway, the next
//!   run's TMPDIR included, kept or new.
//!
//! Everything kept is removed with the plan.

use std::path::Path;
use std::sync::Mutex;

use super::RunCgroups;

/// The most of each a plan keeps (one per run that may go on at once).
const IDLE: usize = 4;

/// Takes the last one kept, if any.
fn pop<T>(idle: &Mutex<Vec<T>>) -> Option<T> {
    match idle.lock() {
        Ok(mut idle) => idle.pop(),
        Err(poisoned) => poisoned.into_inner().pop(),
    }
}

/// Keeps `value` unless enough are kept (then it is dropped, which removes it).
fn keep<T>(idle: &Mutex<Vec<T>>, value: T) {
    if let Ok(mut idle) = idle.lock()
        && idle.len() < IDLE
    {
        idle.push(value);
    }
}

/// The cgroups of finished runs of one plan, emptied, for its next runs.
#[derive(Debug, Default)]
pub(crate) struct IdleCgroups(Mutex<Vec<RunCgroups>>);

impl IdleCgroups {
    /// Cgroups a finished run left, if any.
    pub(super) fn take(&self) -> Option<RunCgroups> {
        pop(&self.0)
    }

    /// Kills every process left in a finished run's `cgroups`, and keeps them for the next run
    /// when `whole` (the run had every cgroup its plan promised) and nothing is left in them;
    /// otherwise they are removed. Returns whether the cgroups show every process of the run
    /// gone: `Ok(false)` for a run without cgroups; an error when a process could not be killed
    /// (or a cgroup not read), which the run reports.
    pub(super) fn give_back(&self, cgroups: RunCgroups, whole: bool) -> std::io::Result<bool> {
        let mut killed = Ok(());
        for cg in &cgroups.groups {
            if let Err(e) = cg.kill_all() {
                killed = Err(e);
            }
        }
        killed?;
        let gone = !cgroups.groups.is_empty();
        if gone && whole {
            keep(&self.0, cgroups);
        }
        Ok(gone)
    }
}

/// The TMPDIRs of finished runs of one plan, emptied, for its next runs.
#[derive(Debug, Default)]
pub(crate) struct IdleTmpdirs(Mutex<Vec<tempfile::TempDir>>);

impl IdleTmpdirs {
    /// A TMPDIR a finished run left, emptied, if any.
    pub(super) fn take(&self) -> Option<tempfile::TempDir> {
        pop(&self.0)
    }

    /// Keeps a finished run's TMPDIR for the next run if it can be emptied whole; otherwise it
    /// is removed. Only for a run whose processes are all known to be gone.
    pub(super) fn give_back(&self, dir: tempfile::TempDir) {
        if emptied(dir.path()).is_ok() {
            keep(&self.0, dir);
        }
    }
}

/// Makes `dir` what a new TMPDIR is: a folder (not a link to one), mode `0700`, empty. Its
/// entries are removed without following links (`remove_dir_all` opens each folder with
/// `O_NOFOLLOW`).
fn emptied(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other("not a folder"));
    }
    // First: the run may have taken its own rights away (`chmod 0 $TMPDIR`). Only when changed:
    // each change is an inode write.
    if meta.permissions().mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let mut removed = false;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        removed = true;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    if removed && std::fs::read_dir(dir)?.next().is_some() {
        return Err(std::io::Error::other("not empty"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tmpdir_is_kept_emptied_of_files_folders_links_and_taken_rights() {
        use std::os::unix::fs::PermissionsExt;
        let outside = tempfile::tempdir().unwrap();
        let kept = outside.path().join("kept.txt");
        std::fs::write(&kept, "k").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().to_path_buf();
        std::fs::write(p.join("a"), "a").unwrap();
        std::fs::create_dir_all(p.join("d/e")).unwrap();
        std::fs::write(p.join("d/e/f"), "f").unwrap();
        // Links out of it are removed, not followed.
        std::os::unix::fs::symlink(outside.path(), p.join("to-dir")).unwrap();
        std::os::unix::fs::symlink(&kept, p.join("to-file")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
        let idle = IdleTmpdirs::default();
        idle.give_back(dir);
        let again = idle.take().expect("kept");
        assert_eq!(again.path(), p);
        assert_eq!(std::fs::read_dir(&p).unwrap().count(), 0);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700);
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "k");
        assert!(idle.take().is_none(), "taken once");
    }

    #[test]
    fn a_tmpdir_replaced_by_a_link_is_not_kept() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x"), "x").unwrap();
        let parent = tempfile::tempdir().unwrap();
        let dir = tempfile::Builder::new().tempdir_in(parent.path()).unwrap();
        let p = dir.path().to_path_buf();
        std::fs::remove_dir(&p).unwrap();
        std::os::unix::fs::symlink(outside.path(), &p).unwrap();
        let idle = IdleTmpdirs::default();
        idle.give_back(dir);
        assert!(idle.take().is_none());
        assert!(outside.path().join("x").exists(), "nothing behind the link");
    }
}
