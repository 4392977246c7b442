//! The disk as a rewind writes it: atomic write-back from the store, removal, moving a folder
//! back, never through a folder that became a symlink.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use nix::fcntl::OFlag;

use super::observe::{digest, observe_path};
use super::store::{Store, TEMP, is_sha256, sync_dir};
use crate::record::FileState;

/// The permission bits a rewind gives a file it writes back: what the file tools may set —
/// read, write and execute for each class, never setuid, setgid or sticky.
pub const RESTORED_MODE_MASK: u32 = 0o777;

/// The disk as a rewind sees it: what it has done so far, and (unless a dry run) the real thing.
pub(super) struct Disk<'s> {
    pub(super) store: &'s Store,
    pub(super) dry_run: bool,
    /// Paths already acted on, with the state they were given (all a dry run knows of them).
    pub(super) overlay: HashMap<PathBuf, FileState>,
}

impl Disk<'_> {
    pub(super) fn state(&self, path: &Path) -> FileState {
        match self.overlay.get(path) {
            Some(s) => s.clone(),
            None => observe_path(path),
        }
    }

    /// Writes a kept file back, with its exact bytes and permission bits.
    pub(super) fn write_back(&mut self, path: &Path, state: &FileState) -> Result<(), String> {
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
    pub(super) fn remove(&mut self, path: &Path) -> Result<(), String> {
        if !self.dry_run {
            let parent = real_parent(path, false)?;
            std::fs::remove_file(path).map_err(|e| format!("cannot remove it: {e}"))?;
            sync_dir(&parent).map_err(|e| format!("cannot sync {}: {e}", parent.display()))?;
        }
        self.overlay.insert(path.to_path_buf(), FileState::Absent);
        Ok(())
    }

    /// Removes a folder the call made, if it is empty (`rmdir` refuses one that is not).
    pub(super) fn remove_empty_folder(&mut self, path: &Path) -> Result<(), String> {
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
    pub(super) fn move_back(&mut self, from: &Path, to: &Path) -> Result<(), String> {
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
pub(super) fn real_parent(path: &Path, create: bool) -> Result<PathBuf, String> {
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
pub(super) fn copy_back(
    blob: &Path,
    sha256: &str,
    mode: u32,
    path: &Path,
    parent: &Path,
) -> io::Result<()> {
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
