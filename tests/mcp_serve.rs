//! `reasonix mcp serve` driven by real MCP clients: the Python `mcp` SDK's stdio client (PyPI,
//! `$REASONIX_MCP_PYTHON` = a Python that has it; `.ci/run` installs it) and the Rust SDK's
//! client (rmcp). Each lists the tools with their schemas, reads a file, gets a denied `.env`
//! read back as an error with the host's reason, and the record says what happened.

mod common;

use std::process::Stdio;

use common::{World, jsonl, skip_unless};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
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
    // A write asks, and nobody answers: blocked, not written.
    assert_eq!(results[3]["isError"], json!(true));
    assert!(
        text(&results[3]).contains("unattended posture"),
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
