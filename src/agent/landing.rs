//! Landing a bash call's changes in a session (issue 25): the session's part of
//! [`crate::effects::settle`], while the call's lease is still held.
//!
//! A writer's run comes back observed and judged ([`crate::effects::Observed`]). Here the
//! session's approver answers what asks — one question for the whole list of changes that ask,
//! each shown with its path, what it did and the rule that asks (a diff of a changed text file
//! is the approver's to show) —, the rewind store keeps the previous state of every path about
//! to change and notes the call before the first one does (so a crash loses nothing), and the
//! call's receipts say, for each change, its before and after digests, as a file tool's do.
//! A discarded run is `blocked`: nothing it did was applied, and the model is told which change
//! was refused and why.

use std::path::PathBuf;

use super::approver::{Answer, Approver};
use crate::effects::{self, Judged, Observed};
use crate::gate::{Admission, Verdict};
use crate::record::{FileState, Receipt, SnapshotFile};
use crate::rewind::{self, Kept, Store};

/// What landing a run's changes left for the record and the model.
#[derive(Debug, Default)]
pub(super) struct Landed {
    /// A file receipt per change made, before and after.
    pub receipts: Vec<Receipt>,
    /// Each change made, for rewind.
    pub changed: Vec<SnapshotFile>,
    /// The rewind note written before the first change landed.
    pub note: Option<PathBuf>,
    /// Why nothing landed (the run is `blocked`), if so.
    pub discarded: Option<String>,
    /// The commit stopped part way (the call `failed`).
    pub broken: bool,
    /// The account for the model: what landed, or what was refused.
    pub lines: Vec<String>,
}

/// Settles `observed`: asks `approver` about what asks, keeps and notes what is about to
/// change in `store`, commits or discards, and says what happened.
pub(super) fn land(
    observed: Observed,
    admission: &Admission,
    approver: &dyn Approver,
    store: &Store,
    (run_id, call_id, tool): (&str, &str, &str),
) -> Landed {
    let mut kept: Vec<(String, Kept)> = Vec::new();
    let mut note = None;
    let settled = effects::settle(
        observed,
        &mut |asking: &[&Judged]| ask(approver, admission, asking),
        &mut |paths| {
            kept = paths
                .iter()
                .map(|p| (p.absolute().display().to_string(), store.keep(p)))
                .collect();
            note = match store.note(run_id, call_id, tool, &kept) {
                Ok(n) => Some(n),
                Err(e) => {
                    tracing::warn!(call_id, "cannot note the call in the rewind store: {e}");
                    None
                }
            };
        },
    );
    let mut landed = Landed {
        note,
        discarded: (!settled.landed && !settled.broken)
            .then(|| settled.why.clone())
            .flatten(),
        broken: settled.broken,
        lines: settled.lines,
        ..Landed::default()
    };
    for (_, path) in &settled.made {
        let shown = path.absolute().display().to_string();
        let Some((_, before)) = kept.iter().find(|(p, _)| *p == shown) else {
            continue;
        };
        let after: FileState = rewind::observe(path);
        landed.receipts.push(Receipt::File {
            path: shown.clone(),
            before_sha256: before.state.sha256().map(str::to_owned),
            after_sha256: after.sha256().map(str::to_owned),
            bytes: after.bytes(),
        });
        if landed.changed.iter().any(|c| c.path == shown) {
            continue;
        }
        landed.changed.push(SnapshotFile {
            path: shown,
            before: before.state.clone(),
            after,
            kept: before.kept,
            note: before.note.clone(),
        });
    }
    landed
}

/// One question about every change that asks: the call's admission, its reasons replaced by
/// the list of those changes and why each asks. "For the session" counts as once: a later
/// run's changes are asked about again.
fn ask(approver: &dyn Approver, admission: &Admission, asking: &[&Judged]) -> bool {
    let mut shown = admission.clone();
    shown.verdict = Verdict::Ask;
    shown.reasons = std::iter::once(format!(
        "the command ran on an overlay; {} of its changes ask before they land in the workspace:",
        asking.len()
    ))
    .chain(asking.iter().map(|j| {
        format!(
            "{} — {}",
            j.change.line(&j.shown),
            if j.rules.is_empty() {
                j.reasons.join("; ")
            } else {
                format!("{} ({})", j.reasons.join("; "), j.rules.join(", "))
            }
        )
    }))
    .collect();
    matches!(
        approver.rule(&shown, None).answer,
        Answer::Once | Answer::Session
    )
}
