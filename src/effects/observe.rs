//! **Observe**: a writer's run, read back from its overlay's upper layers once every process of
//! it is gone.
//!
//! An upper layer holds only what the run changed, as overlayfs left it (`redirect_dir=off`,
//! `metacopy=off`: plain files, folders and links, and two marks):
//!
//! - a **whiteout** — a character device 0/0 — where the run deleted what the real folder has;
//! - an **opaque** folder — `trusted.overlay.opaque` (`user.overlay.opaque` in a user namespace)
//!   set to `y` — where the run deleted a folder and made a new one of the same name: what the
//!   real folder held below it is gone, but for what the upper folder holds.
//!
//! Each entry is compared with the real root as it is now, never following a symlink:
//!
//! | upper | real | change |
//! |---|---|---|
//! | whiteout | anything | deleted (a folder: each path below it, deepest first, then itself) |
//! | file, folder or link | nothing | created |
//! | file | file | changed, unless the content and permission bits are the same (times only: no change) |
//! | folder | folder | its mode, if that changed; then what is below it (opaque: the real entries it no longer holds are deleted) |
//! | link | link | re-pointed, unless the target is the same |
//! | one kind | another | replaced (a folder replaced: each path below it deleted first) |
//! | fifo, device | — | kept as a change, which the judge refuses |
//! | socket | — | dropped, with a note (a socket is nothing without its process) |

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::{Change, Node, Passed};
use crate::sandbox::jail::Upper;

/// What the upper layers hold.
#[derive(Debug, Default)]
pub struct Seen {
    /// The changes, in the order found (parents before children).
    pub changes: Vec<Change>,
    /// What was left out, and why.
    pub notes: Vec<String>,
}

/// Reads every upper layer of `upper`.
///
/// # Errors
///
/// An upper entry or its real counterpart could not be read: nothing is judged then.
pub fn changes(upper: &Upper) -> io::Result<Seen> {
    let mut seen = Seen::default();
    let opaque = if upper.userxattr {
        "user.overlay.opaque"
    } else {
        "trusted.overlay.opaque"
    };
    for (root, layer) in &upper.layers {
        walk(root, layer, Path::new(""), opaque, false, &mut seen)?;
    }
    Ok(seen)
}

/// What `path` is, not following a final symlink.
pub fn node(path: &Path) -> io::Result<Node> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => node_of(path, &m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Node::Absent),
        Err(e) => Err(e),
    }
}

fn node_of(path: &Path, m: &Metadata) -> io::Result<Node> {
    let t = m.file_type();
    Ok(if t.is_file() {
        Node::File {
            mode: m.mode() & 0o7777,
            bytes: m.len(),
        }
    } else if t.is_dir() {
        Node::Folder {
            mode: m.mode() & 0o7777,
        }
    } else if t.is_symlink() {
        Node::Link {
            target: std::fs::read_link(path)?,
        }
    } else if t.is_fifo() {
        Node::Special { what: "fifo" }
    } else if t.is_socket() {
        Node::Special { what: "socket" }
    } else if t.is_char_device() {
        Node::Special {
            what: "character device",
        }
    } else {
        Node::Special {
            what: "block device",
        }
    })
}

/// Reads the upper folder `rel` (below `layer`) against the real one (below `root`); `fresh`
/// when the real path is no folder (the run made this one where there was nothing, a file or a
/// link): then nothing below it is looked up in the real root, where a link would be followed.
fn walk(
    root: &Path,
    layer: &Path,
    rel: &Path,
    opaque: &str,
    fresh: bool,
    seen: &mut Seen,
) -> io::Result<()> {
    let dir = layer.join(rel);
    let mut names: Vec<OsString> = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<io::Result<_>>()?;
    names.sort();
    for name in names {
        let rel = rel.join(&name);
        let up = layer.join(&rel);
        let real = root.join(&rel);
        let meta = std::fs::symlink_metadata(&up)?;
        let t = meta.file_type();
        let before = if fresh { Node::Absent } else { node(&real)? };
        if t.is_char_device() && meta.rdev() == 0 {
            // A whiteout: the run deleted what the real folder has here.
            if before != Node::Absent {
                deletions(&real, before, &mut seen.changes)?;
            }
            continue;
        }
        if t.is_socket() {
            seen.notes.push(format!(
                "not carried over: the socket {} (nothing without its process)",
                real.display()
            ));
            continue;
        }
        let after = node_of(&up, &meta)?;
        match (&before, &after) {
            (Node::Folder { mode: was }, Node::Folder { mode: now }) => {
                if was != now {
                    seen.changes
                        .push(change(&real, before.clone(), after.clone(), None));
                }
                if is_opaque(&up, opaque) {
                    let kept: BTreeSet<OsString> = std::fs::read_dir(&up)?
                        .map(|e| e.map(|e| e.file_name()))
                        .collect::<io::Result<_>>()?;
                    let mut gone: Vec<OsString> = std::fs::read_dir(&real)?
                        .map(|e| e.map(|e| e.file_name()))
                        .collect::<io::Result<Vec<_>>>()?
                        .into_iter()
                        .filter(|n| !kept.contains(n))
                        .collect();
                    gone.sort();
                    for n in gone {
                        let p = real.join(&n);
                        let was = node(&p)?;
                        deletions(&p, was, &mut seen.changes)?;
                    }
                }
                walk(root, layer, &rel, opaque, false, seen)?;
            }
            (_, Node::Folder { .. }) => {
                // Made where there was nothing, a file or a link.
                seen.changes.push(change(&real, before, after, None));
                walk(root, layer, &rel, opaque, true, seen)?;
            }
            (_, Node::File { .. }) => {
                if let Node::File { .. } = before
                    && same_file(&real, &up, &before, &after)?
                {
                    continue;
                }
                below_folder(&real, &before, &mut seen.changes)?;
                seen.changes.push(change(&real, before, after, Some(up)));
            }
            (_, Node::Link { target }) => {
                if let Node::Link { target: was } = &before
                    && was == target
                {
                    continue;
                }
                below_folder(&real, &before, &mut seen.changes)?;
                seen.changes.push(change(&real, before, after, Some(up)));
            }
            _ => {
                // A fifo or a device node: kept as a change, which the judge refuses.
                seen.changes.push(change(&real, before, after, None));
            }
        }
    }
    Ok(())
}

fn change(path: &Path, before: Node, after: Node, source: Option<PathBuf>) -> Change {
    Change {
        path: path.to_path_buf(),
        before,
        after,
        source,
    }
}

/// Where a folder is replaced by a file or a link: each path below it goes first.
fn below_folder(real: &Path, before: &Node, out: &mut Vec<Change>) -> io::Result<()> {
    if let Node::Folder { .. } = before {
        let mut inner = Vec::new();
        deletions(real, before.clone(), &mut inner)?;
        // The folder itself is replaced, not deleted: the last deletion is its own.
        inner.pop();
        out.extend(inner);
    }
    Ok(())
}

/// The deletion of `path` (which is `was`): a folder stands for each path below it, deepest
/// first, then itself. Symlinks are not followed.
fn deletions(path: &Path, was: Node, out: &mut Vec<Change>) -> io::Result<()> {
    if let Node::Folder { .. } = was {
        let mut names: Vec<OsString> = std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<io::Result<_>>()?;
        names.sort();
        for n in names {
            let p = path.join(&n);
            let inner = node(&p)?;
            deletions(&p, inner, out)?;
        }
    }
    out.push(change(path, was, Node::Absent, None));
    Ok(())
}

fn is_opaque(path: &Path, name: &str) -> bool {
    matches!(xattr::get(path, name), Ok(Some(v)) if v.as_slice() == b"y")
}

/// Whether two regular files have the same permission bits and content (a change of times
/// only is not a change).
fn same_file(real: &Path, up: &Path, before: &Node, after: &Node) -> io::Result<bool> {
    if before != after {
        return Ok(false);
    }
    let (mut a, mut b) = (File::open(real)?, File::open(up)?);
    let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = read_full(&mut a, &mut x)?;
        let m = read_full(&mut b, &mut y)?;
        if n != m || x[..n] != y[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The pass-through folders of a run: the files changed in each since the run started, and
/// their size (the folder is written in place; this is all that is said of it).
pub fn passed(upper: &Upper) -> Vec<Passed> {
    upper
        .passthrough
        .iter()
        .map(|folder| {
            let (mut files, mut bytes) = (0u64, 0u64);
            let mut stack = vec![folder.clone()];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for e in entries.flatten() {
                    let Ok(m) = e.metadata() else { continue };
                    if m.is_dir() {
                        stack.push(e.path());
                    } else if m.modified().is_ok_and(|t| t >= upper.started) {
                        files += 1;
                        bytes += m.len();
                    }
                }
            }
            Passed {
                path: folder.display().to_string(),
                files,
                bytes,
            }
        })
        .collect()
}
