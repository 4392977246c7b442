//! Stage 9, **approve**: the posture decides what an `ask` becomes.
//!
//! 1. `interactive`: an ask stays an ask; a person answers it (the agent's approver).
//! 2. `unattended`: nobody can answer. An ask that a *rule* raised becomes `defaults.unattended`.
//!    An ask the analysis raised — a command it did not understand, a hazard, a word it cannot
//!    know — becomes `deny`, whatever `defaults.unattended` says: a posture never turns what the
//!    gate could not vouch for into an allow.
//! 3. `strict`: only a call an allow rule covers runs: every ask, and every fallback allow,
//!    becomes deny.

use super::confine::Confined;
use super::plan::Planned;
use super::verdict::{Stage, Verdict};
use crate::policy::{Defaults, Posture, Unattended};

/// A confined call with the posture applied: the final verdict.
pub(super) struct Approved {
    pub confined: Confined,
    /// The posture answered an ask (the verdict was `ask` before it).
    pub asked: bool,
}

/// Applies the posture.
pub(super) fn approve(planned: Planned, posture: Posture, defaults: Defaults) -> Approved {
    let mut c = planned.confined;
    let fallback = c.ruled.ruling.fallback.is_some();
    let person = c.ruled.ruling.needs_person.clone();
    let (to, why) = match (posture, c.verdict) {
        (Posture::Unattended, Verdict::Ask) => match person {
            Some(why) => (
                Verdict::Deny,
                format!(
                    "unattended posture: nobody can answer, and a person was needed because {why}; defaults.unattended cannot allow what the analysis could not vouch for"
                ),
            ),
            None => {
                let to = match defaults.unattended {
                    Unattended::Allow => Verdict::Allow,
                    Unattended::Deny => Verdict::Deny,
                };
                (
                    to,
                    format!(
                        "unattended posture: nobody can answer, so ask becomes {to} (defaults.unattended)"
                    ),
                )
            }
        },
        (Posture::Strict, Verdict::Ask) => {
            (Verdict::Deny, "strict posture: ask becomes deny".into())
        }
        (Posture::Strict, Verdict::Allow) if fallback => (
            Verdict::Deny,
            "strict posture: only a call an allow rule covers may run, and no allow rule covers this one".into(),
        ),
        _ => {
            return Approved {
                confined: c,
                asked: false,
            };
        }
    };
    let asked = c.verdict == Verdict::Ask;
    c.stage = Stage::Approve;
    c.verdict = to;
    c.reasons.insert(0, why);
    Approved { confined: c, asked }
}
