//! The content store: previous contents kept by sha256 in a record's state folder, and the
//! notes of calls about to run (what a run that stops before recording a call leaves).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::fcntl::OFlag;
use serde::{Deserialize, Serialize};

use super::RewindError;
use super::observe::{Seen, digest, observe, see, unknown};
use crate::host::state_folder;
use crate::record::{FileState, SnapshotFile};
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
pub(super) const STORE: &str = "rewind";

/// The folder inside the store where a call is noted before it runs ([`Store::note`]).
pub(super) const NOTES: &str = "calls";

/// What a noted call left is unknown until its line is recorded: the `after` of its files.
pub const UNRECORDED: &str = "the run stopped before it recorded this call";

/// Orders the notes of one process (several calls of one answer may start in one millisecond).
pub(super) static NOTE_SEQ: AtomicU64 = AtomicU64::new(0);

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
pub(super) static TEMP: AtomicU64 = AtomicU64::new(0);

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

/// Whether `s` names a blob of the store: 64 lowercase hex digits, a sha256 and nothing else
/// (never a path: a forged record's digest field `../../etc/shadow` is refused).
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Makes a folder's entries durable.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
