//! Parsing with tree-sitter-bash: one parser per thread, reused; the node kinds that mark a
//! feature or a simple command, read in one pass over the tree; and the line-continuation pass.
//!
//! The kinds were first written as tree-sitter queries (`grammars/bash/features.scm` and
//! `commands.scm`). Compiling those queries cost about a fifth of a one-call `reasonix check`
//! process (`ts_query__analyze_patterns`, issue 12), for patterns that only name node kinds; the
//! table [`KINDS`] says the same, and the tests run the query files over a corpus to prove that
//! the table and the queries find the same features and the same number of commands.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::OnceLock;

use tree_sitter::{Node, Parser, Tree};

use super::Feature;

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// A named node of this kind marks that the script uses the feature (the feature query,
/// `grammars/bash/features.scm`, one row per pattern). The anonymous token `&` marks
/// [`Feature::Background`] ([`BACKGROUND`]), and a named `command` node is a simple command
/// ([`COMMAND`]).
pub(super) const KINDS: &[(&str, Feature)] = &[
    ("pipeline", Feature::Pipe),
    ("list", Feature::Chain),
    ("command_substitution", Feature::Substitution),
    ("process_substitution", Feature::ProcessSubstitution),
    ("heredoc_redirect", Feature::Heredoc),
    ("herestring_redirect", Feature::Herestring),
    ("subshell", Feature::Subshell),
    ("compound_statement", Feature::Group),
    ("function_definition", Feature::FunctionDef),
    ("if_statement", Feature::Conditional),
    ("case_statement", Feature::Conditional),
    ("while_statement", Feature::Loop),
    ("for_statement", Feature::Loop),
    ("c_style_for_statement", Feature::Loop),
    ("negated_command", Feature::Negation),
    ("variable_assignment", Feature::Assignment),
    ("simple_expansion", Feature::Variable),
    ("expansion", Feature::Variable),
    ("brace_expression", Feature::BraceExpansion),
    ("arithmetic_expansion", Feature::Arithmetic),
    ("test_command", Feature::Test),
    ("comment", Feature::Comment),
    ("ERROR", Feature::ParseError),
];

/// The anonymous token that marks [`Feature::Background`].
pub(super) const BACKGROUND: &str = "&";

/// The named node kind of a simple command (`grammars/bash/commands.scm`).
pub(super) const COMMAND: &str = "command";

/// The feature a named node of this kind marks.
fn feature_of(kind: &str) -> Option<Feature> {
    KINDS.iter().find(|(k, _)| *k == kind).map(|&(_, f)| f)
}

/// The name of a node's kind, as [`Node::kind`] gives it, looked up by the kind's id in a table
/// made once. `Node::kind` measures and checks the name's C string on every call (`strlen` and a
/// UTF-8 check), which was a twentieth of an analysis; the walk asks for kinds all the time.
pub(crate) trait KindName {
    /// This node's kind, as `kind()` names it.
    fn kind_name(&self) -> &'static str;
}

impl KindName for Node<'_> {
    fn kind_name(&self) -> &'static str {
        static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            let language = language();
            (0..language.node_kind_count())
                .map(|id| {
                    u16::try_from(id)
                        .ok()
                        .and_then(|id| language.node_kind_for_id(id))
                        .unwrap_or("")
                })
                .collect()
        });
        // The one id past the table is tree-sitter's error symbol (65535), named `ERROR`.
        names
            .get(usize::from(self.kind_id()))
            .copied()
            .unwrap_or("ERROR")
    }
}

/// The field name of the cursor's node, as [`tree_sitter::TreeCursor::field_name`] gives it,
/// looked up by the field's id in a table made once (the same C-string cost as [`KindName`]).
pub(crate) fn field_name(cursor: &tree_sitter::TreeCursor) -> Option<&'static str> {
    static NAMES: OnceLock<Vec<Option<&'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let language = language();
        (0..=language.field_count())
            .map(|id| {
                u16::try_from(id)
                    .ok()
                    .and_then(|id| language.field_name_for_id(id))
            })
            .collect()
    });
    let id = cursor.field_id()?;
    names.get(usize::from(id.get())).copied().flatten()
}

/// The bash grammar, for the name tables.
fn language() -> &'static tree_sitter::Language {
    static LANGUAGE: OnceLock<tree_sitter::Language> = OnceLock::new();
    LANGUAGE.get_or_init(|| tree_sitter_bash::LANGUAGE.into())
}

/// What a node says, by its kind's id in the grammar.
#[derive(Clone, Copy)]
enum Marks {
    Nothing,
    Command,
    Feature(Feature),
}

/// [`Marks`] for every node kind of the grammar, indexed by kind id: [`KINDS`], [`COMMAND`] and
/// [`BACKGROUND`] looked up once by name (a node's kind id names the same kind its `kind()`
/// does, aliases included), so that the walk compares numbers.
fn marks() -> &'static [Marks] {
    static MARKS: OnceLock<Vec<Marks>> = OnceLock::new();
    MARKS.get_or_init(|| {
        let language: tree_sitter::Language = tree_sitter_bash::LANGUAGE.into();
        (0..language.node_kind_count())
            .map(|id| {
                let id = u16::try_from(id).unwrap_or(u16::MAX);
                language
                    .node_kind_for_id(id)
                    .map_or(Marks::Nothing, |kind| {
                        mark_of(kind, language.node_kind_is_named(id))
                    })
            })
            .collect()
    })
}

/// What a node of this kind says.
fn mark_of(kind: &str, named: bool) -> Marks {
    match (named, kind) {
        (true, COMMAND) => Marks::Command,
        (true, kind) => feature_of(kind).map_or(Marks::Nothing, Marks::Feature),
        (false, BACKGROUND) => Marks::Feature(Feature::Background),
        (false, _) => Marks::Nothing,
    }
}

/// Parses a script; `None` when tree-sitter gives no tree (it always should for bash).
///
/// The parser never sees a byte above 0x7f: each is replaced by `x` first, keeping every byte
/// offset. tree-sitter-bash 0.25.1's external scanner passes non-ASCII lookahead to C's
/// `isdigit`, which reads out of bounds and crashes the process on input as short as `{` and
/// one CJK character (tree-sitter/tree-sitter-bash#337, found here by `tests/it/fuzz_bash.rs`).
/// Bash itself treats such bytes as ordinary word characters, as `x` is, so the token
/// boundaries are bash's; word text is always taken from the original script.
///
/// A carriage return is replaced by `x` too. tree-sitter-bash treats it as a blank between
/// words; bash treats it as an ordinary character, inside a word (`a\rb` is one word), before
/// a `#` (`a\r#` is a word, not the start of a comment) and in a heredoc delimiter (`EOF\r`
/// does not end `<<EOF`). With `x` in its place the parser splits the script where bash does.
pub(super) fn parse(script: &str) -> Option<Tree> {
    let ascii: Vec<u8> = script
        .bytes()
        .map(|b| if b.is_ascii() && b != b'\r' { b } else { b'x' })
        .collect();
    parse_ascii(&ascii)
}

fn parse_ascii(script: &[u8]) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(script, None)
    })
}

/// Removes every backslash-newline that lies outside all tokens (tree-sitter skipped it as
/// whitespace), returning the new script, or `None` when there is none to remove. Bash removes
/// these before it splits words, so `r\<newline>m` is `rm`; a continuation between spaces
/// changes nothing by being removed.
pub(super) fn join_continuations(script: &str, tree: &Tree) -> Option<String> {
    let bytes = script.as_bytes();
    let candidates: Vec<usize> = bytes
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w == b"\\\n")
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let mut leaves: Vec<(usize, usize)> = Vec::new();
    collect_leaves(tree.root_node(), &mut leaves);
    let inside = |at: usize| leaves.iter().any(|&(s, e)| s <= at && at < e);
    let remove: Vec<usize> = candidates.into_iter().filter(|&i| !inside(i)).collect();
    if remove.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(script.len());
    let mut last = 0;
    for i in remove {
        out.push_str(&script[last..i]);
        last = i + 2;
    }
    out.push_str(&script[last..]);
    Some(out)
}

/// The text tree-sitter left out of the tree: each run of characters other than blanks that
/// no token covers, with its byte offset. Bash reads every such character, so a script where
/// tree-sitter dropped one (`echo $`, `cat - <<EOF`) is read differently by the two.
/// `leaves` are the byte ranges of the tree's tokens and of the nodes it keeps whole, in any
/// order.
pub(super) fn uncovered(script: &str, leaves: &mut [(usize, usize)]) -> Vec<(usize, String)> {
    leaves.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    let gap = |from: usize, to: usize, out: &mut Vec<(usize, String)>| {
        let Some(text) = script.get(from..to) else {
            return;
        };
        let mut start = None;
        for (i, c) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            match (c.is_whitespace(), start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    out.push((from + s, text[s..i].to_owned()));
                    start = None;
                }
                _ => {}
            }
        }
    };
    for &mut (start, end) in leaves {
        if start > at {
            gap(at, start, &mut out);
        }
        at = at.max(end);
    }
    gap(at, script.len(), &mut out);
    out
}

/// Byte ranges of every leaf (token) and of every node whose text tree-sitter keeps whole
/// (strings, heredoc bodies, comments).
fn collect_leaves(node: Node, out: &mut Vec<(usize, usize)>) {
    let whole = matches!(
        node.kind_name(),
        "raw_string"
            | "ansi_c_string"
            | "string_content"
            | "heredoc_body"
            | "heredoc_content"
            | "comment"
    );
    if node.child_count() == 0 || whole {
        out.push((node.start_byte(), node.end_byte()));
        if whole {
            return;
        }
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect_leaves(child, out);
    }
}

/// What the nodes of a tree say, noted one node at a time by a pass that reads each node once
/// (the scope pass, [`crate::walk`]): the features found ([`KINDS`]) and how many
/// simple-command nodes the tree holds.
pub(super) struct Census<'f> {
    marks: &'static [Marks],
    features: &'f mut BTreeSet<Feature>,
    /// The simple-command nodes noted so far.
    pub commands: usize,
}

impl<'f> Census<'f> {
    pub(super) fn new(features: &'f mut BTreeSet<Feature>) -> Self {
        Census {
            marks: marks(),
            features,
            commands: 0,
        }
    }

    /// Notes one node; each node of the tree must be noted once.
    pub(super) fn note(&mut self, node: Node) {
        // An id past the grammar's own kinds is tree-sitter's (`ERROR`): read by name.
        let mark = match self.marks.get(usize::from(node.kind_id())) {
            Some(mark) => *mark,
            None => mark_of(node.kind_name(), node.is_named()),
        };
        match mark {
            Marks::Command => self.commands += 1,
            Marks::Feature(feature) => {
                self.features.insert(feature);
            }
            Marks::Nothing => {}
        }
    }
}

/// Reads every node of the tree once: inserts the features found ([`KINDS`]) and returns how
/// many simple-command nodes the tree holds. (The analysis takes the same census in its scope
/// pass; this is the census alone.)
#[cfg(test)]
pub(super) fn features_and_commands(tree: &Tree, out: &mut BTreeSet<Feature>) -> usize {
    let mut census = Census::new(out);
    let mut cursor = tree.walk();
    'walk: loop {
        census.note(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    census.commands
}

#[cfg(test)]
mod tests {
    use super::*;

    use streaming_iterator::StreamingIterator;
    use tree_sitter::{Query, QueryCursor};

    /// The kind and field names from the tables are the ones tree-sitter's binding gives, for
    /// every node of scripts that use most of the grammar (aliases and anonymous nodes too).
    #[test]
    fn the_name_tables_agree_with_the_binding_on_every_node() {
        let scripts = [
            "a=1 b[$i]+=(x y) cmd -x 'q' \"$v\" ${x:-y} $((1+2)) <in >>out 2>&1 | tee f &",
            "for i in 1 2; do [[ $i -eq 1 ]] && echo $i; done; while read -r l; do :; done <<EOF\nx $y\nEOF\n",
            "case $x in a|b) f() { local -i n=3; }; ;; *) (( n++ )); esac; coproc c { cat; }",
            "if ! test -f x; then declare -A m=([k]=v); elif true; then select s in a; do break; done; fi",
            "echo `date` $(ls) <(cat) >(wc) {a,b}c *.rs ~user/x $'\\n' $\"t\" &>/dev/null",
            "if then fi ) (( echo ${",
        ];
        let mut seen = 0;
        for script in scripts {
            let tree = parse(script).expect("a tree");
            let mut cursor = tree.walk();
            'walk: loop {
                let node = cursor.node();
                assert_eq!(node.kind_name(), node.kind(), "in {script:?}");
                assert_eq!(field_name(&cursor), cursor.field_name(), "in {script:?}");
                seen += 1;
                if cursor.goto_first_child() || cursor.goto_next_sibling() {
                    continue;
                }
                loop {
                    if !cursor.goto_parent() {
                        break 'walk;
                    }
                    if cursor.goto_next_sibling() {
                        continue 'walk;
                    }
                }
            }
        }
        assert!(seen > 250, "only {seen} nodes");
    }

    /// The feature query (`grammars/bash/features.scm`) and the command query
    /// (`grammars/bash/commands.scm`), the oracle for [`KINDS`].
    const FEATURES: &str = include_str!("../grammars/bash/features.scm");
    const COMMANDS: &str = include_str!("../grammars/bash/commands.scm");

    /// The feature a capture name in `features.scm` stands for.
    fn feature_named(name: &str) -> Option<Feature> {
        Some(match name {
            "pipe" => Feature::Pipe,
            "chain" => Feature::Chain,
            "substitution" => Feature::Substitution,
            "process_substitution" => Feature::ProcessSubstitution,
            "heredoc" => Feature::Heredoc,
            "herestring" => Feature::Herestring,
            "subshell" => Feature::Subshell,
            "group" => Feature::Group,
            "function_def" => Feature::FunctionDef,
            "conditional" => Feature::Conditional,
            "loop" => Feature::Loop,
            "negation" => Feature::Negation,
            "assignment" => Feature::Assignment,
            "variable" => Feature::Variable,
            "brace_expansion" => Feature::BraceExpansion,
            "arithmetic" => Feature::Arithmetic,
            "test" => Feature::Test,
            "comment" => Feature::Comment,
            "parse_error" => Feature::ParseError,
            "background" => Feature::Background,
            _ => return None,
        })
    }

    /// What the query files find in a tree: the features and the number of commands.
    fn by_query(query: &Query, tree: &Tree, script: &str) -> (BTreeSet<Feature>, usize) {
        let command = query.capture_index_for_name("command").expect("@command");
        let mut features = BTreeSet::new();
        let mut commands = 0;
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(query, tree.root_node(), script.as_bytes());
        while let Some(m) = matches.next() {
            for capture in m.captures() {
                if capture.index == command {
                    commands += 1;
                } else {
                    let name = query.capture_names()[capture.index as usize];
                    features.insert(feature_named(name).expect("a known capture"));
                }
            }
        }
        (features, commands)
    }

    /// Scripts that hold every construct of [`KINDS`], nested, broken and unusual ones.
    const CORPUS: &[&str] = &[
        "git status --short && git diff --stat HEAD~1 | head -20 2>/dev/null; cargo test -q --lib >> logs.txt",
        "echo $(date) `id` <(ls) >(wc -l)",
        "cat <<EOF\nhello $(whoami)\nEOF\ncat <<< \"$x\"",
        "(cd src && make) & { echo a; echo b; }",
        "f() { echo \"$1\"; }; f x",
        "if [ -f x ]; then echo y; elif [[ $a == b ]]; then :; else echo z; fi",
        "case $x in a) echo a;; *) echo b;; esac",
        "while true; do sleep 1; done; until false; do break; done",
        "for i in 1 2 3; do echo $i; done; for ((i=0; i<3; i++)); do echo ${i}; done",
        "! grep -q x file || X=1 Y=2 env | sort",
        "echo {a,b,c} {1..3} $((1 + 2)) # a comment",
        "a=1; b=${a:-2}; echo \"$a$b\"",
        "echo $(",
        "if true; then echo",
        "cat < in > out 2>&1 &",
        ")) echo",
        "echo 'unterminated",
        "for x in $(ls); do (echo $x) & done; wait",
        "bash -c 'echo hi' && sh -c \"echo $(id)\"",
        "arr=(a b c); echo ${arr[@]} ${#arr[@]}",
        "time ls | tee >(cat) 2>&1 | ( read -r l; echo \"$l\" )",
        "declare -A m=([k]=v); local y; export Z=1; unset Z",
        "[[ -n $x && $y =~ ^a ]] && test -d . && [ 1 -eq 1 ]",
        "coproc cat; echo & echo && echo || echo",
        "{ echo } ; fi done",
        "",
        "   # only a comment",
        "select x in a b; do echo $x; break; done",
    ];

    #[test]
    fn every_row_of_the_kind_table_is_a_node_kind_of_the_grammar() {
        let language: tree_sitter::Language = tree_sitter_bash::LANGUAGE.into();
        for (kind, _) in KINDS {
            assert_ne!(language.id_for_node_kind(kind, true), 0, "{kind}");
        }
        assert_ne!(language.id_for_node_kind(COMMAND, true), 0);
        assert_ne!(language.id_for_node_kind(BACKGROUND, false), 0);
    }

    #[test]
    fn the_walk_finds_what_the_query_files_find() {
        let language = tree_sitter_bash::LANGUAGE.into();
        let query = Query::new(&language, &format!("{FEATURES}\n{COMMANDS}")).expect("queries");
        let mut seen = BTreeSet::new();
        for script in CORPUS {
            let tree = parse(script).expect("a tree");
            let mut walked = BTreeSet::new();
            let commands = features_and_commands(&tree, &mut walked);
            assert_eq!(
                (walked.clone(), commands),
                by_query(&query, &tree, script),
                "{script:?}"
            );
            seen.extend(walked);
        }
        // Every row of the table is exercised by the corpus, and every capture of the query
        // file is a row.
        for (kind, feature) in KINDS {
            assert!(seen.contains(feature), "no script of the corpus has {kind}");
        }
        assert!(seen.contains(&Feature::Background));
        // Scripts glued from random tokens, most of them broken: error recovery makes ERROR
        // and missing nodes in every place, and the two must still agree.
        const TOKENS: &[&str] = &[
            "echo", "x", " ", ";", "&", "&&", "||", "|", "(", ")", "{", "}", "$(", "`", "$x",
            "${y:-z}", "$((", "))", "<(", ">(", "<<EOF\n", "\nEOF\n", "<<<", ">", "2>&1", "'",
            "\"", "if", "then", "fi", "for", "in", "do", "done", "case", "esac", "!", "a=1", "[[",
            "]]", "[", "]", "{a,b}", "# c", "\n", "\\\n", "f()", "while", "((", "=~", "*",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..3000 {
            let len = next() % 24;
            let script: String = (0..len)
                .map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize])
                .collect();
            let tree = parse(&script).expect("a tree");
            let mut walked = BTreeSet::new();
            let commands = features_and_commands(&tree, &mut walked);
            assert_eq!(
                (walked, commands),
                by_query(&query, &tree, &script),
                "{script:?}"
            );
        }
        for name in query.capture_names() {
            if *name != "command" {
                let feature = feature_named(name).expect("a known capture");
                assert!(
                    feature == Feature::Background || KINDS.iter().any(|(_, f)| *f == feature),
                    "@{name} has no row"
                );
            }
        }
    }

    #[test]
    fn non_ascii_after_a_brace_does_not_crash_the_parser() {
        // tree-sitter/tree-sitter-bash#337: SIGSEGV in the external scanner without the
        // ASCII copy.
        for script in [
            "{\u{31860}",
            "{\u{10FFFF}x",
            "echo {\u{4E2D}..}",
            "ls {\u{1F600}",
        ] {
            assert!(parse(script).is_some(), "{script:?}");
        }
        let a = crate::Analysis::of("echo 'héllo wörld' ünïcode");
        assert_eq!(a.commands[0].argv, ["echo", "héllo wörld", "ünïcode"]);
    }

    #[test]
    fn continuations_glued_inside_words_are_joined() {
        let script = "r\\\nm -rf /";
        let tree = parse(script).unwrap();
        assert_eq!(
            join_continuations(script, &tree).as_deref(),
            Some("rm -rf /")
        );
    }

    #[test]
    fn continuations_in_quotes_and_comments_are_left_alone() {
        for script in ["echo 'a\\\nb'", "# note \\\nls", "echo \"a\\\nb\""] {
            let tree = parse(script).unwrap();
            assert_eq!(join_continuations(script, &tree), None, "{script:?}");
        }
    }
}
