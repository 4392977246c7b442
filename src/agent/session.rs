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

use super::approver::{Answer, Approver};
use super::config::RecordArguments;
use super::provider::{
    Event, FailedAttempt, Message, ProposedCall, Provider, ProviderError, Request,
};
use crate::call::{Call, RawArguments};
use crate::gate::{Admission, Admitted, Gate, Judgement, Verdict};
use crate::lease::{Leases, Need};
use crate::record::{
    self, ARGUMENTS_BOUND, AdmissionRecord, Approval, AttemptRecord, CallRecord, EventRecord,
    Outcome, Receipt, Recorder, file_digest, now_ms, sha256,
};
use crate::text::{Keep, shorten};
use crate::tool::Output;

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
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The model stopped proposing calls.
    Finished,
    /// `max_steps` turns passed.
    MaxSteps,
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
    approved: HashSet<String>,
    run_id: String,
    record_arguments: RecordArguments,
    call_ids: HashSet<String>,
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
    runnable: Option<Admitted>,
}

/// What running one call produced.
struct Ran {
    need: Need,
    started_ms: u128,
    duration_ms: u128,
    result: Result<Output, String>,
    receipts: Vec<Receipt>,
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
        let system = format!(
            "You are a coding agent working in the folder {}. Use the tools to read and change it. \
             Every tool result starts with how the call ended: `invalid` (correct the call), \
             `blocked` (the host refused it; do not retry it unchanged), `failed` (it ran and \
             reported an error) or a successful result.",
            gate.roots().workspace().display()
        );
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
            approved: HashSet::new(),
            run_id: record::run_id(),
            record_arguments: RecordArguments::Full,
            call_ids: HashSet::new(),
        }
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

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Runs the session on a prompt until the model stops, `max_steps` pass, or the provider
    /// fails.
    pub async fn run(&mut self, prompt: &str) -> Result<End, SessionError> {
        tracing::info!(run_id = %self.run_id, "run started");
        self.recorder.append(&EventRecord {
            run_id: self.run_id.clone(),
            time_ms: now_ms(),
            event: "run_started",
            detail: format!("{} — {}", self.provider.describe(), prompt),
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
                self.ended("finished")?;
                return Ok(End::Finished);
            }
            self.act(calls).await?;
        }
        self.ended("max_steps")?;
        Ok(End::MaxSteps)
    }

    fn ended(&self, how: &str) -> std::io::Result<()> {
        self.recorder.append(&EventRecord {
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
            tools: self.gate.registry().schemas(),
        };
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
                Event::Finish(_) | Event::Usage { .. } => {}
                Event::AttemptFailed(failed) => {
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
                let mut n = 1;
                let base = c.id.clone();
                while !self.call_ids.insert(c.id.clone()) {
                    n += 1;
                    c.id = format!("{base}~{n}");
                }
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
    async fn act(&mut self, calls: Vec<ProposedCall>) -> Result<(), SessionError> {
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
                async move {
                    match admitted {
                        Some(a) => Some(run_one(a, leases).await),
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
        for (j, ran) in judged.into_iter().zip(ran) {
            let (outcome, exit_code, full) = conclude(&j, ran.as_ref());
            let record = CallRecord {
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
                admission: AdmissionRecord {
                    verdict: j.admission.verdict,
                    stage: j.admission.stage,
                    rules: j.admission.rules.clone(),
                    reasons: j.admission.reasons.clone(),
                },
                approval: j.approval,
                lease: ran.as_ref().map(|r| r.need.clone()),
                sandbox: ran.as_ref().and(j.admission.sandbox.clone()),
                outcome,
                exit_code,
                failure: failure(outcome, ran.as_ref()),
                started_ms: ran.as_ref().map(|r| r.started_ms),
                duration_ms: ran.as_ref().map_or(0, |r| r.duration_ms),
                result_bytes: full.len(),
                result_sha256: sha256(full.as_bytes()),
                receipts: ran.map(|r| r.receipts).unwrap_or_default(),
            };
            tracing::info!(
                call_id = %record.call_id,
                tool = %record.tool,
                outcome = record.outcome.as_str(),
                duration_ms = record.duration_ms as u64,
                "call ended"
            );
            self.recorder.append(&record)?;
            self.terminal.call_ended(&CallEnd {
                admission: &j.admission,
                record: &record,
                arguments: &j.call.arguments,
            });
            self.messages.push(Message::Tool {
                call_id: j.call.id,
                content: shorten(&full, self.result_bytes, Keep::HeadAndTail).into_owned(),
            });
        }
        Ok(())
    }

    /// The gate, then the approver for an ask.
    fn judge(&mut self, call: ProposedCall) -> Decided {
        let judgement = self.gate.admit(&Call {
            id: Some(call.id.clone()),
            name: call.name.clone(),
            arguments: RawArguments::Text(call.arguments.clone()),
        });
        let time_ms = now_ms();
        let (admission, approval, runnable) = match judgement {
            Judgement::Refused(admission) => (admission, None, None),
            Judgement::Allowed(admitted) => (admitted.admission().clone(), None, Some(admitted)),
            Judgement::Ask(pending) => {
                let key = exact_key(&call);
                let approval = if self.approved.contains(&key) {
                    Approval::Session
                } else {
                    match self.approver.ask(pending.admission()) {
                        Answer::Once => Approval::AllowOnce,
                        Answer::Session => {
                            self.approved.insert(key);
                            Approval::AllowSession
                        }
                        Answer::Deny => Approval::Deny,
                    }
                };
                let admission = pending.admission().clone();
                let runnable = (approval != Approval::Deny).then(|| pending.approve());
                (admission, Some(approval), runnable)
            }
        };
        Decided {
            time_ms,
            call,
            admission,
            approval,
            runnable,
        }
    }
}

/// The exact call an "allow for the session" covers: the tool and its arguments, keys sorted.
fn exact_key(call: &ProposedCall) -> String {
    let args = serde_json::from_str::<Value>(&call.arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| call.arguments.clone());
    format!("{}\u{0}{args}", call.name)
}

/// Leases, runs on a blocking thread, and takes receipts.
async fn run_one(admitted: Admitted, leases: Arc<Leases>) -> Ran {
    let leased = admitted.lease(&leases).await;
    let admission = leased.admission().clone();
    let need = leased.need().clone();
    let files: &[PathBuf] = match &need {
        Need::Paths(paths) => paths,
        _ => &[],
    };
    let before: Vec<Option<(String, u64)>> = files.iter().map(|f| file_digest(f)).collect();
    let started = Instant::now();
    let started_ms = now_ms();
    let (result, lease) = match tokio::task::spawn_blocking(move || leased.execute()).await {
        Ok(executed) => (
            executed.result.map_err(|e| e.to_string()),
            Some(executed.lease),
        ),
        Err(e) => (Err(format!("the call's thread failed: {e}")), None),
    };
    let duration_ms = started.elapsed().as_millis();
    let mut receipts: Vec<Receipt> = files
        .iter()
        .zip(before)
        .map(|(path, before)| {
            let after = file_digest(path);
            Receipt::File {
                path: path.display().to_string(),
                before_sha256: before.map(|b| b.0),
                bytes: after.as_ref().map(|a| a.1),
                after_sha256: after.map(|a| a.0),
            }
        })
        .collect();
    if admission.bash.is_some() {
        receipts.push(Receipt::Process {
            exit_code: result.as_ref().ok().and_then(|o| o.exit_code),
            note: "its effects were not observed beyond its exit status",
        });
    }
    drop(lease);
    Ran {
        need,
        started_ms,
        duration_ms,
        result,
        receipts,
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
            "blocked: a person declined this call. Nothing ran.".into(),
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
        Some(Ran { result: Err(e), .. }) => (Outcome::Failed, None, format!("failed: {e}")),
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
