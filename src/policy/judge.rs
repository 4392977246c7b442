//! Judging one classified, resolved call against a [`CompiledPolicy`]: the precedence and
//! matching described in the module doc of [`crate::policy`], step by step, in that order.
//!
//! Owns the policy stage's answer ([`Ruling`]), the facts it reads ([`Facts`]), and the
//! [`PathFilter`] that deny and ask rules lend to a tool that reads files it does not name.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::Decision;
use super::commands;
use super::compile::{CompiledPolicy, Rule};
use crate::sandbox::TouchedPath;
use crate::shell::{Analysis, Normalized};
use crate::vocab::{Access, Effect, PathRole};

/// A vote that matched: a YAML rule or a Rego vote.
struct Hit {
    decision: Decision,
    id: String,
    source: String,
    reason: Option<String>,
}

impl Hit {
    fn rule(rule: &Rule, decision: Decision) -> Hit {
        Hit {
            decision,
            id: rule.id.clone(),
            source: rule.source.clone(),
            reason: rule.reason.clone(),
        }
    }
}

/// What policy sees of a classified, resolved call.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The tool name.
    pub tool: &'a str,
    /// Its effects.
    pub effects: &'a BTreeSet<Effect>,
    /// The paths it touches.
    pub paths: &'a [TouchedPath],
    /// Whether it changes nothing.
    pub read_only: bool,
    /// Whether the tool saw everything the call does.
    pub analysed: bool,
    /// The analysis of a bash call.
    pub bash: Option<&'a Analysis>,
    /// The policy input document as JSON, when Rego policies are loaded.
    pub input: Option<&'a str>,
}

/// A rule that matched a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleHit {
    /// The rule id, or `rules[N]` when it has none.
    pub id: String,
    /// The file it came from.
    pub source: String,
    /// What it decides.
    pub decision: Decision,
    /// True when this rule decided the outcome; false when a stronger decision overrode it.
    pub decisive: bool,
}

/// Which fallback decided a call no rule decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// `defaults.read_only`.
    ReadOnly,
    /// `defaults.writer`.
    Writer,
}

/// The policy stage's answer on one call: what the rules and Rego decided, before the sandbox
/// and approve stages turn it into the gate's [`Verdict`](crate::gate::Verdict).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ruling {
    /// The decision.
    pub decision: Decision,
    /// Set when no rule decided and a fallback did.
    pub fallback: Option<Fallback>,
    /// Every rule that matched, decisive ones first.
    pub hits: Vec<RuleHit>,
    /// Why, in words.
    pub reasons: Vec<String>,
}

/// Paths that deny or ask rules protect from one call (see [`CompiledPolicy::withholding`]).
#[derive(Clone, Debug)]
pub struct PathFilter {
    policy: Arc<CompiledPolicy>,
    active: Vec<bool>,
    any: bool,
}

impl PathFilter {
    /// The id of a rule that protects `path`, if any.
    pub fn withholds(&self, path: &Path) -> Option<&str> {
        if !self.any {
            return None;
        }
        let mut scratch = Vec::new();
        let mut hit = None;
        self.policy.paths.for_each_match(path, &mut scratch, |r| {
            if hit.is_none() && self.active[r] {
                hit = Some(r);
            }
        });
        hit.map(|r| self.policy.rules[r].id.as_str())
    }
}

/// Per rule: which paths it matches, in which forms.
struct PathMatches {
    /// A form of some path matched.
    any: Vec<bool>,
    /// Per path (index into the call's paths): the rules that match every one of its forms.
    whole: Vec<Vec<bool>>,
}

impl CompiledPolicy {
    fn tool_ok(&self, tool: &str) -> Vec<bool> {
        let mut scratch = Vec::new();
        let mut ok: Vec<bool> = self.rules.iter().map(|r| !r.has_tools).collect();
        self.tools
            .for_each_match(Path::new(tool), &mut scratch, |r| ok[r] = true);
        ok
    }

    /// The deny and ask rules with `paths` that apply to `tool` with these effects: what a tool
    /// that reads many files (grep) must skip as it goes, because policy would have refused or
    /// asked about each of those files had it been named.
    pub fn withholding(self: &Arc<Self>, tool: &str, effects: &BTreeSet<Effect>) -> PathFilter {
        let active = self.protecting(tool, effects);
        PathFilter {
            any: active.iter().any(|&a| a),
            policy: Arc::clone(self),
            active,
        }
    }

    /// Per rule: whether it is a deny or ask rule on paths that applies to this tool and these
    /// effects.
    fn protecting(&self, tool: &str, effects: &BTreeSet<Effect>) -> Vec<bool> {
        let tool_ok = self.tool_ok(tool);
        self.rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                tool_ok[i]
                    && r.has_paths
                    && matches!(r.decision, Decision::Deny | Decision::Ask)
                    && r.effects.as_ref().is_none_or(|e| !e.is_disjoint(effects))
            })
            .collect()
    }

    fn match_paths(&self, paths: &[TouchedPath]) -> PathMatches {
        let n = self.rules.len();
        let mut scratch = Vec::new();
        let mut any = vec![false; n];
        let mut whole = Vec::with_capacity(paths.len());
        for path in paths {
            let forms = path.forms();
            let mut count = vec![0usize; n];
            for form in &forms {
                let mut seen = vec![false; n];
                self.paths.for_each_match(form, &mut scratch, |r| {
                    any[r] = true;
                    if !seen[r] {
                        seen[r] = true;
                        count[r] += 1;
                    }
                });
            }
            whole.push(
                count
                    .iter()
                    .map(|&c| !forms.is_empty() && c == forms.len())
                    .collect(),
            );
        }
        PathMatches { any, whole }
    }

    /// Judges one call under the precedence in the module doc.
    pub fn judge(&self, facts: &Facts<'_>) -> Ruling {
        let tool_ok = self.tool_ok(facts.tool);
        let matches = self.match_paths(facts.paths);
        let normalized: Vec<Normalized> = facts
            .bash
            .map(|b| b.commands.iter().map(|c| Normalized::of(&c.argv)).collect())
            .unwrap_or_default();

        // Steps 1 and 2: deny and ask rules, matched generously.
        let mut hits: Vec<Hit> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            if !tool_ok[i] || rule.decision == Decision::Allow {
                continue;
            }
            let paths_ok = !rule.has_paths || matches.any[i];
            let effects_ok = rule
                .effects
                .as_ref()
                .is_none_or(|e| !e.is_disjoint(facts.effects));
            let commands_ok = !rule.has_commands()
                || facts.bash.is_some_and(|b| {
                    b.commands.iter().zip(&normalized).any(|(c, n)| {
                        rule.commands.iter().any(|p| p.sees(c, n))
                            || rule.exact.iter().any(|e| commands::exact(e, c))
                    })
                });
            if paths_ok && effects_ok && commands_ok {
                hits.push(Hit::rule(rule, rule.decision));
            }
        }

        // Rego votes join the rules'; an error denies (fail closed).
        if let Some(rego) = &self.rego {
            match facts.input.map(|input| rego.votes(input)) {
                Some(Ok(votes)) => hits.extend(votes.into_iter().map(|v| Hit {
                    decision: v.decision,
                    id: v.id,
                    source: v.source,
                    reason: Some(v.reason),
                })),
                Some(Err(e)) => hits.push(Hit {
                    decision: Decision::Deny,
                    id: "rego-error".into(),
                    source: "rego".into(),
                    reason: Some(format!(
                        "the Rego policy failed, so the call is denied: {e}"
                    )),
                }),
                None => hits.push(Hit {
                    decision: Decision::Deny,
                    id: "rego-error".into(),
                    source: "rego".into(),
                    reason: Some(
                        "internal error: no input document for the Rego policy; please report it"
                            .into(),
                    ),
                }),
            }
        }

        // Step 3: allow, strictly.
        let mut notes = Vec::new();
        let allow_ok = |i: usize, rule: &Rule| {
            tool_ok[i]
                && rule.decision == Decision::Allow
                && rule
                    .effects
                    .as_ref()
                    .is_none_or(|e| !facts.effects.is_empty() && facts.effects.is_subset(e))
        };
        match facts.bash {
            None => {
                for (i, rule) in self.rules.iter().enumerate() {
                    if !allow_ok(i, rule) || rule.has_commands() {
                        continue;
                    }
                    let paths_ok = !rule.has_paths
                        || (!facts.paths.is_empty() && matches.whole.iter().all(|p| p[i]));
                    if !paths_ok {
                        continue;
                    }
                    if facts.analysed {
                        hits.push(Hit::rule(rule, Decision::Allow));
                    } else {
                        notes.push(format!(
                            "allow rule {} ({}) cannot cover this call: the tool could not analyse it",
                            rule.id, rule.source
                        ));
                    }
                }
            }
            Some(bash) => {
                let used = self.bash_allow(bash, facts, &matches, &allow_ok, &mut notes);
                hits.extend(
                    used.into_iter()
                        .map(|i| Hit::rule(&self.rules[i], Decision::Allow)),
                );
            }
        }

        let winner = hits.iter().map(|h| h.decision).max();
        let mut reasons = Vec::new();
        let mut rule_hits: Vec<RuleHit> = Vec::new();
        for decisive in [true, false] {
            for hit in &hits {
                if (Some(hit.decision) == winner) != decisive {
                    continue;
                }
                if decisive {
                    reasons.push(match &hit.reason {
                        Some(reason) => format!("{}: {reason}", hit.id),
                        None => format!("rule {} ({}) says {}", hit.id, hit.source, hit.decision),
                    });
                }
                rule_hits.push(RuleHit {
                    id: hit.id.clone(),
                    source: hit.source.clone(),
                    decision: hit.decision,
                    decisive,
                });
            }
        }

        // Step 4: the fallback.
        let mut ruling = match winner {
            Some(decision) => Ruling {
                decision,
                fallback: None,
                hits: rule_hits,
                reasons,
            },
            None => {
                let mut read_only = facts.read_only;
                if let Some(bash) = facts.bash {
                    let unseen = bash.unnamed_reads.first().cloned().or_else(|| {
                        facts
                            .paths
                            .iter()
                            .find(|p| p.role == PathRole::Argument && p.resolution.is_none())
                            .map(|p| p.written.clone())
                    });
                    if let (true, Some(unseen)) = (read_only, unseen) {
                        let protecting = self.protecting(facts.tool, facts.effects);
                        if let Some(r) = protecting.iter().position(|&p| p) {
                            read_only = false;
                            notes.push(format!(
                                "`{unseen}` reads files it does not name, and rule {} protects paths that may be among them: judged as a writer",
                                self.rules[r].id
                            ));
                        }
                    }
                }
                let (fallback, decision, what) = if read_only {
                    (Fallback::ReadOnly, self.defaults.read_only, "read_only")
                } else {
                    (Fallback::Writer, self.defaults.writer, "writer")
                };
                let kind = if read_only {
                    "read-only call"
                } else {
                    "call that may change things"
                };
                reasons.push(format!(
                    "no rule decided this {kind}; defaults.{what} is {decision}"
                ));
                Ruling {
                    decision,
                    fallback: Some(fallback),
                    hits: rule_hits,
                    reasons,
                }
            }
        };
        ruling.reasons.extend(notes);

        // Step 5: fail closed. What was not understood is never allowed, whatever allowed it
        // (a rule, Rego or a fallback); a hazard is allowed only by an exact rule or Rego, never
        // by a fallback.
        if ruling.decision == Decision::Allow {
            let cap = if !facts.analysed {
                Some(match facts.bash {
                    Some(b) => format!(
                        "the command is not understood ({}), so it cannot be allowed without a person: ask",
                        b.problems.join("; ")
                    ),
                    None => "the call could not be analysed, so it cannot be allowed without a person: ask".into(),
                })
            } else if ruling.fallback.is_some() {
                facts.bash.and_then(|b| b.hazards.first()).map(|h| {
                    format!(
                        "hazard {} ({}): only an exact rule can allow it: ask",
                        h.id, h.detail
                    )
                })
            } else {
                None
            };
            if let Some(why) = cap {
                ruling.decision = Decision::Ask;
                ruling.reasons.insert(0, why);
                for hit in &mut ruling.hits {
                    hit.decisive = false;
                }
            }
        }
        ruling
    }

    /// Step 3 for a bash call: allowed only when every command that needs it is covered by an
    /// allow rule, every hazard's command by an exact rule, and every write through a
    /// redirection by an allow rule's `paths`. Returns the rules used, or nothing.
    fn bash_allow(
        &self,
        bash: &Analysis,
        facts: &Facts<'_>,
        matches: &PathMatches,
        allow_ok: &dyn Fn(usize, &Rule) -> bool,
        notes: &mut Vec<String>,
    ) -> Vec<usize> {
        let mut used = BTreeSet::new();
        let mut uncovered = Vec::new();
        let mut exact_by: Vec<Option<usize>> = vec![None; bash.commands.len()];
        for (ci, c) in bash.commands.iter().enumerate() {
            let mut by = None;
            for (i, rule) in self.rules.iter().enumerate() {
                if !allow_ok(i, rule) {
                    continue;
                }
                if rule.exact.iter().any(|e| commands::exact(e, c)) {
                    exact_by[ci] = Some(i);
                    by = Some(i);
                    break;
                }
                if by.is_none() && rule.commands.iter().any(|p| p.covers(c)) {
                    by = Some(i);
                }
            }
            match by {
                Some(i) => {
                    used.insert(i);
                }
                None if bash.needs_cover(ci) => uncovered.push(c.argv.join(" ")),
                None => {}
            }
        }
        let any_command_rule = self
            .rules
            .iter()
            .enumerate()
            .any(|(i, r)| allow_ok(i, r) && r.has_commands());
        let mut blocked = false;
        if !uncovered.is_empty() {
            blocked = true;
            if any_command_rule {
                let shown: Vec<String> =
                    uncovered.iter().take(3).map(|c| format!("`{c}`")).collect();
                notes.push(format!(
                    "no allow rule covers {}{}",
                    shown.join(", "),
                    if uncovered.len() > 3 { " and more" } else { "" }
                ));
            }
        }
        for h in &bash.hazards {
            let excused = h.command.and_then(|c| exact_by[c]);
            match excused {
                Some(i) => {
                    used.insert(i);
                }
                None => {
                    blocked = true;
                    if any_command_rule {
                        notes.push(format!(
                            "hazard {} ({}): only an exact rule can allow it",
                            h.id, h.detail
                        ));
                    }
                }
            }
        }
        for (pi, path) in facts.paths.iter().enumerate() {
            if path.role != PathRole::Redirect || path.access != Access::Write {
                continue;
            }
            let by = self
                .rules
                .iter()
                .enumerate()
                .find(|(i, r)| allow_ok(*i, r) && r.has_paths && matches.whole[pi][*i]);
            match by {
                Some((i, _)) => {
                    used.insert(i);
                }
                None => {
                    blocked = true;
                    if any_command_rule {
                        notes.push(format!(
                            "no allow rule's paths cover the write to {:?}",
                            path.written
                        ));
                    }
                }
            }
        }
        if !bash.analysed {
            blocked = true;
        }
        if blocked || used.is_empty() {
            Vec::new()
        } else {
            used.into_iter().collect()
        }
    }
}
