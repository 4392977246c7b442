//! Parsing with tree-sitter-bash: one parser per thread, reused; the queries of
//! `grammars/bash/`, compiled once; and the line-continuation pass.

use std::cell::RefCell;
use std::sync::OnceLock;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, Query, QueryCursor, Tree};

use super::Feature;

/// The feature query (`grammars/bash/features.scm`).
const FEATURES: &str = include_str!("../../grammars/bash/features.scm");
/// The command-count query (`grammars/bash/commands.scm`).
const COMMANDS: &str = include_str!("../../grammars/bash/commands.scm");

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// The compiled queries — the feature and command patterns in one query, so the tree is
/// traversed once — with each capture's meaning.
struct Queries {
    query: Query,
    feature_of: Vec<Option<Feature>>,
    command: Option<u32>,
}

fn queries() -> Option<&'static Queries> {
    static QUERIES: OnceLock<Option<Queries>> = OnceLock::new();
    QUERIES
        .get_or_init(|| {
            let language = tree_sitter_bash::LANGUAGE.into();
            let query = Query::new(&language, &format!("{FEATURES}\n{COMMANDS}")).ok()?;
            let feature_of = query
                .capture_names()
                .iter()
                .map(|name| feature_named(name))
                .collect();
            let command = query.capture_index_for_name("command");
            Some(Queries {
                query,
                feature_of,
                command,
            })
        })
        .as_ref()
}

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

/// Parses a script; `None` when tree-sitter gives no tree (it always should for bash).
///
/// The parser never sees a byte above 0x7f: each is replaced by `x` first, keeping every byte
/// offset. tree-sitter-bash 0.25.1's external scanner passes non-ASCII lookahead to C's
/// `isdigit`, which reads out of bounds and crashes the process on input as short as `{` and
/// one CJK character (tree-sitter/tree-sitter-bash#337, found here by `tests/fuzz_bash.rs`).
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
        node.kind(),
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

/// Runs the query: inserts the features found and returns how many simple-command nodes the
/// tree holds (`None` when the query is unavailable).
pub(super) fn features_and_commands(
    tree: &Tree,
    script: &str,
    out: &mut std::collections::BTreeSet<Feature>,
) -> Option<usize> {
    let q = queries()?;
    let command = q.command?;
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&q.query, tree.root_node(), script.as_bytes());
    let mut commands = 0;
    while let Some(m) = matches.next() {
        for capture in m.captures() {
            if capture.index == command {
                commands += 1;
            } else if let Some(Some(feature)) = q.feature_of.get(capture.index as usize) {
                out.insert(*feature);
            }
        }
    }
    Some(commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queries_compile_and_every_capture_names_a_feature() {
        let q = queries().expect("queries compile");
        assert!(q.command.is_some());
        for (name, feature) in q.query.capture_names().iter().zip(&q.feature_of) {
            assert!(
                feature.is_some() || *name == "command",
                "capture @{name} names no feature"
            );
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
        let a = crate::shell::Analysis::of("echo 'héllo wörld' ünïcode");
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
