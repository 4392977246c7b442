//! A program's own bookkeeping: what a program writes inside the workspace in the ordinary
//! course of its work, which runs no code and names none to run — so that a rule that asks
//! about a whole folder (`git-internals: .git/**`) does not turn every object a `git commit`
//! an allow rule admitted writes into a question (issue 25).
//!
//! Data, one row per program: the program (as the bash analysis names the command), the paths
//! (globs with `/` kept literal), and why they run nothing. A change matching a row's paths is
//! the command's own only when the command ran that program ([`Bookkeeping::covers`]); it
//! lifts an `ask` only, never a deny nor a sandbox refusal (the gate's `changes` module).
//!
//! Left out on purpose, for git: `config` (aliases, `core.hooksPath`, `core.fsmonitor` run
//! code), `hooks/`, `info/` (attributes name filter drivers), `modules/*/config` and
//! `modules/*/hooks`, and the rebase and sequencer folders (`git-rebase-todo`'s `exec` lines
//! run commands when a rebase continues).

use std::path::Path;
use std::sync::OnceLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// One program's bookkeeping.
#[derive(Debug)]
pub struct Row {
    /// The program, as the analysis names the command (`git`).
    pub program: &'static str,
    /// What it writes, as globs over absolute paths (`*` never crosses `/`).
    pub paths: &'static [&'static str],
    /// Why none of it runs code.
    pub why: &'static str,
}

/// The table.
pub const TABLE: &[Row] = &[Row {
    program: "git",
    paths: &[
        "**/.git/objects/**",
        "**/.git/refs/**",
        "**/.git/logs/**",
        "**/.git/index",
        "**/.git/HEAD",
        "**/.git/ORIG_HEAD",
        "**/.git/FETCH_HEAD",
        "**/.git/MERGE_HEAD",
        "**/.git/MERGE_MSG",
        "**/.git/MERGE_MODE",
        "**/.git/AUTO_MERGE",
        "**/.git/CHERRY_PICK_HEAD",
        "**/.git/REVERT_HEAD",
        "**/.git/REBASE_HEAD",
        "**/.git/COMMIT_EDITMSG",
        "**/.git/packed-refs",
        "**/.git/modules/**/objects/**",
        "**/.git/modules/**/refs/**",
        "**/.git/modules/**/logs/**",
        "**/.git/modules/**/index",
        "**/.git/modules/**/HEAD",
    ],
    why: "git's object store, refs, reflogs, index and message files: data git reads, never code it runs",
}];

/// The table, compiled: one glob set per row.
#[derive(Debug)]
pub struct Bookkeeping {
    rows: Vec<(&'static Row, GlobSet)>,
}

impl Bookkeeping {
    /// The compiled table (built once per process).
    pub fn get() -> &'static Bookkeeping {
        static TABLE_SET: OnceLock<Bookkeeping> = OnceLock::new();
        TABLE_SET.get_or_init(|| Bookkeeping {
            rows: TABLE
                .iter()
                .map(|row| {
                    let mut set = GlobSetBuilder::new();
                    for p in row.paths {
                        // The table's own globs: each row is tested to compile.
                        if let Ok(g) = GlobBuilder::new(p).literal_separator(true).build() {
                            set.add(g);
                        }
                    }
                    (row, set.build().unwrap_or_else(|_| GlobSet::empty()))
                })
                .collect(),
        })
    }

    /// The row whose program one of `programs` is and whose paths hold `path`, if any.
    pub fn covers<'a>(
        &self,
        path: &Path,
        programs: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Option<&'static Row> {
        self.rows
            .iter()
            .find(|(row, set)| {
                programs.clone().into_iter().any(|p| p == row.program) && set.is_match(path)
            })
            .map(|(row, _)| *row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_compiles_whole() {
        for row in TABLE {
            for p in row.paths {
                GlobBuilder::new(p)
                    .literal_separator(true)
                    .build()
                    .unwrap_or_else(|e| panic!("{}: {p}: {e}", row.program));
            }
        }
    }

    /// Each row: what git writes in a commit is covered when git ran, and what runs code is not.
    #[test]
    fn gits_data_is_its_own_and_what_runs_code_is_not() {
        let b = Bookkeeping::get();
        let git = ["git"];
        for own in [
            "/ws/.git/objects/ab/cdef0123",
            "/ws/.git/objects/pack/pack-1.pack",
            "/ws/.git/refs/heads/main",
            "/ws/.git/logs/HEAD",
            "/ws/.git/logs/refs/heads/main",
            "/ws/.git/index",
            "/ws/.git/HEAD",
            "/ws/.git/ORIG_HEAD",
            "/ws/.git/FETCH_HEAD",
            "/ws/.git/MERGE_HEAD",
            "/ws/.git/MERGE_MSG",
            "/ws/.git/MERGE_MODE",
            "/ws/.git/AUTO_MERGE",
            "/ws/.git/CHERRY_PICK_HEAD",
            "/ws/.git/REVERT_HEAD",
            "/ws/.git/REBASE_HEAD",
            "/ws/.git/COMMIT_EDITMSG",
            "/ws/.git/packed-refs",
            "/ws/sub/.git/index",
            "/ws/.git/modules/lib/objects/ab/cd",
            "/ws/.git/modules/lib/refs/heads/main",
            "/ws/.git/modules/lib/logs/HEAD",
            "/ws/.git/modules/lib/index",
            "/ws/.git/modules/lib/HEAD",
        ] {
            assert!(b.covers(Path::new(own), git).is_some(), "{own}");
            // Only when git ran.
            assert!(b.covers(Path::new(own), ["make"]).is_none(), "{own}");
        }
        for code in [
            "/ws/.git/config",
            "/ws/.git/hooks/pre-commit",
            "/ws/.git/hooks",
            "/ws/.git/info/attributes",
            "/ws/.git/modules/lib/config",
            "/ws/.git/modules/lib/hooks/post-checkout",
            "/ws/.git/rebase-merge/git-rebase-todo",
            "/ws/.git/rebase-apply/patch",
            "/ws/.git/sequencer/todo",
            "/ws/.git",
            "/ws/.github/workflows/ci.yml",
            "/ws/notgit/objects/x",
        ] {
            assert!(b.covers(Path::new(code), git).is_none(), "{code}");
        }
    }
}
