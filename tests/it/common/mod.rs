//! Helpers shared by the integration tests: a temporary workspace beside an "outside" folder
//! and a home folder, and a runner for the built `reasonix` binary.

#![allow(dead_code)]

pub mod mock;
pub mod oracle;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use reasonix::gate::Admitted;
use reasonix::lease::Leases;
use reasonix::tool::{Output, ToolError};
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};
use serde_json::Value;

/// A policy under which every fallback allows: tests of the tools themselves use it.
pub const ALLOW_ALL: &str = "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n";

/// How long [`World::run`] lets one reasonix process take.
pub const RUN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// A temporary world: `<tmp>/ws` (the workspace), `<tmp>/outside`, `<tmp>/home`.
pub struct World {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub ws: PathBuf,
    pub outside: PathBuf,
    pub home: PathBuf,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let outside = root.join("outside");
        let home = root.join("home");
        for d in [&ws, &outside, &home] {
            std::fs::create_dir_all(d).unwrap();
        }
        World {
            _dir: dir,
            root,
            ws,
            outside,
            home,
        }
    }

    /// Writes a file below the workspace, creating folders.
    pub fn file(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    /// `reasonix trust --workspace <ws>`: the user trusts the workspace's project files
    /// (reasonix.yaml, .mcp.json, the policies it names) as they are now.
    pub fn trust(&self) {
        let ws = self.ws.to_str().unwrap();
        let (code, stdout, stderr) = self.run(&["trust", "--workspace", ws], "");
        assert_eq!(code, 0, "reasonix trust: {stdout}{stderr}");
    }

    /// Makes a symlink at `rel` (below the workspace) pointing to `target` (taken literally).
    pub fn link(&self, rel: &str, target: impl AsRef<Path>) {
        std::os::unix::fs::symlink(target, self.ws.join(rel)).unwrap();
    }

    /// Starts `reasonix` with the given arguments, in the `outside` folder, with HOME pointing
    /// at this world's home and its three standard streams piped.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.spawn_env(args, &[])
    }

    /// As [`World::spawn`], with these environment variables set too.
    pub fn spawn_env(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_reasonix"))
            .args(args)
            .current_dir(&self.outside)
            .env("HOME", &self.home)
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Runs `reasonix` with the given arguments and stdin, in the `outside` folder, with HOME
    /// pointing at this world's home. Returns the exit code, stdout and stderr.
    pub fn run(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        self.run_env(args, stdin, &[])
    }

    /// As [`World::run`], with these environment variables set too.
    pub fn run_env(
        &self,
        args: &[&str],
        stdin: &str,
        env: &[(&str, &str)],
    ) -> (i32, String, String) {
        let mut child = self.spawn_env(args, env);
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        // Bounded: a reasonix that hangs is killed and the test fails, rather than the suite
        // waiting forever.
        use std::io::Read;
        let read = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut out = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut out);
                }
                out
            })
        };
        let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
        let until = std::time::Instant::now() + RUN_TIMEOUT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                panic!("reasonix {args:?} did not end within {RUN_TIMEOUT:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        (
            status.code().unwrap_or(-1),
            String::from_utf8(stdout.join().unwrap()).unwrap(),
            String::from_utf8(stderr.join().unwrap()).unwrap(),
        )
    }

    /// `reasonix check --format json --workspace <ws> [extra...] CALL`: exit code and verdict.
    pub fn check(&self, call: &Value, extra: &[&str]) -> (i32, Value) {
        let ws = self.ws.to_str().unwrap().to_owned();
        let call = call.to_string();
        let mut args = vec!["check", "--format", "json", "--workspace", ws.as_str()];
        args.extend_from_slice(extra);
        args.push(call.as_str());
        let (code, stdout, stderr) = self.run(&args, "");
        let verdict: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("not one JSON verdict ({e}): {stdout}\nstderr: {stderr}"));
        (code, verdict)
    }

    /// `reasonix check --format json` over JSONL on stdin: exit code and one verdict per line.
    pub fn check_lines(&self, stdin: &str, extra: &[&str]) -> (i32, Vec<Value>) {
        let ws = self.ws.to_str().unwrap().to_owned();
        let mut args = vec!["check", "--format", "json", "--workspace", ws.as_str()];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = self.run(&args, stdin);
        let verdicts = stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\nstderr: {stderr}"))
            })
            .collect();
        (code, verdicts)
    }

    /// Writes a policy file in the world's root (outside the workspace) and returns its path.
    pub fn policy(&self, name: &str, yaml: &str) -> String {
        let p = self.root.join(name);
        std::fs::write(&p, yaml).unwrap();
        p.to_str().unwrap().to_owned()
    }
}

impl World {
    /// A gate over this workspace with the builtin tools.
    pub fn gate(&self, policy: &PolicySet, posture: Posture) -> Gate {
        gate_over(Registry::with_builtins(), policy, &self.ws, posture)
    }

    /// An interactive gate over one YAML policy given as text.
    pub fn yaml_gate(&self, yaml: &str) -> Gate {
        let policy = PolicySet::from_yaml("test.yaml", yaml).unwrap_or_else(|e| panic!("{e}"));
        self.gate(&policy, Posture::Interactive)
    }
}

/// Whether a test must skip because this machine lacks `what` (`have` is false): it says so on
/// stderr with a `SKIPPED` line, which libtest hides when the test passes. With
/// `REASONIX_NO_SKIP=1` (CI sets it) it panics instead: there, a skip is a failure.
///
/// ```ignore
/// if skip_unless(jail::capabilities().seccomp, "seccomp filters") {
///     return;
/// }
/// ```
pub fn skip_unless(have: bool, what: &str) -> bool {
    if have {
        return false;
    }
    if std::env::var("REASONIX_NO_SKIP").as_deref() == Ok("1") {
        panic!(
            "this machine lacks {what}, which the test needs; REASONIX_NO_SKIP=1 is set, and CI counts a skip as a failure"
        );
    }
    eprintln!("SKIPPED: this machine lacks {what}; the test needs it");
    true
}

/// The reasons of a verdict, joined.
pub fn reasons(v: &Value) -> String {
    v["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .unwrap_or_default()
}

/// Every line of a JSONL file (an execution record), parsed.
pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A gate over `workspace` with the default host files, as every entry point builds one.
pub fn gate_over(
    registry: Registry,
    policy: &PolicySet,
    workspace: &Path,
    posture: Posture,
) -> Gate {
    Gate::builder(registry, policy, workspace)
        .posture(posture)
        .host_files(HostFiles::for_workspace(workspace))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Leases an admitted call on a lease manager of its own and executes it.
pub fn execute(admitted: Admitted) -> Result<Output, ToolError> {
    admitted
        .lease_blocking(&Leases::new())
        .expect("a runtime for the lease")
        .execute()
        .result
}

/// Admits `name(args)` through `gate`, which must allow it, and executes it: its text, or the
/// tool's error as a string.
pub fn run_allowed(
    gate: &reasonix::Gate,
    name: &str,
    args: serde_json::Value,
) -> Result<String, String> {
    match gate.admit(&reasonix::Call::new(name, args)) {
        reasonix::gate::Judgement::Allowed(a) => {
            execute(a).map(|o| o.text).map_err(|e| e.to_string())
        }
        other => panic!("not allowed: {:?}", other.admission().reasons),
    }
}

/// `reasonix run --unattended` over a script of one call per turn; returns the exit code,
/// stderr and the record's lines.
pub fn run_script(w: &World, yaml: &str, calls: &[Value]) -> (i32, String, Vec<Value>) {
    let p = w.policy("p.yaml", yaml);
    let turns: Vec<Value> = calls
        .iter()
        .map(|c| serde_json::json!({"tool_calls": [c]}))
        .collect();
    let script = w.root.join("s.json");
    std::fs::write(&script, Value::Array(turns).to_string()).unwrap();
    let provider = format!("script:{}", script.display());
    let ws = w.ws.to_str().unwrap();
    let args = [
        "run",
        "--provider",
        &provider,
        "--workspace",
        ws,
        "--policy",
        &p,
        "--unattended",
        "go",
    ];
    let (code, _, stderr) = w.run(&args, "");
    let lines = jsonl(&w.ws.join(".reasonix/record.jsonl"));
    (code, stderr, lines)
}

/// The servers of the workspace's `.mcp.json`, read as a user who trusts it would have them
/// (the settings loader gives a trusted `.mcp.json` to `reasonix::mcp::servers`).
pub fn trusted_mcp_servers(ws: &Path) -> Vec<reasonix::mcp::Server> {
    let path = ws.join(".mcp.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let specs = reasonix::mcp::config::parse_mcp_json(&path.display().to_string(), &text).unwrap();
    reasonix::mcp::servers(Some((&path, &specs)), &Default::default()).unwrap()
}
