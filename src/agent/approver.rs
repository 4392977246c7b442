//! The approve stage for a live run: who answers an `ask`.
//!
//! On a terminal a person is asked (the CLI's prompt shows the analysis and the rule that
//! asked): allow once, allow this exact call for the rest of the session, or deny. An approval
//! never widens beyond the exact call — same tool, same arguments. With no terminal, or with
//! `--unattended`, the gate's posture has already settled every ask (`defaults.unattended`), so no
//! one is asked.
//!
//! A session in plan mode has a [`PlanReviewer`] too: the person approves the plan handed in with
//! `submit_plan` or rejects it with feedback; an unattended run ends with the plan, unless it was
//! told to approve its own (`--approve-plan`).

use crate::gate::Admission;
use crate::record::{Approval, ApproverKind};

/// A person's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Once,
    /// Run this call, and the same exact call again later in this session.
    Session,
    /// Do not run it.
    Deny,
}

impl From<Answer> for Approval {
    /// How the record names a person's answer.
    fn from(answer: Answer) -> Self {
        match answer {
            Answer::Once => Approval::AllowOnce,
            Answer::Session => Approval::AllowSession,
            Answer::Deny => Approval::Deny,
        }
    }
}

/// An answer, with who gave it and, when it says more than the answer, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ruling {
    /// The answer.
    pub answer: Answer,
    /// Who gave it, as the record names them.
    pub by: ApproverKind,
    /// What the answer was, in words (a refusal's cause: declined, cancelled, unanswered in
    /// time…); the caller is told it when the call is refused.
    pub note: Option<String>,
}

/// Who answers asks.
pub trait Approver: Send + Sync {
    /// Answers one ask.
    fn ask(&self, admission: &Admission) -> Answer;

    /// Answers one ask about a call whose arguments are `arguments` (`None` for a connection a
    /// running command asks for), saying who answered and why. By default: [`Approver::ask`],
    /// answered by a person, with nothing more to say.
    fn rule(&self, admission: &Admission, arguments: Option<&str>) -> Ruling {
        let _ = arguments;
        Ruling {
            answer: self.ask(admission),
            by: ApproverKind::Person,
            note: None,
        }
    }
}

/// Answers every ask the same way: for tests and scripted demos.
pub struct Always(pub Answer);

impl Approver for Always {
    fn ask(&self, _admission: &Admission) -> Answer {
        self.0
    }
}

/// What the reviewer of a plan decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanAnswer {
    /// A person approved it: the session goes on in normal mode.
    Approve,
    /// A person rejected it; the words go back to the model, and the session stays in plan mode.
    Reject(String),
    /// The run approved its own plan (`--approve-plan`): it goes on in normal mode.
    SelfApprove,
    /// Nobody can review it (an unattended `--plan` run): the run ends with the plan.
    End,
}

/// Who reviews the plan a session in plan mode hands in with `submit_plan`.
pub trait PlanReviewer: Send + Sync {
    /// Reviews one plan.
    fn review(&self, plan: &str) -> PlanAnswer;
}

/// Reviews every plan the same way: an unattended run (`End`, or `SelfApprove` with
/// `--approve-plan`), tests and scripted demos.
pub struct Decided(pub PlanAnswer);

impl PlanReviewer for Decided {
    fn review(&self, _plan: &str) -> PlanAnswer {
        self.0.clone()
    }
}
