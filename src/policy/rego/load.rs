//! Loading Rego: modules and data documents become one prepared engine, the voting sets of
//! every package below [`ROOT_PACKAGE`] are discovered, and the generated [`AGGREGATE`] module
//! gathers them. Every problem is reported with its file and, when regorus gives them, line and
//! column. A policy that does not load never votes: the whole set fails to load.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use regorus::Engine;
use regorus::utils::limits::ExecutionTimerConfig;
use serde_json::Value as Json;

use super::analysis::{self, ModuleFacts};
use super::index::Index;
use super::{AGGREGATE, Package, ROOT_PACKAGE, Rego, RegoSource, TIME_LIMIT};
use crate::policy::{Decision, PolicyProblem};

/// Turns a regorus error into a problem with file, line and column when the message has them
/// (regorus writes `--> file:line:col` on its first line).
fn problem(fallback_file: &str, error: &dyn std::fmt::Display) -> PolicyProblem {
    let text = error.to_string();
    let mut file = fallback_file.to_owned();
    let (mut line, mut column) = (None, None);
    if let Some(at) = text.lines().find_map(|l| l.trim().strip_prefix("--> ")) {
        let mut parts = at.rsplitn(3, ':');
        let col = parts.next().and_then(|c| c.trim().parse().ok());
        let ln = parts.next().and_then(|l| l.trim().parse().ok());
        if let (Some(c), Some(l), Some(f)) = (col, ln, parts.next()) {
            file = f.to_owned();
            line = Some(l);
            column = Some(c);
        }
    }
    let message = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_owned)
        .unwrap_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" "));
    PolicyProblem {
        file,
        line,
        column,
        message,
    }
}

impl Rego {
    /// Loads modules and data, discovers the voting sets and prepares the engine. `None` when
    /// there is no module.
    pub fn load(
        sources: &[RegoSource],
        data: &[(String, Json)],
    ) -> Result<Option<Rego>, Vec<PolicyProblem>> {
        if sources.is_empty() {
            return Ok(None);
        }
        let mut engine = Engine::new();
        engine.set_strict_builtin_errors(true);
        engine.set_gather_prints(true);
        engine.set_execution_timer_config(ExecutionTimerConfig {
            limit: TIME_LIMIT,
            check_interval: NonZeroU32::MIN.saturating_add(63),
        });
        let mut problems = Vec::new();
        for source in sources {
            if let Err(e) = engine.add_policy(source.name.clone(), source.text.clone()) {
                problems.push(problem(&source.name, &e));
            }
        }
        for (name, value) in data {
            if let Some(object) = value.as_object() {
                if object.contains_key(ROOT_PACKAGE) || object.contains_key(AGGREGATE) {
                    problems.push(PolicyProblem {
                        file: name.clone(),
                        line: None,
                        column: None,
                        message: format!(
                            "data may not be mounted under data.{ROOT_PACKAGE}, where the policies vote; put it under another top-level key"
                        ),
                    });
                    continue;
                }
            } else {
                problems.push(PolicyProblem {
                    file: name.clone(),
                    line: None,
                    column: None,
                    message: "data must be an object; its keys are mounted under data.".into(),
                });
                continue;
            }
            let value = match regorus::Value::from_json_str(&value.to_string()) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(problem(name, &e));
                    continue;
                }
            };
            if let Err(e) = engine.add_data(value) {
                problems.push(problem(name, &e));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let facts: Vec<ModuleFacts> = engine
            .get_modules()
            .iter()
            .map(|m| ModuleFacts::of(m))
            .collect();
        if let Some(problem) = analysis::recursion(&facts) {
            return Err(vec![problem]);
        }
        let mut data_keys: Vec<String> = data
            .iter()
            .filter_map(|(_, v)| v.as_object())
            .flat_map(|o| o.keys().cloned())
            .collect();
        data_keys.sort();
        data_keys.dedup();

        let packages = discover(&mut engine).map_err(|e| vec![problem("(rego)", &e)])?;
        if let Some(p) = packages.iter().find(|p| p.name == AGGREGATE) {
            return Err(vec![PolicyProblem {
                file: p.files.join(", "),
                line: None,
                column: None,
                message: format!("package {AGGREGATE} is reserved for Reasonix"),
            }]);
        }
        let tests = super::tests::find(&facts);
        let mut voting: Vec<Package> = packages
            .into_iter()
            .filter(|p| p.name == ROOT_PACKAGE || p.name.starts_with(&format!("{ROOT_PACKAGE}.")))
            .collect();
        // Which packages read a started process's environment (`input.arguments.env`, or all
        // of what lies above it): only their allow votes name it.
        let env = ["arguments".to_owned(), "env".to_owned()];
        for p in &mut voting {
            p.names_env = facts
                .iter()
                .filter(|m| m.package.join(".") == p.name)
                .flat_map(|m| &m.input_reads)
                .any(|read| read.starts_with(&env) || env.starts_with(read));
        }
        let index = Index::of(&voting, &facts);
        engine
            .add_policy(
                format!("(generated)/{AGGREGATE}.rego"),
                index.module(&voting),
            )
            .map_err(|e| vec![problem("(generated)", &e)])?;

        let mut rego = Rego {
            engine,
            spare: Default::default(),
            vm: Err("not compiled yet".into()),
            packages: voting,
            index,
            tests,
            reads: Rego::reads_of(&facts),
            cross_check: None,
            facts,
            data_keys,
        };
        // Prepare once: analysis runs on the first evaluation, and clones share its result.
        // An error here (an unsafe variable, an unknown function) is a load error.
        rego.engine.set_input(regorus::Value::new_object());
        if let Err(e) = rego.engine.eval_rule(rego.index.all.path.clone()) {
            let p = problem("(rego)", &e);
            // A runtime error on the empty input is the policy's business at call time; only
            // errors regorus finds before evaluating anything fail the load.
            if p.line.is_some() && !is_runtime_error(&p.message) {
                return Err(vec![p]);
            }
        }
        // The VM runs the generated rules when its compiler supports what they reach; the
        // interpreter runs them otherwise (`vm.rs`).
        let rules: Vec<String> = rego.index.selections().map(|s| s.path.clone()).collect();
        let variable = super::ENGINE_VARIABLE;
        rego.vm = match std::env::var(variable) {
            Ok(v) if v == "interpreter" => Err(format!("{variable}=interpreter")),
            Ok(v) if v == "vm" || v.is_empty() => super::vm::Vm::compile(&rego.engine, &rules),
            Err(std::env::VarError::NotPresent) => super::vm::Vm::compile(&rego.engine, &rules),
            other => {
                return Err(vec![PolicyProblem {
                    file: "(environment)".into(),
                    line: None,
                    column: None,
                    message: format!(
                        "{variable}={}: the Rego engine is `vm` (the default) or `interpreter`",
                        other.unwrap_or_else(|_| "(not UTF-8)".into())
                    ),
                }]);
            }
        };
        Ok(Some(rego))
    }
}

fn is_runtime_error(message: &str) -> bool {
    ["conflict", "time limit", "could not", "undefined"]
        .iter()
        .any(|m| message.contains(m))
}

/// Every package with the files that define it and the sets they declare.
fn discover(engine: &mut Engine) -> anyhow::Result<Vec<Package>> {
    let mut by_name: BTreeMap<String, Package> = BTreeMap::new();
    for module in engine.get_policy_package_components()? {
        if module.components.iter().any(|c| !is_identifier(c)) {
            anyhow::bail!(
                "{}: package components must be identifiers ({:?})",
                module.source_file,
                module.components
            );
        }
        let name = module.components.join(".");
        let entry = by_name.entry(name.clone()).or_insert_with(|| Package {
            name,
            files: Vec::new(),
            sets: Vec::new(),
            names_env: false,
        });
        entry.files.push(module.source_file.clone());
        for decision in [Decision::Deny, Decision::Ask, Decision::Allow] {
            if !entry.sets.contains(&decision)
                && engine.has_declared_rule_rooted_at(&module.source_file, decision.as_str())?
            {
                entry.sets.push(decision);
            }
        }
    }
    let mut packages: Vec<Package> = by_name.into_values().collect();
    for p in &mut packages {
        p.sets.sort_by_key(|d| std::cmp::Reverse(*d));
    }
    Ok(packages)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::super::load_texts as load;
    use super::*;

    #[test]
    fn parse_errors_name_file_line_and_column() {
        let problems =
            load(&[("bad.rego", "package reasonix\n\ndeny contains x if {\n")]).unwrap_err();
        assert_eq!(problems[0].file, "bad.rego");
        assert!(problems[0].line.is_some(), "{problems:?}");
    }

    #[test]
    fn the_reserved_package_and_data_under_reasonix_are_refused() {
        assert!(load(&[("r.rego", "package reasonix_gate_internal\nx := 1\n")]).is_err());
        let sources = [RegoSource {
            name: "a.rego".into(),
            text: "package reasonix\ndeny contains \"d\" if data.flags.on\n".into(),
        }];
        let bad = Rego::load(
            &sources,
            &[(
                "d.json".into(),
                serde_json::json!({"reasonix": {"deny": ["x"]}}),
            )],
        );
        assert!(bad.is_err());
        let good = Rego::load(
            &sources,
            &[("d.json".into(), serde_json::json!({"flags": {"on": true}}))],
        )
        .unwrap()
        .unwrap();
        assert_eq!(good.votes("{}").unwrap().len(), 1);
    }
}
