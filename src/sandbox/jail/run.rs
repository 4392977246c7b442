//! Running one process under a plan: spawn, jail between fork and exec, watch the clock, capture
//! a bounded output, and leave nothing behind.
//!
//! # What happens to the process group
//!
//! The child leads a new process group. When the main process exits — or the wall clock runs
//! out — the whole group is killed with `SIGKILL`, and, where the run has a pids cgroup, every
//! process still in it too (even one that left the group with `setsid`). So a jailed command
//! never leaves a background process behind.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::cgroup::{self, Cgroup};
use super::{Mode, Plan};

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
pub enum Outcome {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// The wall clock ran out; the group was killed.
    TimedOut,
}

impl Outcome {
    /// The status a shell would report: the exit status, 128 + signal, or 124 for a timeout
    /// (as `timeout(1)` does).
    pub fn code(self) -> i32 {
        match self {
            Outcome::Exited(c) => c,
            Outcome::Signaled(s) => 128 + s,
            Outcome::TimedOut => 124,
        }
    }
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// How it ended.
    pub outcome: Outcome,
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
}

/// Why a process did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The plan refuses to run anything (enforce without a full backend).
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

/// Head and tail of a stream, with its true size.
struct Bounded {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Bounded {
    fn new(limit: usize) -> Bounded {
        let head_limit = limit / 2;
        Bounded {
            head_limit,
            tail_limit: limit - head_limit,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_limit.saturating_sub(self.head.len());
        let (to_head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(to_head);
        data = rest;
        self.tail.extend(data);
        while self.tail.len() > self.tail_limit {
            let excess = self.tail.len() - self.tail_limit;
            self.tail.drain(..excess);
        }
    }

    fn finish(self) -> (String, u64) {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        let kept = (self.head.len() + self.tail.len()) as u64;
        if kept < self.total {
            out.push_str(&format!(
                "\n[… {} bytes elided; the output was {} bytes in all …]\n",
                self.total - kept,
                self.total
            ));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        (out, self.total)
    }
}

fn read_bounded(
    mut stream: impl Read + Send + 'static,
    limit: usize,
) -> std::thread::JoinHandle<(String, u64)> {
    std::thread::spawn(move || {
        let mut bounded = Bounded::new(limit);
        let mut buf = [0u8; 16 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => bounded.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        bounded.finish()
    })
}

/// The environment a jailed process gets: nothing of Reasonix's own (API keys stay out) but
/// what programs need to find themselves.
fn environment(tmp: &std::path::Path) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for key in [
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    ] {
        if let Ok(v) = std::env::var(key) {
            env.push((key.to_owned(), v));
        }
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

/// Leaves the program about to be run — even by root — without any capability: uid 0 without
/// `CAP_DAC_OVERRIDE`, `CAP_SYS_PTRACE`, `CAP_NET_ADMIN`… is an ordinary user for every check but
/// file ownership. (Landlock itself lets a process with `CAP_SYS_PTRACE` read
/// `/proc/<pid>/environ` of processes outside the sandbox; without this, a root-run command
/// could read Reasonix's own environment.)
///
/// Two calls: `SECBIT_NOROOT` (locked) so that exec does not hand root its capabilities back,
/// then `capset` to empty the permitted, effective and inheritable sets (which empties the
/// ambient set too). A process without `CAP_SETPCAP` — not root — has no capability to lose.
/// Called between fork and exec: system calls only, on the stack.
fn drop_capabilities() -> std::io::Result<()> {
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
    // SAFETY: prctl with integer arguments only; no memory is passed to the kernel.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECUREBITS,
            SECBIT_NOROOT | SECBIT_NOROOT_LOCKED,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EPERM) => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        };
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

/// Runs `argv` under `plan`, with a wall-clock limit (the smaller of `timeout` and the plan's),
/// capturing output as asked.
pub fn run(
    plan: &Plan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
) -> Result<RunResult, RunError> {
    if let Some(why) = &plan.refusal {
        return Err(RunError::Refused(why.clone()));
    }
    let Some((program, args)) = argv.split_first() else {
        return Err(RunError::Spawn {
            program: String::new(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command"),
        });
    };
    let limit = Duration::from_millis(plan.limits.timeout_ms);
    let timeout = timeout.map_or(limit, |t| t.min(limit));
    let parent = plan
        .tmp
        .as_ref()
        .map(|t| t.path().to_path_buf())
        .unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&parent)
        .map_err(|source| RunError::Setup {
            what: "private temporary folder",
            source,
        })?;
    let caps = plan.capabilities;
    let jailed = plan.mode != Mode::Off;

    let ruleset = match &plan.ruleset {
        Some(r) if jailed => Some(r.try_clone().map_err(|source| RunError::Setup {
            what: "Landlock ruleset",
            source,
        })?),
        _ => None,
    };
    let filter = if jailed { plan.filter.clone() } else { None };
    let cgroup = match (&caps.cgroup_pids, jailed) {
        (Some(parent), true) => Cgroup::create(parent, plan.limits.processes).ok(),
        _ => None,
    };
    let procs = match &cgroup {
        Some(cg) => Some(cg.procs().map_err(|source| RunError::Setup {
            what: "pids cgroup",
            source,
        })?),
        None => None,
    };
    let limits = plan.limits;
    let nproc = cgroup.is_none();

    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(&plan.workspace)
        .env_clear()
        .envs(environment(tmp.path()))
        .stdin(Stdio::null())
        .process_group(0);
    match capture {
        Capture::Bounded(_) => {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        Capture::Inherit => {
            command.stdout(Stdio::inherit()).stderr(Stdio::inherit());
        }
    }
    let mut ruleset = ruleset;
    let hook = move || -> std::io::Result<()> {
        if !jailed {
            return Ok(());
        }
        let errno = |e: nix::Error| std::io::Error::from_raw_os_error(e as i32);
        if let Some(fd) = &procs {
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
        if nproc {
            setrlimit(Resource::RLIMIT_NPROC, limits.processes, limits.processes).map_err(errno)?;
        }
        drop_capabilities()?;
        match ruleset.take() {
            Some(r) => {
                // `restrict_self` also sets no_new_privs.
                r.restrict_self()
                    .map_err(|_| std::io::Error::from_raw_os_error(nix::libc::EPERM))?;
            }
            None => nix::sys::prctl::set_no_new_privs().map_err(errno)?,
        }
        if let Some(filter) = &filter {
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::from_raw_os_error(nix::libc::EPERM))?;
        }
        Ok(())
    };
    // SAFETY: the hook runs in the forked child before exec. It makes only system calls (write,
    // setrlimit, prctl, landlock_restrict_self, seccomp, close) on values built before the fork,
    // allocates nothing, takes no lock, and touches no state shared with other threads; errors
    // are returned as `io::Error` from raw OS codes, which does not allocate.
    unsafe {
        command.pre_exec(hook);
    }
    let started = Instant::now();
    let mut child = command.spawn().map_err(|source| RunError::Spawn {
        program: program.clone(),
        source,
    })?;
    let pgid = Pid::from_raw(child.id() as i32);

    let readers = match capture {
        Capture::Bounded(limit) => {
            let out = child.stdout.take().map(|s| read_bounded(s, limit));
            let err = child.stderr.take().map(|s| read_bounded(s, limit));
            Some((out, err))
        }
        Capture::Inherit => None,
    };

    let timed_out = Arc::new(AtomicBool::new(false));
    let (stop, stopped) = mpsc::channel::<()>();
    let watchdog = {
        let timed_out = Arc::clone(&timed_out);
        std::thread::spawn(move || {
            if stopped.recv_timeout(timeout) == Err(mpsc::RecvTimeoutError::Timeout) {
                timed_out.store(true, Ordering::SeqCst);
                let _ = killpg(pgid, Signal::SIGKILL);
            }
        })
    };
    let status = child.wait();
    let _ = stop.send(());
    let _ = watchdog.join();
    // Nothing outlives the run: the rest of the group, then the rest of the cgroup.
    let _ = killpg(pgid, Signal::SIGKILL);
    drop(cgroup);
    let duration = started.elapsed();
    let status = status.map_err(|source| RunError::Spawn {
        program: program.clone(),
        source,
    })?;

    let (stdout, stdout_bytes, stderr, stderr_bytes) = match readers {
        Some((out, err)) => {
            let join = |h: Option<std::thread::JoinHandle<(String, u64)>>| {
                h.and_then(|h| h.join().ok()).unwrap_or_default()
            };
            let (o, ob) = join(out);
            let (e, eb) = join(err);
            (o, ob, e, eb)
        }
        None => (String::new(), 0, String::new(), 0),
    };
    use std::os::unix::process::ExitStatusExt;
    let outcome = if timed_out.load(Ordering::SeqCst) {
        Outcome::TimedOut
    } else if let Some(code) = status.code() {
        Outcome::Exited(code)
    } else {
        Outcome::Signaled(status.signal().unwrap_or(0))
    };
    Ok(RunResult {
        outcome,
        stdout,
        stderr,
        stdout_bytes,
        stderr_bytes,
        duration,
    })
}

#[cfg(test)]
mod tests {
    use super::Bounded;

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
