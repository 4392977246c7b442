//! The walk over a tree-sitter-bash tree: statements, simple commands, words, redirections.
//!
//! Every node kind the grammar can produce is either handled here or recorded as a problem.
//! Words are evaluated where they occur; a `$(...)`, backtick or `<(...)` inside any word,
//! expansion, arithmetic, subscript or heredoc is walked as statements in its own context, so a
//! command hidden there is found like any other. At the end the number of commands found is
//! checked against the tree's own count (`grammars/bash/commands.scm`).

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::word::{self, Dynamic, Word};
use super::{
    Analysis, Assignment, Command, DynamicWord, Feature, MAX_DEPTH, MAX_SCRIPT, Redirect,
    RedirectKind, hazards, parse, wrappers,
};

/// Words that cannot be a command name; seeing one there means tree-sitter misread the script.
const RESERVED: &[&str] = &[
    "{", "}", "then", "fi", "do", "done", "esac", "in", "elif", "else", "coproc", "function",
    "select", "until", "while", "for", "if", "case", "!", "[[", "]]",
];

/// Builtins whose arguments name variables they assign: such a variable is never bound.
const ASSIGNING: &[&str] = &[
    "read",
    "mapfile",
    "readarray",
    "getopts",
    "let",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "unset",
    "printf",
    "eval",
];

/// Analyses `script` at nesting `depth`, inside `context`.
pub(super) fn analyse(script: &str, depth: usize, context: &[String]) -> Analysis {
    let mut out = Analysis::default();
    if script.len() > MAX_SCRIPT {
        out.problems.push(format!(
            "the script is {} bytes; scripts over {MAX_SCRIPT} bytes are not analysed",
            script.len()
        ));
        return out;
    }
    if depth > MAX_DEPTH {
        out.problems.push(format!(
            "shells nested deeper than {MAX_DEPTH} are not analysed"
        ));
        return out;
    }
    let Some(mut tree) = parse::parse(script) else {
        out.problems.push("tree-sitter produced no tree".into());
        return out;
    };
    let joined = parse::join_continuations(script, &tree);
    let source: &str = match &joined {
        Some(joined) => match parse::parse(joined) {
            Some(t) => {
                tree = t;
                joined
            }
            None => {
                out.problems.push("tree-sitter produced no tree".into());
                return out;
            }
        },
        None => script,
    };
    let root = tree.root_node();
    let counted = parse::features_and_commands(&tree, source, &mut out.features);
    if root.has_error() {
        out.features.insert(Feature::ParseError);
        out.problems
            .push("the script does not parse as bash".into());
    }

    let mut walker = Walker {
        src: source,
        depth,
        context: context.to_vec(),
        out,
        bindable: bindable_names(root, source),
        bindings: HashMap::new(),
        stdin: HashMap::new(),
        visited: 0,
    };
    walker.visit(root);
    let visited = walker.visited;
    let mut out = walker.out;
    match counted {
        Some(n) if n == visited => {}
        Some(n) => out.problems.push(format!(
            "the walk reached {visited} of {n} commands; the rest are not understood"
        )),
        None => out.problems.push("the command query is unavailable".into()),
    }
    out
}

/// Names assigned exactly once in the whole script, by a standalone assignment or a `for`, and
/// never touched by a builtin that assigns, nor used as a bare word (arithmetic): only these
/// may be treated as bound to the words assigned.
fn bindable_names(root: Node, src: &str) -> HashSet<String> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut poisoned: HashSet<String> = HashSet::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "variable_assignment" | "for_statement" => {
                let field = if node.kind() == "for_statement" {
                    "variable"
                } else {
                    "name"
                };
                if let Some(name) = node.child_by_field_name(field) {
                    let name = text(name, src).to_owned();
                    *counts.entry(name).or_default() += 1;
                }
                if node.kind() == "variable_assignment"
                    && node.parent().is_some_and(|p| p.kind() == "command")
                {
                    // A prefix assignment (`X=1 cmd`) does not bind for the rest of the script.
                    if let Some(name) = node.child_by_field_name("name") {
                        poisoned.insert(text(name, src).to_owned());
                    }
                }
            }
            "word" => {
                poisoned.insert(text(node, src).to_owned());
            }
            "variable_name" => {
                let parent = node.parent().map(|p| p.kind()).unwrap_or("");
                if !matches!(
                    parent,
                    "variable_assignment" | "simple_expansion" | "expansion" | "for_statement"
                ) {
                    poisoned.insert(text(node, src).to_owned());
                }
            }
            "command" | "declaration_command" | "unset_command" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| text(n, src))
                    .unwrap_or_else(|| node.child(0).map(|c| text(c, src)).unwrap_or(""));
                if ASSIGNING.contains(&name) || node.kind() != "command" {
                    let mut cursor = node.walk();
                    for child in node.children(&mut cursor) {
                        let t = text(child, src);
                        poisoned.insert(t.split('=').next().unwrap_or(t).to_owned());
                    }
                }
            }
            _ => {}
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    counts
        .into_iter()
        .filter(|(name, n)| *n == 1 && !poisoned.contains(name))
        .map(|(name, _)| name)
        .collect()
}

/// The original text of a node. The tree was parsed from an ASCII copy with the same byte
/// offsets (see `parse::parse`); a boundary inside a multi-byte character cannot come from
/// bash's grammar, and would give the replacement character rather than a panic.
/// A node's children with their field names, read with one cursor pass (asking a node for the
/// field of its i-th child walks its children again each time).
fn fields<'t>(node: Node<'t>) -> Vec<(Option<&'t str>, Node<'t>)> {
    let mut out = Vec::with_capacity(node.child_count() as usize);
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

fn text<'s>(node: Node, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("\u{fffd}")
}

/// The walk's state.
pub(super) struct Walker<'s> {
    src: &'s str,
    depth: usize,
    context: Vec<String>,
    out: Analysis,
    bindable: HashSet<String>,
    bindings: HashMap<String, Vec<Word>>,
    /// What each command reads on stdin from a heredoc or herestring.
    stdin: HashMap<usize, Word>,
    visited: usize,
}

impl<'s> Walker<'s> {
    fn text(&self, node: Node) -> &'s str {
        text(node, self.src)
    }

    fn problem(&mut self, what: String) {
        if !self.out.problems.contains(&what) {
            self.out.problems.push(what);
        }
    }

    fn in_context<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        self.context.push(name.to_owned());
        let result = f(self);
        self.context.pop();
        result
    }

    /// Visits the named children of a statement container; in a sequence (not a pipeline),
    /// two or more statements chain.
    fn statements(&mut self, node: Node) {
        let mut cursor = node.walk();
        let mut statements = 0;
        for child in node.children(&mut cursor) {
            if child.is_named() {
                if child.kind() != "comment" {
                    statements += 1;
                }
                self.visit(child);
            }
        }
        if statements > 1 && node.kind() != "pipeline" {
            self.out.features.insert(Feature::Chain);
        }
    }

    /// Visits one node of any kind.
    fn visit(&mut self, node: Node) {
        match node.kind() {
            "program" | "do_group" | "elif_clause" | "else_clause" => self.statements(node),
            "command" => self.command(node, &[]),
            "redirected_statement" => self.redirected(node),
            "list" => self.in_context("list", |w| w.statements(node)),
            "pipeline" => self.in_context("pipeline", |w| w.statements(node)),
            "subshell" => self.in_context("subshell", |w| w.statements(node)),
            "compound_statement" => self.in_context("group", |w| w.statements(node)),
            "negated_command" => self.in_context("negation", |w| w.statements(node)),
            "if_statement" => self.in_context("if", |w| w.statements(node)),
            "while_statement" => self.in_context("loop", |w| w.statements(node)),
            "c_style_for_statement" => self.in_context("loop", |w| w.scan(node)),
            "for_statement" => self.for_loop(node),
            "case_statement" => self.in_context("case", |w| w.scan(node)),
            "case_item" => self.statements(node),
            "function_definition" => self.in_context("function", |w| w.scan(node)),
            "variable_assignment" => {
                let assignment = self.assignment(node);
                self.bind(&assignment.0, assignment.1);
                self.out.hazards.extend(hazards::env(&assignment.0, None));
            }
            "variable_assignments" => self.statements(node),
            "declaration_command" | "unset_command" => self.declaration(node),
            "test_command" => self.scan(node),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                self.redirect(node, None);
            }
            "command_substitution" | "process_substitution" => self.substitution(node),
            "comment" => {}
            "ERROR" => self.scan(node),
            kind if is_expression(kind) => {
                self.word(node);
            }
            kind => {
                self.problem(format!("unknown construct `{kind}`"));
                self.scan(node);
            }
        }
    }

    /// Visits every named child (words, expressions, nested statements) of a node.
    fn scan(&mut self, node: Node) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.is_named() {
                self.visit(child);
            }
        }
    }

    /// `$(...)`, backticks, `<(...)`, `>(...)`: their statements, in their own context.
    fn substitution(&mut self, node: Node) {
        let name = if node.kind() == "process_substitution" {
            "process_substitution"
        } else {
            "substitution"
        };
        self.in_context(name, |w| w.statements(node));
    }

    /// `for NAME in WORDS; do ...; done` (and `select`): binds NAME when it may be bound.
    fn for_loop(&mut self, node: Node) {
        let mut values = Vec::new();
        for (field, child) in fields(node) {
            if field == Some("value") {
                values.push(self.word(child));
            }
        }
        if let Some(var) = node.child_by_field_name("variable") {
            let name = self.text(var).to_owned();
            if !values.is_empty() && values.iter().all(Word::depends_on_static) {
                self.bind(&name, values);
            }
        }
        if let Some(body) = node.child_by_field_name("body") {
            self.in_context("loop", |w| w.visit(body));
        }
    }

    fn bind(&mut self, name: &str, values: Vec<Word>) {
        if self.bindable.contains(name) && values.iter().all(Word::depends_on_static) {
            self.bindings.insert(name.to_owned(), values);
        }
    }

    /// A `NAME=value` assignment: its name, its value as words, and the record.
    fn assignment(&mut self, node: Node) -> (String, Vec<Word>, Assignment) {
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

/// The node kinds that are words or expressions (evaluated, scanned for substitutions).
fn is_expression(kind: &str) -> bool {
    matches!(
        kind,
        "word"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "arithmetic_expansion"
            | "number"
            | "brace_expression"
            | "extglob_pattern"
            | "regex"
            | "binary_expression"
            | "unary_expression"
            | "ternary_expression"
            | "postfix_expression"
            | "parenthesized_expression"
            | "subscript"
            | "array"
            | "variable_name"
            | "special_variable_name"
            | "string_content"
            | "test_operator"
            | "file_descriptor"
            | "heredoc_body"
            | "heredoc_content"
            | "heredoc_start"
            | "heredoc_end"
            | "command_name"
    )
}

// Commands, declarations and redirections.
impl Walker<'_> {
    /// `body redirect...`: a command body gets its redirections before its wrappers are read
    /// (a heredoc may be the script a shell runs).
    fn redirected(&mut self, node: Node) {
        let mut redirects = Vec::new();
        for (field, child) in fields(node) {
            if field == Some("redirect") || child.kind().ends_with("_redirect") {
                redirects.push(child);
            }
        }
        match node.child_by_field_name("body") {
            Some(body) if body.kind() == "command" => self.command(body, &redirects),
            Some(body) => {
                self.visit(body);
                for r in redirects {
                    self.redirect(r, None);
                }
            }
            None => {
                for r in redirects {
                    self.redirect(r, None);
                }
            }
        }
    }

    /// One simple command, with the redirections around it.
    fn command(&mut self, node: Node, outer_redirects: &[Node]) {
        self.visited += 1;
        let mut words = Vec::new();
        let mut assignments = Vec::new();
        let mut redirects: Vec<Node> = Vec::new();
        for (field, child) in fields(node) {
            match field {
                Some("name") => {
                    let word = match child.named_child(0) {
                        Some(inner) => self.word(inner),
                        None => Word::with(self.text(child), Dynamic::Variable),
                    };
                    words.push(word);
                }
                // `$"..."` parses as an anonymous `$` then a string: the `$` is not a word.
                Some("argument") if !child.is_named() => {}
                Some("argument") => words.push(self.word(child)),
                Some("redirect") => redirects.push(child),
                _ if child.kind() == "variable_assignment" => {
                    assignments.push(self.assignment(child).2);
                }
                _ if child.kind().ends_with("_redirect") => redirects.push(child),
                _ if child.is_named() => self.visit(child),
                _ => {}
            }
        }
        let index = self.push(words, assignments);
        for r in redirects.into_iter().chain(outer_redirects.iter().copied()) {
            self.redirect(r, Some(index));
        }
        wrappers::unwrap(self, index);
    }

    /// Records a command; returns its index.
    pub(super) fn push(&mut self, words: Vec<Word>, assignments: Vec<Assignment>) -> usize {
        let index = self.out.commands.len();
        match words.first() {
            None => self.problem("a command without a name".into()),
            Some(name) if !name.is_static() => {
                self.out.features.insert(Feature::DynamicCommand);
                self.problem(format!(
                    "the command name {:?} is not static: what runs is decided at run time",
                    name.text
                ));
            }
            Some(name) if RESERVED.contains(&name.text.as_str()) => {
                self.problem(format!(
                    "the reserved word {:?} stands where a command should: the script is misread",
                    name.text
                ));
            }
            Some(_) => {}
        }
        if !assignments.is_empty() {
            self.out.features.insert(Feature::Assignment);
        }
        for a in &assignments {
            self.out.hazards.extend(hazards::env(&a.name, Some(index)));
        }
        let dynamic = words
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.is_static())
            .map(|(i, w)| DynamicWord {
                word: i,
                kinds: w.dynamic.iter().copied().collect(),
            })
            .collect();
        self.out.commands.push(Command {
            argv: words.iter().map(|w| w.text.clone()).collect(),
            dynamic,
            assignments,
            context: self.context.clone(),
            parent: None,
            wrapper: false,
            words,
        });
        index
    }

    /// `export A=b`, `local x`, `declare -x`, `readonly`, `unset`: a builtin command whose
    /// assignments are checked like any other.
    fn declaration(&mut self, node: Node) {
        let mut words = Vec::new();
        let mut assignments = Vec::new();
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children {
            if !child.is_named() {
                words.push(Word::fixed(self.text(child)));
            } else if child.kind() == "variable_assignment" {
                let (_, values, record) = self.assignment(child);
                let mut word = Word::fixed(format!("{}=", record.name));
                for v in values {
                    word.push(v);
                }
                words.push(word);
                assignments.push(record);
            } else {
                words.push(self.word(child));
            }
        }
        for a in &assignments {
            self.out.hazards.extend(hazards::env(&a.name, None));
        }
        if !assignments.is_empty() {
            self.out.features.insert(Feature::Assignment);
        }
        self.push(words, Vec::new());
    }

    /// One redirection node; `command` is the simple command it applies to, if any.
    fn redirect(&mut self, node: Node, command: Option<usize>) {
        match node.kind() {
            "heredoc_redirect" => self.heredoc(node, command),
            "herestring_redirect" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                let mut body = Word::default();
                for child in children {
                    if child.kind() != "file_descriptor" {
                        body.push(self.word(child));
                    }
                }
                self.out.redirects.push(Redirect {
                    op: "<<<".into(),
                    fd: None,
                    target: None,
                    is_static: body.is_static(),
                    kind: RedirectKind::Herestring,
                    command,
                });
                if let Some(c) = command {
                    self.stdin.insert(c, body);
                }
            }
            _ => self.file_redirect(node, command),
        }
    }

    fn file_redirect(&mut self, node: Node, command: Option<usize>) {
        let fd = node
            .child_by_field_name("descriptor")
            .map(|d| self.text(d).to_owned());
        let mut op = String::new();
        let mut target = Word::default();
        let mut has_target = false;
        for (field, child) in fields(node) {
            match field {
                Some("destination") => {
                    target.push(self.word(child));
                    has_target = true;
                }
                Some("descriptor") => {}
                _ if !child.is_named() => op.push_str(self.text(child)),
                _ => self.visit(child),
            }
        }
        let text = target.text.clone();
        let duplicate = matches!(op.as_str(), ">&" | "<&" | ">&-" | "<&-")
            && target.is_static()
            && (text.is_empty() || text == "-" || text.bytes().all(|b| b.is_ascii_digit()));
        let kind = if duplicate || !has_target {
            RedirectKind::Duplicate
        } else if target.is_static() && is_device(&text) {
            RedirectKind::Device
        } else if target.is_static()
            && (text.starts_with("/dev/tcp/") || text.starts_with("/dev/udp/"))
        {
            self.out.features.insert(Feature::NetworkRedirect);
            self.out
                .hazards
                .push(hazards::network_redirect(&op, &text, command));
            RedirectKind::Network
        } else {
            match op.as_str() {
                "<" => RedirectKind::Read,
                ">>" | "&>>" => RedirectKind::Append,
                "<>" => RedirectKind::ReadWrite,
                _ => RedirectKind::Write,
            }
        };
        match kind {
            RedirectKind::Read => {
                self.out.features.insert(Feature::RedirectRead);
            }
            RedirectKind::Write | RedirectKind::Append | RedirectKind::ReadWrite => {
                self.out.features.insert(Feature::RedirectWrite);
            }
            _ => {}
        }
        if !target.is_static() && kind != RedirectKind::Duplicate {
            self.out
                .hazards
                .push(hazards::dynamic_redirect(&op, &text, command));
        }
        self.out.redirects.push(Redirect {
            op,
            fd,
            target: has_target.then_some(text),
            is_static: target.is_static(),
            kind,
            command,
        });
    }

    fn heredoc(&mut self, node: Node, command: Option<usize>) {
        let mut quoted = false;
        let mut body = Word::default();
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "heredoc_start" => {
                    quoted = self.text(child).contains(['\'', '"', '\\']);
                }
                "heredoc_body" => {
                    body = Word::fixed(self.text(child));
                    if !quoted {
                        let mut c = child.walk();
                        let parts: Vec<Node> = child.named_children(&mut c).collect();
                        for part in parts {
                            if part.kind() != "heredoc_content" {
                                let w = self.word(part);
                                body.dynamic.extend(w.dynamic);
                            }
                        }
                    }
                }
                "heredoc_end" | "<<" | "<<-" => {}
                _ if child.is_named() => self.visit(child),
                _ => {}
            }
        }
        self.out.redirects.push(Redirect {
            op: "<<".into(),
            fd: None,
            target: None,
            is_static: body.is_static(),
            kind: RedirectKind::Heredoc,
            command,
        });
        if let Some(c) = command {
            self.stdin.insert(c, body);
        }
    }
}

/// Device files that are harmless to redirect to or from.
fn is_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/stdin"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/zero"
            | "/dev/tty"
            | "/dev/random"
            | "/dev/urandom"
            | "/dev/full"
    ) || path
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
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
                self.variable(node, raw)
            }
            "command_substitution" | "process_substitution" => {
                self.substitution(node);
                Word::with(raw, Dynamic::Substitution)
            }
            "arithmetic_expansion" => {
                self.scan(node);
                Word::with(raw, Dynamic::Arithmetic)
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

// What `wrappers` needs from the walker.
impl Walker<'_> {
    /// The analysis so far.
    pub(super) fn analysis(&mut self) -> &mut Analysis {
        &mut self.out
    }

    /// What command `index` reads on stdin from a heredoc or herestring, if anything.
    pub(super) fn stdin(&self, index: usize) -> Option<&Word> {
        self.stdin.get(&index)
    }

    /// Analyses a script found inside a command (`bash -c`, `env -S`, `watch`): its commands
    /// become inner commands of `parent`.
    pub(super) fn nested(&mut self, parent: usize, script: &str, how: &str) {
        let mut context = self.context.clone();
        context.push(how.to_owned());
        let inner = analyse(script, self.depth + 1, &context);
        self.out.features.insert(Feature::NestedShell);
        let offset = self.out.commands.len();
        for mut c in inner.commands {
            c.parent = Some(c.parent.map_or(parent, |p| p + offset));
            self.out.commands.push(c);
        }
        for mut r in inner.redirects {
            r.command = r.command.map(|c| c + offset);
            self.out.redirects.push(r);
        }
        for mut h in inner.hazards {
            h.command = h.command.map(|c| c + offset);
            self.out.hazards.push(h);
        }
        self.out.features.extend(inner.features);
        for p in inner.problems {
            self.problem(format!("in `{how}`: {p}"));
        }
    }

    /// Records an inner command of `parent` (a wrapper's argv tail), then reads its wrappers.
    pub(super) fn inner(
        &mut self,
        parent: usize,
        words: Vec<Word>,
        assignments: Vec<Assignment>,
        how: &str,
    ) {
        let mut context = self.context.clone();
        context.push(how.to_owned());
        let saved = std::mem::replace(&mut self.context, context);
        let index = self.push(words, assignments);
        self.context = saved;
        self.out.commands[index].parent = Some(parent);
        self.out.features.insert(Feature::Wrapper);
        wrappers::unwrap(self, index);
    }
}
