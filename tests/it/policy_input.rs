//! The policy input document matches its published JSON Schema (docs/policy-input.schema.json)
//! for a call of every builtin tool, for bash scripts of every shape, and for an extension tool.

use crate::common;

use std::sync::Arc;

use common::World;
use reasonix::tool::{
    Arguments, Classification, ClassifyError, Invocation, Output, PathRequest, PathRole, ToolError,
};
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry, Tool};
use serde_json::{Value, json};

fn schema() -> jsonschema::Validator {
    let text = include_str!("../../docs/policy-input.schema.json");
    let schema: Value = serde_json::from_str(text).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema is valid draft 2020-12")
}

/// The input document of one call through an explaining gate, checked against the schema.
fn checked_input(gate: &Gate, call: &Value, validator: &jsonschema::Validator) -> Value {
    let admission = gate.admit_text(&call.to_string()).into_admission();
    let input = serde_json::to_value(
        admission
            .input
            .as_ref()
            .expect("explaining gates attach the input"),
    )
    .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&input)
        .map(|e| format!("{}: {e}", e.instance_path().as_str()))
        .collect();
    assert!(
        errors.is_empty(),
        "{call}\n{}\n{input:#}",
        errors.join("\n")
    );
    input
}

#[test]
fn every_input_document_matches_the_schema() {
    let w = World::new();
    w.file("src/a.rs", "fn main() {}\n");
    w.link("link", "src");
    let policy = PolicySet::embedded_default();
    let gate = Gate::builder(Registry::with_builtins(), &policy, &w.ws)
        .posture(Posture::Unattended)
        .explain(true)
        .host_files(HostFiles::for_workspace(&w.ws))
        .build()
        .unwrap();
    let calls = [
        json!({"name":"read_file","arguments":{"path":"src/a.rs","offset":1,"limit":5}}),
        json!({"name":"write_file","arguments":{"path":"link/new.rs","content":"x"}}),
        json!({"name":"edit_file","arguments":{"path":"src/a.rs","old_string":"main","new_string":"start","replace_all":true}}),
        json!({"name":"move_file","arguments":{"source_path":"src/a.rs","destination_path":"../out.rs"}}),
        json!({"name":"delete_file","arguments":{"path":"src/a.rs"}}),
        json!({"name":"list_dir","arguments":{"path":"."}}),
        json!({"name":"glob","arguments":{"pattern":"**/*.rs","path":"src"}}),
        json!({"name":"grep","arguments":{"pattern":"main","path":"src","glob":"*.rs"}}),
        json!({"name":"bash","arguments":{"command":"git status && git diff --stat | head -20"}}),
        json!({"name":"bash","arguments":{"command":"FOO=1 timeout 5 cat \"$F\" < in.txt > out.txt 2>&1 &"}}),
        json!({"name":"bash","arguments":{"command":"for f in src/*.rs; do wc -l \"$f\"; done; bash -c 'rm -rf x'"}}),
        json!({"name":"bash","arguments":{"command":"python3 -c 'x' <<EOF\nhi\nEOF"}}),
        json!({"name":"bash","arguments":{"command":"$CMD {rm,-rf,/}"}}),
        json!({"name":"bash","arguments":{"command":"cat < /dev/tcp/h/80 | xargs rm; find . -exec cat {} +"}}),
    ];
    let validator = schema();
    for call in calls {
        let input = checked_input(&gate, &call, &validator);
        assert_eq!(input["tool"], call["name"]);
        assert_eq!(input["target"]["source"], "builtin");
        assert_eq!(input["session"]["posture"], "unattended");
        assert_eq!(input["bash"].is_null(), call["name"] != "bash");
    }
}

/// A tool an embedder adds with `Registry::add`.
struct Notes;

impl Tool for Notes {
    fn name(&self) -> &str {
        "read_notes"
    }
    fn description(&self) -> &str {
        "reads a note"
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let path = args.required_str("path")?;
        Ok(Classification::reads(vec![PathRequest::read(
            path,
            PathRole::Target,
        )]))
    }
    fn execute(&self, _: &Invocation) -> Result<Output, ToolError> {
        Ok(Output::text(""))
    }
}

#[test]
fn an_extension_tool_says_extension_and_matches_the_schema() {
    let w = World::new();
    w.file("notes.md", "hello\n");
    let mut registry = Registry::with_builtins();
    registry.add(Arc::new(Notes)).unwrap();
    let policy = PolicySet::embedded_default();
    let gate = Gate::builder(registry, &policy, &w.ws)
        .explain(true)
        .host_files(HostFiles::for_workspace(&w.ws))
        .build()
        .unwrap();
    let validator = schema();
    let input = checked_input(
        &gate,
        &json!({"name": "read_notes", "arguments": {"path": "notes.md"}}),
        &validator,
    );
    assert_eq!(input["target"]["source"], "extension");
    assert_eq!(input["target"]["tool"], "read_notes");
    let builtin = checked_input(
        &gate,
        &json!({"name": "read_file", "arguments": {"path": "notes.md"}}),
        &validator,
    );
    assert_eq!(builtin["target"]["source"], "builtin");
}

#[test]
fn fields_no_stage_fills_are_not_offered() {
    let w = World::new();
    let policy = PolicySet::embedded_default();
    let gate = Gate::builder(Registry::with_builtins(), &policy, &w.ws)
        .explain(true)
        .host_files(HostFiles::for_workspace(&w.ws))
        .build()
        .unwrap();
    let input = checked_input(
        &gate,
        &json!({"name": "list_dir", "arguments": {"path": "."}}),
        &schema(),
    );
    assert_eq!(input["target"]["via"], json!(null), "{input:#}");
    // `session.mode` is filled since plan mode exists (issue 14): `normal` unless built in plan
    // mode, and nothing else.
    assert_eq!(input["session"]["mode"], "normal", "{input:#}");
    let mut forged = input.clone();
    forged["target"]["source"] = json!("plugin");
    assert!(!schema().is_valid(&forged), "no such source");
    let mut forged = input.clone();
    forged["session"]["mode"] = json!("act");
    assert!(!schema().is_valid(&forged), "a mode is normal or plan");
}

#[test]
fn the_schema_refuses_what_is_not_an_input() {
    let validator = schema();
    for bad in [
        json!({}),
        json!({"tool": 5}),
        json!({"tool":"x","arguments":{},"target":{},"effects":["teleport"],"paths":[],"bash":null,"session":{}}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}

#[test]
fn check_explain_prints_the_input_document() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap();
    let call = r#"{"name":"read_file","arguments":{"path":"a.txt"}}"#;
    let (code, stdout, _) = w.run(
        &[
            "check",
            "--explain",
            "--format",
            "json",
            "--workspace",
            ws,
            call,
        ],
        "",
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["input"]["paths"][0]["path"], format!("{ws}/a.txt"));
    let (_, text, _) = w.run(&["check", "--explain", "--workspace", ws, call], "");
    assert!(
        text.contains("  input\n") && text.contains("\"session\""),
        "{text}"
    );
    let (_, plain, _) = w.run(&["check", "--format", "json", "--workspace", ws, call], "");
    let plain: Value = serde_json::from_str(plain.trim()).unwrap();
    assert!(
        plain["input"].is_null(),
        "without --explain the input field is null: {plain}"
    );
}
