//! The restore: the algorithm that brings each changed path back, newest first (the module
//! doc's "Going back").

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::RewindError;
use super::disk::{Disk, RESTORED_MODE_MASK};
use super::ledger::{CallLine, Ledger, Point};
use super::observe::describe;
use super::store::{Store, UNRECORDED, is_sha256};
use crate::record::{FileState, RewoundFile, SnapshotFile};

/// How far back to go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Undo this call and every later one. Without a run, the latest run that holds the call.
    To {
        /// The call id.
        call: String,
        /// The run id.
        run: Option<String>,
    },
    /// Undo the last N points not yet restored.
    Last(usize),
}

/// What a rewind did, or would do (a dry run).
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// For `--to`: the run and call it went back to.
    pub to: Option<(String, String)>,
    /// For `--to` without a run: how many runs hold that call id (the latest was taken).
    pub runs_with_call: usize,
    /// Paths brought back.
    pub restored: Vec<RewoundFile>,
    /// Paths left alone: changed since, or the restore failed.
    pub left: Vec<RewoundFile>,
    /// Calls and paths that cannot be restored.
    pub not_restorable: Vec<RewoundFile>,
}

/// The most bytes of a kept file given to the policy as the `content` of the write it is (as
/// a bash writer's observed changes are).
pub(super) const CONTENT_LIMIT: u64 = 1 << 20;

pub use crate::gate::Restore;

/// Where a rewind may write: `Ok` for a path it may bring back, else why not. The command line
/// passes [`crate::Gate::restorable`] — beneath a root open for writing, none of the host's own
/// files, and the write or delete judged by the gate as the file tool's call it is — so a record
/// that names a path elsewhere cannot make a rewind, which runs outside any jail, write there,
/// and a path a rule asks about (`.git/hooks/`) is not restored behind its back.
pub type Bounds<'a> = &'a dyn Fn(&Path, Restore<'_>) -> Result<(), String>;

/// Rewinds the disk to `target` as the record tells it (see the module doc), writing only where
/// `bounds` allows. With `dry_run` nothing is changed, and the report says what would be.
pub fn rewind(
    ledger: &Ledger,
    store: &Store,
    target: &Target,
    force: bool,
    dry_run: bool,
    bounds: Bounds<'_>,
) -> Result<Report, RewindError> {
    let mut report = Report::default();
    let (start, points): (usize, Vec<&Point>) = match target {
        Target::To { call, run } => {
            let matching: Vec<&CallLine> = ledger
                .calls
                .iter()
                .filter(|c| &c.call_id == call && run.as_ref().is_none_or(|r| &c.run_id == r))
                .collect();
            let Some(at) = matching.last() else {
                return Err(RewindError::NoSuchCall {
                    call: call.clone(),
                    run: run.clone(),
                });
            };
            let runs: HashSet<&str> = matching.iter().map(|c| c.run_id.as_str()).collect();
            report.runs_with_call = runs.len();
            report.to = Some((at.run_id.clone(), at.call_id.clone()));
            let points = ledger
                .points()
                .into_iter()
                .filter(|p| p.line >= at.line)
                .collect();
            (at.line, points)
        }
        Target::Last(n) => {
            let pending = ledger.points();
            let chosen: Vec<&Point> = pending[pending.len().saturating_sub(*n)..].to_vec();
            let start = chosen.first().map_or(usize::MAX, |p| p.line);
            (start, chosen)
        }
    };
    let mut disk = Disk {
        store,
        dry_run,
        overlay: HashMap::new(),
    };
    for point in points.iter().rev() {
        restore_point(ledger, point, force, bounds, &mut disk, &mut report);
    }
    for c in ledger
        .calls
        .iter()
        .filter(|c| c.line >= start && c.ran && c.unobserved)
    {
        let detail = if c.tool == "bash" {
            "a shell command: its effects were never observed"
        } else {
            "its effects were not observed beyond the paths it was leased"
        };
        report.not_restorable.push(RewoundFile {
            run_id: c.run_id.clone(),
            call_id: c.call_id.clone(),
            tool: c.tool.clone(),
            path: c.command.clone(),
            detail: detail.into(),
        });
    }
    Ok(report)
}

/// Brings back what one call changed: a folder it moved, then the files it replaced or removed,
/// then the paths it created.
pub(super) fn restore_point(
    ledger: &Ledger,
    point: &Point,
    force: bool,
    bounds: Bounds<'_>,
    disk: &mut Disk<'_>,
    r: &mut Report,
) {
    let pending = ledger.pending(point);
    let entry = |f: &SnapshotFile, detail: String| RewoundFile {
        run_id: point.run_id.clone(),
        call_id: point.call_id.clone(),
        tool: point.tool.clone(),
        path: Some(f.path.clone()),
        detail,
    };
    let sources: Vec<&&SnapshotFile> = pending
        .iter()
        .filter(|f| f.before == FileState::Folder && f.after == FileState::Absent)
        .collect();
    let destinations: Vec<&&SnapshotFile> = pending
        .iter()
        .filter(|f| f.before == FileState::Absent && f.after == FileState::Folder)
        .collect();
    let mut done: HashSet<&str> = HashSet::new();
    if let ([source], [destination]) = (sources.as_slice(), destinations.as_slice()) {
        let (from, to) = (Path::new(&destination.path), Path::new(&source.path));
        done.insert(&source.path);
        done.insert(&destination.path);
        // The folder's two paths share one outcome when it is not moved back.
        let both = |list: &mut Vec<RewoundFile>, why: String| {
            list.push(entry(source, why.clone()));
            list.push(entry(destination, why));
        };
        let at_source = disk.state(to);
        let at_destination = disk.state(from);
        let moved = bounds(to, Restore::Write { content: None })
            .and_then(|()| bounds(from, Restore::Delete));
        if let Err(why) = moved {
            let why = format!("rewind does not write there: {why}");
            both(&mut r.not_restorable, why);
        } else if at_source != FileState::Absent {
            let why = format!(
                "{} is {} now; rewind never replaces it",
                to.display(),
                describe(&at_source)
            );
            both(&mut r.left, why);
        } else if at_destination != FileState::Folder {
            let why = format!(
                "the folder moved to {} is no longer there (it is {})",
                from.display(),
                describe(&at_destination)
            );
            both(&mut r.left, why);
        } else {
            match disk.move_back(from, to) {
                Ok(()) => {
                    r.restored
                        .push(entry(source, format!("moved back from {}", from.display())));
                    r.restored.push(entry(
                        destination,
                        format!("moved back to {}", to.display()),
                    ));
                }
                Err(e) => both(&mut r.left, e),
            }
        }
    }
    let mut rest: Vec<&SnapshotFile> = pending
        .into_iter()
        .filter(|f| !done.contains(f.path.as_str()))
        .collect();
    // Writes before removals: a moved file is back at its source before its copy goes; and
    // removals deepest first, so that a folder a command made is empty when its turn comes.
    rest.sort_by_key(|f| {
        (
            f.before == FileState::Absent,
            std::cmp::Reverse(Path::new(&f.path).components().count()),
        )
    });
    for f in rest {
        let path = Path::new(&f.path);
        let unrestorable = match &f.before {
            FileState::File { .. } if !f.kept => Some(format!(
                "its previous content was not kept{}",
                f.note
                    .as_ref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            )),
            FileState::File { .. } | FileState::Absent => None,
            FileState::Folder => {
                Some("it was a folder; only a folder move_file moved can be moved back".into())
            }
            FileState::Other => Some("it was neither a file nor a folder before the call".into()),
            FileState::Unknown { error } => Some(format!(
                "how it was before the call could not be observed ({error})"
            )),
        };
        if let Some(why) = unrestorable {
            r.not_restorable.push(entry(f, why));
            continue;
        }
        let kept = match &f.before {
            FileState::File { sha256, .. } if !is_sha256(sha256) => {
                r.not_restorable.push(entry(
                    f,
                    format!(
                        "its recorded digest {:?} is not a sha256: the record was not written by Reasonix",
                        crate::text::visible(sha256)
                    ),
                ));
                continue;
            }
            FileState::File { sha256, bytes, .. } => (*bytes <= CONTENT_LIMIT)
                .then(|| std::fs::read(disk.store.blob(sha256)).ok())
                .flatten()
                .and_then(|b| String::from_utf8(b).ok()),
            _ => None,
        };
        let restore = match f.before {
            FileState::Absent => Restore::Delete,
            _ => Restore::Write {
                content: kept.as_deref(),
            },
        };
        if let Err(why) = bounds(path, restore) {
            r.not_restorable
                .push(entry(f, format!("rewind does not write there: {why}")));
            continue;
        }
        let now = disk.state(path);
        if now == f.before {
            r.restored.push(entry(f, "already as it was".into()));
            continue;
        }
        let unrecorded = matches!(&f.after, FileState::Unknown { error } if error == UNRECORDED);
        if unrecorded && !force {
            r.left.push(entry(
                f,
                format!(
                    "{UNRECORDED}, so what it left is unknown; it is {} now; --force brings it back",
                    describe(&now)
                ),
            ));
            continue;
        }
        if now != f.after && !force {
            r.left.push(entry(
                f,
                format!(
                    "it changed since the call: it is {} now, and the call left {}; --force overwrites it",
                    describe(&now),
                    describe(&f.after)
                ),
            ));
            continue;
        }
        if now == FileState::Folder {
            // A folder the call made (a bash writer's, observed: issue 25) goes when it is
            // empty again; anything else that is a folder now stays.
            if f.before == FileState::Absent && f.after == FileState::Folder {
                match disk.remove_empty_folder(path) {
                    Ok(()) => r.restored.push(entry(
                        f,
                        "removed (a folder the call made, empty again)".into(),
                    )),
                    Err(e) => r.left.push(entry(f, e)),
                }
                continue;
            }
            r.left.push(entry(
                f,
                "a folder is there now; rewind never replaces a folder".into(),
            ));
            continue;
        }
        let done = match &f.before {
            FileState::Absent => disk.remove(path).map(|()| "removed".to_owned()),
            before => disk.write_back(path, before).map(|()| {
                let mode = before.mode().unwrap_or(0);
                let masked = if mode & !RESTORED_MODE_MASK != 0 {
                    format!(
                        " (the record said {mode:04o}: setuid, setgid and sticky bits are never restored)"
                    )
                } else {
                    String::new()
                };
                format!(
                    "written back ({} bytes, mode {:04o}{masked})",
                    before.bytes().unwrap_or(0),
                    mode & RESTORED_MODE_MASK,
                )
            }),
        };
        match done {
            Ok(what) => r.restored.push(entry(f, what)),
            Err(e) => r.left.push(entry(f, e)),
        }
    }
}
