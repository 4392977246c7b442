//! Stage 8, **plan**: in plan mode, a call that is not read-only waits for an approved plan.
//!
//! 1. In `normal` mode nothing changes here.
//! 2. In `plan` mode, a call the earlier stages would let run or ask about, and that is not
//!    read-only (the tool's classification; for bash, the analysis), is denied at stage `plan`
//!    with "plan mode: changes wait for an approved plan". A read-only call — a read, a search,
//!    a command the analysis vouches changes nothing, `submit_plan` itself — passes as usual.
//! 3. A call already denied keeps its own stage and reason: a policy deny or a sandbox refusal
//!    says more than "not yet", and the call would not run after approval either.
//!
//! It sits after the sandbox and before approval, so that nobody is asked about, and nothing
//! leases or starts, a change the mode holds back (the design's "before any prompt, lease or
//! process"). The posture cannot turn this deny into anything else: approval changes only an
//! ask or an allow.
//!
//! What this stage admits as read-only, a gate in plan mode also runs as read-only: its jail
//! ([`crate::sandbox::jail::JailPlan::read_only`]) grants the workspace and the `write_roots` for
//! reading only, so a command the analysis took for a reader and that writes anyway is refused
//! by the kernel (under `sandbox.bash: enforce`; `best_effort` says what it could not apply).
//!
//! Not held back: a read-only call's reads (of anything policy lets it read), a command's
//! network access where the jail's `network` rules allow it, and writes to the run's private
//! temporary folder. Plan mode is about the workspace not changing, not about secrecy.

use super::confine::Confined;
use super::verdict::{Stage, Verdict};
use crate::policy::input::GateMode;

/// The deciding reason of a call plan mode holds back.
pub const PLAN_REASON: &str =
    "plan mode: changes wait for an approved plan (hand in the plan with submit_plan)";

/// A confined call with the mode applied.
pub(super) struct Planned {
    pub confined: Confined,
}

/// Applies the mode.
pub(super) fn plan(mut c: Confined, mode: GateMode) -> Planned {
    let held = mode == GateMode::Plan
        && matches!(c.verdict, Verdict::Allow | Verdict::Ask)
        && !c.ruled.resolved.class.read_only;
    if held {
        let before = std::mem::take(&mut c.reasons);
        c.verdict = Verdict::Deny;
        c.stage = Stage::Plan;
        c.reasons = std::iter::once(PLAN_REASON.to_owned())
            .chain(before.into_iter().map(|r| format!("(once approved: {r})")))
            .collect();
    }
    Planned { confined: c }
}
