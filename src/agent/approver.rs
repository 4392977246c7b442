//! The approve stage for a live run: who answers an `ask`.
//!
//! On a terminal a person is asked (the CLI's prompt shows the analysis and the rule that
//! asked): allow once, allow this exact call for the rest of the session, or deny. An approval
//! never widens beyond the exact call — same tool, same arguments. With no terminal, or with
//! `--unattended`, the gate's posture has already settled every ask (`defaults.unattended`), so no
//! one is asked.

use crate::gate::Admission;

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

/// Who answers asks.
pub trait Approver: Send + Sync {
    /// Answers one ask.
    fn ask(&self, admission: &Admission) -> Answer;
}

/// Answers every ask the same way: for tests and scripted demos.
pub struct Always(pub Answer);

impl Approver for Always {
    fn ask(&self, _admission: &Admission) -> Answer {
        self.0
    }
}
