//! Words: quote removal and what makes a word dynamic, evaluated where the word stands (a
//! substitution inside it is walked as statements); `NAME=value` assignments; and the
//! variables the script binds once to static words, which then stand for those words
//! ([`Dynamic::Bound`]).

use tree_sitter::Node;

use super::{Walker, is_expression};
use crate::shell::word::{self, Dynamic, Word};
use crate::shell::{Assignment, Feature};

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
        let values: Vec<Word> = match node.child_by_field_name("value") {
            Some(v) if v.kind() == "array" => {
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
        match node.kind() {
            "word" => {
                let mut w = Word::fixed(word::unquote(raw));
                if word::has_glob(raw) {
                    w.dynamic.insert(Dynamic::Glob);
                    self.out.features.insert(Feature::Glob);
                }
                if raw.starts_with('~') {
                    w.dynamic.insert(Dynamic::Tilde);
                    self.out.features.insert(Feature::Tilde);
                }
                if raw.contains('{')
                    && raw.contains('}')
                    && (raw.contains(',') || raw.contains(".."))
                {
                    w.dynamic.insert(Dynamic::Brace);
                    self.out.features.insert(Feature::BraceExpansion);
                }
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
            "string_content" => Word::fixed(word::decode_double(raw)),
            "string" | "translated_string" => {
                let mut w = Word::default();
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                let single = children.len() == 1;
                for child in children {
                    let part = self.word(child);
                    if single {
                        return part;
                    }
                    w.push(part);
                }
                w
            }
            "concatenation" => {
                let mut w = Word::default();
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                for (i, child) in children.into_iter().enumerate() {
                    let mut part = self.word(child);
                    if i > 0 {
                        // A `~` only expands at the start of a word.
                        part.dynamic.remove(&Dynamic::Tilde);
                    }
                    w.push(part);
                }
                let unquoted = raw;
                if unquoted.contains('{')
                    && unquoted.contains('}')
                    && (unquoted.contains(',') || unquoted.contains(".."))
                {
                    w.dynamic.insert(Dynamic::Brace);
                    self.out.features.insert(Feature::BraceExpansion);
                }
                w
            }
            "simple_expansion" | "expansion" => {
                self.scan(node);
                let safe = self.expansion_code(node);
                let mut w = self.variable(node, raw);
                if !safe {
                    w.dynamic.insert(Dynamic::Substitution);
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
                    w.dynamic.insert(Dynamic::Substitution);
                }
                w
            }
            "brace_expression" => Word::with(raw, Dynamic::Brace),
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
        let simple_name = match node.kind() {
            "simple_expansion" => node
                .named_child(0)
                .filter(|n| n.kind() == "variable_name")
                .map(|n| self.text(n)),
            // `${NAME}` only: any operator (`${x:-...}`, `${x/a/b}`) makes it dynamic.
            _ if node.named_child_count() == 1 && raw.starts_with("${") => node
                .named_child(0)
                .filter(|n| n.kind() == "variable_name" && raw.len() == self.text(*n).len() + 3)
                .map(|n| self.text(n)),
            _ => None,
        };
        if let Some(values) = simple_name.and_then(|n| self.bindings.get(n)) {
            let mut w = Word::with(raw, Dynamic::Bound);
            w.values = values.clone();
            return w;
        }
        Word::with(raw, Dynamic::Variable)
    }
}
