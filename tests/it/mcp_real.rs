//! MCP servers no one here wrote, behind the gate: the reference filesystem server (npm
//! `@modelcontextprotocol/server-filesystem`, `$REASONIX_MCP_FILESYSTEM` = its `dist/index.js`)
//! and the time server (PyPI `mcp-server-time`, `$REASONIX_MCP_TIME` = its program). `.ci/run`
//! installs both under `target/` and sets the variables; without them each test skips (and
//! fails under `REASONIX_NO_SKIP=1`).
//!
//! The filesystem server's tools are classified by the example policy
//! `policies/examples/mcp-filesystem/filesystem.yaml`, with the embedded default beside it.

use crate::common;

use std::path::PathBuf;

use common::{World, gate_over, reasons, skip_unless};
use reasonix::agent::servers::Servers;
use reasonix::{PolicySet, Posture, Registry};
use serde_json::{Value, json};

fn server(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.exists())
}

fn example() -> String {
    format!(
        "{}/policies/examples/mcp-filesystem/filesystem.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Lets the servers of these tests start: by name, in the jail (`enforce`), with the folders
/// they are installed in as read roots ([`start`]).
const START: &str = r#"version: 1
sandbox:
  bash: enforce
  read_roots: @ROOTS@
rules:
  - id: start-test-servers
    decision: allow
    tools: ["mcp_connect__files", "mcp_connect__time"]
"#;

/// The folders the installed servers live in, for `sandbox.read_roots`: the npm project holding
/// the filesystem server's `node_modules`, the time server's virtualenv and the Python it was
/// made from (its `pyvenv.cfg` `home`).
fn install_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(index) = server("REASONIX_MCP_FILESYSTEM") {
        let modules = index.ancestors().find(|a| a.ends_with("node_modules"));
        roots.extend(modules.and_then(|m| m.parent()).map(PathBuf::from));
    }
    if let Some(venv) =
        server("REASONIX_MCP_TIME").and_then(|t| Some(t.parent()?.parent()?.to_owned()))
    {
        let cfg = std::fs::read_to_string(venv.join("pyvenv.cfg")).unwrap_or_default();
        let home = cfg.lines().find_map(|l| l.strip_prefix("home = "));
        roots.extend(home.and_then(|h| PathBuf::from(h).parent().map(PathBuf::from)));
        roots.push(venv);
    }
    roots
}

/// [`START`] with the servers' folders as read roots.
fn start() -> String {
    START.replace("@ROOTS@", &json!(install_roots()).to_string())
}

impl World {
    /// `.mcp.json` with the filesystem server as `files`, serving the workspace; `None` when
    /// it is not installed (the test skips).
    fn files_server(&self) -> Option<()> {
        let index = server("REASONIX_MCP_FILESYSTEM");
        if skip_unless(
            index.is_some(),
            "the MCP filesystem server (REASONIX_MCP_FILESYSTEM)",
        ) {
            return None;
        }
        let index = index?;
        std::fs::write(
            self.ws.join(".mcp.json"),
            json!({"mcpServers": {"files": {
                "command": "node",
                "args": [index, self.ws],
            }}})
            .to_string(),
        )
        .unwrap();
        self.trust();
        Some(())
    }

    fn policies(&self) -> Vec<String> {
        let start = self.policy("start.yaml", &start());
        vec![
            "--policy".into(),
            "builtin:default".into(),
            "--policy".into(),
            example(),
            "--policy".into(),
            start,
        ]
    }

    fn check_files(&self, call: Value, extra: &[&str]) -> (i32, Value) {
        let policies = self.policies();
        let mut args: Vec<&str> = policies.iter().map(String::as_str).collect();
        args.extend_from_slice(extra);
        self.check(&call, &args)
    }
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

#[test]
fn the_filesystem_servers_declared_read_is_allowed_and_its_writer_asks() {
    let w = World::new();
    if w.files_server().is_none() {
        return;
    }
    w.file("notes.txt", "hello");
    let (code, v) = w.check_files(
        call("mcp__files__read_text_file", json!({"path": "notes.txt"})),
        &[],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    assert_eq!(v["read_only"], true);
    let (_, v) = w.check_files(
        call(
            "mcp__files__write_file",
            json!({"path": "n.txt", "content": "x"}),
        ),
        &[],
    );
    assert_eq!(v["verdict"], "ask", "{v}");
    assert_eq!(v["paths"][0]["access"], "write");
}

#[test]
fn dot_env_through_the_filesystem_server_is_denied_by_a_path_rule() {
    let w = World::new();
    if w.files_server().is_none() {
        return;
    }
    w.file(".env", "KEY=1");
    w.file("ok.txt", "ok");
    for args in [json!({"path": ".env"}), json!({"path": "./sub/../.env"})] {
        let (code, v) = w.check_files(call("mcp__files__read_text_file", args.clone()), &[]);
        assert_eq!(
            (code, v["verdict"].as_str()),
            (20, Some("deny")),
            "{args}: {v}"
        );
        assert_eq!(v["stage"], "policy");
    }
    // Hidden in a list of paths, it is still one of the call's paths.
    let (_, v) = w.check_files(
        call(
            "mcp__files__read_multiple_files",
            json!({"paths": ["ok.txt", ".env"]}),
        ),
        &[],
    );
    assert_eq!(v["verdict"], "deny", "{v}");
}

#[test]
fn a_declared_path_outside_the_workspace_is_blocked_at_stage_sandbox() {
    let w = World::new();
    if w.files_server().is_none() {
        return;
    }
    std::fs::write(w.outside.join("x"), "x").unwrap();
    w.file("a.txt", "a");
    let outside = w.outside.join("x");
    for c in [
        call(
            "mcp__files__read_text_file",
            json!({"path": "../outside/x"}),
        ),
        call("mcp__files__read_text_file", json!({"path": outside})),
        call(
            "mcp__files__move_file",
            json!({"source": "a.txt", "destination": "../outside/a.txt"}),
        ),
    ] {
        let (code, v) = w.check_files(c.clone(), &[]);
        assert_eq!(
            (code, v["verdict"].as_str()),
            (20, Some("deny")),
            "{c}: {v}"
        );
        assert_eq!(v["stage"], "sandbox", "{v}");
    }
}

#[test]
fn a_schema_violation_of_the_servers_own_schema_is_invalid() {
    let w = World::new();
    if w.files_server().is_none() {
        return;
    }
    for args in [
        json!({"path": 5}),
        json!({}),
        json!({"paths": "not-a-list"}),
    ] {
        let (code, v) = w.check_files(call("mcp__files__read_text_file", args.clone()), &[]);
        assert_eq!(code, 30, "{args}: {v}");
        assert_eq!(v["stage"], "validate");
    }
}

#[test]
fn an_undeclared_filesystem_tool_asks_and_is_denied_unattended() {
    let w = World::new();
    if w.files_server().is_none() {
        return;
    }
    // Without the example's classification, even read_text_file is exec + network.
    let start = w.policy("start.yaml", &start());
    let c = call("mcp__files__read_text_file", json!({"path": "notes.txt"}));
    let (_, v) = w.check(&c, &["--policy", "builtin:default", "--policy", &start]);
    assert_eq!(v["verdict"], "ask", "{v}");
    assert_eq!(v["effects"], json!(["exec", "network"]));
    let (code, v) = w.check(
        &c,
        &[
            "--policy",
            "builtin:default",
            "--policy",
            &start,
            "--posture",
            "unattended",
        ],
    );
    assert_eq!((code, v["verdict"].as_str()), (20, Some("deny")), "{v}");
}

#[test]
fn the_servers_annotations_show_in_check_explain() {
    let w = World::new();
    if w.files_server().is_none() {
        return;
    }
    let (_, v) = w.check_files(
        call("mcp__files__read_text_file", json!({"path": "a"})),
        &["--explain"],
    );
    let target = &v["input"]["target"];
    assert_eq!(target["source"], "mcp", "{target}");
    assert_eq!(target["annotations"]["readOnlyHint"], true, "{target}");
    // The server calls write_file destructive; policy declared it a writer; the hint is shown.
    let (_, v) = w.check_files(
        call(
            "mcp__files__write_file",
            json!({"path": "n.txt", "content": "x"}),
        ),
        &["--explain"],
    );
    assert_eq!(
        v["input"]["target"]["annotations"]["readOnlyHint"], false,
        "{v}"
    );
    assert_eq!(v["input"]["target"]["read_only"], false);
}

#[test]
fn a_denied_connect_of_the_filesystem_server_starts_no_process() {
    let w = World::new();
    let Some(index) = server("REASONIX_MCP_FILESYSTEM") else {
        skip_unless(false, "the MCP filesystem server (REASONIX_MCP_FILESYSTEM)");
        return;
    };
    let marker = w.ws.join("started");
    let script = format!(
        "touch '{}'; exec node '{}' .",
        marker.display(),
        index.display()
    );
    std::fs::write(
        w.ws.join(".mcp.json"),
        json!({"mcpServers": {"files": {"command": "/bin/sh", "args": ["-c", script]}}})
            .to_string(),
    )
    .unwrap();
    w.trust();
    let deny = w.policy(
        "deny.yaml",
        "version: 1\nrules:\n  - id: no-files\n    decision: deny\n    tools: [\"mcp_connect__files\"]\n",
    );
    let (_, v) = w.check(
        &call("mcp__files__list_allowed_directories", json!({})),
        &["--policy", &deny],
    );
    assert_eq!(v["verdict"], "invalid");
    assert!(reasons(&v).contains("no-files"), "{v}");
    assert!(!marker.exists(), "a denied connect started the server");
}

/// Runs an admitted call against the servers of `.mcp.json`, connected through the gate.
fn run_real(w: &World, yaml: &[(&str, &str)], name: &str, args: Value) -> Result<String, String> {
    let policy = PolicySet::from_texts(yaml, &[], &[]).unwrap();
    let gate = gate_over(
        Registry::with_builtins(),
        &policy,
        &w.ws,
        Posture::Unattended,
    );
    let configured = common::trusted_mcp_servers(&w.ws);
    let mut servers = Servers::new(configured, &gate).unwrap();
    let server = reasonix::mcp::server_of(name).unwrap();
    let c = servers.connect(server, &mut |_| None);
    if let Err(e) = &c.result {
        panic!("{server} did not connect: {e}");
    }
    let (registry, _) = servers.registry();
    let gate = gate.with_registry(registry).unwrap();
    common::run_allowed(&gate, name, args)
}

#[test]
fn the_filesystem_server_reads_a_file_it_was_allowed_to_read() {
    let w = World::new();
    if w.files_server().is_none() {
        return;
    }
    w.file("notes.txt", "hello from the workspace");
    let example = std::fs::read_to_string(example()).unwrap();
    let out = run_real(
        &w,
        &[("start.yaml", &start()), ("files.yaml", &example)],
        "mcp__files__read_text_file",
        json!({"path": w.ws.join("notes.txt")}),
    )
    .unwrap();
    assert!(out.contains("hello from the workspace"), "{out}");
}

#[test]
fn the_time_server_answers_and_its_schema_is_enforced() {
    let w = World::new();
    let time = server("REASONIX_MCP_TIME");
    if skip_unless(time.is_some(), "the MCP time server (REASONIX_MCP_TIME)") {
        return;
    }
    std::fs::write(
        w.ws.join(".mcp.json"),
        json!({"mcpServers": {"time": {"command": time.unwrap(), "args": ["--local-timezone", "UTC"]}}})
            .to_string(),
    )
    .unwrap();
    w.trust();
    let declared = format!(
        "{}mcp:\n  classify:\n    - tools: [\"mcp__time__*\"]\n      effects: [read]\n",
        start()
    );
    let p = w.policy("time.yaml", &declared);
    let (code, v) = w.check(
        &call("mcp__time__get_current_time", json!({"timezone": "UTC"})),
        &["--policy", &p],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    let (code, v) = w.check(
        &call("mcp__time__get_current_time", json!({"timezone": 7})),
        &["--policy", &p],
    );
    assert_eq!(code, 30, "{v}");
    let out = run_real(
        &w,
        &[("time.yaml", &declared)],
        "mcp__time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .unwrap();
    assert!(out.contains("UTC"), "{out}");
}

#[test]
fn the_jailed_filesystem_server_cannot_write_outside_the_workspace_though_it_was_told_it_may() {
    let w = World::new();
    let Some(index) = server("REASONIX_MCP_FILESYSTEM") else {
        skip_unless(false, "the MCP filesystem server (REASONIX_MCP_FILESYSTEM)");
        return;
    };
    // The server is told it may use the workspace and the outside folder; its tools are left
    // undeclared (exec and network, allowed as writers), so only the jail is left to stop it.
    std::fs::write(
        w.ws.join(".mcp.json"),
        json!({"mcpServers": {"files": {"command": "node", "args": [index, w.ws, w.outside]}}})
            .to_string(),
    )
    .unwrap();
    w.trust();
    let writers = "version: 1\ndefaults:\n  writer: allow\n";
    let planted = w.outside.join("planted.txt");
    let write = |p: &PathBuf| json!({"path": p, "content": "x"});
    let e = run_real(
        &w,
        &[("start.yaml", &start()), ("w.yaml", writers)],
        "mcp__files__write_file",
        write(&planted),
    )
    .unwrap_err();
    assert!(
        e.contains("EROFS") || e.contains("EACCES") || e.contains("read-only"),
        "{e}"
    );
    assert!(
        !planted.exists(),
        "a jailed server wrote outside the workspace"
    );
    // The legitimate use: the workspace is written.
    let inside = w.ws.join("inside.txt");
    let out = run_real(
        &w,
        &[("start.yaml", &start()), ("w.yaml", writers)],
        "mcp__files__write_file",
        write(&inside),
    )
    .unwrap();
    assert!(out.contains("Successfully wrote"), "{out}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "x");
    // The control: the jail off, the same call writes outside.
    let off = start().replace("bash: enforce", "bash: off");
    run_real(
        &w,
        &[("start.yaml", &off), ("w.yaml", writers)],
        "mcp__files__write_file",
        write(&planted),
    )
    .unwrap();
    assert!(planted.exists());
}
