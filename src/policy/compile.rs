//! Compiling a [`PolicySet`] for one workspace: relative path globs are anchored at the
//! workspace root and `~` at the home folder, every tool glob and every path glob goes into one
//! set, and command patterns are checked. The result, a [`CompiledPolicy`], is what the policy
//! stage judges with (`judge.rs`); it never changes — another workspace or a reload compiles a
//! new one.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::commands::{self, ExactSpec, Pattern};
use super::pattern::{self, OwnedSet};
use super::rego::Rego;
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
    pub(super) defaults: Defaults,
    pub(super) rego: Option<Arc<Rego>>,
}

impl CompiledPolicy {
    /// The merged defaults.
    pub fn defaults(&self) -> Defaults {
        self.defaults
    }

    /// Whether Rego policies vote (they need the input document).
    pub fn has_rego(&self) -> bool {
        self.rego.is_some()
    }
}

impl PolicySet {
    /// Compiles the rules for one workspace: relative path globs are anchored at its root and
    /// `~` at the home folder, and every glob goes into one set.
    pub fn compile(&self, roots: &Roots) -> Result<CompiledPolicy, PolicyError> {
        let mut rules = Vec::new();
        let mut tool_globs = Vec::new();
        let mut path_globs = Vec::new();
        let mut problems = Vec::new();
        for source in &self.sources {
            for (index, spec) in source.file.rules.iter().enumerate() {
                let rule = rules.len();
                let id = spec
                    .id
                    .as_ref()
                    .map(|id| id.0.clone())
                    .unwrap_or_else(|| format!("rules[{index}]"));
                for glob in spec.tools.iter().flatten() {
                    match globset::Glob::new(&glob.0) {
                        Ok(g) => tool_globs.push((rule, g)),
                        Err(e) => problems.push(problem(&source.name, &id, e.to_string())),
                    }
                }
                for glob in spec.paths.iter().flatten() {
                    let anchored = match pattern::anchor(&glob.0, roots.workspace(), roots.home()) {
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
                            Ok(g) => path_globs.push((rule, g)),
                            Err(e) => problems.push(problem(&source.name, &id, e.to_string())),
                        }
                    }
                }
                let mut patterns = Vec::new();
                for spec in spec.commands.iter().flatten() {
                    match commands::Pattern::compile(spec) {
                        Some(p) => patterns.push(p),
                        None => problems.push(problem(
                            &source.name,
                            &id,
                            format!("bad command pattern {:?}", spec.0),
                        )),
                    }
                }
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
                });
            }
        }
        let tools = OwnedSet::build(tool_globs);
        let paths = OwnedSet::build(path_globs);
        match (tools, paths) {
            (Ok(tools), Ok(paths)) if problems.is_empty() => Ok(CompiledPolicy {
                rules,
                tools,
                paths,
                defaults: self.defaults(),
                rego: self.rego.clone(),
            }),
            (tools, paths) => {
                for e in [tools.err(), paths.err()].into_iter().flatten() {
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

fn problem(file: &str, rule: &str, message: String) -> PolicyProblem {
    PolicyProblem {
        file: file.to_owned(),
        line: None,
        column: None,
        message: format!("rule {rule}: {message}"),
    }
}
