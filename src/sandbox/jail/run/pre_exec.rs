//! What the command's process applies between fork and exec ([`Confine`]): system calls only,
//! built before the fork — inherited descriptors closed, death tied to the starter, cgroups,
//! limits, capabilities, `no_new_privs`, Landlock, seccomp.

use std::os::fd::OwnedFd;

use nix::sys::resource::{Resource, setrlimit};
use nix::unistd::Pid;

use crate::sandbox::jail::cgroup;

use super::super::landlock_raw::{grant_fresh, restrict_self};
use super::cap_drop::{CapDrop, drop_capabilities};

/// Marks every descriptor but 0, 1 and 2 close-on-exec: the command inherits none of
/// Reasonix's (nor one its caller passed, such as `3>>file`). Between fork and exec: one
/// `close_range`, or, on a kernel without it, `fcntl` on each descriptor up to `open_max`.
pub(super) fn close_inherited(open_max: i32) -> std::io::Result<()> {
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
pub(super) struct Confine {
    pub(super) procs: Vec<OwnedFd>,
    pub(super) limits: crate::sandbox::jail::Limits,
    pub(super) nproc: bool,
    pub(super) address_space: bool,
    pub(super) cap_drop: CapDrop,
    pub(super) ruleset: Option<OwnedFd>,
    /// The access rights to grant on a freshly mounted `/proc` (with a PID namespace).
    pub(super) fresh_proc: Option<u64>,
    /// The overlays mounted over the write roots (a writer that is observed): each root is a
    /// new inode, which no rule built beforehand names, granted `write_access` once mounted.
    pub(super) fresh_overlays: Vec<std::ffi::CString>,
    /// What a write root is granted (the ruleset's handled rights, as a bit set).
    pub(super) write_access: u64,
    pub(super) filter: Option<seccompiler::BpfProgram>,
}

impl Confine {
    pub(super) fn apply(&self) -> std::io::Result<()> {
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

/// Makes the calling child die with the process that forked it (`PR_SET_PDEATHSIG`, `SIGKILL`),
/// then checks that this process is still its parent: had it died between the fork and the
/// `prctl`, the signal would never come, and the child would run on with no gate behind it
/// (`kill -9` of Reasonix during a run; issue 28, item 9). Between fork and exec: system calls
/// only.
///
/// The signal follows the *thread* that forked, not the process: a run is started and waited
/// for on one thread, and a long-lived [`Jailed`] process is started from a thread that lives
/// as long as it does (`child::spawn`).
pub(super) fn die_with(starter: Pid) -> std::io::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
    if nix::unistd::getppid() != starter {
        return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
    }
    Ok(())
}
