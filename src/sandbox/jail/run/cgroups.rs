//! A run's cgroups: made (or taken from the idle ones) for the limits its plan promised, what
//! stands in for one that cannot be made, and the idle cgroups seeded at the first run.

use crate::sandbox::jail::cgroup::{self, Cgroup};
use crate::sandbox::jail::{Enforcement, JailPlan};

use super::RunError;

/// What this run applies instead of the pids cgroup its plan promised, when the cgroup cannot be
/// made: under `enforce`, nothing (the error refuses the run); otherwise `RLIMIT_NPROC`, and the
/// words for the run's result.
pub(super) fn without_pids_cgroup(
    plan: &JailPlan,
    parent: &std::path::Path,
    error: &std::io::Error,
) -> Result<String, RunError> {
    let parent = parent.display();
    if plan.mode == Enforcement::Enforce {
        let instead = if plan.capabilities.uid == 0 {
            "RLIMIT_NPROC, the fallback, does not bind root"
        } else {
            "RLIMIT_NPROC, the fallback, counts every process of this user rather than this run's, and misses processes that leave the group"
        };
        return Err(RunError::Refused(format!(
            "sandbox.bash is enforce, and the pids cgroup the plan promises could not be made in {parent} ({error}); {instead}"
        )));
    }
    Ok(if plan.capabilities.uid == 0 {
        format!(
            "process count: the pids cgroup could not be made in {parent} ({error}), and RLIMIT_NPROC, set instead, does not bind root: this run's processes were not counted"
        )
    } else {
        format!(
            "process count: the pids cgroup could not be made in {parent} ({error}); RLIMIT_NPROC counted this user's processes instead, and processes that left the group could outlive the run"
        )
    })
}

/// What this run applies instead of the memory cgroup its plan promised, when the cgroup cannot
/// be made: under `enforce`, nothing (the error refuses the run); otherwise `RLIMIT_AS`, and the
/// words for the run's result.
pub(super) fn without_memory_cgroup(
    plan: &JailPlan,
    parent: &std::path::Path,
    error: &std::io::Error,
) -> Result<String, RunError> {
    let parent = parent.display();
    if plan.mode == Enforcement::Enforce {
        return Err(RunError::Refused(format!(
            "sandbox.bash is enforce, and the memory cgroup the plan promises could not be made in {parent} ({error}); RLIMIT_AS, the fallback, bounds each process's address space rather than the run's memory"
        )));
    }
    Ok(format!(
        "memory: the memory cgroup could not be made in {parent} ({error}); RLIMIT_AS bounded each process's address space instead, so this run's processes together could use more"
    ))
}

/// The cgroups of one run, as the plan promised them, and what could not be had.
#[derive(Debug)]
pub(in crate::sandbox::jail) struct RunCgroups {
    /// Made (removed on drop, after killing what is left in them).
    pub(super) groups: Vec<Cgroup>,
    /// The run has no pids cgroup: `RLIMIT_NPROC` instead.
    pub(super) nproc: bool,
    /// The run has no memory cgroup: `RLIMIT_AS` instead.
    pub(super) address_space: bool,
}

/// Makes a run's pids and memory cgroups where its plan promises them — one cgroup with both
/// limits when both controllers share a hierarchy. Under `enforce`, one that cannot be made
/// refuses the run; under `best_effort` its fallback is used and the words join `not_enforced`.
pub(super) fn run_cgroups(
    plan: &JailPlan,
    not_enforced: &mut Vec<String>,
) -> Result<RunCgroups, RunError> {
    if let Some(ready) = plan.idle_cgroups.take() {
        return Ok(ready);
    }
    let caps = &plan.capabilities;
    let limits = plan.limits;
    let mut out = RunCgroups {
        groups: Vec::new(),
        nproc: true,
        address_space: true,
    };
    let shared = caps.cgroup_pids.is_some() && caps.cgroup_pids == caps.cgroup_memory;
    if let Some(parent) = &caps.cgroup_pids {
        match Cgroup::create(parent, limits.processes) {
            Ok(cg) => {
                out.nproc = false;
                if shared {
                    match cg.limit_memory(limits.memory_bytes) {
                        Ok(()) => out.address_space = false,
                        Err(e) => not_enforced.push(without_memory_cgroup(plan, parent, &e)?),
                    }
                }
                out.groups.push(cg);
            }
            Err(e) => {
                not_enforced.push(without_pids_cgroup(plan, parent, &e)?);
                if shared {
                    not_enforced.push(without_memory_cgroup(plan, parent, &e)?);
                }
            }
        }
    }
    if let Some(parent) = caps.cgroup_memory.as_ref().filter(|_| !shared) {
        let made =
            Cgroup::make(parent).and_then(|cg| cg.limit_memory(limits.memory_bytes).map(|()| cg));
        match made {
            Ok(cg) => {
                out.address_space = false;
                out.groups.push(cg);
            }
            Err(e) => not_enforced.push(without_memory_cgroup(plan, parent, &e)?),
        }
    }
    Ok(out)
}

/// Keeps for a plan's first run the cgroups its probe made to try their parents
/// (`cgroup::take_tried`), given the plan's limits, instead of removing them and making them
/// again (issue 12: two cgroups made and removed per `sandbox exec`). Only a whole set — every
/// cgroup the plan promises, each limit set — is kept, as a finished run's would be; anything
/// else is removed (dropped), and the first run makes its own.
pub(in crate::sandbox::jail) fn seed_cgroups(plan: &JailPlan, tried: Vec<cgroup::Tried>) {
    if plan.mode == Enforcement::Off || plan.dry || tried.is_empty() {
        return;
    }
    let caps = &plan.capabilities;
    let limits = plan.limits;
    let shared = caps.cgroup_pids.is_some() && caps.cgroup_pids == caps.cgroup_memory;
    let (mut pids, mut memory) = (None, None);
    for t in tried {
        match (t.memory, &caps.cgroup_pids, &caps.cgroup_memory) {
            (false, Some(parent), _) if t.cgroup.path().parent() == Some(parent) => {
                pids = Some(t.cgroup);
            }
            (true, _, Some(parent)) if t.cgroup.path().parent() == Some(parent) => {
                memory = Some(t.cgroup);
            }
            _ => {}
        }
    }
    let missing = || std::io::Error::other("not tried");
    let whole = (|| -> std::io::Result<Vec<Cgroup>> {
        let mut groups = Vec::new();
        if caps.cgroup_pids.is_some() {
            let cg = pids.take().ok_or_else(missing)?;
            cg.limit_processes(limits.processes)?;
            if shared {
                cg.limit_memory(limits.memory_bytes)?;
            }
            groups.push(cg);
        }
        if caps.cgroup_memory.is_some() && !shared {
            let cg = memory.take().ok_or_else(missing)?;
            cg.limit_memory(limits.memory_bytes)?;
            groups.push(cg);
        }
        Ok(groups)
    })();
    if let Ok(groups) = whole
        && !groups.is_empty()
    {
        let ready = RunCgroups {
            groups,
            nproc: caps.cgroup_pids.is_none(),
            address_space: caps.cgroup_memory.is_none(),
        };
        // Nothing ever ran in them: they show empty, and are kept.
        let _ = plan.idle_cgroups.give_back(ready, true);
    }
}
