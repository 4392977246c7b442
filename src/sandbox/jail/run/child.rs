//! A long-lived jailed process with pipes: what a stdio MCP server and a hook run as.
//!
//! [`spawn`] starts a command exactly as a run does — the same plan, the same steps between
//! fork and exec, its own process group, cgroups, TMPDIR and (where the plan has them) mount
//! and PID namespaces — but with its standard input, output and error piped to the caller and
//! no wall clock: the caller speaks to it for as long as it needs, and bounds what it reads of
//! its stderr. Dropping the [`Jailed`] value ends it: its process group is killed with
//! `SIGKILL`, then everything still in its cgroups (even a process that left the group with
//! `setsid`), it is reaped, and its TMPDIR removed. With a PID namespace the command is pid 1
//! of it, so what it started dies with it anyway.
//!
//! # Cancel safety
//!
//! None is needed: nothing here is async. A caller on a runtime turns the pipes into its own
//! types (`tokio::process::ChildStdout::from_std`); dropping the value from any thread ends the
//! process.

use std::process::{ChildStderr, ChildStdin, ChildStdout, ExitStatus};

use nix::sys::signal::{Signal, killpg};

use super::super::JailPlan;
use super::super::shape::{Shape, Writes};
use super::process::{Process, Stream};
use super::{RunCgroups, RunError, Start, start};

/// A jailed process that runs until it exits or this value is dropped (see the module doc).
pub struct Jailed {
    child: Process,
    pgid: nix::unistd::Pid,
    /// Held for the life of the process: dropped after it is killed.
    cgroups: Option<RunCgroups>,
    _tmp: crate::sandbox::jail::folder::Folder,
    /// The network namespace and egress proxy of a process with `network` rules: the
    /// `sandbox.network` entries alone judge its connections (no gate is at hand).
    _egress: Option<(std::os::fd::OwnedFd, crate::egress::Proxy)>,
    not_enforced: Vec<String>,
    reaped: Option<ExitStatus>,
    /// Holds the thread the process was forked from (see [`spawn`]); declared last, so that it
    /// goes after the process is killed.
    _keeper: std::sync::mpsc::Sender<()>,
}

/// A borrowed plan handed to the thread that forks a long-lived process (see [`spawn`]).
struct PlanRef(*const JailPlan);

// SAFETY: the plan is only read through it, while `spawn` waits; `JailPlan` is shared between
// threads everywhere else too (an `Arc<JailPlan>` in a session).
unsafe impl Send for PlanRef {}

/// What [`PlanRef`]'s `Send` rests on: a plan may be read from several threads at once.
const _: () = {
    const fn shared<T: Sync>() {}
    shared::<JailPlan>();
};

impl std::fmt::Debug for Jailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jailed")
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

/// Starts `argv` under `plan` with piped standard streams and no wall clock, with the jail's
/// environment plus `extra` (which cannot replace `TMPDIR`). Crate-private, like a run: a stdio
/// MCP server reaches it through its admitted connect call, a hook after its call's admission.
///
/// # Errors
///
/// As a run's: [`RunError::Refused`] when the plan refuses to run anything (under `enforce`,
/// a part it cannot apply; a dry run's plan), and nothing was started;
/// [`RunError::Setup`] and [`RunError::Spawn`] when the jail or the program failed.
pub(crate) fn spawn(
    plan: &JailPlan,
    argv: &[String],
    extra: &[(String, String)],
    shape: &Shape,
) -> Result<Jailed, RunError> {
    // A long-lived process has no end at which its changes could be judged: it writes in place
    // (an MCP server's tools are declared by policy) or not at all.
    let shape = match shape.writes {
        Writes::Observed => &Shape {
            writes: Writes::Direct,
            hidden: shape.hidden.clone(),
        },
        _ => shape,
    };
    let (argv, extra, shape) = (argv.to_vec(), extra.to_vec(), shape.clone());
    // The process dies with the thread that forks it (`PR_SET_PDEATHSIG`), and the caller's
    // thread may end before the process should (a runtime's blocking thread, idle for a while):
    // it is forked from a thread of its own, which lives until this value is dropped.
    let (started_tx, started_rx) = std::sync::mpsc::sync_channel(1);
    let (keep, kept) = std::sync::mpsc::channel::<()>();
    let plan = PlanRef(plan as *const JailPlan);
    let keeper = std::thread::Builder::new()
        .name("reasonix-jailed".into())
        .spawn(move || {
            let plan = plan;
            // SAFETY: `spawn` below waits for this thread's answer before it returns, and this
            // thread does not touch the plan after answering (nor once the answer is dropped by
            // a panic), so the borrow it came from outlives every use.
            let plan = unsafe { &*plan.0 };
            let streams = [Stream::Piped; 3];
            let _ = started_tx.send(start(plan, &argv, &extra, streams, None, &shape));
            // Until the `Jailed` is dropped: its sender then goes, and `recv` fails.
            let _ = kept.recv();
        })
        .map_err(|source| RunError::Setup {
            what: "thread to start a long-lived process from",
            source,
        })?;
    let answer = started_rx.recv();
    drop(keeper);
    let Start {
        child,
        pgid,
        tmp,
        cgroups,
        not_enforced,
        started: _,
        egress,
        writes: _,
        upper: _,
    } = answer.map_err(|_| RunError::Setup {
        what: "thread to start a long-lived process from",
        source: std::io::Error::other("it ended without an answer"),
    })??;
    Ok(Jailed {
        _keeper: keep,
        child,
        pgid,
        cgroups: Some(cgroups),
        _tmp: tmp,
        _egress: egress,
        not_enforced,
        reaped: None,
    })
}

impl Jailed {
    /// Its standard input, once.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.take_stdin()
    }

    /// Its standard output, once.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.take_stdout()
    }

    /// Its standard error, once. The caller bounds what it keeps.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.take_stderr()
    }

    /// Its process id, outside any namespace of its own: the command's (pid 1 inside), or the
    /// launcher's where one started it; the process group's either way.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// What of its plan this process runs without (under `best_effort`), in words.
    pub fn not_enforced(&self) -> &[String] {
        &self.not_enforced
    }

    /// How it ended, if it has (without waiting).
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if self.reaped.is_none() {
            self.reaped = self.child.try_wait()?;
        }
        Ok(self.reaped)
    }

    /// Kills its process group and everything in its cgroups, and reaps it: how it ended.
    ///
    /// # Errors
    ///
    /// Waiting failed, or a process of its cgroups could not be killed
    /// ([`crate::sandbox::jail::cgroup::Cgroup::kill_all`] gave up): it was reaped all the same,
    /// and what is left in the cgroup runs on.
    pub fn kill(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.reaped {
            return Ok(status);
        }
        let _ = killpg(self.pgid, Signal::SIGKILL);
        let mut killed = Ok(());
        if let Some(cgroups) = &self.cgroups {
            for cg in &cgroups.groups {
                if let Err(e) = cg.kill_all() {
                    killed = Err(e);
                }
            }
        }
        let status = self.child.wait()?;
        self.reaped = Some(status);
        killed.map(|()| status)
    }
}

impl Drop for Jailed {
    fn drop(&mut self) {
        // Whatever it left in its group goes too, even when the process itself has exited.
        let _ = killpg(self.pgid, Signal::SIGKILL);
        let _ = self.kill();
        // Kills whatever is left in them, then removes them.
        drop(self.cgroups.take());
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};

    use super::*;
    use crate::sandbox::jail::{Enforcement, JailConfig};

    fn plan(ws: &std::path::Path) -> JailPlan {
        let config = JailConfig {
            mode: Enforcement::BestEffort,
            ..JailConfig::default()
        };
        JailPlan::new(&config, ws, None)
    }

    extern "C" fn ignore(_: nix::libc::c_int) {}

    /// The status lines of `pid` (in this process's PID namespace), by name.
    fn status_of(text: &str, field: &str) -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .unwrap_or_else(|| panic!("no {field} in {text}"))
            .trim()
            .to_owned()
    }

    #[test]
    fn in_namespaces_reasonix_clones_the_command_itself_which_starts_with_no_signal_of_reasonixs() {
        use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, pthread_sigmask, signal};
        if !crate::sandbox::jail::capabilities().namespaces {
            assert!(
                std::env::var_os("REASONIX_NO_SKIP").is_none(),
                "no mount and PID namespaces here, and REASONIX_NO_SKIP=1 counts a skip as a failure"
            );
            eprintln!("skipped: no mount and PID namespaces for a run here");
            return;
        }
        // A handler of Reasonix's (process-wide) and a signal blocked on the thread that starts
        // the run (the keeper thread inherits this one's mask); Rust's runtime ignores SIGPIPE.
        // SAFETY: the handler does nothing, and nothing else in these tests uses SIGUSR1.
        unsafe { signal(Signal::SIGUSR1, SigHandler::Handler(ignore)) }.unwrap();
        let mut blocked = SigSet::empty();
        blocked.add(Signal::SIGUSR2);
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&blocked), None).unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let plan = plan(&ws);
        // cat prints its own status, then waits on its stdin until this test closes it.
        let argv = ["/bin/cat", "/proc/self/status", "-"].map(String::from);
        let mut child = spawn(&plan, &argv, &[], &Shape::direct()).unwrap();
        pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&blocked), None).unwrap();
        let stdin = child.take_stdin().unwrap();
        let mut inside = String::new();
        let mut out = BufReader::new(child.take_stdout().unwrap());
        while !inside.contains("SigCgt:") {
            assert!(out.read_line(&mut inside).unwrap() > 0, "{inside}");
        }
        // Seen from here: no launcher stands between, the command is pid 1 of its namespace and
        // leads its own process group.
        let outside = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        assert_eq!(status_of(&outside, "PPid"), std::process::id().to_string());
        assert_eq!(status_of(&outside, "NSpid"), format!("{}\t1", child.id()));
        assert_eq!(status_of(&outside, "NSpgid"), format!("{}\t1", child.id()));
        // Seen from inside: no handler, no blocked signal, SIGPIPE back to its default; ignored
        // what a process std forks ignores (what this one inherited ignored: a hook makes std
        // fork and exec, as the launcher did, rather than use posix_spawn, which ignores the C
        // library's own signals in the child).
        for field in ["SigBlk", "SigCgt"] {
            assert_eq!(
                status_of(&inside, field),
                "0000000000000000",
                "{field}: {inside}"
            );
        }
        let mut by_std = std::process::Command::new("/bin/cat");
        by_std.arg("/proc/self/status");
        // SAFETY: the hook does nothing.
        unsafe { std::os::unix::process::CommandExt::pre_exec(&mut by_std, || Ok(())) };
        let by_std = String::from_utf8(by_std.output().unwrap().stdout).unwrap();
        assert_eq!(status_of(&inside, "SigIgn"), status_of(&by_std, "SigIgn"));
        let sigpipe = 1u64 << (nix::libc::SIGPIPE - 1);
        let ignored = u64::from_str_radix(&status_of(&inside, "SigIgn"), 16).unwrap();
        assert_eq!(ignored & sigpipe, 0, "SIGPIPE is not ignored");
        // Its stdin closed, it ends by itself, and is reaped with its status.
        drop(stdin);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(std::time::Instant::now() < until, "cat did not end");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(status.code(), Some(0));
        // SAFETY: back to the default action, which no other test relies on either way.
        unsafe { signal(Signal::SIGUSR1, SigHandler::SigDfl) }.unwrap();
    }

    #[test]
    fn a_jailed_child_talks_over_its_pipes_and_dropping_it_kills_its_whole_group() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let plan = plan(&ws);
        // A background process beside the one that answers: both must go on drop.
        let argv = ["/bin/sh", "-c", "sleep 60 & exec cat"].map(String::from);
        let mut child = spawn(
            &plan,
            &argv,
            &[("GREETING".into(), "hi".into())],
            &Shape::direct(),
        )
        .unwrap();
        let mut stdin = child.take_stdin().unwrap();
        let mut stdout = BufReader::new(child.take_stdout().unwrap());
        stdin.write_all(b"hello\n").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, "hello\n");
        assert_eq!(child.try_wait().unwrap(), None, "it lives on");
        let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
        drop(child);
        // Killed at once; the last of them may take a moment to be reaped (by the machine's
        // init: their parent, the launcher, went first).
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            killpg(pgid, None) == Err(nix::errno::Errno::ESRCH)
        });
        assert!(gone, "nothing of its group is left");
    }

    #[test]
    fn a_dry_plan_spawns_nothing() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let marker = ws.join("ran");
        let dry = JailPlan::dry(&JailConfig::default(), &ws, None);
        let argv = ["touch".to_owned(), marker.display().to_string()];
        match spawn(&dry, &argv, &[], &Shape::direct()) {
            Err(RunError::Refused(why)) => assert!(why.contains("dry run"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(!marker.exists());
    }
}
