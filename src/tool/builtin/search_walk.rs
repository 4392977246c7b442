//! The folder walk shared by `glob` and `grep`: ripgrep's `ignore` walker, configured so that it
//! never leaves the folder it starts in.
//!
//! - Symlinks are not followed (`follow_links(false)`), and `.git` folders are skipped.
//! - Hidden files are included; `.gitignore` and `.ignore` files *inside* the walked folder
//!   apply, even outside a git repository. Ignore files above it and the global git excludes are
//!   not read: they lie outside the roots.
//! - Entries a deny or ask rule protects from this call are skipped and counted, folders
//!   with everything below them: a search of `.` must not read the `.env` that a read of
//!   `.env` would have been denied.
//! - The walker reads folders by name, so a folder swapped for a symlink mid-walk could be
//!   listed. That is why every entry it yields is checked again beneath the root
//!   ([`ConfinedPath::exists_beneath`]) before it is reported or opened.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ignore::WalkBuilder;
use ignore::overrides::Override;

use crate::policy::PathFilter;
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

/// What a walk could not show.
#[derive(Default)]
pub(super) struct Skipped {
    /// Entries that could not be read.
    pub unreadable: usize,
    /// Entries withheld by policy, and the rules that withheld them.
    pub withheld: usize,
    pub rules: std::collections::BTreeSet<String>,
}

impl Skipped {
    /// Notes for the tool's output.
    pub fn notes(&self) -> String {
        let mut out = String::new();
        if self.withheld > 0 {
            let rules: Vec<&str> = self.rules.iter().map(String::as_str).collect();
            out.push_str(&format!(
                "\n[{} entries withheld by policy: {}]",
                self.withheld,
                rules.join(", ")
            ));
        }
        if self.unreadable > 0 {
            out.push_str(&format!(
                "\n[{} entries could not be read]",
                self.unreadable
            ));
        }
        out
    }
}

/// Walks below `base`, calling `visit` for each entry until it returns false.
pub(super) fn walk(
    base: &ConfinedPath,
    overrides: Option<Override>,
    filter: &PathFilter,
    mut visit: impl FnMut(Entry) -> bool,
) -> Skipped {
    let root = base.absolute();
    let withheld = Arc::new(Mutex::new(Skipped::default()));
    let mut builder = WalkBuilder::new(&root);
    let (filter, tally) = (filter.clone(), Arc::clone(&withheld));
    builder
        .follow_links(false)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            if e.file_name() == ".git" {
                return false;
            }
            match filter.withholds(e.path()) {
                None => true,
                Some(rule) => {
                    if let Ok(mut t) = tally.lock() {
                        t.withheld += 1;
                        t.rules.insert(rule.to_owned());
                    }
                    false
                }
            }
        });
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
    let mut skipped = withheld
        .lock()
        .map(|mut t| std::mem::take(&mut *t))
        .unwrap_or_default();
    skipped.unreadable += unreadable;
    skipped
}
