//! Starting a stdio MCP server: the one function that builds its process.
//!
//! The server runs in the workspace, in a process group of its own (so the whole group is
//! killed when the connection ends), with an environment of PATH, HOME and LANG plus what its
//! configuration adds — not Reasonix's own environment, which may hold the provider's key. Its
//! stdin and stdout carry the protocol; the last 4 KiB of its stderr are kept for error
//! messages.
//!
//! **Not jailed yet.** TODO(jail): the OS jail ([`crate::sandbox::jail`]) runs a command to
//! completion and does not offer a long-lived child with piped stdin and stdout yet. Until it
//! does, a stdio server runs as a plain process: its connect call carries
//! [`NOT_JAILED`], so the sandbox stage refuses it under `enforce` and a `best_effort` verdict
//! says "not enforced". Nothing here claims a jail it does not apply.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// What a connect verdict says while stdio servers run outside the jail.
pub const NOT_JAILED: &str = "a stdio MCP server runs as a plain process in the workspace (own process group, cleared environment), not in the OS jail: the jail cannot hold a long-lived server yet";

/// How much of a server's stderr is kept.
const STDERR_KEPT: usize = 4096;

/// A started server process and its pipes.
pub struct Started {
    /// The process (killed on drop, with its group by [`kill_group`]).
    pub child: Child,
    /// Its process group.
    pub pgid: Option<i32>,
    /// What the client writes to.
    pub stdin: ChildStdin,
    /// What the client reads from.
    pub stdout: ChildStdout,
}

/// Starts `command args` in `workspace` (see the module doc); the tail of its stderr goes to
/// `stderr` as it writes. Must run inside a tokio runtime (it starts the stderr reader there).
pub fn spawn(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    workspace: &Path,
    stderr: Arc<Mutex<Vec<u8>>>,
) -> std::io::Result<Started> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .current_dir(workspace)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for key in ["PATH", "HOME", "LANG"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd.envs(env);
    let mut child = cmd.spawn()?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let (Some(stdin), Some(stdout), Some(mut err)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the server's pipes were not opened"));
    };
    let tail = stderr;
    tokio::spawn(async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = err.read(&mut buf).await {
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
    });
    Ok(Started {
        child,
        pgid,
        stdin,
        stdout,
    })
}

/// Kills a server's whole process group (what it started too).
pub fn kill_group(pgid: i32) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
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
