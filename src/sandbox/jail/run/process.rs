//! A started run's process, whichever way it was started: forked by std (the launcher of a run
//! with the egress proxy's network namespace, or a run without namespaces), or cloned straight
//! into its namespaces by the thread that starts the run (`namespace::clone_command`). Both are
//! this process's children, so both are waited for by pid; the cloned one's pipes are made here
//! ([`Pipes`]), as std makes a forked one's.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, ExitStatus, Stdio};

use nix::libc;

/// Where one standard stream of the command goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stream {
    /// `/dev/null`.
    Null,
    /// Reasonix's own.
    Inherit,
    /// A pipe to Reasonix.
    Piped,
}

impl Stream {
    /// As std's `Command` takes it.
    pub(super) fn stdio(self) -> Stdio {
        match self {
            Stream::Null => Stdio::null(),
            Stream::Inherit => Stdio::inherit(),
            Stream::Piped => Stdio::piped(),
        }
    }
}

/// A started process, this process's child until it is reaped.
pub(super) enum Process {
    /// Forked by std.
    Forked(Child),
    /// Cloned into its namespaces by the thread that started the run.
    Cloned(Cloned),
}

/// A process cloned by the run's thread: its pid (not reused until it is reaped here), its
/// pipes, and how it ended once reaped.
pub(super) struct Cloned {
    pub(super) pid: u32,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) stderr: Option<ChildStderr>,
    pub(super) reaped: Option<ExitStatus>,
}

impl Process {
    /// Its pid, in this process's PID namespace.
    pub(super) fn id(&self) -> u32 {
        match self {
            Process::Forked(c) => c.id(),
            Process::Cloned(c) => c.pid,
        }
    }

    pub(super) fn take_stdin(&mut self) -> Option<ChildStdin> {
        match self {
            Process::Forked(c) => c.stdin.take(),
            Process::Cloned(c) => c.stdin.take(),
        }
    }

    pub(super) fn take_stdout(&mut self) -> Option<ChildStdout> {
        match self {
            Process::Forked(c) => c.stdout.take(),
            Process::Cloned(c) => c.stdout.take(),
        }
    }

    pub(super) fn take_stderr(&mut self) -> Option<ChildStderr> {
        match self {
            Process::Forked(c) => c.stderr.take(),
            Process::Cloned(c) => c.stderr.take(),
        }
    }

    /// Waits for it to end and reaps it (once; later calls say the same).
    pub(super) fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Process::Forked(c) => c.wait(),
            Process::Cloned(c) => c
                .reap(0)
                .map(|s| s.expect("a blocking wait returns a status")),
        }
    }

    /// How it ended, if it has, reaping it then; `None` while it runs.
    pub(super) fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        match self {
            Process::Forked(c) => c.try_wait(),
            Process::Cloned(c) => c.reap(libc::WNOHANG),
        }
    }
}

impl Cloned {
    fn reap(&mut self, flags: libc::c_int) -> std::io::Result<Option<ExitStatus>> {
        if self.reaped.is_none() {
            // `pid` is this process's child, not yet reaped (so its pid is not another
            // process's).
            self.reaped = wait_raw(self.pid as libc::pid_t, flags)?.map(ExitStatus::from_raw);
        }
        Ok(self.reaped)
    }
}

/// `waitpid(pid, flags)` for a child of this process, again whenever a signal interrupts it:
/// the child's raw wait status, or `None` where `WNOHANG` found it still running. System calls
/// only, and errors from raw OS codes: callable in a process that has just forked.
pub(super) fn wait_raw(
    pid: libc::pid_t,
    flags: libc::c_int,
) -> std::io::Result<Option<libc::c_int>> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a live `c_int` the kernel writes.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r == 0 {
            return Ok(None);
        }
        if r > 0 {
            return Ok(Some(status));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

impl Drop for Cloned {
    /// A process never waited for is reaped here (after its group was killed by the run, or the
    /// `Jailed` value that held it), so that no zombie is left behind.
    fn drop(&mut self) {
        if self.reaped.is_none() {
            let _ = self.reap(libc::WNOHANG);
        }
    }
}

/// The three standard streams of a process to be cloned: the descriptors it takes as 0, 1 and 2
/// (`None`: Reasonix's own, inherited), and Reasonix's ends of the pipes. Every descriptor is
/// close-on-exec; the clone's `dup2` clears that flag on its copies only.
pub(super) struct Pipes {
    pub(super) child: [Option<OwnedFd>; 3],
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) stderr: Option<ChildStderr>,
}

impl Pipes {
    pub(super) fn new(streams: [Stream; 3]) -> std::io::Result<Pipes> {
        let mut pipes = Pipes {
            child: [None, None, None],
            stdin: None,
            stdout: None,
            stderr: None,
        };
        for (n, stream) in streams.into_iter().enumerate() {
            pipes.child[n] = match stream {
                Stream::Inherit => None,
                Stream::Null => Some(
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open("/dev/null")?
                        .into(),
                ),
                Stream::Piped => {
                    let (reader, writer) = std::io::pipe()?;
                    let (reader, writer) = (OwnedFd::from(reader), OwnedFd::from(writer));
                    match n {
                        0 => {
                            pipes.stdin = Some(writer.into());
                            Some(reader)
                        }
                        1 => {
                            pipes.stdout = Some(reader.into());
                            Some(writer)
                        }
                        _ => {
                            pipes.stderr = Some(reader.into());
                            Some(writer)
                        }
                    }
                }
            };
            // Above 2, so that no `dup2` of the clone overwrites another stream's descriptor
            // (where Reasonix itself runs with 0, 1 or 2 closed); `try_clone` duplicates to 3
            // or above, close-on-exec.
            if let Some(fd) = &pipes.child[n]
                && std::os::fd::AsRawFd::as_raw_fd(fd) < 3
            {
                pipes.child[n] = Some(fd.try_clone()?);
            }
        }
        Ok(pipes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn pipes_give_reasonix_the_other_ends_and_null_is_dev_null() {
        let mut p = Pipes::new([Stream::Piped, Stream::Piped, Stream::Null]).unwrap();
        let [Some(inp), Some(out), Some(null)] = std::mem::take(&mut p.child) else {
            panic!("every stream has a descriptor for the child");
        };
        // What Reasonix writes to stdin, the child reads; what the child writes, Reasonix reads.
        p.stdin.take().unwrap().write_all(b"in").unwrap();
        let mut buf = [0u8; 2];
        std::fs::File::from(inp).read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"in");
        std::fs::File::from(out).write_all(b"out").unwrap();
        let mut got = String::new();
        p.stdout.take().unwrap().read_to_string(&mut got).unwrap();
        assert_eq!(got, "out");
        let target = std::fs::read_link(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&null)
        ))
        .unwrap();
        assert_eq!(target, std::path::Path::new("/dev/null"));
        assert!(p.stderr.is_none());
    }

    #[test]
    fn inherited_streams_have_no_descriptor_of_their_own() {
        let p = Pipes::new([Stream::Null, Stream::Inherit, Stream::Inherit]).unwrap();
        assert!(p.child[0].is_some() && p.child[1].is_none() && p.child[2].is_none());
        assert!(p.stdout.is_none() && p.stderr.is_none() && p.stdin.is_none());
    }
}
