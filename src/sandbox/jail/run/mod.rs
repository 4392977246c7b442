//! Running one process under a plan: spawn, jail between fork and exec, watch the clock, capture
//! a bounded output, and leave nothing behind.
//!
//! # What happens to the process group
//!
//! The child leads a new process group. When the main process exits — or the wall clock runs
//! out — the whole group is killed with `SIGKILL`, and, where the run has a pids cgroup, every
//! process still in it too (even one that left the group with `setsid`). With a PID namespace,
//! the command is its pid 1, and the kernel kills everything in the namespace when it exits. So
//! a jailed command never leaves a background process behind.
//!
//! With namespaces, the child std forked is the launcher and the command its child
//! ([`namespace`]); without, the child std forked execs the command itself.
//!
//! # When Reasonix itself dies
//!
//! Each process of the chain dies with the one before it (`PR_SET_PDEATHSIG`, set and then
//! checked against a parent that may already be gone, so there is no window between fork and
//! `prctl`): a `kill -9` of Reasonix kills the launcher, the launcher's death kills the command,
//! and with a PID namespace everything the command started dies with it. Without one, what the
//! command left in the background lives on in the run's cgroups until the next Reasonix that
//! probes the jail reclaims the cgroups whose owner is gone (`cgroup::reclaim`).

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::resource::{Resource, setrlimit};
use nix::unistd::Pid;

use super::cgroup::{self, Cgroup};
use super::mounts::{self, Layer, Layout};
use super::shape::{Shape, Writes};
use super::{Mode, Plan};

mod child;
mod idle;
mod namespace;
mod watch;

pub use child::Jailed;
pub(crate) use child::spawn;

pub(super) use idle::{IdleCgroups, IdleTmpdirs};
use namespace::{Exec, Prepared};
pub(super) use namespace::{namespaces_work, overlays_work};
use watch::Watch;

/// What to do with the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// Keep at most this many bytes of each stream, head and tail.
    Bounded(usize),
    /// Let the output go to Reasonix's own stdout and stderr (`sandbox exec`).
    Inherit,
}

/// How the process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// The wall clock ran out; the group was killed.
    TimedOut,
}

impl Exit {
    /// The status a shell would report: the exit status, 128 + signal, or 124 for a timeout
    /// (as `timeout(1)` does).
    pub fn code(self) -> i32 {
        match self {
            Exit::Exited(c) => c,
            Exit::Signaled(s) => 128 + s,
            Exit::TimedOut => 124,
        }
    }
}

/// A finished run.
#[derive(Debug)]
pub struct RunResult {
    /// How it ended.
    pub exit: Exit,
    /// Standard output, bounded (empty with [`Capture::Inherit`]).
    pub stdout: String,
    /// Standard error, bounded.
    pub stderr: String,
    /// The true size of standard output.
    pub stdout_bytes: u64,
    /// The true size of standard error.
    pub stderr_bytes: u64,
    /// How long it ran.
    pub duration: Duration,
    /// What the plan promised and this run could not apply (under `best_effort`; `enforce`
    /// refuses the run instead), in words. Empty when the run kept every promise.
    pub not_enforced: Vec<String>,
    /// Each connection its processes asked the egress proxy for, in order (empty without one).
    pub connections: Vec<crate::egress::Connection>,
    /// How it could write: as its shape asked, or in place where `best_effort` could not
    /// observe (then [`RunResult::not_enforced`] says why).
    pub writes: Writes,
    /// What it wrote, kept apart, when it wrote observed: the upper layer of each write root,
    /// every process of the run gone. Nothing of it is in the workspace yet; dropping it
    /// discards it ([`crate::effects`] reads, judges and commits it).
    pub observed: Option<Upper>,
}

/// The upper layers of a run that wrote observed: for each write root, the folder holding
/// what the run created, changed and deleted there (overlayfs's whiteouts and opaque marks
/// included), and the pass-through folders it wrote in place. Removed whole on drop.
#[derive(Debug)]
pub struct Upper {
    _dir: tempfile::TempDir,
    /// Each write root (canonical) and its upper layer.
    pub layers: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    /// The pass-through folders (canonical), written in place.
    pub passthrough: Vec<std::path::PathBuf>,
    /// When the run started (less 50 ms: file times come from a coarser clock): a pass-through
    /// file changed since was written by it (or beside it).
    pub started: std::time::SystemTime,
    /// overlayfs kept its marks in `user.overlay.*` (a user namespace), else `trusted.overlay.*`.
    pub userxattr: bool,
}

impl RunResult {
    /// One line for the reader of the output, when this run did not apply all of its plan.
    pub fn not_enforced_line(&self) -> Option<String> {
        (!self.not_enforced.is_empty()).then(|| {
            format!(
                "not enforced for this run: {}",
                self.not_enforced.join("; ")
            )
        })
    }
}

/// Why a process did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The plan refuses to run anything (enforce without a full backend), or a part it promises
    /// could not be set up for this run under `enforce`. Nothing was started.
    #[error("{0}")]
    Refused(String),
    /// Preparing the jail failed.
    #[error("cannot prepare the jail ({what}): {source}")]
    Setup {
        /// What was being prepared.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The process could not be started (the jail failed to apply, or the program is missing).
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The environment a jailed process gets: nothing of Reasonix's own (API keys stay out) but
/// what programs need to find themselves; `HOME` is the run's private one when given.
fn environment(tmp: &std::path::Path, home: Option<&std::path::Path>) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for key in [
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    ] {
        if let Ok(v) = std::env::var(key) {
            env.push((key.to_owned(), v));
        }
    }
    if let Some(home) = home {
        env.retain(|(k, _)| k != "HOME");
        env.push(("HOME".into(), home.display().to_string()));
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push((
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ));
    }
    env.push(("TMPDIR".into(), tmp.display().to_string()));
    env.push(("TERM".into(), "dumb".into()));
    env
}

/// How a child loses its capabilities between fork and exec, decided with the plan (before any
/// fork) from whether Reasonix holds `CAP_SETPCAP`, so that the plan's words and the hook are one
/// decision.
///
/// Either way the permitted, effective and inheritable sets are emptied with `capset` (which
/// empties the ambient set too): lowering one's own sets is always permitted. Uid 0 without any
/// capability is an ordinary user for every check but file ownership. (Landlock itself lets a
/// process with `CAP_SYS_PTRACE` read `/proc/<pid>/environ` of processes outside the sandbox;
/// without this, a root-run command could read Reasonix's own environment.) Exec cannot give a
/// capability back: `no_new_privs` (set before exec) limits what exec grants — to root, to a
/// setuid program, to file capabilities — to the permitted set the process already has, which
/// is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CapDrop {
    /// Reasonix holds `CAP_SETPCAP`: also drop every capability from 0 to `last` out of the
    /// bounding set, and lock `SECBIT_NOROOT` so that exec does not treat root as privileged.
    Full {
        /// The highest capability number (`/proc/sys/kernel/cap_last_cap`).
        last: u32,
    },
    /// It does not (the common case for a user other than root): the bounding set cannot be
    /// changed and stays as it is; the sets are still emptied.
    SetsOnly,
}

impl CapDrop {
    /// The drop a plan computed for `caps` applies.
    pub(super) fn for_capabilities(caps: &super::Capabilities) -> CapDrop {
        if caps.cap_setpcap {
            CapDrop::Full {
                last: highest_capability(),
            }
        } else {
            CapDrop::SetsOnly
        }
    }

    /// The plan's words for it.
    pub(super) fn words(self, uid: u32) -> String {
        const BOUNDING_KEPT: &str =
            "the bounding set stays as it is (emptying it needs CAP_SETPCAP, which Reasonix lacks)";
        match (self, uid) {
            (CapDrop::Full { .. }, _) => "capabilities: the bounding, permitted, effective, inheritable and ambient sets are emptied and SECBIT_NOROOT is locked, so the process runs without any, root too".into(),
            (CapDrop::SetsOnly, 0) => format!("capabilities: the permitted, effective, inheritable and ambient sets are emptied, so root runs without any, and no_new_privs keeps exec from giving any back; {BOUNDING_KEPT}"),
            (CapDrop::SetsOnly, _) => format!("capabilities: the permitted, effective, inheritable and ambient sets are emptied, and no_new_privs keeps setuid programs and file capabilities from granting any; {BOUNDING_KEPT}"),
        }
    }
}

/// The highest capability number this kernel knows, read before any fork from
/// `/proc/sys/kernel/cap_last_cap`. If it cannot be read: 63 (the most a capability set holds),
/// and the hook stops at the first number the kernel calls invalid.
fn highest_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|n| *n < 64)
        .unwrap_or(63)
}

/// Applies a [`CapDrop`]. Called between fork and exec: system calls only, on the stack
/// (`io::Error::last_os_error` holds a raw code and does not allocate). With
/// [`CapDrop::Full`] every step must succeed — the plan promised them — and the bounding set
/// and the securebits go first, while `CAP_SETPCAP` is still effective.
fn drop_capabilities(how: CapDrop) -> std::io::Result<()> {
    use nix::libc;
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    if let CapDrop::Full { last } = how {
        for cap in 0..=last {
            // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
            let rc = unsafe {
                libc::prctl(
                    libc::PR_CAPBSET_DROP,
                    libc::c_ulong::from(cap),
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                )
            };
            if rc != 0 {
                let err = std::io::Error::last_os_error();
                // Past the kernel's last capability (only when `last` is the fallback 63).
                if cap > 0 && err.raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(err);
            }
        }
        // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
        let bits = unsafe {
            libc::prctl(
                libc::PR_GET_SECUREBITS,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if bits < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Keep the bits already set (a locked one cannot be cleared), add ours.
        let bits = bits as libc::c_ulong | SECBIT_NOROOT | SECBIT_NOROOT_LOCKED;
        // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_SECUREBITS,
                bits,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: `header` and `data` are live, properly laid out (`struct __user_cap_header_struct`
    // and two `struct __user_cap_data_struct`, as _LINUX_CAPABILITY_VERSION_3 requires) for the
    // duration of the call; the kernel reads `data` and may write `header.version`.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// What this run applies instead of the pids cgroup its plan promised, when the cgroup cannot be
/// made: under `enforce`, nothing (the error refuses the run); otherwise `RLIMIT_NPROC`, and the
/// words for the run's result.
fn without_pids_cgroup(
    plan: &Plan,
    parent: &std::path::Path,
    error: &std::io::Error,
) -> Result<String, RunError> {
    let parent = parent.display();
    if plan.mode == Mode::Enforce {
        let instead = if plan.capabilities.uid == 0 {
            "RLIMIT_NPROC, the fallback, does not bind root"
        } else {
            "RLIMIT_NPROC, the fallback, counts every process of this user rather than this run's, and misses processes that leave the group"
        };
        return Err(RunError::Refused(format!(
            "sandbox.bash is enforce, and the pids cgroup the plan promises could not be made in {parent} ({error}); {instead}"
        )));
    }
    Ok(if plan.capabilities.uid == 0 {
        format!(
            "process count: the pids cgroup could not be made in {parent} ({error}), and RLIMIT_NPROC, set instead, does not bind root: this run's processes were not counted"
        )
    } else {
        format!(
            "process count: the pids cgroup could not be made in {parent} ({error}); RLIMIT_NPROC counted this user's processes instead, and processes that left the group could outlive the run"
        )
    })
}

/// What this run applies instead of the memory cgroup its plan promised, when the cgroup cannot
/// be made: under `enforce`, nothing (the error refuses the run); otherwise `RLIMIT_AS`, and the
/// words for the run's result.
fn without_memory_cgroup(
    plan: &Plan,
    parent: &std::path::Path,
    error: &std::io::Error,
) -> Result<String, RunError> {
    let parent = parent.display();
    if plan.mode == Mode::Enforce {
        return Err(RunError::Refused(format!(
            "sandbox.bash is enforce, and the memory cgroup the plan promises could not be made in {parent} ({error}); RLIMIT_AS, the fallback, bounds each process's address space rather than the run's memory"
        )));
    }
    Ok(format!(
        "memory: the memory cgroup could not be made in {parent} ({error}); RLIMIT_AS bounded each process's address space instead, so this run's processes together could use more"
    ))
}

/// The cgroups of one run, as the plan promised them, and what could not be had.
#[derive(Debug)]
pub(super) struct RunCgroups {
    /// Made (removed on drop, after killing what is left in them).
    groups: Vec<Cgroup>,
    /// The run has no pids cgroup: `RLIMIT_NPROC` instead.
    nproc: bool,
    /// The run has no memory cgroup: `RLIMIT_AS` instead.
    address_space: bool,
}

/// Makes a run's pids and memory cgroups where its plan promises them — one cgroup with both
/// limits when both controllers share a hierarchy. Under `enforce`, one that cannot be made
/// refuses the run; under `best_effort` its fallback is used and the words join `not_enforced`.
fn run_cgroups(plan: &Plan, not_enforced: &mut Vec<String>) -> Result<RunCgroups, RunError> {
    if let Some(ready) = plan.idle_cgroups.take() {
        return Ok(ready);
    }
    let caps = &plan.capabilities;
    let limits = plan.limits;
    let mut out = RunCgroups {
        groups: Vec::new(),
        nproc: true,
        address_space: true,
    };
    let shared = caps.cgroup_pids.is_some() && caps.cgroup_pids == caps.cgroup_memory;
    if let Some(parent) = &caps.cgroup_pids {
        match Cgroup::create(parent, limits.processes) {
            Ok(cg) => {
                out.nproc = false;
                if shared {
                    match cg.limit_memory(limits.memory_bytes) {
                        Ok(()) => out.address_space = false,
                        Err(e) => not_enforced.push(without_memory_cgroup(plan, parent, &e)?),
                    }
                }
                out.groups.push(cg);
            }
            Err(e) => {
                not_enforced.push(without_pids_cgroup(plan, parent, &e)?);
                if shared {
                    not_enforced.push(without_memory_cgroup(plan, parent, &e)?);
                }
            }
        }
    }
    if let Some(parent) = caps.cgroup_memory.as_ref().filter(|_| !shared) {
        let made =
            Cgroup::make(parent).and_then(|cg| cg.limit_memory(limits.memory_bytes).map(|()| cg));
        match made {
            Ok(cg) => {
                out.address_space = false;
                out.groups.push(cg);
            }
            Err(e) => not_enforced.push(without_memory_cgroup(plan, parent, &e)?),
        }
    }
    Ok(out)
}

/// Keeps for a plan's first run the cgroups its probe made to try their parents
/// (`cgroup::take_tried`), given the plan's limits, instead of removing them and making them
/// again (issue 12: two cgroups made and removed per `sandbox exec`). Only a whole set — every
/// cgroup the plan promises, each limit set — is kept, as a finished run's would be; anything
/// else is removed (dropped), and the first run makes its own.
pub(super) fn seed_cgroups(plan: &Plan, tried: Vec<cgroup::Tried>) {
    if plan.mode == Mode::Off || plan.dry || tried.is_empty() {
        return;
    }
    let caps = &plan.capabilities;
    let limits = plan.limits;
    let shared = caps.cgroup_pids.is_some() && caps.cgroup_pids == caps.cgroup_memory;
    let (mut pids, mut memory) = (None, None);
    for t in tried {
        match (t.memory, &caps.cgroup_pids, &caps.cgroup_memory) {
            (false, Some(parent), _) if t.cgroup.path().parent() == Some(parent) => {
                pids = Some(t.cgroup);
            }
            (true, _, Some(parent)) if t.cgroup.path().parent() == Some(parent) => {
                memory = Some(t.cgroup);
            }
            _ => {}
        }
    }
    let missing = || std::io::Error::other("not tried");
    let whole = (|| -> std::io::Result<Vec<Cgroup>> {
        let mut groups = Vec::new();
        if caps.cgroup_pids.is_some() {
            let cg = pids.take().ok_or_else(missing)?;
            cg.limit_processes(limits.processes)?;
            if shared {
                cg.limit_memory(limits.memory_bytes)?;
            }
            groups.push(cg);
        }
        if caps.cgroup_memory.is_some() && !shared {
            let cg = memory.take().ok_or_else(missing)?;
            cg.limit_memory(limits.memory_bytes)?;
            groups.push(cg);
        }
        Ok(groups)
    })();
    if let Ok(groups) = whole
        && !groups.is_empty()
    {
        let ready = RunCgroups {
            groups,
            nproc: caps.cgroup_pids.is_none(),
            address_space: caps.cgroup_memory.is_none(),
        };
        // Nothing ever ran in them: they show empty, and are kept.
        let _ = plan.idle_cgroups.give_back(ready, true);
    }
}

/// Marks every descriptor but 0, 1 and 2 close-on-exec: the command inherits none of
/// Reasonix's (nor one its caller passed, such as `3>>file`). Between fork and exec: one
/// `close_range`, or, on a kernel without it, `fcntl` on each descriptor up to `open_max`.
fn close_inherited(open_max: i32) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: close_range with integer arguments only; CLOSE_RANGE_CLOEXEC closes nothing now,
    // so the descriptors this hook still needs (ruleset, cgroup) stay usable until exec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if !matches!(err.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) {
        return Err(err);
    }
    for fd in 3..open_max {
        // SAFETY: fcntl with integer arguments only; a descriptor that is not open fails with
        // EBADF, which is nothing to close.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// What the command's process applies last before exec, in this order: it joins the cgroups,
/// sets the limits, drops capabilities, sets `no_new_privs`, restricts itself with its Landlock
/// ruleset (adding the `/proc` of its PID namespace first, if it has one) and installs the
/// seccomp filter. Built before the fork; `apply` makes system calls only.
struct Confine {
    procs: Vec<OwnedFd>,
    limits: super::Limits,
    nproc: bool,
    address_space: bool,
    cap_drop: CapDrop,
    ruleset: Option<OwnedFd>,
    /// The access rights to grant on a freshly mounted `/proc` (with a PID namespace).
    fresh_proc: Option<u64>,
    /// The overlays mounted over the write roots (a writer that is observed): each root is a
    /// new inode, which no rule built beforehand names, granted `write_access` once mounted.
    fresh_overlays: Vec<std::ffi::CString>,
    /// What a write root is granted (the ruleset's handled rights, as a bit set).
    write_access: u64,
    filter: Option<seccompiler::BpfProgram>,
}

impl Confine {
    fn apply(&self) -> std::io::Result<()> {
        let errno = |e: nix::Error| std::io::Error::from_raw_os_error(e as i32);
        let limits = self.limits;
        for fd in &self.procs {
            cgroup::join(fd)?;
        }
        setrlimit(Resource::RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds).map_err(errno)?;
        setrlimit(Resource::RLIMIT_FSIZE, limits.file_size, limits.file_size).map_err(errno)?;
        setrlimit(
            Resource::RLIMIT_NOFILE,
            limits.open_files,
            limits.open_files,
        )
        .map_err(errno)?;
        setrlimit(Resource::RLIMIT_CORE, 0, 0).map_err(errno)?;
        if self.nproc {
            setrlimit(Resource::RLIMIT_NPROC, limits.processes, limits.processes).map_err(errno)?;
        }
        if self.address_space {
            setrlimit(
                Resource::RLIMIT_AS,
                limits.memory_bytes,
                limits.memory_bytes,
            )
            .map_err(errno)?;
        }
        drop_capabilities(self.cap_drop)?;
        nix::sys::prctl::set_no_new_privs().map_err(errno)?;
        if let Some(ruleset) = &self.ruleset {
            if let Some(access) = self.fresh_proc {
                grant_fresh(ruleset, c"/proc", access)?;
            }
            for root in &self.fresh_overlays {
                grant_fresh(ruleset, root, self.write_access)?;
            }
            restrict_self(ruleset)?;
        }
        if let Some(filter) = &self.filter {
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::from_raw_os_error(nix::libc::EPERM))?;
        }
        Ok(())
    }
}

/// Where `program` is found: itself if it names a path, else the first executable file of that
/// name on the `PATH` of `env` (as `execvp` would search it); if none, the name as given, which
/// exec then refuses with `ENOENT`.
fn find_program(program: &str, env: &[(String, String)]) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return program.into();
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or("", |(_, v)| v.as_str());
    path.split(':')
        .map(|dir| std::path::Path::new(if dir.is_empty() { "." } else { dir }).join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| program.into())
}

/// `landlock_path_beneath_attr`: packed, as the kernel declares it.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds to the run's own `ruleset` the right `access` on the folder just mounted at `path` in
/// its mount namespace: the `/proc` of its PID namespace, an overlay over a write root (each a
/// new inode, which no rule built beforehand names). Between fork and exec.
fn grant_fresh(ruleset: &OwnedFd, path: &std::ffi::CStr, access: u64) -> std::io::Result<()> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    // SAFETY: `path` is a NUL-terminated string that lives across the call.
    let proc_fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if proc_fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: proc_fd,
    };
    // SAFETY: `attr` is a live, packed `struct landlock_path_beneath_attr` the kernel reads;
    // the ruleset descriptor is open for the life of `ruleset`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0 as libc::c_uint,
        )
    };
    let result = if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    };
    // SAFETY: `proc_fd` was opened above and is used no more.
    unsafe { libc::close(proc_fd) };
    result
}

/// The Landlock ABI the kernel reports (`landlock_create_ruleset` asked for its version: no
/// ruleset is made), `None` where Landlock is absent or disabled. The `landlock` crate keeps this
/// query to itself.
pub(crate) fn landlock_abi_reported() -> Option<i32> {
    use nix::libc;
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the version flag, the kernel reads no
    // memory, makes no descriptor and returns the ABI version or -1.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0 as libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).ok().filter(|v| *v >= 1)
}

/// Restricts the calling process with `ruleset` (`no_new_privs` is set already). Between fork
/// and exec.
fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    // SAFETY: landlock_restrict_self with a descriptor open for the life of `ruleset` and no
    // flags; no memory is passed to the kernel.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset.as_raw_fd(),
            0 as libc::c_uint,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes the calling child die with the process that forked it (`PR_SET_PDEATHSIG`, `SIGKILL`),
/// then checks that this process is still its parent: had it died between the fork and the
/// `prctl`, the signal would never come, and the child would run on with no gate behind it
/// (`kill -9` of Reasonix during a run; issue 28, item 9). Between fork and exec: system calls
/// only.
///
/// The signal follows the *thread* that forked, not the process: a run is started and waited
/// for on one thread, and a long-lived [`Jailed`] process is started from a thread that lives
/// as long as it does (`child::spawn`).
fn die_with(starter: Pid) -> std::io::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
    if nix::unistd::getppid() != starter {
        return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
    }
    Ok(())
}

/// Where a started process's standard streams go.
struct Streams {
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
}

/// A process started under a plan, with what its run holds until it ends.
struct Start {
    child: std::process::Child,
    pgid: Pid,
    /// Its private temporary folder (removed on drop).
    tmp: tempfile::TempDir,
    /// Its cgroups (everything left in them killed, and removed, on drop).
    cgroups: RunCgroups,
    /// What this run could not apply of its plan.
    not_enforced: Vec<String>,
    started: Instant,
    /// The run's network namespace and the egress proxy serving it, while the process runs.
    egress: Option<(std::os::fd::OwnedFd, crate::egress::Proxy)>,
    /// How it writes.
    writes: Writes,
    /// Its upper layers, when it writes observed.
    upper: Option<Upper>,
}

/// Starts `argv` under `plan` (see the module doc of `jail` for the steps between fork and
/// exec), in the workspace, with the jail's environment plus `extra` (which may not replace
/// `TMPDIR`) and the streams given.
fn start(
    plan: &Plan,
    argv: &[String],
    extra: &[(String, String)],
    streams: Streams,
    judge: Option<std::sync::Arc<dyn crate::egress::Judge>>,
    shape: &Shape,
) -> Result<Start, RunError> {
    if plan.dry {
        return Err(RunError::Refused(
            "this plan was computed for a dry run (reasonix check), which runs nothing".into(),
        ));
    }
    if let Some(why) = &plan.refusal {
        return Err(RunError::Refused(why.clone()));
    }
    let Some((program, args)) = argv.split_first() else {
        return Err(RunError::Spawn {
            program: String::new(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command"),
        });
    };
    let parent = plan
        .tmp
        .as_ref()
        .map(|t| t.runs.clone())
        .unwrap_or_else(std::env::temp_dir);
    let tmp = match plan.idle_tmpdirs.take() {
        Some(tmp) => tmp,
        None => tempfile::Builder::new()
            .prefix("run-")
            .rand_bytes(12)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&parent)
            .map_err(|source| RunError::Setup {
                what: "private temporary folder",
                source,
            })?,
    };
    let jailed = plan.mode != Mode::Off;
    let mut not_enforced = Vec::new();
    let writes = run_writes(plan, shape.writes, &mut not_enforced)?;
    // The run's folder holds its TMPDIR and (jailed) its private HOME, the toolchains linked
    // in (issue 25); both made anew for each run.
    run_folders(tmp.path(), jailed.then_some(plan.home.as_deref())).map_err(|source| {
        RunError::Setup {
            what: "private TMPDIR and HOME",
            source,
        }
    })?;

    // The run's own ruleset: the plan's rules and this run's TMPDIR (and, added by the child of
    // a PID namespace, its fresh /proc). `None` also where best_effort found Landlock missing.
    let ruleset: Option<OwnedFd> = match &plan.rulesets {
        Some(r) if jailed => r
            .take(tmp.path())
            .map_err(|source| RunError::Setup {
                what: "Landlock ruleset",
                source,
            })?
            .into(),
        _ => None,
    };
    let proc_access = super::landlock_rules::read_access_bits();
    let filter = if jailed { plan.filter.clone() } else { None };
    // The plan promised a pids (memory) cgroup wherever the capabilities name a parent for one.
    let cgroups = if jailed {
        run_cgroups(plan, &mut not_enforced)?
    } else {
        RunCgroups {
            groups: Vec::new(),
            nproc: false,
            address_space: false,
        }
    };
    let procs = cgroups
        .groups
        .iter()
        .map(Cgroup::procs)
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|source| RunError::Setup {
            what: "cgroup",
            source,
        })?;
    // The upper layers of a writer that is observed, made beside the runs' TMPDIRs: outside
    // every root, and hidden in its mount namespace with the other runs' TMPDIRs.
    let upper = match writes {
        Writes::Observed => Some(make_upper(plan, &parent).map_err(|source| RunError::Setup {
            what: "overlay upper layers",
            source,
        })?),
        _ => None,
    };
    // Inside its mount namespace, the run's TMPDIR is bound over the folder of every run's.
    let (mut namespace, tmpdir) = match &plan.namespaces {
        Some(ns) if jailed => {
            let (write_roots, overlays, passthrough) = match (writes, &upper) {
                (Writes::Observed, Some((_, layers))) => {
                    (Vec::new(), layers.clone(), upper_passthrough(plan, layers))
                }
                (Writes::None, _) => (Vec::new(), Vec::new(), Vec::new()),
                _ => (plan.write.clone(), Vec::new(), Vec::new()),
            };
            let writable: Vec<std::path::PathBuf> = write_roots
                .iter()
                .cloned()
                .chain(overlays.iter().map(|l| l.root.clone()))
                .collect();
            let (pins, read_only) = mounts::host_binds(&plan.host_files, &writable);
            let mut covers = ns.covers.clone();
            // No run sees another's upper layers (in memory, outside the TMPDIRs' folder).
            if let Some(u) = &plan.uppers {
                covers.push((u.path().to_path_buf(), mounts::Cover::Dir));
            }
            for hidden in &shape.hidden {
                if !covers.iter().any(|(c, _)| hidden.starts_with(c)) {
                    covers.push((hidden.clone(), mounts::Cover::of(hidden)));
                }
            }
            let layout = Layout {
                write_roots,
                overlays,
                passthrough,
                covers,
                pins,
                read_only,
                tmp_run: tmp.path().to_path_buf(),
                tmp_at: parent.clone(),
                workspace: plan.workspace.clone(),
            };
            let prepared = Prepared::new(&layout, ns.users).map_err(|source| RunError::Setup {
                what: "mount namespace",
                source,
            })?;
            (Some(prepared), parent.clone())
        }
        _ => (None, tmp.path().to_path_buf()),
    };
    let limits = plan.limits;
    let (nproc, address_space) = (cgroups.nproc, cgroups.address_space);
    let cap_drop = plan.cap_drop;
    let open_max = nix::sys::resource::getrlimit(Resource::RLIMIT_NOFILE)
        .map_or(65_536, |(soft, _)| soft.min(65_536) as i32);

    // The egress proxy: its listener in a network namespace made for this run, which the child
    // joins; the proxy serves it from here until the run ends.
    let egress = match &plan.egress {
        Some(list) if jailed => {
            let ns = super::netns::make(crate::egress::PROXY_PORT).map_err(|e| {
                RunError::Refused(format!(
                    "the egress proxy cannot be set up for this run (network namespace: {e}); sandbox.network is enforced by host through it, so nothing runs without it"
                ))
            })?;
            let judge = judge
                .unwrap_or_else(|| std::sync::Arc::new(crate::egress::ListJudge(list.clone())));
            let proxy = crate::egress::Proxy::start(ns.listener, judge, list.clone()).map_err(
                |source| RunError::Setup {
                    what: "egress proxy",
                    source,
                },
            )?;
            Some((ns.fd, proxy))
        }
        _ => None,
    };
    let netns_fd = egress.as_ref().map(|(fd, _)| {
        use std::os::fd::AsRawFd;
        fd.as_raw_fd()
    });
    // TMPDIR and HOME as the command sees them: in the run's folder, wherever that is bound.
    let seen_home = jailed.then(|| tmpdir.join(HOME_NAME));
    let mut environment = environment(&tmpdir.join(TMP_NAME), seen_home.as_deref());
    if writes == Writes::None {
        // git's opportunistic index refresh would only meet a read-only workspace.
        environment.push(("GIT_OPTIONAL_LOCKS".into(), "0".into()));
    }
    if egress.is_some() {
        environment.extend(crate::egress::environment(crate::egress::PROXY_PORT));
    }
    for (k, v) in extra.iter().filter(|(k, _)| k != "TMPDIR") {
        environment.retain(|(e, _)| e != k);
        environment.push((k.clone(), v.clone()));
    }
    // Found on the jail's PATH here, as `execvp` would find it in the child, so that the child
    // does not try each folder of the PATH in turn (an `execve` each, through the filter).
    let found = find_program(program, &environment);
    let mut command = Command::new(&found);
    command
        .arg0(program)
        .args(args)
        .current_dir(&plan.workspace)
        .env_clear()
        .envs(environment.iter().map(|(k, v)| (k, v)))
        .stdin(streams.stdin)
        .stdout(streams.stdout)
        .stderr(streams.stderr)
        .process_group(0);
    let confine = Confine {
        procs,
        limits,
        nproc,
        address_space,
        cap_drop,
        ruleset,
        fresh_proc: namespace.as_ref().map(|_| proc_access),
        fresh_overlays: match &upper {
            Some((_, layers)) if namespace.is_some() => layers
                .iter()
                .map(|l| namespace::c_path(&l.root))
                .collect::<std::io::Result<Vec<_>>>()
                .map_err(|source| RunError::Setup {
                    what: "overlay",
                    source,
                })?,
            _ => Vec::new(),
        },
        write_access: plan.write_access,
        filter,
    };
    // With namespaces, the command's process execs itself (see `namespace`): its program is
    // found on the jail's PATH here, before the fork, as std would find it after.
    let exec = match &namespace {
        Some(_) => Some(
            Exec::new(&found, program, args, &environment).map_err(|source| RunError::Spawn {
                program: program.clone(),
                source,
            })?,
        ),
        None => None,
    };
    // The process that starts the run: the child dies with it (issue 28, item 9).
    let starter = nix::unistd::getpid();
    let hook = move || -> std::io::Result<()> {
        die_with(starter)?;
        if !jailed {
            return Ok(());
        }
        close_inherited(open_max)?;
        if let Some(fd) = netns_fd {
            super::netns::enter(fd)?;
        }
        match (&mut namespace, &exec) {
            // Returns only if the command could not be started; see `namespace::launch`.
            (Some(ns), Some(exec)) => namespace::launch(ns, exec, &|| confine.apply()),
            _ => confine.apply(),
        }
    };
    // SAFETY: the hook runs in the forked child before exec. It makes only system calls
    // (close_range, setns, clone, wait4, mount and the new mount API, chdir, write, setrlimit, prctl,
    // capset, landlock_add_rule, landlock_restrict_self, seccomp, execve, close) on values built
    // before the fork (the highest capability number, the mount layout, program, arguments and
    // environment as C strings, and the room for the clones' descriptors included), allocates
    // nothing, takes no lock, and touches no state shared with other threads; errors are
    // returned as `io::Error` from raw OS codes, which does not allocate. The process it clones
    // shares this child's memory (not Reasonix's) until it execs (`namespace`).
    unsafe {
        command.pre_exec(hook);
    }
    let started = Instant::now();
    // A pass-through file changed since is counted as this run's: less a margin, since a
    // file's times come from the kernel's coarse clock, which may lag this one by a tick.
    let wall_started = std::time::SystemTime::now() - Duration::from_millis(50);
    let child = command.spawn().map_err(|source| RunError::Spawn {
        program: program.clone(),
        source,
    })?;
    let pgid = Pid::from_raw(child.id() as i32);
    // The next run's ruleset is built while this one runs.
    if let Some(rulesets) = plan.rulesets.as_ref().filter(|_| jailed) {
        rulesets.refill();
    }
    let upper = upper.map(|(dir, layers)| Upper {
        _dir: dir,
        passthrough: upper_passthrough(plan, &layers),
        layers: layers.into_iter().map(|l| (l.root, l.upper)).collect(),
        started: wall_started,
        userxattr: plan
            .namespaces
            .as_ref()
            .is_some_and(|ns| ns.users.is_some()),
    });
    Ok(Start {
        child,
        pgid,
        tmp,
        cgroups,
        not_enforced,
        started,
        egress,
        writes,
        upper,
    })
}

/// The run's TMPDIR, inside the run's folder.
const TMP_NAME: &str = "tmp";

/// The run's private HOME, inside the run's folder.
const HOME_NAME: &str = "home";

/// Makes the run's TMPDIR (`tmp`, mode `0700`, empty) in its folder `run` (as Reasonix sees
/// it) and, for a jailed run, its private HOME (`home`) with a link to each toolchain of the
/// real home folder `real` (`super::HOME_TOOLCHAINS`) that exists: programs find cargo, rustup,
/// pyenv, nvm and git's configuration where they look, while what they write to `~` stays in
/// the run — and the rest of the real home stays out of reach, as the Landlock rules keep it.
fn run_folders(
    run: &std::path::Path,
    home: Option<Option<&std::path::Path>>,
) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let mut folder = std::fs::DirBuilder::new();
    folder.mode(0o700);
    folder.create(run.join(TMP_NAME))?;
    let Some(real) = home else {
        return Ok(());
    };
    let home = run.join(HOME_NAME);
    folder.create(&home)?;
    for entry in real
        .map(|r| super::HOME_TOOLCHAINS.iter().map(move |e| (r, e)))
        .into_iter()
        .flatten()
    {
        let (real, entry) = entry;
        let target = real.join(entry);
        if std::fs::symlink_metadata(&target).is_err() {
            continue;
        }
        let link = home.join(entry);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::os::unix::fs::symlink(&target, &link)?;
    }
    Ok(())
}

/// How a run of `plan` writes, given the shape its call asked for: under `off`, in place;
/// observed only where the plan can make overlays — else, under `enforce`, the run is refused,
/// and under `best_effort` it writes in place and says its effects were not observed. A
/// read-only run without a mount namespace (`best_effort` only) cannot be held to it.
fn run_writes(
    plan: &Plan,
    asked: Writes,
    not_enforced: &mut Vec<String>,
) -> Result<Writes, RunError> {
    if plan.mode == Mode::Off {
        return Ok(Writes::Direct);
    }
    match asked {
        Writes::Observed if !plan.overlay => {
            if let Some(why) = &plan.writer_refusal {
                return Err(RunError::Refused(why.clone()));
            }
            not_enforced.push(NOT_OBSERVED.into());
            Ok(Writes::Direct)
        }
        Writes::None if plan.namespaces.is_none() => {
            not_enforced.push(
                "read-only: without a mount namespace the write roots stayed writable to this run"
                    .into(),
            );
            Ok(Writes::None)
        }
        w => Ok(w),
    }
}

/// What a writer's run says when it wrote in place for want of an overlay.
pub(crate) const NOT_OBSERVED: &str = "effects not observed: no overlay can be made here, so this writer changed the workspace in place";

/// Makes a run's upper layers: a folder beside the runs' TMPDIRs holding, for each write root
/// not inside another, an upper folder and overlayfs's work folder (one filesystem, outside
/// every root). Returns the folder (removed on drop) and the layers.
fn make_upper(
    plan: &Plan,
    parent: &std::path::Path,
) -> std::io::Result<(tempfile::TempDir, Vec<Layer>)> {
    // In memory where the plan has a folder there (`uppers`), else beside the TMPDIRs.
    let parent = plan.uppers.as_ref().map_or(parent, |u| u.path());
    let dir = tempfile::Builder::new()
        .prefix("upper-")
        .rand_bytes(12)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(parent)?;
    let mut layers = Vec::new();
    for (i, root) in plan.write.iter().enumerate() {
        if plan.write.iter().any(|o| o != root && root.starts_with(o)) {
            continue;
        }
        let (upper, work) = (
            dir.path().join(format!("u{i}")),
            dir.path().join(format!("w{i}")),
        );
        std::fs::create_dir(&upper)?;
        std::fs::create_dir(&work)?;
        layers.push(Layer {
            root: root.clone(),
            upper,
            work,
        });
    }
    Ok((dir, layers))
}

/// The plan's pass-through folders that exist as folders now inside one of `layers`' roots.
fn upper_passthrough(plan: &Plan, layers: &[Layer]) -> Vec<std::path::PathBuf> {
    plan.passthrough
        .iter()
        .filter(|p| {
            layers
                .iter()
                .any(|l| p.starts_with(&l.root) && **p != l.root)
        })
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        .cloned()
        .collect()
}

/// Runs `argv` under `plan`, with a wall-clock limit (the smaller of `timeout` and the plan's),
/// capturing output as asked. Crate-private: a bash call reaches it with an admission (the bash
/// tool), anything else through [`super::danger::exec_unjudged`].
pub(crate) fn run(
    plan: &Plan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
    shape: &Shape,
) -> Result<RunResult, RunError> {
    run_judged(plan, argv, timeout, capture, None, shape)
}

/// [`run`], with the judge of the connections its processes ask the egress proxy for (the
/// gate, for an admitted bash call). Without one — or for a plan without a proxy — the
/// `sandbox.network` entries alone decide ([`crate::egress::ListJudge`]).
pub(crate) fn run_judged(
    plan: &Plan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
    judge: Option<std::sync::Arc<dyn crate::egress::Judge>>,
    shape: &Shape,
) -> Result<RunResult, RunError> {
    let limit = Duration::from_millis(plan.limits.timeout_ms);
    let timeout = timeout.map_or(limit, |t| t.min(limit));
    let (stdout, stderr) = match capture {
        Capture::Bounded(_) => (Stdio::piped(), Stdio::piped()),
        Capture::Inherit => (Stdio::inherit(), Stdio::inherit()),
    };
    let streams = Streams {
        stdin: Stdio::null(),
        stdout,
        stderr,
    };
    let Start {
        mut child,
        pgid,
        tmp,
        cgroups,
        mut not_enforced,
        started,
        egress,
        writes,
        upper,
    } = start(plan, argv, &[], streams, judge, shape)?;
    let jailed = plan.mode != Mode::Off;
    let program = &argv[0];

    // Watched on this thread until it exits, its output read as it comes; at the wall clock,
    // its group is killed (see `watch`).
    let limit = match capture {
        Capture::Bounded(limit) => Some(limit),
        Capture::Inherit => None,
    };
    let mut watch = Watch::new(&mut child, limit, started + timeout);
    let exited = watch.until_exit(&mut child, pgid);
    // Nothing outlives the run: the rest of the group is killed (by `until_exit`, before the
    // process is reaped), then the rest of the cgroups. What is known to be empty of the run
    // is kept for the next one (see `idle`).
    // Under `off` nothing is confined, so the TMPDIR is kept whatever is left (see `idle`).
    match plan
        .idle_cgroups
        .give_back(cgroups, not_enforced.is_empty())
    {
        Ok(gone) => {
            if gone || !jailed {
                plan.idle_tmpdirs.give_back(tmp);
            }
        }
        Err(e) => not_enforced.push(format!(
            "nothing outlives the run: its cgroups could not be emptied after it ended ({e}); what is left runs on, and its TMPDIR is removed"
        )),
    }
    let duration = started.elapsed();
    let connections = match egress {
        Some((fd, proxy)) => {
            let connections = proxy.stop();
            drop(fd);
            connections
        }
        None => Vec::new(),
    };
    let spawn_error = |source| RunError::Spawn {
        program: program.clone(),
        source,
    };
    let exited = exited.map_err(spawn_error)?;
    // Nothing holds the pipes open now; what is left in them is read.
    watch.drain().map_err(spawn_error)?;
    let ((stdout, stdout_bytes), (stderr, stderr_bytes)) = watch.finish();
    let (status, timed_out) = (exited.status, exited.timed_out);
    use std::os::unix::process::ExitStatusExt;
    let outcome = if timed_out {
        Exit::TimedOut
    } else if let Some(code) = status.code() {
        Exit::Exited(code)
    } else {
        Exit::Signaled(status.signal().unwrap_or(0))
    };
    Ok(RunResult {
        exit: outcome,
        stdout,
        stderr,
        stdout_bytes,
        stderr_bytes,
        duration,
        not_enforced,
        connections,
        writes,
        observed: upper,
    })
}

#[cfg(test)]
mod tests {
    use super::watch::Bounded;
    use super::{CapDrop, Duration, Exit, RunResult};
    use crate::sandbox::jail::capabilities;

    #[test]
    fn with_cap_setpcap_the_bounding_set_is_dropped_up_to_the_kernels_last_capability() {
        let caps = crate::sandbox::jail::Capabilities {
            cap_setpcap: true,
            ..capabilities().clone()
        };
        let last: u32 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(CapDrop::for_capabilities(&caps), CapDrop::Full { last });
        let words = CapDrop::for_capabilities(&caps).words(0);
        assert!(words.contains("the bounding, permitted"), "{words}");
    }

    #[test]
    fn without_cap_setpcap_the_sets_are_still_emptied_and_the_bounding_set_is_not_claimed() {
        let caps = crate::sandbox::jail::Capabilities {
            cap_setpcap: false,
            ..capabilities().clone()
        };
        let drop = CapDrop::for_capabilities(&caps);
        assert_eq!(drop, CapDrop::SetsOnly);
        for uid in [0, 1000] {
            let words = drop.words(uid);
            assert!(
                words.contains("permitted, effective, inheritable and ambient sets are emptied"),
                "{words}"
            );
            assert!(words.contains("no_new_privs"), "{words}");
            assert!(
                words.contains("the bounding set stays as it is")
                    && !words.contains("bounding, permitted"),
                "{words}"
            );
        }
        assert!(drop.words(0).contains("root runs without any"));
    }

    #[test]
    fn a_run_that_kept_every_promise_adds_no_line_and_one_that_did_not_adds_one() {
        let mut r = RunResult {
            exit: Exit::Exited(0),
            stdout: String::new(),
            stderr: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            duration: Duration::ZERO,
            not_enforced: Vec::new(),
            connections: Vec::new(),
            writes: super::Writes::Direct,
            observed: None,
        };
        assert_eq!(r.not_enforced_line(), None);
        r.not_enforced = vec!["process count: x".into(), "y".into()];
        assert_eq!(
            r.not_enforced_line().as_deref(),
            Some("not enforced for this run: process count: x; y")
        );
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut b = Bounded::new(100);
        b.push(b"hello ");
        b.push(b"world");
        assert_eq!(b.finish(), ("hello world".to_owned(), 11));
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_says_how_much() {
        let mut b = Bounded::new(10);
        for chunk in [&b"0123456789"[..], b"abcdefghij", b"ABCDE"] {
            b.push(chunk);
        }
        let (text, total) = b.finish();
        assert_eq!(total, 25);
        assert!(
            text.starts_with("01234\n[… 15 bytes elided; the output was 25 bytes in all …]\n"),
            "{text}"
        );
        assert!(text.ends_with("ABCDE"), "{text}");
    }
}
