//! Issue 28, second round, item 3: Codex execpolicy import as a property. For every generated
//! rules file — `allow`, `prompt` and `forbidden` rules with overlapping prefixes and
//! alternatives, justifications with newlines (escaped and real), quotes of both kinds and
//! unicode, examples, and rules written in a form the importer cannot carry (a pattern built
//! by `+`, held in a variable) — the imported policy never judges a generated command more
//! permissively than Codex's own semantics over the source would: a `forbidden` rule the
//! importer carried is a deny; one it could not carry is at least an ask; a `prompt` is at
//! least an ask. And the justification's text never decides whether a rule survives.
//!
//! The oracle is written apart from the importer: Codex's prefix match (the argv is at least as
//! long as the pattern, each word one of the position's alternatives), strictest of the matching
//! rules (forbidden over prompt over allow). `PROPTEST_CASES` sets how many files are tried.

use crate::common;

use proptest::prelude::*;
use reasonix::{Judgement, PolicySet, Posture};

/// Pattern positions that overlap: `rm` and `rm -rf`, `git` and `git {push,fetch}`, …
const PATTERNS: &[&[&[&str]]] = &[
    &[&["rm"]],
    &[&["rm"], &["-rf"]],
    &[&["rm"], &["-rf", "-fr"]],
    &[&["git"]],
    &[&["git"], &["push"]],
    &[&["git"], &["push", "fetch"]],
    &[&["git"], &["push"], &["--force"]],
    &[&["npm"]],
    &[&["npm"], &["test"]],
    &[&["npm"], &["test", "install"]],
    &[&["ls"]],
    &[&["caf\u{e9}"]],
];

/// The commands each generated file is judged on (argv).
const COMMANDS: &[&[&str]] = &[
    &["rm", "-rf", "build"],
    &["rm", "-fr", "build"],
    &["rm", "build"],
    &["git", "push", "origin"],
    &["git", "push", "--force"],
    &["git", "fetch"],
    &["git", "status"],
    &["npm", "test"],
    &["npm", "install", "left-pad"],
    &["ls", "-la"],
    &["caf\u{e9}", "x"],
];

/// How two commands are joined into one call: each simple command is judged.
const JOINS: &[&str] = &[" && ", " ; ", " | "];

/// Justifications: none, plain, an escaped newline (an escape sequence the importer does not
/// read), a real newline (triple quotes), quotes of both kinds, unicode.
const JUSTIFICATIONS: &[Option<&str>] = &[
    None,
    Some(r#""plain reason""#),
    Some(r#""never\nthis""#),
    Some("\"\"\"two\nlines\"\"\""),
    Some(r#""it's dangerous""#),
    Some(r#"'say "no" to it'"#),
    Some(r#""say \"no\"""#),
    Some("\"ne pas supprimer \u{2014} \u{e7}a \u{2603} \u{65e5}\u{672c}\""),
    Some("'''a\n\"b\"\nc'''"),
];

/// How a rule is written: as the importer reads it, or in a form it must leave out.
#[derive(Clone, Copy, Debug)]
enum Form {
    Plain,
    /// `decision` omitted (Codex's default is allow).
    DefaultDecision,
    /// The pattern as `[..] + [..]`: not a literal, left out.
    Concatenated,
    /// The pattern in a variable: left out (and the assignment too).
    Variable,
}

#[derive(Clone, Debug)]
struct SourceRule {
    pattern: usize,
    decision: &'static str,
    justification: usize,
    form: Form,
    with_examples: bool,
}

fn rule() -> impl Strategy<Value = SourceRule> {
    (
        0..PATTERNS.len(),
        prop_oneof![Just("allow"), Just("prompt"), Just("forbidden")],
        0..JUSTIFICATIONS.len(),
        prop_oneof![
            6 => Just(Form::Plain),
            1 => Just(Form::DefaultDecision),
            1 => Just(Form::Concatenated),
            1 => Just(Form::Variable),
        ],
        any::<bool>(),
    )
        .prop_map(
            |(pattern, decision, justification, form, with_examples)| SourceRule {
                pattern,
                decision: if matches!(form, Form::DefaultDecision) {
                    "allow"
                } else {
                    decision
                },
                justification,
                form,
                with_examples,
            },
        )
}

fn quoted(word: &str) -> String {
    format!("\"{word}\"")
}

fn pattern_text(p: &[&[&str]]) -> String {
    let items: Vec<String> = p
        .iter()
        .map(|alts| {
            if alts.len() == 1 {
                quoted(alts[0])
            } else {
                format!(
                    "[{}]",
                    alts.iter()
                        .map(|a| quoted(a))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// The rules file, and whether each rule is in a form the importer carries.
fn render(rules: &[SourceRule]) -> (String, Vec<bool>) {
    let mut text = String::from("# generated\n");
    let mut carried = Vec::new();
    for (n, r) in rules.iter().enumerate() {
        let p = PATTERNS[r.pattern];
        let pattern = match r.form {
            Form::Concatenated => {
                let (head, tail) = p.split_at(1);
                format!("{} + {}", pattern_text(head), pattern_text(tail))
            }
            Form::Variable => {
                text.push_str(&format!("P{n} = {}\n", pattern_text(p)));
                format!("P{n}")
            }
            _ => pattern_text(p),
        };
        carried.push(matches!(r.form, Form::Plain | Form::DefaultDecision));
        let mut args = vec![format!("pattern = {pattern}")];
        if !matches!(r.form, Form::DefaultDecision) {
            args.push(format!("decision = \"{}\"", r.decision));
        }
        if let Some(j) = JUSTIFICATIONS[r.justification] {
            args.push(format!("justification = {j}"));
        }
        if r.with_examples {
            let example: Vec<&str> = p.iter().map(|alts| alts[0]).collect();
            args.push(format!("match = [{}]", quoted(&example.join(" "))));
        }
        text.push_str(&format!("prefix_rule(\n    {},\n)\n", args.join(",\n    ")));
    }
    (text, carried)
}

/// Codex's prefix match.
fn matches(pattern: &[&[&str]], argv: &[&str]) -> bool {
    argv.len() >= pattern.len() && pattern.iter().zip(argv).all(|(alts, w)| alts.contains(w))
}

fn rank(decision: &str) -> u8 {
    match decision {
        "forbidden" | "deny" => 2,
        "prompt" | "ask" => 1,
        _ => 0,
    }
}

/// The least strict verdict the import may give one simple command: a carried rule keeps its
/// rank; one left out still leaves at least an ask where it would have narrowed.
fn needed(rules: &[SourceRule], carried: &[bool], argv: &[&str]) -> u8 {
    rules
        .iter()
        .zip(carried)
        .filter(|(r, _)| matches(PATTERNS[r.pattern], argv))
        .map(|(r, &c)| {
            if c {
                rank(r.decision)
            } else {
                rank(r.decision).min(1)
            }
        })
        .max()
        .unwrap_or(0)
}

fn shell_line(argv: &[&str]) -> String {
    shlex::try_join(argv.iter().copied()).unwrap()
}

static WORLD: std::sync::LazyLock<common::World> = std::sync::LazyLock::new(common::World::new);

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(200),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_codex_import_is_never_more_permissive_than_its_source(
        rules in proptest::collection::vec(rule(), 1..7),
        pairs in proptest::collection::vec((0..COMMANDS.len(), 0..COMMANDS.len(), 0..JOINS.len()), 3),
    ) {
        let (text, carried) = render(&rules);
        let imported = reasonix::codex::import(&text, "generated.rules")
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        // The justification never decides whether a rule survives.
        let kept = carried.iter().filter(|c| **c).count();
        prop_assert_eq!(imported.rules.len(), kept, "{}\n{:?}", text, imported.left_out);
        let yaml = imported.policy_yaml().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let set = PolicySet::from_yaml("imported.yaml", &yaml)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{yaml}")))?;
        let gate = WORLD.gate(&set, Posture::Interactive);
        let mut lines: Vec<(String, u8)> = COMMANDS
            .iter()
            .map(|argv| (shell_line(argv), needed(&rules, &carried, argv)))
            .collect();
        for (a, b, j) in pairs {
            let need = needed(&rules, &carried, COMMANDS[a]).max(needed(&rules, &carried, COMMANDS[b]));
            lines.push((format!("{}{}{}", shell_line(COMMANDS[a]), JOINS[j], shell_line(COMMANDS[b])), need));
        }
        for (line, need) in lines {
            let call = serde_json::json!({"name": "bash", "arguments": {"command": line}}).to_string();
            let got = match gate.admit_text(&call) {
                Judgement::Allowed(_) => 0,
                Judgement::Ask(_) => 1,
                Judgement::Refused(a) => rank(a.verdict.as_str()).max(1),
            };
            prop_assert!(got >= need, "`{}` got rank {}, the source needs {}\n--- source\n{}\n--- imported\n{}", line, got, need, text, yaml);
        }
    }
}
