//! Options as deny and ask rules see them: `rm -rf`, `rm -fr`, `rm -r -f`, `rm -R -f`,
//! `rm --recursive --force` and `rm --recur --forc` are one command. Each program's argv is
//! read by the one option matcher against its spec ([`programs::spec`](super::programs::spec)):
//! a cluster is its letters, a long option and its short twin are one canonical flag, an
//! abbreviation is the option it stands for (where the program accepts abbreviations), an
//! option's value is not a flag (`sed -ibak` is `-i`), options count wherever the program
//! accepts them, and `--` ends them. A program no spec knows is read generically: every word
//! that starts with `-` is a flag, a cluster its letters.

use std::collections::BTreeSet;

use super::programs::spec::Spec;
use super::programs::{self, spec};

/// A command normalized for generous matching.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Normalized {
    /// The name without its folder.
    pub name: String,
    /// The name as written.
    pub full_name: String,
    /// Every flag, in canonical spelling; clusters split into single flags, and kept whole too.
    pub flags: BTreeSet<String>,
    /// The other words, in order: subcommands, operands, and option values that are words of
    /// their own.
    pub operands: Vec<String>,
    /// The specs the argv was read with: the program's, then each subcommand's (empty for a
    /// program no spec knows).
    specs: Vec<&'static Spec>,
}

/// Whether a word is a cluster of single-letter options (`-rf`), as opposed to `-`, `--x`
/// or `-5`.
fn is_cluster(word: &str) -> bool {
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
        let args = argv.get(1..).unwrap_or(&[]);
        let known = programs::spec_for(&name);
        let parsed = spec::parse(known.unwrap_or(&spec::GENERIC), args);
        let mut flags = BTreeSet::new();
        let mut valued = BTreeSet::new();
        for f in &parsed.options {
            if f.negated {
                let written = &args[f.at];
                flags.insert(written.split('=').next().unwrap_or(written).to_owned());
            } else {
                flags.insert(f.name.to_string());
            }
            if f.value.is_some() && f.value_at.is_none() {
                valued.insert(f.at);
            }
        }
        // A cluster of flags is also kept whole (`-rf`), as rules may write it so.
        for (i, word) in args.iter().enumerate() {
            if is_cluster(word) && !valued.contains(&i) && parsed.options.iter().any(|f| f.at == i)
            {
                flags.insert(word.clone());
            }
        }
        let mut words: Vec<usize> = parsed
            .operands
            .iter()
            .chain(&parsed.subcommands)
            .copied()
            .chain(parsed.options.iter().filter_map(|f| f.value_at))
            .collect();
        words.sort_unstable();
        words.dedup();
        Normalized {
            name,
            full_name,
            flags,
            operands: words.into_iter().map(|i| args[i].clone()).collect(),
            specs: if known.is_some() {
                parsed.specs
            } else {
                Vec::new()
            },
        }
    }

    /// Whether an option as a rule writes it is present: read as the program would read it at
    /// the level of the command (or of any of its subcommands), every flag it stands for is
    /// among the command's. A cluster stands for its letters.
    pub fn has(&self, option: &str) -> bool {
        let bare = option.split('=').next().unwrap_or(option);
        if self.flags.contains(bare) {
            return true;
        }
        let word = [bare];
        let generic = [&spec::GENERIC];
        let chain: &[&'static Spec] = if self.specs.is_empty() {
            &generic
        } else {
            &self.specs
        };
        (1..=chain.len()).rev().any(|depth| {
            let parsed = spec::parse_in(&chain[..depth], &word);
            !parsed.options.is_empty()
                && parsed
                    .options
                    .iter()
                    .all(|f| !f.negated && self.flags.contains(f.name.as_ref()))
        })
    }
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
            "rm --recur --forc x",
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
    fn long_and_short_twins_and_abbreviations_are_one_flag() {
        for (line, option) in [
            ("cp --archive a b", "-a"),
            ("mkdir --parents x", "-p"),
            ("sed --in-place s/a/b/ f", "-i"),
            ("sed --in-pl=.bak s/a/b/ f", "-i"),
            ("sed -ibak s/a/b/ f", "--in-place"),
            ("grep -R x .", "--dereference-recursive"),
            ("curl --output f u", "-o"),
            ("curl --data x u", "-d"),
            ("kill -KILL 1", "-9"),
            ("kill -SIGKILL 1", "-9"),
            ("git push --force", "-f"),
            ("git push --forc origin", "-f"),
            ("git -C repo push -f", "--force"),
            ("git branch --delete x", "-d"),
            ("git commit --message x", "-m"),
            ("sort --outp=x f", "-o"),
        ] {
            assert!(n(line).has(option), "{line} has {option}: {:?}", n(line));
        }
        assert!(!n("git push --force-with-lease").has("--force"));
        assert!(!n("sed -n p f").has("-i"));
    }

    #[test]
    fn option_values_are_operands_not_flags() {
        let c = n("sed -ibak -e s/a/b/ f");
        assert!(c.has("-i") && !c.flags.contains("-b"));
        assert_eq!(c.operands, ["s/a/b/", "f"]);
        let c = n("git -C repo push origin");
        assert_eq!(c.operands, ["repo", "push", "origin"]);
    }

    #[test]
    fn a_double_dash_ends_options() {
        let c = n("rm -- -rf");
        assert!(!c.has("-r"));
        assert_eq!(c.operands, ["-rf"]);
    }

    #[test]
    fn a_program_no_spec_knows_keeps_every_flag_as_written() {
        let c = n("frob -xyz --deep=3 a");
        assert!(c.has("-x") && c.has("-xyz") && c.has("--deep") && c.has("-zy"));
        assert_eq!(c.operands, ["a"]);
    }
}
