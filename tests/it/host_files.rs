//! The host's own files — the record and `.reasonix/`, `reasonix.yaml`, the policies in force —
//! are refused to every call that would change them, their folders or the folders that hold
//! them, and `reasonix check` answers exactly what `reasonix run` does on each case: both build
//! their gate through the same function.

use crate::common;

use common::World;
use serde_json::{Value, json};

/// Every fallback allows, so only the host-file protection refuses.
const ALLOW_ALL: &str =
    "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n  unattended: allow\n";

/// A workspace with settings, a policy folder inside it and a policy file deeper down.
fn world() -> World {
    let w = World::new();
    w.file("reasonix.yaml", "max_steps: 3\n");
    w.file("policies/allow.yaml", ALLOW_ALL);
    w.file("conf/rules/extra.yaml", "version: 1\n");
    w.file("src/main.rs", "fn main() {}\n");
    w.file(".reasonix/record.jsonl", "");
    w
}

/// `(call, verdict)`: what both entry points must answer.
fn cases() -> Vec<(Value, &'static str)> {
    let bash = |c: &str| json!({"name": "bash", "arguments": {"command": c}});
    vec![
        // The host's files themselves.
        (
            json!({"name": "write_file", "arguments": {"path": "reasonix.yaml", "content": "max_steps: 99\n"}}),
            "deny",
        ),
        (
            json!({"name": "edit_file", "arguments": {"path": "policies/allow.yaml", "old_string": "allow", "new_string": "deny"}}),
            "deny",
        ),
        (
            json!({"name": "delete_file", "arguments": {"path": ".reasonix/record.jsonl"}}),
            "deny",
        ),
        (
            json!({"name": "write_file", "arguments": {"path": "conf/rules/extra.yaml", "content": "x"}}),
            "deny",
        ),
        // Below a host folder.
        (
            json!({"name": "write_file", "arguments": {"path": "policies/new.yaml", "content": "x"}}),
            "deny",
        ),
        (
            json!({"name": "write_file", "arguments": {"path": ".reasonix/forged.jsonl", "content": "x"}}),
            "deny",
        ),
        (
            json!({"name": "move_file", "arguments": {"source_path": "src/main.rs", "destination_path": ".reasonix/x"}}),
            "deny",
        ),
        // The folders that hold them: moved away, to write a new policy and move it back.
        (
            json!({"name": "move_file", "arguments": {"source_path": "policies", "destination_path": "old"}}),
            "deny",
        ),
        (
            json!({"name": "move_file", "arguments": {"source_path": "conf", "destination_path": "conf2"}}),
            "deny",
        ),
        (
            json!({"name": "move_file", "arguments": {"source_path": "conf/rules", "destination_path": "rules"}}),
            "deny",
        ),
        (
            json!({"name": "move_file", "arguments": {"source_path": ".reasonix", "destination_path": "r"}}),
            "deny",
        ),
        // Shell commands that may change things and name them.
        (bash("rm -rf .reasonix"), "deny"),
        (bash("mv conf conf2"), "deny"),
        (bash("echo '{}' > .reasonix/record.jsonl"), "deny"),
        (bash("sed -i s/allow/deny/ policies/allow.yaml"), "deny"),
        (bash("cp /dev/null reasonix.yaml"), "deny"),
        (bash("cd conf && rm -r rules"), "deny"),
        // What stays allowed: reading them, and everything else.
        (
            json!({"name": "read_file", "arguments": {"path": "reasonix.yaml"}}),
            "allow",
        ),
        (
            json!({"name": "list_dir", "arguments": {"path": "policies"}}),
            "allow",
        ),
        (bash("cat policies/allow.yaml"), "allow"),
        (
            json!({"name": "write_file", "arguments": {"path": "src/lib.rs", "content": "x"}}),
            "allow",
        ),
        (
            json!({"name": "write_file", "arguments": {"path": "reasonix.yaml.bak", "content": "x"}}),
            "allow",
        ),
        (
            json!({"name": "move_file", "arguments": {"source_path": "src/main.rs", "destination_path": "src/bin.rs"}}),
            "allow",
        ),
        (bash("touch src/new.rs"), "allow"),
    ]
}

fn policies(w: &World) -> [String; 4] {
    [
        "--policy".into(),
        w.ws.join("policies").display().to_string(),
        "--policy".into(),
        w.ws.join("conf/rules/extra.yaml").display().to_string(),
    ]
}

#[test]
fn check_refuses_every_change_to_the_hosts_files_and_allows_the_rest() {
    let w = world();
    let p = policies(&w);
    let extra: Vec<&str> = p.iter().map(String::as_str).collect();
    for (call, want) in cases() {
        let (_, verdict) = w.check(&call, &extra);
        assert_eq!(
            verdict["verdict"],
            want,
            "{call}: {}",
            common::reasons(&verdict)
        );
        if want == "deny" {
            assert_eq!(verdict["stage"], "sandbox", "{call}");
            let why = common::reasons(&verdict);
            assert!(why.contains("host's own file"), "{call}: {why}");
        }
    }
}

#[test]
fn check_and_run_agree_on_every_host_file_case() {
    let cases = cases();
    // The dry run, on the workspace as it is.
    let w = world();
    let p = policies(&w);
    let extra: Vec<&str> = p.iter().map(String::as_str).collect();
    let checked: Vec<String> = cases
        .iter()
        .map(|(call, _)| {
            w.check(call, &extra).1["verdict"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();

    // The live run: one answer proposing every call, so all are judged on the same workspace.
    let calls: Vec<Value> = cases.iter().map(|(c, _)| c.clone()).collect();
    let script = w.root.join("script.json");
    std::fs::write(
        &script,
        json!([{"tool_calls": calls}, {"text": "done"}]).to_string(),
    )
    .unwrap();
    let script = format!("script:{}", script.display());
    let ws = w.ws.display().to_string();
    let mut args = vec![
        "run",
        "--provider",
        &script,
        "--workspace",
        &ws,
        "--unattended",
    ];
    args.extend_from_slice(&extra);
    args.push("touch everything");
    let (code, _, stderr) = w.run(&args, "");
    assert_eq!(code, 0, "{stderr}");
    let record = common::jsonl(&w.ws.join(".reasonix/record.jsonl"));
    // The record keeps the calls of one answer in the order they were proposed.
    let ran: Vec<&str> = record
        .iter()
        .filter(|l| l.get("call_id").is_some())
        .map(|l| l["admission"]["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(ran.len(), cases.len());
    for (((call, _), checked), ran) in cases.iter().zip(&checked).zip(ran) {
        assert_eq!(ran, checked, "{call}: check and run disagree");
    }
    // And the host's files are as they were.
    assert_eq!(
        std::fs::read_to_string(w.ws.join("policies/allow.yaml")).unwrap(),
        ALLOW_ALL
    );
    assert!(w.ws.join("conf/rules/extra.yaml").exists());
    assert!(!w.ws.join("policies/new.yaml").exists());
}
