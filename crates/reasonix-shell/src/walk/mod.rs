//! The walk over a tree-sitter-bash tree: it owns the [`Walker`], [`analyse`] (parse, walk,
//! check the count), the statements (lists, pipelines, compound commands, loops, functions) and
//! the simple commands and declarations they hold.
//!
//! Every node kind the grammar can produce is either handled by the walk or recorded as a
//! problem. The walk is one recursive descent split by node family: redirections in
//! [`redirects`], words, variables and bindings in [`words`], and what a wrapper runs in
//! [`inner`]. Words are evaluated where they occur; a `$(...)`, backtick or `<(...)` inside any
//! word, expansion, arithmetic, subscript or heredoc is walked as statements in its own context,
//! so a command hidden there is found like any other. Before the walk, [`scope`] reads what the
//! script assigns; during it, [`expand`] performs bash's expansions of static text (braces into
//! argv words, the paths each word may name), [`arith`] checks every place bash evaluates
//! arithmetic, and [`builtins`] says which operands of `read`, `mapfile`, `printf -v` and
//! `getopts` name variables. At the end the number of commands found is checked against the
//! tree's own count of `command` nodes (`parse::Census`, taken in the scope pass), and any text
//! tree-sitter left out of the tree makes the script not understood.

mod arith;
mod builtins;
mod dialect;
mod expand;
mod inner;
mod redirects;

pub(crate) use redirects::is_device;
mod scope;
mod state;
mod words;

use crate::parse::KindName;
use std::collections::HashMap;

use tree_sitter::Node;

use super::word::{Dynamic, Piece, Word};
use super::{
    Analysis, Assignment, Command, DynamicWord, Feature, Hazard, MAX_DEPTH, MAX_NESTING,
    MAX_SCRIPT, environment, parse,
};

/// Words that cannot be a command name; seeing one there means tree-sitter misread the script.
const RESERVED: &[&str] = &[
    "{", "}", "then", "fi", "do", "done", "esac", "in", "elif", "else", "coproc", "function",
    "select", "until", "while", "for", "if", "case", "!", "[[", "]]",
];

/// Analyses `script` at nesting `depth`, inside `context`; its syntax tree may be at most
/// `levels` deep (what [`MAX_NESTING`] leaves after the scripts around it). `posix`: the script
/// is run by `sh`, and must read alike under bash and dash ([`dialect`]).
pub(super) fn analyse(
    script: &str,
    depth: usize,
    levels: usize,
    context: &[String],
    posix: bool,
) -> Analysis {
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
    if root.has_error() {
        out.features.insert(Feature::ParseError);
        out.problems
            .push("the script does not parse as bash".into());
    }

    // The scope pass reads every node once, and takes the features and the command count too.
    let mut census = parse::Census::new(&mut out.features);
    let scope = scope::scope(root, source, &mut census);
    let counted = census.commands;
    // The walk recurses along the tree, and a nested script's walk on top of it: deeper, it
    // would overflow the stack.
    if scope.deepest > levels {
        out.problems.push(format!(
            "the script nests {} levels of syntax deep, with the shells around it {}; deeper \
             than {MAX_NESTING} is not analysed",
            scope.deepest,
            MAX_NESTING - levels + scope.deepest
        ));
        return out;
    }
    let mut walker = Walker {
        src: source,
        depth,
        levels: levels - scope.deepest,
        context: context.to_vec(),
        out,
        scope,
        bindings: HashMap::new(),
        stdin: HashMap::new(),
        consumed: Vec::new(),
        visited: 0,
        posix,
    };
    walker.integers();
    walker.initial_state();
    walker.visit(root);
    if posix {
        walker.posix_reading(root);
    }
    let mut leaves = std::mem::take(&mut walker.scope.leaves);
    for (at, token) in parse::uncovered(source, &mut leaves) {
        if !walker.consumed.contains(&at) {
            walker.problem(format!(
                "tree-sitter left {token:?} out of the tree, where bash reads it"
            ));
        }
    }
    let visited = walker.visited;
    let mut out = walker.out;
    if counted != visited {
        out.problems.push(format!(
            "the walk reached {visited} of {counted} commands; the rest are not understood"
        ));
    }
    out
}

/// A node's children with their field names, read with one cursor pass (asking a node for the
/// field of its i-th child walks its children again each time).
fn fields(node: Node<'_>) -> Fields<'_> {
    Fields {
        cursor: node.walk(),
        started: false,
    }
}

/// The iterator [`fields`] returns.
struct Fields<'t> {
    cursor: tree_sitter::TreeCursor<'t>,
    started: bool,
}

impl<'t> Iterator for Fields<'t> {
    type Item = (Option<&'static str>, Node<'t>);

    fn next(&mut self) -> Option<Self::Item> {
        let moved = if self.started {
            self.cursor.goto_next_sibling()
        } else {
            self.started = true;
            self.cursor.goto_first_child()
        };
        moved.then(|| (parse::field_name(&self.cursor), self.cursor.node()))
    }
}

/// The original text of a node. The tree was parsed from an ASCII copy with the same byte
/// offsets (see `parse::parse`); a boundary inside a multi-byte character cannot come from
/// bash's grammar, and would give the replacement character rather than a panic.
fn text<'s>(node: Node, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or("\u{fffd}")
}

/// The walk's state.
struct Walker<'s> {
    src: &'s str,
    depth: usize,
    /// How deep a script nested in this one may go: [`MAX_NESTING`] less the depth of this
    /// script's tree and of those around it.
    levels: usize,
    context: Vec<String>,
    out: Analysis,
    /// What the script assigns ([`scope::scope`]).
    scope: scope::Scope,
    /// What each bound variable stands for.
    bindings: HashMap<String, Vec<Word>>,
    /// What each command reads on stdin from a heredoc or herestring.
    stdin: HashMap<usize, Word>,
    /// Where the walk took text tree-sitter left out of the tree as words (`skipped`).
    consumed: Vec<usize>,
    visited: usize,
    /// The script is run by `sh` ([`dialect`]).
    posix: bool,
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
}

// Statements.
impl Walker<'_> {
    /// Visits the named children of a statement container; in a sequence (not a pipeline),
    /// two or more statements chain.
    fn statements(&mut self, node: Node) {
        let mut cursor = node.walk();
        let mut statements = 0;
        for child in node.children(&mut cursor) {
            if child.is_named() {
                if child.kind_name() != "comment" {
                    statements += 1;
                }
                self.visit(child);
            }
        }
        if statements > 1 && node.kind_name() != "pipeline" {
            self.out.features.insert(Feature::Chain);
        }
    }

    /// Visits one node of any kind.
    fn visit(&mut self, node: Node) {
        match node.kind_name() {
            "program" | "do_group" | "elif_clause" | "else_clause" => self.statements(node),
            "command" => self.command(node, &[]),
            "redirected_statement" => self.redirected(node),
            "list" => self.in_context("list", |w| w.statements(node)),
            "pipeline" => self.in_context("pipeline", |w| w.statements(node)),
            "subshell" => self.in_context("subshell", |w| w.statements(node)),
            "compound_statement" => {
                if node.child(0).is_some_and(|c| c.kind_name() == "((") {
                    self.arithmetic(node);
                }
                self.reserved_words_apart(node, &["{", "}"]);
                self.in_context("group", |w| w.statements(node))
            }
            "negated_command" => {
                // `!{x`: a program named `!{x` to bash.
                self.reserved_words_apart(node, &["!"]);
                self.in_context("negation", |w| w.statements(node))
            }
            "if_statement" => self.in_context("if", |w| w.statements(node)),
            "while_statement" => self.in_context("loop", |w| w.statements(node)),
            "c_style_for_statement" => {
                self.arithmetic(node);
                self.in_context("loop", |w| w.scan(node))
            }
            "for_statement" => self.for_loop(node),
            "case_statement" => self.in_context("case", |w| w.scan(node)),
            "case_item" => self.statements(node),
            "function_definition" => self.in_context("function", |w| w.scan(node)),
            "variable_assignment" => {
                let (name, values, record) = self.assignment(node);
                let array = node
                    .child_by_field_name("value")
                    .is_some_and(|v| v.kind_name() == "array");
                let values = self.binding(values, array);
                self.bind(&name, values);
                let hazards = self.set_variable(&record, None);
                self.out.hazards.extend(hazards);
            }
            "variable_assignments" => self.statements(node),
            "declaration_command" | "unset_command" => self.declaration(node),
            "test_command" => {
                self.reserved_words_apart(node, &["[", "[[", "]", "]]"]);
                self.test_expression(node);
                self.scan(node)
            }
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

    /// `{`, `}`, `[[`, `]]`, `!` (and the `[`, `]` of a test) are words of their own to bash only
    /// when a metacharacter or the end of the script follows (here also the backtick that ends
    /// a substitution): `{}` runs a program named `{}`, `[a]` is a glob whose match runs.
    /// tree-sitter takes them for a group or a test all the same, so one glued to what follows
    /// is not understood.
    fn reserved_words_apart(&mut self, node: Node, tokens: &[&str]) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.is_named() || !tokens.contains(&child.kind_name()) {
                continue;
            }
            let next = self.src.as_bytes().get(child.end_byte());
            if next.is_some_and(|b| !b" \t\n|&;()<>`".contains(b)) {
                self.problem(format!(
                    "`{}` glued to what follows is a word to bash, not a reserved word",
                    self.text(child)
                ));
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
    ///
    /// Inside backticks bash first removes the backslash before `$`, `` ` `` and `\` (and
    /// before `"` when the backticks are inside double quotes), then parses what is left:
    /// ``echo `echo \`rm x\``` `` runs `rm x`. tree-sitter parses the text as written, so a
    /// backtick body holding a backslash is analysed again from that text, one level deeper,
    /// and the tree's own reading of it is set aside.
    fn substitution(&mut self, node: Node) {
        let name = if node.kind_name() == "process_substitution" {
            "process_substitution"
        } else {
            "substitution"
        };
        let raw = self.text(node);
        if let Some(body) = raw.strip_prefix('`').and_then(|r| r.strip_suffix('`'))
            && body.contains('\\')
        {
            let in_quotes = in_double_quotes(node);
            let script = backtick_body(body, in_quotes);
            self.visited += count_commands(node);
            self.reread(None, &script, name);
            return;
        }
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
        let values = self.binding(values, true);
        if let Some(var) = node.child_by_field_name("variable") {
            let name = self.text(var).to_owned();
            let hazards = self.shell_variable(&name, None);
            self.out.hazards.extend(hazards);
            if !values.is_empty() && values.iter().all(Word::depends_on_static) {
                self.bind(&name, values);
            }
        }
        if let Some(body) = node.child_by_field_name("body") {
            self.in_context("loop", |w| w.visit(body));
        }
    }
}

/// What bash parses of a backtick substitution's body: the backslash removed before `$`, `` ` ``
/// and `\`, and before `"` when the backticks stand inside double quotes; kept before anything
/// else.
fn backtick_body(body: &str, in_quotes: bool) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && (matches!(next, '$' | '`' | '\\') || (in_quotes && next == '"'))
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether `node` stands inside double quotes (`"a `x` b"`, `"${v:-`x`}"`), looking up to the
/// nearest substitution, heredoc or the script itself.
fn in_double_quotes(node: Node) -> bool {
    let mut at = node.parent();
    while let Some(n) = at {
        match n.kind_name() {
            "string" => return true,
            "command_substitution" | "process_substitution" | "heredoc_body" | "program" => {
                return false;
            }
            _ => at = n.parent(),
        }
    }
    false
}

/// Whether a command name as written is an assignment to bash: `NAME=`, `NAME+=` or
/// `NAME[...]=` with NAME a variable name, unquoted.
fn looks_assigned(raw: &str) -> bool {
    let name_end = raw
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(raw.len());
    let (name, rest) = raw.split_at(name_end);
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once(']').map_or("", |(_, after)| after),
        None => rest,
    };
    words::is_name(name) && (rest.starts_with('=') || rest.starts_with("+="))
}

/// The last token of a subtree.
fn last_leaf(node: Node) -> Option<Node> {
    let mut at = node;
    while at.child_count() > 0 {
        at = at.child(at.child_count() - 1)?;
    }
    Some(at)
}

/// How many simple-command nodes a subtree holds (what the command query counts in it).
fn count_commands(node: Node) -> usize {
    let mut count = 0;
    let mut cursor = node.walk();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        count += usize::from(n.kind_name() == "command");
        stack.extend(n.children(&mut cursor));
    }
    count
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

// Simple commands and declarations.
impl Walker<'_> {
    /// `body redirect...`: a command body gets its redirections before its wrappers are read
    /// (a heredoc may be the script a shell runs).
    fn redirected(&mut self, node: Node) {
        let mut redirects = Vec::new();
        for (field, child) in fields(node) {
            if field == Some("redirect") || child.kind_name().ends_with("_redirect") {
                redirects.push(child);
            }
        }
        match node.child_by_field_name("body") {
            Some(body) if body.kind_name() == "command" => self.command(body, &redirects),
            Some(body) => {
                // The last word of the body, glued to the redirection (`a | b 0< f`, `a && b
                // {PATH}>&2`): bash reads it as the descriptor of a redirection of the last
                // command, tree-sitter as a word.
                let tail = self
                    .text(body)
                    .rsplit(|c: char| c.is_ascii_whitespace())
                    .next()
                    .unwrap_or("");
                if redirects.first().is_some_and(|r| {
                    r.start_byte() == body.end_byte()
                        && r.child_by_field_name("descriptor").is_none()
                        && (last_leaf(body).is_some_and(|leaf| {
                            leaf.is_named() && redirects::is_descriptor(self.text(leaf))
                        }) || redirects::is_descriptor(tail))
                }) {
                    // `a | b 0< f`: the `0` tree-sitter gave to `b` is the descriptor of a
                    // redirection it gave to the whole pipeline.
                    self.problem(format!(
                        "tree-sitter split the redirection at {:?}",
                        self.text(node)
                    ));
                }
                self.visit(body);
                for r in redirects {
                    let dash_word = redirects::closes(r, self.src) == redirects::Close::Dash
                        && r.child_by_field_name("destination")
                            .is_some_and(|d| self.text(d) != "-");
                    if dash_word || !redirects::extra_words(r, self.src).is_empty() {
                        // `{ ls; } > out extra`: bash refuses the script.
                        self.problem(format!(
                            "words after the redirection `{}` of a compound command: bash refuses this",
                            self.text(r)
                        ));
                    }
                    self.redirect(r, None);
                }
            }
            None => {
                // `> out 2>&1 ls -la`: tree-sitter files the command's words under the last
                // redirection; bash runs them.
                let mut words = Vec::new();
                for r in &redirects {
                    words.extend(self.redirect_arguments(*r));
                }
                if words.is_empty() {
                    for r in redirects {
                        self.redirect(r, None);
                    }
                } else {
                    let assigns = words[0].text.split_once('=').is_some_and(|(name, _)| {
                        words::is_name(name.strip_suffix('+').unwrap_or(name)) || name.contains('[')
                    });
                    if assigns {
                        // `> out a=1 ls`: an assignment or a command name; not read here.
                        self.problem(format!(
                            "the words after `{}` are not understood",
                            self.text(node)
                        ));
                    }
                    self.simple(words, Vec::new(), redirects);
                }
            }
        }
    }

    /// One simple command, with the redirections around it. Words that tree-sitter files under
    /// a redirection (`cmd <in a b`: `a` and `b`) are arguments of the command, in their place.
    fn command(&mut self, node: Node, outer_redirects: &[Node]) {
        self.visited += 1;
        let mut words = Vec::new();
        let mut assignments = Vec::new();
        let mut redirects: Vec<Node> = Vec::new();
        let mut end = node.start_byte();
        let children: Vec<_> = fields(node).collect();
        for (i, &(field, child)) in children.iter().enumerate() {
            if i > 0
                && child.start_byte() == end
                && matches!(field, Some("argument" | "name"))
                && children[i - 1].1.kind_name() != "$"
            {
                // Two words with nothing between them are one word to bash: tree-sitter split
                // it (`"$a"/$b/c`, where it loses the `$`).
                self.problem(format!(
                    "tree-sitter split the word at {:?} in two",
                    self.text(child)
                ));
            }
            words.extend(self.skipped(end, child.start_byte()));
            end = child.end_byte();
            match field {
                Some("name") => {
                    if looks_assigned(self.text(child)) {
                        // `_=x rm -rf /`: tree-sitter takes the assignment to `_` for the
                        // command's name; bash assigns and runs `rm`.
                        self.problem(format!(
                            "tree-sitter took the assignment {:?} for a command name",
                            self.text(child)
                        ));
                    }
                    let word = match child.named_child(0) {
                        Some(inner) => self.word(inner),
                        None => Word::with(self.text(child), Dynamic::Variable),
                    };
                    words.push(word);
                }
                // `$"..."` parses as an anonymous `$` then a string: the `$` is not a word.
                Some("argument")
                    if !child.is_named()
                        && self.text(child) == "$"
                        && children.get(i + 1).is_some_and(|(_, next)| {
                            next.kind_name() == "string" && next.start_byte() == child.end_byte()
                        }) => {}
                Some("argument") if !child.is_named() && child.kind_name() == "$" => {
                    words.push(words::dollar(self.text(child)));
                }
                Some("argument") if !child.is_named() => {
                    words.push(Word::fixed(self.text(child)));
                }
                Some("argument") => words.push(self.word(child)),
                Some("redirect") => {
                    if i > 0 && self.names_descriptor(children[i - 1], child) {
                        words.pop();
                        self.descriptor_variable(children[i - 1].1);
                    }
                    redirects.push(child);
                    words.extend(self.redirect_arguments(child));
                }
                _ if child.kind_name() == "variable_assignment" => {
                    assignments.push(self.assignment(child).2);
                }
                _ if child.kind_name().ends_with("_redirect") => {
                    redirects.push(child);
                    words.extend(self.redirect_arguments(child));
                }
                _ if child.is_named() => self.visit(child),
                _ => {}
            }
        }
        for (i, r) in outer_redirects.iter().enumerate() {
            if i == 0
                && let Some(&last) = children.last()
                && self.names_descriptor(last, *r)
            {
                words.pop();
                self.descriptor_variable(last.1);
            }
            words.extend(self.skipped(end, r.start_byte()));
            end = r.end_byte();
            words.extend(self.redirect_arguments(*r));
        }
        redirects.extend(outer_redirects);
        self.simple(words, assignments, redirects);
    }

    /// Whether `before`, an argument glued to the redirection `redirect`, is its descriptor:
    /// digits (`-v 0< f`) or the `{NAME}` that names a new one (`ls {fd}>&2`), which
    /// tree-sitter took for a word.
    fn names_descriptor(&self, before: (Option<&str>, Node), redirect: Node) -> bool {
        let (field, node) = before;
        field == Some("argument")
            && matches!(node.kind_name(), "word" | "concatenation" | "number")
            && node.end_byte() == redirect.start_byte()
            && redirect.child_by_field_name("descriptor").is_none()
            && redirects::is_descriptor(self.text(node))
    }

    /// `{NAME}>file` sets the shell variable NAME to the new descriptor's number (`{PATH}>&2`
    /// changes where commands are found): checked as any variable the script sets.
    fn descriptor_variable(&mut self, node: Node) {
        let Some(name) = self
            .text(node)
            .strip_prefix('{')
            .and_then(|n| n.strip_suffix('}'))
        else {
            return;
        };
        let hazards = self.shell_variable(name, None);
        self.out.hazards.extend(hazards);
    }

    /// Records a simple command from its words, assignments and redirections.
    fn simple(&mut self, words: Vec<Word>, assignments: Vec<Assignment>, redirects: Vec<Node>) {
        // Brace expansion makes words of argv, as it does for the program; the other expansions
        // make each word's values, the paths it may name.
        let mut argv = Vec::with_capacity(words.len());
        for (i, w) in words.into_iter().enumerate() {
            if i == 0 {
                argv.push(w);
                continue;
            }
            for mut field in self.brace_fields(w) {
                self.expand_values(&mut field, expand::Context::Argument);
                argv.push(field);
            }
        }
        let words = argv;
        self.time_keyword(&words);
        let index = self.push(words, assignments);
        for r in redirects {
            self.redirect(r, Some(index));
        }
        self.filled_variables(index);
        self.builtin_operands(index, false);
        self.exported(index);
        self.shell_state(index);
        self.unwrap(index);
    }

    /// bash's `time` keyword (the word `time`, unquoted, where a pipeline starts) takes only
    /// `-p`, then `--`: in `time -o f make` it times a command named `-o`. tree-sitter and the
    /// wrapper table read `/usr/bin/time`, whose `-o f` writes `f`, as bash also does after a
    /// `|` or in POSIX mode. Both run the same command unless an option other than `-p`
    /// follows, which is then not understood.
    fn time_keyword(&mut self, words: &[Word]) {
        let keyword = |w: &Word, text: &str| matches!(w.pieces.as_slice(), [Piece::Unquoted(raw)] if raw == text);
        if !words.first().is_some_and(|w| keyword(w, "time")) {
            return;
        }
        let mut rest = words.iter().skip_while(|w| keyword(w, "time")).peekable();
        if rest.peek().is_some_and(|w| keyword(w, "-p")) {
            rest.next();
        }
        if rest.peek().is_some_and(|w| keyword(w, "--")) {
            rest.next();
        }
        if let Some(option) = rest.next().filter(|w| w.text.starts_with('-')) {
            self.problem(format!(
                "`time {}`: bash's `time` keyword runs {:?} as a command, /usr/bin/time reads it as an option",
                option.text, option.text
            ));
        }
    }

    /// The words of a command that tree-sitter filed under one of its redirections (or took for
    /// its descriptor).
    fn redirect_arguments(&mut self, node: Node) -> Vec<Word> {
        let mut out = Vec::new();
        if let Some(fd) = node.child_by_field_name("descriptor")
            && !redirects::is_descriptor(self.text(fd))
        {
            // `head -5>out`: tree-sitter takes `-5` for the descriptor; bash passes the word
            // `-5`, then redirects stdout.
            out.push(Word::unquoted(self.text(fd)));
        }
        if redirects::closes(node, self.src) == redirects::Close::Dash
            && let Some(rest) = self.after_dash(node)
        {
            out.push(rest);
        }
        for w in redirects::extra_words(node, self.src) {
            out.push(self.word(w));
        }
        out
    }

    /// In `>& -x`, the word bash reads after the `-` that closes the descriptor (`x`), if any.
    /// Its parts are read from tree-sitter's target (`-x`, `-"x"`, `-$v`), less the `-`.
    fn after_dash(&mut self, node: Node) -> Option<Word> {
        let dest = node.child_by_field_name("destination")?;
        let mut parts: Vec<Node> = if dest.kind_name() == "concatenation" {
            let mut cursor = dest.walk();
            dest.children(&mut cursor).collect()
        } else {
            vec![dest]
        };
        let first = parts.remove(0);
        let mut word = Word::default();
        match first.kind_name() {
            "word" => {
                let rest = self.text(first).get(1..).unwrap_or("");
                if !rest.is_empty() {
                    word.push(Word::unquoted(rest));
                }
            }
            _ => {
                self.problem(format!(
                    "the closing redirection `{}` is not understood",
                    self.text(node)
                ));
                return None;
            }
        }
        for part in parts {
            word.push(self.word(part));
        }
        (!word.text.is_empty() || !word.pieces.is_empty()).then_some(word)
    }

    /// Text between two nodes of one command that tree-sitter left out of the tree. It drops a
    /// lone `-` just before `2>&1` or a heredoc (`cat - <<EOF`), which bash passes as an
    /// argument; anything else left out is not understood.
    fn skipped(&mut self, from: usize, to: usize) -> Vec<Word> {
        let Some(gap) = self.src.get(from..to) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut offset = 0;
        for token in gap.split_ascii_whitespace() {
            let at = from + offset + gap[offset..].find(token).unwrap_or(0);
            offset = at - from + token.len();
            if token == "-" {
                out.push(Word::fixed(token));
                self.consumed.push(at);
            }
        }
        out
    }

    /// Records a command; returns its index.
    fn push(&mut self, words: Vec<Word>, assignments: Vec<Assignment>) -> usize {
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
        let harmless = words.first().is_some_and(|w| {
            w.is_static() && environment::BUILTINS_WITHOUT_PROGRAMS.contains(&w.text.as_str())
        });
        for a in assignments.iter().filter(|_| !harmless) {
            let value = a.is_static.then_some(a.value.as_str());
            self.out
                .hazards
                .extend(environment::env_value(&a.name, value, Some(index)));
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
    /// assignments are checked like any other; what it exports is checked as a program's
    /// environment ([`Walker::exported`]).
    fn declaration(&mut self, node: Node) {
        let mut words = Vec::new();
        let mut assignments = false;
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        if let [keyword, next, ..] = children.as_slice()
            && keyword.end_byte() == next.start_byte()
        {
            // `export}x`: one word, a program's name, to bash.
            self.problem(format!(
                "tree-sitter split the word at {:?} in two",
                self.text(*next)
            ));
        }
        for child in children {
            if !child.is_named() {
                words.push(Word::fixed(self.text(child)));
            } else if child.kind_name() == "variable_assignment" {
                let (name, values, record) = self.assignment(child);
                let mut word = Word::fixed(format!("{}=", record.name));
                for v in values.iter().cloned() {
                    word.push(v);
                }
                // `declare -a arr=(a b)` binds as `arr=(a b)` does when the pre-pass found it
                // may (outside functions, no attribute that changes the value).
                let array = child
                    .child_by_field_name("value")
                    .is_some_and(|v| v.kind_name() == "array");
                let values = self.binding(values, array);
                self.bind(&name, values);
                words.push(word);
                assignments = true;
            } else {
                words.push(self.word(child));
            }
        }
        if assignments {
            self.out.features.insert(Feature::Assignment);
        }
        let index = self.push(words, Vec::new());
        self.declaration_operands(index, node);
        self.builtin_operands(index, true);
        self.exported(index);
        self.shell_state(index);
    }

    /// What `export`, `declare`, `typeset`, `local` or `readonly` at `index` sets or exports,
    /// read from its words (written alone, or run by `command`/`builtin`, or spelled `'export'`,
    /// which tree-sitter takes for a plain command): an exported variable is checked as a
    /// program's environment, a function exported as `BASH_FUNC_name%%`, a variable only set as
    /// a shell variable.
    fn exported(&mut self, index: usize) {
        let command = &self.out.commands[index];
        let Some(builtin) = command
            .trusted_name()
            .filter(|n| matches!(*n, "export" | "declare" | "typeset" | "local" | "readonly"))
        else {
            return;
        };
        let words = &command.words[1..];
        let flags: String = words
            .iter()
            .filter(|w| w.text.starts_with('-') && w.text != "--")
            .map(|w| &w.text[1..])
            .collect();
        let exported = match builtin {
            "export" => !flags.contains('n'),
            "declare" | "typeset" | "local" => flags.contains('x'),
            _ => false,
        };
        let function = flags.contains('f');
        let mut found: Vec<Hazard> = Vec::new();
        for w in words.iter().filter(|w| !w.text.starts_with(['-', '+'])) {
            let (name, value) = match w.text.split_once('=') {
                Some((name, value)) => (name.trim_end_matches('+'), Some(value)),
                None => (w.text.as_str(), None),
            };
            let value = value.filter(|_| w.is_static());
            if exported && function {
                found.extend(environment::env(
                    &format!("BASH_FUNC_{name}%%"),
                    Some(index),
                ));
            } else if exported || self.scope.allexport {
                found.extend(environment::env_value(name, value, Some(index)));
            } else if w.text.contains('=') {
                found.extend(environment::shell_variable(name, value, Some(index)));
            }
        }
        self.out.hazards.extend(found);
    }

    /// The hazards of a standalone assignment (or one in `declare`, `local`…).
    fn set_variable(&self, a: &Assignment, command: Option<usize>) -> Vec<Hazard> {
        let value = a.is_static.then_some(a.value.as_str());
        if self.scope.allexport {
            environment::env_value(&a.name, value, command)
        } else {
            environment::shell_variable(&a.name, value, command)
        }
    }

    /// The hazards of a variable set from input or a list (`for`, `read`, `mapfile`…).
    fn shell_variable(&self, name: &str, command: Option<usize>) -> Vec<Hazard> {
        if self.scope.allexport {
            environment::env(name, command)
        } else {
            environment::shell_variable(name, None, command)
        }
    }

    /// The variables a builtin fills from its input (`read X`, `mapfile X`, `printf -v X`).
    fn filled_variables(&mut self, index: usize) {
        let command = &self.out.commands[index];
        let Some(name) = command
            .trusted_name()
            .filter(|n| builtins::FILLING.contains(n))
        else {
            return;
        };
        let args: Vec<&str> = command.argv[1..].iter().map(String::as_str).collect();
        let filled = builtins::filled(name, &args);
        let mut found = Vec::new();
        for (_, variable) in filled {
            found.extend(self.shell_variable(builtins::base(&variable), Some(index)));
        }
        self.out.hazards.extend(found);
    }
}
