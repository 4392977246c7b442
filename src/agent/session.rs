//! One agent session: the turn loop.
//!
//! 1. Build the request from the conversation and the registry's schemas; stream the answer,
//!    showing text as it arrives and assembling call fragments by index.
//! 2. An attempt that fails before its answer is whole ([`Event::AttemptFailed`]: a cut stream,
//!    a malformed chunk, a stall, a 429…) is dropped whole — its text, reasoning and call
//!    fragments — and the provider asks again; what it had shown is marked discarded, and the
//!    record gets an `attempt_failed` line. A stream that fails for good (retries spent, a 400)
//!    ends the run with a provider error: it is recorded, and no call of the unfinished answer
//!    is judged or run.
//! 3. No call: the model is done. Otherwise each call goes through the gate, in order.
//! 4. An `ask` goes to the approver (or is settled by an earlier "allow for the session" of the
//!    same exact call). A refused or declined call holds nothing and runs nothing.
//! 5. If every call that may run is read-only, they run at once; otherwise one after the other.
//!    Each takes its lease first ([`crate::lease`]) and runs on a blocking thread.
//! 6. Each result is recorded whole (size and sha256) and sent back cut to `result_bytes`, with
//!    its outcome: `invalid`, `blocked`, `failed` or `succeeded`.
//! 7. Repeat until the model stops or `max_steps` turns have passed.
//!
//! Three controls ride on the same path:
//!
//! - **Plan** ([`Session::plan`]): the session starts with a gate in plan mode, whose plan stage
//!   blocks every call that is not read-only. When `submit_plan` succeeds, the plan goes to the
//!   [`PlanReviewer`]: approved, the session swaps in the second gate it was given — built from
//!   the same specification in normal mode (gates are immutable) — and goes on; rejected, the
//!   feedback goes back to the model as the call's result; unreviewable (unattended), the run
//!   ends with the plan. A `plan` line records the plan and the decision.
//! - **Goal** ([`Session::goal`]): when the model stops (after its plan is approved, in plan
//!   mode: before, it is told to hand one in), the goal's command runs as a `bash` call
//!   through the same gate, approver, lease and jail as any other. Exit 0: the goal is met and
//!   the run ends. Otherwise its output, cut to `result_bytes`, goes back as a user turn saying
//!   the goal is not met yet, and the loop goes on until it is met or the turns are spent. A
//!   blocked command ends the run with the reason. Each check is an `evidence` line.
//! - **Snapshots** ([`crate::rewind`]): before a file tool runs, with its lease held, the
//!   previous content of each path it may change is kept beside the record; the `snapshot` of
//!   its call line says what it changed, so `reasonix rewind` can go back.
//! - **MCP restarts** ([`Session::servers`]): before the calls of an answer are judged, each
//!   MCP server one of them names (directly or through `use_capability`) whose connection died
//!   is restarted through [`Servers::restart`] — its connect judged again by the same connect
//!   gate, an ask put to the session's approver — with an `mcp_connect` line marked as a
//!   restart; the session's gates are then rebuilt over the tools it lists now, so the calls
//!   are judged against the new schemas (a tool that vanished is `invalid`, and so is every
//!   tool of a server whose restart was refused or that ran out of restarts, naming why).
//!
//! # Cancel safety
//!
//! [`Session::run`] is not cancel safe: dropping it while a call runs drops the task's handle,
//! but the jailed process is killed only by its own timeout, and the record lacks that call's
//! line. Let a run finish, or end the process.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::Value;

use super::approver::{Answer, Approver, PlanAnswer, PlanReviewer};
use super::config::RecordArguments;
use super::landing;
use super::provider::{
    Event, FailedAttempt, Message, ProposedCall, Provider, ProviderError, Request,
};
use super::servers::Servers;
use crate::call::{Call, RawArguments};
use crate::gate::{Admission, Admitted, Gate, Judgement, Mode, Verdict};
use crate::lease::{Leases, Need};
use crate::record::{
    self, ARGUMENTS_BOUND, AdmissionRecord, Approval, ApproverKind, AttemptRecord, CallRecord,
    EventRecord, EvidenceRecord, FileState, Outcome, PLAN_BOUND, PlanDecision, PlanRecord,
    RESULT_EXCERPT_BOUND, Receipt, Recorder, Reviewer, RunStartRecord, SnapshotFile, now_ms,
    sha256,
};
use crate::rewind::{self, Kept, Store};
use crate::text::{Keep, shorten};
use crate::tool::Output;
use crate::tool::builtin::SUBMIT_PLAN;

/// A call that has ended, as a [`Terminal`] is told of it.
pub struct CallEnd<'a> {
    /// The gate's conclusion.
    pub admission: &'a Admission,
    /// The record line written for it.
    pub record: &'a CallRecord,
    /// The arguments as the model wrote them, whole, whatever the record keeps of them: a
    /// terminal shows what the call touched even when the record holds only a digest.
    pub arguments: &'a str,
}

/// Where a session shows its progress.
pub trait Terminal: Send + Sync {
    /// More of the model's text.
    fn text(&self, delta: &str);
    /// More of the model's reasoning.
    fn reasoning(&self, _delta: &str) {}
    /// An attempt at the answer failed before it was whole: the `text` and `reasoning` shown
    /// from it are void, and `failed.wait` says whether another attempt follows.
    fn attempt_failed(&self, _failed: &FailedAttempt, _text: &str, _reasoning: &str) {}
    /// A call has ended.
    fn call(&self, _admission: &Admission, _record: &CallRecord) {}
    /// A call has ended, with its arguments (by default, [`Terminal::call`]).
    fn call_ended(&self, ended: &CallEnd<'_>) {
        self.call(ended.admission, ended.record);
    }
    /// A plan was reviewed (or could not be), as recorded.
    fn plan_reviewed(&self, _plan: &PlanRecord) {}
    /// The goal was checked, as recorded.
    fn verified(&self, _evidence: &EvidenceRecord) {}
}

/// A call made from outside the model loop ([`Session::call`]), ended.
#[derive(Debug)]
pub struct Served {
    /// Its line in the record.
    pub record: CallRecord,
    /// What the caller is told: the result, bounded, with the post-tool hooks' notes after it.
    pub text: String,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The model stopped proposing calls (with a goal: see `GoalMet`).
    Finished,
    /// `max_steps` turns passed (with a goal: see `GoalNotMet`).
    MaxSteps,
    /// The goal's check passed after this many checks.
    GoalMet {
        /// The checks made, the passing one included.
        rounds: usize,
    },
    /// The turns were spent and the goal's check never passed.
    GoalNotMet {
        /// The checks made (0 when the model never stopped).
        rounds: usize,
    },
    /// The gate (or a person) blocked the goal's check: the run ends, since "done" cannot be
    /// told.
    VerifyBlocked {
        /// Why, as the gate said it.
        reason: String,
    },
    /// A plan was handed in and nobody could review it (an unattended `--plan` run): the run
    /// ends with it; no change was admitted.
    PlanSubmitted {
        /// The plan.
        plan: String,
    },
}

/// A goal the run works toward, and the command that says it is met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Goal {
    /// The goal, in words (the model is told it).
    pub text: String,
    /// A bash command that exits 0 once the goal is met.
    pub verify: String,
}

/// What a session in plan mode does with the plan it is handed.
struct Planning {
    reviewer: Arc<dyn PlanReviewer>,
    /// The gate to go on with once a plan is approved: same specification, normal mode.
    then: Arc<Gate>,
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The provider failed; recorded.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The record could not be written: the run stops rather than go on unrecorded.
    #[error("cannot write the execution record: {0}")]
    Record(#[from] std::io::Error),
    /// The session was set up wrong (a plan over a gate that is not in plan mode).
    #[error("{0}")]
    Setup(String),
}

/// An agent session.
pub struct Session {
    gate: Arc<Gate>,
    provider: Arc<dyn Provider>,
    approver: Arc<dyn Approver>,
    recorder: Arc<Recorder>,
    leases: Arc<Leases>,
    terminal: Arc<dyn Terminal>,
    max_steps: usize,
    result_bytes: usize,
    messages: Vec<Message>,
    /// "Allow for this session" answers, each bound to what was approved
    /// ([`super::approvals`]).
    approved: super::approvals::Approvals,
    run_id: String,
    record_arguments: RecordArguments,
    call_ids: HashSet<String>,
    store: Store,
    planning: Option<Planning>,
    plan_approved: bool,
    goal: Option<Goal>,
    rounds: usize,
    decisions: Option<Arc<crate::decisions::DecisionLog>>,
    servers: Option<Servers>,
    /// The run's span while it runs (the root of its trace when OpenTelemetry export is on).
    span: tracing::Span,
}

/// What the current attempt at an answer has brought so far.
#[derive(Default)]
struct Partial {
    text: String,
    reasoning: String,
    calls: BTreeMap<usize, ProposedCall>,
}

/// A judged call of the current turn.
struct Decided {
    /// When the gate judged it (ms since the Unix epoch).
    time_ms: u128,
    call: ProposedCall,
    admission: Admission,
    approval: Option<Approval>,
    /// Who was asked, and what they said beyond the answer.
    approver: Option<(ApproverKind, Option<String>)>,
    runnable: Option<Admitted>,
    /// The sha256 of the arguments a hook put in place of the model's, when one did.
    replaced_sha256: Option<String>,
    /// The call's span (`execute_tool`), from its judgement to its record line.
    span: tracing::Span,
    /// How long the gate took to judge it.
    admitted_in: std::time::Duration,
}

/// What running one call produced.
struct Ran {
    need: Need,
    started_ms: u128,
    duration_ms: u128,
    result: Result<Output, String>,
    receipts: Vec<Receipt>,
    /// The paths whose state the call changed, before and after (file tools only).
    changed: Vec<SnapshotFile>,
    /// The note kept in the store while the call's line is not yet recorded
    /// ([`Store::note`]); settled once it is.
    note: Option<PathBuf>,
    /// A bash writer whose changes were refused: why nothing it did was applied (issue 25).
    discarded: Option<String>,
    /// Its lease could not be taken: it never ran (the result says why).
    unleased: bool,
}

/// What a check of the goal found.
enum Check {
    Met,
    /// Not met: what the model is told.
    NotMet(String),
    /// The check did not run: why.
    Blocked(String),
}

impl Session {
    /// A session over a gate. `leases` may be shared with other sessions of the workspace.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gate: Arc<Gate>,
        provider: Arc<dyn Provider>,
        approver: Arc<dyn Approver>,
        recorder: Arc<Recorder>,
        leases: Arc<Leases>,
        terminal: Arc<dyn Terminal>,
        max_steps: usize,
        result_bytes: usize,
    ) -> Session {
        // The rewind store lives beside the record, in its state folder (a host file).
        let store = Store::beside(recorder.path());
        let system = format!(
            "You are a coding agent working in the folder {}. Use the tools to read and change it. \
             Every tool result starts with how the call ended: `invalid` (correct the call), \
             `blocked` (the host refused it; do not retry it unchanged), `failed` (it ran and \
             reported an error) or a successful result.",
            gate.roots().workspace().display()
        );
        let gate = asking(gate, &approver);
        Session {
            gate,
            provider,
            approver,
            recorder,
            leases,
            terminal,
            max_steps,
            result_bytes,
            messages: vec![Message::System(system)],
            approved: Default::default(),
            run_id: record::run_id(),
            record_arguments: RecordArguments::Full,
            call_ids: HashSet::new(),
            decisions: None,
            servers: None,
            store,
            planning: None,
            plan_approved: false,
            goal: None,
            rounds: 0,
            span: tracing::Span::none(),
        }
    }

    /// Plan mode: the session's gate must be in [`Mode::Plan`]; `then` is the gate it goes on
    /// with once `reviewer` approves a plan — built the same way in [`Mode::Normal`], over the
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
        if self.gate.mode() != Mode::Plan || then.mode() != Mode::Normal {
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

    /// The gate's mode now: plan until a plan is approved, normal after.
    pub fn mode(&self) -> Mode {
        self.gate.mode()
    }

    /// Adds a sentence to the system message.
    fn system_note(&mut self, note: &str) {
        if let Some(Message::System(text)) = self.messages.first_mut() {
            text.push(' ');
            text.push_str(note);
        }
    }

    /// The session's gates judge with `hooks` as their hooks stage ([`Gate::with_hooks`]):
    /// the pre-tool ones run on every admitted call, after the gate's other stages and before
    /// the approver and the lease, and the post-tool ones once a call has ended
    /// ([`crate::hooks`]). A gate built with hooks ([`crate::gate::GateBuilder::hooks`]) needs
    /// no call to this.
    pub fn hooks(mut self, hooks: Arc<crate::hooks::Hooks>) -> Session {
        self.gate = asking(
            Arc::new(self.gate.with_hooks(Arc::clone(&hooks))),
            &self.approver,
        );
        if let Some(planning) = &mut self.planning {
            planning.then = Arc::new(planning.then.with_hooks(hooks));
        }
        self
    }

    /// What the record keeps of each call's arguments (default: [`RecordArguments::Full`],
    /// bounded, beside their digest).
    pub fn record_arguments(mut self, keep: RecordArguments) -> Session {
        self.record_arguments = keep;
        self
    }

    /// The id every record line of this session carries.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// From now on an `ask` goes to `approver`, under `posture`: the session's gate becomes the
    /// same gate under that posture (a gate never changes; it is swapped whole, as an approved
    /// plan swaps it). `reasonix mcp serve` does this once it knows the client can ask its user.
    pub fn answer_asks(&mut self, approver: Arc<dyn Approver>, posture: crate::policy::Posture) {
        self.approver = approver;
        self.gate = asking(Arc::new(self.gate.with_posture(posture)), &self.approver);
    }

    /// The posture of the session's gate now.
    pub fn posture(&self) -> crate::policy::Posture {
        self.gate.posture()
    }

    /// Appends an event line of this session's run to the record.
    ///
    /// # Errors
    ///
    /// [`SessionError::Record`] when the record cannot be written.
    pub fn record_event(&self, event: &'static str, detail: String) -> Result<(), SessionError> {
        self.recorder.append(&EventRecord {
            run_id: self.run_id.clone(),
            time_ms: now_ms(),
            event,
            detail,
        })?;
        Ok(())
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The MCP servers whose tools the session's gate offers, once connected: a server whose
    /// connection dies is restarted by the next call that names one of its tools (see the
    /// module doc), through `servers`' connect gate and this session's approver.
    pub fn servers(mut self, servers: Servers) -> Session {
        self.servers = Some(servers);
        self
    }

    /// Each call's decision, once the call has ended, goes to this log too.
    pub fn decisions(mut self, log: Arc<crate::decisions::DecisionLog>) -> Session {
        self.decisions = Some(log);
        self
    }

    /// Ends a call in the record and on the terminal: its line — with the revision of the bundle
    /// that judged it, which the lines after it carry too — and its decision logged, then a line
    /// per connection its processes asked the egress proxy for, then its rewind note settled.
    /// Every way a call ends goes through here (a turn's calls, a goal's check, a served call).
    fn end_call(
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

    /// Runs a judged call alone, if it was admitted: its lease, its rewind note, its execution.
    async fn run_alone(&self, j: &mut Decided) -> Option<Ran> {
        let admitted = j.runnable.take()?;
        let note = self.note_for(&j.call);
        Some(
            run_one(
                admitted,
                Arc::clone(&self.leases),
                self.store.clone(),
                Arc::clone(&self.approver),
                note,
                j.span.clone(),
            )
            .await,
        )
    }

    /// Opens the span of a session whose calls come from outside the model loop (`reasonix mcp
    /// serve`): a `run` span, the root of its trace while OpenTelemetry export is on, with each
    /// call's `execute_tool` span under it, as in [`Session::run`]. It ends with
    /// [`Session::end_trace`] (or when the session is dropped).
    pub fn begin_trace(&mut self, entry: &'static str) {
        self.span = tracing::info_span!(
            parent: None,
            "run",
            "reasonix.run_id" = %self.run_id,
            "reasonix.posture" = ?self.gate.posture(),
            "reasonix.entry" = entry,
            "reasonix.outcome" = tracing::field::Empty,
        );
    }

    /// Ends the span [`Session::begin_trace`] opened, saying how the session ended.
    pub fn end_trace(&mut self, how: &str) {
        self.span.record("reasonix.outcome", how);
        self.span = tracing::Span::none();
    }

    /// Runs the session on a prompt until the model stops, `max_steps` pass, or the provider
    /// fails.
    pub async fn run(&mut self, prompt: &str) -> Result<End, SessionError> {
        self.span = tracing::info_span!(
            parent: None,
            "run",
            "reasonix.run_id" = %self.run_id,
            "reasonix.posture" = ?self.gate.posture(),
            "reasonix.outcome" = tracing::field::Empty,
        );
        let ended = self.run_steps(prompt).await;
        let how = match &ended {
            Ok(end) => format!("{end:?}"),
            Err(e) => format!("error: {e}"),
        };
        self.span.record("reasonix.outcome", how.as_str());
        self.span = tracing::Span::none();
        ended
    }

    async fn run_steps(&mut self, prompt: &str) -> Result<End, SessionError> {
        tracing::info!(run_id = %self.run_id, "run started");
        self.recorder
            .set_policy_revision(self.gate.policy_revision());
        self.recorder.append(&RunStartRecord {
            run_id: self.run_id.clone(),
            time_ms: now_ms(),
            event: "run_started",
            detail: format!("{} — {}", self.provider.describe(), prompt),
            provider: self.provider.describe(),
            task: prompt.to_owned(),
            posture: self.gate.posture(),
        })?;
        self.messages.push(Message::User(prompt.to_owned()));
        for step in 0..self.max_steps {
            let calls = match self.turn(step).await {
                Ok(calls) => calls,
                Err(SessionError::Provider(e)) => {
                    self.recorder.append(&EventRecord {
                        run_id: self.run_id.clone(),
                        time_ms: now_ms(),
                        event: "provider_error",
                        detail: e.to_string(),
                    })?;
                    return Err(e.into());
                }
                Err(e) => return Err(e),
            };
            if calls.is_empty() {
                let Some(goal) = self.goal.clone() else {
                    self.ended("finished")?;
                    return Ok(End::Finished);
                };
                // Still planning: nothing could have been changed yet, and a check that changes
                // things would be held at stage plan. The goal is not checked; the model is
                // told to hand in its plan.
                if self.planning.is_some() {
                    self.messages.push(Message::User(format!(
                        "The goal is not checked yet: the session is still in plan mode, and \
                         nothing can change until a plan is approved. Hand in your plan with \
                         {SUBMIT_PLAN}."
                    )));
                    continue;
                }
                match self.verify(&goal).await? {
                    Check::Met => {
                        self.ended("goal_met")?;
                        return Ok(End::GoalMet {
                            rounds: self.rounds,
                        });
                    }
                    Check::Blocked(reason) => {
                        self.ended("verify_blocked")?;
                        return Ok(End::VerifyBlocked { reason });
                    }
                    Check::NotMet(told) => {
                        self.messages.push(Message::User(told));
                        continue;
                    }
                }
            }
            if let Some(plan) = self.act(calls).await? {
                self.ended("plan_submitted")?;
                return Ok(End::PlanSubmitted { plan });
            }
        }
        if self.goal.is_some() {
            self.ended("goal_not_met")?;
            return Ok(End::GoalNotMet {
                rounds: self.rounds,
            });
        }
        self.ended("max_steps")?;
        Ok(End::MaxSteps)
    }

    /// Checks the goal: its command as a bash call through the gate, the approver, the lease
    /// and the jail, recorded as a call and as an `evidence` line.
    async fn verify(&mut self, goal: &Goal) -> Result<Check, SessionError> {
        self.rounds += 1;
        let round = self.rounds;
        let call = ProposedCall {
            id: self.fresh_id(format!("verify_{round}")),
            name: "bash".into(),
            arguments: serde_json::json!({ "command": goal.verify }).to_string(),
        };
        let mut j = self.judge(call);
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

    /// What a call's note in the rewind store names: the run, the call, the tool.
    fn note_for(&self, call: &ProposedCall) -> (String, String, String) {
        (self.run_id.clone(), call.id.clone(), call.name.clone())
    }

    /// Each connection the call's processes asked the egress proxy for, a line each, after the
    /// call's own.
    fn record_connections(&self, call_id: &str, ran: Option<&Ran>) -> std::io::Result<()> {
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
    fn settle(&self, ran: Option<&Ran>) {
        if let Some(note) = ran.and_then(|r| r.note.as_deref())
            && let Err(e) = self.store.settle(note)
        {
            tracing::warn!(note = %note.display(), "cannot remove a settled rewind note: {e}");
        }
    }

    /// `base`, or `base~N` when the run already has a call of that id.
    fn fresh_id(&mut self, base: String) -> String {
        let mut id = base.clone();
        let mut n = 1;
        while !self.call_ids.insert(id.clone()) {
            n += 1;
            id = format!("{base}~{n}");
        }
        id
    }

    fn ended(&self, how: &str) -> std::io::Result<()> {
        self.recorder.append_end(&EventRecord {
            run_id: self.run_id.clone(),
            time_ms: now_ms(),
            event: "run_ended",
            detail: how.to_owned(),
        })
    }

    /// Streams one answer; returns its calls (none: the model is done).
    async fn turn(&mut self, step: usize) -> Result<Vec<ProposedCall>, SessionError> {
        let request = Request {
            messages: self.messages.clone(),
            tools: self
                .gate
                .registry()
                .schemas()
                .into_iter()
                .filter(|t| t.name != crate::egress::CONNECT_TOOL)
                .collect(),
        };
        let described = self.provider.describe();
        let model = described
            .split_once(" at ")
            .map_or(described.as_str(), |(m, _)| m);
        let chat = tracing::info_span!(
            parent: &self.span,
            "chat",
            "otel.name" = format!("chat {model}"),
            "otel.kind" = "client",
            "gen_ai.operation.name" = "chat",
            "gen_ai.provider.name" = if described.starts_with("script ") { "script" } else { "openai" },
            "gen_ai.request.model" = model,
            "gen_ai.response.finish_reasons" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "reasonix.step" = step,
            "reasonix.retries" = tracing::field::Empty,
        );
        let mut retries = 0u32;
        let mut stream = self.provider.stream(request);
        let mut answer = Partial::default();
        while let Some(event) = stream.next().await {
            match event? {
                Event::Text(t) => {
                    self.terminal.text(&t);
                    answer.text.push_str(&t);
                }
                Event::Reasoning(r) => {
                    self.terminal.reasoning(&r);
                    answer.reasoning.push_str(&r);
                }
                Event::CallFragment {
                    index,
                    id,
                    name,
                    arguments,
                } => {
                    let call = answer.calls.entry(index).or_default();
                    if let Some(id) = id {
                        call.id = id;
                    }
                    if let Some(name) = name {
                        call.name.push_str(&name);
                    }
                    call.arguments.push_str(&arguments);
                }
                Event::Finish(reason) => {
                    chat.record("gen_ai.response.finish_reasons", reason.as_str());
                }
                Event::Usage { prompt, completion } => {
                    chat.record("gen_ai.usage.input_tokens", prompt);
                    chat.record("gen_ai.usage.output_tokens", completion);
                }
                Event::AttemptFailed(failed) => {
                    retries += 1;
                    chat.record("reasonix.retries", retries);
                    crate::telemetry::provider_retry(failed.fault.kind());
                    // Nothing of a failed attempt is kept: the next one starts from nothing.
                    let void = std::mem::take(&mut answer);
                    self.terminal
                        .attempt_failed(&failed, &void.text, &void.reasoning);
                    self.recorder.append(&AttemptRecord {
                        run_id: self.run_id.clone(),
                        time_ms: now_ms(),
                        event: "attempt_failed",
                        step,
                        attempt: failed.attempt,
                        fault: failed.fault.kind(),
                        status: failed.fault.status(),
                        detail: failed.fault.to_string(),
                        bytes: failed.bytes,
                        retry_after_ms: failed.fault.retry_after().map(|d| d.as_millis()),
                        wait_ms: failed.wait.map(|d| d.as_millis()),
                        discarded_chars: void.text.chars().count() + void.reasoning.chars().count(),
                    })?;
                }
            }
        }
        let Partial {
            text,
            reasoning,
            calls,
        } = answer;
        let calls: Vec<ProposedCall> = calls
            .into_iter()
            .map(|(index, mut c)| {
                if c.id.is_empty() {
                    c.id = format!("call_{step}_{index}");
                }
                // An id the provider already used in this run gets a suffix, so that a call is
                // one line of the record; the model sees the same id in the call and its result.
                c.id = self.fresh_id(std::mem::take(&mut c.id));
                c
            })
            .collect();
        self.messages.push(Message::Assistant {
            content: (!text.is_empty()).then_some(text),
            reasoning: (!reasoning.is_empty()).then_some(reasoning),
            tool_calls: calls.clone(),
        });
        Ok(calls)
    }

    /// Judges, approves and runs the calls of one answer; answers each with a tool message.
    /// Returns the plan when one was handed in that nobody can review: the run ends with it.
    async fn act(&mut self, calls: Vec<ProposedCall>) -> Result<Option<String>, SessionError> {
        self.restart_dead(&calls).await?;
        let mut judged: Vec<Decided> = calls.into_iter().map(|c| self.judge(c)).collect();
        let together = judged
            .iter()
            .filter(|j| j.runnable.is_some())
            .all(|j| j.admission.read_only == Some(true));
        // Futures are lazy: joined, they run at once; awaited one by one, in order.
        let runs: Vec<_> = judged
            .iter_mut()
            .map(|j| {
                let admitted = j.runnable.take();
                let leases = Arc::clone(&self.leases);
                let store = self.store.clone();
                let note = self.note_for(&j.call);
                let approver = Arc::clone(&self.approver);
                let span = j.span.clone();
                async move {
                    match admitted {
                        Some(a) => Some(run_one(a, leases, store, approver, note, span).await),
                        None => None,
                    }
                }
            })
            .collect();
        let ran: Vec<Option<Ran>> = if together {
            futures_util::future::join_all(runs).await
        } else {
            let mut ran = Vec::with_capacity(runs.len());
            for run in runs {
                ran.push(run.await);
            }
            ran
        };
        let mut ending = None;
        for (j, ran) in judged.into_iter().zip(ran) {
            let (outcome, exit_code, mut full) = conclude(&j, ran.as_ref());
            let mut reviewed = None;
            if outcome == Outcome::Succeeded && j.call.name == SUBMIT_PLAN && ending.is_none() {
                if let Some((told, line, end)) = self.review(&j.call) {
                    full = told;
                    reviewed = Some(line);
                    ending = end;
                } else if self.plan_approved {
                    full = "the plan is already approved; there is nothing to review".into();
                }
            }
            let (_, content) = self.finish(&j, ran.as_ref(), outcome, exit_code, &full)?;
            if let Some(line) = reviewed {
                self.recorder.append(&line)?;
                self.terminal.plan_reviewed(&line);
            }
            self.messages.push(Message::Tool {
                call_id: j.call.id,
                content,
            });
        }
        Ok(ending)
    }

    /// One call that comes from outside the model loop (`reasonix mcp serve`: a client's
    /// `tools/call`): judged, approved by the session's approver, leased, run, seen by the
    /// post-tool hooks and recorded exactly as a call of a turn is. Returns its record line and
    /// the text the caller is told (bounded as a model's result is, the hooks' notes after it).
    ///
    /// # Errors
    ///
    /// [`SessionError::Record`] when the record cannot be written: the call's effects may have
    /// happened, and the caller must stop rather than go on unrecorded.
    pub async fn call(&mut self, name: &str, arguments: String) -> Result<Served, SessionError> {
        let n = self.call_ids.len() + 1;
        let id = self.fresh_id(format!("call-{n}"));
        let proposed = ProposedCall {
            id,
            name: name.to_owned(),
            arguments,
        };
        self.restart_dead(std::slice::from_ref(&proposed)).await?;
        let mut j = self.judge(proposed);
        let ran = self.run_alone(&mut j).await;
        let (outcome, exit_code, full) = conclude(&j, ran.as_ref());
        let (record, text) = self.finish(&j, ran.as_ref(), outcome, exit_code, &full)?;
        Ok(Served { record, text })
    }

    /// Ends a call whose result someone is told (the model, or the MCP client that made it):
    /// the post-tool hooks on what they are told, the call's line ([`Session::end_call`]), and
    /// the text they are told, each hook's note after the result, marked as the hook's. A note
    /// changes nothing the record says of the call.
    fn finish(
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

    /// Has a plan handed in with `submit_plan` reviewed, when the session is in plan mode:
    /// returns what the model is told, the `plan` line, and the plan when the run ends with it.
    /// An approved plan swaps in the normal-mode gate.
    fn review(&mut self, call: &ProposedCall) -> Option<(String, PlanRecord, Option<String>)> {
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

    /// Runs the post-tool hooks on a call that has ended ([`crate::hooks`]), under the gate's
    /// hooks plan: each one's note or failure. Nothing they say changes the outcome.
    fn post_tool(
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
    fn call_record(
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

    /// Restarts each MCP server that one of `calls` names and whose connection died (see the
    /// module doc), records each restart's connect, and rebuilds the session's gates over the
    /// tools the servers offer now. Judging and starting block (a person may be asked; a
    /// process starts): they run on a blocking thread.
    async fn restart_dead(&mut self, calls: &[ProposedCall]) -> Result<(), SessionError> {
        let Some(servers) = &self.servers else {
            return Ok(());
        };
        let mut dead: Vec<String> = calls
            .iter()
            .filter_map(named_server)
            .filter(|name| servers.died(name).is_some())
            .collect();
        dead.sort();
        dead.dedup();
        if dead.is_empty() {
            return Ok(());
        }
        let Some(mut servers) = self.servers.take() else {
            return Ok(());
        };
        let approver = Arc::clone(&self.approver);
        let run_id = self.run_id.clone();
        let restarted = tokio::task::spawn_blocking(move || {
            let mut lines = Vec::new();
            for name in &dead {
                let answered =
                    servers.restart(name, &mut |admission| Some(approver.ask(admission).into()));
                match answered {
                    Ok(c) => {
                        tracing::warn!(
                            server = %name,
                            restart = c.restart.unwrap_or(0),
                            verdict = %c.admission.verdict,
                            started = c.result.is_ok(),
                            "MCP server restarted after it died"
                        );
                        let (_, unavailable) = servers.registry();
                        let none = Vec::new();
                        let listed = unavailable.get(name).unwrap_or(&none);
                        lines.extend(servers.record(name, &run_id, listed));
                    }
                    Err(why) => {
                        tracing::warn!(server = %name, "MCP server not restarted: {why}");
                    }
                }
            }
            (servers, lines)
        })
        .await;
        let (servers, lines) = restarted
            .map_err(|e| SessionError::Setup(format!("restarting an MCP server failed: {e}")))?;
        for line in &lines {
            self.recorder.append(line)?;
        }
        let (registry, _) = servers.registry();
        self.servers = Some(servers);
        let rebuilt = |gate: &Gate| {
            gate.with_registry(registry.clone())
                .map(Arc::new)
                .map_err(|e| {
                    SessionError::Setup(format!(
                        "cannot offer the restarted MCP server's tools: {e}"
                    ))
                })
        };
        self.gate = rebuilt(&self.gate)?;
        if let Some(planning) = &mut self.planning {
            planning.then = rebuilt(&planning.then)?;
        }
        Ok(())
    }

    /// The gate, then the approver for an ask.
    fn judge(&mut self, call: ProposedCall) -> Decided {
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

/// The MCP server a proposed call names: its tool's (`mcp__NAME__TOOL`), or the tool it reaches
/// through `use_capability` ([`crate::mcp::server_reached`], which `check` asks too).
fn named_server(call: &ProposedCall) -> Option<String> {
    crate::mcp::server_reached(&Call {
        id: None,
        name: call.name.clone(),
        arguments: RawArguments::Text(call.arguments.clone()),
    })
}

/// The gate with the session's approver answering an `ask` on a connection a running command
/// asks the egress proxy for.
///
/// "Allow for the session" covers the same host and port again (the call's id names them) for
/// the rest of the session.
fn asking(gate: Arc<Gate>, approver: &Arc<dyn Approver>) -> Arc<Gate> {
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

/// Leases, keeps what a file tool is about to change, runs on a blocking thread, and takes
/// receipts while the lease is still held.
///
/// Before a file tool runs, what it may change is kept and noted in the rewind store
/// ([`Store::note`]), so that a run stopped before the call's line is recorded loses nothing.
async fn run_one(
    admitted: Admitted,
    leases: Arc<Leases>,
    store: Store,
    approver: Arc<dyn Approver>,
    (run_id, call_id, tool): (String, String, String),
    span: tracing::Span,
) -> Ran {
    let need = admitted.need();
    let leased = match admitted.lease(&leases).await {
        Ok(leased) => leased,
        // Fail closed (issue 28): a lease that cannot hold across processes refuses the call.
        Err(e) => {
            return Ran {
                need,
                started_ms: now_ms(),
                duration_ms: 0,
                result: Err(e.to_string()),
                receipts: Vec::new(),
                changed: Vec::new(),
                note: None,
                discarded: None,
                unleased: true,
            };
        }
    };
    let admission = leased.admission().clone();
    let admission_for_job = admission.clone();
    let need = leased.need().clone();
    // Only a call leased by the paths it changes is observed: a shell command's effects are not.
    let changes = if matches!(need, Need::Paths(_)) {
        leased.changes()
    } else {
        Vec::new()
    };
    let job = move || {
        // The jail run's span is a child of the call's.
        let _call = span.enter();
        let paths: Vec<String> = changes
            .iter()
            .map(|p| p.absolute().display().to_string())
            .collect();
        let before: Vec<Kept> = changes.iter().map(|p| store.keep(p)).collect();
        let note = if paths.is_empty() {
            None
        } else {
            let noted: Vec<(String, Kept)> =
                paths.iter().cloned().zip(before.iter().cloned()).collect();
            match store.note(&run_id, &call_id, &tool, &noted) {
                Ok(note) => Some(note),
                Err(e) => {
                    // The call's line will still carry its snapshot; only a crash before that
                    // line would lose what it changed.
                    tracing::warn!(call_id, "cannot note the call in the rewind store: {e}");
                    None
                }
            }
        };
        let started = Instant::now();
        let started_ms = now_ms();
        // A bash writer's changes land (or not) in the execute stage, the lease still held:
        // the approver answers what asks, the store keeps what is about to change (issue 25).
        let ids = (run_id.as_str(), call_id.as_str(), tool.as_str());
        let mut keeping = landing::Keeping::new(&store, ids);
        let executed = leased.execute_with(
            &mut |asking| landing::ask(approver.as_ref(), &admission_for_job, asking),
            &mut |paths| keeping.before(paths),
        );
        let landed = executed.settled.as_ref().map(|settled| {
            (
                keeping.landed(settled),
                keeping.note.take(),
                settled_state(settled),
            )
        });
        let duration_ms = started.elapsed().as_millis();
        // The first few files' contents after the call are kept for a report's diff.
        let after: Vec<FileState> = changes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i < rewind::MAX_AFTER_KEPT_FILES {
                    store.keep_after(p)
                } else {
                    rewind::observe(p)
                }
            })
            .collect();
        (
            paths,
            before,
            after,
            note,
            started_ms,
            duration_ms,
            executed,
            landed,
        )
    };
    let (paths, before, after, note, started_ms, duration_ms, result, lease, landed) =
        match tokio::task::spawn_blocking(job).await {
            Ok((paths, before, after, note, started_ms, duration_ms, executed, landed)) => (
                paths,
                before,
                after,
                note,
                started_ms,
                duration_ms,
                executed.result.map_err(|e| e.to_string()),
                Some(executed.lease),
                landed,
            ),
            // A tool that panicked (a bug): the note, if any, stays in the store, but the call's
            // line recorded next makes a rewind pass it over, so what it changed goes unrestored.
            Err(e) => (
                Vec::new(),
                Vec::new(),
                Vec::new(),
                None,
                now_ms(),
                0,
                Err(format!("the call's thread failed: {e}")),
                None,
                None,
            ),
        };
    let mut receipts = Vec::with_capacity(paths.len() + 1);
    let mut changed = Vec::new();
    for ((path, before), after) in paths.into_iter().zip(before).zip(after) {
        receipts.push(Receipt::File {
            path: path.clone(),
            before_sha256: before.state.sha256().map(str::to_owned),
            after_sha256: after.sha256().map(str::to_owned),
            bytes: after.bytes(),
        });
        if before.state != after {
            changed.push(SnapshotFile {
                path,
                before: before.state,
                after,
                kept: before.kept,
                note: before.note,
            });
        }
    }
    let mut result = result;
    let mut note = note;
    let mut discarded = None;
    if admission.bash.is_some() {
        let exit_code = result.as_ref().ok().and_then(|o| o.exit_code);
        let unobserved = result.as_ref().ok().and_then(|o| o.unobserved.clone());
        let (observed, said) = match (&landed, unobserved) {
            (_, Some(why)) => (false, why),
            (Some((_, _, Settle::Discarded(_))), None) => (
                true,
                "its changes were observed on an overlay and discarded: nothing it did was applied"
                    .to_owned(),
            ),
            (Some((_, _, Settle::Broken)), None) => (
                true,
                "its changes were observed on an overlay; the commit stopped part way (the file receipts say what landed)".to_owned(),
            ),
            (Some((l, _, Settle::Landed)), None) => (
                true,
                format!(
                    "its effects were observed on an overlay: {} landed",
                    crate::effects::changes(l.changed.len())
                ),
            ),
            (None, None) if admission.read_only == Some(true) => {
                let mut said = "admitted as read-only: the workspace and write roots were read-only to it, so it changed nothing there".to_owned();
                let refused = result
                    .as_ref()
                    .is_ok_and(|o| o.text.contains("Read-only file system"));
                if refused {
                    said.push_str("; its output reports a write the jail refused (EROFS), which the call never declared");
                }
                (true, said)
            }
            (None, None) => (
                false,
                "its effects were not observed beyond its exit status".to_owned(),
            ),
        };
        if let Some((landed, landed_note, state)) = landed {
            receipts.extend(landed.receipts);
            changed.extend(landed.changed);
            note = note.or(landed_note);
            match state {
                Settle::Broken => {
                    result = result.and_then(|o| Err(o.text));
                }
                Settle::Discarded(why) => discarded = Some(why),
                Settle::Landed => {}
            }
        }
        receipts.push(Receipt::Process {
            exit_code,
            observed,
            note: said,
        });
    }
    drop(lease);
    Ran {
        need,
        started_ms,
        duration_ms,
        result,
        receipts,
        changed,
        note,
        discarded,
        unleased: false,
    }
}

/// What became of a bash writer's changes, for its outcome.
enum Settle {
    Landed,
    Discarded(String),
    Broken,
}

fn settled_state(settled: &crate::effects::Settled) -> Settle {
    if settled.broken {
        Settle::Broken
    } else if settled.landed {
        Settle::Landed
    } else {
        Settle::Discarded(settled.why.clone().unwrap_or_default())
    }
}

/// Why a call failed, in one line of at most about 300 bytes: the tool's error, or how its
/// process ended and the last line it wrote to stderr. `None` unless it failed.
fn failure(outcome: Outcome, ran: Option<&Ran>) -> Option<String> {
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
fn conclude(j: &Decided, ran: Option<&Ran>) -> (Outcome, Option<i32>, String) {
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
fn telemetry_of_call(j: &Decided, ran: Option<&Ran>, record: &CallRecord) {
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
