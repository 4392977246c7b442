//! Command rules: `commands:` word patterns and `exact:` command lines, and how each decision
//! matches them against the simple commands of a bash call.
//!
//! A pattern is a list of words (a string split on whitespace, or a YAML list when a word holds
//! spaces); each word is a glob on one argv word, and a final `*` matches zero or more further
//! words. Globs here do not treat `/` specially: argv words are not paths.
//!
//! - **deny / ask see generously.** A pattern matches any simple command anywhere in the script
//!   (inside substitutions, wrappers, `bash -c`…), by its full name or its basename (`/bin/rm`,
//!   `\rm` and `'r''m'` are `rm` after quote removal), when the command has every option of the
//!   pattern in any spelling or order (`rm -rf` ≡ `rm -fr` ≡ `rm -r -f` ≡ `rm --recursive
//!   --force`) and the pattern's other words in order, possibly with others around them.
//! - **allow is strict.** A pattern covers a command only word by word in order: the name as
//!   written (not by basename: `/tmp/x/git` is not `git`), each static word matching its glob, a
//!   word that is not static only under a catch-all `*` and only when it depends on static text
//!   (a glob, a tilde, a variable the script binds to static words) — never a variable from the
//!   environment or a command substitution.
//! - **exact** equals the whole argv of one command, every word static. It is the only way a
//!   command with a hazard is allowed.

use std::fmt;
use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::Deserialize;

use crate::shell::{Command, Normalized};

/// A command pattern or exact line as written in YAML: a string, or a list of words.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Written {
    /// `"git diff *"`
    Line(String),
    /// `["grep", "-c", "rm -rf"]`
    Words(Vec<String>),
}

impl Written {
    pub(crate) fn words(&self) -> Vec<String> {
        match self {
            Written::Line(line) => line.split_whitespace().map(str::to_owned).collect(),
            Written::Words(words) => words.clone(),
        }
    }
}

/// A checked `commands:` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "Written")]
pub(crate) struct PatternSpec(pub Vec<String>);

impl TryFrom<Written> for PatternSpec {
    type Error = String;
    fn try_from(w: Written) -> Result<PatternSpec, String> {
        let words = w.words();
        if words.is_empty() {
            return Err("a command pattern needs at least a command name".into());
        }
        for word in &words {
            // Parsing is the whole check: compiling a parsed glob's matcher cannot fail.
            glob_of(word).map_err(|e| format!("bad glob {word:?} in command pattern: {e}"))?;
        }
        Ok(PatternSpec(words))
    }
}

/// A checked `exact:` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "Written")]
pub(crate) struct ExactSpec(pub Vec<String>);

impl TryFrom<Written> for ExactSpec {
    type Error = String;
    fn try_from(w: Written) -> Result<ExactSpec, String> {
        let words = w.words();
        if words.is_empty() {
            return Err("an exact command needs at least a command name".into());
        }
        Ok(ExactSpec(words))
    }
}

fn glob_of(word: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(word)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
}

/// The characters with a meaning in a glob (with `backslash_escape`). A word without any is
/// matched by its own text only.
const GLOB_SYNTAX: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// How one pattern word matches an argv word.
#[derive(Clone, Debug)]
enum WordMatch {
    /// A word without glob syntax: equal text, which is all its glob would match; no regex is
    /// built for it (a policy's start-up cost, issue 12).
    Text,
    /// A glob, checked when the policy loads and compiled the first time a word reaches it
    /// (a deny pattern's later words only for a command its name matches).
    Glob(Glob, OnceLock<GlobMatcher>),
}

/// One word of a compiled pattern.
#[derive(Clone, Debug)]
struct PatternWord {
    raw: String,
    matcher: WordMatch,
}

impl PatternWord {
    fn new(raw: &str) -> Option<PatternWord> {
        let matcher = if raw.contains(GLOB_SYNTAX) {
            WordMatch::Glob(glob_of(raw).ok()?, OnceLock::new())
        } else {
            WordMatch::Text
        };
        Some(PatternWord {
            raw: raw.to_owned(),
            matcher,
        })
    }

    fn is_match(&self, word: &str) -> bool {
        match &self.matcher {
            WordMatch::Text => self.raw == word,
            WordMatch::Glob(glob, compiled) => compiled
                .get_or_init(|| glob.compile_matcher())
                .is_match(word),
        }
    }

    fn is_option(&self) -> bool {
        self.raw.starts_with('-') && self.raw != "-"
    }
}

/// A compiled `commands:` pattern.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    words: Vec<PatternWord>,
    tail: bool,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.words.iter().map(|w| w.raw.as_str()).collect();
        write!(
            f,
            "{}{}",
            words.join(" "),
            if self.tail { " *" } else { "" }
        )
    }
}

impl Pattern {
    pub(crate) fn compile(spec: &PatternSpec) -> Option<Pattern> {
        let mut raw = spec.0.clone();
        let tail = raw.len() > 1 && raw.last().is_some_and(|w| w == "*");
        if tail {
            raw.pop();
        }
        let words = raw
            .iter()
            .map(|w| PatternWord::new(w))
            .collect::<Option<Vec<_>>>()?;
        Some(Pattern { words, tail })
    }

    /// The strict test of an allow rule (see the module doc).
    pub(crate) fn covers(&self, command: &Command) -> bool {
        let words = &command.words;
        if words.len() < self.words.len() || (!self.tail && words.len() != self.words.len()) {
            return false;
        }
        for (pattern, word) in self.words.iter().zip(words) {
            if pattern.raw == "*" {
                if !word.depends_on_static() {
                    return false;
                }
            } else if !word.is_static() || !pattern.is_match(&word.text) {
                return false;
            }
        }
        words[self.words.len()..]
            .iter()
            .all(|w| w.depends_on_static())
    }

    /// The generous test of a deny or ask rule (see the module doc).
    pub(crate) fn sees(&self, command: &Command, normalized: &Normalized) -> bool {
        let Some((name, rest)) = self.words.split_first() else {
            return false;
        };
        if !command.words.first().is_some_and(|w| w.is_static()) {
            return false;
        }
        if !(name.is_match(&normalized.name) || name.is_match(&normalized.full_name)) {
            return false;
        }
        if !rest
            .iter()
            .filter(|w| w.is_option())
            .all(|w| normalized.has(&w.raw))
        {
            return false;
        }
        let mut operands = normalized.operands.iter();
        rest.iter()
            .filter(|w| !w.is_option())
            .all(|w| operands.any(|o| w.is_match(o)))
    }
}

/// Whether an exact line is exactly this command.
pub(crate) fn exact(line: &ExactSpec, command: &Command) -> bool {
    command.words.len() == line.0.len()
        && command
            .words
            .iter()
            .zip(&line.0)
            .all(|(w, e)| w.is_static() && w.text == *e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::Analysis;

    fn pattern(line: &str) -> Pattern {
        Pattern::compile(&PatternSpec::try_from(Written::Line(line.into())).unwrap()).unwrap()
    }

    fn first(script: &str) -> Command {
        Analysis::of(script).commands.remove(0)
    }

    fn covers(p: &str, script: &str) -> bool {
        pattern(p).covers(&first(script))
    }

    fn sees(p: &str, script: &str) -> bool {
        let c = first(script);
        pattern(p).sees(&c, &Normalized::of(&c.argv))
    }

    #[test]
    fn a_word_without_glob_syntax_matches_what_its_glob_matches() {
        let words = [
            "rm",
            "-rf",
            "/",
            "~",
            "~/",
            ".",
            "of=/dev/sda",
            "777",
            "git",
            "a,b",
            "!x",
        ];
        let candidates = [
            "rm",
            "RM",
            "rm ",
            "-rf",
            "-fr",
            "/",
            "//",
            "~",
            "~/",
            ".",
            "..",
            "x",
            "",
            "of=/dev/sda",
            "777",
            "7777",
            "git",
            "a,b",
            "!x",
            "/bin/rm",
        ];
        for word in words {
            let ours = PatternWord::new(word).unwrap();
            assert!(matches!(ours.matcher, WordMatch::Text), "{word}");
            let glob = glob_of(word).unwrap().compile_matcher();
            for candidate in candidates {
                assert_eq!(
                    ours.is_match(candidate),
                    glob.is_match(candidate),
                    "{word} on {candidate:?}"
                );
            }
        }
        for word in ["*", "mkfs.*", "/\\*", "[ab]", "{a,b}", "a?c"] {
            let ours = PatternWord::new(word).unwrap();
            assert!(matches!(ours.matcher, WordMatch::Glob(..)), "{word}");
        }
    }

    #[test]
    fn allow_matches_word_by_word() {
        assert!(covers("git status", "git status"));
        assert!(!covers("git status", "git status --short"));
        assert!(covers("git diff *", "git diff"));
        assert!(covers("git diff *", "git diff --stat HEAD~1"));
        assert!(!covers("git diff *", "git difftool"));
        assert!(covers("npm run test:*", "npm run test:unit"));
        assert!(!covers("npm run test:*", "npm run build"));
        assert!(covers("wc -l *", "wc -l src/*.rs"));
    }

    #[test]
    fn allow_is_not_fooled_by_names_or_dynamic_words() {
        assert!(!covers("git status", "/tmp/evil/git status"));
        assert!(!covers("cat *", "cat $HOME/.ssh/id_rsa"));
        assert!(!covers("echo *", "echo $(id)"));
        assert!(!covers("git *", "git $SUB"));
        assert!(covers("cat *", "cat ~/notes.txt"));
    }

    #[test]
    fn deny_sees_every_spelling() {
        for script in [
            "rm -rf /",
            "rm -fr /",
            "rm -r -f /",
            "rm --recursive --force /",
            "/bin/rm -rf /",
            "\\rm -rf /",
            "'r''m' -rf /",
            "rm / -rf",
            "rm -rfv /",
        ] {
            assert!(sees("rm -rf /", script), "{script}");
        }
        assert!(!sees("rm -rf /", "rm -r /"));
        assert!(!sees("rm -rf /", "rm -rf /tmp/x"));
        assert!(sees("git push --force *", "git push origin main -f"));
        assert!(sees("git push", "git -C repo push origin"));
    }

    #[test]
    fn exact_is_the_whole_static_command() {
        let line = ExactSpec(vec![
            "git".into(),
            "-c".into(),
            "core.pager=cat".into(),
            "log".into(),
        ]);
        assert!(exact(&line, &first("git -c core.pager=cat log")));
        assert!(!exact(&line, &first("git -c core.pager=cat log -p")));
        assert!(!exact(&line, &first("git -c $P log")));
    }
}
