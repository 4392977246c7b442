//! Rewind: what the structured file tools changed can be undone, and what a bash command changed
//! when its effects were observed (issue 25: a writer runs on an overlay, and each change it
//! made lands through the same receipts and snapshots as a file tool's); what a command did
//! unobserved cannot be, and the record says so.
//!
//! # What is kept, and where
//!
//! Before a file tool (`write_file`, `edit_file`, `move_file`, `delete_file`, or any tool leased
//! by the paths it changes) runs, with its lease held, the agent loop reads each path it may
//! change beneath its root ([`Leased::changes`]) and keeps a regular file's content in the
//! record's state folder, `<record>.d/rewind/<sha256>` ([`Store`]): content-addressed, written to
//! a temporary file, `fsync`ed and renamed into place, readable by its owner only. The state
//! folder is one of the host's own files ([`crate::host`]): no call may change it. The call's
//! line in the record has a `snapshot` ([`crate::record::SnapshotFile`]): how each path it
//! changed was before and after — kind, sha256, permission bits, size — and whether the previous
//! content was kept. A file over [`MAX_KEPT_BYTES`] is not kept (the snapshot says so).
//!
//! # Nothing lost on a crash
//!
//! The call line is written after the call, so a run that stops in between (a crash, a kill, a
//! full disk) would leave a change no line tells of. So, before the call runs and after its
//! previous contents are kept, the loop writes a note of it ([`Store::note`]: the run, the
//! call, each path as it was) into `<record>.d/rewind/calls/`, whole (temporary file, `fsync`,
//! rename, `fsync` of the folder), and removes it once the call's line is recorded
//! ([`Store::settle`]). A rewind reads the notes left ([`Store::interrupted`]) as points whose
//! `after` is unknown ([`UNRECORDED`]): their files go back only with `force`. A line the run
//! was writing when it stopped is skipped and named ([`Ledger::damaged`]); the recorder ends it
//! with a newline before it appends again.
//!
//! # Going back
//!
//! [`rewind`] takes a parsed record ([`Ledger`]) and a target — a call (`--to`: undo it and every
//! later one) or the last N points (`--last`) — and, newest first, brings each changed path back
//! to how it was before its call:
//!
//! 1. a path already as it was is left as it is, and counts as restored;
//! 2. a path that is no longer as the call left it (someone edited it since) is left alone and
//!    named, unless `force`;
//! 3. a file is written back from the store (its sha256 checked while copying) with its exact
//!    bytes and permission bits, atomically; a path that did not exist is removed; a folder that
//!    `move_file` moved is moved back, with what it holds now;
//! 4. a folder is never replaced, nor removed unless the call made it and it is empty again (a
//!    bash writer's, removed deepest first after what it held), and a path is not followed
//!    through a folder that is now a symlink;
//! 5. a path out of [`Bounds`] is not touched at all: a rewind runs outside any jail, so the
//!    command line lets it write only where the gate would let a file tool write
//!    ([`crate::Gate::restorable`]: beneath a write root, none of the host's own files, and the
//!    write or delete judged as the `write_file` or `delete_file` call it is, so a rule that
//!    asks — `git-internals` on `.git/**` — keeps the path as it is) — a record that names
//!    another path (forged, or from another workspace) cannot steer it;
//! 6. what a record says is not taken on trust (issue 28): a kept copy is named by a sha256 of
//!    64 hex digits and nothing else, and a file is written back with its permission bits
//!    masked to what the file tools may set (no setuid, setgid or sticky bit).
//!
//! Every shell command that ran in the range unobserved (the jail off, or a writer with no
//! overlay under `best_effort`) is listed as not restorable: its effects were never
//! observed (so is a tool that changed nothing it was leased by). A path whose previous state was
//! not kept is listed too. The record's earlier `rewind` lines say what is already restored, so a
//! second rewind does not undo the same change twice.
//!
//! [`Leased::changes`]: crate::lease::Leased::changes

use std::collections::{HashMap, HashSet};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::fcntl::OFlag;
use nix::sys::stat::SFlag;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::host::state_folder;
use crate::record::{FileState, RewoundFile, SnapshotFile};
use crate::sandbox::ConfinedPath;

/// The largest file the store keeps, in bytes: 64 MiB.
pub const MAX_KEPT_BYTES: u64 = 64 * 1024 * 1024;

/// The largest file whose content *after* a call is kept too ([`Store::keep_after`]), in bytes:
/// 256 KiB. Those copies serve `reasonix report`'s diffs, not a rewind.
pub const MAX_AFTER_KEPT_BYTES: u64 = 256 * 1024;

/// The most files of one call whose content after it is kept ([`Store::keep_after`]): a
/// command that rewrote a whole tree costs a few copies, not a second tree.
pub const MAX_AFTER_KEPT_FILES: usize = 64;

/// The store's folder inside a record's state folder.
const STORE: &str = "rewind";

/// The folder inside the store where a call is noted before it runs ([`Store::note`]).
const NOTES: &str = "calls";

/// What a noted call left is unknown until its line is recorded: the `after` of its files.
pub const UNRECORDED: &str = "the run stopped before it recorded this call";

/// Orders the notes of one process (several calls of one answer may start in one millisecond).
static NOTE_SEQ: AtomicU64 = AtomicU64::new(0);

/// A file tool's call, noted in the store before it runs and removed once its line is in the
/// record ([`Store::note`], [`Store::settle`]). A run that stops in between — a crash, a kill,
/// a full disk — leaves the note, so what the call was about to change is not lost: a rewind
/// reads it ([`Ledger::with_interrupted`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupted {
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// When it was noted, in milliseconds since the Unix epoch.
    pub time_ms: u128,
    /// The order of notes within one process.
    pub seq: u64,
    /// Each path it may change, as it was before; `after` is unknown ([`UNRECORDED`]).
    pub files: Vec<SnapshotFile>,
}

/// Counter for temporary names within this process.
static TEMP: AtomicU64 = AtomicU64::new(0);

/// The content-addressed store of previous contents, in a record's state folder.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
}

/// A path as it was before a call, and whether its content was kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// How it was.
    pub state: FileState,
    /// Whether a regular file's content is in the store.
    pub kept: bool,
    /// Why a regular file's content is not in the store.
    pub note: Option<String>,
}

impl Store {
    /// The store of the record at `record`: `<record>.d/rewind/`.
    pub fn beside(record: &Path) -> Store {
        Store {
            dir: state_folder(record).join(STORE),
        }
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the content with this sha256 is kept.
    pub fn blob(&self, sha256: &str) -> PathBuf {
        self.dir.join(sha256)
    }

    /// Observes `path` beneath its root and, when it is a regular file, keeps its content.
    pub fn keep(&self, path: &ConfinedPath) -> Kept {
        let (mut file, mode, size) = match see(path) {
            Seen::State(state) => {
                return Kept {
                    state,
                    kept: false,
                    note: None,
                };
            }
            Seen::File { file, mode, size } => (file, mode, size),
        };
        if size > MAX_KEPT_BYTES {
            let state = match digest(&mut file, None) {
                Ok((sha, n)) => FileState::file(sha, mode, n),
                Err(e) => unknown(&e),
            };
            return Kept {
                state,
                kept: false,
                note: Some(format!(
                    "larger than {} MiB, so its content was not kept",
                    MAX_KEPT_BYTES / (1024 * 1024)
                )),
            };
        }
        match self.store(&mut file) {
            Ok((sha, n)) => Kept {
                state: FileState::file(sha, mode, n),
                kept: true,
                note: None,
            },
            Err(e) => Kept {
                state: observe(path),
                kept: false,
                note: Some(format!("its content could not be kept: {e}")),
            },
        }
    }

    /// Observes `path` as [`observe`] does and, when it is a regular file of at most
    /// [`MAX_AFTER_KEPT_BYTES`], keeps a copy of its content as it is after a call, so that a
    /// report can show what the call changed as a diff (issue 29). Not for a rewind, so not
    /// `fsync`ed: a copy lost in a crash costs a diff, never a restore (a rewind checks every
    /// copy's sha256 as it reads it), and a copy already kept is left as it is.
    pub fn keep_after(&self, path: &ConfinedPath) -> FileState {
        match see(path) {
            Seen::State(state) => state,
            Seen::File {
                mut file,
                mode,
                size,
            } if size <= MAX_AFTER_KEPT_BYTES => match self.copy(&mut file, false) {
                Ok((sha, n)) => FileState::file(sha, mode, n),
                Err(_) => observe(path),
            },
            Seen::File { mut file, mode, .. } => match digest(&mut file, None) {
                Ok((sha, n)) => FileState::file(sha, mode, n),
                Err(e) => unknown(&e),
            },
        }
    }

    /// Notes a call before it runs: what each path it may change was like (`kept` from
    /// [`Store::keep`]), written whole (a temporary file, `fsync`, rename, `fsync` of the
    /// folder) under a name made from the run and call ids. Returns the note's path, for
    /// [`Store::settle`] once the call's line is in the record.
    ///
    /// # Errors
    ///
    /// The note could not be written; the caller says so (the call's line still carries its
    /// snapshot, so only a crash before that line would lose it).
    pub fn note(
        &self,
        run_id: &str,
        call_id: &str,
        tool: &str,
        files: &[(String, Kept)],
    ) -> io::Result<PathBuf> {
        let note = Interrupted {
            run_id: run_id.to_owned(),
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            time_ms: crate::record::now_ms(),
            seq: NOTE_SEQ.fetch_add(1, Ordering::Relaxed),
            files: files
                .iter()
                .map(|(path, kept)| SnapshotFile {
                    path: path.clone(),
                    before: kept.state.clone(),
                    after: FileState::Unknown {
                        error: UNRECORDED.into(),
                    },
                    kept: kept.kept,
                    note: kept.note.clone(),
                })
                .collect(),
        };
        let dir = self.dir.join(NOTES);
        DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
        // The ids come from the model: the name is their digest, never the ids themselves.
        let name = format!(
            "{}.json",
            crate::record::sha256(format!("{run_id}\u{0}{call_id}").as_bytes())
        );
        let bytes = serde_json::to_vec(&note).map_err(io::Error::other)?;
        let n = TEMP.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let written = (|| {
            let mut out = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(OFlag::O_NOFOLLOW.bits())
                .open(&temp)?;
            out.write_all(&bytes)?;
            out.sync_all()?;
            std::fs::rename(&temp, dir.join(&name))
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        sync_dir(&dir)?;
        Ok(dir.join(name))
    }

    /// Removes a note once its call's line is in the record.
    ///
    /// # Errors
    ///
    /// It could not be removed; a rewind then finds the call in the record and ignores it.
    pub fn settle(&self, note: &Path) -> io::Result<()> {
        std::fs::remove_file(note)?;
        if let Some(dir) = note.parent() {
            sync_dir(dir)?;
        }
        Ok(())
    }

    /// Every note still in the store, oldest first: calls whose line may be missing from the
    /// record.
    ///
    /// # Errors
    ///
    /// A note that cannot be read (or the folder) — never skipped, since it may be the only
    /// account of a change.
    pub fn interrupted(&self) -> Result<Vec<Interrupted>, RewindError> {
        let dir = self.dir.join(NOTES);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(RewindError::Note {
                    path: dir,
                    error: e.to_string(),
                });
            }
        };
        let mut notes = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|e| RewindError::Note {
                    path: dir.clone(),
                    error: e.to_string(),
                })?
                .path();
            // A temporary file is a note that was never whole: its call had not started.
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let read = std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<Interrupted>(&b).map_err(|e| e.to_string()));
            match read {
                Ok(note) => notes.push(note),
                Err(error) => return Err(RewindError::Note { path, error }),
            }
        }
        notes.sort_by_key(|n| (n.time_ms, n.seq));
        Ok(notes)
    }

    /// Copies `from` into the store under its sha256: a temporary file, `fsync`, rename, `fsync`
    /// of the folder. Returns the digest and the size.
    fn store(&self, from: &mut File) -> io::Result<(String, u64)> {
        self.copy(from, true)
    }

    /// Copies `from` into the store under its sha256: `durable`, `fsync`ed and renamed over
    /// any copy of the same content; else not synced, and dropped when the content is kept
    /// already.
    fn copy(&self, from: &mut File, durable: bool) -> io::Result<(String, u64)> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let n = TEMP.fetch_add(1, Ordering::Relaxed);
        let temp = self.dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(&temp)?;
        let copied = digest(from, Some(&mut out)).and_then(|d| {
            if durable {
                out.sync_all().map(|()| d)
            } else {
                Ok(d)
            }
        });
        let (sha, size) = match copied {
            Ok(d) => d,
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                return Err(e);
            }
        };
        if !durable && self.blob(&sha).exists() {
            let _ = std::fs::remove_file(&temp);
            return Ok((sha, size));
        }
        // The same content may be kept already; renaming over it changes nothing.
        if let Err(e) = std::fs::rename(&temp, self.blob(&sha)) {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        if durable {
            File::open(&self.dir)?.sync_all()?;
        }
        Ok((sha, size))
    }
}

/// How `path` is now, observed beneath its root without following a symlink.
pub fn observe(path: &ConfinedPath) -> FileState {
    match see(path) {
        Seen::State(state) => state,
        Seen::File { mut file, mode, .. } => match digest(&mut file, None) {
            Ok((sha, n)) => FileState::file(sha, mode, n),
            Err(e) => unknown(&e),
        },
    }
}

/// A path, looked at: a regular file opened for reading, or its state.
enum Seen {
    File { file: File, mode: u32, size: u64 },
    State(FileState),
}

fn see(path: &ConfinedPath) -> Seen {
    let st = match path.stat() {
        Ok(st) => st,
        Err(e) if gone(&e) => return Seen::State(FileState::Absent),
        Err(e) => return Seen::State(unknown(&e)),
    };
    match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFDIR => Seen::State(FileState::Folder),
        SFlag::S_IFREG => {
            let opened = path.open_read().and_then(|f| f.metadata().map(|m| (f, m)));
            match opened {
                Ok((file, meta)) => Seen::File {
                    file,
                    mode: meta.mode() & 0o7777,
                    size: meta.len(),
                },
                Err(e) => Seen::State(unknown(&e)),
            }
        }
        _ => Seen::State(FileState::Other),
    }
}

/// How the file at `path` is now, by its absolute name: the rewind's view of the disk. A final
/// symlink is not followed (it is `other`).
pub fn observe_path(path: &Path) -> FileState {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if gone(&e) => return FileState::Absent,
        Err(e) => return unknown(&e),
    };
    if meta.is_dir() {
        return FileState::Folder;
    }
    if !meta.is_file() {
        return FileState::Other;
    }
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(path)
        .and_then(|f| f.metadata().map(|m| (f, m)));
    match opened {
        Ok((mut file, meta)) => match digest(&mut file, None) {
            Ok((sha, n)) => FileState::file(sha, meta.mode() & 0o7777, n),
            Err(e) => unknown(&e),
        },
        Err(e) => unknown(&e),
    }
}

fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn unknown(e: &io::Error) -> FileState {
    FileState::Unknown {
        error: e.to_string(),
    }
}

/// Reads `from` to its end, hashing it and copying it into `copy` when given.
fn digest(from: &mut impl Read, mut copy: Option<&mut File>) -> io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        hasher.update(chunk);
        if let Some(out) = copy.as_deref_mut() {
            out.write_all(chunk)?;
        }
        total += n as u64;
    }
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((hex, total))
}

/// A state in words, for messages.
pub fn describe(state: &FileState) -> String {
    match state {
        FileState::Absent => "absent".into(),
        FileState::File {
            sha256,
            mode,
            bytes,
        } => format!(
            "a file of {bytes} bytes (sha256 {}…, mode {mode})",
            &sha256[..sha256.len().min(12)]
        ),
        FileState::Folder => "a folder".into(),
        FileState::Other => "neither a file nor a folder".into(),
        FileState::Unknown { error } => format!("unreadable ({error})"),
    }
}

/// Why a record cannot be rewound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RewindError {
    /// A line of the record is not JSON.
    #[error("line {line} of the record is not JSON: {error}")]
    Line {
        /// The line, from 1.
        line: usize,
        /// The parser's message.
        error: String,
    },
    /// A note of the store cannot be read.
    #[error("the rewind note {} cannot be read: {error}", path.display())]
    Note {
        /// The note (or its folder).
        path: PathBuf,
        /// Why.
        error: String,
    },
    /// `--to` names a call the record does not hold.
    #[error("the record holds no call {call}{}", run.as_ref().map(|r| format!(" in run {r}")).unwrap_or_default())]
    NoSuchCall {
        /// The call id.
        call: String,
        /// The run, when one was named.
        run: Option<String>,
    },
}

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
struct CallLine {
    line: usize,
    run_id: String,
    call_id: String,
    tool: String,
    /// Whether it ran (`started_ms` is set).
    ran: bool,
    /// Whether what it changed went unobserved: a shell command, or a tool that is not
    /// read-only and names no path it changes.
    unobserved: bool,
    /// A shell command's text, when the record keeps arguments.
    command: Option<String>,
}

/// A record, read for rewinding: its calls, its points, and what earlier rewinds restored.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    calls: Vec<CallLine>,
    points: Vec<Point>,
    /// `(run_id, call_id, path)` of every path an earlier rewind restored.
    restored: HashSet<(String, String, String)>,
    /// The lines (from 1) that are not JSON: a line a run was writing when it stopped.
    damaged: Vec<usize>,
    /// Each run's last line (from 0).
    last_line: HashMap<String, usize>,
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
const CONTENT_LIMIT: u64 = 1 << 20;

pub use crate::gate::Restore;

/// Where a rewind may write: `Ok` for a path it may bring back, else why not. The command line
/// passes [`crate::Gate::restorable`] — beneath a root open for writing, none of the host's own
/// files, and the write or delete judged by the gate as the file tool's call it is — so a record
/// that names a path elsewhere cannot make a rewind, which runs outside any jail, write there,
/// and a path a rule asks about (`.git/hooks/`) is not restored behind its back.
pub type Bounds<'a> = &'a dyn Fn(&Path, Restore<'_>) -> Result<(), String>;

/// Whether `s` names a blob of the store: 64 lowercase hex digits, a sha256 and nothing else
/// (never a path: a forged record's digest field `../../etc/shadow` is refused).
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The permission bits a rewind gives a file it writes back: what the file tools may set —
/// read, write and execute for each class, never setuid, setgid or sticky.
pub const RESTORED_MODE_MASK: u32 = 0o777;

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
fn restore_point(
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

/// The disk as a rewind sees it: what it has done so far, and (unless a dry run) the real thing.
struct Disk<'s> {
    store: &'s Store,
    dry_run: bool,
    /// Paths already acted on, with the state they were given (all a dry run knows of them).
    overlay: HashMap<PathBuf, FileState>,
}

impl Disk<'_> {
    fn state(&self, path: &Path) -> FileState {
        match self.overlay.get(path) {
            Some(s) => s.clone(),
            None => observe_path(path),
        }
    }

    /// Writes a kept file back, with its exact bytes and permission bits.
    fn write_back(&mut self, path: &Path, state: &FileState) -> Result<(), String> {
        let (Some(sha), Some(mode)) = (state.sha256(), state.mode()) else {
            return Err("internal error: not a file state; please report it".into());
        };
        if !is_sha256(sha) {
            return Err("its recorded digest is not a sha256".into());
        }
        let mode = mode & RESTORED_MODE_MASK;
        let blob = self.store.blob(sha);
        if self.dry_run {
            if !blob.is_file() {
                return Err(format!("its kept copy {} is missing", blob.display()));
            }
        } else {
            let parent = real_parent(path, true)?;
            copy_back(&blob, sha, mode, path, &parent)
                .map_err(|e| format!("cannot write it back: {e}"))?;
        }
        self.overlay.insert(path.to_path_buf(), state.clone());
        Ok(())
    }

    /// Removes a file the call created.
    fn remove(&mut self, path: &Path) -> Result<(), String> {
        if !self.dry_run {
            let parent = real_parent(path, false)?;
            std::fs::remove_file(path).map_err(|e| format!("cannot remove it: {e}"))?;
            sync_dir(&parent).map_err(|e| format!("cannot sync {}: {e}", parent.display()))?;
        }
        self.overlay.insert(path.to_path_buf(), FileState::Absent);
        Ok(())
    }

    /// Removes a folder the call made, if it is empty (`rmdir` refuses one that is not).
    fn remove_empty_folder(&mut self, path: &Path) -> Result<(), String> {
        if !self.dry_run {
            let parent = real_parent(path, false)?;
            std::fs::remove_dir(path).map_err(|e| {
                format!("a folder the call made, and it is not empty now ({e}); rewind never removes what it holds")
            })?;
            sync_dir(&parent).map_err(|e| format!("cannot sync {}: {e}", parent.display()))?;
        }
        self.overlay.insert(path.to_path_buf(), FileState::Absent);
        Ok(())
    }

    /// Moves a folder back where it came from, never replacing anything there.
    fn move_back(&mut self, from: &Path, to: &Path) -> Result<(), String> {
        if !self.dry_run {
            let from_parent = real_parent(from, false)?;
            let to_parent = real_parent(to, true)?;
            let (Some(from_name), Some(to_name)) = (from.file_name(), to.file_name()) else {
                return Err("a path without a file name".into());
            };
            let open = |p: &Path| File::open(p).map_err(|e| format!("{}: {e}", p.display()));
            let (fd, td) = (open(&from_parent)?, open(&to_parent)?);
            nix::fcntl::renameat2(
                &fd,
                from_name,
                &td,
                to_name,
                nix::fcntl::RenameFlags::RENAME_NOREPLACE,
            )
            .map_err(|e| format!("cannot move it back: {e}"))?;
            td.sync_all().map_err(|e| e.to_string())?;
            fd.sync_all().map_err(|e| e.to_string())?;
        }
        self.overlay.insert(from.to_path_buf(), FileState::Absent);
        self.overlay.insert(to.to_path_buf(), FileState::Folder);
        Ok(())
    }
}

/// The folder holding `path`, refused when it is reached through a symlink now (the record
/// holds resolved paths, so a folder on the way that became a symlink would lead elsewhere).
/// With `create`, missing folders are made first.
///
/// Missing folders are made one by one below the nearest folder that exists, and only once that
/// folder is found to be reached without a symlink: a folder on the way that is now a symlink
/// must not make the rewind create anything where it leads.
fn real_parent(path: &Path, create: bool) -> Result<PathBuf, String> {
    let Some(parent) = path.parent() else {
        return Err(format!("{} has no folder", path.display()));
    };
    if create && std::fs::symlink_metadata(parent).is_err() {
        let mut missing = Vec::new();
        let mut at = parent;
        while std::fs::symlink_metadata(at).is_err() {
            missing.push(at);
            at = at
                .parent()
                .ok_or_else(|| format!("no folder of {} exists", path.display()))?;
        }
        let real = at
            .canonicalize()
            .map_err(|e| format!("cannot reach {}: {e}", at.display()))?;
        if real != at {
            return Err(format!(
                "{} leads to {} now (a symlink on the way); rewind does not follow it",
                at.display(),
                real.display()
            ));
        }
        for dir in missing.into_iter().rev() {
            std::fs::create_dir(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        }
    }
    let real = parent
        .canonicalize()
        .map_err(|e| format!("cannot reach {}: {e}", parent.display()))?;
    if real != parent {
        return Err(format!(
            "{} leads to {} now (a symlink on the way); rewind does not follow it",
            parent.display(),
            real.display()
        ));
    }
    Ok(real)
}

/// Copies a kept blob to `path` atomically: a temporary file beside it with the exact mode, the
/// content checked against `sha256` as it is copied, `fsync`, rename, `fsync` of the folder.
fn copy_back(blob: &Path, sha256: &str, mode: u32, path: &Path, parent: &Path) -> io::Result<()> {
    let mut from = File::open(blob)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let n = TEMP.fetch_add(1, Ordering::Relaxed);
    let short: String = name.chars().take(100).collect();
    let temp = parent.join(format!(
        ".{short}.{}-{n}.reasonix-rewind",
        std::process::id()
    ));
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(&temp)?;
    let written = (|| {
        let (got, _) = digest(&mut from, Some(&mut out))?;
        if got != sha256 {
            return Err(io::Error::other(format!(
                "its kept copy {} is damaged (sha256 {got}, not {sha256})",
                blob.display()
            )));
        }
        out.set_permissions(std::fs::Permissions::from_mode(mode))?;
        out.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    sync_dir(parent)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::sha256;

    fn file(content: &[u8], mode: u32) -> FileState {
        FileState::file(sha256(content), mode, content.len() as u64)
    }

    fn snap(path: &Path, before: FileState, after: FileState, kept: bool) -> SnapshotFile {
        SnapshotFile {
            path: path.display().to_string(),
            before,
            after,
            kept,
            note: None,
        }
    }

    fn point(line: usize, call: &str, files: Vec<SnapshotFile>) -> Point {
        Point {
            line,
            run_id: "r".into(),
            call_id: call.into(),
            tool: "write_file".into(),
            files,
            recorded: true,
        }
    }

    fn anywhere(_: &Path, _: Restore<'_>) -> Result<(), String> {
        Ok(())
    }

    /// A ledger of these points, each after its call line.
    fn ledger(points: Vec<Point>) -> Ledger {
        let calls = points
            .iter()
            .map(|p| CallLine {
                line: p.line,
                run_id: p.run_id.clone(),
                call_id: p.call_id.clone(),
                tool: p.tool.clone(),
                ran: true,
                unobserved: false,
                command: None,
            })
            .collect();
        Ledger {
            calls,
            points,
            ..Ledger::default()
        }
    }

    fn world() -> (tempfile::TempDir, PathBuf, Store) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let store = Store::beside(&root.join("record.jsonl"));
        std::fs::create_dir_all(store.dir()).unwrap();
        (dir, root, store)
    }

    fn keep_blob(store: &Store, content: &[u8]) {
        std::fs::write(store.blob(&sha256(content)), content).unwrap();
    }

    #[test]
    fn two_changes_to_one_file_are_undone_newest_first() {
        let (_d, root, store) = world();
        let f = root.join("f");
        std::fs::write(&f, "two").unwrap();
        keep_blob(&store, b"one");
        let l = ledger(vec![
            point(
                1,
                "a",
                vec![snap(&f, FileState::Absent, file(b"one", 0o644), false)],
            ),
            point(
                3,
                "b",
                vec![snap(&f, file(b"one", 0o644), file(b"two", 0o644), true)],
            ),
        ]);
        let target = Target::To {
            call: "a".into(),
            run: None,
        };
        // A dry run sees the second undo through the first, and changes nothing.
        let dry = rewind(&l, &store, &target, false, true, &anywhere).unwrap();
        assert_eq!(dry.restored.len(), 2, "{dry:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        let done = rewind(&l, &store, &target, false, false, &anywhere).unwrap();
        assert_eq!(done.restored.len(), 2, "{done:?}");
        assert!(done.left.is_empty());
        assert!(!f.exists(), "the file the first call created is gone");
    }

    #[test]
    fn a_file_changed_since_is_left_alone_unless_forced() {
        let (_d, root, store) = world();
        let f = root.join("f");
        std::fs::write(&f, "edited by a person").unwrap();
        keep_blob(&store, b"one");
        let l = ledger(vec![point(
            1,
            "a",
            vec![snap(&f, file(b"one", 0o600), file(b"two", 0o600), true)],
        )]);
        let r = rewind(&l, &store, &Target::Last(1), false, false, &anywhere).unwrap();
        assert!(r.restored.is_empty());
        assert!(r.left[0].detail.contains("changed since"), "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"edited by a person");
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert_eq!(r.restored.len(), 1, "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"one");
        let mode = std::fs::metadata(&f).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_damaged_kept_copy_is_refused_and_the_file_stays() {
        let (_d, root, store) = world();
        let f = root.join("f");
        std::fs::write(&f, "two").unwrap();
        std::fs::write(store.blob(&sha256(b"one")), "not one").unwrap();
        let l = ledger(vec![point(
            1,
            "a",
            vec![snap(&f, file(b"one", 0o644), file(b"two", 0o644), true)],
        )]);
        let r = rewind(&l, &store, &Target::Last(1), false, false, &anywhere).unwrap();
        assert!(r.left[0].detail.contains("damaged"), "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
    }

    #[test]
    fn a_folder_on_the_way_that_became_a_symlink_is_not_followed() {
        let (_d, root, store) = world();
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("f"), "two").unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("sub")).unwrap();
        let f = root.join("sub/f");
        let l = ledger(vec![point(
            1,
            "a",
            vec![snap(&f, FileState::Absent, file(b"two", 0o644), false)],
        )]);
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert!(r.left[0].detail.contains("symlink"), "{r:?}");
        assert!(elsewhere.join("f").exists());
    }

    #[test]
    fn a_missing_folder_behind_a_symlink_is_not_made_where_it_leads() {
        let (_d, root, store) = world();
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("sub")).unwrap();
        keep_blob(&store, b"one");
        let f = root.join("sub/new/deeper/f");
        let l = ledger(vec![point(
            1,
            "a",
            vec![snap(&f, file(b"one", 0o644), FileState::Absent, true)],
        )]);
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert!(r.left[0].detail.contains("symlink"), "{r:?}");
        assert!(
            !elsewhere.join("new").exists(),
            "nothing made through the link"
        );
        // Without the link, the folders are made and the file comes back.
        std::fs::remove_file(root.join("sub")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert_eq!(r.restored.len(), 1, "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"one");
    }

    #[test]
    fn a_folder_is_never_removed_and_an_unkept_file_is_not_restorable() {
        let (_d, root, store) = world();
        let dir = root.join("d");
        std::fs::create_dir(&dir).unwrap();
        let g = root.join("g");
        let l = ledger(vec![point(
            1,
            "a",
            vec![
                snap(&dir, FileState::Absent, file(b"x", 0o644), false),
                snap(&g, file(b"big", 0o644), FileState::Absent, false),
            ],
        )]);
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert!(dir.is_dir());
        assert!(r.left[0].detail.contains("folder"), "{r:?}");
        assert!(r.not_restorable[0].detail.contains("not kept"), "{r:?}");
    }

    /// Issue 28, item 6: a digest field that is not a sha256 names no blob — a forged record's
    /// `../` path is never opened — and a restored file never gets setuid, setgid or sticky.
    #[test]
    fn a_digest_that_is_not_a_sha256_is_refused_and_special_mode_bits_are_masked() {
        let (_d, root, store) = world();
        let outside = root.join("outside-secret");
        std::fs::write(&outside, "secret").unwrap();
        let f = root.join("f");
        std::fs::write(&f, "now").unwrap();
        let forged = FileState::File {
            sha256: "../../outside-secret".into(),
            mode: "0644".into(),
            bytes: 6,
        };
        let l = ledger(vec![point(
            1,
            "a",
            vec![snap(&f, forged, file(b"now", 0o644), true)],
        )]);
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert!(r.not_restorable[0].detail.contains("not a sha256"), "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"now");
        // The twin: a true digest is written back, its mode without the special bits.
        keep_blob(&store, b"one");
        let l = ledger(vec![point(
            1,
            "b",
            vec![snap(&f, file(b"one", 0o6755), file(b"now", 0o644), true)],
        )]);
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert_eq!(r.restored.len(), 1, "{r:?}");
        assert!(r.restored[0].detail.contains("never restored"), "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"one");
        let mode = std::fs::metadata(&f).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o755);
        assert!(is_sha256(&sha256(b"x")) && !is_sha256(&sha256(b"x").to_uppercase()));
    }

    #[test]
    fn what_an_earlier_rewind_restored_is_not_undone_again() {
        let text = [
            r#"{"run_id":"r","call_id":"a","tool":"write_file","outcome":"succeeded","started_ms":1,"lease":{"kind":"paths","paths":["/x/f"]},"snapshot":[{"path":"/x/f","before":{"kind":"absent"},"after":{"kind":"absent"},"kept":false,"note":null}]}"#,
            r#"{"run_id":"r","call_id":"b","tool":"bash","outcome":"failed","started_ms":2,"arguments":"{\"command\":\"rm -rf x\"}","lease":{"kind":"workspace"}}"#,
            r#"{"run_id":"w","event":"rewind","restored":[{"run_id":"r","call_id":"a","tool":"write_file","path":"/x/f","detail":"removed"}]}"#,
        ]
        .join("\n");
        let l = Ledger::parse(&text).unwrap();
        assert!(l.points().is_empty());
        assert_eq!(l.calls[1].command.as_deref(), Some("rm -rf x"));
        assert!(l.calls[1].unobserved && !l.calls[0].unobserved);
        // A line a run was writing when it stopped is skipped and named.
        let l = Ledger::parse("{}\n{\"run_id\":\"r\",\"call_").unwrap();
        assert_eq!(l.damaged(), [2]);
    }

    #[test]
    fn a_path_out_of_bounds_is_not_restorable_and_stays() {
        let (_d, root, store) = world();
        let f = root.join("f");
        std::fs::write(&f, "two").unwrap();
        keep_blob(&store, b"one");
        let l = ledger(vec![point(
            1,
            "a",
            vec![snap(&f, file(b"one", 0o644), file(b"two", 0o644), true)],
        )]);
        let nowhere = |p: &Path, _: Restore<'_>| Err(format!("{} is out of bounds", p.display()));
        let r = rewind(&l, &store, &Target::Last(1), true, false, &nowhere).unwrap();
        assert!(r.restored.is_empty() && r.left.is_empty(), "{r:?}");
        assert!(
            r.not_restorable[0]
                .detail
                .starts_with("rewind does not write there: "),
            "{r:?}"
        );
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
    }

    #[test]
    fn a_call_noted_but_never_recorded_is_found_and_restored_only_with_force() {
        let (_d, root, store) = world();
        let f = root.join("f");
        std::fs::write(&f, "one").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        // What the session does before a write runs: keep, then note.
        let confined = ConfinedPath::new(root.clone(), PathBuf::from("f"), true);
        let kept = store.keep(&confined);
        assert!(kept.kept);
        let noted = store
            .note(
                "r",
                "c/../1",
                "write_file",
                &[(f.display().to_string(), kept)],
            )
            .unwrap();
        assert!(noted.starts_with(store.dir().join(NOTES)));
        // The write happens; the run dies before recording it.
        std::fs::write(&f, "two").unwrap();
        let record = r#"{"run_id":"r","event":"run_started"}"#;
        let l = Ledger::parse(record)
            .unwrap()
            .with_interrupted(store.interrupted().unwrap());
        let points = l.points();
        assert_eq!(points.len(), 1);
        assert!(!points[0].recorded && points[0].call_id == "c/../1");
        let r = rewind(&l, &store, &Target::Last(1), false, false, &anywhere).unwrap();
        assert!(r.left[0].detail.contains(UNRECORDED), "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
        assert_eq!(r.restored.len(), 1, "{r:?}");
        assert_eq!(std::fs::read(&f).unwrap(), b"one");
        assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o7777, 0o640);
        // Once the call's line is recorded, the note is settled and gone.
        store.settle(&noted).unwrap();
        assert!(store.interrupted().unwrap().is_empty());
    }

    #[test]
    fn a_note_whose_call_is_recorded_is_ignored() {
        let (_d, root, store) = world();
        let f = root.join("f");
        let kept = Kept {
            state: FileState::Absent,
            kept: false,
            note: None,
        };
        store
            .note("r", "a", "write_file", &[(f.display().to_string(), kept)])
            .unwrap();
        let record = r#"{"run_id":"r","call_id":"a","tool":"write_file","outcome":"succeeded","started_ms":1,"lease":{"kind":"paths","paths":["/x/f"]},"snapshot":[]}"#;
        let l = Ledger::parse(record)
            .unwrap()
            .with_interrupted(store.interrupted().unwrap());
        assert!(l.points().is_empty());
    }

    #[test]
    fn an_unreadable_note_is_an_error_not_a_skip() {
        let (_d, _root, store) = world();
        std::fs::create_dir_all(store.dir().join(NOTES)).unwrap();
        std::fs::write(store.dir().join(NOTES).join("x.json"), "{").unwrap();
        let e = store.interrupted().unwrap_err();
        assert!(e.to_string().contains("x.json"), "{e}");
    }
}
