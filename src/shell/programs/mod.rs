//! What a program's own language or options make it do, read from its argv: the mini-parsers
//! behind the hazard table's `Check` rows for programs whose danger hides in a language of
//! their own ([`awk`] programs, [`sed`] scripts) or in a command line richer than flags
//! ([`git`]'s global options and subcommands).
//!
//! Each returns the hazard's detail, or `None` when the use is benign; the table in
//! [`hazards`](super::hazards) decides the id and runs the rows. Nothing here imports the table.

pub mod awk;
pub mod git;
pub mod sed;
