//! Running one hook: its command in the workspace, in a process group of its own, with an
//! environment of PATH, HOME and LANG only, the request on stdin, at most 64 KiB of stdout kept,
//! and the whole group killed at the timeout. Not jailed yet (see the module doc of `hooks`).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The most of a hook's stdout (and stderr) that is read.
const KEPT: u64 = 64 * 1024;

/// Runs the hook; its stdout when it exited 0, or why it did not.
pub(super) fn run(
    command: &[String],
    workspace: &Path,
    request: &Value,
    timeout: Duration,
) -> Result<String, String> {
    let Some((program, args)) = command.split_first() else {
        return Err("no command".into());
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(workspace)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    for key in ["PATH", "HOME", "LANG"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("it could not be started: {e}"))?;
    let pgid = child.id();
    let bytes = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    let stdin = child.stdin.take();
    // A hook that does not read its stdin must not stall the gate: write from a thread.
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            let _ = s.write_all(&bytes);
        }
    });
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(p) = pipe {
                let _ = p.take(KEPT).read_to_end(&mut out);
            }
            out
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                kill(pgid);
                let _ = child.wait();
                return Err(format!(
                    "it did not answer within {} ms (timeout_ms); it was killed",
                    timeout.as_millis()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill(pgid);
                return Err(format!("cannot wait for it: {e}"));
            }
        }
    };
    // Whatever it left running in its group goes with it.
    kill(pgid);
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let last_err = String::from_utf8_lossy(&stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!("; its last stderr line: {}", crate::text::visible(l.trim())))
        .unwrap_or_default();
    if let Some(code) = status.code() {
        if code != 0 {
            return Err(format!("it exited with status {code}{last_err}"));
        }
    } else {
        use std::os::unix::process::ExitStatusExt;
        return Err(format!(
            "it crashed (killed by signal {}){last_err}",
            status.signal().unwrap_or(0)
        ));
    }
    String::from_utf8(stdout).map_err(|_| "its output is not UTF-8".into())
}

fn kill(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
