//! The expansions bash performs on a word before a command runs, where they depend only on
//! static text: brace expansion (bounded by [`MAX_FIELDS`]), tilde expansion (with the script's
//! own `HOME` when it sets one), bound variables substituted wherever they stand in a word, word
//! splitting of their unquoted values, and which resulting words are still patterns for the
//! disk. A brace expression becomes several words of argv, as it does for the program; the
//! other expansions become each word's [`Word::values`], the paths bash may make of it.
//!
//! Bash's order is kept: braces first (on the text as written, quotes and expansions opaque),
//! then tilde, then parameters, then splitting, then globbing; quote removal throughout.

use crate::word::{Dynamic, Expansion, Piece, Word, has_glob};

/// Most words one word may expand to. Past it the word is not understood (`{1..100000}`).
pub(super) const MAX_FIELDS: usize = 1024;

/// A word expands to more than [`MAX_FIELDS`] words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TooMany;

/// One character or expansion of a word.
#[derive(Clone, Copy, Debug)]
enum Atom<'w> {
    /// A character, and whether it is active (unquoted and not escaped).
    Char(char, bool),
    /// `""` or `''`: no character, but the word is not empty.
    Empty,
    /// An expansion.
    Exp(&'w Expansion),
}

fn atoms(word: &Word) -> Vec<Atom<'_>> {
    let mut out = Vec::with_capacity(word.text.len());
    if word.pieces.is_empty() {
        out.extend(word.text.chars().map(|c| Atom::Char(c, false)));
        return out;
    }
    for piece in &word.pieces {
        match piece {
            Piece::Unquoted(raw) => {
                let mut chars = raw.chars();
                while let Some(c) = chars.next() {
                    if c != '\\' {
                        out.push(Atom::Char(c, true));
                        continue;
                    }
                    match chars.next() {
                        Some('\n') => {}
                        Some(next) => out.push(Atom::Char(next, false)),
                        None => out.push(Atom::Char('\\', false)),
                    }
                }
            }
            Piece::Quoted(text) if text.is_empty() => out.push(Atom::Empty),
            Piece::Quoted(text) => out.extend(text.chars().map(|c| Atom::Char(c, false))),
            Piece::Expansion(e) => out.push(Atom::Exp(e)),
        }
    }
    out
}

/// A word made of atoms again: its pieces, text and dynamic kinds.
fn word_of(atoms: &[Atom]) -> Word {
    let mut w = Word::default();
    let mut run = String::new();
    let mut run_active = false;
    let flush = |w: &mut Word, run: &mut String, active: bool| {
        if !run.is_empty() {
            let text = std::mem::take(run);
            w.pieces.push(if active {
                Piece::Unquoted(text)
            } else {
                Piece::Quoted(text)
            });
        }
    };
    for (i, atom) in atoms.iter().enumerate() {
        match *atom {
            Atom::Char(c, active) => {
                if active != run_active {
                    flush(&mut w, &mut run, run_active);
                    run_active = active;
                }
                run.push(c);
                w.text.push(c);
                if active && matches!(c, '*' | '?' | '[') {
                    w.dynamic.insert(Dynamic::Glob);
                }
                if active && c == '~' && i == 0 {
                    w.dynamic.insert(Dynamic::Tilde);
                }
            }
            Atom::Empty => {
                flush(&mut w, &mut run, run_active);
                w.pieces.push(Piece::Quoted(String::new()));
            }
            Atom::Exp(e) => {
                flush(&mut w, &mut run, run_active);
                w.text.push_str(&e.source);
                w.dynamic.extend(e.dynamic.iter().copied());
                w.pieces.push(Piece::Expansion(Box::new(e.clone())));
            }
        }
    }
    flush(&mut w, &mut run, run_active);
    if let [Piece::Expansion(e)] = w.pieces.as_slice() {
        w.values = e.values.clone();
    }
    w
}

/// Whether `word` holds a brace expression bash expands.
pub(super) fn has_braces(word: &Word) -> bool {
    let candidate = word
        .pieces
        .iter()
        .any(|p| matches!(p, Piece::Unquoted(raw) if raw.contains('{')));
    candidate && first_brace(&atoms(word)).is_some()
}

/// The words a brace expression in `word` makes it, in bash's order; `None` when the word holds
/// no brace expression. Words left empty are dropped, as bash drops them.
pub(super) fn braces(word: &Word) -> Result<Option<Vec<Word>>, TooMany> {
    if !has_braces(word) {
        return Ok(None);
    }
    let atoms = atoms(word);
    let mut out = Vec::new();
    expand_braces(atoms, &mut out)?;
    // Each word is what its text fixes: a word made only of literal text is static, as the
    // program receives it (`{rm,-rf}` is `rm -rf` to every table).
    Ok(Some(
        out.iter()
            .filter(|a| !a.is_empty())
            .map(|a| word_of(a))
            .collect(),
    ))
}

/// The first brace expression bash would expand: the leftmost `{` whose matching `}` encloses
/// a comma at its own level or a sequence (`1..5`, `a..e`, `01..10..2`). Returns the positions
/// of both braces and of the commas.
fn first_brace(atoms: &[Atom]) -> Option<(usize, usize, Vec<usize>)> {
    let mut open: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut best: Option<(usize, usize, Vec<usize>)> = None;
    for (k, atom) in atoms.iter().enumerate() {
        match atom {
            Atom::Char('{', true) => open.push((k, Vec::new())),
            Atom::Char(',', true) => {
                if let Some(top) = open.last_mut() {
                    top.1.push(k);
                }
            }
            Atom::Char('}', true) => {
                let Some((start, commas)) = open.pop() else {
                    continue;
                };
                let valid = !commas.is_empty() || sequence(&atoms[start + 1..k]).is_some();
                if valid && best.as_ref().is_none_or(|b| start < b.0) {
                    best = Some((start, k, commas));
                }
            }
            _ => {}
        }
    }
    best
}

fn expand_braces<'w>(atoms: Vec<Atom<'w>>, out: &mut Vec<Vec<Atom<'w>>>) -> Result<(), TooMany> {
    let Some((open, close, commas)) = first_brace(&atoms) else {
        if out.len() >= MAX_FIELDS {
            return Err(TooMany);
        }
        out.push(atoms);
        return Ok(());
    };
    let alternatives: Vec<Vec<Atom<'w>>> = if commas.is_empty() {
        sequence(&atoms[open + 1..close])
            .map(Sequence::items)
            .transpose()?
            .unwrap_or_default()
            .into_iter()
            .map(|item| item.chars().map(|c| Atom::Char(c, c != '\\')).collect())
            .collect()
    } else {
        let mut alternatives = Vec::with_capacity(commas.len() + 1);
        let mut start = open + 1;
        for &end in commas.iter().chain(std::iter::once(&close)) {
            alternatives.push(atoms[start..end].to_vec());
            start = end + 1;
        }
        alternatives
    };
    for alternative in alternatives {
        let mut next = Vec::with_capacity(atoms.len() + alternative.len());
        next.extend_from_slice(&atoms[..open]);
        next.extend(alternative);
        next.extend_from_slice(&atoms[close + 1..]);
        expand_braces(next, out)?;
    }
    Ok(())
}

/// A sequence expression: `{1..5}`, `{05..1..2}`, `{a..e}`.
enum Sequence {
    Numbers {
        from: i64,
        to: i64,
        step: u64,
        width: usize,
    },
    Letters {
        from: u8,
        to: u8,
        step: u64,
    },
}

/// Reads the inside of a brace as a sequence expression (every character active).
fn sequence(inner: &[Atom]) -> Option<Sequence> {
    let mut text = String::with_capacity(inner.len());
    for atom in inner {
        match atom {
            Atom::Char(c, true) => text.push(*c),
            _ => return None,
        }
    }
    let parts: Vec<&str> = text.split("..").collect();
    if parts.len() != 2 && parts.len() != 3 {
        return None;
    }
    let step = match parts.get(2) {
        Some(s) => integer(s)?.unsigned_abs().max(1),
        None => 1,
    };
    if let (Some(from), Some(to)) = (integer(parts[0]), integer(parts[1])) {
        let padded = |s: &str| {
            let digits = s.trim_start_matches(['-', '+']);
            digits.len() > 1 && digits.starts_with('0')
        };
        let width = if padded(parts[0]) || padded(parts[1]) {
            parts[0].len().max(parts[1].len())
        } else {
            0
        };
        return Some(Sequence::Numbers {
            from,
            to,
            step,
            width,
        });
    }
    let letter = |s: &str| match s.as_bytes() {
        [c] if c.is_ascii_alphabetic() => Some(*c),
        _ => None,
    };
    Some(Sequence::Letters {
        from: letter(parts[0])?,
        to: letter(parts[1])?,
        step,
    })
}

/// A decimal integer as bash reads one in a sequence expression.
fn integer(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl Sequence {
    /// Every item, or [`TooMany`].
    fn items(self) -> Result<Vec<String>, TooMany> {
        let (from, to, step) = match self {
            Sequence::Numbers { from, to, step, .. } => (from, to, step),
            Sequence::Letters { from, to, step } => (i64::from(from), i64::from(to), step),
        };
        let count = from.abs_diff(to) / step + 1;
        if count > MAX_FIELDS as u64 {
            return Err(TooMany);
        }
        let mut out = Vec::with_capacity(count as usize);
        let mut value = i128::from(from);
        let step = if from <= to {
            i128::from(step)
        } else {
            -i128::from(step)
        };
        for _ in 0..count {
            out.push(match self {
                Sequence::Numbers { width, .. } => format!("{value:0width$}"),
                Sequence::Letters { .. } => char::from(value as u8).to_string(),
            });
            value += step;
        }
        Ok(out)
    }
}

/// Where a word stands, which decides what bash does to the values of its expansions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Context {
    /// A command's argument or a `for` list: unquoted values are split and globbed.
    Argument,
    /// The value of an assignment: neither split nor globbed.
    Assignment,
}

/// What a leading `~` stands for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Home<'a> {
    /// The script does not set `HOME`: the home folder, which path resolution knows.
    Unset,
    /// The script binds `HOME` to these words (the home folder too, for a `~` read before the
    /// assignment).
    Bound(&'a [Word]),
    /// The script sets `HOME` to something not known here.
    Dynamic,
}

/// What [`fields`] made of a word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Expanded {
    /// Nothing to expand: the word is its text.
    Same,
    /// The words bash makes of it.
    Fields(Vec<Word>),
    /// A part of it is not known (a `~` after the script sets `HOME` at run time, `~-`).
    Unresolvable,
}

/// One word being built.
#[derive(Clone, Debug, Default)]
struct Field {
    text: String,
    pattern: bool,
    tilde: bool,
    bound: bool,
    /// Holds a character or a quoted empty string: kept even when its text is empty.
    kept: bool,
}

impl Field {
    fn word(self) -> Word {
        let mut w = Word::fixed(self.text);
        for (on, kind) in [
            (self.pattern, Dynamic::Glob),
            (self.tilde, Dynamic::Tilde),
            (self.bound, Dynamic::Bound),
        ] {
            if on {
                w.dynamic.insert(kind);
            }
        }
        w
    }
}

/// The words being built for one choice of every bound variable's value.
#[derive(Clone, Debug, Default)]
struct State {
    done: Vec<Field>,
    current: Field,
    /// The value chosen for each variable met so far (by index in its values).
    chosen: Vec<(String, usize)>,
}

fn is_ifs(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

impl State {
    /// Appends a bound variable's value. `false` when the value cannot stand here.
    fn append(&mut self, value: &Word, split: bool) -> bool {
        let pattern = value.dynamic.contains(&Dynamic::Glob);
        if value.dynamic.contains(&Dynamic::Tilde) {
            // `~` was kept for path resolution, which expands it only at the start of a path.
            if !self.done.is_empty() || self.current.kept || !value.text.starts_with('~') {
                return false;
            }
            self.current.tilde = true;
        }
        self.current.bound = true;
        if !split {
            self.current.text.push_str(&value.text);
            self.current.pattern |= pattern;
            self.current.kept = true;
            return true;
        }
        let text = value.text.as_str();
        if text.starts_with(is_ifs) && self.current.kept {
            self.end_field();
        }
        for (i, part) in text.split(is_ifs).filter(|p| !p.is_empty()).enumerate() {
            if i > 0 {
                self.end_field();
            }
            self.current.text.push_str(part);
            self.current.pattern |= pattern || has_glob(part);
            self.current.kept = true;
            self.current.bound = true;
        }
        if text.ends_with(is_ifs) && self.current.kept {
            self.end_field();
        }
        true
    }

    fn end_field(&mut self) {
        let field = std::mem::take(&mut self.current);
        self.done.push(field);
    }
}

/// Performs tilde expansion, substitutes bound variables, splits their unquoted values and marks
/// patterns (see the module doc). Brace expansion is [`braces`], done before.
pub(super) fn fields(word: &Word, context: Context, home: Home) -> Result<Expanded, TooMany> {
    let bound = word.pieces.iter().any(|p| {
        matches!(p, Piece::Expansion(e) if !e.values.is_empty() && e.dynamic.contains(&Dynamic::Bound))
    });
    let tilde = matches!(word.pieces.first(), Some(Piece::Unquoted(raw)) if raw.starts_with('~'));
    if !bound && !tilde && context == Context::Argument {
        return Ok(Expanded::Same);
    }
    let atoms = atoms(word);
    let mut states = vec![State::default()];
    let mut rest = &atoms[..];
    if let Some(Atom::Char('~', true)) = atoms.first() {
        let end = atoms
            .iter()
            .position(|a| matches!(a, Atom::Char('/', true)))
            .unwrap_or(atoms.len());
        let prefix: Option<String> = atoms[1..end]
            .iter()
            .map(|a| match a {
                Atom::Char(c, true) => Some(*c),
                _ => None,
            })
            .collect();
        if let Some(prefix) = prefix {
            rest = &atoms[end..];
            let current = &mut states[0].current;
            current.kept = true;
            match (prefix.as_str(), home) {
                ("", Home::Unset) => {
                    current.text.push('~');
                    current.tilde = true;
                }
                ("", Home::Bound(values)) => {
                    // The home folder, or what the script set `HOME` to.
                    let mut at_home = Field {
                        text: "~".into(),
                        tilde: true,
                        kept: true,
                        ..Field::default()
                    };
                    let mut choices = vec![State {
                        current: std::mem::take(&mut at_home),
                        ..State::default()
                    }];
                    for value in values {
                        let mut state = State::default();
                        if !state.append(value, false) {
                            return Ok(Expanded::Unresolvable);
                        }
                        choices.push(state);
                    }
                    states = choices;
                }
                ("", Home::Dynamic) => return Ok(Expanded::Unresolvable),
                // `~+` is the current folder; `~-`, `~N`, `~+N`, `~-N` are other folders.
                ("+", _) => current.text.push('.'),
                (p, _)
                    if p.starts_with(['+', '-']) || p.starts_with(|c: char| c.is_ascii_digit()) =>
                {
                    return Ok(Expanded::Unresolvable);
                }
                (user, _) => {
                    current.text.push('~');
                    current.text.push_str(user);
                    current.tilde = true;
                }
            }
        }
    }
    let argument = context == Context::Argument;
    for atom in rest {
        match *atom {
            Atom::Char(c, active) => {
                for state in &mut states {
                    state.current.text.push(c);
                    state.current.kept = true;
                    state.current.pattern |= argument && active && matches!(c, '*' | '?' | '[');
                }
            }
            Atom::Empty => {
                for state in &mut states {
                    state.current.kept = true;
                }
            }
            Atom::Exp(e) => {
                if e.values.is_empty() || !e.dynamic.contains(&Dynamic::Bound) {
                    return Ok(Expanded::Unresolvable);
                }
                let mut next = Vec::with_capacity(states.len() * e.values.len());
                for state in &states {
                    let chosen = e.variable.as_ref().and_then(|v| {
                        state
                            .chosen
                            .iter()
                            .find(|(name, _)| name == v)
                            .map(|(_, i)| *i)
                    });
                    for (i, value) in e.values.iter().enumerate() {
                        if chosen.is_some_and(|c| c != i) {
                            continue;
                        }
                        let mut state = state.clone();
                        if !state.append(value, argument && !e.quoted) {
                            return Ok(Expanded::Unresolvable);
                        }
                        if let (Some(v), None) = (&e.variable, chosen) {
                            state.chosen.push((v.clone(), i));
                        }
                        next.push(state);
                    }
                    if next.len() > MAX_FIELDS {
                        return Err(TooMany);
                    }
                }
                states = next;
            }
        }
    }
    let mut out = Vec::new();
    for mut state in states {
        if state.current.kept {
            state.end_field();
        }
        out.extend(state.done.into_iter().map(Field::word));
        if out.len() > MAX_FIELDS {
            return Err(TooMany);
        }
    }
    Ok(Expanded::Fields(out))
}

#[cfg(test)]
mod tests {
    use crate::Analysis;

    fn argv(script: &str) -> Vec<String> {
        Analysis::of(script).commands[0].argv[1..].to_vec()
    }

    /// The paths each argument word may name, as `written`.
    fn paths(script: &str) -> Vec<String> {
        Analysis::of(script)
            .path_requests()
            .into_iter()
            .map(|r| r.written)
            .collect()
    }

    #[test]
    fn braces_expand_as_bash_expands_them() {
        // Each expected list was printed by bash 5.2.
        for (script, want) in [
            ("echo {a,b}c", &["ac", "bc"][..]),
            ("echo {1..3..0}", &["1", "2", "3"]),
            ("echo {3..1..2}", &["3", "1"]),
            ("echo {-05..-3}", &["-05", "-04", "-03"]),
            ("echo {9..011}", &["009", "010", "011"]),
            (
                "echo {a..9} {%..+} {aa..c}",
                &["{a..9}", "{%..+}", "{aa..c}"],
            ),
            ("echo {a,'b'}", &["a", "b"]),
            ("echo {a','b}", &["{a,b}"]),
            ("echo {a{b,c}", &["{ab", "{ac"]),
            ("echo \\${a,b}", &["$a", "$b"]),
            ("echo x{,}y {,}", &["xy", "xy"]),
            ("echo {\"\",a}", &["", "a"]),
        ] {
            assert_eq!(argv(script), want, "{script}");
        }
    }

    #[test]
    fn bound_variables_are_substituted_wherever_they_stand() {
        assert_eq!(
            paths("p=secrets; cat config/${p}.env"),
            ["config/secrets.env"]
        );
        assert_eq!(paths("p=a; cat \"$p\"/${p}.txt"), ["a/a.txt"]);
        assert_eq!(paths("p='a  b'; cat x$p"), ["xa", "b"]);
        assert_eq!(paths("p='a  b'; cat \"x$p\""), ["xa  b"]);
        assert_eq!(paths("for d in a b; do cat $d/$d; done"), ["a/a", "b/b"]);
        assert_eq!(paths("e=; cat $e"), Vec::<String>::new());
    }

    #[test]
    fn unquoted_values_are_patterns_and_quoted_ones_are_not() {
        let a = Analysis::of("q='*.env'; cat $q \"$q\"");
        let requests = a.path_requests();
        let pattern: Vec<(&str, bool)> = requests
            .iter()
            .map(|r| (r.written.as_str(), r.pattern))
            .collect();
        assert_eq!(pattern, [("*.env", true)]);
        // The quoted one names the file `*.env` itself; both are one request here.
        let a = Analysis::of("q='*.env'; cat \"$q\"");
        assert!(!a.path_requests()[0].pattern);
    }

    #[test]
    fn tilde_follows_the_scripts_own_home() {
        assert_eq!(paths("cat ~/x"), ["~/x"]);
        assert_eq!(
            paths("HOME=/etc; cat ~/shadow"),
            ["~/shadow", "/etc/shadow"]
        );
        assert_eq!(paths("cat ~+/x"), ["./x"]);
        assert_eq!(paths("cat ~root/x"), ["~root/x"]);
        // Set at run time, or another folder's: not known, so the word is dynamic.
        let a = Analysis::of("HOME=$(mktemp -d); cat ~/x");
        assert!(!a.commands[1].words[1].depends_on_static());
        let a = Analysis::of("cat ~-/x");
        assert!(!a.commands[0].words[1].depends_on_static());
        // `HOME=` before a command does not change the `~` the shell expands.
        assert_eq!(paths("HOME=/etc cat ~/x"), ["~/x"]);
    }

    #[test]
    fn an_argument_that_looks_like_an_assignment_names_its_value_too() {
        assert_eq!(paths("make KEY=~/.ssh/id"), ["KEY=~/.ssh/id", "~/.ssh/id"]);
    }
}
