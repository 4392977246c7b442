//! `submit_plan {plan}`: hands in the plan of a session in plan mode, for review.
//!
//! Only a gate built in plan mode offers it (see the parent module). It touches nothing: no
//! path, no effect, read-only with respect to the workspace, so the plan stage lets it through.
//! Running it only acknowledges the plan; the agent loop sees the call succeed, shows the plan to
//! whoever reviews it, records the decision, and tells the model what was decided.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{SUBMIT_PLAN, object_schema};
use crate::tool::{Arguments, Classification, ClassifyError, Invocation, Output, Tool, ToolError};

/// The longest plan, in characters (JSON Schema's `maxLength` counts characters, so a plan
/// may reach about four times this in bytes; the record cuts it at 64 KiB): a plan is read by a
/// person.
const MAX_PLAN_CHARS: usize = 64 * 1024;

pub(super) struct SubmitPlan;

impl Tool for SubmitPlan {
    fn name(&self) -> &str {
        SUBMIT_PLAN
    }
    fn description(&self) -> &str {
        "Hand in your plan for review. The session is in plan mode: only read-only calls run, \
         and every change waits until a plan is approved. Say what you will change, where and \
         why. Once the plan is approved the session goes on in normal mode and you carry it out; \
         if it is rejected you get the reviewer's feedback."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "plan": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_PLAN_CHARS,
                    "description": "The plan: the changes you will make, where, and why.",
                },
            }),
            &["plan"],
        )
    }
    fn read_only(&self) -> bool {
        true
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        args.required_str("plan")?;
        Ok(Classification {
            effects: BTreeSet::new(),
            paths: Vec::new(),
            read_only: true,
            analysed: true,
            bash: None,
            starts_process: false,
            environment: Vec::new(),
        })
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let plan = call.arguments().str("plan").unwrap_or_default();
        Ok(Output::text(format!(
            "the plan ({} bytes) was handed in for review",
            plan.len()
        )))
    }
}
