//! The call's execution: leased, what a file tool may change kept in the rewind store, run on a
//! blocking thread, receipts taken while the lease is held, a bash writer's changes settled.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::Session;
use super::decide::Decided;
use crate::agent::approver::Approver;
use crate::agent::landing;
use crate::gate::Admitted;
use crate::lease::{Leases, Need};
use crate::record::{FileState, Receipt, SnapshotFile, now_ms};
use crate::rewind::{self, Kept, Store};
use crate::tool::Output;

/// What running one call produced.
pub(super) struct Ran {
    pub(super) need: Need,
    pub(super) started_ms: u128,
    pub(super) duration_ms: u128,
    pub(super) result: Result<Output, String>,
    pub(super) receipts: Vec<Receipt>,
    /// The paths whose state the call changed, before and after (file tools only).
    pub(super) changed: Vec<SnapshotFile>,
    /// The note kept in the store while the call's line is not yet recorded
    /// ([`Store::note`]); settled once it is.
    pub(super) note: Option<PathBuf>,
    /// A bash writer whose changes were refused: why nothing it did was applied (issue 25).
    pub(super) discarded: Option<String>,
    /// Its lease could not be taken: it never ran (the result says why).
    pub(super) unleased: bool,
}

/// Leases, keeps what a file tool is about to change, runs on a blocking thread, and takes
/// receipts while the lease is still held.
///
/// Before a file tool runs, what it may change is kept and noted in the rewind store
/// ([`Store::note`]), so that a run stopped before the call's line is recorded loses nothing.
pub(super) async fn run_one(
    admitted: Admitted,
    leases: Arc<Leases>,
    store: Store,
    approver: Arc<dyn Approver>,
    (run_id, call_id, tool): (String, String, String),
    span: tracing::Span,
) -> Ran {
    let need = admitted.need();
    let leased = match admitted.lease(&leases).await {
        Ok(leased) => leased,
        // Fail closed (issue 28): a lease that cannot hold across processes refuses the call.
        Err(e) => {
            return Ran {
                need,
                started_ms: now_ms(),
                duration_ms: 0,
                result: Err(e.to_string()),
                receipts: Vec::new(),
                changed: Vec::new(),
                note: None,
                discarded: None,
                unleased: true,
            };
        }
    };
    let admission = leased.admission().clone();
    let admission_for_job = admission.clone();
    let need = leased.need().clone();
    // Only a call leased by the paths it changes is observed: a shell command's effects are not.
    let changes = if matches!(need, Need::Paths(_)) {
        leased.changes()
    } else {
        Vec::new()
    };
    let job = move || {
        // The jail run's span is a child of the call's.
        let _call = span.enter();
        let paths: Vec<String> = changes
            .iter()
            .map(|p| p.absolute().display().to_string())
            .collect();
        let before: Vec<Kept> = changes.iter().map(|p| store.keep(p)).collect();
        let note = if paths.is_empty() {
            None
        } else {
            let noted: Vec<(String, Kept)> =
                paths.iter().cloned().zip(before.iter().cloned()).collect();
            match store.note(&run_id, &call_id, &tool, &noted) {
                Ok(note) => Some(note),
                Err(e) => {
                    // The call's line will still carry its snapshot; only a crash before that
                    // line would lose what it changed.
                    tracing::warn!(call_id, "cannot note the call in the rewind store: {e}");
                    None
                }
            }
        };
        let started = Instant::now();
        let started_ms = now_ms();
        // A bash writer's changes land (or not) in the execute stage, the lease still held:
        // the approver answers what asks, the store keeps what is about to change (issue 25).
        let ids = (run_id.as_str(), call_id.as_str(), tool.as_str());
        let mut keeping = landing::Keeping::new(&store, ids);
        let executed = leased.execute_with(
            &mut |asking| landing::ask(approver.as_ref(), &admission_for_job, asking),
            &mut |paths| keeping.before(paths),
        );
        let landed = executed.settled.as_ref().map(|settled| {
            (
                keeping.landed(settled),
                keeping.note.take(),
                settled_state(settled),
            )
        });
        let duration_ms = started.elapsed().as_millis();
        // The first few files' contents after the call are kept for a report's diff.
        let after: Vec<FileState> = changes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i < rewind::MAX_AFTER_KEPT_FILES {
                    store.keep_after(p)
                } else {
                    rewind::observe(p)
                }
            })
            .collect();
        (
            paths,
            before,
            after,
            note,
            started_ms,
            duration_ms,
            executed,
            landed,
        )
    };
    let (paths, before, after, note, started_ms, duration_ms, result, lease, landed) =
        match tokio::task::spawn_blocking(job).await {
            Ok((paths, before, after, note, started_ms, duration_ms, executed, landed)) => (
                paths,
                before,
                after,
                note,
                started_ms,
                duration_ms,
                executed.result.map_err(|e| e.to_string()),
                Some(executed.lease),
                landed,
            ),
            // A tool that panicked (a bug): the note, if any, stays in the store, but the call's
            // line recorded next makes a rewind pass it over, so what it changed goes unrestored.
            Err(e) => (
                Vec::new(),
                Vec::new(),
                Vec::new(),
                None,
                now_ms(),
                0,
                Err(format!("the call's thread failed: {e}")),
                None,
                None,
            ),
        };
    let mut receipts = Vec::with_capacity(paths.len() + 1);
    let mut changed = Vec::new();
    for ((path, before), after) in paths.into_iter().zip(before).zip(after) {
        receipts.push(Receipt::File {
            path: path.clone(),
            before_sha256: before.state.sha256().map(str::to_owned),
            after_sha256: after.sha256().map(str::to_owned),
            bytes: after.bytes(),
        });
        if before.state != after {
            changed.push(SnapshotFile {
                path,
                before: before.state,
                after,
                kept: before.kept,
                note: before.note,
            });
        }
    }
    let mut result = result;
    let mut note = note;
    let mut discarded = None;
    if admission.bash.is_some() {
        let exit_code = result.as_ref().ok().and_then(|o| o.exit_code);
        let unobserved = result.as_ref().ok().and_then(|o| o.unobserved.clone());
        let (observed, said) = match (&landed, unobserved) {
            (_, Some(why)) => (false, why),
            (Some((_, _, Settle::Discarded(_))), None) => (
                true,
                "its changes were observed on an overlay and discarded: nothing it did was applied"
                    .to_owned(),
            ),
            (Some((_, _, Settle::Broken)), None) => (
                true,
                "its changes were observed on an overlay; the commit stopped part way (the file receipts say what landed)".to_owned(),
            ),
            (Some((l, _, Settle::Landed)), None) => (
                true,
                format!(
                    "its effects were observed on an overlay: {} landed",
                    crate::effects::changes(l.changed.len())
                ),
            ),
            (None, None) if admission.read_only == Some(true) => {
                let mut said = "admitted as read-only: the workspace and write roots were read-only to it, so it changed nothing there".to_owned();
                let refused = result
                    .as_ref()
                    .is_ok_and(|o| o.text.contains("Read-only file system"));
                if refused {
                    said.push_str("; its output reports a write the jail refused (EROFS), which the call never declared");
                }
                (true, said)
            }
            (None, None) => (
                false,
                "its effects were not observed beyond its exit status".to_owned(),
            ),
        };
        if let Some((landed, landed_note, state)) = landed {
            receipts.extend(landed.receipts);
            changed.extend(landed.changed);
            note = note.or(landed_note);
            match state {
                Settle::Broken => {
                    result = result.and_then(|o| Err(o.text));
                }
                Settle::Discarded(why) => discarded = Some(why),
                Settle::Landed => {}
            }
        }
        receipts.push(Receipt::Process {
            exit_code,
            observed,
            note: said,
        });
    }
    drop(lease);
    Ran {
        need,
        started_ms,
        duration_ms,
        result,
        receipts,
        changed,
        note,
        discarded,
        unleased: false,
    }
}

/// What became of a bash writer's changes, for its outcome.
pub(super) enum Settle {
    Landed,
    Discarded(String),
    Broken,
}

pub(super) fn settled_state(settled: &crate::effects::Settled) -> Settle {
    if settled.broken {
        Settle::Broken
    } else if settled.landed {
        Settle::Landed
    } else {
        Settle::Discarded(settled.why.clone().unwrap_or_default())
    }
}

impl Session {
    /// Runs a judged call alone, if it was admitted: its lease, its rewind note, its execution.
    pub(super) async fn run_alone(&self, j: &mut Decided) -> Option<Ran> {
        let admitted = j.runnable.take()?;
        let note = self.note_for(&j.call);
        Some(
            run_one(
                admitted,
                Arc::clone(&self.leases),
                self.store.clone(),
                Arc::clone(&self.approver),
                note,
                j.span.clone(),
            )
            .await,
        )
    }
}
