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
//!
//! # Where each part lives
//!
//! - `mod.rs`: the [`Session`], its set-up, and what it tells the [`Terminal`];
//! - `turn.rs`: the turn loop above ([`Session::run`]) and one call from outside it
//!   ([`Session::call`]);
//! - `plan_review.rs`: plan review ([`Session::plan`]);
//! - `goal.rs`: goals and their checks ([`Session::goal`]);
//! - `mcp_restart.rs`: MCP restarts ([`Session::servers`]);
//! - `decide.rs`: a call judged by the gate and, on `ask`, answered by the approver;
//! - `execute.rs`: the call's execution (lease, snapshot, run, receipts);
//! - `record_line.rs`: how a call ends — its outcome, the post-tool hooks, its record line.

mod decide;
mod execute;
mod goal;
mod mcp_restart;
mod plan_review;
mod record_line;
mod turn;

use std::collections::HashSet;
use std::sync::Arc;

use super::approver::Approver;
use super::config::RecordArguments;
use super::provider::{FailedAttempt, Message, Provider, ProviderError};
use super::servers::Servers;
use crate::gate::{Admission, Gate, GateMode};
use crate::lease::Leases;
use crate::record::{self, CallRecord, EventRecord, EvidenceRecord, PlanRecord, Recorder, now_ms};
use crate::rewind::Store;
use decide::asking;
pub use goal::Goal;
use plan_review::Planning;

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

    /// The gate's mode now: plan until a plan is approved, normal after.
    pub fn mode(&self) -> GateMode {
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

    /// Each call's decision, once the call has ended, goes to this log too.
    pub fn decisions(mut self, log: Arc<crate::decisions::DecisionLog>) -> Session {
        self.decisions = Some(log);
        self
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
}
