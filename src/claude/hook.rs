//! Claude Code's `PreToolUse` hook: the JSON it sends on stdin, each of its tools mapped to
//! Reasonix calls ([`TOOLS`]), and the answer it reads back.
//!
//! A Claude tool call becomes one Reasonix call, or several (`MultiEdit`: one `edit_file` per
//! edit), in the workspace `cwd`; each is judged by the gate and the answer is the strictest of
//! their verdicts: any deny denies, else any ask asks, else allow. A call the mapping makes that
//! its tool refuses (`invalid`: an edit that changes nothing) is a deny with the reason. A tool
//! with no row here — `Task`, `WebSearch`, `TodoWrite`, one a later Claude Code adds — is never
//! allowed: the answer is `ask`, saying that Reasonix cannot judge it.
//!
//! Fields of a tool's input that a row does not name are left out of the call: they only shape
//! what the tool prints (`Grep`'s `-n`, `output_mode`, `head_limit`), how long it may run in the
//! background (`Bash`'s `run_in_background`), or are the model's own words (`WebFetch`'s
//! `prompt`), none of which widens what it touches.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::tools::NETWORK_CONNECT;
use crate::call::Call;
use crate::gate::{Admission, Verdict};

/// What Claude Code sends a `PreToolUse` hook on stdin (its hooks reference); fields it may add
/// later are ignored.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct HookInput {
    /// The session.
    #[serde(default)]
    pub session_id: String,
    /// The transcript's path.
    #[serde(default)]
    pub transcript_path: Option<String>,
    /// The folder Claude Code works in: the workspace.
    pub cwd: String,
    /// `PreToolUse`.
    pub hook_event_name: String,
    /// Claude's tool name (`Bash`, `Read`, `mcp__server__tool`, …).
    pub tool_name: String,
    /// Its input, as Claude's tool takes it.
    #[serde(default)]
    pub tool_input: Value,
    /// The id of this tool use.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// Claude's permission mode (`default`, `plan`, `acceptEdits`, `dontAsk`,
    /// `bypassPermissions`): recorded, not used to judge.
    #[serde(default)]
    pub permission_mode: Option<String>,
}

/// How a Claude tool's input becomes a Reasonix call.
#[derive(Clone, Copy, Debug)]
pub enum How {
    /// One call of the tool, each `(Claude field, Reasonix argument)` copied when present.
    Fields(&'static [(&'static str, &'static str)]),
    /// `MultiEdit {file_path, edits: [{old_string, new_string, replace_all?}]}`: one
    /// `edit_file` per edit.
    EachEdit,
    /// `NotebookEdit {notebook_path, new_source?}`: a write of the notebook.
    Notebook,
    /// `WebFetch {url}`: a connection to the URL's host.
    Fetch,
}

/// Claude Code's tools and the Reasonix tool each is judged as. `every_row_maps_its_example`
/// tests each row with input shaped as Claude's hooks reference documents it.
pub const TOOLS: &[(&str, &str, How)] = &[
    (
        "Bash",
        "bash",
        How::Fields(&[
            ("command", "command"),
            ("timeout", "timeout_ms"),
            ("description", "description"),
        ]),
    ),
    (
        "Read",
        "read_file",
        How::Fields(&[
            ("file_path", "path"),
            ("offset", "offset"),
            ("limit", "limit"),
        ]),
    ),
    (
        "Write",
        "write_file",
        How::Fields(&[("file_path", "path"), ("content", "content")]),
    ),
    (
        "Edit",
        "edit_file",
        How::Fields(&[
            ("file_path", "path"),
            ("old_string", "old_string"),
            ("new_string", "new_string"),
            ("replace_all", "replace_all"),
        ]),
    ),
    ("MultiEdit", "edit_file", How::EachEdit),
    (
        "Glob",
        "glob",
        How::Fields(&[("pattern", "pattern"), ("path", "path")]),
    ),
    (
        "Grep",
        "grep",
        How::Fields(&[("pattern", "pattern"), ("path", "path"), ("glob", "glob")]),
    ),
    ("LS", "list_dir", How::Fields(&[("path", "path")])),
    ("NotebookEdit", "write_file", How::Notebook),
    ("WebFetch", NETWORK_CONNECT, How::Fetch),
];

/// A Claude tool call, as Reasonix calls; or why it cannot be judged.
#[derive(Debug)]
pub enum Mapped {
    /// The calls to judge (at least one).
    Calls(Vec<Call>),
    /// Reasonix cannot judge this tool, or this input of it: the answer is `ask`.
    Unmapped(String),
}

/// Maps Claude's `tool_name` and `tool_input` to Reasonix calls.
pub fn map(tool_name: &str, input: &Value) -> Mapped {
    if tool_name.starts_with("mcp__") {
        return match input {
            Value::Object(_) => Mapped::Calls(vec![Call::new(tool_name, input.clone())]),
            _ => Mapped::Unmapped(format!(
                "the input of {tool_name} is not a JSON object; Reasonix judges an MCP call by its arguments object"
            )),
        };
    }
    let Some((_, tool, how)) = TOOLS.iter().find(|(claude, _, _)| *claude == tool_name) else {
        return Mapped::Unmapped(format!(
            "Reasonix has no mapping for Claude Code's tool {tool_name:?}, so it cannot judge it; a person decides"
        ));
    };
    let Some(fields) = input.as_object() else {
        return Mapped::Unmapped(format!(
            "the input of {tool_name} is not a JSON object; Reasonix cannot judge it"
        ));
    };
    match how {
        How::Fields(pairs) => Mapped::Calls(vec![Call::new(*tool, copied(fields, pairs))]),
        How::EachEdit => {
            let Some(edits) = fields.get("edits").and_then(Value::as_array) else {
                return Mapped::Unmapped("MultiEdit without an `edits` list".into());
            };
            if edits.is_empty() {
                return Mapped::Unmapped("MultiEdit with no edit".into());
            }
            let path = fields.get("file_path").cloned().unwrap_or(Value::Null);
            let mut calls = Vec::with_capacity(edits.len());
            for edit in edits {
                let Some(edit) = edit.as_object() else {
                    return Mapped::Unmapped("a MultiEdit edit is not a JSON object".into());
                };
                let mut args = copied_map(
                    edit,
                    &[
                        ("old_string", "old_string"),
                        ("new_string", "new_string"),
                        ("replace_all", "replace_all"),
                    ],
                );
                args.insert("path".into(), path.clone());
                calls.push(Call::new(*tool, Value::Object(args)));
            }
            Mapped::Calls(calls)
        }
        How::Notebook => {
            let path = fields.get("notebook_path").cloned().unwrap_or(Value::Null);
            let content = fields
                .get("new_source")
                .filter(|v| v.is_string())
                .cloned()
                .unwrap_or_else(|| json!(""));
            Mapped::Calls(vec![Call::new(
                *tool,
                json!({"path": path, "content": content}),
            )])
        }
        How::Fetch => {
            let Some(url) = fields.get("url").and_then(Value::as_str) else {
                return Mapped::Unmapped("WebFetch without a `url`".into());
            };
            match reqwest::Url::parse(url) {
                Ok(parsed) => match (parsed.host_str(), parsed.port_or_known_default()) {
                    // The egress proxy's call: host and port, as a connection would ask.
                    (Some(host), Some(port)) => Mapped::Calls(vec![Call::new(
                        *tool,
                        json!({"host": host.trim_matches(['[', ']']).to_ascii_lowercase(), "port": port}),
                    )]),
                    (None, _) => Mapped::Unmapped(format!("the URL {url:?} names no host")),
                    (Some(_), None) => Mapped::Unmapped(format!(
                        "the URL {url:?} names no port, and its scheme has none"
                    )),
                },
                Err(e) => Mapped::Unmapped(format!("the URL {url:?} does not parse: {e}")),
            }
        }
    }
}

/// The fields of `input` the pairs name, under their Reasonix names. A `null` is left out, and
/// so is a line offset or limit below 1 (Reasonix counts lines from 1).
fn copied(input: &Map<String, Value>, pairs: &[(&str, &str)]) -> Value {
    Value::Object(copied_map(input, pairs))
}

fn copied_map(input: &Map<String, Value>, pairs: &[(&str, &str)]) -> Map<String, Value> {
    let mut out = Map::new();
    for (from, to) in pairs {
        let Some(v) = input.get(*from).filter(|v| !v.is_null()) else {
            continue;
        };
        if matches!(*to, "offset" | "limit") && v.as_u64().is_some_and(|n| n < 1) {
            continue;
        }
        out.insert((*to).to_owned(), v.clone());
    }
    out
}

/// The permission decision Claude Code reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    /// Claude runs the tool without asking.
    Allow,
    /// Claude asks its user.
    Ask,
    /// Claude does not run the tool and tells the model why.
    Deny,
}

/// The hook's answer: `{"hookSpecificOutput": {...}}`.
#[derive(Clone, Debug, Serialize)]
pub struct HookOutput {
    /// What Claude Code reads.
    #[serde(rename = "hookSpecificOutput")]
    pub specific: Specific,
}

/// The `PreToolUse` part of the answer.
#[derive(Clone, Debug, Serialize)]
pub struct Specific {
    /// `PreToolUse`.
    #[serde(rename = "hookEventName")]
    pub event: &'static str,
    /// allow, ask or deny.
    #[serde(rename = "permissionDecision")]
    pub decision: Permission,
    /// Why: shown to the user, and to the model on a deny.
    #[serde(rename = "permissionDecisionReason")]
    pub reason: String,
    /// The tool's input, rewritten (`reasonix hook claude --jail`: a Bash command made to run
    /// inside Reasonix's jail, issue 25); Claude runs this instead of what the model proposed.
    #[serde(rename = "updatedInput", skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
}

impl HookOutput {
    /// The answer for a decision and its reason.
    pub fn new(decision: Permission, reason: String) -> HookOutput {
        HookOutput {
            specific: Specific {
                event: "PreToolUse",
                decision,
                reason,
                updated_input: None,
            },
        }
    }
}

/// The answer for the admissions of a tool call's calls: the strictest verdict, with the
/// deciding reasons of the calls that gave it. An `invalid` call is a deny.
pub fn answer(admissions: &[Admission]) -> HookOutput {
    let permission = |v: Verdict| match v {
        Verdict::Allow => Permission::Allow,
        Verdict::Ask => Permission::Ask,
        Verdict::Deny | Verdict::Invalid => Permission::Deny,
    };
    let rank = |p: Permission| match p {
        Permission::Allow => 0,
        Permission::Ask => 1,
        Permission::Deny => 2,
    };
    let decision = admissions
        .iter()
        .map(|a| permission(a.verdict))
        .max_by_key(|p| rank(*p))
        .unwrap_or(Permission::Ask);
    let mut reasons = Vec::new();
    for a in admissions
        .iter()
        .filter(|a| permission(a.verdict) == decision)
    {
        let what = match a.verdict {
            Verdict::Invalid => "the call as mapped is invalid".to_owned(),
            v => format!("{v} at stage {}", a.stage.as_str()),
        };
        let why = a.reasons.first().map(String::as_str).unwrap_or("");
        // The deciding rules, unless the reason already names them.
        let rules: Vec<&str> = a
            .rules
            .iter()
            .filter(|r| r.decisive && !why.contains(r.id.as_str()))
            .map(|r| r.id.as_str())
            .collect();
        let rules = if rules.is_empty() {
            String::new()
        } else {
            format!(" [rule {}]", rules.join(", "))
        };
        let tool = a.tool.as_deref().unwrap_or("?");
        let line = format!("reasonix: {tool}: {what}: {why}{rules}");
        if !reasons.contains(&line) {
            reasons.push(line);
        }
    }
    if reasons.is_empty() {
        reasons.push("reasonix: nothing was judged".into());
    }
    HookOutput::new(decision, reasons.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(tool: &str, input: Value) -> Vec<Value> {
        match map(tool, &input) {
            Mapped::Calls(c) => c
                .into_iter()
                .map(|c| json!({"name": c.name, "arguments": c.parse_arguments().unwrap()}))
                .collect(),
            Mapped::Unmapped(why) => panic!("{tool} unmapped: {why}"),
        }
    }

    /// Each row of [`TOOLS`], with input as Claude's hooks reference shows it.
    #[test]
    fn every_row_maps_its_example() {
        let rows: &[(&str, Value, Value)] = &[
            (
                "Bash",
                json!({"command": "npm test", "description": "Run tests", "timeout": 120000, "run_in_background": false}),
                json!([{"name": "bash", "arguments": {"command": "npm test", "description": "Run tests", "timeout_ms": 120000}}]),
            ),
            (
                "Read",
                json!({"file_path": "/p/src/a.rs", "offset": 10, "limit": 50}),
                json!([{"name": "read_file", "arguments": {"path": "/p/src/a.rs", "offset": 10, "limit": 50}}]),
            ),
            (
                "Write",
                json!({"file_path": "/p/a.txt", "content": "x"}),
                json!([{"name": "write_file", "arguments": {"path": "/p/a.txt", "content": "x"}}]),
            ),
            (
                "Edit",
                json!({"file_path": "/p/a.txt", "old_string": "a", "new_string": "b", "replace_all": true}),
                json!([{"name": "edit_file", "arguments": {"path": "/p/a.txt", "old_string": "a", "new_string": "b", "replace_all": true}}]),
            ),
            (
                "MultiEdit",
                json!({"file_path": "/p/a.txt", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d", "replace_all": true}]}),
                json!([
                    {"name": "edit_file", "arguments": {"path": "/p/a.txt", "old_string": "a", "new_string": "b"}},
                    {"name": "edit_file", "arguments": {"path": "/p/a.txt", "old_string": "c", "new_string": "d", "replace_all": true}}
                ]),
            ),
            (
                "Glob",
                json!({"pattern": "**/*.rs", "path": "/p/src"}),
                json!([{"name": "glob", "arguments": {"pattern": "**/*.rs", "path": "/p/src"}}]),
            ),
            (
                "Grep",
                json!({"pattern": "fn main", "path": "/p", "glob": "*.rs", "output_mode": "content", "-n": true}),
                json!([{"name": "grep", "arguments": {"pattern": "fn main", "path": "/p", "glob": "*.rs"}}]),
            ),
            (
                "LS",
                json!({"path": "/p/src"}),
                json!([{"name": "list_dir", "arguments": {"path": "/p/src"}}]),
            ),
            (
                "NotebookEdit",
                json!({"notebook_path": "/p/n.ipynb", "cell_id": "c1", "new_source": "print(1)", "edit_mode": "replace"}),
                json!([{"name": "write_file", "arguments": {"path": "/p/n.ipynb", "content": "print(1)"}}]),
            ),
            (
                "WebFetch",
                json!({"url": "https://Docs.Example.com/a?b", "prompt": "summarise"}),
                json!([{"name": "network_connect", "arguments": {"host": "docs.example.com", "port": 443}}]),
            ),
        ];
        assert_eq!(rows.len(), TOOLS.len());
        for ((tool, input, want), (claude, _, _)) in rows.iter().zip(TOOLS) {
            assert_eq!(tool, claude);
            assert_eq!(Value::Array(calls(tool, input.clone())), *want, "{tool}");
        }
    }

    #[test]
    fn an_mcp_tool_keeps_its_name_and_arguments() {
        assert_eq!(
            calls("mcp__github__create_issue", json!({"title": "t"})),
            vec![json!({"name": "mcp__github__create_issue", "arguments": {"title": "t"}})]
        );
    }

    #[test]
    fn a_tool_without_a_row_is_unmapped_never_allowed() {
        for tool in ["Task", "WebSearch", "TodoWrite", "SomethingNew"] {
            match map(tool, &json!({})) {
                Mapped::Unmapped(why) => assert!(why.contains(tool), "{why}"),
                Mapped::Calls(c) => panic!("{tool} mapped to {c:?}"),
            }
        }
        assert!(matches!(
            map("WebFetch", &json!({"url": "not a url"})),
            Mapped::Unmapped(_)
        ));
        assert!(matches!(
            map("MultiEdit", &json!({"file_path": "a", "edits": []})),
            Mapped::Unmapped(_)
        ));
        assert!(matches!(map("Bash", &json!("ls")), Mapped::Unmapped(_)));
    }

    #[test]
    fn the_answer_is_claudes_hook_output() {
        let out = HookOutput::new(Permission::Deny, "no".into());
        assert_eq!(
            serde_json::to_value(out).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
    }
}
