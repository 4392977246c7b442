//! How a call ends: its outcome, the post-tool hooks, its line in the record, its telemetry, and
//! the text the model (or the MCP client) is told.

use serde_json::Value;

use super::decide::Decided;
use super::execute::Ran;
use super::{CallEnd, Session, SessionError};
use crate::agent::config::RecordArguments;
use crate::agent::provider::ProposedCall;
use crate::gate::Verdict;
use crate::record::{
    self, ARGUMENTS_BOUND, AdmissionRecord, Approval, CallRecord, Outcome, RESULT_EXCERPT_BOUND,
    Receipt, now_ms, sha256,
};
use crate::text::{Keep, shorten};

/// Why a call failed, in one line of at most about 300 bytes: the tool's error, or how its
/// process ended and the last line it wrote to stderr. `None` unless it failed.
pub(super) fn failure(outcome: Outcome, ran: Option<&Ran>) -> Option<String> {
    if outcome != Outcome::Failed {
        return None;
    }
    let why = match ran.map(|r| &r.result) {
        Some(Err(e)) => e.clone(),
        Some(Ok(output)) => {
            let mut lines = output.text.lines();
            let ended = lines.next().unwrap_or("").to_owned();
            let last_err = output
                .text
                .rsplit_once("--- stderr ---\n")
                .and_then(|(_, err)| err.lines().rev().find(|l| !l.trim().is_empty()));
            match last_err {
                Some(line) => format!("{ended}: {}", line.trim()),
                None => ended,
            }
        }
        None => return None,
    };
    let one_line = why.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(shorten(&one_line, 300, Keep::Head).into_owned())
}

/// The outcome, the exit status, and the whole text the model is told.
pub(super) fn conclude(j: &Decided, ran: Option<&Ran>) -> (Outcome, Option<i32>, String) {
    match ran {
        None if j.admission.verdict == Verdict::Invalid => (
            Outcome::Invalid,
            None,
            format!(
                "invalid: {}\nNothing ran. Correct the call and try again.",
                j.admission.reasons.join("; ")
            ),
        ),
        None if j.approval == Some(Approval::Deny) => (
            Outcome::Blocked,
            None,
            match j.approver.as_ref().and_then(|(_, note)| note.as_deref()) {
                Some(note) => format!("blocked: {note}. Nothing ran."),
                None => "blocked: a person declined this call. Nothing ran.".into(),
            },
        ),
        None => (
            Outcome::Blocked,
            None,
            format!(
                "blocked by the host ({} at stage {}): {}\nNothing ran; do not retry the same call.",
                j.admission.verdict,
                j.admission.stage.as_str(),
                j.admission.reasons.join("; ")
            ),
        ),
        Some(Ran {
            result: Err(e),
            unleased: true,
            ..
        }) => (Outcome::Blocked, None, format!("blocked: {e}")),
        Some(Ran { result: Err(e), .. }) => (Outcome::Failed, None, format!("failed: {e}")),
        // A bash writer whose changes were refused: it ran, and nothing it did was applied.
        Some(Ran {
            result: Ok(output),
            discarded: Some(why),
            ..
        }) => (
            Outcome::Blocked,
            output.exit_code,
            format!(
                "blocked: nothing this command changed was applied ({why}). Its output, for what it is worth:\n{}",
                output.text
            ),
        ),
        Some(Ran {
            result: Ok(output), ..
        }) => match output.exit_code {
            Some(code) if code != 0 => (
                Outcome::Failed,
                Some(code),
                format!("failed: {}", output.text),
            ),
            code => (Outcome::Succeeded, code, output.text.clone()),
        },
    }
}

/// What OpenTelemetry export says of an ended call: the `reasonix.*` attributes of its span,
/// and the metrics. (Its jail run is a child span of its own, made where it runs.)
pub(super) fn telemetry_of_call(j: &Decided, ran: Option<&Ran>, record: &CallRecord) {
    use crate::telemetry as t;
    let observed = record
        .receipts
        .iter()
        .filter(|r| matches!(r, Receipt::File { .. } | Receipt::RefusedChange { .. }))
        .count();
    j.admission.record_on(&j.span);
    j.span.record("reasonix.outcome", record.outcome.as_str());
    j.span.record("reasonix.observed_changes", observed as u64);
    let name = |v: serde_json::Result<serde_json::Value>| {
        v.ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    if let Some(a) = &j.approval {
        let answer = name(serde_json::to_value(a));
        let by = j.approver.as_ref().map_or("session".to_owned(), |(by, _)| {
            name(serde_json::to_value(by))
        });
        j.span.record("reasonix.approval", answer.as_str());
        j.span.record("reasonix.approver", by.as_str());
        t::ask_answered(&answer, &by);
    } else if let Some(by) = j.admission.ask_settled_by {
        // The posture (or a pre-tool hook) answered the ask: its verdict is the answer.
        let answer = j.admission.verdict.as_str();
        j.span.record("reasonix.approval", answer);
        j.span.record("reasonix.approver", by);
        t::ask_answered(answer, by);
    }
    t::call_judged(
        &j.call.name,
        j.admission.verdict.as_str(),
        Some(record.outcome.as_str()),
        j.admitted_in,
    );
    if let (Some(ran), Some(_)) = (ran, &j.admission.sandbox) {
        t::jail_ran(&j.call.name, ran.duration_ms, record.outcome.as_str());
    }
}

impl Session {
    /// Ends a call in the record and on the terminal: its line — with the revision of the bundle
    /// that judged it, which the lines after it carry too — and its decision logged, then a line
    /// per connection its processes asked the egress proxy for, then its rewind note settled.
    /// Every way a call ends goes through here (a turn's calls, a goal's check, a served call).
    pub(super) fn end_call(
        &self,
        j: &Decided,
        ran: Option<&Ran>,
        record: &CallRecord,
    ) -> Result<(), SessionError> {
        if j.admission.policy_revision.is_some() {
            self.recorder
                .set_policy_revision(j.admission.policy_revision.clone());
        }
        self.recorder.append(record)?;
        if let Some(log) = &self.decisions {
            log.decide(&j.admission, Some(record.outcome));
        }
        self.record_connections(&record.call_id, ran)?;
        self.settle(ran);
        self.terminal.call_ended(&CallEnd {
            admission: &j.admission,
            record,
            arguments: &j.call.arguments,
        });
        Ok(())
    }

    /// What a call's note in the rewind store names: the run, the call, the tool.
    pub(super) fn note_for(&self, call: &ProposedCall) -> (String, String, String) {
        (self.run_id.clone(), call.id.clone(), call.name.clone())
    }

    /// Each connection the call's processes asked the egress proxy for, a line each, after the
    /// call's own.
    pub(super) fn record_connections(
        &self,
        call_id: &str,
        ran: Option<&Ran>,
    ) -> std::io::Result<()> {
        let Some(Ok(output)) = ran.map(|r| &r.result) else {
            return Ok(());
        };
        for connection in &output.connections {
            self.recorder.append(&record::NetworkRecord {
                run_id: &self.run_id,
                call_id,
                time_ms: now_ms(),
                connection,
            })?;
        }
        Ok(())
    }

    /// Removes a call's note from the rewind store once its line is recorded. One that cannot
    /// be removed is harmless (a rewind sees its call in the record), and is said.
    pub(super) fn settle(&self, ran: Option<&Ran>) {
        if let Some(note) = ran.and_then(|r| r.note.as_deref())
            && let Err(e) = self.store.settle(note)
        {
            tracing::warn!(note = %note.display(), "cannot remove a settled rewind note: {e}");
        }
    }

    /// Ends a call whose result someone is told (the model, or the MCP client that made it):
    /// the post-tool hooks on what they are told, the call's line ([`Session::end_call`]), and
    /// the text they are told, each hook's note after the result, marked as the hook's. A note
    /// changes nothing the record says of the call.
    pub(super) fn finish(
        &self,
        j: &Decided,
        ran: Option<&Ran>,
        outcome: Outcome,
        exit_code: Option<i32>,
        full: &str,
    ) -> Result<(CallRecord, String), SessionError> {
        let told = shorten(full, self.result_bytes, Keep::HeadAndTail).into_owned();
        let post = self.post_tool(j, outcome, exit_code, &told);
        let mut record = self.call_record(j, ran, outcome, exit_code, full);
        record.post_tool = post;
        tracing::info!(
            call_id = %record.call_id,
            tool = %record.tool,
            outcome = record.outcome.as_str(),
            duration_ms = record.duration_ms as u64,
            "call ended"
        );
        if crate::telemetry::on() {
            telemetry_of_call(j, ran, &record);
        }
        self.end_call(j, ran, &record)?;
        let mut content = told;
        for ran in &record.post_tool {
            if let Some(note) = &ran.note {
                content.push_str(&format!("\n[note from {}: {note}]", ran.hook));
            }
        }
        Ok((record, content))
    }

    /// Runs the post-tool hooks on a call that has ended ([`crate::hooks`]), under the gate's
    /// hooks plan: each one's note or failure. Nothing they say changes the outcome.
    pub(super) fn post_tool(
        &self,
        j: &Decided,
        outcome: Outcome,
        exit_code: Option<i32>,
        told: &str,
    ) -> Vec<crate::hooks::PostToolRan> {
        let Some(hooks) = self.gate.hooks() else {
            return Vec::new();
        };
        let name = j.admission.tool.as_deref().unwrap_or(&j.call.name);
        let arguments = serde_json::from_str::<Value>(&j.call.arguments)
            .unwrap_or_else(|_| Value::String(j.call.arguments.clone()));
        let ended = crate::hooks::Ended {
            id: &j.call.id,
            name,
            arguments,
            outcome: outcome.as_str(),
            exit_code,
            result: told,
        };
        let plan = self.gate.hooks_jail();
        let shape = self
            .gate
            .command_shape(plan, crate::sandbox::jail::Writes::None);
        hooks.post_tool(plan, &shape, &ended)
    }

    /// The record line of a call that has ended.
    pub(super) fn call_record(
        &self,
        j: &Decided,
        ran: Option<&Ran>,
        outcome: Outcome,
        exit_code: Option<i32>,
        full: &str,
    ) -> CallRecord {
        CallRecord {
            run_id: self.run_id.clone(),
            time_ms: j.time_ms,
            call_id: j.call.id.clone(),
            tool: j.call.name.clone(),
            arguments: match self.record_arguments {
                RecordArguments::Full => {
                    Some(shorten(&j.call.arguments, ARGUMENTS_BOUND, Keep::Head).into_owned())
                }
                RecordArguments::Digest => None,
            },
            arguments_sha256: sha256(j.call.arguments.as_bytes()),
            admission: AdmissionRecord::of(&j.admission),
            approval: j.approval,
            approver: j.approver.as_ref().map(|(by, _)| *by),
            approval_note: j.approver.as_ref().and_then(|(_, note)| note.clone()),
            lease: ran.map(|r| r.need.clone()),
            sandbox: ran.and(j.admission.sandbox.clone()),
            outcome,
            exit_code,
            failure: failure(outcome, ran),
            started_ms: ran.map(|r| r.started_ms),
            duration_ms: ran.map_or(0, |r| r.duration_ms),
            result_bytes: full.len(),
            result_sha256: sha256(full.as_bytes()),
            result_excerpt: match self.record_arguments {
                RecordArguments::Full if !full.is_empty() => {
                    Some(shorten(full, RESULT_EXCERPT_BOUND, Keep::HeadAndTail).into_owned())
                }
                _ => None,
            },
            receipts: ran.map(|r| r.receipts.clone()).unwrap_or_default(),
            snapshot: ran.map(|r| r.changed.clone()).unwrap_or_default(),
            annotations: j.admission.annotations.clone(),
            replaced_arguments_sha256: j.replaced_sha256.clone(),
            post_tool: Vec::new(),
        }
    }
}
