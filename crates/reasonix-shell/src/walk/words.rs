//! Words: quote removal and what makes a word dynamic, evaluated where the word stands (a
//! substitution inside it is walked as statements); `NAME=value` assignments; and the
//! variables the script binds once to static words, which then stand for those words
//! ([`Dynamic::Bound`]).

use crate::parse::KindName;
use tree_sitter::Node;

use super::expand::{self, Context, Expanded, Home};
use super::{Walker, is_expression};
use crate::word::{self, Dynamic, Piece, Word};
use crate::{Assignment, Feature};

// Assignments and bindings.
impl Walker<'_> {
    /// Binds `name` to `values` when the script may bind it and every value is static.
    pub(super) fn bind(&mut self, name: &str, values: Vec<Word>) {
        if self.scope.bindable.contains(name) && values.iter().all(Word::depends_on_static) {
            self.bindings.insert(name.to_owned(), values);
        }
    }

    /// A `NAME=value` assignment: its name, its value as words, and the record.
    pub(super) fn assignment(&mut self, node: Node) -> (String, Vec<Word>, Assignment) {
        self.assignment_code(node);
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n).to_owned())
            .unwrap_or_default();
        let variable = node
            .child_by_field_name("name")
            .map(|n| match n.kind_name() {
                "subscript" => n.child_by_field_name("name").map_or("", |v| self.text(v)),
                _ => self.text(n),
            });
        if !variable.is_some_and(is_name) {
            // `1=x ls`, `é=1 ls`: no assignment to bash, which runs the program `1=x`.
            self.problem(format!(
                "`{}` is no assignment to bash ({:?} is not a variable name): it is a command word",
                self.text(node),
                variable.unwrap_or("")
            ));
        }
        let values: Vec<Word> = match node.child_by_field_name("value") {
            Some(v) if v.kind_name() == "array" => {
                let mut cursor = v.walk();
                let children: Vec<Node> = v.named_children(&mut cursor).collect();
                children.into_iter().map(|c| self.word(c)).collect()
            }
            Some(v) => vec![self.word(v)],
            None => vec![Word::fixed("")],
        };
        let record = Assignment {
            name: name.clone(),
            value: values
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            is_static: values.iter().all(Word::is_static),
        };
        (name, values, record)
    }
}

// Words.
impl Walker<'_> {
    /// Evaluates a word-like node: quote removal, dynamic parts, nested commands.
    pub(super) fn word(&mut self, node: Node) -> Word {
        let raw = self.text(node);
        match node.kind_name() {
            "word" => {
                if has_blank(raw) && !in_expansion(node) {
                    // `ls ] }`: one word to tree-sitter, two to bash.
                    self.problem(format!(
                        "tree-sitter took {raw:?} for one word; bash splits it at its blanks"
                    ));
                }
                let mut w = Word::unquoted(raw);
                if w.dynamic.contains(&Dynamic::Glob) {
                    self.out.features.insert(Feature::Glob);
                }
                if w.dynamic.contains(&Dynamic::Tilde) {
                    self.out.features.insert(Feature::Tilde);
                }
                self.note_braces(&mut w);
                w
            }
            "number" | "variable_name" | "test_operator" | "file_descriptor" | "heredoc_start"
            | "heredoc_end" | "heredoc_content" => {
                self.scan(node);
                Word::fixed(raw)
            }
            "raw_string" => Word::fixed(
                raw.strip_prefix('\'')
                    .and_then(|r| r.strip_suffix('\''))
                    .unwrap_or(raw),
            ),
            "ansi_c_string" => Word::fixed(word::decode_ansi_c(raw)),
            "string_content" => {
                self.missed(raw);
                Word::fixed(word::decode_double(raw))
            }
            "string" => {
                let parts = self.quoted_parts(node);
                if parts.is_empty() {
                    return Word::fixed("");
                }
                let mut w = Word::default();
                for part in parts {
                    w.push(part);
                }
                w.into_quoted()
            }
            "translated_string" => {
                let parts = self.parts(node);
                if parts.is_empty() {
                    // `""`: no text, but a word all the same.
                    return Word::fixed("");
                }
                let mut w = Word::default();
                for part in parts {
                    w.push(part);
                }
                w.into_quoted()
            }
            "concatenation" => {
                let mut cursor = node.walk();
                let mut end = node.start_byte();
                for child in node.children(&mut cursor) {
                    if child.start_byte() != end && !in_expansion(node) {
                        // ``x ` ` y``: blanks inside one word to tree-sitter; bash splits there.
                        self.problem(format!(
                            "tree-sitter took {raw:?} for one word; bash splits it at its blanks"
                        ));
                        break;
                    }
                    end = child.end_byte();
                }
                let mut w = Word::default();
                for (i, mut part) in self.parts(node).into_iter().enumerate() {
                    if i > 0 {
                        // A `~` only expands at the start of a word.
                        part.dynamic.remove(&Dynamic::Tilde);
                    }
                    w.push(part);
                }
                self.note_braces(&mut w);
                w
            }
            // `"a $ b"`, `$ sed`: tree-sitter reads `$ b` as a variable named "b"; to bash a
            // `$` before a blank starts nothing. Inside quotes that is text; outside, two words.
            "simple_expansion"
                if raw
                    .get(1..)
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_whitespace())) =>
            {
                if node.parent().is_none_or(|p| p.kind_name() != "string") {
                    self.problem(format!(
                        "tree-sitter took {raw:?} for one word; bash splits it at its blanks"
                    ));
                }
                Word::fixed(raw)
            }
            "simple_expansion" | "expansion" => {
                if node.kind_name() == "simple_expansion"
                    && !raw.get(1..).is_some_and(|r| {
                        is_name(r)
                            || r.bytes().all(|b| b.is_ascii_digit())
                            || matches!(r, "@" | "*" | "#" | "?" | "$" | "!" | "-" | "_")
                    })
                {
                    // `$\<newline>(id)` in a here-document: tree-sitter reads a variable named
                    // `\`; bash removes the backslash-newline and runs `id`.
                    self.problem(format!(
                        "tree-sitter read {raw:?} as a variable; bash does not"
                    ));
                }
                self.scan(node);
                let safe = self.expansion_code(node);
                let mut w = self.variable(node, raw);
                if !safe {
                    w.insert(Dynamic::Substitution);
                }
                w
            }
            "command_substitution" | "process_substitution" => {
                self.substitution(node);
                Word::with(raw, Dynamic::Substitution)
            }
            "arithmetic_expansion" => {
                self.scan(node);
                let mut w = Word::with(raw, Dynamic::Arithmetic);
                if !self.arithmetic(node) {
                    w.insert(Dynamic::Substitution);
                }
                w
            }
            "brace_expression" => {
                let mut w = Word::unquoted(raw);
                self.note_braces(&mut w);
                w
            }
            "extglob_pattern" | "regex" => Word::with(raw, Dynamic::Glob),
            "special_variable_name" => Word::with(raw, Dynamic::Variable),
            "command_name" => match node.named_child(0) {
                Some(inner) => self.word(inner),
                None => Word::with(raw, Dynamic::Variable),
            },
            "ERROR" => {
                self.scan(node);
                Word::with(raw, Dynamic::Variable)
            }
            kind if is_expression(kind) => {
                // Expressions inside arithmetic, subscripts, arrays: scanned for commands.
                self.scan(node);
                Word::with(raw, Dynamic::Arithmetic)
            }
            _ => {
                self.visit(node);
                Word::with(raw, Dynamic::Substitution)
            }
        }
    }

    /// `$NAME`, `${NAME}`: bound when the script binds it once to static words.
    fn variable(&mut self, node: Node, raw: &str) -> Word {
        let simple_name = match node.kind_name() {
            "simple_expansion" => node
                .named_child(0)
                .filter(|n| n.kind_name() == "variable_name")
                .map(|n| self.text(n)),
            // `${NAME}` only: any operator (`${x:-...}`, `${x/a/b}`) makes it dynamic.
            _ if node.named_child_count() == 1 && raw.starts_with("${") => node
                .named_child(0)
                .filter(|n| {
                    n.kind_name() == "variable_name" && raw.len() == self.text(*n).len() + 3
                })
                .map(|n| self.text(n)),
            _ => None,
        };
        // `${NAME[N]}` and `${NAME[@]}` of an array bound once to static words: one
        // or all of its words, taken here as all of them (what they may be).
        let simple_name = simple_name.or_else(|| {
            let sub = node.named_child(0).filter(|n| {
                node.named_child_count() == 1
                    && n.kind_name() == "subscript"
                    && raw.len() == self.text(*n).len() + 3
                    && raw.starts_with("${")
            })?;
            let name = sub
                .child_by_field_name("name")
                .filter(|n| n.kind_name() == "variable_name")?;
            let index = self.text(sub.child_by_field_name("index")?);
            (index == "@" || (!index.is_empty() && index.bytes().all(|b| b.is_ascii_digit())))
                .then(|| self.text(name))
        });
        if let Some(values) = simple_name.and_then(|n| self.bindings.get(n)) {
            let mut w = Word::with(raw, Dynamic::Bound);
            w.values = values.clone();
            if let [Piece::Expansion(e)] = w.pieces.as_mut_slice() {
                e.values = values.clone();
                e.variable = simple_name.map(str::to_owned);
            }
            return w;
        }
        Word::with(raw, Dynamic::Variable)
    }
}

// Expansions.
impl Walker<'_> {
    /// Marks a word that holds a brace expression bash expands.
    fn note_braces(&mut self, w: &mut Word) {
        if !w.text.contains('{') {
            return;
        }
        if expand::has_braces(w) {
            w.dynamic.insert(Dynamic::Brace);
            self.out.features.insert(Feature::BraceExpansion);
        }
    }

    /// What a leading `~` stands for at this point of the script.
    pub(super) fn home(&self) -> Home<'_> {
        if !self.scope.sets_home {
            Home::Unset
        } else if let Some(values) = self.bindings.get("HOME") {
            Home::Bound(values)
        } else {
            Home::Dynamic
        }
    }

    /// The words bash makes of one word of a command or a `for` list: brace expansion first.
    pub(super) fn brace_fields(&mut self, w: Word) -> Vec<Word> {
        if !w.dynamic.contains(&Dynamic::Brace) {
            return vec![w];
        }
        match expand::braces(&w) {
            Ok(Some(fields)) => fields,
            Ok(None) => vec![w],
            Err(expand::TooMany) => {
                self.problem(format!(
                    "{:?} expands to more than {} words; it is not expanded",
                    w.text,
                    expand::MAX_FIELDS
                ));
                vec![w]
            }
        }
    }

    /// Sets [`Word::values`]: what tilde expansion, bound variables and word splitting make of
    /// the word, for path judgement. A part that cannot be known makes the word dynamic.
    pub(super) fn expand_values(&mut self, w: &mut Word, context: Context) {
        match expand::fields(w, context, self.home()) {
            Ok(Expanded::Same) => {}
            // Nothing at all (`$e` with `e` empty): one empty word, which names no path.
            Ok(Expanded::Fields(fields)) if fields.is_empty() => w.values = vec![Word::fixed("")],
            Ok(Expanded::Fields(fields)) => w.values = fields,
            Ok(Expanded::Unresolvable) => {
                w.values.clear();
                w.dynamic.insert(Dynamic::Variable);
            }
            Err(expand::TooMany) => {
                w.values.clear();
                self.problem(format!(
                    "{:?} expands to more than {} words; it is not expanded",
                    w.text,
                    expand::MAX_FIELDS
                ));
            }
        }
    }

    /// The words a variable holds after `NAME=value` (`array`: `NAME=(a b)`), or after each
    /// turn of `for NAME in WORDS` (`list`): each word as bash expands it there.
    pub(super) fn binding(&mut self, values: Vec<Word>, list: bool) -> Vec<Word> {
        let mut out = Vec::new();
        for value in values {
            let fields = if list {
                self.brace_fields(value)
            } else {
                vec![value]
            };
            for mut field in fields {
                let context = if list {
                    Context::Argument
                } else {
                    Context::Assignment
                };
                self.expand_values(&mut field, context);
                if field.values.is_empty() {
                    out.push(field);
                } else {
                    out.append(&mut field.values);
                }
            }
        }
        out
    }
}

impl Walker<'_> {
    /// The parts of a concatenation: its named children, and a `$` that stands for itself
    /// (`a$`; tree-sitter keeps it as an anonymous token) or for the shell's process id (`b$$`:
    /// one anonymous token `$$`). A `$` before a string is the `$"..."` of a translated string.
    fn parts(&mut self, node: Node) -> Vec<Word> {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        let mut out = Vec::with_capacity(children.len());
        for (i, child) in children.iter().enumerate() {
            if child.is_named() {
                out.push(self.word(*child));
            } else if child.kind_name() == "$"
                && !children.get(i + 1).is_some_and(|next| {
                    next.kind_name() == "string" && next.start_byte() == child.end_byte()
                })
            {
                out.push(dollar(self.text(*child)));
            }
        }
        out
    }

    /// The parts of a double-quoted string. Everything between the quotes that is not an
    /// expansion is text, whether tree-sitter made it a `string_content`, an anonymous token or
    /// nothing at all: it leaves a newline between two contents out of the tree (`"a<newline>b"`
    /// holds the contents `a` and `b`) and gives the blanks before the closing quote to that
    /// quote's token (`" "`), while bash keeps both. So the text is read from the source
    /// between the expansions, not from the contents.
    fn quoted_parts(&mut self, node: Node) -> Vec<Word> {
        let raw = self.text(node);
        let start = node.start_byte() + usize::from(raw.starts_with('"'));
        let end = node.end_byte() - usize::from(raw.len() > 1 && raw.ends_with('"'));
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        let mut out = Vec::with_capacity(children.len());
        let mut run = start;
        for child in children {
            let expansion = if child.is_named() {
                child.kind_name() != "string_content"
            } else {
                child.kind_name() == "$" && self.text(child) != "$"
            };
            if !expansion || child.start_byte() < run {
                continue;
            }
            if let Some(text) = self.src.get(run..child.start_byte())
                && !text.is_empty()
            {
                self.missed(text);
                out.push(Word::fixed(word::decode_double(text)));
            }
            out.push(if child.is_named() {
                self.word(child)
            } else {
                dollar(self.text(child))
            });
            run = child.end_byte();
        }
        if let Some(text) = self.src.get(run..end.max(run))
            && !text.is_empty()
        {
            self.missed(text);
            out.push(Word::fixed(word::decode_double(text)));
        }
        out
    }

    /// Text tree-sitter kept as plain text where bash expands (inside double quotes, an
    /// unquoted here-document body) must hold no expansion: one there is a `$(...)` or
    /// backtick the parse dropped, and bash runs it.
    pub(super) fn missed(&mut self, text: &str) {
        if let Some(at) = word::unexpanded(text) {
            self.problem(format!(
                "bash expands {at:?} where tree-sitter read plain text"
            ));
        }
    }
}

/// A bash variable name: a letter or `_`, then letters, digits and `_` (ASCII only).
pub(super) fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether `node` is part of the operand of a parameter expansion (`${v:+-p "$P"}`, `${v:- }`),
/// where blanks belong to the word.
fn in_expansion(node: Node) -> bool {
    let mut at = node.parent();
    while let Some(n) = at {
        match n.kind_name() {
            "expansion" => return true,
            "command" | "command_substitution" | "process_substitution" | "program" => {
                return false;
            }
            _ => at = n.parent(),
        }
    }
    false
}

/// True when unquoted text holds a blank no backslash escapes: bash ends a word there.
fn has_blank(raw: &str) -> bool {
    let mut escaped = false;
    for c in raw.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ' ' | '\t' | '\n' => return true,
            _ => {}
        }
    }
    false
}

/// An anonymous `$` token: itself, or `$$`, the shell's process id (tree-sitter gives `$$` at
/// the end of a word as one token).
pub(super) fn dollar(text: &str) -> Word {
    if text == "$" {
        Word::fixed("$")
    } else {
        Word::with(text, Dynamic::Variable)
    }
}
