//! The approver of `reasonix mcp serve` when the client can ask its user: an `ask` goes to the
//! user of the MCP client that made the call, through MCP elicitation (`elicitation/create`,
//! form mode). It is the approve step of the path for a served call, after the gate and its
//! hooks, before the lease.
//!
//! The client is sent a message that names the call — its tool, arguments (cut to
//! [`ARGUMENTS_SHOWN`] bytes), effects and paths — and the host's reason for asking, with a
//! requested schema of one required boolean, `approve`. Only `accept` with `approve: true` runs
//! the call, once. Everything else blocks it, and the call's result and record line say which:
//! `approve: false`, `decline`, `cancel`, an answer without a boolean `approve`, an error from
//! the client, or no answer within the timeout. An approval never outlives its call: each ask is
//! put to the user again.
//!
//! The record names the approver `mcp_elicitation`, with the answer in words
//! (`approval_note`).
//!
//! # Caveats
//!
//! An approver answers synchronously (the gate's approve step and the egress proxy call it from
//! code that does not await), while the elicitation is a request on the MCP connection. So the
//! request is made on the server's runtime and the calling thread waits for its answer; a
//! worker of a multi-thread runtime hands its other tasks over first
//! ([`tokio::task::block_in_place`]). The server must run on a multi-thread runtime (`reasonix
//! mcp serve` does): a current-thread one would wait on itself.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer, RoleServer, ServiceError};
use serde_json::Value;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::approver::{Answer, Approver, Ruling};
use crate::gate::Admission;
use crate::record::ApproverKind;
use crate::text::{Keep, shorten};

/// The most of a call's arguments the message shows, in bytes.
pub const ARGUMENTS_SHOWN: usize = 1024;

/// The property of the requested schema that approves the call.
pub const APPROVE: &str = "approve";

/// Asks the MCP client's user.
pub struct Elicit {
    peer: Peer<RoleServer>,
    client: String,
    timeout: Duration,
    /// The server's runtime, on which the request is made.
    runtime: Handle,
}

impl Elicit {
    /// Asks through `peer`, on the runtime of `runtime` (the server's), waiting at most
    /// `timeout` for each answer; `None` when the client declared no form elicitation at
    /// initialize (it could not be asked).
    pub fn new(peer: Peer<RoleServer>, runtime: Handle, timeout: Duration) -> Option<Elicit> {
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return None;
        }
        Some(Elicit {
            client: client_name(&peer),
            peer,
            timeout,
            runtime,
        })
    }

    /// The client, as its `clientInfo` names it (`name version`).
    pub fn client(&self) -> &str {
        &self.client
    }
}

/// The client as its `clientInfo` names it at initialize.
pub fn client_name(peer: &Peer<RoleServer>) -> String {
    match peer.peer_info() {
        Some(info) => format!("{} {}", info.client_info.name, info.client_info.version),
        None => "an MCP client that did not initialize".to_owned(),
    }
}

impl Approver for Elicit {
    fn ask(&self, admission: &Admission) -> Answer {
        self.rule(admission, None).answer
    }

    fn rule(&self, admission: &Admission, arguments: Option<&str>) -> Ruling {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message(admission, arguments),
            requested_schema: schema(),
        };
        // The request runs on the server's runtime, which reads the client's answer; this
        // thread waits for it.
        let (peer, timeout) = (self.peer.clone(), self.timeout);
        let (tx, rx) = std::sync::mpsc::channel();
        self.runtime.spawn(async move {
            let answered = peer
                .create_elicitation_with_timeout(params, Some(timeout))
                .await;
            let _ = tx.send(answered);
        });
        let wait = || rx.recv();
        let answered = match Handle::try_current() {
            // A worker of a multi-thread runtime hands its tasks to another before it waits.
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            // A plain thread, or one of a single-threaded runtime's blocking pool (the egress
            // proxy judges a connection there).
            _ => wait(),
        };
        match answered {
            Ok(answered) => ruling(answered, &self.client, self.timeout),
            Err(_) => Ruling {
                answer: Answer::Deny,
                by: ApproverKind::McpElicitation,
                note: Some(format!(
                    "the elicitation to the MCP client {} ended without an answer (the server \
                     is stopping)",
                    self.client
                )),
            },
        }
    }
}

/// The requested schema: one required boolean, `approve`.
pub fn schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_bool_with(APPROVE, |b| {
            b.title("Approve this call")
                .description("true runs this call once; false blocks it")
        })
        .description("Reasonix asks whether a tool call may run")
        .build()
        // `build` fails only when a required property is not defined; the one required
        // property is defined just above.
        .expect("the required property `approve` is defined")
}

/// What the client's user is shown: the call and the host's reason for asking. Every string
/// the model chose — the tool's name, the arguments, a connection's id, each path as written
/// and as resolved, the reasons that quote them — is escaped as the terminal prompt escapes it
/// ([`crate::text::visible`]): a newline in a path is shown as `\n`, and cannot forge a line
/// of this message (issue 28, item 4).
pub fn message(admission: &Admission, arguments: Option<&str>) -> String {
    use crate::text::visible;
    let tool = admission
        .tool
        .as_deref()
        .unwrap_or("(a call that names no tool)");
    let mut m = format!(
        "Reasonix asks whether this call may run.\n\nTool: {}",
        visible(tool)
    );
    if let Some(a) = arguments {
        m.push_str(&format!(
            "\nArguments: {}",
            visible(&shorten(a, ARGUMENTS_SHOWN, Keep::Head))
        ));
    }
    if let Some(id) = admission.id.as_deref().filter(|_| arguments.is_none()) {
        m.push_str(&format!("\nConnection: {}", visible(id)));
    }
    if !admission.effects.is_empty() {
        let effects: Vec<&str> = admission.effects.iter().map(|e| e.as_str()).collect();
        m.push_str(&format!("\nEffects: {}", effects.join(", ")));
    }
    let paths: Vec<String> = admission
        .paths
        .iter()
        .map(|p| {
            format!(
                "{} ({})",
                visible(p.path.as_deref().unwrap_or(&p.written)),
                match p.access {
                    crate::vocab::Access::Read => "read",
                    crate::vocab::Access::Write => "write",
                }
            )
        })
        .collect();
    if !paths.is_empty() {
        m.push_str(&format!("\nPaths: {}", paths.join(", ")));
    }
    m.push_str(&format!(
        "\n\nWhy the host asks: {}\n\nSet `{APPROVE}` to true to run it once; anything else \
         blocks it.",
        admission
            .reasons
            .iter()
            .map(|r| visible(r))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    m
}

/// The answer to one elicitation, as a ruling: only `accept` with `approve: true` runs the call.
pub fn ruling(
    answered: Result<ElicitResult, ServiceError>,
    client: &str,
    timeout: Duration,
) -> Ruling {
    let user = format!("the user of the MCP client {client}");
    let (answer, note) = match answered {
        Ok(result) => match result.action {
            ElicitationAction::Accept => {
                match result
                    .content
                    .as_ref()
                    .and_then(|c| c.get(APPROVE))
                    .and_then(Value::as_bool)
                {
                    Some(true) => (
                        Answer::Once,
                        format!("{user} approved it through elicitation (accept, approve: true)"),
                    ),
                    Some(false) => (
                        Answer::Deny,
                        format!("{user} did not approve it (elicitation: accept, approve: false)"),
                    ),
                    None => (
                        Answer::Deny,
                        format!(
                            "{user} accepted the elicitation without a boolean `{APPROVE}` (got \
                             {}), which approves nothing",
                            shorten(
                                &result.content.unwrap_or(Value::Null).to_string(),
                                200,
                                Keep::Head
                            )
                        ),
                    ),
                }
            }
            ElicitationAction::Decline => (
                Answer::Deny,
                format!("{user} declined it (elicitation: decline)"),
            ),
            ElicitationAction::Cancel => (
                Answer::Deny,
                format!("{user} cancelled the question (elicitation: cancel)"),
            ),
            other => (
                Answer::Deny,
                format!("{user} answered with an action Reasonix does not know ({other:?})"),
            ),
        },
        Err(ServiceError::Timeout { .. }) => (
            Answer::Deny,
            format!(
                "{user} did not answer within {} s (the elicitation timed out)",
                timeout.as_secs_f64()
            ),
        ),
        Err(ServiceError::McpError(e)) => (
            Answer::Deny,
            format!(
                "the MCP client {client} could not ask its user (elicitation error {}: {})",
                e.code.0, e.message
            ),
        ),
        Err(e) => (
            Answer::Deny,
            format!("the elicitation to the MCP client {client} failed: {e}"),
        ),
    };
    Ruling {
        answer,
        by: ApproverKind::McpElicitation,
        note: Some(note),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::ErrorData;
    use serde_json::json;

    fn rule(answered: Result<ElicitResult, ServiceError>) -> Ruling {
        ruling(answered, "probe 1.0", Duration::from_secs(5))
    }

    fn accept(content: Value) -> Result<ElicitResult, ServiceError> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }

    #[test]
    fn only_accept_with_approve_true_runs_the_call() {
        let yes = rule(accept(json!({"approve": true})));
        assert_eq!(yes.answer, Answer::Once);
        assert_eq!(yes.by, ApproverKind::McpElicitation);
        assert!(yes.note.unwrap().contains("approved it"));
    }

    #[test]
    fn every_other_answer_blocks_and_says_which() {
        let cases: Vec<(Result<ElicitResult, ServiceError>, &str)> = vec![
            (accept(json!({"approve": false})), "approve: false"),
            (
                accept(json!({"approve": "yes"})),
                "without a boolean `approve`",
            ),
            (accept(json!({})), "without a boolean `approve`"),
            (
                Ok(ElicitResult::new(ElicitationAction::Accept)),
                "without a boolean `approve` (got null)",
            ),
            (
                Ok(ElicitResult::new(ElicitationAction::Decline)),
                "declined it (elicitation: decline)",
            ),
            (
                Ok(ElicitResult::new(ElicitationAction::Cancel)),
                "cancelled the question (elicitation: cancel)",
            ),
            (
                Err(ServiceError::Timeout {
                    timeout: Duration::from_secs(5),
                }),
                "did not answer within 5 s",
            ),
            (
                Err(ServiceError::McpError(ErrorData::invalid_request(
                    "Elicitation not supported",
                    None,
                ))),
                "could not ask its user (elicitation error -32600: Elicitation not supported)",
            ),
            (
                Err(ServiceError::TransportClosed),
                "failed: Transport closed",
            ),
        ];
        for (answered, says) in cases {
            let r = rule(answered);
            assert_eq!(r.answer, Answer::Deny, "{says}");
            assert_eq!(r.by, ApproverKind::McpElicitation);
            let note = r.note.unwrap();
            assert!(note.contains(says), "{note} lacks {says}");
            assert!(note.contains("probe 1.0"), "{note}");
        }
    }

    #[test]
    fn the_schema_is_one_required_boolean() {
        let s = serde_json::to_value(schema()).unwrap();
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], json!([APPROVE]));
        assert_eq!(s["properties"][APPROVE]["type"], "boolean");
        assert_eq!(s["properties"].as_object().unwrap().len(), 1);
    }
}
