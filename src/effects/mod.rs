//! The stages after a writer's run: **observe** what it changed, **judge** each change, then
//! **commit** or **discard** (issue 25). The analysis predicts; this is where a wrong prediction
//! stops costing anything.
//!
//! A bash call admitted to write runs on an overlay of each write root ([`crate::sandbox::jail`],
//! [`Writes::Observed`](crate::sandbox::jail::Writes)): its changes land in an upper layer of the
//! run's own, and the workspace is untouched while it runs. When every process of the run is
//! gone:
//!
//! 1. **observe** ([`observe::changes`]): the upper layers are read into a list of [`Change`]s —
//!    files and folders created, changed (content, permission bits, kind) and deleted
//!    (overlayfs's whiteouts; a folder deleted or replaced whole — opaque — stands for each
//!    path below it that goes), links with their targets; fifos and device nodes are refused,
//!    sockets (nothing without their process) dropped with a note, and a change of times only
//!    is not a change;
//! 2. **judge** ([`ChangeJudge`], implemented by the gate): each change is the call the file
//!    tool that would make it would be — `write_file` (with the new content, when it is text),
//!    or `delete_file` — admitted by the very gate that admitted the command: the same rules,
//!    Rego, host files, roots, plan mode and posture. How a change relates to the command's own
//!    admission (when an `ask` is the command's own, already answered) is the gate's
//!    (`crate::gate`'s `changes` module, and the README);
//! 3. **commit or discard** ([`settle`]): every change allowed — each is made through the write
//!    grant of its own admission, beneath its root without following a symlink, folders
//!    first, files atomically (temporary file, `fsync`, rename) with their permission bits
//!    (never set-id or sticky), deletions last; any change refused — nothing is made, and the
//!    result names each refused change and the rule that refused it; any ask left — a person
//!    sees the list (the posture answers when nobody can). The command's output reaches the
//!    model only after that.
//!
//! Dropping an [`Observed`] at any point discards it: the upper layers are removed and the
//! workspace never saw them. Nothing lands without a judgement.

pub mod bookkeeping;
mod commit;
pub mod observe;

use std::path::PathBuf;

use serde::Serialize;

use crate::sandbox::jail::Upper;
use crate::sandbox::{ConfinedPath, WritePath};

/// What a path is, in a root or in an upper layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Node {
    /// Nothing.
    Absent,
    /// A regular file.
    File {
        /// Its permission bits.
        mode: u32,
        /// Its size.
        bytes: u64,
    },
    /// A folder.
    Folder {
        /// Its permission bits.
        mode: u32,
    },
    /// A symbolic link.
    Link {
        /// What it points to, as written.
        target: PathBuf,
    },
    /// A fifo, socket or device node.
    Special {
        /// Which.
        what: &'static str,
    },
}

impl Node {
    /// A word for it.
    pub fn word(&self) -> &'static str {
        match self {
            Node::Absent => "nothing",
            Node::File { .. } => "file",
            Node::Folder { .. } => "folder",
            Node::Link { .. } => "link",
            Node::Special { what } => what,
        }
    }
}

/// One change a run made beneath a write root, as observed in its upper layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The path in the real root (absolute).
    pub path: PathBuf,
    /// What is there now, in the real root.
    pub before: Node,
    /// What the run left there (`Absent`: it deleted it).
    pub after: Node,
    /// Where the new content lies in the upper layer (a file or a link), if any.
    pub(crate) source: Option<PathBuf>,
}

impl Change {
    /// How it is said: "created", "deleted", "changed", "made a folder of", …
    pub fn verb(&self) -> &'static str {
        match (&self.before, &self.after) {
            (Node::Absent, _) => "created",
            (_, Node::Absent) => "deleted",
            (Node::File { .. }, Node::File { .. }) => "changed",
            (Node::Folder { .. }, Node::Folder { .. }) => "changed the mode of",
            (Node::Link { .. }, Node::Link { .. }) => "re-pointed",
            _ => "replaced",
        }
    }

    /// One line for a person or the model: `created src/a.rs (file, 120 bytes)`.
    pub fn line(&self, shown: &str) -> String {
        let what = match &self.after {
            Node::Absent => self.before.word().to_owned(),
            Node::File { bytes, mode } => format!("file, {bytes} bytes, mode {mode:04o}"),
            Node::Folder { mode } => format!("folder, mode {mode:04o}"),
            Node::Link { target } => format!("link to {}", target.display()),
            Node::Special { what } => (*what).to_owned(),
        };
        format!("{} {shown} ({what})", self.verb())
    }

    /// Whether the run deleted the path.
    pub fn deletes(&self) -> bool {
        self.after == Node::Absent
    }
}

/// What the gate concluded about one change.
#[derive(Debug)]
pub struct Judged {
    /// The change.
    pub change: Change,
    /// How it is shown: relative to the workspace when inside it.
    pub shown: String,
    /// `allow`, `ask` or `deny`, the command's own admission considered.
    pub verdict: ChangeVerdict,
    /// Why (the rules' reasons, the sandbox's refusal, or why an ask was the command's own).
    pub reasons: Vec<String>,
    /// The rules that decided.
    pub rules: Vec<String>,
    /// The write grant of the change's own admission: how it is committed (`None` when denied).
    pub(crate) grant: Option<WritePath>,
}

/// A change's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeVerdict {
    /// It may land.
    Allow,
    /// A person must say.
    Ask,
    /// It may not: the whole run is discarded.
    Deny,
}

/// What happens to a run's changes, all taken together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Every change may land.
    Commit,
    /// Some need a person (interactive posture); the rest may land.
    Ask,
    /// Nothing lands: a change was refused (or an ask that nobody can answer became deny).
    Discard {
        /// Why, in one line.
        why: String,
    },
}

/// The gate as the judge of a run's changes (see the module doc, step 2).
pub trait ChangeJudge: Send + Sync {
    /// Judges each change, and all of them together.
    fn judge_changes(&self, changes: Vec<Change>) -> (Vec<Judged>, Decision);
}

/// A writer's run, observed and judged, not yet landed: dropping it discards everything.
#[derive(Debug)]
pub struct Observed {
    /// The upper layers (removed on drop).
    upper: Upper,
    /// Each change, judged.
    pub judged: Vec<Judged>,
    /// All of them together.
    pub decision: Decision,
    /// What was not observed: pass-through folders written in place, and their bytes.
    pub passed: Vec<Passed>,
    /// Notes on what was observed and left out (sockets).
    pub notes: Vec<String>,
}

/// A pass-through folder a run wrote in place: not observed, only counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Passed {
    /// The folder.
    pub path: String,
    /// Files changed in it during the run.
    pub files: u64,
    /// Their size now, in bytes.
    pub bytes: u64,
}

/// Reads a run's upper layers and judges what they hold. An error reading them discards the
/// run (nothing can be judged that was not seen).
pub fn observe(upper: Upper, judge: &dyn ChangeJudge) -> Observed {
    let passed = observe::passed(&upper);
    let (judged, decision, notes) = match observe::changes(&upper) {
        Ok(seen) => {
            let (judged, decision) = judge.judge_changes(seen.changes);
            (judged, decision, seen.notes)
        }
        Err(e) => (
            Vec::new(),
            Decision::Discard {
                why: format!("its changes could not be read ({e}), so none of them was judged"),
            },
            Vec::new(),
        ),
    };
    Observed {
        upper,
        judged,
        decision,
        passed,
        notes,
    }
}

/// A person's answer to the changes that ask.
pub type Asker<'a> = &'a mut dyn FnMut(&[&Judged]) -> bool;

/// How a run's changes ended.
#[derive(Debug)]
pub struct Settled {
    /// Whether they landed: all of them, or none.
    pub landed: bool,
    /// Each change made, in order, with the path it was made through (for receipts and
    /// rewind); on a failed commit, the ones made before it failed.
    pub made: Vec<(Change, ConfinedPath)>,
    /// Why nothing landed, or why the commit stopped.
    pub why: Option<String>,
    /// The commit stopped part way (an I/O error): some changes landed, the rest did not.
    pub broken: bool,
    /// The account for the model and the record, one line each.
    pub lines: Vec<String>,
    /// The pass-through folders it wrote in place, not observed.
    pub passed: Vec<Passed>,
    /// When nothing landed: each change that was refused or asked about, and why.
    pub refused: Vec<Refused>,
}

/// A change that kept a run's changes from landing: refused, or asked about and declined (or
/// unanswerable).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// The path (absolute).
    pub path: String,
    /// What the run did there ("created", "deleted", …).
    pub change: &'static str,
    /// `deny` or `ask`.
    pub verdict: ChangeVerdict,
    /// The rules that decided.
    pub rules: Vec<String>,
    /// Why.
    pub reasons: Vec<String>,
}

/// Applies the decision: asks `ask` about what asks (under the interactive posture; a caller
/// with nobody to ask passes a closure that says no), hands `before` every path about to
/// change before the first one does (the rewind store keeps their previous state and notes
/// the call), and commits — or discards.
pub fn settle(
    observed: Observed,
    ask: Asker<'_>,
    before: &mut dyn FnMut(&[ConfinedPath]),
) -> Settled {
    let Observed {
        upper,
        judged,
        decision,
        passed,
        notes,
    } = observed;
    let mut lines: Vec<String> = notes;
    for p in &passed {
        lines.push(format!(
            "not observed: {} (sandbox.passthrough) was written in place: {} files, {} bytes",
            p.path, p.files, p.bytes
        ));
    }
    let refused = |judged: &[Judged], why: String, mut lines: Vec<String>| {
        lines.insert(
            0,
            format!("nothing this command changed was applied: {why}"),
        );
        for j in judged.iter().filter(|j| j.verdict != ChangeVerdict::Allow) {
            lines.push(format!(
                "  {}: {} — {}",
                j.verdict_word(),
                j.change.line(&j.shown),
                j.reasons.join("; ")
            ));
        }
        Settled {
            landed: false,
            made: Vec::new(),
            why: Some(why),
            broken: false,
            lines,
            passed: Vec::new(),
            refused: judged
                .iter()
                .filter(|j| j.verdict != ChangeVerdict::Allow)
                .map(|j| Refused {
                    path: j.change.path.display().to_string(),
                    change: j.change.verb(),
                    verdict: j.verdict,
                    rules: j.rules.clone(),
                    reasons: j.reasons.clone(),
                })
                .collect(),
        }
    };
    match decision {
        Decision::Discard { why } => {
            return Settled {
                passed,
                ..refused(&judged, why, lines)
            };
        }
        Decision::Ask => {
            let asking: Vec<&Judged> = judged
                .iter()
                .filter(|j| j.verdict == ChangeVerdict::Ask)
                .collect();
            if !ask(&asking) {
                let why = "a person declined its changes".to_owned();
                return Settled {
                    passed,
                    ..refused(&judged, why, lines)
                };
            }
        }
        Decision::Commit => {}
    }
    if judged.is_empty() {
        lines.insert(0, "it changed nothing in the workspace (observed)".into());
        return Settled {
            landed: true,
            made: Vec::new(),
            why: None,
            broken: false,
            lines,
            passed,
            refused: Vec::new(),
        };
    }
    let mut made = Vec::new();
    let total = judged.len();
    let ordered = commit::order(judged);
    let paths: Vec<ConfinedPath> = ordered
        .iter()
        .filter_map(|j| j.grant.as_deref().cloned())
        .collect();
    before(&paths);
    // Every file written beside its path, then made durable at once, before anything lands.
    let mut staged: Vec<Option<crate::sandbox::Staged>> = ordered
        .iter()
        .map(|j| j.grant.as_ref().and_then(|g| commit::stage(&j.change, g)))
        .collect();
    let sync = |ordered: &[Judged]| {
        let mut roots: Vec<&std::path::Path> = Vec::new();
        for g in ordered.iter().filter_map(|j| j.grant.as_ref()) {
            if !roots.contains(&g.root()) {
                roots.push(g.root());
                if let Err(e) = g.sync_filesystem() {
                    tracing::warn!("cannot make {} durable: {e}", g.root().display());
                }
            }
        }
    };
    sync(&ordered);
    for (i, j) in ordered.iter().enumerate() {
        let Some(grant) = &j.grant else {
            // Only a change with a grant is allowed or asked; a refused one discarded the run.
            continue;
        };
        match commit::apply(&j.change, grant, staged[i].take()) {
            Ok(()) => {
                lines.push(format!("  {}", j.change.line(&j.shown)));
                made.push((j.change.clone(), ConfinedPath::clone(grant)));
            }
            Err(e) => {
                // What was staged and will not land goes.
                for (k, rest) in staged.iter_mut().enumerate() {
                    if let (Some(st), Some(g)) = (rest.take(), &ordered[k].grant) {
                        g.unstage(st);
                    }
                }
                let why = format!(
                    "the commit stopped at {} ({e}): {} of {total} landed, the rest did not",
                    j.shown,
                    changes(made.len())
                );
                lines.insert(0, why.clone());
                sync(&ordered);
                drop(upper);
                return Settled {
                    landed: false,
                    made,
                    why: Some(why),
                    broken: true,
                    lines,
                    passed,
                    refused: Vec::new(),
                };
            }
        }
    }
    // Folders get their own permission bits once what they hold is made, deepest first.
    for (change, grant) in made.iter().rev() {
        let grant = WritePath::grant(ConfinedPath::clone(grant));
        if let Err(e) = commit::finish_folder(change, &grant) {
            lines.push(format!(
                "  the mode of {} could not be set ({e})",
                change.path.display()
            ));
        }
    }
    sync(&ordered);
    lines.insert(0, format!("{} observed and applied:", changes(made.len())));
    drop(upper);
    Settled {
        landed: true,
        made,
        why: None,
        broken: false,
        lines,
        passed,
        refused: Vec::new(),
    }
}

/// "1 change", "3 changes".
pub fn changes(n: usize) -> String {
    if n == 1 {
        "1 change".into()
    } else {
        format!("{n} changes")
    }
}

/// The most bytes of each side of a change a diff is shown for.
const DIFF_LIMIT: u64 = 64 * 1024;

/// The most lines of a diff shown.
const DIFF_LINES: usize = 200;

impl Change {
    /// A unified diff of a text file the run changed or created (each side UTF-8 of at most
    /// 64 KiB), at most 200 lines, for a person asked about it; `None` for anything else.
    pub fn diff(&self, shown: &str) -> Option<String> {
        let read = |path: &std::path::Path| -> Option<String> {
            let meta = std::fs::symlink_metadata(path).ok()?;
            if !meta.is_file() || meta.len() > DIFF_LIMIT {
                return None;
            }
            String::from_utf8(std::fs::read(path).ok()?).ok()
        };
        let old = match self.before {
            Node::Absent => String::new(),
            Node::File { .. } => read(&self.path)?,
            _ => return None,
        };
        let new = match self.after {
            Node::File { .. } => read(self.source.as_deref()?)?,
            _ => return None,
        };
        let diff = similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{shown}"), &format!("b/{shown}"))
            .to_string();
        let total = diff.lines().count();
        if total <= DIFF_LINES {
            return Some(diff);
        }
        let mut cut: String = diff
            .lines()
            .take(DIFF_LINES)
            .map(|l| format!("{l}\n"))
            .collect();
        cut.push_str(&format!(
            "… [{DIFF_LINES} of {total} lines of the diff shown]\n"
        ));
        Some(cut)
    }
}

impl Judged {
    fn verdict_word(&self) -> &'static str {
        match self.verdict {
            ChangeVerdict::Allow => "allowed",
            ChangeVerdict::Ask => "asked",
            ChangeVerdict::Deny => "refused",
        }
    }
}
