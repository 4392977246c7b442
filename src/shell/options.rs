//! Options as deny and ask rules see them: `rm -rf`, `rm -fr`, `rm -r -f`, `rm -R -f` and
//! `rm --recursive --force` are one command. A cluster `-rf` is the set `-r`, `-f`; a long
//! option and its short twin are the same flag ([`ALIASES`]); options count wherever they stand
//! (GNU tools accept them after operands); `--` ends them.
//!
//! Also the option search the tables share ([`find_option`]): the hazard, reader and program
//! rows ask it whether one of their options is present.

use std::collections::BTreeSet;

/// `(command, spelling, canonical flag)`: options that mean the same. `*` applies to every
/// command.
pub const ALIASES: &[(&str, &str, &str)] = &[
    ("rm", "--recursive", "-r"),
    ("rm", "-R", "-r"),
    ("rm", "--force", "-f"),
    ("rm", "--dir", "-d"),
    ("rm", "--interactive", "-i"),
    ("rm", "--verbose", "-v"),
    ("cp", "--recursive", "-r"),
    ("cp", "-R", "-r"),
    ("cp", "--force", "-f"),
    ("cp", "--archive", "-a"),
    ("mv", "--force", "-f"),
    ("ln", "--symbolic", "-s"),
    ("ln", "--force", "-f"),
    ("mkdir", "--parents", "-p"),
    ("chmod", "--recursive", "-R"),
    ("chown", "--recursive", "-R"),
    ("chgrp", "--recursive", "-R"),
    ("git", "--force", "-f"),
    ("git", "--delete", "-d"),
    ("git", "--all", "-a"),
    ("git", "--message", "-m"),
    ("sed", "--in-place", "-i"),
    ("grep", "--recursive", "-r"),
    ("grep", "-R", "-r"),
    ("curl", "--output", "-o"),
    ("curl", "--data", "-d"),
    ("kill", "-KILL", "-9"),
    ("kill", "-SIGKILL", "-9"),
];

/// A command normalized for generous matching.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Normalized {
    /// The name without its folder.
    pub name: String,
    /// The name as written.
    pub full_name: String,
    /// Every flag, in canonical spelling; clusters split into single flags, and kept whole too.
    pub flags: BTreeSet<String>,
    /// The other words, in order.
    pub operands: Vec<String>,
}

/// The canonical spelling of one option of `command`; `--name=value` is `--name`.
pub fn canonical(command: &str, option: &str) -> String {
    let bare = option.split('=').next().unwrap_or(option);
    ALIASES
        .iter()
        .find(|(c, spelling, _)| (*c == command || *c == "*") && *spelling == bare)
        .map(|(_, _, to)| (*to).to_owned())
        .unwrap_or_else(|| bare.to_owned())
}

/// The single flags a `-abc` cluster stands for.
pub fn cluster(command: &str, option: &str) -> Vec<String> {
    option[1..]
        .chars()
        .map(|c| canonical(command, &format!("-{c}")))
        .collect()
}

/// Whether a word is a cluster of single-letter options (`-rf`), as opposed to `-`, `--x`
/// or `-5`.
pub fn is_cluster(word: &str) -> bool {
    word.len() > 2 && word.starts_with('-') && !word.starts_with("--")
}

impl Normalized {
    /// Normalizes an argv.
    pub fn of(argv: &[String]) -> Normalized {
        let full_name = argv.first().cloned().unwrap_or_default();
        let name = full_name
            .rsplit('/')
            .next()
            .unwrap_or(&full_name)
            .to_owned();
        let mut flags = BTreeSet::new();
        let mut operands = Vec::new();
        let mut done = false;
        for word in argv.iter().skip(1) {
            if done || !word.starts_with('-') || word == "-" {
                operands.push(word.clone());
            } else if word == "--" {
                done = true;
            } else {
                flags.insert(canonical(&name, word));
                if is_cluster(word) {
                    flags.extend(cluster(&name, word));
                }
            }
        }
        Normalized {
            name,
            full_name,
            flags,
            operands,
        }
    }

    /// Whether an option as a rule writes it is present: in canonical spelling, or, for a
    /// cluster, every one of its letters.
    pub fn has(&self, option: &str) -> bool {
        self.flags.contains(&canonical(&self.name, option))
            || (is_cluster(option)
                && cluster(&self.name, option)
                    .iter()
                    .all(|f| self.flags.contains(f)))
    }
}

/// The first of `options` present in `args`. A single-letter option also matches inside a
/// cluster (`-pi` holds `-i`); a long one also as `--name=value`. With `leading`, the search
/// stops at the first operand.
pub fn find_option(args: &[String], options: &[&str], leading: bool) -> Option<String> {
    for arg in args {
        if arg == "--" {
            return None;
        }
        let is_option = arg.starts_with('-') && arg != "-";
        if !is_option {
            if leading {
                return None;
            }
            continue;
        }
        for o in options {
            let long = o.starts_with("--") || o.len() > 2;
            let hit = if long {
                arg == o || arg.starts_with(&format!("{o}="))
            } else {
                arg == o || (!arg.starts_with("--") && arg.len() > 2 && arg[1..].contains(&o[1..]))
            };
            if hit {
                return Some((*o).to_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(line: &str) -> Normalized {
        let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        Normalized::of(&argv)
    }

    #[test]
    fn every_spelling_of_rm_rf_has_both_flags() {
        for line in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm -R -f x",
            "rm --recursive --force x",
            "/bin/rm x -rf",
            "rm -rfv x",
        ] {
            let c = n(line);
            assert_eq!(c.name, "rm", "{line}");
            assert!(
                c.has("-rf") && c.has("-fr") && c.has("-r") && c.has("--force"),
                "{line}: {c:?}"
            );
            assert_eq!(c.operands, ["x"], "{line}");
        }
        assert!(!n("rm -r x").has("-rf"));
    }

    #[test]
    fn every_alias_row_maps_to_its_canonical_flag() {
        for (command, spelling, to) in ALIASES {
            let c = n(&format!("{command} {spelling} x"));
            assert!(c.flags.contains(*to), "{command} {spelling}: {c:?}");
            assert!(c.has(to) && c.has(spelling));
        }
    }

    #[test]
    fn a_double_dash_ends_options() {
        let c = n("rm -- -rf");
        assert!(!c.has("-r"));
        assert_eq!(c.operands, ["-rf"]);
    }
}
