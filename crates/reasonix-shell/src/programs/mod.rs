//! What a program's own options and language make it do, read from its argv.
//!
//! - [`spec`]: the option-spec types and the one matcher ([`spec::parse`]) that splits an
//!   argv into options (by canonical name, with their values) and operands the way the
//!   program's own parser does — abbreviated long options, clusters, attached values, tar's
//!   old-style letters, subcommands;
//! - one table of specs per family: [`files`] (coreutils and friends), [`archives`],
//!   [`interpreters`], [`awk`], [`sed`], [`git`], [`build`] (make, cargo, npm…), [`remote`]
//!   (ssh, rsync, curl), [`runners`] (npx, uv run, nix develop…), [`wrapping`] (timeout, env,
//!   xargs, sudo, the shells), [`builtins`];
//! - the mini-parsers behind the hazard table's checks for programs whose danger hides in a
//!   language of their own: [`awk`] programs and [`sed`] scripts;
//! - [`paths`]: the paths hidden in attached option values, git's `REV:PATH` and folder moves.
//!
//! [`spec_for`] finds a program's spec by its basename. The hazard table, the readers, the
//! wrappers and the policy's option normalization read the matcher's output; nothing here
//! imports them.

pub mod archives;
pub mod awk;
pub mod build;
pub mod builtins;
pub mod files;
pub mod git;
pub mod interpreters;
pub mod paths;
pub mod remote;
pub mod runners;
pub mod sed;
pub mod spec;
pub mod unseen;
pub mod wrapping;

use std::collections::HashMap;
use std::sync::OnceLock;

use spec::Spec;

/// Every family's specs.
const FAMILIES: &[&[Spec]] = &[
    files::SPECS,
    archives::SPECS,
    interpreters::SPECS,
    interpreters::EDITORS,
    &[awk::SPEC, sed::SPEC, git::SPEC],
    build::SPECS,
    remote::SPECS,
    runners::SPECS,
    wrapping::SPECS,
    builtins::SPECS,
];

/// Every spec, family by family.
pub fn specs() -> impl Iterator<Item = &'static Spec> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// The spec of a program, by its basename; a trailing version is ignored (`python3.11` is
/// `python3`). The index is built once, on first use.
pub fn spec_for(basename: &str) -> Option<&'static Spec> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Spec>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = HashMap::new();
        for spec in specs() {
            for name in spec.names {
                // The first family to name a program owns it.
                index.entry(*name).or_insert(spec);
            }
        }
        index
    });
    index.get(basename).copied().or_else(|| {
        let trimmed = basename.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        (trimmed != basename && !trimmed.is_empty())
            .then(|| index.get(trimmed).copied())
            .flatten()
    })
}
