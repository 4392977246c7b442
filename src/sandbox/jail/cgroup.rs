//! A pids cgroup per run: the process limit that binds root too (`RLIMIT_NPROC` does not), and a
//! list of every process the run started, so that none outlives it — not even one that left the
//! process group with `setsid`.
//!
//! cgroup v2 (a `pids` controller enabled in the unified hierarchy) and v1 (`/sys/fs/cgroup/pids`)
//! are both used when writable. Where neither is, the run falls back to `RLIMIT_NPROC` and the
//! process group, and the plan says so. Where one is but a run's own cannot be made, `enforce`
//! refuses that run and `best_effort` falls back for it and says so in the run's result.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Candidate parents for a run's cgroup.
const PARENTS: &[&str] = &[
    "/sys/fs/cgroup/pids",
    "/sys/fs/cgroup/unified",
    "/sys/fs/cgroup",
];

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A folder where a pids cgroup can be made, if any: tried by making and removing one.
pub fn available() -> Option<PathBuf> {
    PARENTS.iter().map(PathBuf::from).find(|p| {
        if !p.join("cgroup.procs").exists() {
            return false;
        }
        match Cgroup::create(p, 1) {
            Ok(cg) => {
                drop(cg);
                true
            }
            Err(_) => false,
        }
    })
}

/// One run's cgroup; removed on drop after every process in it is killed.
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// Makes `reasonix-<pid>-<n>` under `parent` with `pids.max` set.
    pub fn create(parent: &Path, max_processes: u64) -> std::io::Result<Cgroup> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("reasonix-{}-{n}", std::process::id()));
        fs::create_dir(&path)?;
        let cg = Cgroup { path };
        let max = cg.path.join("pids.max");
        if !max.exists() {
            return Err(std::io::Error::other(
                "the pids controller is not enabled here",
            ));
        }
        fs::write(&max, max_processes.to_string())?;
        Ok(cg)
    }

    /// `cgroup.procs`, opened for writing: a child writes `0` to it to join (no allocation
    /// after fork).
    pub fn procs(&self) -> std::io::Result<OwnedFd> {
        let file = fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.procs"))?;
        Ok(OwnedFd::from(file))
    }

    /// Kills every process still in the cgroup, until none is left.
    pub fn kill_all(&self) {
        for _ in 0..50 {
            let Ok(list) = fs::read_to_string(self.path.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<i32> = list.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill_all();
        // The folder can only go once it is empty; a zombie may hold it a little longer.
        for _ in 0..50 {
            if fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// Writes `0` to an open `cgroup.procs`: moves the calling process into that cgroup. Safe to
/// call between fork and exec (one write, no allocation).
pub fn join(procs: &OwnedFd) -> std::io::Result<()> {
    nix::unistd::write(procs, b"0")
        .map(|_| ())
        .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
}
