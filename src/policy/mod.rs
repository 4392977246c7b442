//! Policies: loading YAML rules, compiling them for one workspace, and judging a classified call
//! — the `policy` stage of the admission path.
//!
//! # Precedence
//!
//! 1. Any matching `deny` rule denies.
//! 2. Otherwise any matching `ask` rule asks.
//! 3. Otherwise an `allow` rule that covers the *whole* call allows.
//! 4. Otherwise the fallback: `defaults.read_only` for a read-only call, `defaults.writer` for
//!    any other.
//! 5. Finally, a call the tool could not analyse is never allowed: an allow from step 3 or 4
//!    becomes ask. The gate fails closed on what it does not understand.
//!
//! deny and ask match generously, allow strictly:
//!
//! | condition | deny / ask match when…                       | allow covers when…                          |
//! |-----------|----------------------------------------------|---------------------------------------------|
//! | `tools`   | a glob matches the tool name                 | the same                                    |
//! | `paths`   | any form of any touched path matches          | every form of every touched path matches    |
//! | `effects` | the call has any of the listed effects        | the call has only listed effects            |
//! | `commands`| any simple command anywhere, by basename and  | (bash) every simple command is covered by  |
//! |           | any spelling of its options                   | some allow rule, word by word              |
//! | `exact`   | a command is exactly this line                | the same; the only way past a hazard        |
//!
//! For a bash call, an allow needs every simple command covered (by `commands` or `exact` of
//! any allow rules), every hazard's command covered by an `exact` line, and every write through a
//! redirection covered by an allow rule's `paths`; see [`commands`] for how words match. A
//! read-only bash call that reads files it does not name (`grep -r`) does not take the
//! read-only fallback while a deny or ask rule protects paths.
//!
//! A path's forms are the resolved path, the path as written (made absolute, `..` folded) and
//! every symlink passed through, so a secret cannot be reached under another name, and an allow
//! cannot be borrowed through a link. An allow rule never covers a call the tool could not
//! analyse (a `bash` command before analysis exists), nor one with a path that did not resolve.
//!
//! Several files merge: their rules all vote, and for each `defaults` key the strictest value any
//! file sets wins (deny > ask > allow), else the built-in one (`read_only: allow`,
//! `writer: ask`, `unattended: deny`). Postures are applied later, by the gate's approve stage.

pub mod commands;
pub mod input;
mod judge;
mod pattern;
pub mod rego;
mod yaml;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use serde_json::Value as Json;

use crate::sandbox::Roots;
use judge::Rule;
pub use judge::{CompiledPolicy, Facts, Fallback, Judged, PathFilter, RuleHit};
use pattern::OwnedSet;
use rego::{Rego, RegoSource};
pub use yaml::Unattended;

/// The embedded default policy (`policies/default.yaml`), used when no `--policy` is given.
pub const DEFAULT_POLICY: &str = include_str!("../../policies/default.yaml");
/// The name the embedded default is reported under.
pub const DEFAULT_POLICY_NAME: &str = "embedded:policies/default.yaml";

/// What a rule or fallback decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask a person (or apply the unattended posture).
    Ask,
    /// Do not run it.
    Deny,
}

impl Decision {
    /// The name used in policies and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who is there to answer an `ask`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Posture {
    /// A person answers at the terminal.
    #[default]
    Interactive,
    /// Nobody answers: `ask` becomes `defaults.unattended`.
    Unattended,
    /// Only a call an allow rule explicitly covers runs; every other call is denied.
    Strict,
}

impl Posture {
    /// The name used on the command line and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Posture::Interactive => "interactive",
            Posture::Unattended => "unattended",
            Posture::Strict => "strict",
        }
    }
}

impl FromStr for Posture {
    type Err = String;
    fn from_str(s: &str) -> Result<Posture, String> {
        match s {
            "interactive" => Ok(Posture::Interactive),
            "unattended" => Ok(Posture::Unattended),
            "strict" => Ok(Posture::Strict),
            _ => Err(format!(
                "unknown posture {s:?}; use interactive, unattended or strict"
            )),
        }
    }
}

impl fmt::Display for Posture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The merged `defaults`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Defaults {
    /// Fallback for a read-only call no rule decided.
    pub read_only: Decision,
    /// Fallback for any other call no rule decided.
    pub writer: Decision,
    /// What `ask` becomes under the unattended posture.
    pub unattended: Unattended,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            read_only: Decision::Allow,
            writer: Decision::Ask,
            unattended: Unattended::Deny,
        }
    }
}

/// One policy file, parsed.
#[derive(Clone, Debug)]
struct Source {
    name: String,
    file: yaml::PolicyFile,
}

/// Loaded policy files, not yet tied to a workspace. Immutable: a reload builds a new set.
#[derive(Clone, Debug)]
pub struct PolicySet {
    sources: Vec<Source>,
    rego: Option<Arc<Rego>>,
}

/// One problem in a policy, with its place.
#[derive(Debug)]
pub struct PolicyProblem {
    /// The file, as named on the command line (or the embedded name).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong and, where possible, what to write instead.
    pub message: String,
}

impl fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found while loading or compiling policies; any one fails the load.
#[derive(Debug)]
pub struct PolicyError(pub Vec<PolicyProblem>);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PolicyError {}

impl PolicySet {
    /// The embedded default policy.
    pub fn embedded_default() -> PolicySet {
        match PolicySet::from_yaml(DEFAULT_POLICY_NAME, DEFAULT_POLICY) {
            Ok(set) => set,
            // The embedded text is a constant checked by `the_embedded_default_loads`.
            Err(e) => unreachable!("the embedded default policy does not load: {e}"),
        }
    }

    /// Parses one YAML policy from text; `name` is how it is reported.
    pub fn from_yaml(name: &str, text: &str) -> Result<PolicySet, PolicyError> {
        PolicySet::from_texts(&[(name, text)], &[], &[])
    }

    /// Builds a set from texts: YAML policies, Rego modules, and data documents mounted under
    /// `data.` (each `(name, text or value)`).
    pub fn from_texts(
        yaml: &[(&str, &str)],
        rego: &[(&str, &str)],
        data: &[(&str, Json)],
    ) -> Result<PolicySet, PolicyError> {
        let mut problems = Vec::new();
        let mut sources = Vec::new();
        for (name, text) in yaml {
            parse_into(name, text, &mut sources, &mut problems);
        }
        let modules: Vec<RegoSource> = rego
            .iter()
            .map(|(name, text)| RegoSource {
                name: (*name).to_owned(),
                text: (*text).to_owned(),
            })
            .collect();
        let data: Vec<(String, Json)> = data
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect();
        finish(sources, &modules, &data, problems)
    }

    /// Loads policy files and folders (see [`PolicySet::load_with`]).
    pub fn load(paths: &[PathBuf]) -> Result<PolicySet, PolicyError> {
        PolicySet::load_with(paths, &[], false)
    }

    /// Loads policy files and folders, and data files (JSON or YAML) mounted under `data.`.
    /// A folder contributes, in sorted order, every `*.yaml`/`*.yml` below it except test case
    /// files (`*.cases.yaml`), and every `*.rego` except test modules (`*_test.rego`, loaded
    /// only with `tests`). Every problem in every file is reported together.
    pub fn load_with(
        paths: &[PathBuf],
        data: &[PathBuf],
        tests: bool,
    ) -> Result<PolicySet, PolicyError> {
        let mut problems = Vec::new();
        let mut sources = Vec::new();
        let mut modules = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for path in paths {
            let files = match policy_files(path, tests) {
                Ok(files) => files,
                Err(message) => {
                    problems.push(PolicyProblem {
                        file: path.display().to_string(),
                        line: None,
                        column: None,
                        message,
                    });
                    continue;
                }
            };
            for file in files {
                if !seen.insert(file.canonicalize().unwrap_or_else(|_| file.clone())) {
                    continue;
                }
                let name = file.display().to_string();
                match std::fs::read_to_string(&file) {
                    Ok(text) if has_ext(&file, &["rego"]) => {
                        modules.push(RegoSource { name, text })
                    }
                    Ok(text) => parse_into(&name, &text, &mut sources, &mut problems),
                    Err(e) => problems.push(PolicyProblem {
                        file: name,
                        line: None,
                        column: None,
                        message: format!("cannot read: {e}"),
                    }),
                }
            }
        }
        let mut documents = Vec::new();
        for path in data {
            let name = path.display().to_string();
            let parsed = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read: {e}"))
                .and_then(|text| {
                    if has_ext(path, &["yaml", "yml"]) {
                        yaml_serde::from_str::<Json>(&text).map_err(|e| e.to_string())
                    } else {
                        serde_json::from_str::<Json>(&text).map_err(|e| e.to_string())
                    }
                });
            match parsed {
                Ok(value) => documents.push((name, value)),
                Err(message) => problems.push(PolicyProblem {
                    file: name,
                    line: None,
                    column: None,
                    message,
                }),
            }
        }
        finish(sources, &modules, &documents, problems)
    }

    /// The Rego policies, if any were loaded.
    pub fn rego(&self) -> Option<&Rego> {
        self.rego.as_deref()
    }

    /// The YAML rules: `(source, id, decision)` in order.
    pub fn yaml_rules(&self) -> Vec<(String, String, Decision)> {
        let mut out = Vec::new();
        for source in &self.sources {
            for (i, rule) in source.file.rules.iter().enumerate() {
                let id = rule
                    .id
                    .as_ref()
                    .map(|id| id.0.clone())
                    .unwrap_or_else(|| format!("rules[{i}]"));
                out.push((source.name.clone(), id, rule.decision));
            }
        }
        out
    }

    /// The names of the loaded files, in order.
    pub fn source_names(&self) -> impl Iterator<Item = &str> {
        self.sources.iter().map(|s| s.name.as_str())
    }

    /// The merged `sandbox:` sections (the defaults when no file has one).
    pub fn jail(&self) -> crate::sandbox::jail::JailConfig {
        crate::sandbox::jail::JailConfig::merge(
            self.sources.iter().filter_map(|s| s.file.sandbox.as_ref()),
        )
    }

    /// The merged defaults.
    pub fn defaults(&self) -> Defaults {
        let builtin = Defaults::default();
        let strictest = |get: &dyn Fn(&yaml::DefaultsSpec) -> Option<Decision>, fallback| {
            self.sources
                .iter()
                .filter_map(|s| get(&s.file.defaults))
                .max()
                .unwrap_or(fallback)
        };
        let unattended = if self
            .sources
            .iter()
            .any(|s| s.file.defaults.unattended == Some(Unattended::Deny))
        {
            Unattended::Deny
        } else if self
            .sources
            .iter()
            .any(|s| s.file.defaults.unattended == Some(Unattended::Allow))
        {
            Unattended::Allow
        } else {
            builtin.unattended
        };
        Defaults {
            read_only: strictest(&|d| d.read_only, builtin.read_only),
            writer: strictest(&|d| d.writer, builtin.writer),
            unattended,
        }
    }

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

/// Parses one file's text into `sources`, or its problems into `problems`.
fn parse_into(
    name: &str,
    text: &str,
    sources: &mut Vec<Source>,
    problems: &mut Vec<PolicyProblem>,
) {
    match yaml::parse(text) {
        Ok(file) => {
            let mut seen = BTreeSet::new();
            for (i, rule) in file.rules.iter().enumerate() {
                if let Some(id) = &rule.id
                    && !seen.insert(id.0.clone())
                {
                    problems.push(PolicyProblem {
                        file: name.to_owned(),
                        line: None,
                        column: None,
                        message: format!(
                            "rules[{i}] reuses the id {:?}; rule ids must be unique within a file",
                            id.0
                        ),
                    });
                }
            }
            sources.push(Source {
                name: name.to_owned(),
                file,
            });
        }
        Err(e) => problems.push(PolicyProblem {
            file: name.to_owned(),
            line: e.line,
            column: e.column,
            message: e.message,
        }),
    }
}

/// Checks the Rego modules and data, and makes the set.
fn finish(
    sources: Vec<Source>,
    modules: &[RegoSource],
    data: &[(String, Json)],
    mut problems: Vec<PolicyProblem>,
) -> Result<PolicySet, PolicyError> {
    if !problems.is_empty() {
        return Err(PolicyError(problems));
    }
    if modules.is_empty() && !data.is_empty() {
        problems.push(PolicyProblem {
            file: data[0].0.clone(),
            line: None,
            column: None,
            message: "data is only read by Rego policies, and no .rego policy is loaded".into(),
        });
        return Err(PolicyError(problems));
    }
    match Rego::load(modules, data) {
        Ok(rego) => Ok(PolicySet {
            sources,
            rego: rego.map(Arc::new),
        }),
        Err(p) => Err(PolicyError(p)),
    }
}

/// The policy files a `--policy` argument names.
fn policy_files(path: &Path, tests: bool) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if meta.is_file() {
        return if has_ext(path, &["yaml", "yml", "rego"]) {
            Ok(vec![path.to_path_buf()])
        } else {
            Err(
                "not a policy file; expected a .yaml, .yml or .rego file, or a folder of them"
                    .into(),
            )
        };
    }
    let mut files = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
            let p = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", p.display()))?;
            if kind.is_dir() {
                stack.push(p);
            } else if is_policy_file(&p, tests) {
                files.push(p);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err("the folder holds no policy files (*.yaml, *.yml, *.rego)".into());
    }
    Ok(files)
}

fn has_ext(path: &Path, exts: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| exts.contains(&e))
}

/// A `*.cases.yaml` file holds policy test cases, not a policy.
pub fn is_case_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".cases.yaml") || n.ends_with(".cases.yml"))
}

/// A Rego module whose name ends in `_test.rego` holds tests, as with `opa test`.
pub fn is_test_module(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with("_test.rego"))
}

fn is_policy_file(path: &Path, tests: bool) -> bool {
    (has_ext(path, &["yaml", "yml"]) && !is_case_file(path))
        || (has_ext(path, &["rego"]) && (tests || !is_test_module(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_loads() {
        let set = PolicySet::from_yaml(DEFAULT_POLICY_NAME, DEFAULT_POLICY).unwrap();
        let defaults = set.defaults();
        assert_eq!(defaults.read_only, Decision::Allow);
        assert_eq!(defaults.writer, Decision::Ask);
        assert_eq!(defaults.unattended, Unattended::Deny);
    }

    #[test]
    fn the_strictest_default_wins_across_files() {
        let a = PolicySet::from_texts(
            &[
                (
                    "a",
                    "version: 1\ndefaults:\n  writer: allow\n  unattended: allow\n",
                ),
                ("b", "version: 1\ndefaults:\n  writer: deny\n"),
            ],
            &[],
            &[],
        )
        .unwrap();
        let d = a.defaults();
        assert_eq!(d.writer, Decision::Deny);
        assert_eq!(d.read_only, Decision::Allow);
        assert_eq!(d.unattended, Unattended::Allow);
    }

    #[test]
    fn duplicate_ids_in_one_file_are_refused() {
        let e = PolicySet::from_yaml(
            "p.yaml",
            "version: 1\nrules:\n  - id: a\n    decision: deny\n  - id: a\n    decision: allow\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("reuses the id \"a\""), "{e}");
    }

    #[test]
    fn posture_names_parse_and_unknown_ones_are_refused() {
        assert_eq!("strict".parse::<Posture>().unwrap(), Posture::Strict);
        assert!(
            "lenient"
                .parse::<Posture>()
                .unwrap_err()
                .contains("unknown posture")
        );
    }
}
