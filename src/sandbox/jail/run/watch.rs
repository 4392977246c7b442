//! Watching a started run on the thread that started it: its exit, its wall clock and its
//! bounded output, with one `poll` over a pidfd of the process and its two pipes — no thread of
//! its own (three threads a run, started and joined, cost about 0.1 ms of a spawn here).
//!
//! [`Watch::until_exit`] returns when the process has exited, its output read as it came; when
//! the wall clock runs out first, it kills the process group and reports the timeout.
//! [`Watch::drain`] then reads what is left in the pipes — once the rest of the group and the
//! cgroups are killed, nothing holds them open — bounded by the same wall clock, so that a
//! process that escaped every kill and keeps a pipe open cannot hold the run. On a kernel
//! without `pidfd_open` (before 5.3), the wait wakes every 10 ms to look for the exit instead.

use std::collections::VecDeque;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::process::{ChildStderr, ChildStdout, ExitStatus};

use super::process::Process;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How often the wait looks for the exit where no pidfd can be had.
const WITHOUT_PIDFD: Duration = Duration::from_millis(10);

/// Head and tail of a stream, with its true size.
pub(super) struct Bounded {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Bounded {
    pub(super) fn new(limit: usize) -> Bounded {
        let head_limit = limit / 2;
        Bounded {
            head_limit,
            tail_limit: limit - head_limit,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(super) fn push(&mut self, mut data: &[u8]) {
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

    pub(super) fn finish(self) -> (String, u64) {
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

/// One captured stream: its pipe while it is open, and what was read from it.
struct Stream<R> {
    pipe: Option<R>,
    kept: Bounded,
}

impl<R: Read + AsFd> Stream<R> {
    fn new(pipe: Option<R>, limit: usize) -> Stream<R> {
        Stream {
            pipe,
            kept: Bounded::new(limit),
        }
    }

    /// Reads once (the pipe is readable, or at its end); closes it at its end.
    fn read(&mut self, buf: &mut [u8]) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        match pipe.read(buf) {
            Ok(0) => self.pipe = None,
            Ok(n) => self.kept.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => self.pipe = None,
        }
    }
}

/// What the wait found: the exit status, and whether the wall clock ran out first.
pub(super) struct Exited {
    pub(super) status: ExitStatus,
    pub(super) timed_out: bool,
}

/// A started run, watched on this thread.
pub(super) struct Watch {
    /// Readable once the process has exited (`None` before Linux 5.3).
    pidfd: Option<OwnedFd>,
    out: Stream<ChildStdout>,
    err: Stream<ChildStderr>,
    /// When the wall clock runs out.
    deadline: Instant,
    buf: Box<[u8]>,
}

/// A pidfd of `pid`, a child of this process not yet waited for (so its pid cannot have been
/// reused).
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open with integer arguments only; no memory is passed to the kernel.
    let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid as nix::libc::pid_t, 0) };
    // SAFETY: a non-negative return is a new descriptor that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether `child` has exited, without reaping it.
fn has_exited(child: &Process) -> std::io::Result<bool> {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(Pid::from_raw(child.id() as i32)), flags) {
        Ok(WaitStatus::StillAlive) => Ok(false),
        Ok(_) => Ok(true),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(std::io::Error::from(e)),
    }
}

impl Watch {
    /// Watches `child` (its piped output taken, kept up to `limit` bytes each; none with
    /// [`super::Capture::Inherit`]) until `deadline`.
    pub(super) fn new(child: &mut Process, limit: Option<usize>, deadline: Instant) -> Watch {
        let limit = limit.unwrap_or(0);
        Watch {
            pidfd: pidfd_open(child.id()),
            out: Stream::new(child.take_stdout(), limit),
            err: Stream::new(child.take_stderr(), limit),
            deadline,
            buf: vec![0u8; 16 * 1024].into_boxed_slice(),
        }
    }

    /// Waits up to `wait` for the process to exit (if `exit`) or a pipe to have something, and
    /// reads what came. Returns whether anything was ready.
    fn poll(&mut self, exit: bool, wait: Duration) -> std::io::Result<bool> {
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(3);
        let mut which = Vec::with_capacity(3);
        let readable = PollFlags::POLLIN;
        if exit && let Some(fd) = &self.pidfd {
            fds.push(PollFd::new(fd.as_fd(), readable));
            which.push(0);
        }
        let pipes: [(Option<BorrowedFd<'_>>, u8); 2] = [
            (self.out.pipe.as_ref().map(AsFd::as_fd), 1),
            (self.err.pipe.as_ref().map(AsFd::as_fd), 2),
        ];
        for (fd, n) in pipes {
            if let Some(fd) = fd {
                fds.push(PollFd::new(fd, readable));
                which.push(n);
            }
        }
        let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(std::io::Error::from(e)),
        }
        let ready: Vec<u8> = fds
            .iter()
            .zip(&which)
            .filter(|(fd, _)| fd.revents().is_some_and(|r| !r.is_empty()))
            .map(|(_, n)| *n)
            .collect();
        drop(fds);
        let any = !ready.is_empty();
        for n in ready {
            match n {
                1 => self.out.read(&mut self.buf),
                2 => self.err.read(&mut self.buf),
                _ => {}
            }
        }
        Ok(any)
    }

    /// Waits for the process to exit, reading its output meanwhile, then kills the rest of its
    /// process group `pgid` and reaps it. When the wall clock runs out first, kills the group
    /// and waits for the process to die.
    ///
    /// The group is killed before the process, its leader, is reaped: until then its pid, the
    /// group's id, cannot be given to another process, so the kill cannot reach a group that
    /// merely took the same number (pids wrap around fast on a busy machine).
    pub(super) fn until_exit(&mut self, child: &mut Process, pgid: Pid) -> std::io::Result<Exited> {
        let mut timed_out = false;
        loop {
            if has_exited(child)? {
                let _ = killpg(pgid, Signal::SIGKILL);
                let status = child.wait()?;
                return Ok(Exited { status, timed_out });
            }
            let now = Instant::now();
            if !timed_out && now >= self.deadline {
                timed_out = true;
                let _ = killpg(pgid, Signal::SIGKILL);
            }
            let mut wait = if timed_out {
                WITHOUT_PIDFD
            } else {
                self.deadline - now
            };
            if self.pidfd.is_none() {
                wait = wait.min(WITHOUT_PIDFD);
            }
            self.poll(true, wait)?;
        }
    }

    /// Reads what is left in the pipes until both close or the wall clock runs out; past it,
    /// what is already in them, without waiting for more.
    pub(super) fn drain(&mut self) -> std::io::Result<()> {
        while self.out.pipe.is_some() || self.err.pipe.is_some() {
            let wait = self.deadline.saturating_duration_since(Instant::now());
            if !self.poll(false, wait)? && wait.is_zero() {
                break;
            }
        }
        Ok(())
    }

    /// The output kept: standard output and error, with their true sizes.
    pub(super) fn finish(self) -> ((String, u64), (String, u64)) {
        (self.out.kept.finish(), self.err.kept.finish())
    }
}
