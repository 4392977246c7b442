//! The turn: the loop of [`Session::run`] — ask the model, judge and run the calls of its
//! answer, go on until it stops — and [`Session::call`], one call from outside the loop.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;

use super::decide::Decided;
use super::execute::{Ran, run_one};
use super::goal::Check;
use super::record_line::conclude;
use super::{End, Served, Session, SessionError};
use crate::agent::provider::{Event, Message, ProposedCall, Request};
use crate::record::{AttemptRecord, EventRecord, Outcome, RunStartRecord, now_ms};
use crate::tool::builtin::SUBMIT_PLAN;

/// What the current attempt at an answer has brought so far.
#[derive(Default)]
pub(super) struct Partial {
    pub(super) text: String,
    pub(super) reasoning: String,
    pub(super) calls: BTreeMap<usize, ProposedCall>,
}

impl Session {
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

    pub(super) async fn run_steps(&mut self, prompt: &str) -> Result<End, SessionError> {
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

    /// Streams one answer; returns its calls (none: the model is done).
    pub(super) async fn turn(&mut self, step: usize) -> Result<Vec<ProposedCall>, SessionError> {
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
    pub(super) async fn act(
        &mut self,
        calls: Vec<ProposedCall>,
    ) -> Result<Option<String>, SessionError> {
        self.restart_dead(&calls).await?;
        let mut judged: Vec<Decided> = calls.into_iter().map(|c| self.decide(c)).collect();
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
        let mut j = self.decide(proposed);
        let ran = self.run_alone(&mut j).await;
        let (outcome, exit_code, full) = conclude(&j, ran.as_ref());
        let (record, text) = self.finish(&j, ran.as_ref(), outcome, exit_code, &full)?;
        Ok(Served { record, text })
    }
}
