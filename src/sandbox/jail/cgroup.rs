//! Cgroups per run: a pids cgroup, the process limit that binds root too (`RLIMIT_NPROC` does
//! not), and a list of every process the run started, so that none outlives it — not even one
//! that left the process group with `setsid`; and a memory cgroup, the memory limit of the whole
//! run (`RLIMIT_AS`, the fallback, bounds each process's address space instead).
//!
//! cgroup v2 (the controller enabled in the unified hierarchy) and v1 (`/sys/fs/cgroup/pids`,
//! `/sys/fs/cgroup/memory`) are both used when writable. A memory cgroup is made below the
//! cgroup Reasonix itself is in, where it can be, so that the limits Reasonix runs under still
//! hold for its commands. Where no cgroup can be made, the run falls back to `RLIMIT_NPROC` and
//! the process group, or to `RLIMIT_AS`, and the plan says so. Where one can but a run's own
//! cannot be made, `enforce` refuses that run and `best_effort` falls back for it and says so in
//! the run's result. When both controllers live in one (v2) hierarchy, a run has one cgroup with
//! both limits.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Candidate parents for a run's cgroup.
const PARENTS: &[&str] = &[
    "/sys/fs/cgroup/pids",
    "/sys/fs/cgroup/unified",
    "/sys/fs/cgroup",
];

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A cgroup made to try its parent, kept for a plan's first run (`memory`: the memory cgroup's
/// trial, else the pids cgroup's).
#[derive(Debug)]
pub(super) struct Tried {
    pub memory: bool,
    pub cgroup: Cgroup,
}

/// The cgroups a probe made for a plan (`keep`), until that plan takes them ([`take_tried`]).
static TRIED: Mutex<Vec<Tried>> = Mutex::new(Vec::new());

/// Keeps a trial's cgroup for the plan that asked for the probe, or removes it now.
fn tried(cgroup: Cgroup, memory: bool, keep: bool) {
    if keep && let Ok(mut tried) = TRIED.lock() {
        tried.push(Tried { memory, cgroup });
    }
}

/// The cgroups the probe made to try their parents for a plan (`available…(true)`), for that
/// plan's first run, instead of removing them and making them again (issue 12). Whoever probes
/// with `keep` takes them at once: a cgroup nobody takes would outlive the process.
pub(super) fn take_tried() -> Vec<Tried> {
    match TRIED.lock() {
        Ok(mut tried) => std::mem::take(&mut *tried),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    }
}

/// A folder where a memory cgroup can be made, if any: tried by making one and setting its
/// limit; the cgroup is then removed, or kept for [`take_tried`] (`keep`). Below Reasonix's own
/// cgroup first, in each hierarchy that has the memory controller, then at the root of the
/// unified hierarchy.
pub fn available_memory(keep: bool) -> Option<PathBuf> {
    memory_parents(own()).into_iter().find(|p| {
        if !p.join("cgroup.procs").exists() {
            return false;
        }
        reclaim(p);
        match Cgroup::make(p).and_then(|cg| cg.limit_memory(64 << 20).map(|()| cg)) {
            Ok(cg) => {
                tried(cg, true, keep);
                true
            }
            Err(_) => false,
        }
    })
}

/// Where a memory cgroup may be made, given `/proc/self/cgroup`, best first.
fn memory_parents(own: &str) -> Vec<PathBuf> {
    let mut v1 = Vec::new();
    let mut v2 = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let below = |root: &str| PathBuf::from(root).join(path.trim_start_matches('/'));
        if controllers.is_empty() {
            v2.push(below("/sys/fs/cgroup"));
            v2.push(below("/sys/fs/cgroup/unified"));
        } else if controllers.split(',').any(|c| c == "memory") {
            v1.push(below(&format!("/sys/fs/cgroup/{controllers}")));
            v1.push(below("/sys/fs/cgroup/memory"));
        }
    }
    let mut all: Vec<PathBuf> = v2.into_iter().chain(v1).collect();
    all.extend(["/sys/fs/cgroup", "/sys/fs/cgroup/unified"].map(PathBuf::from));
    let mut seen = Vec::new();
    all.retain(|p| {
        let new = !seen.contains(p);
        seen.push(p.clone());
        new
    });
    all
}

/// Where a pids cgroup could be made, read without making one (a dry run's plan): the first
/// candidate parent that exists, may be written, and gives a cgroup made in it the pids
/// controller.
pub fn expected() -> Option<PathBuf> {
    PARENTS
        .iter()
        .map(PathBuf::from)
        .find(|p| could_make(p, "pids"))
}

/// Where a memory cgroup could be made, read without making one (a dry run's plan), among the
/// parents [`available_memory`] tries, in its order.
pub fn expected_memory() -> Option<PathBuf> {
    memory_parents(own())
        .into_iter()
        .find(|p| could_make(p, "memory"))
}

/// `/proc/self/cgroup`, read once per process (Reasonix never moves itself to another cgroup):
/// where the memory cgroups are sought, and part of the probe's kept answer's key.
pub(in crate::sandbox::jail) fn own() -> &'static str {
    static OWN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWN.get_or_init(|| fs::read_to_string("/proc/self/cgroup").unwrap_or_default())
}

/// `/proc/self/mountinfo`, read the first time a v1 hierarchy needs it (a dry run's plan is
/// read once per process).
fn mountinfo() -> &'static str {
    static MOUNTS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MOUNTS.get_or_init(|| fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// Whether a cgroup made in `parent` would get `controller`, by what the system says: the
/// parent is a cgroup that may be written, and either (v2) its `cgroup.subtree_control` names
/// the controller, or (v1) the hierarchy it lies in is mounted with it.
fn could_make(parent: &Path, controller: &str) -> bool {
    use nix::unistd::{AccessFlags, access};
    if !parent.join("cgroup.procs").exists() || access(parent, AccessFlags::W_OK).is_err() {
        return false;
    }
    if let Ok(subtree) = fs::read_to_string(parent.join("cgroup.subtree_control")) {
        return subtree.split_whitespace().any(|c| c == controller);
    }
    v1_hierarchy(mountinfo(), parent)
        .is_some_and(|options| options.split(',').any(|o| o == controller))
}

/// The super options of the cgroup v1 mount `path` lies in (its longest mount point), from
/// `/proc/self/mountinfo`.
fn v1_hierarchy<'m>(mountinfo: &'m str, path: &Path) -> Option<&'m str> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (mount, fs) = line.split_once(" - ")?;
            let point = mount.split(' ').nth(4)?;
            let mut fs = fs.split(' ');
            let (kind, _source, options) = (fs.next()?, fs.next()?, fs.next()?);
            (kind == "cgroup" && path.starts_with(point)).then_some((point.len(), options))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, options)| options)
}

/// A folder where a pids cgroup can be made, if any: tried by making one; it is then removed,
/// or kept for [`take_tried`] (`keep`).
pub fn available(keep: bool) -> Option<PathBuf> {
    PARENTS.iter().map(PathBuf::from).find(|p| {
        if !p.join("cgroup.procs").exists() {
            return false;
        }
        reclaim(p);
        match Cgroup::create(p, 1) {
            Ok(cg) => {
                tried(cg, false, keep);
                true
            }
            Err(_) => false,
        }
    })
}

/// Reclaims the run cgroups under `parent` whose owner is gone (issue 28, item 9): a Reasonix
/// killed with `SIGKILL` or crashed never removed them, and what its command left running in
/// them (a background process of a run without a PID namespace) still runs there. Every
/// process in each is killed and the cgroup removed, as its owner would have on drop. Its owner
/// is the pid in its name (`reasonix-<pid>-<n>`); a pid that is alive again as someone else's
/// process keeps its cgroups until that process is gone too, which errs on the side of leaving
/// a cgroup rather than killing a live run's processes. Returns the cgroups it removed.
pub fn reclaim(parent: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for e in super::owners::gone(parent, "reasonix-") {
        let path = e.path();
        if !path.is_dir() {
            continue;
        }
        // Dropping it kills what is in it and removes it.
        drop(Cgroup { path: path.clone() });
        if !path.exists() {
            removed.push(path);
        }
    }
    removed
}

/// One run's cgroup; removed on drop after every process in it is killed.
#[derive(Debug)]
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// Makes `reasonix-<pid>-<n>` under `parent` with `pids.max` set.
    pub fn create(parent: &Path, max_processes: u64) -> std::io::Result<Cgroup> {
        let cg = Cgroup::make(parent)?;
        cg.limit_processes(max_processes)?;
        Ok(cg)
    }

    /// Makes `reasonix-<pid>-<n>` under `parent`, without limits yet.
    pub fn make(parent: &Path) -> std::io::Result<Cgroup> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("reasonix-{}-{n}", std::process::id()));
        fs::create_dir(&path)?;
        Ok(Cgroup { path })
    }

    /// Sets `pids.max`.
    pub fn limit_processes(&self, max_processes: u64) -> std::io::Result<()> {
        let max = self.path.join("pids.max");
        if !max.exists() {
            return Err(std::io::Error::other(
                "the pids controller is not enabled here",
            ));
        }
        fs::write(&max, max_processes.to_string())
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bounds the memory of every process in the cgroup together, swap included: `memory.max`
    /// and `memory.swap.max` (v2), or `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes`
    /// (v1; the second may never be below the first, so where the first cannot be raised above
    /// it, the second is raised first).
    pub fn limit_memory(&self, bytes: u64) -> std::io::Result<()> {
        let v2 = self.path.join("memory.max");
        let v1 = self.path.join("memory.limit_in_bytes");
        if v2.exists() {
            fs::write(&v2, bytes.to_string())?;
            let swap = self.path.join("memory.swap.max");
            if swap.exists() {
                fs::write(swap, "0")?;
            }
            Ok(())
        } else if v1.exists() {
            let swap = self.path.join("memory.memsw.limit_in_bytes");
            let value = bytes.to_string();
            match fs::write(&v1, &value) {
                Ok(()) if swap.exists() => fs::write(swap, &value),
                Ok(()) => Ok(()),
                Err(e) if swap.exists() => {
                    fs::write(&swap, &value)?;
                    fs::write(&v1, &value).map_err(|_| e)
                }
                Err(e) => Err(e),
            }
        } else {
            Err(std::io::Error::other(
                "the memory controller is not enabled here",
            ))
        }
    }

    /// The file a child writes `0` to, to join (no allocation after fork), opened for writing:
    /// `tasks` on cgroup v1, `cgroup.procs` on v2.
    ///
    /// On v1, `tasks` moves the calling thread — the whole process, since a child about to exec
    /// has one thread — without the global lock that moving a thread group through
    /// `cgroup.procs` takes for writing (`cgroup_threadgroup_rwsem`, which waits for an RCU
    /// grace period when no other writer held it lately): 20 µs a join instead of 90 µs, and up
    /// to 13 ms measured for the first join after a pause. V2 has no such file for a cgroup
    /// that is not threaded.
    pub fn procs(&self) -> std::io::Result<OwnedFd> {
        let tasks = self.path.join("tasks");
        let file = if tasks.exists() {
            tasks
        } else {
            self.path.join("cgroup.procs")
        };
        let file = fs::OpenOptions::new().write(true).open(file)?;
        Ok(OwnedFd::from(file))
    }

    /// Kills every process still in the cgroup, until none is left: `Ok` once its
    /// `cgroup.procs` reads empty. Gives up after [`KILL_ROUNDS`] rounds (a process the kernel
    /// cannot end, such as one stuck in uninterruptible sleep) with an error naming the cgroup and
    /// how many are left, for the caller to report; an unreadable `cgroup.procs` is an error too,
    /// since then nothing shows the cgroup empty.
    pub fn kill_all(&self) -> std::io::Result<()> {
        let mut left = 0;
        for _ in 0..KILL_ROUNDS {
            let list = fs::read_to_string(self.path.join("cgroup.procs"))?;
            let pids: Vec<i32> = list.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.is_empty() {
                return Ok(());
            }
            left = pids.len();
            for pid in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Err(std::io::Error::other(format!(
            "{left} process(es) still in {} after {KILL_ROUNDS} rounds of SIGKILL",
            self.path.display()
        )))
    }
}

/// How many times [`Cgroup::kill_all`] reads the cgroup and kills what is in it before giving
/// up (2 ms apart).
pub const KILL_ROUNDS: usize = 50;

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The kernel removes only an empty cgroup (`EBUSY` while a process is in it): the
        // common case, a cgroup its run left empty, costs one `rmdir`, not a read of its
        // `cgroup.procs` first.
        if fs::remove_dir(&self.path).is_ok() {
            return;
        }
        // Whoever held the cgroup reported a failure already (a run's result, `Jailed::kill`);
        // here, a cgroup that cannot be emptied is only left behind.
        let _ = self.kill_all();
        // The folder can only go once it is empty; a zombie may hold it a little longer.
        for _ in 0..50 {
            if fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// Writes `0` to an open [`Cgroup::procs`]: moves the calling process into that cgroup (on v1,
/// the calling thread: call it where the process has one thread). Safe to call between fork and
/// exec (one write, no allocation).
pub fn join(procs: &OwnedFd) -> std::io::Result<()> {
    nix::unistd::write(procs, b"0")
        .map(|_| ())
        .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_cgroup_is_removed_and_what_is_left_in_it_killed_first() {
        use std::os::unix::process::ExitStatusExt;
        let parent = available(false).expect("a pids cgroup can be made here (root, cgroups)");
        // Empty: removed at once.
        let empty = Cgroup::make(&parent).unwrap();
        let path = empty.path().to_path_buf();
        drop(empty);
        assert!(!path.exists(), "{} left behind", path.display());
        // A process in it: the rmdir is refused (EBUSY) until the process is killed.
        let cg = Cgroup::make(&parent).unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        fs::write(cg.path().join("cgroup.procs"), sleeper.id().to_string()).unwrap();
        let path = cg.path().to_path_buf();
        drop(cg);
        assert!(!path.exists(), "{} left behind", path.display());
        let status = sleeper.wait().unwrap();
        assert_eq!(status.signal(), Some(nix::libc::SIGKILL), "{status:?}");
    }

    #[test]
    fn kill_all_gives_up_with_an_error_that_says_what_is_left_and_succeeds_once_empty() {
        // A folder posing as a cgroup whose list never empties: a pid above any pid_max, which
        // no process can have (kill fails with ESRCH, as for a process the kernel cannot end).
        let dir = tempfile::tempdir().unwrap();
        let procs = dir.path().join("cgroup.procs");
        fs::write(&procs, format!("{}\n", i32::MAX)).unwrap();
        let cg = Cgroup {
            path: dir.path().to_path_buf(),
        };
        let e = cg.kill_all().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "1 process(es) still in {} after 50 rounds of SIGKILL",
                dir.path().display()
            )
        );
        fs::write(&procs, "").unwrap();
        cg.kill_all().unwrap();
        // Unreadable: nothing shows it empty.
        fs::remove_file(&procs).unwrap();
        assert!(cg.kill_all().is_err());
    }

    #[test]
    fn a_memory_cgroup_is_sought_below_reasonixs_own_first() {
        let own = "9:name=systemd:/\n4:memory:/api/abc\n1:cpu:/\n0::/user.slice/x\n";
        let parents: Vec<String> = memory_parents(own)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            parents,
            [
                "/sys/fs/cgroup/user.slice/x",
                "/sys/fs/cgroup/unified/user.slice/x",
                "/sys/fs/cgroup/memory/api/abc",
                "/sys/fs/cgroup",
                "/sys/fs/cgroup/unified",
            ]
        );
    }
}
