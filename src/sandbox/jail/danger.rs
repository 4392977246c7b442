//! Running a command that no gate judged: the jail alone, without policy, approval, lease or
//! record. Every call of this module should be audited; reviewers grep for `danger`.
//!
//! A tool call reaches the jail only through the gate: an admitted bash call runs under its
//! admission's plan. This module is the one other way in, for `reasonix sandbox exec` (a person
//! at a terminal running a command of their own in the jail, to see what it may do) and for the
//! jail's own tests and benches.

use std::time::Duration;

use super::{Capture, JailPlan, RunError, RunResult, Shape};

/// Runs `argv` under `plan`, with a wall-clock limit (the smaller of `timeout` and the plan's),
/// capturing output as asked — a command that **no gate judged**: no policy decided it may run,
/// nobody approved it, no write lease is taken and nothing is recorded. Only the jail applies.
///
/// For `reasonix sandbox exec` and tests; everything else goes through [`crate::Gate`].
///
/// # Errors
///
/// [`RunError::Refused`] when the plan refuses to run anything, or when a part it promises
/// cannot be set up for this run under `enforce` (the pids cgroup); nothing was started then.
/// [`RunError::Setup`] and [`RunError::Spawn`] when the jail or the program could not be
/// prepared or started.
pub fn exec_unjudged(
    plan: &JailPlan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
) -> Result<RunResult, RunError> {
    super::run(plan, argv, timeout, capture, &Shape::direct())
}

/// [`exec_unjudged`] in a shape of the caller's choosing: read-only, or observed — then the run's
/// upper layers come back in [`RunResult::observed`], and nothing it wrote is in the workspace
/// until the caller commits it (`reasonix sandbox exec --observe` judges it by the policy
/// first, [`crate::effects`]).
///
/// # Errors
///
/// As [`exec_unjudged`]; and [`RunError::Refused`] for an observed shape under `enforce` where
/// no overlay can be made.
pub fn exec_unjudged_shaped(
    plan: &JailPlan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
    shape: &Shape,
) -> Result<RunResult, RunError> {
    super::run(plan, argv, timeout, capture, shape)
}

/// [`exec_unjudged`], with a judge of its own for the connections its processes ask the egress
/// proxy for (without one, the `sandbox.network` entries alone decide). For tests and benches
/// that stand in for the gate.
///
/// # Errors
///
/// As [`exec_unjudged`].
pub fn exec_unjudged_with_judge(
    plan: &JailPlan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
    judge: std::sync::Arc<dyn crate::egress::ConnectionJudge>,
) -> Result<RunResult, RunError> {
    super::run_judged(plan, argv, timeout, capture, Some(judge), &Shape::direct())
}
