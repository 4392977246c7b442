//! Plan review: a session in plan mode hands the plan `submit_plan` carries to its reviewer,
//! and an approved plan swaps in the normal-mode gate.

use std::sync::Arc;

use serde_json::Value;

use super::decide::asking;
use super::{Session, SessionError};
use crate::agent::approver::{PlanAnswer, PlanReviewer};
use crate::agent::config::RecordArguments;
use crate::agent::provider::ProposedCall;
use crate::gate::{Gate, GateMode};
use crate::record::{PLAN_BOUND, PlanDecision, PlanRecord, Reviewer, now_ms, sha256};
use crate::text::{Keep, shorten};
use crate::tool::builtin::SUBMIT_PLAN;

/// What a session in plan mode does with the plan it is handed.
pub(super) struct Planning {
    pub(super) reviewer: Arc<dyn PlanReviewer>,
    /// The gate to go on with once a plan is approved: same specification, normal mode.
    pub(super) then: Arc<Gate>,
}

impl Session {
    /// Plan mode: the session's gate must be in [`GateMode::Plan`]; `then` is the gate it goes on
    /// with once `reviewer` approves a plan — built the same way in [`GateMode::Normal`], over the
    /// same workspace. A gate never changes once built, so approval swaps gates rather than
    /// switching one.
    ///
    /// # Errors
    ///
    /// [`SessionError::Setup`] when the session's gate is not in plan mode, `then` is not in
    /// normal mode, or the two gates are over different workspaces.
    pub fn plan(
        mut self,
        reviewer: Arc<dyn PlanReviewer>,
        then: Arc<Gate>,
    ) -> Result<Session, SessionError> {
        if self.gate.mode() != GateMode::Plan || then.mode() != GateMode::Normal {
            return Err(SessionError::Setup(format!(
                "a plan needs a gate in plan mode and one in normal mode to go on with (given: {} and {})",
                self.gate.mode(),
                then.mode()
            )));
        }
        if self.gate.roots().workspace() != then.roots().workspace() {
            return Err(SessionError::Setup(
                "the gate to go on with after the plan is over another workspace".into(),
            ));
        }
        self.system_note(&format!(
            "The session is in plan mode: only read-only calls run, and every change is blocked \
             until a plan is approved. Look around, then hand in your plan with {SUBMIT_PLAN}. \
             Once it is approved, carry it out."
        ));
        // The hooks the planning gate runs run after the plan too (hooks only narrow).
        let then = match (self.gate.hooks(), then.hooks()) {
            (Some(hooks), None) => Arc::new(then.with_hooks(Arc::clone(hooks))),
            _ => then,
        };
        self.planning = Some(Planning { reviewer, then });
        Ok(self)
    }

    /// Has a plan handed in with `submit_plan` reviewed, when the session is in plan mode:
    /// returns what the model is told, the `plan` line, and the plan when the run ends with it.
    /// An approved plan swaps in the normal-mode gate.
    pub(super) fn review(
        &mut self,
        call: &ProposedCall,
    ) -> Option<(String, PlanRecord, Option<String>)> {
        let planning = self.planning.as_ref()?;
        // The gate validated the arguments against the tool's schema: `plan` is a string.
        let plan = serde_json::from_str::<Value>(&call.arguments)
            .ok()
            .and_then(|v| v.get("plan").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let answer = planning.reviewer.review(&plan);
        let (decision, by, feedback, told) = match &answer {
            PlanAnswer::Approve | PlanAnswer::SelfApprove => {
                let (by, who) = if answer == PlanAnswer::Approve {
                    (Reviewer::Person, "a person approved the plan")
                } else {
                    (
                        Reviewer::ApprovePlan,
                        "the run approved its own plan, as it was told to (--approve-plan)",
                    )
                };
                (
                    PlanDecision::Approved,
                    Some(by),
                    None,
                    format!(
                        "approved: {who}. The session is now in normal mode: changes may run, \
                         each still judged by the policy. Carry out the plan."
                    ),
                )
            }
            PlanAnswer::Reject(feedback) => {
                let said = if feedback.trim().is_empty() {
                    "The reviewer gave no reason.".to_owned()
                } else {
                    format!("The reviewer says: {feedback}")
                };
                (
                    PlanDecision::Rejected,
                    Some(Reviewer::Person),
                    Some(feedback.clone()),
                    format!(
                        "rejected: the plan was not approved. {said}\nRevise the plan and hand \
                         it in again with {SUBMIT_PLAN}; changes still wait for an approved plan."
                    ),
                )
            }
            PlanAnswer::End => (
                PlanDecision::Unreviewed,
                None,
                None,
                "the plan was handed in; nobody can review it in this run, so the run ends \
                 with it. No change was admitted."
                    .to_owned(),
            ),
        };
        let line = PlanRecord {
            run_id: self.run_id.clone(),
            time_ms: now_ms(),
            event: "plan",
            call_id: call.id.clone(),
            plan: match self.record_arguments {
                RecordArguments::Full => Some(shorten(&plan, PLAN_BOUND, Keep::Head).into_owned()),
                RecordArguments::Digest => None,
            },
            plan_sha256: sha256(plan.as_bytes()),
            plan_bytes: plan.len(),
            decision,
            by,
            feedback,
        };
        let mut end = None;
        match decision {
            PlanDecision::Approved => {
                if let Some(planning) = self.planning.take() {
                    self.gate = asking(planning.then, &self.approver);
                    // MCP servers started read-only while planning start again writable with
                    // their next call (issue 25).
                    if let Some(servers) = &mut self.servers {
                        servers.set_writes(crate::sandbox::jail::Writes::Direct);
                    }
                    self.plan_approved = true;
                }
            }
            PlanDecision::Rejected => {}
            PlanDecision::Unreviewed => end = Some(plan),
        }
        Some((told, line, end))
    }
}
