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
use super::pattern::OwnedSet;
use super::rego::RegoInput;
use crate::sandbox::TouchedPath;
use crate::sandbox::jail::{JailPlan, Shape, Writes};
use crate::shell::{Analysis, Dynamic, Normalized, RedirectKind, readers};
use crate::vocab::{Access, Effect, PathRole};

/// A vote that matched: a YAML rule or a Rego vote.
struct Hit {
    decision: Decision,
    id: String,
    source: String,
    reason: Option<String>,
    /// It names the variables of a started process's environment: a YAML rule with `env:`, or
    /// a Rego vote of a package that reads `input.arguments.env`.
    names_env: bool,
}

impl Hit {
    fn rule(rule: &Rule, decision: Decision) -> Hit {
        Hit {
            decision,
            id: rule.id.clone(),
            source: rule.source.clone(),
            reason: rule.reason.clone(),
            names_env: rule.env.is_some(),
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
    /// The policy input document, when Rego policies are loaded.
    pub input: Option<&'a RegoInput>,
    /// The same document as the Rego modules of files nobody trusts read it, when there are
    /// any ([`CompiledPolicy::narrowing_rego`]).
    pub narrowing_input: Option<&'a RegoInput>,
    /// For `network_connect`: the host and port asked for.
    pub destination: Option<(&'a str, u16)>,
    /// For a call that starts a process: the variables it sets in that process's environment,
    /// each with why it can change what runs when it is not known to be inert.
    pub environment: &'a [(String, Option<String>)],
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
    /// Why only a person may let this call run, when that is so (step 5 of the precedence in
    /// [`crate::policy`]): the call is not understood, has a hazard no `exact` line or Rego
    /// allow accepted, or (bash) has a part decided at run time that no Rego allow accepted.
    /// Always `None` for a `deny`; when set, the decision is `ask` — either step 5 capped an
    /// allow, or a rule or the fallback already asked. No posture may turn such an ask into an
    /// allow: `defaults.unattended: allow` is for asks a policy chose, not for what it could not
    /// judge.
    pub needs_person: Option<String>,
}

/// Paths that deny or ask rules protect from one call (see [`CompiledPolicy::withholding`]).
#[derive(Clone, Debug)]
pub struct PathFilter {
    policy: Arc<CompiledPolicy>,
    active: Vec<bool>,
    /// Per rule: its `except:` names paths (and nothing the filter cannot see), so a path its
    /// except covers is not withheld by it.
    path_except: Vec<bool>,
    any: bool,
}

impl PathFilter {
    /// Whether any rule could protect a path from this call (else nothing need be looked at).
    pub fn protects_any(&self) -> bool {
        self.any
    }

    /// What tells this filter apart from another (the compiled policy it reads and the rules
    /// it applies): equal for two filters that protect the same paths.
    pub fn identity(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (Arc::as_ptr(&self.policy) as usize).hash(&mut h);
        self.active.hash(&mut h);
        self.path_except.hash(&mut h);
        h.finish()
    }

    /// The shape of a run under `plan` that writes as `writes`, with each path this filter
    /// protects that exists there now covered ([`JailPlan::protected`]): what every jail covers
    /// — a bash call's, an MCP server's, a hook's, `sandbox exec`'s.
    pub fn shape(&self, plan: &JailPlan, writes: Writes) -> Shape {
        let hidden = if self.any {
            plan.protected(self.identity(), &|p| self.withholds(p).is_some())
        } else {
            Vec::new()
        };
        Shape { writes, hidden }
    }

    /// The id of a rule that protects `path`, if any.
    pub fn withholds(&self, path: &Path) -> Option<&str> {
        self.protects(path).map(|(id, _)| id)
    }

    /// The id and decision (deny or ask) of a rule that protects `path`, a deny first when
    /// several do.
    pub fn protects(&self, path: &Path) -> Option<(&str, Decision)> {
        if !self.any {
            return None;
        }
        let mut scratch = Vec::new();
        let exempt = self.path_except.iter().any(|&e| e).then(|| {
            let mut exempt = vec![false; self.active.len()];
            self.policy
                .except_paths
                .for_each_match(path, &mut scratch, |r| exempt[r] = self.path_except[r]);
            exempt
        });
        let mut hit: Option<usize> = None;
        let rules = &self.policy.rules;
        self.policy.paths.for_each_match(path, &mut scratch, |r| {
            let stronger = hit.is_none_or(|h| rules[r].decision > rules[h].decision);
            if stronger && self.active[r] && !exempt.as_ref().is_some_and(|e| e[r]) {
                hit = Some(r);
            }
        });
        hit.map(|r| (rules[r].id.as_str(), rules[r].decision))
    }
}

/// Per rule: which paths it matches, in which forms.
struct PathMatches {
    /// A form of some path matched.
    any: Vec<bool>,
    /// Per path (index into the call's paths): the rules that match every one of its forms.
    whole: Vec<Vec<bool>>,
}

/// What the rules are matched with, computed once per call ([`CompiledPolicy::ruling`]).
struct Matching {
    /// Per rule: it applies to the call's tool.
    tool_ok: Vec<bool>,
    /// Per rule: the paths it matches.
    matches: PathMatches,
    /// Each command of a bash call, normalized.
    normalized: Vec<Normalized>,
    /// Per rule: the call's `except:` exempts it.
    excepted: Vec<bool>,
}

/// The votes counted: the winning decision, and the hits and reasons a ruling shows (the
/// decisive ones first).
struct Tally {
    winner: Option<Decision>,
    /// Some vote allowed the call.
    allow_voted: bool,
    /// An allow vote names the variables of a started process's environment.
    env_named: bool,
    reasons: Vec<String>,
    hits: Vec<RuleHit>,
}

impl Tally {
    fn of(hits: &[Hit]) -> Tally {
        let winner = hits.iter().map(|h| h.decision).max();
        let allow_voted = hits.iter().any(|h| h.decision == Decision::Allow);
        let env_named = hits
            .iter()
            .any(|h| h.decision == Decision::Allow && h.names_env);
        let mut reasons = Vec::new();
        let mut rule_hits: Vec<RuleHit> = Vec::new();
        for decisive in [true, false] {
            for hit in hits {
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
        Tally {
            winner,
            allow_voted,
            env_named,
            reasons,
            hits: rule_hits,
        }
    }
}

/// Step 5: fail closed. What was not understood is never allowed, whatever allowed it (a rule,
/// Rego or a fallback); a hazard only by an exact rule or Rego, and a part decided at run time
/// only by Rego — never by a fallback. An ask on such a call needs a person whatever the
/// posture.
fn fail_closed(facts: &Facts<'_>, ruling: &mut Ruling, allow_voted: bool, env_named: bool) {
    if ruling.decision != Decision::Deny
        && let Some(cap) = person_needed(facts, allow_voted, env_named, ruling.fallback)
    {
        if ruling.decision == Decision::Allow {
            ruling.decision = Decision::Ask;
            ruling.reasons.insert(0, format!("{}{}", cap.why, cap.then));
            for hit in &mut ruling.hits {
                hit.decisive = false;
            }
        }
        ruling.needs_person = Some(cap.why);
    }
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
        let except_tool = self.except_tool(tool);
        let path_except = self
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                r.except.as_ref().is_some_and(|e| {
                    e.has_paths && e.commands.is_empty() && (!e.has_tools || except_tool[i])
                })
            })
            .collect();
        PathFilter {
            any: active.iter().any(|&a| a),
            policy: Arc::clone(self),
            active,
            path_except,
        }
    }

    /// Per rule: whether it is a deny or ask rule on paths that applies to this tool and these
    /// effects (a rule whose `except:` names only tools, this one among them, does not).
    fn protecting(&self, tool: &str, effects: &BTreeSet<Effect>) -> Vec<bool> {
        let tool_ok = self.tool_ok(tool);
        let except_tool = self.except_tool(tool);
        self.rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let exempt = r.except.as_ref().is_some_and(|e| {
                    e.has_tools && !e.has_paths && e.commands.is_empty() && except_tool[i]
                });
                tool_ok[i]
                    && !exempt
                    && r.has_paths
                    && matches!(r.decision, Decision::Deny | Decision::Ask)
                    && r.effects.as_ref().is_none_or(|e| !e.is_disjoint(effects))
            })
            .collect()
    }

    /// Per rule: whether a glob of its `except: tools` matches the tool.
    fn except_tool(&self, tool: &str) -> Vec<bool> {
        let mut scratch = Vec::new();
        let mut hit = vec![false; self.rules.len()];
        self.except_tools
            .for_each_match(Path::new(tool), &mut scratch, |r| hit[r] = true);
        hit
    }

    /// Per rule: whether its `except:` exempts this call (see [`crate::policy`]): the except of
    /// a deny or ask rule must cover the call as an allow rule would — every path, every simple
    /// command that needs cover, none decided at run time — and the except of an allow rule
    /// withdraws it when it matches any part, as a deny rule would. Either way the call is
    /// judged the stricter way when in doubt.
    fn excepted(&self, facts: &Facts<'_>, normalized: &[Normalized]) -> Vec<bool> {
        if self.rules.iter().all(|r| r.except.is_none()) {
            return vec![false; self.rules.len()];
        }
        let tool_hit = self.except_tool(facts.tool);
        let paths = self.match_paths_in(&self.except_paths, facts.paths);
        self.rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let Some(e) = &r.except else {
                    return false;
                };
                let tools = !e.has_tools || tool_hit[i];
                if r.decision == Decision::Allow {
                    let paths_hit = !e.has_paths || paths.any[i];
                    let commands = e.commands.is_empty()
                        || facts.bash.is_some_and(|b| {
                            b.commands
                                .iter()
                                .zip(normalized)
                                .any(|(c, n)| e.commands.iter().any(|p| p.sees(c, n)))
                        });
                    tools && paths_hit && commands
                } else {
                    let paths_cover = !e.has_paths
                        || (!facts.paths.is_empty() && paths.whole.iter().all(|p| p[i]));
                    let commands = e.commands.is_empty()
                        || facts.bash.is_some_and(|b| {
                            let needing: Vec<usize> = (0..b.commands.len())
                                .filter(|&ci| b.needs_cover(ci))
                                .collect();
                            b.analysed
                                && !needing.is_empty()
                                && needing
                                    .iter()
                                    .all(|&ci| e.commands.iter().any(|p| p.covers(&b.commands[ci])))
                                && run_time_part(b, false).is_none()
                        });
                    tools && paths_cover && commands
                }
            })
            .collect()
    }

    fn match_paths(&self, paths: &[TouchedPath]) -> PathMatches {
        self.match_paths_in(&self.paths, paths)
    }

    /// Which rules' globs in `set` match the paths: any form, or every form of a path.
    fn match_paths_in(&self, set: &OwnedSet, paths: &[TouchedPath]) -> PathMatches {
        let n = self.rules.len();
        let mut scratch = Vec::new();
        let mut any = vec![false; n];
        let mut whole = Vec::with_capacity(paths.len());
        for path in paths {
            let forms = path.forms();
            let mut count = vec![0usize; n];
            for form in &forms {
                let mut seen = vec![false; n];
                set.for_each_match(form, &mut scratch, |r| {
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

    /// Judges one call under the precedence in the module doc, one step after the other.
    pub fn ruling(&self, facts: &Facts<'_>) -> Ruling {
        let matching = self.matching(facts);
        // Steps 1 and 2: deny and ask rules, matched generously.
        let mut hits = self.deny_and_ask(facts, &matching);
        // Rego votes join the rules'; an error denies (fail closed).
        hits.extend(self.rego_votes(facts));
        // The Rego modules of files nobody trusts vote deny and ask; their allow votes are left
        // out, and an error denies as any Rego error does.
        hits.extend(self.untrusted_rego_votes(facts));
        // A `sandbox.network` entry is an allow for the connections it names.
        hits.extend(self.network_entry(facts));
        // Step 3: allow, strictly.
        let mut notes = Vec::new();
        hits.extend(self.allows(facts, &matching, &mut notes));
        let tally = Tally::of(&hits);
        // Step 4: the fallback, when no vote decided.
        let mut ruling = match tally.winner {
            Some(decision) => Ruling {
                decision,
                fallback: None,
                hits: tally.hits,
                reasons: tally.reasons,
                needs_person: None,
            },
            None => self.fall_back(facts, tally.hits, tally.reasons, &mut notes),
        };
        ruling.reasons.extend(notes);
        // Step 5: fail closed.
        fail_closed(facts, &mut ruling, tally.allow_voted, tally.env_named);
        ruling
    }

    /// What the rules are matched with: which apply to the tool, which paths they match, each
    /// command's normalized form, and which rules the call's `except:` exempts.
    fn matching(&self, facts: &Facts<'_>) -> Matching {
        let tool_ok = self.tool_ok(facts.tool);
        let matches = self.match_paths(facts.paths);
        let normalized: Vec<Normalized> = facts
            .bash
            .map(|b| b.commands.iter().map(|c| Normalized::of(&c.argv)).collect())
            .unwrap_or_default();

        // A rule does not apply to a call its `except:` exempts.
        let excepted = self.excepted(facts, &normalized);
        Matching {
            tool_ok,
            matches,
            normalized,
            excepted,
        }
    }

    /// Steps 1 and 2: the deny and ask rules that match, matched generously (any path, any
    /// effect, any command).
    fn deny_and_ask(&self, facts: &Facts<'_>, matching: &Matching) -> Vec<Hit> {
        let Matching {
            tool_ok,
            matches,
            normalized,
            excepted,
        } = matching;
        let mut hits: Vec<Hit> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            if !tool_ok[i] || rule.decision == Decision::Allow || excepted[i] {
                continue;
            }
            let paths_ok = !rule.has_paths || matches.any[i];
            let effects_ok = rule
                .effects
                .as_ref()
                .is_none_or(|e| !e.is_disjoint(facts.effects));
            let commands_ok = !rule.has_commands()
                || facts.bash.is_some_and(|b| {
                    b.commands.iter().zip(normalized).any(|(c, n)| {
                        rule.commands.iter().any(|p| p.sees(c, n))
                            || rule.exact.iter().any(|e| commands::exact(e, c))
                    })
                });
            let env_ok = rule
                .env
                .as_ref()
                .is_none_or(|set| facts.environment.iter().any(|(name, _)| set.is_match(name)));
            if paths_ok && effects_ok && commands_ok && env_ok {
                hits.push(Hit::rule(rule, rule.decision));
            }
        }
        hits
    }

    /// The Rego votes; an error, or no input document, is a deny (fail closed).
    fn rego_votes(&self, facts: &Facts<'_>) -> Vec<Hit> {
        let mut hits = Vec::new();
        if let Some(rego) = &self.rego {
            match facts.input.map(|input| rego.votes_on(input)) {
                Some(Ok(votes)) => hits.extend(votes.into_iter().map(|v| Hit {
                    decision: v.decision,
                    id: v.id,
                    source: v.source,
                    reason: Some(v.reason),
                    names_env: v.names_env,
                })),
                Some(Err(e)) => hits.push(Hit {
                    decision: Decision::Deny,
                    id: "rego-error".into(),
                    source: "rego".into(),
                    reason: Some(format!(
                        "the Rego policy failed, so the call is denied: {e}"
                    )),
                    names_env: false,
                }),
                None => hits.push(Hit {
                    decision: Decision::Deny,
                    id: "rego-error".into(),
                    source: "rego".into(),
                    reason: Some(
                        "internal error: no input document for the Rego policy; please report it"
                            .into(),
                    ),
                    names_env: false,
                }),
            }
        }
        hits
    }

    /// The deny and ask votes of the Rego modules of files nobody trusts (their allow votes are
    /// left out); an error denies as any Rego error does.
    fn untrusted_rego_votes(&self, facts: &Facts<'_>) -> Vec<Hit> {
        let mut hits = Vec::new();
        if let Some(rego) = &self.narrowing {
            match facts.narrowing_input.map(|input| rego.votes_on(input)) {
                Some(Ok(votes)) => hits.extend(
                    votes
                        .into_iter()
                        .filter(|v| v.decision != Decision::Allow)
                        .map(|v| Hit {
                            decision: v.decision,
                            id: v.id,
                            source: v.source,
                            reason: Some(v.reason),
                            names_env: false,
                        }),
                ),
                Some(Err(e)) => hits.push(Hit {
                    decision: Decision::Deny,
                    id: "rego-error".into(),
                    source: "rego (untrusted)".into(),
                    reason: Some(format!(
                        "a Rego policy of a file nobody trusts failed, so the call is denied: {e}"
                    )),
                    names_env: false,
                }),
                None => hits.push(Hit {
                    decision: Decision::Deny,
                    id: "rego-error".into(),
                    source: "rego (untrusted)".into(),
                    reason: Some(
                        "internal error: no input document for the Rego policy; please report it"
                            .into(),
                    ),
                    names_env: false,
                }),
            }
        }
        hits
    }

    /// A `sandbox.network` entry is an allow for the connections it names.
    fn network_entry(&self, facts: &Facts<'_>) -> Option<Hit> {
        if facts.tool == crate::egress::CONNECT_TOOL
            && let Some((host, port)) = facts.destination
            && let Some(entry) = self.network.allows(host, port)
        {
            return Some(Hit {
                decision: Decision::Allow,
                id: "sandbox.network".into(),
                source: "sandbox.network".into(),
                reason: Some(format!("{entry} is listed")),
                names_env: false,
            });
        }
        None
    }

    /// Step 3: the allow rules that cover the call, strictly (every effect, every path, every
    /// command that needs one); why one that matched could not cover it goes to `notes`.
    fn allows(&self, facts: &Facts<'_>, matching: &Matching, notes: &mut Vec<String>) -> Vec<Hit> {
        let Matching {
            tool_ok,
            matches,
            excepted,
            ..
        } = matching;
        let mut hits = Vec::new();
        let allow_ok = |i: usize, rule: &Rule| {
            tool_ok[i]
                && !excepted[i]
                && rule.decision == Decision::Allow
                && rule
                    .effects
                    .as_ref()
                    .is_none_or(|e| !facts.effects.is_empty() && facts.effects.is_subset(e))
                && rule
                    .env
                    .as_ref()
                    .is_none_or(|set| facts.environment.iter().all(|(name, _)| set.is_match(name)))
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
                let used = self.bash_allow(bash, facts, matches, &allow_ok, notes);
                hits.extend(
                    used.into_iter()
                        .map(|i| Hit::rule(&self.rules[i], Decision::Allow)),
                );
            }
        }
        hits
    }

    /// Step 4: no vote decided, so the fallback does: `defaults.read_only` for a read-only call,
    /// `defaults.writer` otherwise — and a reader that reads files it does not name, where a rule
    /// protects paths that may be among them, is judged as a writer.
    fn fall_back(
        &self,
        facts: &Facts<'_>,
        hits: Vec<RuleHit>,
        mut reasons: Vec<String>,
        notes: &mut Vec<String>,
    ) -> Ruling {
        let mut read_only = facts.read_only;
        if let Some(bash) = facts.bash {
            // A folder a reader reads whole (`diff DIR1 DIR2`) is read like `grep -r`.
            let folder = |p: &TouchedPath| {
                p.resolution.as_ref().is_some_and(|r| r.folder)
                    && bash.folder_reads.contains(&p.written)
            };
            let unseen = bash.unnamed_reads.first().cloned().or_else(|| {
                facts
                    .paths
                    .iter()
                    .find(|p| (p.role == PathRole::Argument && p.resolution.is_none()) || folder(p))
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
            hits,
            reasons,
            needs_person: None,
        }
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
                None if bash.needs_cover(ci) => uncovered.push(ci),
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
                let shown: Vec<String> = uncovered
                    .iter()
                    .take(3)
                    .map(|&c| format!("`{}`", bash.commands[c].argv.join(" ")))
                    .collect();
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
        if let Some(part) = run_time_part(bash, false) {
            blocked = true;
            // Said once: a command named as uncovered, or a redirection noted as a hazard.
            let said = match part.place {
                Place::Word(c) => uncovered.contains(&c),
                Place::Assignment => false,
                Place::Redirect => true,
            };
            if any_command_rule && !said {
                notes.push(format!(
                    "{}: no allow rule covers what is decided at run time",
                    part.what
                ));
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

/// What step 5 found: why a person is needed, and what follows for an allow.
struct Cap {
    why: String,
    then: &'static str,
}

/// Step 5: why only a person may let this call run, if so. `allow_voted` is true when an allow
/// rule covered the whole call (which needs an `exact` line for each hazard) or Rego voted
/// allow; `fallback` is the fallback that decided, if one did.
fn person_needed(
    facts: &Facts<'_>,
    allow_voted: bool,
    env_named: bool,
    fallback: Option<Fallback>,
) -> Option<Cap> {
    if !facts.analysed {
        return Some(Cap {
            why: match facts.bash {
                Some(b) => format!("the command is not understood ({})", b.problems.join("; ")),
                None => "the call could not be analysed".into(),
            },
            then: ", so it cannot be allowed without a person: ask",
        });
    }
    // A process started with a variable that makes it load or run other code (`PYTHONPATH`,
    // `LD_PRELOAD`, `NODE_OPTIONS`, …): an allow that pins the command and its arguments does
    // not see it, so only an allow that names the environment lifts this (issue 26).
    if !env_named
        && let Some((name, Some(why))) = facts.environment.iter().find(|(_, w)| w.is_some())
    {
        return Some(Cap {
            why: format!("the process it starts gets {name} in its environment ({why})"),
            then: ": only an allow rule that names the variable (env:) or a Rego allow that reads input.arguments.env can allow it: ask",
        });
    }
    let bash = facts.bash?;
    if allow_voted {
        return None;
    }
    if let Some(h) = bash.hazards.first() {
        return Some(Cap {
            why: format!("hazard {} ({})", h.id, h.detail),
            then: ": only an exact rule or a Rego allow can allow it: ask",
        });
    }
    run_time_part(bash, fallback == Some(Fallback::ReadOnly)).map(|part| Cap {
        why: part.what,
        then: ": no rule can see what it will be, so only a Rego allow can allow it: ask",
    })
}

/// The first part of a bash call decided at run time, in words: a word that does not depend only
/// on static text (a variable from the environment, a command's output, arithmetic, input fed
/// to `xargs`; a glob, brace, tilde, bound variable or `find`'s `{}` does depend only on static
/// text), an assignment value that is not static, or a redirection target that is not static.
/// A heredoc or herestring body is data on stdin, not a target.
///
/// With `input_read_ok` (the read-only fallback decides), a reader's word fed by `xargs` is not
/// counted, as [`crate::shell::readers`] does not count it against read-only: the reads it makes
/// are `unnamed_reads`, and the read-only fallback is refused while a rule protects paths.
fn run_time_part(bash: &Analysis, input_read_ok: bool) -> Option<RunTimePart> {
    for (ci, c) in bash.commands.iter().enumerate() {
        let input_ok = input_read_ok && readers::reads_only(c);
        // A reader that opens no operand (`echo "$(date)"`, `printf %s "$x"`) does the same
        // whatever its words turn out to be; what a substitution runs is a command of its own.
        let inert = readers::opens_no_operand(c);
        for w in c.words.iter().filter(|_| !inert) {
            let kinds: Vec<String> = w
                .dynamic
                .iter()
                .filter(|d| !(d.depends_on_static() || (input_ok && **d == Dynamic::Input)))
                .map(|d| format!("{d:?}").to_lowercase())
                .collect();
            if !kinds.is_empty() {
                return Some(RunTimePart {
                    place: Place::Word(ci),
                    what: format!(
                        "the word `{}` of `{}` is decided at run time ({})",
                        w.text,
                        c.argv.join(" "),
                        kinds.join(", ")
                    ),
                });
            }
        }
        if let Some(a) = c.assignments.iter().find(|a| !a.is_static) {
            return Some(RunTimePart {
                place: Place::Assignment,
                what: format!(
                    "the value of `{}={}` before `{}` is decided at run time",
                    a.name,
                    a.value,
                    c.argv.join(" ")
                ),
            });
        }
    }
    bash.redirects
        .iter()
        .find(|r| {
            !r.is_static && !matches!(r.kind, RedirectKind::Heredoc | RedirectKind::Herestring)
        })
        .map(|r| RunTimePart {
            place: Place::Redirect,
            what: format!(
                "the target of `{} {}` is decided at run time",
                r.op,
                r.target.as_deref().unwrap_or("")
            ),
        })
}

/// A part of a bash call decided at run time (see [`run_time_part`]).
struct RunTimePart {
    /// What it is, in words.
    what: String,
    /// Where it is.
    place: Place,
}

/// Where a part decided at run time is.
#[derive(Clone, Copy)]
enum Place {
    /// A word of the command at this index.
    Word(usize),
    /// An assignment value.
    Assignment,
    /// A redirection target (the analysis also reports it as hazard `dynamic_redirect`).
    Redirect,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicySet;
    use crate::sandbox::Roots;

    /// Everything after `defaults:` in a YAML policy with these defaults and rules.
    fn yaml(read_only: &str, writer: &str, rules: &str) -> PolicySet {
        let text = format!(
            "version: 1\ndefaults:\n  read_only: {read_only}\n  writer: {writer}\n  unattended: allow\nrules:\n{rules}"
        );
        PolicySet::from_yaml("p.yaml", &text).unwrap()
    }

    /// Allows everything no rule decides: the loosest fallback there is.
    fn allow_all() -> PolicySet {
        yaml("allow", "allow", "  []\n")
    }

    fn rule(set: &PolicySet, script: &str) -> Ruling {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(dir.path()).unwrap();
        let policy = set.compile(&roots).unwrap();
        let analysis = Analysis::of(script);
        let paths = roots.touch_all(&analysis.path_requests());
        let input = RegoInput::of(&serde_json::json!({ "bash": analysis })).unwrap();
        policy.ruling(&Facts {
            tool: "bash",
            effects: &analysis.effects,
            paths: &paths,
            read_only: analysis.read_only,
            analysed: analysis.analysed,
            bash: Some(&analysis),
            input: Some(&input),
            narrowing_input: Some(&input),
            destination: None,
            environment: &[],
        })
    }

    fn capped(set: &PolicySet, script: &str) -> String {
        let r = rule(set, script);
        assert_eq!(r.decision, Decision::Ask, "{script}: {r:?}");
        r.needs_person
            .clone()
            .unwrap_or_else(|| panic!("{script}: no person needed: {r:?}"))
    }

    fn runs(set: &PolicySet, script: &str) {
        let r = rule(set, script);
        assert_eq!(r.decision, Decision::Allow, "{script}: {r:?}");
        assert_eq!(r.needs_person, None, "{script}");
    }

    #[test]
    fn a_command_not_understood_needs_a_person_even_when_everything_is_allowed() {
        let why = capped(&allow_all(), "ls (");
        assert!(why.starts_with("the command is not understood ("), "{why}");
        let r = rule(&allow_all(), "ls (");
        assert!(
            r.reasons[0].contains("cannot be allowed without a person"),
            "{r:?}"
        );
    }

    #[test]
    fn a_hazard_under_a_fallback_allow_needs_a_person() {
        let why = capped(&allow_all(), "git -c core.pager=cat log");
        assert!(why.starts_with("hazard git_config ("), "{why}");
    }

    #[test]
    fn a_word_decided_at_run_time_under_a_fallback_allow_needs_a_person() {
        let why = capped(&allow_all(), "cat $F");
        assert_eq!(
            why,
            "the word `$F` of `cat $F` is decided at run time (variable)"
        );
        for (script, word) in [
            ("touch $(date +%s).log", "`$(date +%s).log`"),
            ("head -n $((n+1)) README.md > count", "`$((n+1))`"),
            (
                "find . -name '*.tmp' | xargs rm",
                "`{input}` of `rm {input}`",
            ),
            ("timeout $T make", "`$T` of `timeout $T make`"),
        ] {
            let why = capped(&allow_all(), script);
            assert!(why.contains(word), "{script}: {why}");
        }
    }

    #[test]
    fn a_reader_that_opens_no_operand_runs_the_same_whatever_its_words() {
        // `echo` and `seq` open nothing their words name: a word decided at run time
        // changes what they print, not what they do (the write's target is static).
        runs(&allow_all(), "echo $((n+1)) > count");
        runs(&allow_all(), "seq 1 \"$(nproc)\"");
        // `printf` is not one of them: a run-time word may become `-v NAME`, whose subscript
        // bash evaluates (`printf "$x" 'a[$(id)]' y`).
        capped(&allow_all(), "printf \"$x\" 'a[$(id)]' y");
        // What a substitution runs is still a command of its own.
        capped(&allow_all(), "echo \"$(cat $F)\"");
    }

    #[test]
    fn an_assignment_value_decided_at_run_time_under_a_fallback_allow_needs_a_person() {
        // `LANG` is inert (not an environment hazard), so the run-time value is what caps it.
        let why = capped(&allow_all(), "LANG=$(cat lang) make");
        assert_eq!(
            why,
            "the value of `LANG=$(cat lang)` before `make` is decided at run time"
        );
    }

    #[test]
    fn words_that_depend_only_on_static_text_are_not_capped() {
        for script in [
            "rm src/*.tmp",
            "ls ~/notes",
            "touch a{1,2}.txt",
            "for f in src/*.rs; do wc -l \"$f\"; done",
            "find . -name '*.tmp' -exec rm {} +",
            "cat <<EOF\n$HOME\nEOF",
        ] {
            runs(&allow_all(), script);
        }
    }

    #[test]
    fn a_reader_fed_by_xargs_takes_the_read_only_fallback_but_not_the_writer_one() {
        runs(&allow_all(), "find . -name '*.rs' | xargs wc -l");
        // Protected paths turn the same call into a writer, and then its input is counted.
        let protected = yaml(
            "allow",
            "allow",
            "  - decision: deny\n    paths: [\"**/.env\"]\n",
        );
        let why = capped(&protected, "find . -name '*.rs' | xargs wc -l");
        assert!(why.contains("`{input}`"), "{why}");
    }

    #[test]
    fn a_rule_level_ask_is_not_capped_and_needs_no_person() {
        let set = yaml(
            "allow",
            "allow",
            "  - decision: ask\n    commands: [\"git push *\"]\n",
        );
        let r = rule(&set, "git push origin main");
        assert_eq!(r.decision, Decision::Ask);
        assert_eq!(r.needs_person, None);
        assert!(r.hits.iter().any(|h| h.decisive), "{r:?}");
    }

    #[test]
    fn a_deny_needs_no_person() {
        let set = yaml(
            "allow",
            "allow",
            "  - decision: deny\n    commands: [\"cat *\"]\n",
        );
        let r = rule(&set, "cat $F; ls (");
        assert_eq!(r.decision, Decision::Deny);
        assert_eq!(r.needs_person, None);
    }

    #[test]
    fn an_ask_that_would_have_been_capped_still_needs_a_person() {
        // The fallback already asks, so step 5 changes no decision, but an unattended posture
        // must not turn this ask into an allow.
        let asks = yaml("ask", "ask", "  []\n");
        for (script, why) in [
            ("ls (", "the command is not understood"),
            ("git -c core.pager=cat log", "hazard git_config"),
            ("rm $TARGET", "the word `$TARGET`"),
        ] {
            let r = rule(&asks, script);
            assert_eq!(r.fallback, Some(Fallback::Writer), "{script}");
            assert!(capped(&asks, script).starts_with(why), "{script}");
        }
        let set = yaml(
            "allow",
            "allow",
            "  - decision: ask\n    commands: [\"rm *\"]\n",
        );
        let why = capped(&set, "rm $TARGET");
        assert!(why.contains("`$TARGET`"), "{why}");
    }

    #[test]
    fn an_exact_line_lifts_a_hazard() {
        let set = yaml(
            "allow",
            "ask",
            "  - decision: allow\n    exact: [\"git -c core.pager=cat log\"]\n",
        );
        runs(&set, "git -c core.pager=cat log");
    }

    #[test]
    fn no_allow_rule_covers_a_word_decided_at_run_time_anywhere() {
        let set = yaml(
            "allow",
            "ask",
            "  - decision: allow\n    commands: [\"cargo test *\", \"git status\"]\n",
        );
        runs(&set, "cargo test --all");
        runs(&set, "timeout 60 cargo test");
        for script in [
            "cargo test $ARGS",
            "timeout $T cargo test",
            "nice -n $N cargo test",
            "X=$Y git status",
        ] {
            let r = rule(&set, script);
            assert_eq!(r.decision, Decision::Ask, "{script}: {r:?}");
            assert!(r.hits.is_empty(), "{script}: {r:?}");
            assert!(r.needs_person.is_some(), "{script}");
        }
    }

    #[test]
    fn a_rego_allow_lifts_a_word_decided_at_run_time_but_never_what_is_not_understood() {
        let set = PolicySet::from_texts(
            &[("p.yaml", "version: 1\ndefaults:\n  writer: ask\n")],
            &[(
                "a.rego",
                "package reasonix\nimport rego.v1\nallow contains \"cat is fine\" if input.bash.commands[0].argv[0] == \"cat\"\n",
            )],
            &[],
        )
        .unwrap();
        runs(&set, "cat $F");
        let r = rule(&set, "cat $F; ls (");
        assert_eq!(r.decision, Decision::Ask);
        assert!(
            r.needs_person
                .as_deref()
                .is_some_and(|w| w.starts_with("the command is not understood")),
            "{r:?}"
        );
    }
}
