//! The ledger: a record read for rewinding — what each call changed (its points), which calls
//! ran unobserved, and what earlier rewinds already restored.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::RewindError;
use super::store::Interrupted;
use crate::record::SnapshotFile;

/// A call that changed files: a point the record can be rewound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// Its line in the record, from 0.
    pub line: usize,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// What it changed.
    pub files: Vec<SnapshotFile>,
    /// Whether the record holds its line; `false` for a call its run noted before it ran and
    /// never recorded (the run stopped in between: [`Store::interrupted`]).
    pub recorded: bool,
}

/// A call line, as far as a rewind needs it.
#[derive(Clone, Debug)]
pub(super) struct CallLine {
    pub(super) line: usize,
    pub(super) run_id: String,
    pub(super) call_id: String,
    pub(super) tool: String,
    /// Whether it ran (`started_ms` is set).
    pub(super) ran: bool,
    /// Whether what it changed went unobserved: a shell command, or a tool that is not
    /// read-only and names no path it changes.
    pub(super) unobserved: bool,
    /// A shell command's text, when the record keeps arguments.
    pub(super) command: Option<String>,
}

/// A record, read for rewinding: its calls, its points, and what earlier rewinds restored.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    pub(super) calls: Vec<CallLine>,
    pub(super) points: Vec<Point>,
    /// `(run_id, call_id, path)` of every path an earlier rewind restored.
    pub(super) restored: HashSet<(String, String, String)>,
    /// The lines (from 1) that are not JSON: a line a run was writing when it stopped.
    pub(super) damaged: Vec<usize>,
    /// Each run's last line (from 0).
    pub(super) last_line: HashMap<String, usize>,
}

impl Ledger {
    /// Reads a record's text. Lines of other kinds are skipped. A line that is not JSON is
    /// skipped too and named in [`Ledger::damaged`]: a record is written whole, line by line, so
    /// such a line is one a run was writing when it stopped (its call, if it was one, is among
    /// the [`Store::interrupted`] ones). A call line whose snapshot does not read is an error.
    pub fn parse(text: &str) -> Result<Ledger, RewindError> {
        let mut ledger = Ledger::default();
        for (line, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(raw) else {
                ledger.damaged.push(line + 1);
                continue;
            };
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            if let Some(run) = s("run_id") {
                ledger.last_line.insert(run, line);
            }
            match v.get("event").and_then(Value::as_str) {
                Some("rewind") => {
                    for r in v
                        .get("restored")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let f = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
                        ledger.restored.insert((
                            f("run_id").to_owned(),
                            f("call_id").to_owned(),
                            f("path").to_owned(),
                        ));
                    }
                }
                Some(_) => {}
                None if v.get("outcome").is_some() => {
                    let tool = s("tool").unwrap_or_default();
                    // Records written before snapshots existed have none: nothing to go back to.
                    let files: Vec<SnapshotFile> = match v.get("snapshot") {
                        None | Some(Value::Null) => Vec::new(),
                        Some(snapshot) => {
                            serde_json::from_value(snapshot.clone()).map_err(|e| {
                                RewindError::Line {
                                    line: line + 1,
                                    error: format!("its snapshot does not read: {e}"),
                                }
                            })?
                        }
                    };
                    if !files.is_empty() {
                        ledger.points.push(Point {
                            line,
                            run_id: s("run_id").unwrap_or_default(),
                            call_id: s("call_id").unwrap_or_default(),
                            tool: tool.clone(),
                            files,
                            recorded: true,
                        });
                    }
                    let lease = v.get("lease");
                    let kind = lease.and_then(|l| l.get("kind")).and_then(Value::as_str);
                    let no_paths = lease
                        .and_then(|l| l.get("paths"))
                        .and_then(Value::as_array)
                        .is_none_or(Vec::is_empty);
                    let command = (tool == "bash")
                        .then(|| s("arguments"))
                        .flatten()
                        .and_then(|a| serde_json::from_str::<Value>(&a).ok())
                        .and_then(|a| a.get("command").and_then(Value::as_str).map(str::to_owned));
                    // A process whose effects were observed (issue 25: a bash writer on an
                    // overlay, or a run the jail held read-only) says so in its receipt; its
                    // changes are in its snapshot like a file tool's.
                    let observed = v
                        .get("receipts")
                        .and_then(Value::as_array)
                        .is_some_and(|rs| {
                            rs.iter().any(|r| {
                                r.get("kind").and_then(Value::as_str) == Some("process")
                                    && r.get("observed").and_then(Value::as_bool) == Some(true)
                            })
                        });
                    ledger.calls.push(CallLine {
                        line,
                        run_id: s("run_id").unwrap_or_default(),
                        call_id: s("call_id").unwrap_or_default(),
                        unobserved: !observed
                            && (tool == "bash"
                                || kind == Some("workspace")
                                || (kind == Some("paths") && no_paths)),
                        tool,
                        ran: v.get("started_ms").is_some_and(|t| !t.is_null()),
                        command,
                    });
                }
                None => {}
            }
        }
        Ok(ledger)
    }

    /// The lines of the record (from 1) that are not JSON, which the rewind skipped.
    pub fn damaged(&self) -> &[usize] {
        &self.damaged
    }

    /// Adds the calls their runs noted before running them and never recorded
    /// ([`Store::interrupted`]); a note whose call the record holds is already settled, and is
    /// left out. Each goes after the last line its run wrote (a run that stops with a call
    /// noted stops at that call).
    pub fn with_interrupted(mut self, notes: Vec<Interrupted>) -> Ledger {
        for note in notes {
            let recorded = self
                .calls
                .iter()
                .any(|c| c.run_id == note.run_id && c.call_id == note.call_id);
            if recorded || note.files.is_empty() {
                continue;
            }
            let line = self
                .last_line
                .get(&note.run_id)
                .copied()
                .unwrap_or(usize::MAX);
            self.calls.push(CallLine {
                line,
                run_id: note.run_id.clone(),
                call_id: note.call_id.clone(),
                tool: note.tool.clone(),
                ran: true,
                unobserved: false,
                command: None,
            });
            self.points.push(Point {
                line,
                run_id: note.run_id,
                call_id: note.call_id,
                tool: note.tool,
                files: note.files,
                recorded: false,
            });
        }
        // Stable: a noted call comes after the recorded calls of its run's last line.
        self.calls.sort_by_key(|c| c.line);
        self.points.sort_by_key(|p| p.line);
        self
    }

    /// The files of a point no earlier rewind restored.
    pub fn pending<'a>(&self, point: &'a Point) -> Vec<&'a SnapshotFile> {
        point
            .files
            .iter()
            .filter(|f| {
                !self.restored.contains(&(
                    point.run_id.clone(),
                    point.call_id.clone(),
                    f.path.clone(),
                ))
            })
            .collect()
    }

    /// The points with something left to restore, in the record's order.
    pub fn points(&self) -> Vec<&Point> {
        self.points
            .iter()
            .filter(|p| !self.pending(p).is_empty())
            .collect()
    }
}
