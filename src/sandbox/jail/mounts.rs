//! A run's own mount namespace, as paths: what is bound where, worked out in the parent before
//! the fork. The child only makes the system calls (`run::namespace`), in this order:
//!
//! 1. every mount is made private, so that nothing done inside propagates back to the host;
//! 2. detached clones are taken of the write roots the run writes in place, an overlay is made
//!    (detached too) of each write root the run writes observed — the real folder below, the
//!    run's own upper layer above, neither inside the other —, clones are taken of the
//!    pass-through folders inside those, and of the run's own TMPDIR; then, where a
//!    secret is to be covered, a tmpfs of the run's own is mounted over the folder that holds
//!    every run's TMPDIR (step 7 hides it), an empty folder and an empty file are made in it,
//!    and a clone is taken of each, once per secret — so no cover is made or removed on the
//!    host's disk (issue 12: on this machine's ext4, making and removing a folder cost more
//!    than the mounts together);
//! 3. the whole tree is made read-only and `nosuid`, recursively (one `mount_setattr`): from
//!    here on, nothing outside the clones can be written, nor its mode, owner, times or
//!    extended attributes changed — Landlock does not mediate metadata, a read-only mount does;
//! 4. the write roots' clones are put back over the write roots, read-write as they were, or
//!    their overlays attached over them, then the pass-through folders' clones over theirs
//!    inside the overlays; a run admitted to read only gets neither, and its write roots stay
//!    read-only (`EROFS`) like the rest of the tree;
//! 5. each secret — the system's, and each path a deny or ask rule protects from reading that
//!    exists when the run starts — is covered by its clone of the empty file or folder, made
//!    read-only;
//! 6. the folders between a write root and a host file are bound over themselves (a mount point
//!    cannot be renamed or removed, so `mv policies x; mkdir policies` fails), then each host
//!    file is bound over itself and made read-only;
//! 7. the run's TMPDIR is bound over the folder that holds every run's, hiding the others;
//! 8. `/proc` is mounted fresh (read-only) for the run's PID namespace;
//! 9. the working folder is entered again: the one inherited lies under the workspace's clone.
//!
//! Landlock then restricts what it always did, and its rules must name what these mounts show.
//! A Landlock path walk that reaches the root of a mount goes on above the folder the mount
//! covers, skipping that folder's own rules. The clone of a write root has the write root itself
//! as its root, so the rule on it holds; the run's TMPDIR clone has the run's own folder as its
//! root, which the run's ruleset grants (and no other run's); the fresh `/proc` is a new inode,
//! which the child adds to its ruleset once mounted. A cover's root is the empty file or folder
//! on the run's tmpfs, which no rule grants: Landlock still refuses the secret's path, now with
//! nothing behind it.

use std::path::{Path, PathBuf};

/// One run's mount namespace, in canonical paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Bound read-write over themselves (written in place).
    pub write_roots: Vec<PathBuf>,
    /// Each made an overlay of over itself (written observed): the real folder below, the
    /// run's upper layer above.
    pub overlays: Vec<Layer>,
    /// Folders inside the overlays bound over themselves from the real folder: written in
    /// place (`sandbox.passthrough`).
    pub passthrough: Vec<PathBuf>,
    /// Each secret (first), covered by an empty folder or file (second).
    pub covers: Vec<(PathBuf, Cover)>,
    /// Folders between a write root and a host file, bound over themselves.
    pub pins: Vec<PathBuf>,
    /// The host's files inside the write roots, bound read-only over themselves.
    pub read_only: Vec<PathBuf>,
    /// The run's own TMPDIR.
    pub tmp_run: PathBuf,
    /// Where it is bound: the folder holding every run's TMPDIR (the run's `TMPDIR` inside).
    pub tmp_at: PathBuf,
    /// The working folder.
    pub workspace: PathBuf,
}

/// An overlay over a write root: its upper layer and overlayfs's work folder, both on one
/// filesystem, made by the run before the fork outside every root it may reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Layer {
    /// The write root (the lower layer, and where the overlay is attached).
    pub root: PathBuf,
    /// Where the run's changes land.
    pub upper: PathBuf,
    /// overlayfs's own scratch folder.
    pub work: PathBuf,
}

/// What covers a secret: an empty folder (over a folder) or an empty file (over anything else),
/// read-only, made on a tmpfs of the run's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cover {
    /// An empty folder.
    Dir,
    /// An empty file.
    File,
}

impl Cover {
    /// The cover of `secret`, by what it is now (a link by what it points to).
    pub(super) fn of(secret: &Path) -> Cover {
        if secret.is_dir() {
            Cover::Dir
        } else {
            Cover::File
        }
    }

    /// Its name on the run's tmpfs.
    pub(super) fn name(self) -> &'static str {
        match self {
            Cover::Dir => "empty-dir",
            Cover::File => "empty-file",
        }
    }
}

/// The ids a user namespace maps (itself only), when Reasonix makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Users {
    /// Reasonix's user id, mapped to itself.
    pub uid: u32,
    /// Reasonix's group id, mapped to itself.
    pub gid: u32,
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// The host's files a run binds read-only — those that exist now and lie inside a write root
/// (the rest of the tree is read-only already), a file inside another left to it — and the
/// folders to pin between them and their write root, outermost first. Returns `(pins, files)`.
pub(super) fn host_binds(
    host_files: &[PathBuf],
    write_roots: &[PathBuf],
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut found: Vec<PathBuf> = host_files
        .iter()
        .filter_map(|f| f.canonicalize().ok())
        .filter(|f| write_roots.iter().any(|r| f.starts_with(r) && f != r))
        .collect();
    found.sort_by_key(|f| (depth(f), f.clone()));
    let mut files: Vec<PathBuf> = Vec::new();
    for f in found {
        if !files.iter().any(|kept| f.starts_with(kept)) {
            files.push(f);
        }
    }
    let mut pins: Vec<PathBuf> = Vec::new();
    for f in &files {
        let Some(root) = write_roots
            .iter()
            .filter(|r| f.starts_with(r))
            .max_by_key(|r| depth(r))
        else {
            continue;
        };
        for folder in f.ancestors().skip(1) {
            if folder == root.as_path() || !folder.starts_with(root) {
                break;
            }
            if !pins.iter().any(|p| p == folder) {
                pins.push(folder.to_path_buf());
            }
        }
    }
    pins.sort_by_key(|p| (depth(p), p.clone()));
    (pins, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_files_inside_a_write_root_are_bound_with_the_folders_above_them_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        for f in [
            "ws/.reasonix/record.jsonl",
            "ws/reasonix.yaml",
            "ws/config/policies/p.yaml",
            "outside/p.yaml",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let host = [
            ws.join(".reasonix/record.jsonl"),
            ws.join(".reasonix"),
            ws.join("reasonix.yaml"),
            ws.join("config/policies/p.yaml"),
            ws.join("not-there.yaml"),
            root.join("outside/p.yaml"),
            ws.clone(),
        ];
        let (pins, files) = host_binds(&host, std::slice::from_ref(&ws));
        // The record lies inside `.reasonix`, bound already; what does not exist, what lies
        // outside the write roots and the write root itself are not bound.
        assert_eq!(
            files,
            [
                ws.join(".reasonix"),
                ws.join("reasonix.yaml"),
                ws.join("config/policies/p.yaml")
            ]
        );
        assert_eq!(pins, [ws.join("config"), ws.join("config/policies")]);
    }
}
