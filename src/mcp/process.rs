//! Starting a stdio MCP server: the one function that builds its process.
//!
//! The server runs in the OS jail under its connect call's plan, as a bash command does
//! ([`crate::sandbox::jail::Jailed`]): the workspace and the `write_roots` writable as the plan
//! grants them (read-only in plan mode), the rest of the machine read-only or hidden, TCP only
//! to the `network` rules' ports, its own process group, cgroups, TMPDIR and PID namespace,
//! and an environment of the jail's (PATH, HOME, LANG, … — not Reasonix's own, which may hold
//! the provider's key) plus what its configuration adds. It has no wall clock: it lives as
//! long as its connection, and dropping the connection kills it with everything it started.
//! Its stdin and stdout carry the protocol; the last 4 KiB of its stderr are kept for error
//! messages.
//!
//! The program and any file it reads must be readable in the jail: a server installed outside
//! the system folders and the workspace (a `node_modules` or a virtualenv elsewhere) needs its
//! folder in `sandbox.read_roots`.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{ChildStdin, ChildStdout};
use std::sync::{Arc, Mutex};

use crate::sandbox::jail::{self, JailPlan, Jailed};

/// How much of a server's stderr is kept.
const STDERR_KEPT: usize = 4096;

/// A started server process and its pipes.
pub struct Started {
    /// The jailed process (killed, with what it started, on drop).
    pub process: Jailed,
    /// What the client writes to.
    pub stdin: ChildStdin,
    /// What the client reads from.
    pub stdout: ChildStdout,
}

/// Starts `command args` under `plan` (see the module doc); the tail of its stderr goes to
/// `stderr` as it writes, from a thread of its own.
pub fn spawn(
    plan: &JailPlan,
    shape: &jail::Shape,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    stderr: Arc<Mutex<Vec<u8>>>,
) -> Result<Started, String> {
    let argv: Vec<String> = std::iter::once(command.to_owned())
        .chain(args.iter().cloned())
        .collect();
    let extra: Vec<(String, String)> = env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut process = jail::spawn(plan, &argv, &extra, shape).map_err(|e| e.to_string())?;
    let (Some(stdin), Some(stdout), Some(mut err)) = (
        process.take_stdin(),
        process.take_stdout(),
        process.take_stderr(),
    ) else {
        return Err("the server's pipes were not opened".into());
    };
    let tail = stderr;
    std::thread::Builder::new()
        .name("reasonix-mcp-stderr".into())
        .spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut kept = match tail.lock() {
                    Ok(k) => k,
                    Err(p) => p.into_inner(),
                };
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > STDERR_KEPT {
                    let cut = kept.len() - STDERR_KEPT;
                    kept.drain(..cut);
                }
            }
        })
        .map_err(|e| format!("cannot read the server's stderr: {e}"))?;
    Ok(Started {
        process,
        stdin,
        stdout,
    })
}

/// The last non-empty line of a server's stderr, for an error message.
pub fn last_line(stderr: &Mutex<Vec<u8>>) -> Option<String> {
    let kept = match stderr.lock() {
        Ok(k) => k.clone(),
        Err(p) => p.into_inner().clone(),
    };
    String::from_utf8_lossy(&kept)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| crate::text::visible(l.trim()).into_owned())
}
