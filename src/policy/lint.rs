//! Warnings about policies that load but can never do what they seem to say — what `reasonix
//! policy check` prints (and fails on with `--deny-warnings`):
//!
//! 1. a tool glob (in `tools:` or `except: tools:`) that matches no tool, so its rule never
//!    applies (or its except never exempts);
//! 2. `commands:` or `exact:` on a rule whose tools include no shell, so they never match;
//! 3. an allow rule that a deny or ask rule always overrides: every call the allow could cover
//!    is one the other rule matches (judged on the rules' conditions, conservatively — a warning
//!    is given only when it is certain);
//! 4. in Rego: a package outside `reasonix` that nothing imports, a `data.` reference nothing
//!    provides, a tool name compared with `input.tool` that no tool has (see `rego/analysis.rs`).
//!
//! Nothing here changes a verdict: the gate judges the same with or without warnings.

use std::collections::BTreeSet;

use super::commands::Pattern;
use super::yaml::{PathGlob, RuleSpec};
use super::{Decision, PolicyProblem, PolicySet};
use crate::shell::{Analysis, Normalized};
use crate::vocab::Effect;

/// What the lint knows of one tool calls can name.
#[derive(Clone, Debug)]
pub struct ToolFacts {
    /// Its name.
    pub name: String,
    /// Effects every call of it has (`exec` for bash, `read` for read_file…).
    pub effects: BTreeSet<Effect>,
    /// Whether its calls are shell commands, which `commands:` and `exact:` match.
    pub shell: bool,
}

/// One rule with where it is and what it is called.
struct Named<'a> {
    file: &'a str,
    id: String,
    spec: &'a RuleSpec,
}

impl PolicySet {
    /// Warnings about rules that can never fire, given the tools calls can name (see the module
    /// doc). Empty when all is well.
    pub fn warnings(&self, tools: &[ToolFacts]) -> Vec<PolicyProblem> {
        let mut out = Vec::new();
        let rules: Vec<Named<'_>> = self
            .sources
            .iter()
            .flat_map(|s| {
                s.file.rules.iter().enumerate().map(|(i, spec)| Named {
                    file: &s.name,
                    id: spec
                        .id
                        .as_ref()
                        .map(|id| id.0.clone())
                        .unwrap_or_else(|| format!("rules[{i}]")),
                    spec,
                })
            })
            .collect();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();

        for rule in &rules {
            let globs = rule
                .spec
                .tools
                .iter()
                .flatten()
                .map(|g| (g, "tools"))
                .chain(
                    rule.spec
                        .except
                        .iter()
                        .flat_map(|e| e.tools.iter().flatten())
                        .map(|g| (g, "except: tools")),
                );
            for (glob, key) in globs {
                if matching(&glob.0, tools).is_empty() {
                    out.push(warning(
                        rule,
                        format!(
                            "{key} glob {:?} matches no tool (the tools are: {}), so {}",
                            glob.0,
                            names.join(", "),
                            if key == "tools" {
                                "it never selects a call"
                            } else {
                                "it never exempts a call"
                            }
                        ),
                    ));
                }
            }
            let has_commands = rule.spec.commands.is_some() || rule.spec.exact.is_some();
            let selected = selected(rule.spec, tools);
            if has_commands && !selected.is_empty() && !selected.iter().any(|t| t.shell) {
                out.push(warning(
                    rule,
                    "commands and exact lines match shell commands only, and none of its tools runs one, so it never matches".into(),
                ));
            }
        }

        for allow in rules.iter().filter(|r| r.spec.decision == Decision::Allow) {
            let covered = selected(allow.spec, tools);
            if covered.is_empty() {
                continue;
            }
            if let Some(over) = rules
                .iter()
                .filter(|r| r.spec.decision != Decision::Allow)
                .find(|r| always_overrides(r.spec, allow.spec, &covered))
            {
                out.push(warning(
                    allow,
                    format!(
                        "this allow can never decide: {} rule {} ({}) matches every call it covers, and {} wins over allow; narrow that rule (an `except:` can say so), or remove this one",
                        over.spec.decision, over.id, over.file, over.spec.decision
                    ),
                ));
            }
        }

        if let Some(rego) = self.rego() {
            out.extend(rego.warnings(&names));
        }
        out
    }
}

fn warning(rule: &Named<'_>, message: String) -> PolicyProblem {
    PolicyProblem {
        file: rule.file.to_owned(),
        line: None,
        column: None,
        message: format!("rule {}: {message}", rule.id),
    }
}

/// The tools a tool glob matches.
fn matching<'t>(glob: &str, tools: &'t [ToolFacts]) -> Vec<&'t ToolFacts> {
    match globset::Glob::new(glob) {
        Ok(g) => {
            let m = g.compile_matcher();
            tools.iter().filter(|t| m.is_match(&t.name)).collect()
        }
        Err(_) => Vec::new(),
    }
}

/// The tools a rule's `tools:` selects (every tool without it).
fn selected<'t>(spec: &RuleSpec, tools: &'t [ToolFacts]) -> Vec<&'t ToolFacts> {
    match &spec.tools {
        None => tools.iter().collect(),
        Some(globs) => tools
            .iter()
            .filter(|t| {
                globs
                    .iter()
                    .any(|g| matching(&g.0, std::slice::from_ref(*t)).len() == 1)
            })
            .collect(),
    }
}

/// Whether the deny or ask rule `over` matches every call the allow rule `allow` could cover,
/// `covered` being the tools the allow selects. Certain only, never guessed: any condition this
/// cannot compare makes the answer no.
fn always_overrides(over: &RuleSpec, allow: &RuleSpec, covered: &[&ToolFacts]) -> bool {
    if over.except.is_some() {
        return false;
    }
    // Tools: the other rule selects every tool the allow does.
    if let Some(globs) = &over.tools {
        let all = covered.iter().all(|t| {
            globs
                .iter()
                .any(|g| matching(&g.0, std::slice::from_ref(*t)).len() == 1)
        });
        if !all {
            return false;
        }
    }
    // Paths: an allow with paths covers only calls whose every path matches its globs; if
    // those globs are among the other rule's, the other rule matches them too.
    if let Some(over_paths) = &over.paths {
        let Some(allow_paths) = &allow.paths else {
            return false;
        };
        let theirs: BTreeSet<&str> = over_paths.iter().map(|p: &PathGlob| p.0.as_str()).collect();
        if !allow_paths.iter().all(|p| theirs.contains(p.0.as_str())) {
            return false;
        }
    }
    // Effects: a call the allow covers has only the allow's effects (or, without them, at
    // least what every call of its tool has); the other rule needs one of them.
    if let Some(over_effects) = &over.effects {
        let over_effects: BTreeSet<Effect> = over_effects.iter().copied().collect();
        let certain = match &allow.effects {
            Some(allow_effects) => allow_effects.iter().all(|e| over_effects.contains(e)),
            None => covered
                .iter()
                .all(|t| !t.effects.is_disjoint(&over_effects)),
        };
        if !certain {
            return false;
        }
    }
    // Commands: every command line the allow covers is one the other rule sees. Only literal
    // allow patterns are compared (a glob in a word could cover commands the other rule does
    // not see), and only when the allow covers shell calls alone.
    if over.commands.is_some() || over.exact.is_some() {
        if !covered.iter().all(|t| t.shell) {
            return false;
        }
        let mut lines: Vec<Vec<String>> = Vec::new();
        for p in allow.commands.iter().flatten() {
            let mut words = p.0.clone();
            if words.len() > 1 && words.last().is_some_and(|w| w == "*") {
                words.pop();
            }
            if words.iter().any(|w| w.contains(['*', '?', '[', '{', '\\'])) {
                return false;
            }
            lines.push(words);
        }
        lines.extend(allow.exact.iter().flatten().map(|e| e.0.clone()));
        if lines.is_empty() {
            return false;
        }
        let patterns: Vec<Pattern> = over
            .commands
            .iter()
            .flatten()
            .filter_map(Pattern::compile)
            .collect();
        for words in &lines {
            let script: Vec<String> = words.iter().map(|w| quote(w)).collect();
            let analysis = Analysis::of(&script.join(" "));
            let [command] = analysis.commands.as_slice() else {
                return false;
            };
            let normalized = Normalized::of(&command.argv);
            let seen = patterns.iter().any(|p| p.sees(command, &normalized))
                || over
                    .exact
                    .iter()
                    .flatten()
                    .any(|e| super::commands::exact(e, command));
            if !seen {
                return false;
            }
        }
    }
    true
}

/// A word quoted for bash, so that it stays one static word.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolFacts> {
        let t = |name: &str, effects: &[Effect], shell: bool| ToolFacts {
            name: name.into(),
            effects: effects.iter().copied().collect(),
            shell,
        };
        vec![
            t("bash", &[Effect::Exec], true),
            t("read_file", &[Effect::Read], false),
            t("write_file", &[Effect::Write], false),
        ]
    }

    fn warnings(rules: &str) -> Vec<String> {
        let set = PolicySet::from_yaml("p.yaml", &format!("version: 1\nrules:\n{rules}")).unwrap();
        set.warnings(&tools())
            .into_iter()
            .map(|w| w.message)
            .collect()
    }

    #[test]
    fn a_tool_glob_that_matches_no_tool_is_a_warning() {
        let w = warnings("  - id: typo\n    decision: deny\n    tools: [wirte_file]\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("\"wirte_file\" matches no tool"), "{w:?}");
        assert!(warnings("  - decision: deny\n    tools: [\"*_file\"]\n").is_empty());
        let w =
            warnings("  - decision: deny\n    paths: [.env]\n    except: {tools: [raed_file]}\n");
        assert!(w[0].contains("except: tools glob \"raed_file\""), "{w:?}");
    }

    #[test]
    fn commands_on_a_rule_without_a_shell_is_a_warning() {
        let w = warnings("  - decision: deny\n    tools: [read_file]\n    commands: [\"rm *\"]\n");
        assert!(w[0].contains("match shell commands only"), "{w:?}");
    }

    #[test]
    fn an_allow_an_ask_always_overrides_is_a_warning() {
        // Every bash call may exec: an ask on exec overrides every bash allow.
        let w = warnings(
            "  - id: careful\n    decision: ask\n    effects: [exec]\n  - id: tests\n    decision: allow\n    tools: [bash]\n    commands: [\"cargo test *\"]\n",
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("rule tests: this allow can never decide: ask rule careful"),
            "{w:?}"
        );
        // A deny on `git push *` sees every `git push origin *`.
        let w = warnings(
            "  - decision: deny\n    commands: [\"git push *\"]\n  - id: push\n    decision: allow\n    tools: [bash]\n    commands: [\"git push origin *\"]\n",
        );
        assert!(w.iter().any(|w| w.contains("rule push")), "{w:?}");
        // Same paths.
        let w = warnings(
            "  - decision: ask\n    paths: [\"docs/**\"]\n  - id: docs\n    decision: allow\n    tools: [write_file]\n    paths: [\"docs/**\"]\n",
        );
        assert!(w.iter().any(|w| w.contains("rule docs")), "{w:?}");
    }

    #[test]
    fn an_allow_that_can_still_decide_is_not_a_warning() {
        for rules in [
            // The ask is about the network; cargo test is not always that.
            "  - decision: ask\n    effects: [network]\n  - decision: allow\n    tools: [bash]\n    commands: [\"cargo test *\"]\n",
            // An except says when the ask steps aside.
            "  - decision: ask\n    effects: [exec]\n    except: {commands: [\"cargo test *\"]}\n  - decision: allow\n    tools: [bash]\n    commands: [\"cargo test *\"]\n",
            // Different paths.
            "  - decision: ask\n    paths: [\"docs/private/**\"]\n  - decision: allow\n    tools: [write_file]\n    paths: [\"docs/**\"]\n",
            // A deny on `git push --force` does not see every `git push`.
            "  - decision: deny\n    commands: [\"git push --force *\"]\n  - decision: allow\n    tools: [bash]\n    commands: [\"git push *\"]\n",
            // A glob in the allow's words: not compared.
            "  - decision: deny\n    commands: [\"npm run test:unit\"]\n  - decision: allow\n    tools: [bash]\n    commands: [\"npm run test:*\"]\n",
            // Only some of the allow's tools.
            "  - decision: ask\n    tools: [bash]\n  - decision: allow\n    paths: [\"src/**\"]\n",
        ] {
            assert!(warnings(rules).is_empty(), "{rules}: {:?}", warnings(rules));
        }
    }
}
