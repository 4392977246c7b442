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
//! # Where each part lives
//!
//! - `store.rs`: the content store of previous contents ([`Store`]), and the notes of calls
//!   about to run ([`Interrupted`]);
//! - `observe.rs`: how a path is now ([`observe`], [`observe_path`]);
//! - `ledger.rs`: the record read for rewinding — what each call changed ([`Ledger`],
//!   [`Point`]);
//! - `restore.rs`: the algorithm above ([`rewind`]), over a ledger and a store;
//! - `disk.rs`: the disk as the restore writes it (atomic write-back, removal, moving back).
//!
//! [`Leased::changes`]: crate::lease::Leased::changes

mod disk;
mod ledger;
mod observe;
mod restore;
mod store;
#[cfg(test)]
mod tests;

pub use disk::RESTORED_MODE_MASK;
pub use ledger::{Ledger, Point};
pub use observe::{describe, observe, observe_path};
pub use restore::{Bounds, Report, Restore, Target, rewind};
pub use store::{
    Interrupted, Kept, MAX_AFTER_KEPT_BYTES, MAX_AFTER_KEPT_FILES, MAX_KEPT_BYTES, Store,
    UNRECORDED, is_sha256,
};

use std::path::PathBuf;

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
