//! The folder walk shared by `glob` and `grep`: ripgrep's `ignore` walker, configured so that it
//! never leaves the folder it starts in.
//!
//! - Symlinks are not followed (`follow_links(false)`), and `.git` folders are skipped.
//! - Hidden files are included; `.gitignore` and `.ignore` files *inside* the walked folder
//!   apply, even outside a git repository. Ignore files above it and the global git excludes are
//!   not read: they lie outside the roots.
//! - The walker reads folders by name, so a folder swapped for a symlink mid-walk could be
//!   listed. That is why every entry it yields is checked again beneath the root
//!   ([`ConfinedPath::exists_beneath`]) before it is reported or opened.

use std::path::PathBuf;

use ignore::WalkBuilder;
use ignore::overrides::Override;

use crate::sandbox::ConfinedPath;

/// One entry found below the walked folder.
pub(super) struct Entry {
    /// The entry, confined.
    pub path: ConfinedPath,
    /// Its path relative to the walked folder.
    pub rel: PathBuf,
    /// A folder.
    pub is_dir: bool,
    /// A regular file (not a symlink).
    pub is_file: bool,
}

/// Walks below `base`, calling `visit` for each entry until it returns false. Returns how many
/// entries could not be read.
pub(super) fn walk(
    base: &ConfinedPath,
    overrides: Option<Override>,
    mut visit: impl FnMut(Entry) -> bool,
) -> usize {
    let root = base.absolute();
    let mut builder = WalkBuilder::new(&root);
    builder
        .follow_links(false)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    if let Some(o) = overrides {
        builder.overrides(o);
    }
    let mut unreadable = 0;
    for result in builder.build() {
        let Ok(entry) = result else {
            unreadable += 1;
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(&root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let Some(path) = base.child(rel) else {
            continue;
        };
        if !path.exists_beneath() {
            unreadable += 1;
            continue;
        }
        let kind = entry.file_type();
        let keep_going = visit(Entry {
            path,
            rel: rel.to_path_buf(),
            is_dir: kind.is_some_and(|k| k.is_dir()),
            is_file: kind.is_some_and(|k| k.is_file()),
        });
        if !keep_going {
            break;
        }
    }
    unreadable
}
