//! Codex's execution-policy rule files (`*.rules`): the `prefix_rule(...)` calls they hold, read
//! as a Reasonix YAML policy ([`crate::import`]).
//!
//! ```python
//! prefix_rule(
//!     pattern = ["git", ["push", "fetch"]],   # argv prefix; a list is alternatives
//!     decision = "prompt",                    # allow (default) | prompt | forbidden
//!     justification = "talks to the remote",
//!     match = [["git", "push", "origin"], "git fetch --all"],   # examples (strings: shlex)
//!     not_match = ["git status"],
//! )
//! ```
//!
//! The file is Starlark. It is **parsed, never executed**: the Starlark grammar for tree-sitter
//! (the parser already used for bash) gives the syntax tree, and only a module of top-level
//! `prefix_rule(...)` calls whose keyword arguments are string literals and lists of them is
//! read. Anything else — a `def`, a variable, a `load`, string concatenation, an f-string, an
//! escape sequence — is refused with its line, not guessed at. A full Starlark interpreter would
//! run the file's code to find its rules; the subset Codex writes has no code to run.
//!
//! `allow` → allow, `prompt` → ask, `forbidden` → deny; the pattern becomes `commands: ["git
//! {push,fetch} *"]` on `bash`. Strict reading as for Claude's rules: Codex matches a prefix of
//! each command's argv; an imported allow covers a call only when every simple command anywhere
//! in it matches, none decided at run time. Each `match` example becomes a case expecting the
//! strictest decision of every rule that matches it (Codex's own precedence); each `not_match`
//! example that another rule decides becomes a case too.

use serde_json::json;
use tree_sitter::{Node, Parser};

use crate::import::{Case, Imported, Rule};

/// One `prefix_rule(...)`.
#[derive(Clone, Debug, PartialEq)]
pub struct PrefixRule {
    /// The line it starts on, from 1.
    pub line: usize,
    /// The argv prefix: each position a set of alternatives.
    pub pattern: Vec<Vec<String>>,
    /// `allow`, `prompt` or `forbidden`.
    pub decision: String,
    /// Why, as written.
    pub justification: Option<String>,
    /// Examples that match, as argv.
    pub matches: Vec<Vec<String>>,
    /// Examples that must not match, as argv.
    pub not_matches: Vec<Vec<String>>,
}

/// Codex's decisions and the Reasonix decision each becomes.
pub const DECISIONS: &[(&str, &str)] =
    &[("allow", "allow"), ("prompt", "ask"), ("forbidden", "deny")];

/// Statements that are not rules: the statement's first line, and why.
pub type LeftOut = Vec<(String, String)>;

/// Parses a rules file: its rules, and each top-level statement that is not one, with why.
pub fn parse(text: &str) -> Result<(Vec<PrefixRule>, LeftOut), String> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_starlark::LANGUAGE.into())
        .map_err(|e| format!("the Starlark grammar does not load: {e}"))?;
    let tree = parser
        .parse(text, None)
        .ok_or("the Starlark parser gave no tree")?;
    let root = tree.root_node();
    if root.has_error() {
        let at = first_error(root).map_or(0, |n| n.start_position().row + 1);
        return Err(format!(
            "line {at}: not valid Starlark; nothing was imported"
        ));
    }
    let mut rules = Vec::new();
    let mut left_out = Vec::new();
    let mut cursor = root.walk();
    for statement in root.named_children(&mut cursor) {
        if statement.kind() == "comment" {
            continue;
        }
        let line = statement.start_position().row + 1;
        let src = text_of(statement, text);
        match rule(statement, text) {
            Ok(r) => rules.push(r),
            Err(why) => left_out.push((format!("line {line}: {}", first_line(src)), why)),
        }
    }
    Ok((rules, left_out))
}

fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    node.children(&mut cursor).find_map(first_error)
}

fn text_of<'a>(node: Node<'_>, text: &'a str) -> &'a str {
    text.get(node.byte_range()).unwrap_or("")
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if s.contains('\n') {
        format!("{line} …")
    } else {
        line.to_owned()
    }
}

/// One statement as a `prefix_rule` call.
fn rule(statement: Node<'_>, text: &str) -> Result<PrefixRule, String> {
    let line = statement.start_position().row + 1;
    let call = match statement.kind() {
        "expression_statement" if statement.named_child_count() == 1 => statement
            .named_child(0)
            .filter(|n| n.kind() == "call")
            .ok_or("only prefix_rule(...) calls are read; nothing else is evaluated")?,
        _ => return Err("only prefix_rule(...) calls are read; nothing else is evaluated".into()),
    };
    let function = call
        .child_by_field_name("function")
        .ok_or("a call without a function")?;
    if function.kind() != "identifier" || text_of(function, text) != "prefix_rule" {
        return Err(format!(
            "{}(...) is not prefix_rule; only prefix_rule calls are read",
            text_of(function, text)
        ));
    }
    let arguments = call
        .child_by_field_name("arguments")
        .ok_or("a call without arguments")?;
    let mut rule = PrefixRule {
        line,
        pattern: Vec::new(),
        decision: "allow".into(),
        justification: None,
        matches: Vec::new(),
        not_matches: Vec::new(),
    };
    let mut seen = Vec::new();
    let mut cursor = arguments.walk();
    for arg in arguments.named_children(&mut cursor) {
        if arg.kind() == "comment" {
            continue;
        }
        if arg.kind() != "keyword_argument" {
            return Err("prefix_rule takes keyword arguments only (pattern = [...], ...)".into());
        }
        let name = arg
            .child_by_field_name("name")
            .map(|n| text_of(n, text))
            .unwrap_or("");
        let value = arg
            .child_by_field_name("value")
            .ok_or("an argument without a value")?;
        if seen.contains(&name) {
            return Err(format!("{name} is given twice"));
        }
        seen.push(name);
        match name {
            "pattern" => {
                rule.pattern = list(value, text)?
                    .into_iter()
                    .map(|item| match item {
                        Item::Str(s) => Ok(vec![s]),
                        Item::List(alts) if !alts.is_empty() => Ok(alts),
                        Item::List(_) => Err("an empty list of alternatives in pattern".to_owned()),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "decision" => {
                let d = string(value, text)?;
                if !DECISIONS.iter().any(|(c, _)| *c == d) {
                    return Err(format!(
                        "decision {d:?} is none of allow, prompt, forbidden"
                    ));
                }
                rule.decision = d;
            }
            // Its text never decides whether the rule survives (issue 28, item 3): one that
            // cannot be read as a plain string is kept as a note.
            "justification" => {
                rule.justification = Some(
                    string(value, text)
                        .unwrap_or_else(|why| format!("(the justification was not read: {why})")),
                );
            }
            "match" | "not_match" => {
                let examples = list(value, text)?
                    .into_iter()
                    .map(|item| match item {
                        Item::Str(s) => shlex::split(&s)
                            .ok_or_else(|| format!("the example {s:?} does not split into words")),
                        Item::List(words) => Ok(words),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if name == "match" {
                    rule.matches = examples;
                } else {
                    rule.not_matches = examples;
                }
            }
            other => return Err(format!("prefix_rule has no argument {other:?}")),
        }
    }
    if rule.pattern.is_empty() {
        return Err("a prefix_rule needs a non-empty pattern".into());
    }
    Ok(rule)
}

/// A list element: a string, or a list of strings.
enum Item {
    Str(String),
    List(Vec<String>),
}

fn list(node: Node<'_>, text: &str) -> Result<Vec<Item>, String> {
    if node.kind() != "list" {
        return Err(format!(
            "expected a list, found {:?}",
            first_line(text_of(node, text))
        ));
    }
    let mut out = Vec::new();
    let mut cursor = node.walk();
    for item in node.named_children(&mut cursor) {
        match item.kind() {
            "comment" => {}
            "list" => {
                let mut inner = Vec::new();
                let mut c = item.walk();
                for s in item.named_children(&mut c) {
                    if s.kind() != "comment" {
                        inner.push(string(s, text)?);
                    }
                }
                out.push(Item::List(inner));
            }
            _ => out.push(Item::Str(string(item, text)?)),
        }
    }
    Ok(out)
}

/// A plain string literal: quotes, no prefix, no escape sequence.
fn string(node: Node<'_>, text: &str) -> Result<String, String> {
    let written = text_of(node, text);
    if node.kind() != "string" {
        return Err(format!(
            "expected a string literal, found {:?}",
            first_line(written)
        ));
    }
    let mut content = String::new();
    let mut cursor = node.walk();
    for part in node.named_children(&mut cursor) {
        match part.kind() {
            "string_start" => {
                let q = text_of(part, text);
                if !matches!(q, "\"" | "'" | "\"\"\"" | "'''") {
                    return Err(format!(
                        "the string {written} has a prefix; write a plain string"
                    ));
                }
            }
            "string_end" => {}
            "string_content" => {
                if part.named_child_count() > 0 {
                    return Err(format!(
                        "the string {written} has an escape sequence; write it without one"
                    ));
                }
                content.push_str(text_of(part, text));
            }
            _ => return Err(format!("the string {written} is not a plain literal")),
        }
    }
    Ok(content)
}

/// Reads a rules file as a Reasonix policy.
pub fn import(text: &str, origin: &str) -> Result<Imported, String> {
    let (rules, left_out) = parse(text)?;
    let mut imported = Imported {
        origin: format!("Imported from Codex's prefix rules in {origin} (reasonix policy import --from codex)"),
        notes: vec![
            "Strict reading: Codex matches a rule's pattern as a prefix of each command's argv; here an allow covers a call only when every simple command anywhere in it (pipelines, `&&`, `$(...)`, wrappers, `bash -c`) matches word by word, with no word decided at run time. Deny (forbidden) and ask (prompt) rules match generously (by basename, options in any spelling). Precedence is Codex's: forbidden, then prompt, then allow.".into(),
        ],
        rules: Vec::new(),
        left_out,
        reads_ask: None,
    };
    let mut narrowing_left_out = !imported.left_out.is_empty();
    for (n, r) in rules.iter().enumerate() {
        let decision = DECISIONS
            .iter()
            .find(|(c, _)| *c == r.decision)
            .map_or("ask", |(_, d)| *d);
        let id = format!("codex-{}-{}", r.decision, n + 1);
        let Some(commands) = patterns(&r.pattern, decision) else {
            imported.left_out.push((
                format!("line {}: prefix_rule(decision = {:?}, ...)", r.line, r.decision),
                format!("its pattern has more than {MAX_PATTERNS} combinations of alternatives; write it as several rules"),
            ));
            narrowing_left_out |= decision != "allow";
            continue;
        };
        let source = format!(
            "line {}: prefix_rule(pattern = {}, decision = {:?})",
            r.line,
            serde_json::to_string(&r.pattern).unwrap_or_default(),
            r.decision
        );
        let reason = match &r.justification {
            Some(j) => format!("imported from Codex (line {}): {j}", r.line),
            None => format!("imported from Codex: {source}"),
        };
        let yaml = json!({
            "id": id,
            "decision": decision,
            "tools": ["bash"],
            "commands": commands,
            "reason": reason,
        });
        let (cases, untested) = cases(&id, r, &rules);
        imported.rules.push(Rule {
            source,
            reading: Some(if decision == "allow" {
                "every simple command anywhere in the call must match word by word, none decided at run time".into()
            } else {
                "any simple command anywhere in the call that matches (by basename, options in any spelling) is enough".into()
            }),
            yaml,
            cases,
            untested,
        });
    }
    // A statement left out may have been a forbidden or prompt rule, and every rule here is
    // on bash: the allows become asks, so the import is never wider than the source (issue 28,
    // item 3).
    if narrowing_left_out {
        let why = format!(
            "{} statement(s) of the file could not be carried over, and any of them may have narrowed it",
            imported.left_out.len()
        );
        imported.demote_allows(&|_| true, &why);
        imported.demote_reads(&why);
    }
    Ok(imported)
}

/// The most patterns one rule's alternatives may expand to.
const MAX_PATTERNS: usize = 256;

/// A rule's pattern as `commands:` entries, each ending in `*`. An allow keeps alternatives as
/// one `{a,b}` word (its strict, word-by-word match reads braces as a glob); a deny or ask gets
/// one pattern per combination of alternatives, because its generous match reads a word that
/// starts with `-` as an option in any spelling (`rm -rf` ≡ `rm -r -f`) and a `{-rf,-fr}` word
/// as none (found by the import property test, issue 28). `None`: more than [`MAX_PATTERNS`].
fn patterns(pattern: &[Vec<String>], decision: &str) -> Option<Vec<serde_json::Value>> {
    let entry = |mut words: Vec<String>| {
        words.push("*".into());
        if words.iter().any(|w| w.contains(' ')) {
            json!(words)
        } else {
            json!(words.join(" "))
        }
    };
    if decision == "allow" {
        return Some(vec![entry(pattern.iter().map(|alts| word(alts)).collect())]);
    }
    let mut combos: Vec<Vec<String>> = vec![Vec::new()];
    for alts in pattern {
        if combos.len().saturating_mul(alts.len()) > MAX_PATTERNS {
            return None;
        }
        combos = combos
            .iter()
            .flat_map(|c| {
                alts.iter().map(move |a| {
                    let mut c = c.clone();
                    c.push(escape(a));
                    c
                })
            })
            .collect();
    }
    Some(combos.into_iter().map(entry).collect())
}

/// One pattern position as a pattern word: a literal, or `{a,b}` for alternatives.
fn word(alts: &[String]) -> String {
    let escaped: Vec<String> = alts.iter().map(|a| escape(a)).collect();
    if escaped.len() == 1 {
        escaped[0].clone()
    } else {
        format!("{{{}}}", escaped.join(","))
    }
}

/// A literal as a pattern word: every glob character (and `,`, which separates alternatives)
/// escaped.
fn escape(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | ',' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether a rule matches an argv, as Codex matches it: its pattern is a prefix.
fn codex_matches(rule: &PrefixRule, argv: &[String]) -> bool {
    argv.len() >= rule.pattern.len()
        && rule
            .pattern
            .iter()
            .zip(argv)
            .all(|(alts, word)| alts.contains(word))
}

/// The Reasonix verdict Codex's precedence gives an argv over every rule, if any rule matches.
fn codex_decision(rules: &[PrefixRule], argv: &[String]) -> Option<&'static str> {
    let mut found: Vec<&str> = rules
        .iter()
        .filter(|r| codex_matches(r, argv))
        .map(|r| r.decision.as_str())
        .collect();
    found.sort_by_key(|d| match *d {
        "forbidden" => 0,
        "prompt" => 1,
        _ => 2,
    });
    let strictest = found.first()?;
    DECISIONS
        .iter()
        .find(|(c, _)| c == strictest)
        .map(|(_, d)| *d)
}

fn cases(id: &str, rule: &PrefixRule, all: &[PrefixRule]) -> (Vec<Case>, Option<String>) {
    let mut examples: Vec<(&str, Vec<String>)> =
        rule.matches.iter().map(|m| ("match", m.clone())).collect();
    if examples.is_empty() {
        // The pattern itself, each position's first alternative.
        examples.push((
            "its pattern",
            rule.pattern.iter().map(|a| a[0].clone()).collect(),
        ));
    }
    examples.extend(rule.not_matches.iter().map(|m| ("not_match", m.clone())));
    let mut out = Vec::new();
    let mut undecided = 0;
    for (kind, argv) in examples {
        let Some(expect) = codex_decision(all, &argv) else {
            undecided += 1;
            continue;
        };
        let line = shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_default();
        out.push(Case {
            name: format!("{id} (line {}): {kind} `{line}`", rule.line),
            call: json!({"name": "bash", "arguments": {"command": line}}),
            expect,
        });
    }
    let untested = (undecided > 0).then(|| {
        format!("not a case: {undecided} not_match example(s) no rule decides: what they get is the fallback's, not this rule's")
    });
    (out, untested)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = r#"
# A comment.
prefix_rule(
    pattern = ["git", ["push", "fetch"]],
    decision = "prompt",
    justification = "talks to the remote",
    match = [["git", "push", "origin", "main"], "git fetch --all"],
    not_match = ["git status"],
)
prefix_rule(pattern = ["cargo", "test"], match = ["cargo test --lib"])
"#;

    #[test]
    fn prefix_rules_are_read_from_the_syntax_tree() {
        let (rules, left) = parse(RULES).unwrap();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0].pattern,
            vec![vec!["git".to_owned()], vec!["push".into(), "fetch".into()]]
        );
        assert_eq!(rules[0].decision, "prompt");
        assert_eq!(rules[0].matches[1], vec!["git", "fetch", "--all"]);
        assert_eq!(rules[0].line, 3);
        assert_eq!(rules[1].decision, "allow");
    }

    #[test]
    fn alternatives_become_one_pattern_word() {
        let imported = import(RULES, "x.rules").unwrap();
        assert_eq!(
            imported.rules[0].yaml["commands"],
            json!(["git push *", "git fetch *"])
        );
        assert_eq!(imported.rules[0].yaml["decision"], "ask");
        assert_eq!(imported.rules[1].yaml["commands"], json!(["cargo test *"]));
        assert_eq!(word(&["a,b".into(), "c*".into()]), "{a\\,b,c\\*}");
    }

    #[test]
    fn anything_but_literal_prefix_rules_is_refused_never_run() {
        let text = r#"
load("//x.star", "y")
X = ["rm"]
def f():
    pass
prefix_rule(pattern = X)
prefix_rule(pattern = ["a" + "b"])
prefix_rule(pattern = ["a\tb"])
prefix_rule(pattern = [f"x"])
other_rule(pattern = ["x"])
prefix_rule(pattern = ["ok"], decision = "maybe")
prefix_rule(pattern = ["ok"], extra = "x")
prefix_rule(pattern = ["ok"])
"#;
        let (rules, left) = parse(text).unwrap();
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert_eq!(left.len(), 10, "{left:#?}");
        assert!(parse("prefix_rule(pattern = [").is_err());
    }

    /// Found by the import property test (issue 28): a `forbidden` rule with alternatives
    /// became one `{-rf,-fr}` word, which a deny's generous match reads as no option at all, so
    /// `rm -rf build` was not denied; now each combination is its own pattern. An allow keeps
    /// the one glob word (its strict match reads it).
    #[test]
    fn a_deny_with_alternatives_is_one_pattern_per_combination() {
        let imported = import(
            "prefix_rule(pattern = [\"rm\", [\"-rf\", \"-fr\"]], decision = \"forbidden\")\nprefix_rule(pattern = [\"ls\", [\"-a\", \"-l\"]])\n",
            "r",
        )
        .unwrap();
        assert_eq!(
            imported.rules[0].yaml["commands"],
            json!(["rm -rf *", "rm -fr *"])
        );
        assert_eq!(imported.rules[1].yaml["commands"], json!(["ls {-a,-l} *"]));
    }

    /// Found by the import property test (issue 28): a `prompt` rule on a read-only command
    /// that could not be carried left nothing to demote, and the read-only fallback let the
    /// command run. Its twin: a file with nothing left out keeps reads on allow.
    #[test]
    fn a_left_out_rule_leaves_reads_asking_and_a_clean_file_does_not() {
        let left = import(
            "prefix_rule(pattern = [\"ls\"] + [], decision = \"prompt\")\n",
            "r",
        )
        .unwrap()
        .policy_yaml()
        .unwrap();
        assert!(left.contains("defaults: {read_only: ask,"), "{left}");
        let clean = import(
            "prefix_rule(pattern = [\"ls\"], decision = \"prompt\")\n",
            "r",
        )
        .unwrap()
        .policy_yaml()
        .unwrap();
        assert!(clean.contains("defaults: {read_only: allow,"), "{clean}");
    }
}
