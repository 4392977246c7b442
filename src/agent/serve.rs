//! The gated tools served over MCP (`reasonix mcp serve`): any MCP client — a desktop
//! assistant, an IDE, another agent — gets Reasonix's tools judged, jailed and recorded.
//!
//! `tools/list` answers the gate's registry: the builtin tools and the tools of the MCP servers
//! configured behind the gate, each with its canonical schema. `tools/call` is one call of an
//! agent [`Session`] ([`Session::call`]): the same gate, approver, leases, jail, post-tool hooks
//! and record as `reasonix run`, with no model. A call that is `invalid`, blocked or failed
//! comes back as a tool result with `isError: true` and the host's words (`blocked by the host
//! (deny at stage policy): …`); one that succeeded, as its output. Calls are taken one at a
//! time, in the order they arrive.
//!
//! Who answers an `ask` ([`Asks`]) is settled once, at the client's first call, from what it
//! declared at initialize, and written to the record (`event: mcp_client`):
//!
//! - [`Asks::ClientOrPosture`] (the command line's default): a client that declared form
//!   elicitation gets each ask put to its user ([`super::elicit`]); the session's gate goes
//!   over to the `interactive` posture for that. A client that did not gets the posture the
//!   session was built with (unattended), and a call that posture blocked says why nobody was
//!   asked.
//! - [`Asks::Posture`] (a posture given on the command line): the posture, whatever the client
//!   offers.

use std::sync::Arc;

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use super::elicit::{self, Elicit};
use crate::agent::provider::{EventStream, Provider, Request};
use crate::agent::session::{Session, Terminal};
use crate::gate::Stage;
use crate::policy::Posture;
use crate::record::Outcome;
use crate::tool::ToolSchema;

/// Who answers an `ask` of a served call.
#[derive(Clone, Debug)]
pub enum Asks {
    /// The posture the session's gate was built with, whatever the client offers; `why` says
    /// why (`--posture unattended was given`).
    Posture {
        /// Why the client's user is not asked, for the record and a blocked call's result.
        why: String,
    },
    /// The client's user, through MCP elicitation, when the client declared it (each answer
    /// awaited at most `timeout`); otherwise the posture the session's gate was built with.
    ClientOrPosture {
        /// How long the user has to answer one ask.
        timeout: Duration,
    },
}

/// The session, and who answers its asks.
struct Served {
    session: Session,
    settled: Settled,
}

/// Who answers asks, once settled at the first call.
enum Settled {
    /// Not yet: no call has come.
    Not,
    /// The client's user, through elicitation.
    Client,
    /// The session's posture; why the client's user is not asked (a blocked call's result
    /// says it).
    Posture(String),
}

/// The tools of a session, served.
pub struct Gated {
    served: Mutex<Served>,
    tools: Vec<Tool>,
    asks: Asks,
}

impl Gated {
    /// Serves `session`'s calls; `tools` are the schemas its gate offers
    /// ([`crate::Registry::schemas`]); `asks` says who answers an ask.
    pub fn new(session: Session, tools: Vec<ToolSchema>, asks: Asks) -> Gated {
        let tools = tools
            .into_iter()
            // Never runs as a call (the egress proxy judges each connection a command makes):
            // offered, a client's user would be asked about what cannot run (issue 28, item 5).
            .filter(|t| t.name != crate::egress::CONNECT_TOOL)
            .map(|t| {
                let schema = match t.parameters {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                Tool::new(t.name, t.description, Arc::new(schema))
            })
            .collect();
        Gated {
            served: Mutex::new(Served {
                session,
                settled: Settled::Not,
            }),
            tools,
            asks,
        }
    }

    /// Settles who answers asks, once: the client's user when the client declared elicitation
    /// and no posture was forced, else the session's posture. Says which in the record.
    fn settle(&self, served: &mut Served, peer: &Peer<RoleServer>) -> Result<(), ErrorData> {
        if !matches!(served.settled, Settled::Not) {
            return Ok(());
        }
        let client = elicit::client_name(peer);
        let posture = served.session.posture();
        let (settled, detail) = match &self.asks {
            Asks::Posture { why } => (
                Settled::Posture(why.clone()),
                format!(
                    "the MCP client {client}: an ask follows the {} posture ({why})",
                    posture.as_str()
                ),
            ),
            Asks::ClientOrPosture { timeout } => {
                match Elicit::new(peer.clone(), tokio::runtime::Handle::current(), *timeout) {
                    Some(asker) => {
                        served
                            .session
                            .answer_asks(std::sync::Arc::new(asker), Posture::Interactive);
                        (
                            Settled::Client,
                            format!(
                                "the MCP client {client} declared elicitation: an ask goes to its \
                                 user, who has {} s to answer",
                                timeout.as_secs_f64()
                            ),
                        )
                    }
                    None => {
                        let why = format!(
                            "the MCP client {client} declared no elicitation capability, so its \
                             user cannot be asked"
                        );
                        let detail =
                            format!("{why}: an ask follows the {} posture", posture.as_str());
                        (Settled::Posture(why), detail)
                    }
                }
            }
        };
        served
            .session
            .record_event("mcp_client", detail)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        served.settled = settled;
        Ok(())
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
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name.as_ref() == crate::egress::CONNECT_TOOL {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "{} is not a tool to call: the egress proxy judges each connection a bash command's processes make; nothing was asked or run",
                crate::egress::CONNECT_TOOL
            ))])
            .into());
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default()).to_string();
        let mut served = self.served.lock().await;
        self.settle(&mut served, &context.peer)?;
        let ended = served
            .session
            .call(request.name.as_ref(), arguments)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut text = ended.text;
        // The posture blocked what a person could have allowed: say why nobody was asked.
        if let Settled::Posture(why) = &served.settled
            && ended.record.outcome == Outcome::Blocked
            && ended.record.admission.stage == Stage::Approve
        {
            text.push_str(&format!("\n(Nobody was asked: {why}.)"));
        }
        let content = vec![ContentBlock::text(text)];
        Ok(match ended.record.outcome {
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
