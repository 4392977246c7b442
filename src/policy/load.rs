//! Loading policies: files, folders and texts become one [`PolicySet`] — the YAML rules, the Rego
//! modules and the data documents Rego reads — before any workspace is known.
//!
//! Every problem in every file is reported together, each with its file and, where the parser
//! knows it, line and column: one bad rule fails the whole set (a gate fails closed), but the
//! author sees every mistake at once. Also here: which files a folder contributes (test cases and
//! Rego test modules stay out), and how the `defaults` of several files merge.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;

use super::rego::{Rego, RegoSource};
use super::yaml::{self, Unattended};
use super::{
    BUILTIN_DEFAULT, DEFAULT_POLICY, DEFAULT_POLICY_NAME, Decision, Defaults, PolicyError,
    PolicyProblem,
};

/// One policy file, parsed.
#[derive(Clone, Debug)]
pub(super) struct Source {
    pub(super) name: String,
    pub(super) file: yaml::PolicyFile,
}

/// Loaded policy files, not yet tied to a workspace. Immutable: a reload builds a new set.
#[derive(Clone, Debug)]
pub struct PolicySet {
    pub(super) sources: Vec<Source>,
    pub(super) rego: Option<Arc<Rego>>,
}

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
    /// The name [`BUILTIN_DEFAULT`] (`builtin:default`), anywhere in `paths`, stands for the
    /// embedded default policy, which then votes beside the others. A folder contributes, in sorted order, every `*.yaml`/`*.yml` below it except test case
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
            if path.as_os_str() == BUILTIN_DEFAULT {
                if seen.insert(PathBuf::from(BUILTIN_DEFAULT)) {
                    parse_into(
                        DEFAULT_POLICY_NAME,
                        DEFAULT_POLICY,
                        &mut sources,
                        &mut problems,
                    );
                }
                continue;
            }
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

    /// Has every evaluation of the Rego votes on the bytecode VM made by the interpreter too,
    /// and returns the log their differences go to ([`Rego::cross_checked`]); `None` when
    /// there is nothing to compare (no Rego, or the interpreter runs the votes anyway).
    pub fn cross_check_engines(&mut self) -> Option<super::rego::EngineLog> {
        let (both, log) = self.rego.as_deref()?.cross_checked()?;
        self.rego = Some(Arc::new(both));
        Some(log)
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

    /// Whether the embedded default policy is among the loaded ones (no `--policy`, or
    /// `builtin:default` among them).
    pub fn includes_default(&self) -> bool {
        self.sources.iter().any(|s| s.name == DEFAULT_POLICY_NAME)
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
        if is_case_file(path) {
            return Err(
                "a file of test cases, not a policy; `reasonix policy test` runs it against the policies beside it"
                    .into(),
            );
        }
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
}
