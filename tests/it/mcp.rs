//! MCP tools behind the gate, with the in-tree server (`examples/mcp_fixture.rs`): connecting is
//! a call judged before any process starts, a server's schemas are enforced, what a tool does is
//! declared by policy (never borrowed from its annotations), and the failure cases — a tool
//! whose schema does not compile, a listing that never ends, a server that dies mid-call.

use crate::common;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::{World, gate_over, reasons};
use reasonix::agent::servers::Servers;
use reasonix::{Call, PolicySet, Posture, Registry};
use serde_json::{Value, json};

/// The fixture server, built once if `cargo test --all-targets` has not built it already.
fn fixture() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let debug = exe.parent().unwrap().parent().unwrap();
            let path = debug.join("examples").join("mcp_fixture");
            // Built every time (a no-op when fresh): a stale fixture would test an old mode set.
            {
                let status = std::process::Command::new(env!("CARGO"))
                    .args(["build", "--example", "mcp_fixture"])
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .status()
                    .unwrap();
                assert!(status.success(), "cannot build the MCP fixture server");
            }
            path
        })
        .clone()
}

/// A policy that lets the fixture server start (in the jail, `enforce`; its folder is a read
/// root), declares its reads, and denies `.env`. See [`policy`].
const POLICY: &str = r#"version: 1
sandbox:
  bash: enforce
  read_roots: ["@FIXTURES@"]
defaults:
  read_only: allow
  writer: ask
  unattended: deny
rules:
  - id: start-fx
    decision: allow
    tools: ["mcp_connect__fx"]
  - id: no-env
    decision: deny
    paths: [".env"]
mcp:
  classify:
    - tools: ["mcp__fx__read_note"]
      effects: [read]
      paths: {path: target}
    - tools: ["mcp__fx__write_note"]
      effects: [write]
      paths: {path: target}
"#;

/// [`POLICY`], with the fixture's folder as a read root.
fn policy() -> String {
    POLICY.replace("@FIXTURES@", fixture().parent().unwrap().to_str().unwrap())
}

impl World {
    /// `.mcp.json` with the fixture as server `fx`, started through `sh` so that a marker file
    /// (in the workspace: the jailed server may write there) proves whether any process started:
    /// each start adds a line to it ([`starts`]).
    fn fixture_server(&self, mode: &str) -> PathBuf {
        let marker = self.ws.join("started");
        let script = format!(
            "echo started >> '{}'; exec '{}' {mode}",
            marker.display(),
            fixture().display()
        );
        std::fs::write(
            self.ws.join(".mcp.json"),
            json!({"mcpServers": {"fx": {"command": "/bin/sh", "args": ["-c", script]}}})
                .to_string(),
        )
        .unwrap();
        // A server's command is the user's to trust (issue 26).
        self.trust();
        marker
    }
}

/// How many times the fixture server was started (lines of its marker file).
fn starts(marker: &std::path::Path) -> usize {
    std::fs::read_to_string(marker)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

#[test]
fn a_denied_connect_starts_no_process_and_its_tools_are_invalid_naming_the_refusal() {
    let w = World::new();
    let marker = w.fixture_server("normal");
    let p = w.policy(
        "p.yaml",
        "version: 1\nsandbox:\n  bash: best_effort\nrules:\n  - id: no-fx\n    decision: deny\n    tools: [\"mcp_connect__fx\"]\n    reason: fx is not trusted\n",
    );
    let (code, v) = w.check(
        &call("mcp__fx__echo", json!({"text": "hi"})),
        &["--policy", &p],
    );
    assert_eq!(code, 30, "{v}");
    assert_eq!(v["verdict"], "invalid");
    let why = reasons(&v);
    assert!(
        why.contains("mcp_connect__fx was refused") && why.contains("fx is not trusted"),
        "{why}"
    );
    assert!(!marker.exists(), "a denied connect started a process");

    // The same world with the connect allowed does start it: the marker proves it would show.
    let p = w.policy("allow.yaml", &policy());
    let (_, v) = w.check(
        &call("mcp__fx__echo", json!({"text": "hi"})),
        &["--policy", &p],
    );
    assert_eq!(v["verdict"], "ask", "{v}");
    assert!(marker.exists());
}

#[test]
fn no_mcp_starts_nothing_and_says_so() {
    let w = World::new();
    let marker = w.fixture_server("normal");
    let p = w.policy("p.yaml", &policy());
    let (_, v) = w.check(
        &call("mcp__fx__echo", json!({"text": "hi"})),
        &["--policy", &p, "--no-mcp"],
    );
    assert_eq!(v["verdict"], "invalid");
    assert!(reasons(&v).contains("--no-mcp"), "{v}");
    assert!(!marker.exists());
}

#[test]
fn a_connect_the_jail_cannot_hold_is_refused_at_stage_sandbox_and_starts_nothing() {
    // A jail plan that refuses to run anything refuses a stdio server as it refuses a bash
    // command; from the command line, a plan refuses when no private temporary folder can be
    // made (TMPDIR names a folder that does not exist).
    let w = World::new();
    let marker = w.fixture_server("normal");
    let p = w.policy("p.yaml", &policy());
    let ws = w.ws.to_str().unwrap().to_owned();
    let call = call("mcp__fx__echo", json!({"text": "hi"})).to_string();
    let no_tmp = w.root.join("no-such-tmp");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args([
            "check",
            "--format",
            "json",
            "--workspace",
            &ws,
            "--policy",
            &p,
        ])
        .arg(&call)
        .current_dir(&w.outside)
        .env("HOME", &w.home)
        .env("TMPDIR", &no_tmp)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "invalid", "{v}");
    let why = reasons(&v);
    // (Without a usable TMPDIR the probe finds no namespaces either; either refusal will do.)
    assert!(
        why.contains("refused: deny at stage sandbox (sandbox.bash is enforce")
            || why.contains("no private temporary folder"),
        "{why}"
    );
    assert!(!marker.exists(), "a refused connect started the server");
}

#[test]
fn a_schema_violation_is_invalid() {
    let w = World::new();
    w.fixture_server("normal");
    let p = w.policy("p.yaml", &policy());
    for args in [
        json!({"text": 5}),
        json!({}),
        json!({"text": "a", "more": 1}),
    ] {
        let (code, v) = w.check(&call("mcp__fx__echo", args.clone()), &["--policy", &p]);
        assert_eq!(code, 30, "{args}: {v}");
        assert_eq!(v["stage"], "validate");
        assert!(reasons(&v).contains("do not match its schema"), "{v}");
    }
}

#[test]
fn an_undeclared_mcp_tool_asks_and_is_denied_unattended() {
    let w = World::new();
    w.fixture_server("normal");
    let p = w.policy("p.yaml", &policy());
    let echo = call("mcp__fx__echo", json!({"text": "hi"}));
    let (_, v) = w.check(&echo, &["--policy", &p]);
    assert_eq!(v["verdict"], "ask", "{v}");
    assert_eq!(v["effects"], json!(["exec", "network"]));
    assert_eq!(v["read_only"], false);
    let (code, v) = w.check(&echo, &["--policy", &p, "--posture", "unattended"]);
    assert_eq!((code, v["verdict"].as_str()), (20, Some("deny")), "{v}");
}

#[test]
fn a_declared_read_is_read_only_and_a_declared_path_outside_the_workspace_is_blocked() {
    let w = World::new();
    w.fixture_server("normal");
    w.file("notes.txt", "n");
    std::fs::write(w.outside.join("x"), "x").unwrap();
    let p = w.policy("p.yaml", &policy());
    let (code, v) = w.check(
        &call("mcp__fx__read_note", json!({"path": "notes.txt"})),
        &["--policy", &p],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    assert_eq!(v["read_only"], true);
    assert_eq!(v["fallback"], "read_only");
    assert_eq!(v["paths"][0]["path"], json!(w.ws.join("notes.txt")));
    let (code, v) = w.check(
        &call("mcp__fx__read_note", json!({"path": "../outside/x"})),
        &["--policy", &p],
    );
    assert_eq!((code, v["verdict"].as_str()), (20, Some("deny")), "{v}");
    assert_eq!(v["stage"], "sandbox");
}

#[test]
fn dot_env_through_mcp_is_denied_by_a_path_rule() {
    let w = World::new();
    w.fixture_server("normal");
    w.file(".env", "SECRET=1");
    let p = w.policy("p.yaml", &policy());
    let (code, v) = w.check(
        &call("mcp__fx__read_note", json!({"path": ".env"})),
        &["--policy", &p],
    );
    assert_eq!((code, v["verdict"].as_str()), (20, Some("deny")), "{v}");
    assert_eq!(v["stage"], "policy");
    assert_eq!(v["rules"][0]["id"], "no-env");
}

#[test]
fn any_declared_argument_is_judged_as_a_path() {
    let w = World::new();
    w.fixture_server("normal");
    let yaml = policy().replace(
        "      effects: [read]\n      paths: {path: target}",
        "      effects: [read]\n      paths: {path: target, text: target}",
    );
    let yaml = yaml.replace("mcp__fx__read_note", "mcp__fx__echo");
    let p = w.policy("p.yaml", &yaml);
    // `echo`'s `text` is a string: declared a path, it is judged as one.
    let (_, v) = w.check(
        &call("mcp__fx__echo", json!({"text": ".env"})),
        &["--policy", &p],
    );
    assert_eq!(v["verdict"], "deny", "{v}");
}

#[test]
fn annotations_show_in_explain_and_never_make_a_call_read_only() {
    let w = World::new();
    w.fixture_server("normal");
    let p = w.policy("p.yaml", &policy());
    // write_note says readOnlyHint: true; policy declares it a writer, and a writer it is.
    let (_, v) = w.check(
        &call(
            "mcp__fx__write_note",
            json!({"path": "n.txt", "content": "c"}),
        ),
        &["--policy", &p, "--explain"],
    );
    assert_eq!(v["verdict"], "ask", "{v}");
    assert_eq!(v["read_only"], false);
    assert_eq!(v["paths"][0]["access"], "write");
    let target = &v["input"]["target"];
    assert_eq!(target["source"], "mcp");
    assert_eq!(target["annotations"]["readOnlyHint"], true, "{target}");
    assert_eq!(target["read_only"], false);
    assert_eq!(v["annotations"]["destructiveHint"], false, "{v}");
    // Undeclared, a tool that says readOnlyHint is still exec and network.
    let (_, v) = w.check(
        &call("mcp__fx__echo", json!({"text": "x"})),
        &["--policy", &p],
    );
    assert_eq!(v["annotations"]["readOnlyHint"], true);
    assert_eq!(v["read_only"], false);
}

#[test]
fn a_tool_whose_schema_does_not_compile_is_unavailable_with_its_reason() {
    let w = World::new();
    w.fixture_server("normal");
    let p = w.policy("p.yaml", &policy());
    let ws = w.ws.to_str().unwrap().to_owned();
    let args = [
        "check",
        "--format",
        "json",
        "--workspace",
        ws.as_str(),
        "--policy",
        p.as_str(),
        r#"{"name":"mcp__fx__bad_schema","arguments":{}}"#,
    ];
    let (code, stdout, stderr) = w.run(&args, "");
    assert_eq!(code, 30, "{stdout}{stderr}");
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(reasons(&v).contains("unusable schema"), "{v}");
    assert!(
        stderr.contains("mcp__fx__bad_schema is unavailable"),
        "{stderr}"
    );
}

#[test]
fn a_listing_that_never_ends_contributes_nothing_and_says_why() {
    let w = World::new();
    let marker = w.ws.join("started");
    let script = format!(
        "touch '{}'; exec '{}' slow-list",
        marker.display(),
        fixture().display()
    );
    std::fs::write(
        w.ws.join("reasonix.yaml"),
        format!(
            "mcp_servers:\n  fx:\n    command: /bin/sh\n    args: [\"-c\", {}]\n    startup_timeout_ms: 700\n",
            json!(script)
        ),
    )
    .unwrap();
    w.trust();
    let p = w.policy("p.yaml", &policy());
    let started = Instant::now();
    let (_, v) = w.check(
        &call("mcp__fx__echo", json!({"text": "x"})),
        &["--policy", &p],
    );
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(v["verdict"], "invalid");
    assert!(reasons(&v).contains("within 700 ms"), "{v}");
    assert!(marker.exists());
}

/// A gate over the fixture server, its connect judged and run, for the cases that execute.
fn connected(w: &World) -> (reasonix::Gate, Servers) {
    connected_with(w, &policy().replace("  writer: ask", "  writer: allow"))
}

/// The fixture's tools undeclared (exec and network, allowed as writers) under `sandbox.bash:
/// JAIL`: what the server then does to the machine is up to the jail alone.
fn undeclared(w: &World, jail: &str) -> (reasonix::Gate, Servers) {
    let yaml = policy()
        .replace("bash: enforce", &format!("bash: {jail}"))
        .replace("  writer: ask", "  writer: allow");
    let yaml = &yaml[..yaml.find("mcp:").unwrap()];
    connected_with(w, yaml)
}

fn connected_with(w: &World, yaml: &str) -> (reasonix::Gate, Servers) {
    connected_writing(w, yaml, reasonix::sandbox::jail::Writes::Direct)
}

/// [`connected_with`], the server started to write as `writes` says (`None`: as in plan mode).
fn connected_writing(
    w: &World,
    yaml: &str,
    writes: reasonix::sandbox::jail::Writes,
) -> (reasonix::Gate, Servers) {
    w.fixture_server("normal");
    let policy = PolicySet::from_yaml("p.yaml", yaml).unwrap();
    let gate = gate_over(
        Registry::with_builtins(),
        &policy,
        &w.ws,
        Posture::Unattended,
    );
    let configured = common::trusted_mcp_servers(&w.ws);
    let mut servers = Servers::new(configured, &gate).unwrap();
    servers.set_writes(writes);
    let c = servers.connect("fx", &mut |_| None);
    assert!(c.result.is_ok(), "{:?}", c.result.as_ref().err());
    let (registry, _) = servers.registry();
    (gate.with_registry(registry).unwrap(), servers)
}

fn run(gate: &reasonix::Gate, name: &str, args: Value) -> Result<String, String> {
    common::run_allowed(gate, name, args)
}

#[test]
fn a_result_comes_back_and_a_tool_error_is_a_failure() {
    let w = World::new();
    let (gate, _servers) = connected(&w);
    assert_eq!(
        run(&gate, "mcp__fx__echo", json!({"text": "hello"})),
        Ok("hello".into())
    );
    let e = run(&gate, "mcp__fx__fail", json!({})).unwrap_err();
    assert!(e.contains("fails on purpose"), "{e}");
}

#[test]
fn a_server_that_dies_mid_call_fails_and_its_tools_become_unavailable() {
    let w = World::new();
    let (gate, _servers) = connected(&w);
    let e = run(&gate, "mcp__fx__crash", json!({})).unwrap_err();
    assert!(e.contains("went away during the call"), "{e}");
    assert!(e.contains("crashing on purpose"), "{e}");
    let after = gate.admit(&Call::new("mcp__fx__echo", json!({"text": "x"})));
    let a = after.admission();
    assert_eq!(a.verdict, reasonix::Verdict::Invalid);
    assert!(a.reasons[0].contains("not available"), "{:?}", a.reasons);
}

#[test]
fn the_connect_record_line_says_what_the_server_brought() {
    let w = World::new();
    let (_gate, servers) = connected(&w);
    let (_, unavailable) = servers.registry();
    let line = servers
        .record("fx", "run-1", unavailable.get("fx").unwrap())
        .unwrap();
    let v = serde_json::to_value(&line).unwrap();
    assert_eq!(v["event"], "mcp_connect");
    assert_eq!(v["outcome"], "succeeded");
    assert_eq!(v["admission"]["verdict"], "allow");
    assert!(
        v["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__fx__echo"))
    );
    assert_eq!(v["unavailable"][0][0], "mcp__fx__bad_schema");
    // The server ran in the jail: what is not enforced is the plan's own list.
    let words = v["not_enforced"].as_str().unwrap();
    assert!(words.contains("pathname UNIX sockets"), "{words}");
    assert!(!words.contains("not in the OS jail"), "{words}");
}

#[test]
fn a_jailed_stdio_server_cannot_write_outside_the_workspace_and_can_inside() {
    let w = World::new();
    let planted = w.outside.join("planted.txt");
    let write = |path: &std::path::Path| json!({"path": path, "content": "x"});
    let (gate, servers) = undeclared(&w, "enforce");
    // Nothing but the jail stands between the server and the file: the write is tried, and the
    // kernel refuses it (the read-only mount, or Landlock).
    let e = run(&gate, "mcp__fx__write_note", write(&planted)).unwrap_err();
    assert!(
        e.contains("Read-only file system") || e.contains("Permission denied"),
        "{e}"
    );
    assert!(
        !planted.exists(),
        "a jailed server wrote outside the workspace"
    );
    // The legitimate use: the workspace is writable, as for a bash command.
    let inside = w.ws.join("inside.txt");
    assert_eq!(
        run(&gate, "mcp__fx__write_note", write(&inside)),
        Ok("written".into())
    );
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "x");
    drop((gate, servers));
    // The control: the same server and call without the jail writes the file.
    let (gate, _servers) = undeclared(&w, "off");
    assert_eq!(
        run(&gate, "mcp__fx__write_note", write(&planted)),
        Ok("written".into())
    );
    assert!(planted.exists());
}

#[test]
fn a_jailed_stdio_server_sees_only_its_own_processes_in_proc() {
    let w = World::new();
    let ours = format!("/proc/{}/cmdline", std::process::id());
    let read = |path: &str| json!({"path": path});
    let (gate, servers) = undeclared(&w, "enforce");
    let e = run(&gate, "mcp__fx__read_note", read(&ours)).unwrap_err();
    assert!(e.contains("No such file"), "{e}");
    // Its own PID namespace: pid 1 is the server itself.
    let one = run(&gate, "mcp__fx__read_note", read("/proc/1/cmdline")).unwrap();
    assert!(one.contains("mcp_fixture"), "{one:?}");
    drop((gate, servers));
    // The control: without the jail, the test's own process is there to read.
    let (gate, _servers) = undeclared(&w, "off");
    let seen = run(&gate, "mcp__fx__read_note", read(&ours)).unwrap();
    assert!(!seen.is_empty());
}

#[test]
fn an_mcp_tool_through_the_proxy_is_judged_as_itself() {
    let w = World::new();
    w.fixture_server("normal");
    w.file(".env", "SECRET=1");
    let p = w.policy("p.yaml", &policy());
    let proxied = json!({"name": "use_capability", "arguments": {
        "capability": "mcp__fx__read_note", "arguments": {"path": ".env"}}});
    let (code, v) = w.check(&proxied, &["--policy", &p, "--explain"]);
    assert_eq!((code, v["verdict"].as_str()), (20, Some("deny")), "{v}");
    assert_eq!(v["rules"][0]["id"], "no-env");
    assert_eq!(v["input"]["target"]["source"], "mcp");
    assert_eq!(v["input"]["target"]["via"], "use_capability");
    let (_, v) = w.check(
        &json!({"name": "use_capability", "arguments": {"capability": "mcp__fx__echo", "arguments": {"text": 1}}}),
        &["--policy", &p],
    );
    assert_eq!(v["verdict"], "invalid", "{v}");
}

#[test]
fn check_in_plan_mode_connects_with_a_normal_gate_as_run_plan_does() {
    let w = World::new();
    let marker = w.fixture_server("normal");
    w.file("notes.txt", "n");
    let p = w.policy("p.yaml", &policy());
    // The connect is judged as `run --plan` judges it (normal mode: starting a server is not a
    // read, and the plan stage would refuse it), so the declared read is judged in plan mode.
    let (code, v) = w.check(
        &call("mcp__fx__read_note", json!({"path": "notes.txt"})),
        &["--policy", &p, "--mode", "plan"],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    assert!(marker.exists(), "the server started");
    // The writer stays refused by plan mode itself.
    let (_, v) = w.check(
        &call(
            "mcp__fx__write_note",
            json!({"path": "n.txt", "content": "c"}),
        ),
        &["--policy", &p, "--mode", "plan"],
    );
    assert_eq!(
        (v["verdict"].as_str(), v["stage"].as_str()),
        (Some("deny"), Some("plan")),
        "{v}"
    );
}

// A dead server is restarted by the next call to one of its tools, its connect judged again.

/// [`POLICY`] with every writer allowed: the fixture's undeclared tools (`echo`, `crash`) run.
fn restart_policy() -> String {
    policy().replace("  writer: ask", "  writer: allow")
}

/// The record's lines of one event, or of calls to one tool.
fn lines_of<'a>(lines: &'a [Value], key: &str, value: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l[key] == value).collect()
}

#[test]
fn a_server_that_died_is_restarted_by_the_next_call_its_connect_judged_again() {
    let w = World::new();
    let marker = w.fixture_server("normal");
    let echo = call("mcp__fx__echo", json!({"text": "back again"}));
    let (code, stderr, lines) = common::run_script(
        &w,
        &restart_policy(),
        &[call("mcp__fx__crash", json!({})), echo],
    );
    assert_eq!(code, 0, "{stderr}");
    let crash = lines_of(&lines, "tool", "mcp__fx__crash");
    assert_eq!(crash[0]["outcome"], "failed", "{}", crash[0]);
    // Two connect lines: the first, then the restart, judged again by the same rule.
    let connects = lines_of(&lines, "event", "mcp_connect");
    assert_eq!(connects.len(), 2, "{connects:?}");
    assert_eq!(connects[0]["restart"], Value::Null);
    assert_eq!(connects[1]["restart"], 1);
    for c in &connects {
        assert_eq!(c["admission"]["verdict"], "allow", "{c}");
        assert_eq!(c["admission"]["rules"][0]["id"], "start-fx", "{c}");
        assert_eq!(c["outcome"], "succeeded", "{c}");
    }
    assert!(
        connects[1]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__fx__echo"))
    );
    // A new process, and the call on it succeeds.
    assert_eq!(starts(&marker), 2);
    let echoed = lines_of(&lines, "tool", "mcp__fx__echo");
    assert_eq!(echoed[0]["outcome"], "succeeded", "{}", echoed[0]);
    // The restart line comes before the call it was made for.
    let at = |l: &Value| lines.iter().position(|x| x == l).unwrap();
    assert!(at(connects[1]) < at(echoed[0]));
}

#[test]
fn a_tool_a_restarted_server_no_longer_lists_is_invalid_and_the_rest_run() {
    let w = World::new();
    let flag = w.ws.join("no-echo");
    let marker = w.fixture_server(&format!("without-echo-if:{}", flag.display()));
    let (code, stderr, lines) = common::run_script(
        &w,
        &restart_policy(),
        &[
            call("mcp__fx__crash", json!({})),
            // From now on the server lists no `echo`: its restart finds it gone.
            call("bash", json!({"command": "touch no-echo"})),
            call("mcp__fx__echo", json!({"text": "x"})),
            call("mcp__fx__read_note", json!({"path": "no-echo"})),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(starts(&marker), 2);
    let restart = lines_of(&lines, "event", "mcp_connect")[1];
    assert_eq!(restart["restart"], 1);
    assert!(
        !restart["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__fx__echo"))
    );
    assert!(
        restart["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u[0] == "mcp__fx__echo"),
        "{restart}"
    );
    let echoed = lines_of(&lines, "tool", "mcp__fx__echo")[0];
    assert_eq!(echoed["outcome"], "invalid", "{echoed}");
    let why = echoed["admission"]["reasons"][0].as_str().unwrap();
    assert!(why.contains("no longer does"), "{why}");
    let read = lines_of(&lines, "tool", "mcp__fx__read_note")[0];
    assert_eq!(read["outcome"], "succeeded", "{read}");
}

#[test]
fn a_crash_looping_server_is_restarted_at_most_three_times() {
    let w = World::new();
    let marker = w.fixture_server("normal");
    let crash = call("mcp__fx__crash", json!({}));
    let calls = vec![crash; 5];
    let mut calls = calls;
    calls.push(call("mcp__fx__echo", json!({"text": "x"})));
    let (code, stderr, lines) = common::run_script(&w, &restart_policy(), &calls);
    assert_eq!(code, 0, "{stderr}");
    // The first start and three restarts; the fifth crash call finds the limit.
    assert_eq!(starts(&marker), 1 + reasonix::agent::servers::MAX_RESTARTS);
    let connects = lines_of(&lines, "event", "mcp_connect");
    let restarts: Vec<&Value> = connects.iter().map(|c| &c["restart"]).collect();
    assert_eq!(restarts, [&json!(null), &json!(1), &json!(2), &json!(3)]);
    let outcomes: Vec<&str> = lines_of(&lines, "tool", "mcp__fx__crash")
        .iter()
        .map(|l| l["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["failed", "failed", "failed", "failed", "invalid"]
    );
    let last = lines_of(&lines, "tool", "mcp__fx__echo")[0];
    assert_eq!(last["outcome"], "invalid", "{last}");
    let why = last["admission"]["reasons"][0].as_str().unwrap();
    assert!(why.contains("at most 3 times per session"), "{why}");
}

/// Answers each ask from a list, in order, and keeps the tools it was asked about.
struct Scripted {
    answers: std::sync::Mutex<Vec<reasonix::agent::Answer>>,
    asked: std::sync::Mutex<Vec<String>>,
}

impl reasonix::agent::Approver for Scripted {
    fn ask(&self, admission: &reasonix::gate::Admission) -> reasonix::agent::Answer {
        self.asked
            .lock()
            .unwrap()
            .push(admission.tool.clone().unwrap_or_default());
        let mut answers = self.answers.lock().unwrap();
        if answers.is_empty() {
            reasonix::agent::Answer::Deny
        } else {
            answers.remove(0)
        }
    }
}

/// A session set up as `run` sets one up, interactive, with `approver` answering: the fixture's
/// connect asked and answered first, then `turns` (one call each) played.
fn session_run(w: &World, approver: Arc<Scripted>, calls: &[Value]) -> Vec<Value> {
    use reasonix::agent::{Answer, Approver};
    use reasonix::record::Approval;
    // The connect asks (a rule says so); the fixture's undeclared tools are allowed writers.
    let yaml = restart_policy().replace(
        "decision: allow\n    tools: [\"mcp_connect__fx\"]",
        "decision: ask\n    tools: [\"mcp_connect__fx\"]",
    );
    assert!(yaml.contains("decision: ask"));
    let policy = PolicySet::from_yaml("p.yaml", &yaml).unwrap();
    let gate = gate_over(
        Registry::with_builtins(),
        &policy,
        &w.ws,
        Posture::Interactive,
    );
    let configured = common::trusted_mcp_servers(&w.ws);
    let mut servers = Servers::new(configured, &gate).unwrap();
    let first = servers.connect("fx", &mut |a| {
        Some(match approver.ask(a) {
            Answer::Once => Approval::AllowOnce,
            Answer::Session => Approval::AllowSession,
            Answer::Deny => Approval::Deny,
        })
    });
    assert!(first.result.is_ok(), "{:?}", first.result.as_ref().err());
    let (registry, _) = servers.registry();
    let gate = Arc::new(gate.with_registry(registry).unwrap());
    let record = w.root.join("record.jsonl");
    let recorder = Arc::new(
        reasonix::record::Recorder::open(
            &record,
            reasonix::seal::Signing::Unsigned("a test".into()),
        )
        .unwrap(),
    );
    let turns = calls
        .iter()
        .map(|c| serde_json::from_value(json!({"tool_calls": [c]})).unwrap())
        .collect();
    let provider = Arc::new(reasonix::agent::script::ScriptProvider::new("test", turns));
    let mut session = reasonix::agent::Session::new(
        gate,
        provider,
        approver,
        recorder,
        reasonix::lease::Leases::new(),
        Arc::new(reasonix::agent::serve::Quiet),
        10,
        16 * 1024,
    )
    .servers(servers);
    // As `run` does: the servers connect first, then the session runs on a runtime.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(session.run("go"))
        .unwrap();
    common::jsonl(&record)
}

#[test]
fn a_restart_the_approver_refuses_starts_nothing_and_the_call_names_the_refusal() {
    use reasonix::agent::Answer;
    let w = World::new();
    let marker = w.fixture_server("normal");
    // The first connect approved, the restart denied.
    let approver = Arc::new(Scripted {
        answers: std::sync::Mutex::new(vec![Answer::Once, Answer::Deny]),
        asked: Default::default(),
    });
    let calls = [
        call("mcp__fx__crash", json!({})),
        call("mcp__fx__echo", json!({"text": "x"})),
        call("mcp__fx__echo", json!({"text": "y"})),
    ];
    let lines = session_run(&w, Arc::clone(&approver), &calls);
    // The restart was judged again and put to the approver; nothing else asked.
    assert_eq!(
        *approver.asked.lock().unwrap(),
        ["mcp_connect__fx", "mcp_connect__fx"]
    );
    assert_eq!(starts(&marker), 1, "a refused restart started a process");
    let connect = lines_of(&lines, "event", "mcp_connect");
    assert_eq!(connect.len(), 1, "{connect:?}");
    assert_eq!(connect[0]["restart"], 1);
    assert_eq!(connect[0]["admission"]["verdict"], "ask");
    assert_eq!(connect[0]["approval"], "deny");
    assert_eq!(connect[0]["outcome"], "blocked");
    let echoed = lines_of(&lines, "tool", "mcp__fx__echo");
    for e in &echoed {
        assert_eq!(e["outcome"], "invalid", "{e}");
        let why = e["admission"]["reasons"][0].as_str().unwrap();
        assert!(
            why.contains("mcp_connect__fx needs a person's approval, which it did not get"),
            "{why}"
        );
    }
    // Refused once, it is not asked again: the second echo did not ask.
    assert_eq!(echoed.len(), 2);
}

#[test]
fn a_restart_the_approver_allows_runs_the_call_on_a_new_process() {
    use reasonix::agent::Answer;
    let w = World::new();
    let marker = w.fixture_server("normal");
    let approver = Arc::new(Scripted {
        answers: std::sync::Mutex::new(vec![Answer::Once, Answer::Once]),
        asked: Default::default(),
    });
    let calls = [
        call("mcp__fx__crash", json!({})),
        call("mcp__fx__echo", json!({"text": "again"})),
    ];
    let lines = session_run(&w, Arc::clone(&approver), &calls);
    assert_eq!(approver.asked.lock().unwrap().len(), 2);
    assert_eq!(starts(&marker), 2);
    let connect = lines_of(&lines, "event", "mcp_connect");
    assert_eq!(
        (
            connect[0]["restart"].as_u64(),
            connect[0]["approval"].as_str()
        ),
        (Some(1), Some("allow_once")),
        "{}",
        connect[0]
    );
    let echoed = lines_of(&lines, "tool", "mcp__fx__echo");
    assert_eq!(echoed[0]["outcome"], "succeeded", "{}", echoed[0]);
}

#[test]
fn mcp_serve_restarts_a_dead_server_for_its_client_judging_the_connect_again() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let w = World::new();
    let marker = w.fixture_server("normal");
    let p = w.policy("p.yaml", &restart_policy());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
            .args(["mcp", "serve", "--policy", &p, "--workspace"])
            .arg(&w.ws)
            .env("HOME", &w.home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let client = ().serve((stdout, stdin)).await.unwrap();
        let crash = client
            .call_tool(CallToolRequestParams::new("mcp__fx__crash"))
            .await
            .unwrap();
        assert_eq!(crash.is_error, Some(true));
        let arguments = json!({"text": "served again"})
            .as_object()
            .cloned()
            .unwrap();
        let echo = client
            .call_tool(CallToolRequestParams::new("mcp__fx__echo").with_arguments(arguments))
            .await
            .unwrap();
        assert_ne!(echo.is_error, Some(true), "{echo:?}");
        assert!(
            serde_json::to_string(&echo.content)
                .unwrap()
                .contains("served again")
        );
        client.cancel().await.unwrap();
        let _ = child.wait().await;
    });
    assert_eq!(starts(&marker), 2);
    let lines = common::jsonl(&w.ws.join(".reasonix/record.jsonl"));
    let connects = lines_of(&lines, "event", "mcp_connect");
    let restarts: Vec<&Value> = connects.iter().map(|c| &c["restart"]).collect();
    assert_eq!(restarts, [&json!(null), &json!(1)]);
    assert_eq!(connects[1]["admission"]["rules"][0]["id"], "start-fx");
}

/// Issue 25: a stdio server started while a session plans (`run --plan`) runs read-only — it
/// cannot change the workspace, whatever its tools say of themselves — and once a plan is
/// approved it is restarted, writable, by its next call.
#[test]
fn a_server_started_in_plan_mode_runs_read_only_until_a_plan_is_approved() {
    let w = World::new();
    let yaml = policy().replace("  writer: ask", "  writer: allow");
    let yaml = &yaml[..yaml.find("mcp:").unwrap()];
    let (planning, mut servers) =
        connected_writing(&w, yaml, reasonix::sandbox::jail::Writes::None);
    let inside = w.ws.join("inside.txt");
    let write = json!({"path": inside, "content": "x"});
    let e = run(&planning, "mcp__fx__write_note", write.clone()).unwrap_err();
    assert!(e.contains("Read-only file system"), "{e}");
    assert!(!inside.exists(), "a server wrote while the session planned");
    // Approved: the server is due for a restart (not a death: it does not count), writable.
    servers.set_writes(reasonix::sandbox::jail::Writes::Direct);
    let why = servers.died("fx").expect("due for a restart");
    assert!(why.contains("plan is approved"), "{why}");
    assert!(servers.restart("fx", &mut |_| None).unwrap().result.is_ok());
    assert!(servers.died("fx").is_none());
    let (registry, _) = servers.registry();
    let approved = planning.with_registry(registry).unwrap();
    assert_eq!(
        run(&approved, "mcp__fx__write_note", write),
        Ok("written".into())
    );
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "x");
}
