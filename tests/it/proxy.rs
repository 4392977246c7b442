//! The capability proxy, `use_capability {capability, arguments}`: resolved to the tool it
//! reaches before validation, then judged as that tool — never as the proxy.

use crate::common;

use common::{World, reasons};
use reasonix::gate::Judgement;
use reasonix::{Call, PolicySet, Posture};
use serde_json::{Value, json};

/// Reads run, anything else is denied; and a rule that tries to allow the proxy by name.
const READS_ONLY: &str = r#"version: 1
defaults:
  read_only: allow
  writer: deny
rules:
  - id: proxy-is-fine
    decision: allow
    tools: [use_capability]
"#;

fn via(capability: &str, arguments: Value) -> Value {
    json!({"name": "use_capability", "arguments": {"capability": capability, "arguments": arguments}})
}

/// The parts of a verdict that must not depend on the way the call came.
fn judged(v: &Value) -> Value {
    json!({
        "verdict": v["verdict"], "stage": v["stage"], "rules": v["rules"],
        "effects": v["effects"], "paths": v["paths"], "read_only": v["read_only"],
        "bash": v["bash"], "tool": v["tool"],
    })
}

#[test]
fn a_writer_reached_through_the_proxy_under_a_reads_only_policy_is_blocked_like_the_direct_call() {
    let w = World::new();
    let p = w.policy("p.yaml", READS_ONLY);
    for (tool, args) in [
        ("write_file", json!({"path": "a.txt", "content": "x"})),
        ("delete_file", json!({"path": "a.txt"})),
        ("bash", json!({"command": "rm -rf build"})),
    ] {
        w.file("a.txt", "a");
        let (code, proxied) = w.check(&via(tool, args.clone()), &["--policy", &p]);
        let (_, direct) = w.check(&json!({"name": tool, "arguments": args}), &["--policy", &p]);
        assert_eq!(
            (code, proxied["verdict"].as_str()),
            (20, Some("deny")),
            "{proxied}"
        );
        assert_eq!(judged(&proxied), judged(&direct), "{tool}");
        assert_eq!(proxied["via"], "use_capability");
        assert_eq!(direct["via"], json!(null));
        // The rule naming the proxy did not vote: it matches no call.
        assert!(
            !proxied["rules"].to_string().contains("proxy-is-fine"),
            "{proxied}"
        );
    }
}

#[test]
fn a_read_through_the_proxy_gets_the_direct_calls_verdict_and_paths() {
    let w = World::new();
    w.file("notes.md", "n");
    w.file(".env", "K=1");
    for (args, verdict) in [
        (json!({"path": "notes.md"}), "allow"),
        (json!({"path": ".env"}), "deny"),
        (json!({"path": "../outside/x"}), "deny"),
    ] {
        let (_, proxied) = w.check(&via("read_file", args.clone()), &[]);
        let (_, direct) = w.check(&json!({"name": "read_file", "arguments": args}), &[]);
        assert_eq!(proxied["verdict"], verdict, "{proxied}");
        assert_eq!(judged(&proxied), judged(&direct));
    }
}

#[test]
fn the_policy_input_names_the_target_and_the_proxy_it_came_through() {
    let w = World::new();
    let (_, v) = w.check(
        &via("write_file", json!({"path": "a", "content": "x"})),
        &["--explain"],
    );
    let input = &v["input"];
    assert_eq!(input["tool"], "write_file");
    assert_eq!(input["arguments"], json!({"path": "a", "content": "x"}));
    assert_eq!(input["target"]["tool"], "write_file");
    assert_eq!(input["target"]["via"], "use_capability");
    assert_eq!(input["target"]["source"], "builtin");
    assert_eq!(input["target"]["read_only"], false);
}

#[test]
fn the_targets_schema_is_enforced_and_a_bash_command_is_analysed() {
    let w = World::new();
    let (code, v) = w.check(&via("write_file", json!({"path": "a"})), &[]);
    assert_eq!(code, 30);
    assert!(
        reasons(&v).contains("the arguments of write_file do not match"),
        "{v}"
    );
    let (_, v) = w.check(&via("bash", json!({"command": "cat a > b"})), &[]);
    assert_eq!(v["bash"]["redirects"][0]["target"], "b", "{v}");
}

#[test]
fn an_unknown_capability_is_invalid_and_lists_what_exists() {
    let w = World::new();
    let (code, v) = w.check(&via("format_disk", json!({})), &[]);
    assert_eq!(code, 30);
    let why = reasons(&v);
    assert!(why.contains("unknown capability \"format_disk\""), "{why}");
    assert!(why.contains("read_file") && why.contains("bash"), "{why}");
    assert!(!why.contains("capabilities are: use_capability"), "{why}");
}

#[test]
fn the_proxy_cannot_reach_itself_a_connect_call_or_take_other_arguments() {
    let w = World::new();
    for bad in [
        via(
            "use_capability",
            via("read_file", json!({"path": "a"}))["arguments"].clone(),
        ),
        via("mcp_connect__files", json!({"command": "sh", "args": []})),
        json!({"name": "use_capability", "arguments": {"capability": "read_file"}}),
        json!({"name": "use_capability", "arguments": {"capability": "read_file", "arguments": {"path": "a"}, "why": 1}}),
        json!({"name": "use_capability", "arguments": {"capability": 5, "arguments": {}}}),
        json!({"name": "use_capability", "arguments": "not json"}),
    ] {
        let (code, v) = w.check(&bad, &[]);
        assert_eq!(code, 30, "{bad}: {v}");
        assert_eq!(v["stage"], "validate");
    }
}

#[test]
fn an_admitted_proxy_call_runs_its_target() {
    let w = World::new();
    w.file("notes.md", "hello");
    let policy = PolicySet::embedded_default();
    let gate = w.gate(&policy, Posture::Unattended);
    let call = Call::new(
        "use_capability",
        json!({"capability": "read_file", "arguments": {"path": "notes.md"}}),
    );
    let Judgement::Allowed(a) = gate.admit(&call) else {
        panic!("a read through the proxy is allowed like a direct one");
    };
    let out = common::execute(a).unwrap();
    assert!(out.text.contains("hello"), "{}", out.text);
}
