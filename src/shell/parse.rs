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

/// The compiled queries, with each feature capture's meaning.
struct Queries {
    features: Query,
    feature_of: Vec<Option<Feature>>,
    commands: Query,
}

fn queries() -> Option<&'static Queries> {
    static QUERIES: OnceLock<Option<Queries>> = OnceLock::new();
    QUERIES
        .get_or_init(|| {
            let language = tree_sitter_bash::LANGUAGE.into();
            let features = Query::new(&language, FEATURES).ok()?;
            let commands = Query::new(&language, COMMANDS).ok()?;
            let feature_of = features
                .capture_names()
                .iter()
                .map(|name| feature_named(name))
                .collect();
            Some(Queries {
                features,
                feature_of,
                commands,
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
pub(super) fn parse(script: &str) -> Option<Tree> {
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

/// The features the query finds.
pub(super) fn features(tree: &Tree, script: &str, out: &mut std::collections::BTreeSet<Feature>) {
    let Some(q) = queries() else {
        return;
    };
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&q.features, tree.root_node(), script.as_bytes());
    while let Some(m) = matches.next() {
        for capture in m.captures() {
            if let Some(Some(feature)) = q.feature_of.get(capture.index as usize) {
                out.insert(*feature);
            }
        }
    }
}

/// How many simple-command nodes the tree holds; `None` when the query is unavailable.
pub(super) fn count_commands(tree: &Tree, script: &str) -> Option<usize> {
    let q = queries()?;
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(&q.commands, tree.root_node(), script.as_bytes());
    let mut n = 0;
    while matches.next().is_some() {
        n += 1;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queries_compile_and_every_capture_names_a_feature() {
        let q = queries().expect("queries compile");
        for (name, feature) in q.features.capture_names().iter().zip(&q.feature_of) {
            assert!(feature.is_some(), "capture @{name} names no feature");
        }
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
