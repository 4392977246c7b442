//! Option specs and the one matcher that reads an argv against them.
//!
//! Every foreign program Reasonix judges by its options has one [`Spec`]: which options exist,
//! which take a value and how ([`Takes`]), what an option makes the program do ([`Role`],
//! [`Risk`]), and how its parser spells them ([`Syntax`]): whether long options abbreviate to any
//! unambiguous prefix (`getopt_long`, git's parse-options), whether options may follow operands
//! (GNU permutation) or end at the first one (interpreters, wrappers), whether short options
//! cluster (`-rf`, `-fFILE`), and tar's old-style letter clusters (`tar cIf PROG out.tar`).
//!
//! [`parse`] is the only place an argv is split into options and operands. The hazard table,
//! the readers, the wrappers and the policy's option normalization all read its [`Parsed`]
//! output, so a hazard matches whatever spelling the program itself accepts: `sort --outp=F`,
//! `sed --in-pl=.bak`, `tar cIf PROG`, `make --ev=…`, `git grep --open-files-in-p=…`.
//!
//! The rules the matcher implements, in the order it applies them to each word:
//!
//! 1. After `--`, or once options have ended, every word is an operand. Options end at the
//!    first operand unless the syntax permutes, and after an option whose role ends them
//!    ([`Role::Ends`], [`Role::Command`]).
//! 2. A word that is not static, `-`, or does not start with `-` (or `+` where the syntax has
//!    plus-options) is an operand. The first operand of a spec with subcommands names one
//!    (`git status`, `uv run`); parsing goes on with that subcommand's spec.
//! 3. `--name` or `--name=value`: an exact name wins; otherwise, where the syntax abbreviates,
//!    every long option the name is a prefix of. When several match, the program would refuse
//!    the word as ambiguous; the matcher reports them all, so a hazard among them is never
//!    missed. A required value is the `=` part or the next word; an optional one only the `=`
//!    part. Where the syntax negates, `--no-name` is the negation of `--name` and does nothing.
//! 4. `-abc`: each letter is an option until one takes a value, which is the rest of the word
//!    (`-fFILE`, `-S1`) or, for a required value, the next word. Without clusters the whole
//!    word is one option (`-name`, `-KILL`).
//! 5. An option the spec does not know is reported under its own spelling, as a flag. Where
//!    options end at the first operand, an operand right after an unknown long option may be
//!    that option's value, so it does not end them (`node --stack-size 100 -e CODE`).

use std::borrow::Cow;

use crate::word::Word;

/// How an option takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// A flag.
    Nothing,
    /// A required value: `-oFILE`, `-o FILE`, `--output=FILE`, `--output FILE`.
    Value,
    /// An optional value, only attached: `-i.bak`, `--in-place=.bak`. After `-i`, the next word
    /// is not its value.
    Optional,
    /// A required value, but a long option takes it only after `=` (`git log --format=X`;
    /// `--format X` leaves `X` an operand). A short option takes it like [`Takes::Value`].
    Equals,
    /// Two values, the next two words (`nix-shell --arg NAME EXPR`).
    Pair,
    /// An optional attached number: the digits that follow in the cluster, the rest of which
    /// goes on (`perl -l0ne`, `perl -le` is `-l` then `-e`).
    Digits,
}

/// A hazard an option raises: the hazard id reported, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Risk {
    /// The hazard id (`inline_code`, `output_file`, `tar_program`…).
    pub id: &'static str,
    /// Why the option is a hazard.
    pub why: &'static str,
}

/// What an option makes the program do, beyond its risk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Nothing the analysis needs to know.
    Plain,
    /// Writes a file or changes the system (`date -s`, `git branch -d`): not read-only.
    Writes,
    /// Reads folders it does not name (`grep -r`); with a word, only when the option's value
    /// is a prefix of it (`grep --directories=rec`).
    Recursive(Option<&'static str>),
    /// Its value is the folder the program works in and reads its configuration from
    /// (`git -C`, `make -C`, `npm --prefix`): relative paths move there.
    Folder,
    /// Its value names a file the program obeys as configuration, makefile or manifest
    /// (`make -f`, `cargo --manifest-path`, `git --git-dir`).
    Config,
    /// Options end after it (and its value): `python -c CODE ARG…`, `python -m MOD ARG…`.
    Ends,
    /// The words after it are a command the program runs (`nix develop -c CMD ARG…`).
    Command,
    /// Its value is a shell script the program runs (`env -S`, `nix-shell --run`).
    Script,
    /// Its value is program text in the program's own language (`awk -e`, `sed -e`).
    Program,
    /// Its value is a file the program reads its program from (`awk -f`, `sed -f`).
    ProgramFile,
    /// A wrapper runs nothing (`command -v`, `sudo -l`); for an option with an optional
    /// value, only when the value is absent (`sudo -h` is help, `sudo -hHOST` is not).
    Quiet,
    /// `watch -x`: the operands run as an argv, not through `sh -c`.
    Exec,
}

/// One option of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opt {
    /// Every spelling: `-o`, `--output`, `+o`, `-KILL`. The first is the canonical name.
    pub names: &'static [&'static str],
    /// How it takes its value.
    pub takes: Takes,
    /// What it makes the program do.
    pub role: Role,
    /// The hazard it raises, if any.
    pub risk: Option<&'static Risk>,
    /// The risk holds only when a value is given (`git --exec-path` prints, `--exec-path=D`
    /// runs subcommands from `D`).
    pub risk_needs_value: bool,
}

impl Opt {
    const fn new(names: &'static [&'static str], takes: Takes) -> Opt {
        Opt {
            names,
            takes,
            role: Role::Plain,
            risk: None,
            risk_needs_value: false,
        }
    }

    /// A flag.
    pub const fn flag(names: &'static [&'static str]) -> Opt {
        Opt::new(names, Takes::Nothing)
    }

    /// An option with a required value.
    pub const fn value(names: &'static [&'static str]) -> Opt {
        Opt::new(names, Takes::Value)
    }

    /// An option with an optional, attached value.
    pub const fn optional(names: &'static [&'static str]) -> Opt {
        Opt::new(names, Takes::Optional)
    }

    /// An option whose long form takes its value only after `=`.
    pub const fn equals(names: &'static [&'static str]) -> Opt {
        Opt::new(names, Takes::Equals)
    }

    /// An option with an optional attached number (`perl -l0`).
    pub const fn takes_digits(names: &'static [&'static str]) -> Opt {
        Opt::new(names, Takes::Digits)
    }

    /// An option with two values.
    pub const fn pair(names: &'static [&'static str]) -> Opt {
        Opt::new(names, Takes::Pair)
    }

    /// The same option with a role.
    pub const fn role(mut self, role: Role) -> Opt {
        self.role = role;
        self
    }

    /// The same option raising a hazard.
    pub const fn risk(mut self, risk: &'static Risk) -> Opt {
        self.risk = Some(risk);
        self
    }

    /// The same option raising a hazard only with a value.
    pub const fn risk_with_value(mut self, risk: &'static Risk) -> Opt {
        self.risk = Some(risk);
        self.risk_needs_value = true;
        self
    }

    /// The canonical name.
    pub fn canonical(&self) -> &'static str {
        self.names[0]
    }
}

/// How a program's option parser spells options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Syntax {
    /// A long option may be written as any unambiguous prefix (`--outp` for `--output`).
    pub abbreviate: bool,
    /// Options may follow operands (GNU permutation); otherwise the first operand ends them.
    pub permute: bool,
    /// Single-letter options cluster (`-rf`) and take attached values (`-fFILE`).
    pub clusters: bool,
    /// Options may also start with `+` (`bash +o posix`, `cargo +nightly`).
    pub plus: bool,
    /// tar: a first word without a dash is a cluster of option letters whose values are the
    /// following words, in order (`tar cIf PROG out.tar`).
    pub old_letters: bool,
    /// `--no-NAME` negates `--NAME` (git's parse-options, npm).
    pub negate: bool,
}

impl Syntax {
    /// GNU `getopt_long`: abbreviations, permutation, clusters.
    pub const GNU: Syntax = Syntax {
        abbreviate: true,
        permute: true,
        clusters: true,
        plus: false,
        old_letters: false,
        negate: false,
    };
    /// GNU `getopt_long` with `+` (POSIXLY_CORRECT): options end at the first operand. What
    /// wrappers use, so that the inner command's options stay its own.
    pub const GNU_STOP: Syntax = Syntax {
        permute: false,
        ..Syntax::GNU
    };
    /// Exact long names, options anywhere (clap, most hand-written parsers).
    pub const EXACT: Syntax = Syntax {
        abbreviate: false,
        ..Syntax::GNU
    };
    /// Exact long names, options end at the first operand (interpreters: what follows the
    /// script belongs to the script).
    pub const EXACT_STOP: Syntax = Syntax {
        abbreviate: false,
        permute: false,
        ..Syntax::GNU
    };
    /// git's parse-options: abbreviations, permutation, clusters, `--no-` negation.
    pub const PARSE_OPTIONS: Syntax = Syntax {
        negate: true,
        ..Syntax::GNU
    };
}

/// The option spec of one program (or of one of its subcommands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The program's basenames, or the subcommand's names.
    pub names: &'static [&'static str],
    /// How its parser spells options.
    pub syntax: Syntax,
    /// Its options.
    pub options: &'static [Opt],
    /// Its subcommands, named by the first operand.
    pub subcommands: &'static [Spec],
    /// For a subcommand: whether the options of the program (and of the subcommands before
    /// it) are still accepted after it (`npm run x --prefix d`, `cargo build --config …`).
    pub inherit: bool,
    /// The hazard using it raises (`git difftool`, `deno eval`).
    pub risk: Option<&'static Risk>,
}

impl Spec {
    /// A spec without subcommands.
    pub const fn new(
        names: &'static [&'static str],
        syntax: Syntax,
        options: &'static [Opt],
    ) -> Spec {
        Spec {
            names,
            syntax,
            options,
            subcommands: &[],
            inherit: false,
            risk: None,
        }
    }

    /// The same spec, raising a hazard whenever it is used.
    pub const fn risky(mut self, risk: &'static Risk) -> Spec {
        self.risk = Some(risk);
        self
    }

    /// The same spec with subcommands.
    pub const fn subcommands(mut self, subcommands: &'static [Spec]) -> Spec {
        self.subcommands = subcommands;
        self
    }

    /// The same spec, accepting its parents' options too.
    pub const fn inheriting(mut self) -> Spec {
        self.inherit = true;
        self
    }

    /// The subcommand named `name`.
    pub fn subcommand(&self, name: &str) -> Option<&'static Spec> {
        self.subcommands.iter().find(|s| s.names.contains(&name))
    }
}

/// The spec of a program no table knows: options anywhere, clusters split, names exact.
pub const GENERIC: Spec = Spec::new(&[], Syntax::EXACT, &[]);

/// A word the matcher reads: its text, and whether the text is what runs.
pub trait Arg {
    /// The text.
    fn text(&self) -> &str;
    /// False when the word is decided at run time: it is never read as an option.
    fn fixed(&self) -> bool {
        true
    }
}

impl Arg for String {
    fn text(&self) -> &str {
        self
    }
}

impl Arg for &str {
    fn text(&self) -> &str {
        self
    }
}

impl Arg for Word {
    fn text(&self) -> &str {
        &self.text
    }
    fn fixed(&self) -> bool {
        self.is_static()
    }
}

/// One option found in an argv.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found<'a> {
    /// Its canonical name; for an option the spec does not know, its own spelling (`-x`,
    /// `--foo`).
    pub name: Cow<'a, str>,
    /// The spec's option (`None` when unknown).
    pub opt: Option<&'static Opt>,
    /// The index of the word it is written in.
    pub at: usize,
    /// Its value, attached or not.
    pub value: Option<&'a str>,
    /// The index of the word holding its value, when that is a word of its own.
    pub value_at: Option<usize>,
    /// Which spec of [`Parsed::specs`] it belongs to: 0 for the program's own.
    pub level: usize,
    /// `--no-NAME`: the option turned off.
    pub negated: bool,
    /// One of several options an ambiguous abbreviation may stand for.
    pub ambiguous: bool,
}

impl Found<'_> {
    /// The hazard it raises, as written (a negation raises none).
    pub fn risk(&self) -> Option<&'static Risk> {
        let opt = self.opt?;
        if self.negated || (opt.risk_needs_value && self.value.is_none()) {
            return None;
        }
        opt.risk
    }

    /// Its role, as written (a negation has none).
    pub fn role(&self) -> Role {
        match self.opt {
            Some(o) if !self.negated => o.role,
            _ => Role::Plain,
        }
    }
}

/// An argv read against a spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed<'a> {
    /// The program's spec, then each subcommand's, in order.
    pub specs: Vec<&'static Spec>,
    /// The index of each subcommand's word (one fewer than `specs`).
    pub subcommands: Vec<usize>,
    /// The options, in order.
    pub options: Vec<Found<'a>>,
    /// The indices of the operands, in order (subcommand words and option values excluded).
    pub operands: Vec<usize>,
}

impl<'a> Parsed<'a> {
    /// The first option with this canonical name, not negated.
    pub fn get(&self, name: &str) -> Option<&Found<'a>> {
        self.options.iter().find(|f| f.name == name && !f.negated)
    }

    /// Whether an option with this canonical name is present (not negated).
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Whether any of these options is present.
    pub fn has_any(&self, names: &[&str]) -> bool {
        names.iter().any(|n| self.has(n))
    }

    /// The options with a role.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = &Found<'a>> {
        self.options.iter().filter(move |f| f.role() == role)
    }

    /// The options that raise a hazard.
    pub fn risks(&self) -> impl Iterator<Item = (&Found<'a>, &'static Risk)> {
        self.options.iter().filter_map(|f| f.risk().map(|r| (f, r)))
    }

    /// The subcommands that raise a hazard, with the index of their word.
    pub fn risky_subcommands(&self) -> impl Iterator<Item = (usize, &'static Risk)> + '_ {
        self.specs
            .iter()
            .skip(1)
            .zip(&self.subcommands)
            .filter_map(|(s, at)| s.risk.map(|r| (*at, r)))
    }

    /// The canonical name of the subcommand at `depth` (0 for the first), if any.
    pub fn subcommand(&self, depth: usize) -> Option<&'static str> {
        self.specs.get(depth + 1).map(|s| s.names[0])
    }

    /// The index after the last subcommand word (0 without one): where that subcommand's own
    /// words start.
    pub fn after_subcommands(&self) -> usize {
        self.subcommands.last().map_or(0, |i| i + 1)
    }
}

/// What a name stands for in the specs that are visible.
enum Lookup {
    None,
    One(&'static Opt, usize),
    Many(Vec<(&'static Opt, usize)>),
}

/// The specs whose options are visible at the current level, innermost first, with their
/// levels: the current one, and its parents while each inherits theirs.
fn visible<'s>(specs: &'s [&'static Spec]) -> impl Iterator<Item = (usize, &'static Spec)> + 's {
    let mut level = specs.len();
    let mut open = true;
    std::iter::from_fn(move || {
        if !open || level == 0 {
            return None;
        }
        level -= 1;
        let s = specs[level];
        open = s.inherit;
        Some((level, s))
    })
}

fn exact(specs: &[&'static Spec], name: &str) -> Option<(&'static Opt, usize)> {
    visible(specs).find_map(|(level, s)| {
        s.options
            .iter()
            .find(|o| o.names.contains(&name))
            .map(|o| (o, level))
    })
}

fn long(specs: &[&'static Spec], name: &str, abbreviate: bool) -> Lookup {
    if let Some((o, level)) = exact(specs, name) {
        return Lookup::One(o, level);
    }
    if !abbreviate || name.len() < 3 {
        return Lookup::None;
    }
    let mut hits: Vec<(&'static Opt, usize)> = Vec::new();
    for (level, s) in visible(specs) {
        for o in s.options {
            if o.names
                .iter()
                .any(|n| n.starts_with("--") && n.starts_with(name))
                && !hits.iter().any(|(h, _)| std::ptr::eq(*h, o))
            {
                hits.push((o, level));
            }
        }
    }
    match hits.len() {
        0 => Lookup::None,
        1 => Lookup::One(hits[0].0, hits[0].1),
        _ => Lookup::Many(hits),
    }
}

/// The short option `{prefix}{letter}`.
fn short(specs: &[&'static Spec], prefix: char, letter: char) -> Option<(&'static Opt, usize)> {
    let mut buf = [0u8; 8];
    let len = prefix.encode_utf8(&mut buf).len();
    let len = len + letter.encode_utf8(&mut buf[len..]).len();
    let name = std::str::from_utf8(&buf[..len]).ok()?;
    exact(specs, name)
}

/// Reads `args` (the words after the program's name) against `spec`.
pub fn parse<'a, A: Arg>(spec: &'static Spec, args: &'a [A]) -> Parsed<'a> {
    parse_in(&[spec], args)
}

/// Reads `args` as if they followed the subcommands of `specs` (the program's spec, then each
/// subcommand's): how a rule's option is read in the place of a command it is matched to.
pub fn parse_in<'a, A: Arg>(specs: &[&'static Spec], args: &'a [A]) -> Parsed<'a> {
    let mut m = Matcher {
        args,
        out: Parsed {
            specs: specs.to_vec(),
            ..Parsed::default()
        },
        ended: false,
        operands_here: 0,
        unknown_long: None,
    };
    let mut i = 0;
    while i < args.len() {
        i = m.word(i);
    }
    m.out
}

/// The matcher's state over one argv.
struct Matcher<'a, A: Arg> {
    args: &'a [A],
    out: Parsed<'a>,
    /// Options have ended: the rest are operands.
    ended: bool,
    /// Operands seen since the current spec began (a subcommand is only the first).
    operands_here: usize,
    /// The index of the last word that was a long option the spec does not know, written
    /// without `=`: it may take the next word as its value.
    unknown_long: Option<usize>,
}

/// Where an option's value is.
#[derive(Clone, Copy)]
struct Value<'a> {
    text: Option<&'a str>,
    at: Option<usize>,
}

const NO_VALUE: Value<'static> = Value {
    text: None,
    at: None,
};

impl<'a, A: Arg> Matcher<'a, A> {
    fn spec(&self) -> &'static Spec {
        self.out.specs[self.out.specs.len() - 1]
    }

    fn text(&self, i: usize) -> &'a str {
        self.args[i].text()
    }

    /// The next word as a value, if there is one.
    fn next_word(&self, i: usize) -> Value<'a> {
        match self.args.get(i) {
            Some(a) => Value {
                text: Some(a.text()),
                at: Some(i),
            },
            None => NO_VALUE,
        }
    }

    /// Reads the word at `i`; returns the index of the next word to read.
    fn word(&mut self, i: usize) -> usize {
        if self.ended {
            self.out.operands.push(i);
            return i + 1;
        }
        let syntax = self.spec().syntax;
        let w = self.text(i);
        let plus = syntax.plus && w.starts_with('+');
        if !self.args[i].fixed() || w.len() < 2 || !(w.starts_with('-') || plus) {
            return self.operand(i);
        }
        if w == "--" {
            self.ended = true;
            return i + 1;
        }
        if let Some(body) = w.strip_prefix("--") {
            return self.long_option(i, body);
        }
        if !syntax.clusters {
            // A whole-word option, its value after `=` (`-exec=prog`) or in the next word.
            let (name, eq) = match w.find('=') {
                Some(at) => (&w[..at], Some(&w[at + 1..])),
                None => (w, None),
            };
            let hit = exact(&self.out.specs, name);
            let value = match hit {
                _ if eq.is_some() => Value { text: eq, at: None },
                Some((o, _)) if matches!(o.takes, Takes::Value | Takes::Equals | Takes::Pair) => {
                    self.next_word(i + 1)
                }
                _ => NO_VALUE,
            };
            let next = self.skip(i + 1, hit, value);
            self.push(i, Cow::Borrowed(name), hit, value, false, false);
            return next;
        }
        let prefix = if plus { '+' } else { '-' };
        self.cluster(i, prefix, &w[1..])
    }

    /// The index after an option at `i - 1`'s value words.
    fn skip(&self, next: usize, hit: Option<(&'static Opt, usize)>, value: Value) -> usize {
        let mut next = next;
        if value.at.is_some() {
            next += 1;
        }
        if hit.is_some_and(|(o, _)| o.takes == Takes::Pair) && value.at.is_some() {
            next += 1;
        }
        next.min(self.args.len())
    }

    /// An operand: maybe a subcommand, maybe tar's old-style letters; it ends options unless
    /// the syntax permutes.
    fn operand(&mut self, i: usize) -> usize {
        let spec = self.spec();
        let w = self.text(i);
        let fixed = self.args[i].fixed();
        if fixed
            && self.operands_here == 0
            && let Some(sub) = spec.subcommand(w)
        {
            self.out.specs.push(sub);
            self.out.subcommands.push(i);
            return i + 1;
        }
        if fixed && i == 0 && spec.syntax.old_letters && w.chars().all(|c| c.is_ascii_alphabetic())
        {
            // `tar cIf PROG out.tar`: letters, with their values in the words that follow.
            let mut next = i + 1;
            for c in w.chars() {
                let hit = short(&self.out.specs, '-', c);
                let value = match hit {
                    Some((o, _))
                        if matches!(o.takes, Takes::Value | Takes::Equals | Takes::Pair) =>
                    {
                        self.next_word(next)
                    }
                    _ => NO_VALUE,
                };
                next = self.skip(next, hit, value);
                let spelled = match hit {
                    Some(_) => Cow::Borrowed(""),
                    None => Cow::Owned(format!("-{c}")),
                };
                self.push(i, spelled, hit, value, false, false);
            }
            return next;
        }
        self.out.operands.push(i);
        self.operands_here += 1;
        // Options end at the first operand, unless it may be the value of an option the spec
        // does not know (`node --stack-size 100 -e CODE`): then the options after it are read
        // too, so that none is missed.
        if !spec.syntax.permute && self.unknown_long != Some(i.wrapping_sub(1)) {
            self.ended = true;
        }
        i + 1
    }

    /// `--name` or `--name=value` (`body` is the word without its dashes).
    fn long_option(&mut self, i: usize, body: &'a str) -> usize {
        let syntax = self.spec().syntax;
        let w = self.text(i);
        let (name, eq) = match body.find('=') {
            Some(at) => (&w[..at + 2], Some(&body[at + 1..])),
            None => (w, None),
        };
        let attached = Value { text: eq, at: None };
        let value_for = |m: &Self, o: &Opt, negated: bool| -> Value<'a> {
            if eq.is_some() || negated {
                attached
            } else if matches!(o.takes, Takes::Value | Takes::Pair) {
                m.next_word(i + 1)
            } else {
                NO_VALUE
            }
        };
        match long(&self.out.specs, name, syntax.abbreviate) {
            Lookup::One(o, level) => {
                let value = value_for(self, o, false);
                let next = self.skip(i + 1, Some((o, level)), value);
                self.push(
                    i,
                    Cow::Borrowed(name),
                    Some((o, level)),
                    value,
                    false,
                    false,
                );
                next
            }
            Lookup::Many(hits) => {
                // The program refuses an ambiguous abbreviation; every candidate is reported
                // so that a hazard among them is never missed. The next word is read as a
                // value only when every candidate would take it.
                let all_take = hits
                    .iter()
                    .all(|(o, _)| value_for(self, o, false).at.is_some());
                let value = if all_take {
                    self.next_word(i + 1)
                } else {
                    attached
                };
                let next = self.skip(i + 1, None, value);
                for hit in hits {
                    self.push(i, Cow::Borrowed(name), Some(hit), value, false, true);
                }
                next
            }
            Lookup::None => {
                if eq.is_none() {
                    self.unknown_long = Some(i);
                }
                let negative = syntax.negate && name.starts_with("--no-");
                let positive = if negative {
                    match long(
                        &self.out.specs,
                        &format!("--{}", &name[5..]),
                        syntax.abbreviate,
                    ) {
                        Lookup::One(o, level) => Some((o, level)),
                        _ => None,
                    }
                } else {
                    None
                };
                self.push(
                    i,
                    Cow::Borrowed(name),
                    positive,
                    attached,
                    positive.is_some(),
                    false,
                );
                i + 1
            }
        }
    }

    /// A cluster of single-letter options after `prefix` (`rf` of `-rf`). Returns the index of
    /// the next word to read.
    fn cluster(&mut self, i: usize, prefix: char, letters: &'a str) -> usize {
        let mut pos = 0;
        while let Some(c) = letters[pos..].chars().next() {
            let hit = short(&self.out.specs, prefix, c);
            let rest = &letters[pos + c.len_utf8()..];
            pos += c.len_utf8();
            let attached = Value {
                text: (!rest.is_empty()).then_some(rest),
                at: None,
            };
            // The spelling is kept only for an option the spec does not know.
            let spelled = || match hit {
                Some(_) => Cow::Borrowed(""),
                None => Cow::Owned(format!("{prefix}{c}")),
            };
            match hit.map(|(o, _)| o.takes) {
                Some(Takes::Nothing) | None => self.push(i, spelled(), hit, NO_VALUE, false, false),
                Some(Takes::Digits) => {
                    let digits =
                        rest.len() - rest.trim_start_matches(|d: char| d.is_ascii_digit()).len();
                    let value = Value {
                        text: (digits > 0).then(|| &rest[..digits]),
                        at: None,
                    };
                    self.push(i, spelled(), hit, value, false, false);
                    pos += digits;
                }
                Some(Takes::Optional) => {
                    self.push(i, spelled(), hit, attached, false, false);
                    return i + 1;
                }
                Some(_) => {
                    let value = if rest.is_empty() {
                        self.next_word(i + 1)
                    } else {
                        attached
                    };
                    let next = self.skip(i + 1, hit, value);
                    self.push(i, spelled(), hit, value, false, false);
                    return next;
                }
            }
        }
        i + 1
    }

    /// Records an option: a known one under its canonical name, an unknown one as spelled.
    fn push(
        &mut self,
        i: usize,
        spelled: Cow<'a, str>,
        hit: Option<(&'static Opt, usize)>,
        value: Value<'a>,
        negated: bool,
        ambiguous: bool,
    ) {
        let (name, opt, level) = match hit {
            Some((o, level)) => (Cow::Borrowed(o.canonical()), Some(o), level),
            None => (spelled, None, self.out.specs.len() - 1),
        };
        if let Some(o) = opt
            && !negated
            && matches!(o.role, Role::Ends | Role::Command)
        {
            self.ended = true;
        }
        self.out.options.push(Found {
            name,
            opt,
            at: i,
            value: value.text,
            value_at: value.at,
            level,
            negated,
            ambiguous,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RISK: Risk = Risk {
        id: "test",
        why: "a test",
    };

    /// A made-up program exercising every rule of the matcher.
    #[rustfmt::skip]
    const PROG: Spec = Spec::new(&["prog"], Syntax { plus: true, old_letters: true, negate: true, ..Syntax::GNU }, &[
        Opt::value(&["-o", "--output"]).risk(&RISK), Opt::flag(&["-r", "-R", "--recursive"]),
        Opt::optional(&["-i", "--in-place"]), Opt::equals(&["--format"]), Opt::pair(&["--arg"]),
        Opt::takes_digits(&["-l"]), Opt::flag(&["-e"]), Opt::value(&["+o"]), Opt::flag(&["--outline"]),
        Opt::value(&["-c"]).role(Role::Ends), Opt::optional(&["--exec-path"]).risk_with_value(&RISK),
    ]).subcommands(&[
        Spec::new(&["sub"], Syntax::GNU_STOP, &[Opt::flag(&["-s"])]).inheriting(),
        Spec::new(&["own"], Syntax::GNU, &[Opt::flag(&["-o"])]),
    ]);

    fn read(line: &str) -> Vec<(String, Option<String>)> {
        let argv: Vec<&str> = line.split(' ').collect();
        parse(&PROG, &argv)
            .options
            .iter()
            .map(|f| {
                let name = if f.negated {
                    format!("no{}", f.name)
                } else {
                    f.name.to_string()
                };
                (name, f.value.map(str::to_owned))
            })
            .collect()
    }

    fn one(name: &str, value: Option<&str>) -> (String, Option<String>) {
        (name.to_owned(), value.map(str::to_owned))
    }

    #[test]
    fn values_are_taken_as_the_option_takes_them() {
        assert_eq!(read("-oF x"), [one("-o", Some("F"))]);
        assert_eq!(read("-o F x"), [one("-o", Some("F"))]);
        assert_eq!(read("--output=F"), [one("-o", Some("F"))]);
        assert_eq!(read("--output F"), [one("-o", Some("F"))]);
        assert_eq!(read("-rio F"), [one("-r", None), one("-i", Some("o"))]);
        assert_eq!(read("-i F"), [one("-i", None)]);
        assert_eq!(read("--format x"), [one("--format", None)]);
        assert_eq!(read("--format=x"), [one("--format", Some("x"))]);
        assert_eq!(read("--arg a b c"), [one("--arg", Some("a"))]);
        assert_eq!(read("-l0e"), [one("-l", Some("0")), one("-e", None)]);
        assert_eq!(read("-le"), [one("-l", None), one("-e", None)]);
        assert_eq!(read("+o posix"), [one("+o", Some("posix"))]);
    }

    #[test]
    fn long_options_abbreviate_and_ambiguity_reports_every_candidate() {
        assert_eq!(read("--rec"), [one("-r", None)]);
        assert_eq!(read("--outp=F"), [one("-o", Some("F"))]);
        let ambiguous = read("--out=F");
        assert!(
            ambiguous.contains(&one("-o", Some("F")))
                && ambiguous.contains(&one("--outline", Some("F")))
        );
        assert_eq!(read("--no-recursive"), [one("no-r", None)]);
        assert_eq!(read("--zzz"), [one("--zzz", None)]);
    }

    #[test]
    fn options_end_and_subcommands_take_over() {
        let p = parse(&PROG, &["-c", "code", "-r"]);
        assert_eq!(p.operands, [2]);
        let p = parse(&PROG, &["sub", "x", "-s"]);
        assert_eq!(
            (p.subcommand(0), p.operands.as_slice()),
            (Some("sub"), &[1, 2][..])
        );
        // An inheriting subcommand still knows its parent's options; another does not.
        assert!(parse(&PROG, &["sub", "-o", "F"]).risks().next().is_some());
        assert!(parse(&PROG, &["own", "-o", "F"]).risks().next().is_none());
        // Old-style letters take their values from the next words, in order.
        let p = parse(&PROG, &["roi", "F", "x"]);
        assert_eq!(p.get("-o").and_then(|f| f.value), Some("F"));
        assert_eq!(p.operands, [2]);
    }

    #[test]
    fn a_risk_that_needs_a_value_needs_one() {
        assert!(parse(&PROG, &["--exec-path"]).risks().next().is_none());
        assert!(parse(&PROG, &["--exec-path=/x"]).risks().next().is_some());
        assert!(parse(&PROG, &["--no-output"]).risks().next().is_none());
    }
}
