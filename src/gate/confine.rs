//! Stage 7, **sandbox**: whatever policy said, a call is refused when
//!
//! 1. a path it reads or writes (not a shell word that may name a file: the jail confines what
//!    a command really opens) lies outside every root it may use, or did not resolve;
//! 2. it would change the host's own files, or a folder that holds one ([`crate::host`]);
//! 3. it starts a process — a bash command, or a stdio MCP server
//!    ([`crate::tool::Classification::starts_process`]) — under a jail plan that refuses to run
//!    anything (`enforce` on a kernel that cannot enforce it), or it is a bash writer that the
//!    plan cannot observe (`enforce` where no overlay can be made: issue 25).
//!
//! This runs before approval so that nobody is asked about a call that could not run. A policy
//! deny is reported as it is (stage `policy`): the rule a security team wrote is what the user
//! sees.

use super::verdict::{Stage, Verdict};
use super::vote::Ruled;
use crate::host::{Protected, Reach};
use crate::sandbox::SharedJailPlan;
use crate::sandbox::jail::Writes;
use crate::vocab::{Access, PathRole};

/// A judged call with the confinement verdict folded in.
pub(super) struct Confined {
    pub ruled: Ruled,
    pub verdict: Verdict,
    pub stage: Stage,
    pub reasons: Vec<String>,
}

/// Applies the sandbox's refusals to the policy's verdict.
pub(super) fn confine(ruled: Ruled, host: &Protected, jail: &SharedJailPlan) -> Confined {
    let mut verdict = Verdict::from(ruled.ruling.decision);
    let mut stage = Stage::Policy;
    let mut reasons = ruled.ruling.reasons.clone();
    if verdict != Verdict::Deny {
        let refusals = refusals(&ruled, host, jail);
        if !refusals.is_empty() {
            verdict = Verdict::Deny;
            stage = Stage::Sandbox;
            reasons = refusals
                .into_iter()
                .chain(reasons.into_iter().map(|r| format!("(policy alone: {r})")))
                .collect();
        }
    }
    Confined {
        ruled,
        verdict,
        stage,
        reasons,
    }
}

/// Every reason the sandbox refuses the call, in the order of the module doc.
fn refusals(ruled: &Ruled, host: &Protected, jail: &SharedJailPlan) -> Vec<String> {
    let class = &ruled.resolved.class;
    let touched = &ruled.resolved.touched;
    let mut out: Vec<String> = touched
        .iter()
        .filter(|t| t.role != PathRole::Argument)
        .filter_map(|t| {
            t.placement
                .as_ref()
                .err()
                .map(|e| format!("{:?}: {e}", t.written))
        })
        .collect();
    for t in touched {
        let reach = if t.access == Access::Write {
            Reach::Changes
        } else if t.role == PathRole::Argument && !class.read_only {
            // The analysis cannot tell which of a command's words it writes.
            Reach::Names
        } else {
            continue;
        };
        if let Some(why) = t.forms().iter().find_map(|f| host.conflict(f, reach))
            && !out.contains(&why)
        {
            out.push(why);
        }
    }
    // A bash call runs as its admission says (issue 25): a writer needs an overlay to be
    // observed, which `enforce` will not do without.
    let writes = if class.bash.is_some() {
        Writes::for_effects(!class.read_only)
    } else {
        Writes::Direct
    };
    if (class.bash.is_some() || class.starts_process)
        && let Some(why) = jail.get().refusal_for(writes)
    {
        out.push(why.to_owned());
    }
    out
}
