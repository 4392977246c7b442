//! A call decided: the gate's admission, then the approver's answer to an `ask` (or an earlier
//! "allow for the session"), ready to run or refused.

use std::collections::HashSet;
use std::sync::Arc;

use super::Session;
use crate::agent::approver::{Answer, Approver};
use crate::agent::provider::ProposedCall;
use crate::call::{Call, RawArguments};
use crate::gate::{Admission, Admitted, Gate, Judgement};
use crate::record::{Approval, ApproverKind, now_ms, sha256};

/// A judged call of the current turn.
pub(super) struct Decided {
    /// When the gate judged it (ms since the Unix epoch).
    pub(super) time_ms: u128,
    pub(super) call: ProposedCall,
    pub(super) admission: Admission,
    pub(super) approval: Option<Approval>,
    /// Who was asked, and what they said beyond the answer.
    pub(super) approver: Option<(ApproverKind, Option<String>)>,
    pub(super) runnable: Option<Admitted>,
    /// The sha256 of the arguments a hook put in place of the model's, when one did.
    pub(super) replaced_sha256: Option<String>,
    /// The call's span (`execute_tool`), from its judgement to its record line.
    pub(super) span: tracing::Span,
    /// How long the gate took to judge it.
    pub(super) admitted_in: std::time::Duration,
}

/// The gate with the session's approver answering an `ask` on a connection a running command
/// asks the egress proxy for.
///
/// "Allow for the session" covers the same host and port again (the call's id names them) for
/// the rest of the session.
pub(super) fn asking(gate: Arc<Gate>, approver: &Arc<dyn Approver>) -> Arc<Gate> {
    let approver = Arc::clone(approver);
    let approved: std::sync::Mutex<HashSet<String>> = std::sync::Mutex::default();
    Arc::new(
        gate.with_egress_asker(Arc::new(move |admission: &Admission| {
            let key = admission.id.clone().unwrap_or_default();
            if approved.lock().is_ok_and(|a| a.contains(&key)) {
                return true;
            }
            match approver.ask(admission) {
                Answer::Once => true,
                Answer::Session => {
                    if let Ok(mut a) = approved.lock() {
                        a.insert(key);
                    }
                    true
                }
                Answer::Deny => false,
            }
        })),
    )
}

impl Session {
    /// The gate, then the approver for an ask.
    pub(super) fn decide(&mut self, call: ProposedCall) -> Decided {
        let proposed = Call {
            id: Some(call.id.clone()),
            name: call.name.clone(),
            arguments: RawArguments::Text(call.arguments.clone()),
        };
        let span = tracing::info_span!(
            parent: &self.span,
            "execute_tool",
            "otel.name" = format!("execute_tool {}", crate::text::visible(&call.name)),
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = %crate::text::visible(&call.name),
            "gen_ai.tool.call.id" = %crate::text::visible(&call.id),
            "reasonix.tool" = tracing::field::Empty,
            "reasonix.verdict" = tracing::field::Empty,
            "reasonix.stage" = tracing::field::Empty,
            "reasonix.rules" = tracing::field::Empty,
            "reasonix.posture" = tracing::field::Empty,
            "reasonix.policy_revision" = tracing::field::Empty,
            "reasonix.outcome" = tracing::field::Empty,
            "reasonix.observed_changes" = tracing::field::Empty,
            "reasonix.approval" = tracing::field::Empty,
            "reasonix.approver" = tracing::field::Empty,
        );
        // The gate's own `call` span (and its stages) nest under this one.
        let entered = span.enter();
        let otel = crate::telemetry::parent(crate::telemetry::context_of(&span));
        let began = std::time::Instant::now();
        // The gate's last stage runs the pre-tool hooks.
        let judgement = self.gate.admit(&proposed);
        let admitted_in = began.elapsed();
        drop(otel);
        drop(entered);
        let time_ms = now_ms();
        let (admission, approval, approver, runnable) = match judgement {
            Judgement::Refused(admission) => (admission, None, None, None),
            Judgement::Allowed(admitted) => {
                (admitted.admission().clone(), None, None, Some(admitted))
            }
            Judgement::Ask(pending) => {
                let asked = pending.admission();
                let (approval, approver) =
                    if self.approved.covers(&call.name, &call.arguments, asked) {
                        (Approval::Session, None)
                    } else {
                        let ruling = self.approver.rule(asked, Some(&call.arguments));
                        if ruling.answer == Answer::Session {
                            self.approved.approve(&call.name, &call.arguments, asked);
                        }
                        let approval = Approval::from(ruling.answer);
                        (approval, Some((ruling.by, ruling.note)))
                    };
                let admission = pending.admission().clone();
                let runnable = (approval != Approval::Deny).then(|| pending.approve());
                (admission, Some(approval), approver, runnable)
            }
        };
        let replaced_sha256 = admission.replacement.as_ref().and_then(|arguments| {
            serde_json::to_string(arguments)
                .ok()
                .map(|text| sha256(text.as_bytes()))
        });
        Decided {
            time_ms,
            call,
            admission,
            approval,
            approver,
            runnable,
            replaced_sha256,
            span,
            admitted_in,
        }
    }
}
