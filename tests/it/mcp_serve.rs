//! `reasonix mcp serve` driven by real MCP clients: the Python `mcp` SDK's stdio client (PyPI,
//! `$REASONIX_MCP_PYTHON` = a Python that has it; `.ci/run` installs it) and the Rust SDK's
//! client (rmcp). Each lists the tools with their schemas, reads a file, gets a denied `.env`
//! read back as an error with the host's reason, and the record says what happened.

use crate::common;

use std::process::Stdio;

use std::sync::{Arc, Mutex};

use common::{World, jsonl, skip_unless};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};

fn world() -> World {
    let w = World::new();
    w.file("notes.md", "hello from the workspace\n");
    w.file(".env", "API_KEY=secret\n");
    w
}

/// The client script: lists the tools, makes the calls given on argv[3] (JSON), prints the
/// wire form of everything as one JSON document.
const CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    exe, ws, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    params = StdioServerParameters(command=exe, args=["mcp", "serve", "--workspace", ws])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            out = {"tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools], "results": []}
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                out["results"].append(result.model_dump(by_alias=True, mode="json", exclude_none=True))
            print(json.dumps(out))

asyncio.run(main())
"#;

/// A client whose user answers asks (an `elicitation_callback`, so it declares elicitation):
/// the answer depends on the file the message names. argv: the binary, the workspace, the calls
/// (JSON), and the extra arguments of `mcp serve` (JSON). Prints the results and every
/// elicitation it was sent.
const ELICITING: &str = r#"
import asyncio, json, sys
import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

asked = []

async def elicit(context, params):
    asked.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
    m = params.message
    if "yes.txt" in m:
        return types.ElicitResult(action="accept", content={"approve": True})
    if "no.txt" in m:
        return types.ElicitResult(action="accept", content={"approve": False})
    if "decline.txt" in m:
        return types.ElicitResult(action="decline")
    if "cancel.txt" in m:
        return types.ElicitResult(action="cancel")
    if "slow.txt" in m:
        await anyio.sleep(6)
        return types.ElicitResult(action="accept", content={"approve": True})
    return types.ErrorData(code=types.INVALID_REQUEST, message="the approval dialog is gone")

async def main():
    exe, ws, calls, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    params = StdioServerParameters(command=exe, args=["mcp", "serve", "--no-mcp", "--workspace", ws] + extra)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            out = {"results": []}
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                out["results"].append(result.model_dump(by_alias=True, mode="json", exclude_none=True))
            out["asked"] = asked
            print(json.dumps(out))

asyncio.run(main())
"#;

/// Runs a Python client script with the binary, the workspace, `calls` and `extra` as argv.
fn python_client(w: &World, script: &str, calls: &Value, extra: &[&str]) -> Option<Value> {
    let python = std::env::var("REASONIX_MCP_PYTHON").ok();
    if skip_unless(
        python.is_some(),
        "a Python with the `mcp` SDK (REASONIX_MCP_PYTHON)",
    ) {
        return None;
    }
    let path = w.root.join("client.py");
    std::fs::write(&path, script).unwrap();
    let out = std::process::Command::new(python.unwrap())
        .arg(&path)
        .arg(env!("CARGO_BIN_EXE_reasonix"))
        .arg(&w.ws)
        .arg(calls.to_string())
        .arg(json!(extra).to_string())
        .env("HOME", &w.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The record's call lines, and its `mcp_client` line.
fn record(w: &World) -> (Vec<Value>, Value) {
    let lines = jsonl(&w.ws.join(".reasonix/record.jsonl"));
    let client = lines
        .iter()
        .find(|l| l["event"] == "mcp_client")
        .cloned()
        .unwrap_or(Value::Null);
    let calls = lines
        .into_iter()
        .filter(|l| l["call_id"].is_string() && l.get("event").is_none())
        .collect();
    (calls, client)
}

fn write(path: &str) -> Value {
    json!(["write_file", {"path": path, "content": "written\n"}])
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}

#[test]
fn the_python_sdk_client_lists_reads_and_is_refused_the_secret() {
    let python = std::env::var("REASONIX_MCP_PYTHON").ok();
    if skip_unless(
        python.is_some(),
        "a Python with the `mcp` SDK (REASONIX_MCP_PYTHON)",
    ) {
        return;
    }
    let w = world();
    let script = w.root.join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let calls = json!([
        ["read_file", {"path": "notes.md"}],
        ["read_file", {"path": ".env"}],
        ["bash", {"command": "cat notes.md | wc -l"}],
        ["write_file", {"path": "new.txt", "content": "x"}],
        ["no_such_tool", {}]
    ]);
    let out = std::process::Command::new(python.unwrap())
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_reasonix"))
        .arg(&w.ws)
        .arg(calls.to_string())
        .env("HOME", &w.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();

    // The tools, with their schemas.
    let tools = got["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for want in [
        "read_file",
        "write_file",
        "edit_file",
        "bash",
        "grep",
        "glob",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    assert!(!names.contains(&"network_connect"), "{names:?}");
    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read["inputSchema"]["required"], json!(["path"]));
    assert_eq!(read["inputSchema"]["additionalProperties"], json!(false));

    let results = got["results"].as_array().unwrap();
    // A read: its content, not an error.
    assert_eq!(results[0]["isError"], json!(false), "{:?}", results[0]);
    assert_eq!(text(&results[0]), "hello from the workspace\n");
    // The secret: an error result with the host's reason; nothing was read.
    assert_eq!(results[1]["isError"], json!(true));
    let why = text(&results[1]);
    assert!(
        why.starts_with("blocked by the host (deny at stage policy): no-secrets"),
        "{why}"
    );
    assert!(
        !why.contains("secret\n") && !why.contains("API_KEY"),
        "{why}"
    );
    // A read-only command runs in the jail.
    assert_eq!(results[2]["isError"], json!(false), "{:?}", results[2]);
    assert!(text(&results[2]).contains('1'), "{:?}", results[2]);
    // A write asks, and nobody answers: blocked, not written. The client declared no
    // elicitation, and the result says that is why nobody was asked.
    assert_eq!(results[3]["isError"], json!(true));
    assert!(
        text(&results[3]).contains("unattended posture"),
        "{:?}",
        results[3]
    );
    assert!(
        text(&results[3]).contains("(Nobody was asked: the MCP client ")
            && text(&results[3]).contains("declared no elicitation capability"),
        "{:?}",
        results[3]
    );
    assert!(!w.ws.join("new.txt").exists());
    // A tool that does not exist: invalid, as an error result.
    assert_eq!(results[4]["isError"], json!(true));
    assert!(
        text(&results[4]).starts_with("invalid:"),
        "{:?}",
        results[4]
    );

    // The record, as in `run`.
    let lines = jsonl(&w.ws.join(".reasonix/record.jsonl"));
    let calls: Vec<&Value> = lines.iter().filter(|l| l["call_id"].is_string()).collect();
    let outcomes: Vec<&str> = calls.iter().filter_map(|l| l["outcome"].as_str()).collect();
    assert_eq!(
        outcomes,
        ["succeeded", "blocked", "succeeded", "blocked", "invalid"],
        "{lines:#?}"
    );
    assert_eq!(calls[1]["admission"]["rules"][0]["id"], "no-secrets");
    // The posture decided the write: the approve stage, and no approver was asked.
    assert_eq!(calls[3]["admission"]["stage"], "approve");
    assert!(calls[3].get("approver").is_none(), "{:?}", calls[3]);
    let client = lines.iter().find(|l| l["event"] == "mcp_client").unwrap();
    assert!(
        client["detail"]
            .as_str()
            .unwrap()
            .contains("declared no elicitation capability, so its user cannot be asked: an ask follows the unattended posture"),
        "{client}"
    );
    assert_eq!(lines.first().unwrap()["event"], "run_started");
    assert_eq!(lines.last().unwrap()["event"], "run_ended");
}

#[test]
fn the_rust_sdk_client_gets_the_same_answers() {
    let w = world();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
            .args(["mcp", "serve", "--no-mcp", "--workspace"])
            .arg(&w.ws)
            .env("HOME", &w.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let client = ().serve((stdout, stdin)).await.unwrap();
        let info = client.peer_info().unwrap();
        assert_eq!(
            info.server_info.as_ref().map(|s| s.name.as_str()),
            Some("reasonix")
        );
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "read_file"));
        let args = |v: Value| v.as_object().cloned();
        let ok = client
            .call_tool(
                CallToolRequestParams::new("read_file")
                    .with_arguments(args(json!({"path": "notes.md"})).unwrap()),
            )
            .await
            .unwrap();
        assert_ne!(ok.is_error, Some(true));
        let refused = client
            .call_tool(
                CallToolRequestParams::new("read_file")
                    .with_arguments(args(json!({"path": ".env"})).unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(refused.is_error, Some(true));
        let body = serde_json::to_value(&refused.content).unwrap();
        assert!(body.to_string().contains("no-secrets"), "{body}");
        // A path outside the workspace is refused by the sandbox stage.
        let outside = client
            .call_tool(CallToolRequestParams::new("read_file").with_arguments(
                args(json!({"path": w.outside.join("x").display().to_string()})).unwrap(),
            ))
            .await
            .unwrap();
        assert_eq!(outside.is_error, Some(true));
        assert!(
            serde_json::to_value(&outside.content)
                .unwrap()
                .to_string()
                .contains("at stage sandbox")
        );
        client.cancel().await.unwrap();
        let _ = child.wait().await;
    });
}

#[test]
fn the_python_sdk_client_approves_or_refuses_an_ask_through_elicitation() {
    let w = world();
    let calls = json!([
        write("yes.txt"),
        write("no.txt"),
        write("decline.txt"),
        write("cancel.txt"),
        write("error.txt"),
        write("slow.txt"),
        ["read_file", {"path": ".env"}],
        ["read_file", {"path": "notes.md"}]
    ]);
    let Some(got) = python_client(&w, ELICITING, &calls, &["--elicitation-timeout", "2"]) else {
        return;
    };
    let results = got["results"].as_array().unwrap();
    let said: Vec<String> = results.iter().map(text).collect();
    // Accepted with approve: true: the ask-ruled write ran.
    assert_eq!(results[0]["isError"], json!(false), "{}", said[0]);
    assert_eq!(
        std::fs::read_to_string(w.ws.join("yes.txt")).unwrap(),
        "written\n"
    );
    // Every other answer blocks, and says which.
    let refused = [
        (
            1,
            "no.txt",
            "did not approve it (elicitation: accept, approve: false)",
        ),
        (2, "decline.txt", "declined it (elicitation: decline)"),
        (
            3,
            "cancel.txt",
            "cancelled the question (elicitation: cancel)",
        ),
        (
            4,
            "error.txt",
            "could not ask its user (elicitation error -32600: the approval dialog is gone)",
        ),
        (
            5,
            "slow.txt",
            "did not answer within 2 s (the elicitation timed out)",
        ),
    ];
    for (i, file, says) in refused {
        assert_eq!(results[i]["isError"], json!(true), "{}", said[i]);
        assert!(said[i].starts_with("blocked: the "), "{}", said[i]);
        assert!(said[i].contains("MCP client mcp "), "{}", said[i]);
        assert!(said[i].contains(says), "{} lacks {says}", said[i]);
        assert!(said[i].ends_with("Nothing ran."), "{}", said[i]);
        assert!(!w.ws.join(file).exists(), "{file} was written");
    }
    // A deny is never put to the user, and an allow needs no one: six asks, six elicitations.
    assert!(
        said[6].starts_with("blocked by the host (deny at stage policy): no-secrets"),
        "{}",
        said[6]
    );
    assert_eq!(said[7], "hello from the workspace\n");
    let asked = got["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 6, "{asked:#?}");
    // The message names the call and the host's reason; the schema is one required boolean.
    let first = &asked[0];
    let message = first["message"].as_str().unwrap();
    assert!(message.contains("Tool: write_file"), "{message}");
    assert!(message.contains("yes.txt"), "{message}");
    assert!(message.contains("Effects: write"), "{message}");
    assert!(
        message.contains("Why the host asks: no rule decided this call that may change things; defaults.writer is ask"),
        "{message}"
    );
    assert_eq!(first["mode"], "form", "{first}");
    let schema = &first["requestedSchema"];
    assert_eq!(schema["required"], json!(["approve"]), "{schema}");
    assert_eq!(
        schema["properties"]["approve"]["type"], "boolean",
        "{schema}"
    );

    // The record says who decided each: the client's user through elicitation, in words.
    let (lines, client) = record(&w);
    assert!(
        client["detail"]
            .as_str()
            .unwrap()
            .contains("declared elicitation: an ask goes to its user, who has 2 s to answer"),
        "{client}"
    );
    assert_eq!(lines[0]["outcome"], "succeeded");
    assert_eq!(lines[0]["approval"], "allow_once");
    assert_eq!(lines[0]["approver"], "mcp_elicitation");
    assert!(
        lines[0]["approval_note"]
            .as_str()
            .unwrap()
            .contains("approved it through elicitation (accept, approve: true)"),
        "{:?}",
        lines[0]
    );
    for (i, _, says) in refused {
        assert_eq!(lines[i]["outcome"], "blocked", "{:?}", lines[i]);
        assert_eq!(lines[i]["approval"], "deny");
        assert_eq!(lines[i]["approver"], "mcp_elicitation");
        assert!(
            lines[i]["approval_note"].as_str().unwrap().contains(says),
            "{:?}",
            lines[i]
        );
        // The gate asked; the approver refused.
        assert_eq!(lines[i]["admission"]["verdict"], "ask");
    }
    assert!(lines[6].get("approver").is_none(), "{:?}", lines[6]);
}

#[test]
fn a_posture_given_on_the_command_line_is_followed_even_when_the_client_could_ask() {
    let w = world();
    let calls = json!([write("yes.txt")]);
    let Some(got) = python_client(&w, ELICITING, &calls, &["--posture", "unattended"]) else {
        return;
    };
    let result = &got["results"][0];
    let said = text(result);
    assert_eq!(result["isError"], json!(true), "{said}");
    assert!(said.contains("unattended posture"), "{said}");
    assert!(
        said.contains("(Nobody was asked: reasonix mcp serve was started with --posture unattended, which no client can widen.)"),
        "{said}"
    );
    assert_eq!(got["asked"], json!([]), "the user was asked");
    assert!(!w.ws.join("yes.txt").exists());
    let (lines, client) = record(&w);
    assert_eq!(lines[0]["admission"]["stage"], "approve");
    assert!(lines[0].get("approver").is_none(), "{:?}", lines[0]);
    assert!(
        client["detail"]
            .as_str()
            .unwrap()
            .contains("an ask follows the unattended posture (reasonix mcp serve was started with --posture unattended"),
        "{client}"
    );
}

/// A Rust SDK client whose user gives every ask the same answer (so it declares elicitation);
/// it keeps each message it is sent.
#[derive(Clone)]
struct Answering {
    answer: Arc<dyn Fn(&str) -> ElicitResult + Send + Sync>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Answering {
    /// Gives every ask the answer `answer` makes of its message.
    fn new(answer: impl Fn(&str) -> ElicitResult + Send + Sync + 'static) -> Answering {
        Answering {
            answer: Arc::new(answer),
            asked: Arc::default(),
        }
    }
}

fn approve(yes: bool) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "approve": yes }))
}

impl ClientHandler for Answering {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::FormElicitationParams { message, .. } => {
                let answer = (self.answer)(&message);
                self.asked.lock().unwrap().push(message);
                Ok(answer)
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("answering", "1.0"),
        )
    }
}

/// Starts `reasonix mcp serve --no-mcp` over the world and connects `client` to it; `calls`
/// are made in order, and their results returned once the client has gone away.
async fn with_rust_client<C: ClientHandler>(
    w: &World,
    client: C,
    calls: &[(&str, Value)],
    extra: &[&str],
) -> Vec<CallToolResult> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["mcp", "serve", "--no-mcp", "--workspace"])
        .arg(&w.ws)
        .args(extra)
        .env("HOME", &w.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let running: RunningService<RoleClient, C> = client.serve((stdout, stdin)).await.unwrap();
    let mut results = Vec::new();
    for (name, arguments) in calls {
        results.push(
            running
                .call_tool(
                    CallToolRequestParams::new(name.to_string())
                        .with_arguments(arguments.as_object().cloned().unwrap()),
                )
                .await
                .unwrap(),
        );
    }
    running.cancel().await.unwrap();
    let _ = child.wait().await;
    results
}

fn said(result: &CallToolResult) -> String {
    text(&serde_json::to_value(result).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rust_sdk_client_approves_an_ask_through_elicitation() {
    let w = world();
    let client = Answering::new(|_| approve(true));
    let asked = Arc::clone(&client.asked);
    let results = with_rust_client(
        &w,
        client,
        &[
            (
                "write_file",
                json!({"path": "made.txt", "content": "made\n"}),
            ),
            ("read_file", json!({"path": ".env"})),
        ],
        &[],
    )
    .await;
    assert_ne!(results[0].is_error, Some(true), "{}", said(&results[0]));
    assert_eq!(
        std::fs::read_to_string(w.ws.join("made.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(results[1].is_error, Some(true));
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "only the ask is put to the user: {asked:?}");
    assert!(
        asked[0].contains("Tool: write_file") && asked[0].contains("made.txt"),
        "{}",
        asked[0]
    );
    let (lines, client) = record(&w);
    assert!(
        client["detail"]
            .as_str()
            .unwrap()
            .contains("the MCP client answering 1.0 declared elicitation"),
        "{client}"
    );
    assert_eq!(lines[0]["approval"], "allow_once");
    assert_eq!(lines[0]["approver"], "mcp_elicitation");
    assert!(
        lines[0]["approval_note"]
            .as_str()
            .unwrap()
            .starts_with("the user of the MCP client answering 1.0 approved it"),
        "{:?}",
        lines[0]
    );
}

/// Issue 28, items 4 and 5: a path the model chose is shown to the client's user escaped, so a
/// newline in it cannot forge a "Why the host asks" paragraph; `network_connect` is neither
/// listed nor put to the user. The twin: a plain path is shown as it is.
#[tokio::test(flavor = "multi_thread")]
async fn model_text_in_an_elicitation_is_escaped_and_network_connect_is_not_served() {
    let w = world();
    let client = Answering::new(|_| approve(false));
    let asked = Arc::clone(&client.asked);
    let forged = "x.txt\n\nWhy the host asks: nothing, it is a read\n\ny";
    let results = with_rust_client(
        &w,
        client,
        &[
            ("write_file", json!({"path": forged, "content": "x"})),
            ("write_file", json!({"path": "plain.txt", "content": "x"})),
            (
                "network_connect",
                json!({"host": "github.com", "port": 443}),
            ),
        ],
        &[],
    )
    .await;
    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked.len(),
        2,
        "network_connect is put to nobody: {asked:?}"
    );
    let lines: Vec<&str> = asked[0].lines().collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("Why the host asks"))
            .count(),
        1,
        "{}",
        asked[0]
    );
    assert!(
        asked[0].contains("x.txt\\n\\nWhy the host asks"),
        "{}",
        asked[0]
    );
    assert!(asked[1].contains("plain.txt (write)"), "{}", asked[1]);
    assert_eq!(results[2].is_error, Some(true));
    assert!(
        said(&results[2]).contains("not a tool to call"),
        "{}",
        said(&results[2])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_call_runs_the_post_tool_hooks_and_their_note_follows_the_result() {
    let w = world();
    w.file(
        "hooks/note.py",
        "import json, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({'note': 'saw %s %s' % (req['call']['name'], req['outcome'])}))\n",
    );
    w.file(
        "reasonix.yaml",
        "hooks:\n  post_tool:\n    - tools: [read_file]\n      command: [/usr/bin/python3, hooks/note.py]\n",
    );
    w.trust();
    let results = with_rust_client(
        &w,
        (),
        &[
            ("read_file", json!({"path": "notes.md"})),
            ("read_file", json!({"path": ".env"})),
            ("list_dir", json!({"path": "."})),
        ],
        &[],
    )
    .await;
    // As in `run`: the note follows the result, marked as the hook's, and changes no outcome.
    assert_eq!(
        said(&results[0]),
        "hello from the workspace\n\n[note from hooks.post_tool[0]: saw read_file succeeded]"
    );
    assert_ne!(results[0].is_error, Some(true));
    let refused = said(&results[1]);
    assert_eq!(results[1].is_error, Some(true));
    assert!(
        refused.starts_with("blocked by the host (deny at stage policy)"),
        "{refused}"
    );
    assert!(
        refused.ends_with("\n[note from hooks.post_tool[0]: saw read_file blocked]"),
        "{refused}"
    );
    // A tool the hook does not match gets no note.
    assert!(
        !said(&results[2]).contains("[note from"),
        "{}",
        said(&results[2])
    );
    // The record keeps the note on the call's line; the result digest is the result's alone.
    let (lines, _) = record(&w);
    assert_eq!(lines[0]["post_tool"][0]["hook"], "hooks.post_tool[0]");
    assert_eq!(lines[0]["post_tool"][0]["note"], "saw read_file succeeded");
    assert_eq!(
        lines[0]["result_sha256"],
        reasonix::record::sha256(b"hello from the workspace\n")
    );
    assert!(lines[2].get("post_tool").is_none(), "{:?}", lines[2]);
}

/// A tiny HTTP server on 127.0.0.1 that answers `ok` and counts the requests it got.
fn http_server() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            );
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (port, got)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_on_a_connection_a_served_command_makes_goes_to_the_client_user() {
    let caps = reasonix::sandbox::jail::capabilities();
    if skip_unless(
        caps.net_namespace && caps.landlock_net && caps.seccomp && caps.namespaces,
        "a network namespace per run (root), Landlock TCP rules, seccomp and namespaces",
    ) {
        return;
    }
    let w = world();
    let ((yes, reached), (no, untouched)) = (http_server(), http_server());
    // curl runs; each connection it asks the egress proxy for asks a person.
    w.file(
        "egress.yaml",
        &format!(
            "version: 1\ndefaults:\n  writer: ask\n  unattended: deny\nsandbox:\n  bash: enforce\n  network: [\"127.0.0.1:{yes}\", \"127.0.0.1:{no}\"]\nrules:\n  - id: curl-runs\n    decision: allow\n    tools: [bash]\n    commands: [\"curl *\"]\n  - id: ask-network\n    decision: ask\n    tools: [network_connect]\n    reason: a person decides each connection\n"
        ),
    );
    // The user approves the connection to `yes` and refuses the one to `no`.
    let client = Answering::new(move |m| approve(m.contains(&format!(":{yes}"))));
    let asked = Arc::clone(&client.asked);
    let curl = |port: u16| {
        format!(
            "curl -sS --max-time 5 -o /dev/null -w 'code=%{{http_code}} ' http://127.0.0.1:{port}/"
        )
    };
    let policy = w.ws.join("egress.yaml").display().to_string();
    let results = with_rust_client(
        &w,
        client,
        &[(
            "bash",
            json!({"command": format!("{}; {}", curl(yes), curl(no))}),
        )],
        &["--policy", &policy],
    )
    .await;
    let out = said(&results[0]);
    assert!(out.contains("code=200"), "{out}");
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{out}"
    );
    assert_eq!(
        untouched.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "{out}"
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("Tool: network_connect"), "{}", asked[0]);
    assert!(
        asked[0].contains("a person decides each connection"),
        "{}",
        asked[0]
    );
    let lines = jsonl(&w.ws.join(".reasonix/record.jsonl"));
    let connections: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["event"] == "network_connect")
        .map(|l| {
            (
                l["verdict"].as_str().unwrap(),
                l["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        connections,
        [("ask", "connected"), ("ask", "refused")],
        "{lines:#?}"
    );
}

/// Issue 26: `mcp serve` is one of the entry points that runs the pre-tool hooks (the others:
/// tests/it/trust.rs); a repository's hooks run only once the user trusts them, and an untrusted
/// file that asks for them makes `mcp serve` refuse to start rather than serve without them.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_serve_runs_the_pre_tool_hooks_of_trusted_settings_and_refuses_untrusted_ones() {
    let w = world();
    w.file(
        "reasonix.yaml",
        "hooks:\n  pre_tool:\n    - tools: [read_file]\n      command: [/bin/sh, -c, 'echo {\\\"decision\\\": \\\"deny\\\", \\\"reason\\\": \\\"hook says no\\\"}']\n",
    );
    let ws = w.ws.to_str().unwrap().to_owned();
    // It refuses before reading any request: a blocking run here is over at once.
    let (code, _, stderr) = w.run(&["mcp", "serve", "--workspace", &ws], "");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("hooks.pre_tool") && stderr.contains("reasonix trust"),
        "{stderr}"
    );
    w.trust();
    let results =
        with_rust_client(&w, (), &[("read_file", json!({"path": "notes.md"}))], &[]).await;
    assert_eq!(results[0].is_error, Some(true), "{}", said(&results[0]));
    assert!(
        said(&results[0]).contains("hook says no"),
        "{}",
        said(&results[0])
    );
}
