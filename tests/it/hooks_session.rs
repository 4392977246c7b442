//! Hooks in a live run (the agent loop, a scripted model): a post-tool hook sees the ended call
//! and adds a note to the model's tool message, but changes no outcome, and one that fails is
//! recorded and changes nothing; a pre-tool hook's replacement leaves both argument digests in
//! the record. Hooks run in the jail (the policy's `enforce`), with the system's Python.

use crate::common;

use std::sync::Arc;

use common::{ALLOW_ALL, World};
use reasonix::agent::script::{ScriptProvider, Turn};
use reasonix::agent::{Always, Answer, End, Message, Session, Terminal};
use reasonix::hooks::{Hooks, HooksSpec};
use reasonix::lease::Leases;
use reasonix::record::{CallRecord, Recorder, sha256};
use reasonix::{Admission, Posture};
use serde_json::{Value, json};

/// Shows nothing.
struct Quiet;

impl Terminal for Quiet {
    fn text(&self, _delta: &str) {}
    fn call(&self, _admission: &Admission, _record: &CallRecord) {}
}

/// The system's Python, which the jail lets a hook read and run.
const PYTHON: &str = "/usr/bin/python3";

/// Writes `<ws>/hooks/NAME.py`: reads the request into `req`, then `body`.
fn hook(w: &World, name: &str, body: &str) {
    w.file(
        &format!("hooks/{name}.py"),
        &format!("import json, sys\nreq = json.load(sys.stdin)\n{body}\n"),
    );
}

/// Runs the scripted `turns` with `hooks` (YAML) over the world, unattended and allowing all;
/// returns the record's call lines and the tool messages the model was told.
async fn run(w: &World, hooks: &str, turns: Value) -> (Vec<Value>, Vec<String>) {
    let record = w.root.join("record.jsonl");
    let recorder = Arc::new(
        Recorder::open(&record, reasonix::seal::Signing::Unsigned("a test".into())).unwrap(),
    );
    let policy = reasonix::PolicySet::from_yaml("test.yaml", ALLOW_ALL).unwrap();
    let gate = Arc::new(w.gate(&policy, Posture::Unattended));
    let turns: Vec<Turn> = serde_json::from_value(turns).unwrap();
    let spec: HooksSpec = yaml_serde::from_str(hooks).unwrap();
    let mut session = Session::new(
        gate,
        Arc::new(ScriptProvider::new("test", turns)),
        Arc::new(Always(Answer::Deny)),
        recorder,
        Leases::new(),
        Arc::new(Quiet),
        10,
        16 * 1024,
    )
    .hooks(Arc::new(Hooks::new(&spec).unwrap()));
    assert_eq!(session.run("go").await.unwrap(), End::Finished);
    let told = session
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    let calls = common::jsonl(&record)
        .into_iter()
        .filter(|l| l.get("call_id").is_some() && l.get("event").is_none())
        .collect();
    (calls, told)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_note_reaches_the_model_and_changes_no_outcome_and_a_failing_one_is_recorded() {
    let w = World::new();
    w.file("a.txt", "alpha");
    // The note says what the hook saw: the tool, the outcome and the result.
    hook(
        &w,
        "note",
        "print(json.dumps({'note': 'saw %s %s %s' % (req['call']['name'], req['outcome'], req['result'])}))",
    );
    hook(&w, "broken", "sys.exit(3)");
    let hooks = format!(
        "post_tool:\n  - tools: [read_file]\n    command: [{PYTHON}, hooks/note.py]\n  - tools: ['*']\n    command: [{PYTHON}, hooks/broken.py]\n"
    );
    let (calls, told) = run(
        &w,
        &hooks,
        json!([
            {"tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "read_file", "arguments": {"path": "../outside/nope"}}
            ]},
            {"text": "done"}
        ]),
    )
    .await;
    assert_eq!(calls[0]["outcome"], "succeeded");
    assert_eq!(calls[1]["outcome"], "blocked", "a hook cannot change it");
    // The note follows the result, marked as the hook's.
    assert!(told[0].contains("alpha"), "{}", told[0]);
    assert!(
        told[0].contains("[note from hooks.post_tool[0]: saw read_file succeeded")
            && told[0].contains("alpha]"),
        "{}",
        told[0]
    );
    assert!(told[1].starts_with("blocked by the host"), "{}", told[1]);
    assert!(told[1].contains("saw read_file blocked"), "{}", told[1]);
    // The record: both hooks, the note and the failure; the result digest is the result's.
    let post = &calls[0]["post_tool"];
    assert_eq!(post[0]["hook"], "hooks.post_tool[0]");
    assert!(
        post[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("saw read_file")
    );
    assert_eq!(post[1]["hook"], "hooks.post_tool[1]");
    assert!(
        post[1]["failure"]
            .as_str()
            .unwrap()
            .contains("exited with status 3"),
        "{post}"
    );
    assert!(post[1].get("note").is_none());
    assert!(
        !told[0].contains("post_tool[1]"),
        "a failed hook adds nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_call_records_both_argument_digests() {
    let w = World::new();
    w.file("a.txt", "alpha");
    w.file("b.txt", "bravo");
    hook(
        &w,
        "swap",
        // The replaced call meets the hook again: it replaces only the original.
        concat!(
            "swap = req['call']['arguments'] == {'path': 'a.txt'}\n",
            "print(json.dumps({'decision': 'continue', 'arguments': {'path': 'b.txt'}} if swap else {'decision': 'continue'}))"
        ),
    );
    let hooks =
        format!("pre_tool:\n  - tools: [read_file]\n    command: [{PYTHON}, hooks/swap.py]\n");
    let (calls, told) = run(
        &w,
        &hooks,
        json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"text": "done"}
        ]),
    )
    .await;
    let c = &calls[0];
    assert_eq!(c["outcome"], "succeeded", "{c}");
    assert!(
        told[0].contains("bravo"),
        "the replacement ran: {}",
        told[0]
    );
    // The model's arguments keep their digest; the replacement's is beside it.
    let proposed = c["arguments"].as_str().unwrap();
    assert!(proposed.contains("a.txt"), "{c}");
    assert_eq!(c["arguments_sha256"], sha256(proposed.as_bytes()));
    assert_eq!(
        c["replaced_arguments_sha256"],
        sha256(json!({"path": "b.txt"}).to_string().as_bytes()),
        "{c}"
    );
    assert_ne!(c["arguments_sha256"], c["replaced_arguments_sha256"]);
    assert!(
        c["admission"]["reasons"]
            .to_string()
            .contains("replaced the call's arguments"),
        "{c}"
    );
}
