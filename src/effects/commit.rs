//! **Commit**: the changes of a run, all allowed, made in the real roots — each through the
//! write grant of its own admission ([`WritePath`]: beneath its root, no symlink followed).
//!
//! Order ([`order`]): first what must go before a path can be made again (the paths below a
//! folder the run replaced with a file or a link, deepest first); then everything made or
//! changed, parents before children (a folder is made writable by its owner until the end);
//! then the plain deletions, deepest first — so that a commit stopped part way (a full disk)
//! has lost nothing the run kept. Last, the folders get their own permission bits
//! ([`finish_folder`]).
//!
//! Durable in two steps, not one `fsync` per file: every file and link is first written beside
//! its path under a temporary name ([`stage`]: content copied from the upper layer, permission
//! bits — never set-id or sticky: [`MODE_MASK`] — and times set), then the filesystem is made
//! durable once (`syncfs`); only then does anything land, each file renamed over its path in
//! the order above, and the filesystem made durable again. A crash before the first `syncfs`
//! leaves the workspace as it was (and temporary files beside it); after it, each file that
//! landed is whole. A deletion removes a file, a link or an emptied folder.

use std::fs::File;
use std::io;

use super::{Change, Judged, Node};
use crate::sandbox::{Staged, WritePath};

/// The permission bits a committed file or folder may have: no set-user-id, set-group-id or
/// sticky bit (a jailed root could otherwise leave a set-id copy of a shell in the workspace).
pub const MODE_MASK: u32 = 0o777;

/// The order changes are made in (see the module doc).
pub(super) fn order(judged: Vec<Judged>) -> Vec<Judged> {
    let replaced: Vec<std::path::PathBuf> = judged
        .iter()
        .filter(|j| {
            matches!(j.change.before, Node::Folder { .. })
                && !matches!(j.change.after, Node::Folder { .. } | Node::Absent)
        })
        .map(|j| j.change.path.clone())
        .collect();
    let (mut first, mut made, mut last) = (Vec::new(), Vec::new(), Vec::new());
    for j in judged {
        if !j.change.deletes() {
            made.push(j);
        } else if replaced
            .iter()
            .any(|r| j.change.path.starts_with(r) && j.change.path != *r)
        {
            first.push(j);
        } else {
            last.push(j);
        }
    }
    let deepest_first = |a: &Judged, b: &Judged| {
        let depth = |j: &Judged| j.change.path.components().count();
        depth(b)
            .cmp(&depth(a))
            .then_with(|| a.change.path.cmp(&b.change.path))
    };
    first.sort_by(deepest_first);
    made.sort_by(|a, b| a.change.path.cmp(&b.change.path));
    last.sort_by(deepest_first);
    first.into_iter().chain(made).chain(last).collect()
}

/// Writes a file or link change beside its path ([`WritePath::stage_file`]), before anything
/// lands; `None` for other changes, or where its folder cannot be had yet (it replaces a file
/// the commit removes first): that one is written when its turn comes.
pub(super) fn stage(change: &Change, grant: &WritePath) -> Option<Staged> {
    match &change.after {
        Node::File { mode, .. } => {
            let source = change.source.as_deref()?;
            let mut file = File::open(source).ok()?;
            let times = std::fs::symlink_metadata(source)
                .ok()
                .and_then(|m| m.modified().ok());
            grant.stage_file(&mut file, mode & MODE_MASK, times).ok()
        }
        Node::Link { target } => grant.stage_link(target).ok(),
        _ => None,
    }
}

/// Makes one change through `grant`, landing what was staged for it.
pub(super) fn apply(change: &Change, grant: &WritePath, staged: Option<Staged>) -> io::Result<()> {
    if let Some(staged) = staged {
        return grant.land(staged);
    }
    match &change.after {
        Node::Absent => grant.remove_any(),
        Node::File { .. } | Node::Link { .. } => {
            let staged = stage(change, grant).ok_or_else(missing)?;
            grant.land(staged)
        }
        // Writable by its owner until the end: what goes inside it is made next.
        Node::Folder { mode } => grant.make_folder((mode & MODE_MASK) | 0o700),
        Node::Special { what } => Err(io::Error::other(format!(
            "a {what} is never carried into a root"
        ))),
    }
}

/// Gives a folder the run made (or re-moded) its own permission bits, once what it holds is
/// made.
pub(super) fn finish_folder(change: &Change, grant: &WritePath) -> io::Result<()> {
    match change.after {
        Node::Folder { mode } if mode & MODE_MASK != (mode & MODE_MASK) | 0o700 => {
            grant.set_folder_mode(mode & MODE_MASK)
        }
        _ => Ok(()),
    }
}

fn missing() -> io::Error {
    io::Error::other("the run's copy of it could not be written beside its path")
}
