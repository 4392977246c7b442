//! Policies: loading YAML rules and Rego modules, compiling them for one workspace, and judging a
//! classified call — the `policy` stage of the admission path.
//!
//! This file holds the words the layer shares ([`Decision`], [`Posture`], [`Defaults`],
//! [`PolicyProblem`]) and the rules of precedence below. The work is split by seam:
//!
//! - `load.rs`: files, folders and texts → a [`PolicySet`] (YAML, Rego, data), problems with
//!   file and line, the merge of `defaults`;
//! - `narrow.rs`: what a policy file nobody trusts may still say (its deny and ask rules, its
//!   stricter defaults and limits, its Rego modules' deny and ask votes);
//! - `compile.rs`: a [`PolicySet`] → a [`CompiledPolicy`] for one workspace;
//! - `ruling.rs`: the precedence below, applied to one call's [`Facts`];
//! - [`mcp`]: the `mcp:` section, what MCP tools do, declared by policy;
//! - `yaml.rs` (the YAML format), [`commands`] (how command rules match), `pattern.rs` (path
//!   globs), [`input`] (the document Rego sees), [`rego`] (Rego modules and their votes).
//!
//! # Precedence
//!
//! 1. Any matching `deny` rule denies.
//! 2. Otherwise any matching `ask` rule asks.
//! 3. Otherwise an `allow` rule that covers the *whole* call allows.
//! 4. Otherwise the fallback: `defaults.read_only` for a read-only call, `defaults.writer` for
//!    any other.
//! 5. Finally, what policy could not judge needs a person. The gate fails closed on:
//!    1. a call **not understood** (the tool could not analyse it; a bash script with
//!       problems) — nothing lifts this, not even Rego;
//!    2. a bash call with a **hazard** — lifted only by an allow that covers the whole call
//!       (which takes an `exact` line for each hazard's command) or a Rego allow;
//!    3. a bash call with a **part decided at run time**: a word that does not depend only on
//!       static text (a variable from the environment, a command's output, arithmetic, input
//!       fed to `xargs` — not a glob, a brace, a tilde, a loop variable bound to such words,
//!       `find`'s `{}`), an assignment value or a redirection target that is not static —
//!       lifted only by a Rego allow, which sees `bash.commands[].dynamic` and can judge the
//!       part; an allow rule never covers one (below). One exception follows the read-only
//!       classification: a reader fed by `xargs` taking the *read-only* fallback, whose reads
//!       are unnamed reads (below).
//!
//!    An allow, from any step, becomes ask, and [`Ruling::needs_person`] says why. It says so
//!    too when the ask came from a rule or the fallback, so that no posture (not even
//!    `defaults.unattended: allow`) turns an ask about what policy could not judge into an
//!    allow. A deny stays a deny.
//!
//! deny and ask match generously, allow strictly:
//!
//! | condition | deny / ask match when…                       | allow covers when…                          |
//! |-----------|----------------------------------------------|---------------------------------------------|
//! | `tools`   | a glob matches the tool name                 | the same                                    |
//! | `paths`   | any form of any touched path matches          | every form of every touched path matches    |
//! | `effects` | the call has any of the listed effects        | the call has only listed effects            |
//! | `commands`| any simple command anywhere, by basename and  | (bash) every simple command is covered by  |
//! |           | any spelling of its options                   | some allow rule, word by word              |
//! | `exact`   | a command is exactly this line                | the same; the only way past a hazard        |
//! | `except`  | the rule steps aside when its except *covers* | the rule is withdrawn when its except       |
//! |           | the call (the allow column)                   | *matches* any part (the deny/ask column)    |
//!
//! A rule applies unless the call matches its `except:` (`tools`, `paths`, `commands`, all that
//! are given). The except is matched the way that keeps the gate closed: an exception to a deny
//! or ask widens what may run, so it must cover the whole call (every path, every simple command
//! that needs cover, nothing decided at run time); an exception to an allow narrows it, so any
//! part that matches withdraws it.
//!
//! For a bash call, an allow needs every simple command covered (by `commands` or `exact` of
//! any allow rules), every hazard's command covered by an `exact` line, every write through a
//! redirection covered by an allow rule's `paths`, and no part decided at run time anywhere —
//! not in a covered command (`commands` covers under `*` only words that depend on static text,
//! `exact` only static words), nor in a wrapper's own words (`timeout $T cargo test`: `$T` may
//! split into another command), nor in an assignment value; see [`commands`] for how words
//! match. A
//! read-only bash call that reads files it does not name (`grep -r`) does not take the
//! read-only fallback while a deny or ask rule protects paths.
//!
//! A path's forms are the resolved path, the path as written (made absolute, `..` folded) and
//! every symlink passed through, so a secret cannot be reached under another name, and an allow
//! cannot be borrowed through a link. An allow rule never covers a call the tool could not
//! analyse (a `bash` command before analysis exists), nor one with a path that did not resolve.
//!
//! Several files merge: their rules all vote, and for each `defaults` key the strictest value any
//! file sets wins (deny > ask > allow), else the built-in one (`read_only: allow`,
//! `writer: ask`, `unattended: deny`). Postures are applied later, by the gate's approve stage.

pub mod commands;
mod compile;
pub mod input;
mod lint;
mod load;
pub mod mcp;
mod narrow;
mod pattern;
pub mod rego;
mod ruling;
mod yaml;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use compile::CompiledPolicy;
pub use lint::ToolFacts;
pub use load::{Named, PolicySet, is_case_file, is_test_module, policy_files_of};
pub use narrow::{LeftOut, Trust, Trusted};
pub use ruling::{Facts, Fallback, PathFilter, RuleHit, Ruling};
pub use yaml::Unattended;

/// Checks a path glob as a YAML rule's `paths:` entry would be checked when it loads; the error
/// says what is wrong.
pub fn check_path_glob(glob: &str) -> Result<(), String> {
    yaml::PathGlob::try_from(glob.to_owned()).map(|_| ())
}

/// The embedded default policy (`policies/default.yaml`), used when no `--policy` is given.
pub const DEFAULT_POLICY: &str = include_str!("../../policies/default.yaml");
/// The name the embedded default is reported under.
pub const DEFAULT_POLICY_NAME: &str = "embedded:policies/default.yaml";
/// How a list of policies names the embedded default, to keep it beside one's own
/// (`--policy builtin:default`, `policies: [builtin:default, …]` in `reasonix.yaml`). A file
/// of that name in the current folder is `./builtin:default`.
pub const BUILTIN_DEFAULT: &str = "builtin:default";

/// What a rule or fallback decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask a person (or apply the unattended posture).
    Ask,
    /// Do not run it.
    Deny,
}

impl Decision {
    /// The name used in policies and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who is there to answer an `ask`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Posture {
    /// A person answers at the terminal.
    #[default]
    Interactive,
    /// Nobody answers: `ask` becomes `defaults.unattended`.
    Unattended,
    /// Only a call an allow rule explicitly covers runs; every other call is denied.
    Strict,
}

impl Posture {
    /// The name used on the command line and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Posture::Interactive => "interactive",
            Posture::Unattended => "unattended",
            Posture::Strict => "strict",
        }
    }
}

impl FromStr for Posture {
    type Err = String;
    fn from_str(s: &str) -> Result<Posture, String> {
        match s {
            "interactive" => Ok(Posture::Interactive),
            "unattended" => Ok(Posture::Unattended),
            "strict" => Ok(Posture::Strict),
            _ => Err(format!(
                "unknown posture {s:?}; use interactive, unattended or strict"
            )),
        }
    }
}

impl fmt::Display for Posture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The merged `defaults`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Defaults {
    /// Fallback for a read-only call no rule decided.
    pub read_only: Decision,
    /// Fallback for any other call no rule decided.
    pub writer: Decision,
    /// What `ask` becomes under the unattended posture.
    pub unattended: Unattended,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            read_only: Decision::Allow,
            writer: Decision::Ask,
            unattended: Unattended::Deny,
        }
    }
}

/// One problem in a policy, with its place.
#[derive(Debug)]
pub struct PolicyProblem {
    /// The file, as named on the command line (or the embedded name).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong and, where possible, what to write instead.
    pub message: String,
}

impl fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found while loading or compiling policies; any one fails the load.
#[derive(Debug)]
pub struct PolicyError(pub Vec<PolicyProblem>);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PolicyError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posture_names_parse_and_unknown_ones_are_refused() {
        assert_eq!("strict".parse::<Posture>().unwrap(), Posture::Strict);
        assert!(
            "lenient"
                .parse::<Posture>()
                .unwrap_err()
                .contains("unknown posture")
        );
    }
}
