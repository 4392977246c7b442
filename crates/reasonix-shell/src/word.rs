//! Words after quote removal, and the three quoting decoders bash applies to text that
//! tree-sitter has already delimited: unquoted text, double-quoted text and ANSI-C `$'...'`.
//!
//! Tree-sitter finds where each word, string and expansion begins and ends; these functions only
//! decode the characters inside one such token. A word also remembers what about it is not
//! static, because a policy may only rely on what the text itself fixes.

use std::collections::BTreeSet;

use serde::Serialize;

/// Why a word is not fixed by the text alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dynamic {
    /// A variable the script does not bind to static text (`$HOME`, `$1`, `$IFS`).
    Variable,
    /// Command output (`$(...)`, backticks, `<(...)`).
    Substitution,
    /// Arithmetic on variables (`$((i+1))`).
    Arithmetic,
    /// Input fed in at run time (xargs' stdin): any text at all.
    Input,
    /// A path `find` found (`{}` in `-exec`): below find's static starting points.
    Found,
    /// An unquoted glob (`*.rs`): expands to existing paths.
    Glob,
    /// Brace expansion (`a{b,c}`).
    Brace,
    /// A leading `~`: expands to a home folder.
    Tilde,
    /// A variable the script binds exactly once, to static or glob words (`for f in src/*.rs`).
    Bound,
}

impl Dynamic {
    /// True when the word still depends only on static text (and the filesystem or home
    /// folder): a glob, a brace, a tilde, a bound variable. Such a word may be covered by a
    /// catch-all `*` in an allow rule; a truly dynamic word never is.
    pub fn depends_on_static(self) -> bool {
        matches!(
            self,
            Dynamic::Glob | Dynamic::Brace | Dynamic::Tilde | Dynamic::Bound | Dynamic::Found
        )
    }
}

/// One word: its text after quote removal (dynamic parts keep their source text) and what
/// makes it dynamic, if anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The text.
    pub text: String,
    /// Empty for a static word.
    pub dynamic: BTreeSet<Dynamic>,
    /// What bash makes of the word when that is not its text alone: the words it may become
    /// after tilde expansion, bound variables substituted, word splitting (a
    /// [`Dynamic::Glob`] marks a pattern still to be matched against the disk). For a word
    /// that is exactly one bound variable: the words it is bound to.
    pub values: Vec<Word>,
    /// The word as bash's expansions see it, piece by piece; empty when the word is its text,
    /// quoted (a static word).
    pub pieces: Vec<Piece>,
}

/// One piece of a word, as bash's expansions see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Unquoted text as written: its backslashes escape, and brace, tilde and glob characters in
    /// it are active.
    Unquoted(String),
    /// Text after quote removal (quoted or escaped): no character in it is special.
    Quoted(String),
    /// An expansion.
    Expansion(Box<Expansion>),
}

/// An expansion inside a word (`$p`, `${p}`, `$(id)`, `$((i+1))`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expansion {
    /// As written.
    pub source: String,
    /// What makes it dynamic.
    pub dynamic: BTreeSet<Dynamic>,
    /// For a bound variable: the words it stands for.
    pub values: Vec<Word>,
    /// For a bound variable: its name (it stands for the same word wherever it appears in a
    /// word).
    pub variable: Option<String>,
    /// Inside double quotes: its value is neither split nor globbed.
    pub quoted: bool,
}

impl Word {
    /// A static word.
    pub fn fixed(text: impl Into<String>) -> Word {
        let text = text.into();
        Word {
            // `""` is a word all the same: one empty piece says so.
            pieces: if text.is_empty() {
                vec![Piece::Quoted(String::new())]
            } else {
                Vec::new()
            },
            text,
            ..Word::default()
        }
    }

    /// A word with one kind of dynamic part.
    pub fn with(text: impl Into<String>, kind: Dynamic) -> Word {
        let text = text.into();
        let dynamic = BTreeSet::from([kind]);
        Word {
            pieces: vec![Piece::Expansion(Box::new(Expansion {
                source: text.clone(),
                dynamic: dynamic.clone(),
                ..Expansion::default()
            }))],
            text,
            dynamic,
            values: Vec::new(),
        }
    }

    /// Unquoted text as written: backslashes removed, a glob or a leading `~` noted (braces are
    /// the caller's to find: they may span several pieces).
    pub fn unquoted(raw: &str) -> Word {
        let mut dynamic = BTreeSet::new();
        if has_glob(raw) {
            dynamic.insert(Dynamic::Glob);
        }
        if raw.starts_with('~') {
            dynamic.insert(Dynamic::Tilde);
        }
        Word {
            text: unquote(raw),
            dynamic,
            values: Vec::new(),
            pieces: vec![Piece::Unquoted(raw.to_owned())],
        }
    }

    /// True when the text alone fixes the word.
    pub fn is_static(&self) -> bool {
        self.dynamic.is_empty()
    }

    /// True when every dynamic part depends only on static text.
    pub fn depends_on_static(&self) -> bool {
        self.dynamic.iter().all(|d| d.depends_on_static())
    }

    /// What the word stands for once bash has expanded it, when that depends only on static
    /// text: a static word's text; for a word with a `~`, braces or bound variables (`-f
    /// ~/x.tar`, `-o $out` after `out=a.txt`), each of its values' texts (a `~` still at the
    /// start is the home folder's, which path resolution expands). Empty for a word decided at
    /// run time.
    pub fn expanded_texts(&self) -> Vec<&str> {
        if self.is_static() {
            return vec![self.text.as_str()];
        }
        if !self.depends_on_static() || self.dynamic.contains(&Dynamic::Found) {
            return Vec::new();
        }
        if self.values.is_empty() {
            return vec![self.text.as_str()];
        }
        self.values
            .iter()
            .filter(|v| v.depends_on_static() && !v.dynamic.contains(&Dynamic::Found))
            .map(|v| v.text.as_str())
            .collect()
    }

    /// Appends another part of the same word.
    pub fn push(&mut self, part: Word) {
        let Word {
            text,
            dynamic,
            values,
            mut pieces,
        } = part;
        if self.pieces.is_empty() && !self.text.is_empty() {
            self.pieces.push(Piece::Quoted(self.text.clone()));
        }
        if pieces.is_empty() && !text.is_empty() {
            pieces.push(Piece::Quoted(text.clone()));
        }
        self.text.push_str(&text);
        self.dynamic.extend(dynamic);
        if self.values.is_empty() {
            self.values = values;
        } else {
            // Two bound variables in one word: the combinations are not tracked here (the walk
            // expands the pieces).
            self.values.clear();
        }
        self.pieces.extend(pieces);
    }

    /// Adds a kind of dynamic part to a word that is one expansion (to the expansion too, so
    /// that what is made of its pieces keeps it).
    pub fn insert(&mut self, kind: Dynamic) {
        self.dynamic.insert(kind);
        if let [Piece::Expansion(e)] = self.pieces.as_mut_slice() {
            e.dynamic.insert(kind);
        }
    }

    /// The same word inside double quotes: its expansions are neither split nor globbed.
    pub fn into_quoted(mut self) -> Word {
        for piece in &mut self.pieces {
            match piece {
                Piece::Unquoted(raw) => *piece = Piece::Quoted(unquote(raw)),
                Piece::Expansion(e) => e.quoted = true,
                Piece::Quoted(_) => {}
            }
        }
        self
    }
}

/// Removes bash's unquoted backslashes: `\x` is `x`, `\<newline>` is nothing.
pub fn unquote(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') => {}
                Some(next) => out.push(next),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// True when unquoted text holds a glob character that is not escaped.
pub fn has_glob(raw: &str) -> bool {
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// In text that bash expands (inside double quotes, or an unquoted here-document body), the first expansion or substitution it would start: an
/// unescaped `` ` `` or a `$` before `(`, `{`, `[`, a name or a special parameter. The walk
/// asks it of text tree-sitter left as plain text, so that a `$(...)` the parse dropped (after
/// blanks that start a here-document line, after a backslash-newline) is never read as text.
pub fn unexpanded(raw: &str) -> Option<String> {
    if !raw.contains(['$', '`']) {
        return None;
    }
    // A backslash-newline is removed before anything is expanded (`$\<newline>(id)` is
    // `$(id)`); any other backslash escapes the character after it.
    let mut chars: Vec<char> = Vec::with_capacity(raw.len());
    let mut it = raw.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('\n') => {}
                Some(next) => chars.extend([c, next]),
                None => chars.push(c),
            }
        } else {
            chars.push(c);
        }
    }
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '`' => return Some(chars[i..].iter().take(20).collect()),
            '$' if chars.get(i + 1).is_some_and(|&n| {
                matches!(
                    n,
                    '(' | '{' | '[' | '_' | '@' | '*' | '#' | '?' | '$' | '!' | '-'
                ) || n.is_ascii_alphanumeric()
            }) =>
            {
                return Some(chars[i..].iter().take(20).collect());
            }
            _ => i += 1,
        }
    }
    None
}

/// Decodes the inside of a double-quoted string: a backslash escapes only `$`, `` ` ``, `"`,
/// `\` and newline (which it removes); before anything else it stays.
pub fn decode_double(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    out.push(next);
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes an ANSI-C string, given with its `$'` and `'`. A NUL (`\0`, `\x00`, `\u0000`,
/// `\c@`) ends it, as in bash: what follows in the same quotes is dropped.
pub fn decode_ansi_c(token: &str) -> String {
    let inner = token
        .strip_prefix("$'")
        .and_then(|t| t.strip_suffix('\''))
        .unwrap_or(token);
    let chars: Vec<char> = inner.chars().collect();
    let mut out = String::with_capacity(inner.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let code = match e {
            '0'..='7' => {
                i -= 1;
                take_number(&chars, &mut i, 8, 3)
            }
            'x' => take_number(&chars, &mut i, 16, 2),
            'u' => take_number(&chars, &mut i, 16, 4),
            'U' => take_number(&chars, &mut i, 16, 8),
            'c' if i < chars.len() => {
                let ctl = chars[i];
                i += 1;
                Some(u32::from(ctl) & 0x1f)
            }
            _ => None,
        };
        match code.and_then(char::from_u32) {
            // bash ends the string at a NUL: the rest of it is dropped.
            Some('\0') => return out,
            Some(ch) => out.push(ch),
            None => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    out
}

/// Reads up to `max` digits in `radix` at `i`, advancing it.
fn take_number(chars: &[char], i: &mut usize, radix: u32, max: usize) -> Option<u32> {
    let start = *i;
    while *i < chars.len() && *i - start < max && chars[*i].is_digit(radix) {
        *i += 1;
    }
    let digits: String = chars[start..*i].iter().collect();
    u32::from_str_radix(&digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoted_backslashes_are_removed() {
        assert_eq!(unquote(r"\rm"), "rm");
        assert_eq!(unquote("a\\\nb"), "ab");
        assert_eq!(unquote(r"a\\b"), r"a\b");
        assert_eq!(unquote("end\\"), "end\\");
    }

    #[test]
    fn globs_are_found_unless_escaped() {
        assert!(has_glob("src/*.rs"));
        assert!(has_glob("a?"));
        assert!(has_glob("[ab]"));
        assert!(!has_glob(r"\*"));
        assert!(!has_glob("plain"));
    }

    #[test]
    fn double_quotes_escape_only_five_characters() {
        assert_eq!(decode_double(r#"a\"b"#), "a\"b");
        assert_eq!(decode_double(r"\$HOME"), "$HOME");
        assert_eq!(decode_double(r"\n"), r"\n");
        assert_eq!(decode_double("c\\\nd"), "cd");
    }

    #[test]
    fn a_nul_ends_an_ansi_c_string() {
        assert_eq!(decode_ansi_c("$'a\\0b'"), "a");
        assert_eq!(decode_ansi_c("$'\\x00q'"), "");
        assert_eq!(decode_ansi_c("$'x\\u0000z'"), "x");
        assert_eq!(decode_ansi_c("$'k\\c@k'"), "k");
        assert_eq!(decode_ansi_c("$'a\\101'"), "aA");
    }

    #[test]
    fn expansions_left_in_text_are_found() {
        assert_eq!(unexpanded("  $(touch p)").as_deref(), Some("$(touch p)"));
        assert!(unexpanded("a `id`").is_some());
        assert!(unexpanded("${x}").is_some());
        assert!(unexpanded("$x").is_some());
        assert!(unexpanded("\\$(id) \\` $ $' a$").is_none());
        assert!(unexpanded("plain text, 5$ and $.").is_none());
        assert!(unexpanded("$\\\n(id)").is_some());
        assert!(unexpanded("`\\\nid`").is_some());
        assert!(unexpanded("\\\\\n$").is_none());
    }

    #[test]
    fn ansi_c_escapes_decode() {
        assert_eq!(decode_ansi_c(r"$'\x72\x6d'"), "rm");
        assert_eq!(decode_ansi_c(r"$'\162m'"), "rm");
        assert_eq!(decode_ansi_c(r"$'a\'b'"), "a'b");
        assert_eq!(decode_ansi_c(r"$'\u0072m'"), "rm");
        assert_eq!(decode_ansi_c(r"$'\t\n'"), "\t\n");
        assert_eq!(decode_ansi_c(r"$'\cA'"), "\u{1}");
        assert_eq!(decode_ansi_c(r"$'\q'"), r"\q");
    }
}
