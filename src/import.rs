//! An imported policy: rules another agent's permission file states, as Reasonix YAML rules,
//! each with the rule it came from, how strictly it was read, and cases made from its own
//! examples; and the rules that could not be expressed, each with why. Written out as a YAML
//! policy (every rule after a comment quoting its source) and a `*.cases.yaml` file beside it,
//! so `reasonix policy test` checks the import.
//!
//! The readers are [`crate::claude::settings`] (Claude Code's `permissions`) and
//! [`crate::codex`] (Codex's `prefix_rule` files). They never widen: where the source's matching
//! is looser than a Reasonix rule can be, the rule imported is the strict reading, and its
//! comment says so.

use serde::Serialize;
use serde_json::Value;

/// The `defaults:` of an imported policy: reads run, anything else asks, nobody answering
/// means deny — what the agents imported from do when no rule decides.
pub const DEFAULTS: &str = "defaults: {read_only: allow, writer: ask, unattended: deny}\n";

/// The defaults of an import that left out a rule which may have narrowed reads: nothing runs
/// on a fallback ([`Imported::demote_reads`]).
pub const STRICT_DEFAULTS: &str = "defaults: {read_only: ask, writer: ask, unattended: deny}\n";

/// One imported rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The rule as the source wrote it (`allow "Bash(npm run test:*)"`).
    pub source: String,
    /// How it was read, when the reading is stricter than the source's own matching.
    pub reading: Option<String>,
    /// The YAML rule (`id`, `decision`, `tools`, …).
    pub yaml: Value,
    /// Cases from its examples.
    pub cases: Vec<Case>,
    /// Why it has no case, when it has none.
    pub untested: Option<String>,
}

/// One generated case, in the `*.cases.yaml` format.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    /// The case's name: the rule it checks and what the example is.
    pub name: String,
    /// The call.
    pub call: Value,
    /// The verdict expected.
    pub expect: &'static str,
}

/// A whole import.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    /// Where it came from, for the header.
    pub origin: String,
    /// Paragraphs for the header: how the source's rules were read.
    pub notes: Vec<String>,
    /// The rules imported.
    pub rules: Vec<Rule>,
    /// The rules left out: the source's text and why.
    pub left_out: Vec<(String, String)>,
    /// Why a read-only call no rule matched must ask rather than run, when it must: a rule
    /// left out may have narrowed reads too ([`Imported::demote_reads`]).
    pub reads_ask: Option<String>,
}

impl Imported {
    /// Keeps the import from widening where a rule that narrowed the source could not be
    /// carried over (issue 28, item 3): every imported allow that `overlaps` could have been
    /// narrowed by it becomes an ask, its reading says why, and its cases expect `ask`. So the
    /// imported policy is never more permissive than the source: what the source denied or
    /// asked about is at least asked about.
    pub fn demote_allows(&mut self, overlaps: &dyn Fn(&Value) -> bool, why: &str) {
        for rule in &mut self.rules {
            if rule.yaml.get("decision").and_then(Value::as_str) != Some("allow")
                || !overlaps(&rule.yaml)
            {
                continue;
            }
            rule.yaml["decision"] = Value::from("ask");
            let note = format!("imported as ask, not allow: {why}");
            rule.reading = Some(match rule.reading.take() {
                Some(r) => format!("{r}; {note}"),
                None => note,
            });
            for case in &mut rule.cases {
                if case.expect == "allow" {
                    case.expect = "ask";
                }
            }
        }
    }

    /// Keeps the fallback from widening where a rule that could have narrowed a read-only
    /// command was left out (found by the Codex import property test, issue 28): a read-only
    /// call no imported rule decides asks ([`STRICT_DEFAULTS`]) instead of running.
    pub fn demote_reads(&mut self, why: &str) {
        self.reads_ask = Some(why.to_owned());
    }

    /// The YAML policy, with a comment quoting each rule's source and one listing what was
    /// left out.
    pub fn policy_yaml(&self) -> Result<String, yaml_serde::Error> {
        let mut out = String::new();
        out.push_str(&format!("# {}\n", self.origin));
        for note in &self.notes {
            out.push_str("#\n");
            for line in wrap(note, 96) {
                out.push_str(&format!("# {line}\n"));
            }
        }
        out.push_str("version: 1\n");
        match &self.reads_ask {
            Some(why) => {
                out.push_str(&format!(
                    "# defaults.read_only is ask, not allow: {}\n",
                    one_line(why)
                ));
                out.push_str(STRICT_DEFAULTS);
            }
            None => out.push_str(DEFAULTS),
        }
        if self.rules.is_empty() {
            out.push_str("rules: []\n");
        } else {
            out.push_str("rules:\n");
        }
        for rule in &self.rules {
            out.push_str(&format!("  # {}\n", one_line(&rule.source)));
            if let Some(reading) = &rule.reading {
                for (i, line) in wrap(reading, 92).into_iter().enumerate() {
                    let lead = if i == 0 { "strict reading: " } else { "  " };
                    out.push_str(&format!("  # {lead}{line}\n"));
                }
            }
            if let Some(why) = &rule.untested {
                out.push_str(&format!("  # {}\n", one_line(why)));
            }
            let text = yaml_serde::to_string(&vec![ordered(&rule.yaml)?])?;
            for line in text.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        if !self.left_out.is_empty() {
            out.push_str(&format!("# Not imported ({}):\n", self.left_out.len()));
            for (source, why) in &self.left_out {
                out.push_str(&format!("#   {}: {}\n", one_line(source), one_line(why)));
            }
        }
        Ok(out)
    }

    /// The cases of every rule, as a `*.cases.yaml` file.
    pub fn cases_yaml(&self) -> Result<String, yaml_serde::Error> {
        let cases: Vec<&Case> = self.rules.iter().flat_map(|r| &r.cases).collect();
        let mut out = format!(
            "# Cases generated from each imported rule's own examples: {}\n",
            self.origin
        );
        if cases.is_empty() {
            out.push_str("[]\n");
        } else {
            out.push_str(&yaml_serde::to_string(&cases)?);
        }
        Ok(out)
    }

    /// How many cases there are.
    pub fn case_count(&self) -> usize {
        self.rules.iter().map(|r| r.cases.len()).sum()
    }
}

/// The keys of a rule in the order people read them.
const KEY_ORDER: &[&str] = &[
    "id", "decision", "tools", "effects", "paths", "commands", "exact", "reason",
];

/// A rule as a YAML mapping with its keys in [`KEY_ORDER`].
fn ordered(rule: &Value) -> Result<yaml_serde::Value, yaml_serde::Error> {
    let mut map = yaml_serde::Mapping::new();
    for key in KEY_ORDER {
        if let Some(v) = rule.get(*key) {
            map.insert(yaml_serde::Value::from(*key), yaml_serde::to_value(v)?);
        }
    }
    Ok(yaml_serde::Value::Mapping(map))
}

/// Text on one line (a newline in a source rule would end its comment).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Words wrapped to lines of at most `width` characters (a longer word stands alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_policy_quotes_each_source_and_lists_what_was_left_out() {
        let imported = Imported {
            origin: "Imported from x".into(),
            notes: vec!["a note".into()],
            rules: vec![Rule {
                source: "allow \"Bash(git status)\"".into(),
                reading: Some("word by word".into()),
                yaml: json!({"id": "r1", "decision": "allow", "tools": ["bash"], "commands": ["git status"]}),
                cases: vec![Case {
                    name: "r1".into(),
                    call: json!({"name": "bash", "arguments": {"command": "git status"}}),
                    expect: "allow",
                }],
                untested: None,
            }],
            left_out: vec![("ask \"WebSearch\"".into(), "no such tool\nhere".into())],
            reads_ask: None,
        };
        let yaml = imported.policy_yaml().unwrap();
        assert!(
            yaml.contains(
                "  # allow \"Bash(git status)\"\n  # strict reading: word by word\n  - id: r1\n"
            ),
            "{yaml}"
        );
        assert!(
            yaml.contains("#   ask \"WebSearch\": no such tool here\n"),
            "{yaml}"
        );
        let set = crate::PolicySet::from_texts(&[("p.yaml", &yaml)], &[], &[]).unwrap();
        assert_eq!(set.yaml_rules().len(), 1);
        let cases = imported.cases_yaml().unwrap();
        assert!(cases.contains("expect: allow"), "{cases}");
    }
}
