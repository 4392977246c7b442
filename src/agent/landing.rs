//! Landing a bash call's changes in a session (issue 25): the session's part of
//! [`crate::effects::settle`] (through [`crate::lease::Leased::execute_with`]), while the call's
//! lease is still held.
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
use crate::effects::{Judged, Settled};
use crate::gate::{Admission, Verdict};
use crate::record::{FileState, Receipt, SnapshotFile};
use crate::rewind::{self, Kept, Store};
use crate::sandbox::ConfinedPath;

/// What landing a run's changes left for the record.
#[derive(Debug, Default)]
pub(super) struct Landed {
    /// A file receipt per change made, before and after.
    pub receipts: Vec<Receipt>,
    /// Each change made, for rewind.
    pub changed: Vec<SnapshotFile>,
}

/// The rewind store's part: keeps the previous state of every path about to change, and notes
/// the call, before the first one does.
pub(super) struct Keeping<'a> {
    store: &'a Store,
    ids: (&'a str, &'a str, &'a str),
    /// Each path kept, with how it was.
    pub kept: Vec<(String, Kept)>,
    /// The note written.
    pub note: Option<PathBuf>,
}

impl<'a> Keeping<'a> {
    pub(super) fn new(store: &'a Store, ids: (&'a str, &'a str, &'a str)) -> Keeping<'a> {
        Keeping {
            store,
            ids,
            kept: Vec::new(),
            note: None,
        }
    }

    /// Keeps and notes `paths` (called once, before the first change lands).
    pub(super) fn before(&mut self, paths: &[ConfinedPath]) {
        let (run_id, call_id, tool) = self.ids;
        self.kept = paths
            .iter()
            .map(|p| (p.absolute().display().to_string(), self.store.keep(p)))
            .collect();
        self.note = match self.store.note(run_id, call_id, tool, &self.kept) {
            Ok(n) => Some(n),
            Err(e) => {
                tracing::warn!(call_id, "cannot note the call in the rewind store: {e}");
                None
            }
        };
    }

    /// The receipts and snapshot of what `settled` made, each path as it was kept before and
    /// as it is now.
    pub(super) fn landed(&self, settled: &Settled) -> Landed {
        let mut landed = Landed::default();
        for p in &settled.passed {
            landed.receipts.push(Receipt::Passthrough {
                path: p.path.clone(),
                files: p.files,
                bytes: p.bytes,
                note: "written in place (sandbox.passthrough): not observed, only counted".into(),
            });
        }
        for r in &settled.refused {
            landed.receipts.push(Receipt::RefusedChange {
                path: r.path.clone(),
                change: r.change,
                verdict: r.verdict,
                rules: r.rules.clone(),
                reasons: r.reasons.clone(),
            });
        }
        let kept: std::collections::HashMap<&str, &Kept> =
            self.kept.iter().map(|(p, k)| (p.as_str(), k)).collect();
        let mut seen = std::collections::HashSet::new();
        for (_, path) in &settled.made {
            let shown = path.absolute().display().to_string();
            let Some(before) = kept.get(shown.as_str()) else {
                continue;
            };
            // The first few files' contents after the call are kept for a report's diff.
            let after: FileState = if landed.changed.len() < rewind::MAX_AFTER_KEPT_FILES {
                self.store.keep_after(path)
            } else {
                rewind::observe(path)
            };
            landed.receipts.push(Receipt::File {
                path: shown.clone(),
                before_sha256: before.state.sha256().map(str::to_owned),
                after_sha256: after.sha256().map(str::to_owned),
                bytes: after.bytes(),
            });
            if !seen.insert(shown.clone()) {
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
}

/// One question about every change that asks: the call's admission, its reasons replaced by
/// the list of those changes and why each asks. "For the session" counts as once: a later
/// run's changes are asked about again.
pub(super) fn ask(approver: &dyn Approver, admission: &Admission, asking: &[&Judged]) -> bool {
    let mut shown = admission.clone();
    shown.verdict = Verdict::Ask;
    shown.reasons = std::iter::once(format!(
        "the command ran on an overlay; {} of its changes ask before they land in the workspace:",
        asking.len()
    ))
    .chain(asking.iter().map(|j| {
        let mut line = format!(
            "{} — {}",
            j.change.line(&j.shown),
            if j.rules.is_empty() {
                j.reasons.join("; ")
            } else {
                format!("{} ({})", j.reasons.join("; "), j.rules.join(", "))
            }
        );
        // What a text file now holds, as a diff: a person approves content, not a name.
        if let Some(diff) = j.change.diff(&j.shown) {
            line.push('\n');
            line.push_str(diff.trim_end());
        }
        line
    }))
    .collect();
    matches!(
        approver.rule(&shown, None).answer,
        Answer::Once | Answer::Session
    )
}
