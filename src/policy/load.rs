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

use super::narrow::{self, LeftOut, Trust, Trusted};
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
    /// The Rego modules of files nobody trusts, in an engine of their own, whose `allow` votes
    /// are dropped (`narrow.rs`).
    pub(super) narrowing: Option<Arc<Rego>>,
    /// What was left out of files nobody trusts.
    pub(super) left_out: Vec<LeftOut>,
}

/// A policy or data file (or a folder of them) to load, and who vouches for it.
pub struct Named<'a> {
    /// The path, or [`BUILTIN_DEFAULT`].
    pub path: PathBuf,
    /// Whether each of its files counts whole or only its narrowing part.
    pub trust: &'a dyn Trust,
}

impl<'a> Named<'a> {
    /// `path`, trusted whole (named by the user).
    pub fn trusted(path: PathBuf) -> Named<'static> {
        Named {
            path,
            trust: &Trusted,
        }
    }
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
        let paths: Vec<Named<'_>> = paths.iter().cloned().map(Named::trusted).collect();
        let data: Vec<Named<'_>> = data.iter().cloned().map(Named::trusted).collect();
        PolicySet::load_named(&paths, &data, tests)
    }

    /// [`PolicySet::load_with`], each file counting whole or only its narrowing part as its
    /// [`Named::trust`] says (`narrow.rs`): a file nobody trusts keeps its deny and ask rules
    /// and its stricter defaults and limits; its Rego modules vote deny and ask only, in an
    /// engine apart from the trusted ones, with its data documents; what is left out is kept in
    /// [`PolicySet::left_out`].
    pub fn load_named(
        paths: &[Named<'_>],
        data: &[Named<'_>],
        tests: bool,
    ) -> Result<PolicySet, PolicyError> {
        let mut problems = Vec::new();
        let mut sources = Vec::new();
        let mut modules = Vec::new();
        let mut narrowing_modules = Vec::new();
        let mut left_out = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for named in paths {
            let path = &named.path;
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
                if let Err(why) = named.trust.readable(&file) {
                    left_out.push(LeftOut {
                        file: name,
                        part: "the whole file (not read)".into(),
                        why,
                    });
                    continue;
                }
                match std::fs::read_to_string(&file) {
                    Ok(text) => {
                        let whole = named.trust.trusted(&file, &text);
                        if has_ext(&file, &["rego"]) {
                            let module = RegoSource { name, text };
                            if whole {
                                modules.push(module);
                            } else {
                                narrowing_modules.push(module);
                            }
                        } else if whole {
                            parse_into(&name, &text, &mut sources, &mut problems);
                        } else {
                            let before = sources.len();
                            parse_into(&name, &text, &mut sources, &mut problems);
                            if let Some(source) = sources.get_mut(before) {
                                let file =
                                    std::mem::replace(&mut source.file, yaml::PolicyFile::empty());
                                let (kept, out) = narrow::yaml(&name, file);
                                source.file = kept;
                                left_out.extend(out);
                            }
                        }
                    }
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
        let mut narrowing_documents = Vec::new();
        for named in data {
            let path = &named.path;
            let name = path.display().to_string();
            if let Err(why) = named.trust.readable(path) {
                left_out.push(LeftOut {
                    file: name,
                    part: "the whole file (not read)".into(),
                    why,
                });
                continue;
            }
            let parsed = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read: {e}"))
                .and_then(|text| {
                    let whole = named.trust.trusted(path, &text);
                    let value = if has_ext(path, &["yaml", "yml"]) {
                        yaml_serde::from_str::<Json>(&text).map_err(|e| e.to_string())
                    } else {
                        serde_json::from_str::<Json>(&text).map_err(|e| e.to_string())
                    }?;
                    Ok((whole, value))
                });
            match parsed {
                Ok((true, value)) => documents.push((name, value)),
                Ok((false, value)) => narrowing_documents.push((name, value)),
                Err(message) => problems.push(PolicyProblem {
                    file: name,
                    line: None,
                    column: None,
                    message,
                }),
            }
        }
        if narrowing_modules.is_empty() {
            for (name, _) in narrowing_documents.drain(..) {
                left_out.push(LeftOut {
                    file: name,
                    part: "the whole document".into(),
                    why: "data of a file nobody trusts is read only by Rego modules nobody trusts, and there are none".into(),
                });
            }
        }
        let narrowing = if narrowing_modules.is_empty() {
            None
        } else {
            match Rego::load(&narrowing_modules, &narrowing_documents) {
                Ok(rego) => rego.map(Arc::new),
                Err(p) => {
                    problems.extend(p);
                    None
                }
            }
        };
        let mut set = finish(sources, &modules, &documents, problems)?;
        set.narrowing = narrowing;
        set.left_out = left_out;
        Ok(set)
    }

    /// What was left out of the policy files nobody trusts, and why: empty when every file
    /// counted whole.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// The Rego modules of files nobody trusts, whose `allow` votes do not count.
    pub fn narrowing_rego(&self) -> Option<&Rego> {
        self.narrowing.as_deref()
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
            narrowing: None,
            left_out: Vec::new(),
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

/// The files a policy or data entry stands for, as the loader reads them (a folder walked, test
/// files left out); an entry that cannot be read stands for itself.
pub fn policy_files_of(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        policy_files(path, false).unwrap_or_default()
    } else {
        vec![path.to_path_buf()]
    }
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
