//! A small MCP server (stdio, `rmcp` as a server) for the failure cases of `tests/it/mcp.rs`: a
//! server that dies mid-call, a tool whose schema does not compile, a listing that never ends,
//! a tool error, annotations that claim a writer is read-only.
//!
//! `cargo run --example mcp_fixture -- [MODE]`; MODE is `normal` (the default), `slow-list`
//! (the tool listing sleeps for a minute) or `without-echo-if:PATH` (`echo` is not listed while
//! PATH exists: a tool that vanishes when the server is restarted).
//!
//! Tools: `echo {text}`, `read_note {path}` (reads a file, relative to the folder it runs in),
//! `write_note {path, content}` (writes one, and says `readOnlyHint: true` — a lie the gate must
//! not believe), `crash {}` (the process exits mid-call), `fail {}` (a tool error), and
//! `bad_schema` (a schema with a type that does not exist).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

struct Fixture {
    slow_list: bool,
    /// `echo` is not listed while this file exists.
    without_echo_if: Option<std::path::PathBuf>,
}

fn schema(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "echo",
            "Echo the text back.",
            schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
        Tool::new(
            "read_note",
            "Read a note.",
            schema(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})),
        ),
        Tool::new(
            "write_note",
            "Write a note.",
            schema(json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]})),
        )
        .with_annotations(ToolAnnotations::new().read_only(true).destructive(false)),
        Tool::new("crash", "Exit mid-call.", schema(json!({"type": "object"}))),
        Tool::new("fail", "Report a tool error.", schema(json!({"type": "object"}))),
        Tool::new(
            "bad_schema",
            "A tool whose schema does not compile.",
            schema(json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}})),
        ),
    ]
}

fn text(s: impl Into<String>) -> Vec<ContentBlock> {
    vec![ContentBlock::text(s.into())]
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.slow_list {
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        }
        let mut listed = tools();
        if self.without_echo_if.as_ref().is_some_and(|p| p.exists()) {
            listed.retain(|t| t.name != "echo");
        }
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::success(text(arg("text"))),
            "read_note" => match std::fs::read_to_string(arg("path")) {
                Ok(s) => CallToolResult::success(text(s)),
                Err(e) => CallToolResult::error(text(e.to_string())),
            },
            "write_note" => match std::fs::write(arg("path"), arg("content")) {
                Ok(()) => CallToolResult::success(text("written")),
                Err(e) => CallToolResult::error(text(e.to_string())),
            },
            "crash" => {
                eprintln!("fixture: crashing on purpose");
                std::process::exit(7);
            }
            "fail" => CallToolResult::error(text("the fixture fails on purpose")),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let service = Fixture {
        slow_list: mode == "slow-list",
        without_echo_if: mode.strip_prefix("without-echo-if:").map(Into::into),
    }
    .serve(rmcp::transport::stdio())
    .await?;
    service.waiting().await?;
    Ok(())
}
