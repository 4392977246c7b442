//! Goals: when the model stops, the goal's command runs through the same gate as any call, and
//! the run ends only once it exits 0.

use super::record_line::conclude;
use super::{Session, SessionError};
use crate::agent::provider::ProposedCall;
use crate::record::{Approval, EvidenceRecord, Outcome, now_ms, sha256};
use crate::text::{Keep, shorten};

/// A goal the run works toward, and the command that says it is met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Goal {
    /// The goal, in words (the model is told it).
    pub text: String,
    /// A bash command that exits 0 once the goal is met.
    pub verify: String,
}

/// What a check of the goal found.
pub(super) enum Check {
    Met,
    /// Not met: what the model is told.
    NotMet(String),
    /// The check did not run: why.
    Blocked(String),
}

impl Session {
    /// A goal: when the model stops, `goal.verify` runs as a bash call through the gate; the run
    /// ends when it exits 0, and otherwise goes on with its output as a new user turn.
    pub fn goal(mut self, goal: Goal) -> Session {
        self.system_note(&format!(
            "The run has a goal: {}. When you stop, the host checks it by running `{}`; if the \
             check fails you are told so, with its output, and you go on.",
            goal.text, goal.verify
        ));
        self.goal = Some(goal);
        self
    }

    /// Checks the goal: its command as a bash call through the gate, the approver, the lease
    /// and the jail, recorded as a call and as an `evidence` line.
    pub(super) async fn verify(&mut self, goal: &Goal) -> Result<Check, SessionError> {
        self.rounds += 1;
        let round = self.rounds;
        let call = ProposedCall {
            id: self.fresh_id(format!("verify_{round}")),
            name: "bash".into(),
            arguments: serde_json::json!({ "command": goal.verify }).to_string(),
        };
        let mut j = self.decide(call);
        let ran = self.run_alone(&mut j).await;
        let (outcome, exit_code, full) = conclude(&j, ran.as_ref());
        let record = self.call_record(&j, ran.as_ref(), outcome, exit_code, &full);
        self.end_call(&j, ran.as_ref(), &record)?;
        let met = ran.is_some() && exit_code == Some(0) && outcome == Outcome::Succeeded;
        let evidence = EvidenceRecord {
            run_id: self.run_id.clone(),
            time_ms: now_ms(),
            event: "evidence",
            kind: "verification",
            round,
            call_id: j.call.id.clone(),
            goal: goal.text.clone(),
            command: goal.verify.clone(),
            outcome,
            exit_code,
            met,
            output_bytes: full.len(),
            output_sha256: sha256(full.as_bytes()),
        };
        self.recorder.append(&evidence)?;
        self.terminal.verified(&evidence);
        if ran.is_none() {
            let why = if j.approval == Some(Approval::Deny) {
                "a person declined the goal's check".to_owned()
            } else {
                format!(
                    "the gate blocked the goal's check `{}` ({} at stage {}): {}",
                    goal.verify,
                    j.admission.verdict,
                    j.admission.stage.as_str(),
                    j.admission.reasons.first().map_or("", String::as_str)
                )
            };
            return Ok(Check::Blocked(why));
        }
        if met {
            return Ok(Check::Met);
        }
        let how = match exit_code {
            Some(code) => format!("exited with status {code}"),
            None => "did not finish".to_owned(),
        };
        Ok(Check::NotMet(format!(
            "The goal is not met yet (check {round}): `{}` {how}.\nThe goal: {}\nIts output:\n{}\nKeep working until the goal is met.",
            goal.verify,
            goal.text,
            shorten(&full, self.result_bytes, Keep::HeadAndTail)
        )))
    }
}
