//! Compiling a [`PolicySet`] for one workspace: relative path globs are anchored at the
//! workspace root and `~` at the home folder, every tool glob and every path glob goes into one
//! set, and command patterns are checked. The result, a [`CompiledPolicy`], is what the policy
//! stage judges with (`ruling.rs`); it never changes — another workspace or a reload compiles a
//! new one.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::commands::{self, ExactSpec, Pattern, PatternSpec};
use super::mcp::{McpClass, McpClassifier};
use super::pattern::{self, OwnedSet};
use super::rego::Rego;
use super::yaml::{Glob, PathGlob};
use super::{Decision, Defaults, PolicyError, PolicyProblem, PolicySet};
use crate::sandbox::Roots;
use crate::vocab::Effect;

/// One rule, compiled.
#[derive(Clone, Debug)]
pub(super) struct Rule {
    pub id: String,
    pub source: String,
    pub decision: Decision,
    pub reason: Option<String>,
    pub has_tools: bool,
    pub has_paths: bool,
    pub effects: Option<BTreeSet<Effect>>,
    pub commands: Vec<Pattern>,
    pub exact: Vec<ExactSpec>,
    /// `env:`: globs on the names of a started process's environment variables.
    pub env: Option<globset::GlobSet>,
    /// `except:`, when the rule has one.
    pub except: Option<Except>,
}

/// A rule's `except:`, compiled; its globs are in [`CompiledPolicy`]'s `except_tools` and
/// `except_paths` under the rule's index.
#[derive(Clone, Debug)]
pub(super) struct Except {
    pub has_tools: bool,
    pub has_paths: bool,
    pub commands: Vec<Pattern>,
}

impl Rule {
    pub(super) fn has_commands(&self) -> bool {
        !self.commands.is_empty() || !self.exact.is_empty()
    }
}

/// Rules compiled for one workspace. Immutable.
#[derive(Clone, Debug)]
pub struct CompiledPolicy {
    pub(super) rules: Vec<Rule>,
    pub(super) tools: OwnedSet,
    pub(super) paths: OwnedSet,
    pub(super) except_tools: OwnedSet,
    pub(super) except_paths: OwnedSet,
    pub(super) defaults: Defaults,
    pub(super) rego: Option<Arc<Rego>>,
    /// The Rego modules of files nobody trusts: their deny and ask votes count, their allow
    /// votes do not (`narrow.rs`).
    pub(super) narrowing: Option<Arc<Rego>>,
    pub(super) mcp: McpClassifier,
    /// `sandbox.network`: each entry an allow for `network_connect` to its hosts and port.
    pub(super) network: crate::egress::Allowlist,
}

impl CompiledPolicy {
    /// The merged defaults.
    pub fn defaults(&self) -> Defaults {
        self.defaults
    }

    /// What policy declares the MCP tool `name` does (`mcp.classify`).
    pub fn mcp_class(&self, name: &str) -> McpClass {
        self.mcp.classify(name)
    }

    /// Whether Rego policies vote (they need the input document).
    pub fn has_rego(&self) -> bool {
        self.rego.is_some() || self.narrowing.is_some()
    }

    /// The Rego modules of files nobody trusts, which vote deny and ask only.
    pub fn narrowing_rego(&self) -> Option<&Rego> {
        self.narrowing.as_deref()
    }

    /// The Rego policies that vote, if any.
    pub fn rego(&self) -> Option<&Rego> {
        self.rego.as_deref()
    }
}

impl PolicySet {
    /// Compiles the rules for one workspace: relative path globs are anchored at its root and
    /// `~` at the home folder, and every glob goes into one set.
    pub fn compile(&self, roots: &Roots) -> Result<CompiledPolicy, PolicyError> {
        let mut rules = Vec::new();
        let mut tool_globs = Vec::new();
        let mut path_globs = Vec::new();
        let mut except_tool_globs = Vec::new();
        let mut except_path_globs = Vec::new();
        let mut problems = Vec::new();
        for source in &self.sources {
            for (index, spec) in source.file.rules.iter().enumerate() {
                let rule = rules.len();
                let id = spec
                    .id
                    .as_ref()
                    .map(|id| id.0.clone())
                    .unwrap_or_else(|| format!("rules[{index}]"));
                let add = |globs: &mut Vec<(usize, globset::Glob)>,
                           paths: &mut Vec<(usize, globset::Glob)>,
                           tools: Option<&Vec<Glob>>,
                           written: Option<&Vec<PathGlob>>,
                           problems: &mut Vec<PolicyProblem>| {
                    for glob in tools.into_iter().flatten() {
                        match globset::Glob::new(&glob.0) {
                            Ok(g) => globs.push((rule, g)),
                            Err(e) => problems.push(problem(&source.name, &id, e.to_string())),
                        }
                    }
                    for glob in written.into_iter().flatten() {
                        let anchored =
                            match pattern::anchor(&glob.0, roots.workspace(), roots.home()) {
                                Ok(a) => a,
                                Err(e) => {
                                    problems.push(problem(
                                        &source.name,
                                        &id,
                                        format!("path glob {:?}: {e}", glob.0),
                                    ));
                                    continue;
                                }
                            };
                        for pattern in anchored {
                            match pattern::path_glob(&pattern) {
                                Ok(g) => paths.push((rule, g)),
                                Err(e) => problems.push(problem(&source.name, &id, e.to_string())),
                            }
                        }
                    }
                };
                add(
                    &mut tool_globs,
                    &mut path_globs,
                    spec.tools.as_ref(),
                    spec.paths.as_ref(),
                    &mut problems,
                );
                let patterns = compile_patterns(
                    spec.commands.iter().flatten(),
                    &source.name,
                    &id,
                    &mut problems,
                );
                let except = spec.except.as_ref().map(|e| {
                    add(
                        &mut except_tool_globs,
                        &mut except_path_globs,
                        e.tools.as_ref(),
                        e.paths.as_ref(),
                        &mut problems,
                    );
                    Except {
                        has_tools: e.tools.is_some(),
                        has_paths: e.paths.is_some(),
                        commands: compile_patterns(
                            e.commands.iter().flatten(),
                            &source.name,
                            &id,
                            &mut problems,
                        ),
                    }
                });
                let env = spec.env.as_ref().map(|globs| {
                    let mut set = globset::GlobSetBuilder::new();
                    for g in globs {
                        match globset::Glob::new(&g.0) {
                            Ok(g) => {
                                set.add(g);
                            }
                            Err(e) => problems.push(problem(&source.name, &id, e.to_string())),
                        }
                    }
                    set.build().unwrap_or_else(|e| {
                        problems.push(problem(&source.name, &id, e.to_string()));
                        globset::GlobSet::empty()
                    })
                });
                rules.push(Rule {
                    id,
                    source: source.name.clone(),
                    decision: spec.decision,
                    reason: spec.reason.clone(),
                    has_tools: spec.tools.is_some(),
                    has_paths: spec.paths.is_some(),
                    effects: spec.effects.as_ref().map(|e| e.iter().copied().collect()),
                    commands: patterns,
                    exact: spec.exact.clone().unwrap_or_default(),
                    env,
                    except,
                });
            }
        }
        let tools = OwnedSet::build(tool_globs);
        let paths = OwnedSet::build(path_globs);
        let except_tools = OwnedSet::build(except_tool_globs);
        let except_paths = OwnedSet::build(except_path_globs);
        let entries = self
            .sources
            .iter()
            .filter_map(|s| s.file.mcp.as_ref())
            .flat_map(|m| m.classify.iter().cloned())
            .collect();
        let mcp = match McpClassifier::new(entries) {
            Ok(m) => m,
            Err(e) => {
                problems.push(PolicyProblem {
                    file: "(policy set)".into(),
                    line: None,
                    column: None,
                    message: format!("mcp.classify: {e}"),
                });
                McpClassifier::empty()
            }
        };
        let jail = self.jail();
        let network = match crate::egress::Allowlist::new(
            jail.network.iter().map(|n| (n.host.as_str(), n.port)),
        ) {
            Ok(n) => n,
            Err(e) => {
                problems.push(PolicyProblem {
                    file: "(policy set)".into(),
                    line: None,
                    column: None,
                    message: format!("sandbox.network: {e}"),
                });
                crate::egress::Allowlist::default()
            }
        };
        match (tools, paths, except_tools, except_paths) {
            (Ok(tools), Ok(paths), Ok(except_tools), Ok(except_paths)) if problems.is_empty() => {
                Ok(CompiledPolicy {
                    rules,
                    tools,
                    paths,
                    except_tools,
                    except_paths,
                    defaults: self.defaults(),
                    rego: self.rego.clone(),
                    narrowing: self.narrowing.clone(),
                    mcp,
                    network,
                })
            }
            (tools, paths, except_tools, except_paths) => {
                for e in [
                    tools.err(),
                    paths.err(),
                    except_tools.err(),
                    except_paths.err(),
                ]
                .into_iter()
                .flatten()
                {
                    problems.push(PolicyProblem {
                        file: "(policy set)".into(),
                        line: None,
                        column: None,
                        message: e.to_string(),
                    });
                }
                Err(PolicyError(problems))
            }
        }
    }
}

/// Compiles `commands:` patterns; a bad one is a problem naming its rule.
fn compile_patterns<'a>(
    specs: impl Iterator<Item = &'a PatternSpec>,
    file: &str,
    rule: &str,
    problems: &mut Vec<PolicyProblem>,
) -> Vec<Pattern> {
    let mut patterns = Vec::new();
    for spec in specs {
        match commands::Pattern::compile(spec) {
            Some(p) => patterns.push(p),
            None => problems.push(problem(
                file,
                rule,
                format!("bad command pattern {:?}", spec.0),
            )),
        }
    }
    patterns
}

fn problem(file: &str, rule: &str, message: String) -> PolicyProblem {
    PolicyProblem {
        file: file.to_owned(),
        line: None,
        column: None,
        message: format!("rule {rule}: {message}"),
    }
}
