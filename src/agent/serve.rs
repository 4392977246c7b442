//! The gated tools served over MCP (`reasonix mcp serve`): any MCP client — a desktop
//! assistant, an IDE, another agent — gets Reasonix's tools judged, jailed and recorded.
//!
//! `tools/list` answers the gate's registry: the builtin tools and the tools of the MCP servers
//! configured behind the gate, each with its canonical schema. `tools/call` is one call of an
//! agent [`Session`] ([`Session::call`]): the same gate, approver, leases, jail and record as
//! `reasonix run`, with no model. A call that is `invalid`, blocked or failed comes back as a
//! tool result with `isError: true` and the host's words (`blocked by the host (deny at stage
//! policy): …`); one that succeeded, as its output. Calls are taken one at a time, in the order
//! they arrive.
//!
//! Who answers an `ask` is the session's approver; the command line serves with the unattended
//! posture, so the gate turns an ask into `defaults.unattended` before any approver is asked.
//! MCP elicitation (asking the client's user) is not implemented.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use crate::agent::provider::{EventStream, Provider, Request};
use crate::agent::session::{Session, Terminal};
use crate::record::Outcome;
use crate::tool::ToolSchema;

/// The tools of a session, served.
pub struct Gated {
    session: Mutex<Session>,
    tools: Vec<Tool>,
}

impl Gated {
    /// Serves `session`'s calls; `tools` are the schemas its gate offers
    /// ([`crate::Registry::schemas`]).
    pub fn new(session: Session, tools: Vec<ToolSchema>) -> Gated {
        let tools = tools
            .into_iter()
            .map(|t| {
                let schema = match t.parameters {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                Tool::new(t.name, t.description, Arc::new(schema))
            })
            .collect();
        Gated {
            session: Mutex::new(session),
            tools,
        }
    }

    /// Serves over stdin and stdout until the client goes away.
    pub async fn serve_stdio(self) -> Result<(), String> {
        let service = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("the MCP client did not initialize: {e}"))?;
        service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP service stopped: {e}"))
    }
}

impl ServerHandler for Gated {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("reasonix", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools behind the Reasonix gate: every call is judged by policy, run in the jail \
                 and recorded. A result with isError says how the call ended: invalid (correct \
                 it), blocked (the host refused it; do not retry it unchanged) or failed.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default()).to_string();
        let mut session = self.session.lock().await;
        let (outcome, text) = session
            .call(request.name.as_ref(), arguments)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let content = vec![ContentBlock::text(text)];
        Ok(match outcome {
            Outcome::Succeeded => CallToolResult::success(content),
            _ => CallToolResult::error(content),
        }
        .into())
    }
}

/// The provider of a session with no model: calls come from the MCP client.
pub struct NoModel;

impl Provider for NoModel {
    fn describe(&self) -> String {
        "no model (reasonix mcp serve)".into()
    }
    fn stream(&self, _request: Request) -> EventStream {
        Box::pin(futures_util::stream::empty())
    }
}

/// The terminal of a served session: stdout is the MCP transport, so it shows nothing.
pub struct Quiet;

impl Terminal for Quiet {
    fn text(&self, _delta: &str) {}
}
