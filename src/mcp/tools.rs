//! The tools MCP puts in the registry: `mcp_connect__NAME`, the call that starts or reaches
//! server NAME (judged before any process starts), and `mcp__NAME__TOOL` for each tool a
//! connected server lists.
//!
//! An MCP tool does not classify its own calls: the classify stage asks the policy
//! (`mcp.classify`); its own [`Tool::classify`] answers the undeclared default (exec and
//! network, no path) for any caller outside the gate. Its server's `annotations` are passed on
//! as they are ([`Tool::annotations`]), for policy and the record, never for the verdict.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use super::client::Connection;
use super::config::{Server, Transport};
use crate::call::Call;
use crate::sandbox::jail::Writes;
use crate::text::{Keep, shorten};
use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, HostArgument, Invocation, Output, Tool,
    ToolError,
};

/// The longest text an MCP result keeps before the session bounds it again for the model.
const RESULT_KEPT: usize = 1 << 20;
/// The longest server-given description the model is shown.
const DESCRIPTION_KEPT: usize = 1024;

/// The name of the call that connects to `server`.
pub fn connect_name(server: &str) -> String {
    format!("mcp_connect__{server}")
}

/// Whether `name` is the call that connects to a server ([`connect_name`]).
pub fn is_connect(name: &str) -> bool {
    name.starts_with("mcp_connect__")
}

/// The prefix of every tool of `server`.
pub fn tool_prefix(server: &str) -> String {
    format!("mcp__{server}__")
}

/// The server a tool name (`mcp__NAME__TOOL`) belongs to.
pub fn server_of(tool: &str) -> Option<&str> {
    tool.strip_prefix("mcp__")?.split_once("__").map(|(s, _)| s)
}

/// The server a call reaches: through its own name (`mcp__NAME__TOOL`) or, for the capability
/// proxy, through the capability its arguments name. `None` for any other call, and for a
/// proxy call whose arguments name no capability (the gate refuses it).
pub fn server_reached(call: &Call) -> Option<String> {
    if call.name == crate::tool::builtin::use_capability::NAME {
        let arguments = call.parse_arguments().ok()?;
        let capability = arguments.get("capability")?.as_str()?;
        return server_of(capability).map(str::to_owned);
    }
    server_of(&call.name).map(str::to_owned)
}

/// The arguments of the connect call: what the policy judges and the record shows — for a
/// stdio server the whole of what starts it, `{command, args, env, cwd}` (`cwd`: the workspace,
/// where the jail runs it), for an HTTP server `{url}` (its headers, which may hold a token, are
/// neither judged nor shown).
pub fn connect_arguments(server: &Server, workspace: &Path) -> Value {
    match &server.transport {
        Transport::Stdio { command, args, env } => json!({
            "command": command,
            "args": args,
            "env": env,
            "cwd": workspace,
        }),
        Transport::Http { url, .. } => json!({"url": url}),
    }
}

/// Each variable of a process's environment, with why it can change what the process runs when
/// it is not known to be inert: the shell analysis's own table
/// ([`crate::shell::environment::env_value`]), as for `NAME=value cmd` in bash.
pub fn environment(env: &serde_json::Map<String, Value>) -> Vec<(String, Option<String>)> {
    env.iter()
        .map(|(name, value)| {
            let why = crate::shell::environment::env_value(name, value.as_str(), None)
                .into_iter()
                .next()
                .map(|h| h.detail);
            (name.clone(), why)
        })
        .collect()
}

/// What a connect call leaves behind when it ran: the connection, or why there is none.
pub type Slot = Arc<Mutex<Option<Result<Arc<Connection>, String>>>>;

/// How the servers a session starts may write: in place, or — while the session is in plan
/// mode — not at all (issue 25). Shared by the connect tools and their [`crate::agent::servers`].
pub type ServerWrites = Arc<Mutex<Writes>>;

/// `mcp_connect__NAME`: connecting to server NAME, as a call.
pub struct ConnectTool {
    name: String,
    server: Server,
    workspace: PathBuf,
    slot: Slot,
    writes: ServerWrites,
}

impl ConnectTool {
    /// The connect call of `server` in `workspace`; when it runs, its connection goes to the
    /// returned slot, and its process may write as `writes` says when it starts.
    pub fn new(server: Server, workspace: &Path, writes: ServerWrites) -> (ConnectTool, Slot) {
        let slot: Slot = Arc::new(Mutex::new(None));
        (
            ConnectTool {
                name: connect_name(&server.name),
                server,
                workspace: workspace.to_path_buf(),
                slot: Arc::clone(&slot),
                writes,
            },
            slot,
        )
    }
}

impl Tool for ConnectTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "Start or reach an MCP server, as configured."
    }
    fn schema(&self) -> Value {
        match &self.server.transport {
            Transport::Stdio { .. } => json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "cwd": {"type": "string"}
                },
                "required": ["command", "args", "env", "cwd"],
                "additionalProperties": false
            }),
            Transport::Http { .. } => json!({
                "type": "object",
                "properties": {"url": {"type": "string"}},
                "required": ["url"]
            }),
        }
    }
    fn read_only(&self) -> bool {
        false
    }
    fn host_arguments(&self) -> &'static [(&'static str, HostArgument)] {
        match &self.server.transport {
            Transport::Stdio { .. } => &[],
            Transport::Http { .. } => &[("url", HostArgument::Url)],
        }
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        Ok(match &self.server.transport {
            Transport::Stdio { .. } => {
                let mut c = Classification::changes(&[Effect::Exec], Vec::new());
                c.starts_process = true;
                if let Some(Value::Object(env)) = args.as_map().get("env") {
                    c.environment = environment(env);
                }
                c
            }
            Transport::Http { .. } => Classification::changes(&[Effect::Network], Vec::new()),
        })
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        // What was judged is what starts: a connect whose arguments are not the server's own
        // (command, arguments, environment, folder) starts nothing.
        let configured = connect_arguments(&self.server, &self.workspace);
        if Value::Object(call.arguments().as_map().clone()) != configured {
            return Err(ToolError::Server(format!(
                "the connect call's arguments are not those of MCP server {:?} as configured; nothing was started",
                self.server.name
            )));
        }
        let writes = *self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let opened = Connection::open(&self.server, call.jail(), &call.shape_with(writes));
        let text = match &opened {
            Ok(c) => format!(
                "connected to MCP server {:?}: {} tools",
                self.server.name,
                c.tools().len()
            ),
            Err(e) => format!("MCP server {:?} did not start: {e}", self.server.name),
        };
        let failed = opened.as_ref().err().cloned();
        if let Ok(mut slot) = self.slot.lock() {
            *slot = Some(opened);
        }
        match failed {
            None => Ok(Output::text(text)),
            Some(_) => Err(ToolError::Server(text)),
        }
    }
}

/// `mcp__NAME__TOOL`: one tool of a connected server.
pub struct ServerTool {
    name: String,
    remote: String,
    description: String,
    schema: Value,
    annotations: Option<Value>,
    connection: Arc<Connection>,
}

impl ServerTool {
    /// Every tool the connection listed, as registry tools.
    pub fn all(connection: &Arc<Connection>) -> Vec<ServerTool> {
        connection
            .tools()
            .iter()
            .map(|t| {
                let described = t.description.as_deref().unwrap_or("");
                ServerTool {
                    name: format!("{}{}", tool_prefix(connection.name()), t.name),
                    remote: t.name.to_string(),
                    description: format!(
                        "[MCP server {}] {}",
                        connection.name(),
                        shorten(described, DESCRIPTION_KEPT, Keep::Head)
                    ),
                    schema: Value::Object((*t.input_schema).clone()),
                    annotations: t
                        .annotations
                        .as_ref()
                        .and_then(|a| serde_json::to_value(a).ok()),
                    connection: Arc::clone(connection),
                }
            })
            .collect()
    }
}

impl Tool for ServerTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn schema(&self) -> Value {
        self.schema.clone()
    }
    fn read_only(&self) -> bool {
        false
    }
    fn annotations(&self) -> Option<Value> {
        self.annotations.clone()
    }
    fn unavailable(&self) -> Option<String> {
        self.connection.dead()
    }
    fn classify(&self, _: &Arguments) -> Result<Classification, ClassifyError> {
        Ok(Classification::changes(
            &[Effect::Exec, Effect::Network],
            Vec::new(),
        ))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let result = self
            .connection
            .call(&self.remote, call.arguments().as_map().clone())
            .map_err(ToolError::Server)?;
        let text = result_text(&result);
        if result.is_error == Some(true) {
            return Err(ToolError::Server(format!(
                "the tool reported an error: {text}"
            )));
        }
        Ok(Output::text(text))
    }
}

/// The text of a result: its text blocks, other blocks named, structured content when there
/// is no text; cut at [`RESULT_KEPT`].
fn result_text(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(_) => "[an image, not shown]".to_owned(),
            ContentBlock::Audio(_) => "[audio, not shown]".to_owned(),
            ContentBlock::Resource(_) => "[an embedded resource, not shown]".to_owned(),
            ContentBlock::ResourceLink(r) => format!("[a resource link: {}]", r.uri),
            _ => "[content of a kind Reasonix does not show]".to_owned(),
        });
    }
    if parts.is_empty()
        && let Some(s) = &result.structured_content
    {
        parts.push(s.to_string());
    }
    shorten(&parts.join("\n"), RESULT_KEPT, Keep::HeadAndTail).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_split_into_server_and_tool() {
        assert_eq!(server_of("mcp__files__read_file"), Some("files"));
        assert_eq!(server_of("mcp__files"), None);
        assert_eq!(server_of("bash"), None);
        assert_eq!(connect_name("files"), "mcp_connect__files");
    }
}
