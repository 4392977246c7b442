//! Running one hook: its command in the OS jail under the gate's hooks plan (the workspace
//! read-only: [`crate::Gate::hooks_jail`], and what the policy protects from reading covered:
//! [`crate::Gate::command_shape`]), in the workspace, with the jail's environment, the
//! request on stdin, at most 64 KiB of stdout and stderr kept, and its process group and cgroups
//! killed at the timeout or when it has answered.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::sandbox::jail::{self, JailPlan};

/// The most of a hook's stdout (and stderr) that is read.
const KEPT: u64 = 64 * 1024;

/// Runs the hook; its stdout when it exited 0, or why it did not.
pub(super) fn run(
    plan: &JailPlan,
    shape: &jail::Shape,
    command: &[String],
    request: &Value,
    timeout: Duration,
) -> Result<String, String> {
    let mut child = jail::spawn(plan, command, &[], shape)
        .map_err(|e| format!("it could not be started: {e}"))?;
    let bytes = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    let stdin = child.take_stdin();
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
            .take_stdout()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .take_stderr()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                return Err(format!(
                    "it did not answer within {} ms (timeout_ms); it was killed",
                    timeout.as_millis()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    // Whatever it left running in its group goes with it.
    drop(child);
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
