//! Rego policies on `regorus`: loading, the votes of one call, and the `test_*` rules.
//!
//! Modules in package `reasonix` or below it define sets `deny`, `ask` and `allow` of reasons —
//! strings, or objects `{"reason": ..., "id": ...}`. Their votes join the YAML rules' under the
//! same precedence. Modules in other packages may hold helpers; they do not vote.
//!
//! # How a call is evaluated
//!
//! Everything is parsed and prepared once, when the policies load: the modules are added to one
//! `regorus::Engine`, the sets each package declares are discovered, and a generated module
//! (package [`AGGREGATE`]) gathers every declared set into one rule, so a call costs one rule
//! evaluation. The engine is evaluated once with an empty input to finish its preparation; each
//! call then clones it (an `Arc` bump) and sets its own input.
//!
//! The interpreter is used, not regorus' bytecode VM. Measured on this machine the VM is about
//! three times faster with the same answers — except on errors: the VM turns an error inside a
//! rule body (a failing builtin, conflicting values) into "no vote", so a `deny` that errors
//! would silently not fire. The interpreter, with strict builtin errors, reports the error, and
//! the gate then denies. A security gate takes the slower path that fails closed.
//!
//! # Bounds
//!
//! Evaluation stops with an error after [`TIME_LIMIT`] (checked every 64 steps), and the call is
//! denied. The limit is cooperative: it is not checked inside one builtin call, so a builtin asked
//! for a huge result (`numbers.range(1, 100000000)`) runs to its end first; and a recursive
//! function (which OPA rejects at compile time) overflows the stack and aborts the process. Test
//! policies with `reasonix policy test` (and `opa check` where available) before deploying them.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use regorus::Engine;
use regorus::utils::limits::ExecutionTimerConfig;
use serde_json::Value as Json;

use super::{Decision, PolicyProblem};

/// The generated package that gathers every vote.
pub const AGGREGATE: &str = "reasonix_gate_internal";
/// The most time one evaluation may take.
pub const TIME_LIMIT: Duration = Duration::from_millis(250);
/// The package whose sets vote, with everything below it.
pub const ROOT_PACKAGE: &str = "reasonix";

/// One Rego module as loaded.
#[derive(Clone, Debug)]
pub struct RegoSource {
    /// How it is reported (the file path).
    pub name: String,
    /// The module text.
    pub text: String,
}

/// A package that votes, and the files that define it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    /// Dotted package name (`reasonix.network`).
    pub name: String,
    /// The files its modules came from.
    pub files: Vec<String>,
    /// The sets it declares, in `deny`, `ask`, `allow` order.
    pub sets: Vec<Decision>,
}

/// One vote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vote {
    /// Which set it is in.
    pub decision: Decision,
    /// The reason given.
    pub reason: String,
    /// The vote's id, or `<package>.<set>` when it has none.
    pub id: String,
    /// The file(s) of the package that voted.
    pub source: String,
}

/// The outcome of one `test_*` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestOutcome {
    /// The rule is true.
    Pass,
    /// The rule is undefined or not `true`.
    Fail(String),
    /// Evaluating it failed.
    Error(String),
}

/// Loaded, prepared Rego policies. Immutable; each evaluation works on a clone.
#[derive(Clone)]
pub struct Rego {
    engine: Engine,
    packages: Vec<Package>,
    tests: Vec<(String, String, String)>,
}

impl std::fmt::Debug for Rego {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rego")
            .field("packages", &self.packages)
            .finish_non_exhaustive()
    }
}

/// Turns a regorus error into a problem with file, line and column when the message has them
/// (regorus writes `--> file:line:col` on its first line).
pub(super) fn problem(fallback_file: &str, error: &dyn std::fmt::Display) -> PolicyProblem {
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

        let packages = discover(&mut engine).map_err(|e| vec![problem("(rego)", &e)])?;
        if let Some(p) = packages.iter().find(|p| p.name == AGGREGATE) {
            return Err(vec![PolicyProblem {
                file: p.files.join(", "),
                line: None,
                column: None,
                message: format!("package {AGGREGATE} is reserved for Reasonix"),
            }]);
        }
        let tests = find_tests(sources, &mut engine);
        let voting: Vec<Package> = packages
            .into_iter()
            .filter(|p| p.name == ROOT_PACKAGE || p.name.starts_with(&format!("{ROOT_PACKAGE}.")))
            .collect();
        engine
            .add_policy(format!("(generated)/{AGGREGATE}.rego"), aggregate(&voting))
            .map_err(|e| vec![problem("(generated)", &e)])?;

        let mut rego = Rego {
            engine,
            packages: voting,
            tests,
        };
        // Prepare once: analysis runs on the first evaluation, and clones share its result.
        // An error here (an unsafe variable, an unknown function) is a load error.
        rego.engine.set_input(regorus::Value::new_object());
        if let Err(e) = rego.engine.eval_rule(format!("data.{AGGREGATE}.votes")) {
            let p = problem("(rego)", &e);
            // A runtime error on the empty input is the policy's business at call time; only
            // errors regorus finds before evaluating anything fail the load.
            if p.line.is_some() && !is_runtime_error(&p.message) {
                return Err(vec![p]);
            }
        }
        Ok(Some(rego))
    }

    /// The voting packages.
    pub fn packages(&self) -> &[Package] {
        &self.packages
    }

    /// The `test_*` rules found: `(package, rule, file)`.
    pub fn tests(&self) -> &[(String, String, String)] {
        &self.tests
    }

    /// The votes on one input document (JSON text). An error is returned as is; the caller
    /// denies.
    pub fn votes(&self, input_json: &str) -> Result<Vec<Vote>, String> {
        let input = regorus::Value::from_json_str(input_json)
            .map_err(|e| format!("the input document does not convert: {e}"))?;
        let mut engine = self.engine.clone();
        engine.set_input(input);
        let result = engine
            .eval_rule(format!("data.{AGGREGATE}.votes"))
            .map_err(|e| flatten(&e.to_string()))?;
        let json = serde_json::to_value(&result).map_err(|e| e.to_string())?;
        let mut votes = Vec::new();
        for package in &self.packages {
            let source = package.files.join(", ");
            for decision in &package.sets {
                let set = &json[&package.name][decision.as_str()];
                let Some(items) = set.as_array() else {
                    return Err(format!(
                        "data.{}.{} is not a set",
                        package.name,
                        decision.as_str()
                    ));
                };
                for item in items {
                    let (reason, id) = match item {
                        Json::String(s) => (s.clone(), None),
                        Json::Object(o) => match (o.get("reason"), o.get("id")) {
                            (Some(Json::String(r)), None) => (r.clone(), None),
                            (Some(Json::String(r)), Some(Json::String(i))) => {
                                (r.clone(), Some(i.clone()))
                            }
                            _ => {
                                return Err(format!(
                                    "a vote in data.{}.{} is {item}: votes are strings or {{\"reason\": string, \"id\": string}}",
                                    package.name,
                                    decision.as_str()
                                ));
                            }
                        },
                        other => {
                            return Err(format!(
                                "a vote in data.{}.{} is {other}: votes are strings or {{\"reason\": string, \"id\": string}}",
                                package.name,
                                decision.as_str()
                            ));
                        }
                    };
                    votes.push(Vote {
                        decision: *decision,
                        reason,
                        id: id.unwrap_or_else(|| format!("{}.{}", package.name, decision.as_str())),
                        source: source.clone(),
                    });
                }
            }
        }
        Ok(votes)
    }

    /// Runs every `test_*` rule, as `opa test` does: `true` passes, anything else fails.
    pub fn run_tests(&self) -> Vec<(String, String, String, TestOutcome)> {
        self.tests
            .iter()
            .map(|(package, rule, file)| {
                let mut engine = self.engine.clone();
                engine.set_input(regorus::Value::new_object());
                let outcome = match engine.eval_rule(format!("data.{package}.{rule}")) {
                    Ok(regorus::Value::Bool(true)) => TestOutcome::Pass,
                    Ok(regorus::Value::Undefined) => TestOutcome::Fail("undefined".into()),
                    Ok(other) => TestOutcome::Fail(format!("{other}")),
                    Err(e) => TestOutcome::Error(flatten(&e.to_string())),
                };
                (package.clone(), rule.clone(), file.clone(), outcome)
            })
            .collect()
    }
}

/// regorus errors span several lines; a verdict's reason is one.
fn flatten(message: &str) -> String {
    let location = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("--> "))
        .map(|l| format!("{l}: "))
        .unwrap_or_default();
    let what = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(message.trim());
    format!("{location}{what}")
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

/// The generated module gathering every declared set into one object.
fn aggregate(packages: &[Package]) -> String {
    let mut out = format!("package {AGGREGATE}\n\nimport rego.v1\n\nvotes := {{\n");
    for p in packages {
        out.push_str(&format!("\t\"{}\": {{\n", p.name));
        for d in &p.sets {
            out.push_str(&format!("\t\t\"{0}\": data.{1}.{0},\n", d.as_str(), p.name));
        }
        out.push_str("\t},\n");
    }
    out.push_str("}\n");
    out
}

/// The `test_*` rules of every module: `(package, rule, file)`, found by their heads.
fn find_tests(sources: &[RegoSource], engine: &mut Engine) -> Vec<(String, String, String)> {
    let packages: BTreeMap<String, String> = engine
        .get_policy_package_components()
        .unwrap_or_default()
        .into_iter()
        .map(|m| (m.source_file, m.components.join(".")))
        .collect();
    let mut out = Vec::new();
    for source in sources {
        let Some(package) = packages.get(&source.name) else {
            continue;
        };
        for line in source.text.lines() {
            let Some(rest) = line.strip_prefix("test_") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let rule = format!("test_{name}");
            if !out
                .iter()
                .any(|(p, r, _): &(String, String, String)| p == package && *r == rule)
            {
                out.push((package.clone(), rule, source.name.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(modules: &[(&str, &str)]) -> Result<Option<Rego>, Vec<PolicyProblem>> {
        let sources: Vec<RegoSource> = modules
            .iter()
            .map(|(n, t)| RegoSource {
                name: (*n).into(),
                text: (*t).into(),
            })
            .collect();
        Rego::load(&sources, &[])
    }

    #[test]
    fn votes_come_from_every_package_below_reasonix() {
        let rego = load(&[
            ("a.rego", "package reasonix\nimport rego.v1\ndeny contains \"no\" if input.x == 1\nallow contains {\"reason\": \"fine\", \"id\": \"ok-1\"} if input.x == 2\n"),
            ("b.rego", "package reasonix.net\nask contains \"net?\" if input.x == 1\n"),
            ("c.rego", "package helpers\ndeny contains \"never counted\" if true\n"),
        ])
        .unwrap()
        .unwrap();
        let names: Vec<&str> = rego.packages().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["reasonix", "reasonix.net"]);
        let votes = rego.votes(r#"{"x": 1}"#).unwrap();
        assert_eq!(votes.len(), 2, "{votes:?}");
        assert!(votes.iter().any(|v| v.decision == Decision::Deny
            && v.id == "reasonix.deny"
            && v.source == "a.rego"));
        assert!(
            votes
                .iter()
                .any(|v| v.decision == Decision::Ask && v.reason == "net?")
        );
        let votes = rego.votes(r#"{"x": 2}"#).unwrap();
        assert_eq!(
            votes,
            [Vote {
                decision: Decision::Allow,
                reason: "fine".into(),
                id: "ok-1".into(),
                source: "a.rego".into()
            }]
        );
    }

    #[test]
    fn a_runtime_error_is_an_error_not_an_empty_vote() {
        let rego = load(&[(
            "e.rego",
            "package reasonix\ndeny contains \"x\" if to_number(input.n) > 1\nallow contains \"y\" if true\n",
        )])
        .unwrap()
        .unwrap();
        let err = rego.votes(r#"{"n": "abc"}"#).unwrap_err();
        assert!(err.contains("e.rego"), "{err}");
        assert!(
            rego.votes(r#"{"n": "5"}"#)
                .unwrap()
                .iter()
                .any(|v| v.decision == Decision::Deny)
        );
    }

    /// Why the interpreter and not regorus' VM (see the module doc): on the same policy and
    /// input, the interpreter reports the builtin error, while the VM answers with an empty
    /// `deny` set, which would let the call through.
    #[test]
    fn the_vm_would_fail_open_where_the_interpreter_fails_closed() {
        use regorus::languages::rego::compiler::Compiler;
        use regorus::rvm::RegoVM;

        let text =
            "package reasonix\nimport rego.v1\ndeny contains \"x\" if to_number(input.n) > 1\n";
        let mut engine = Engine::new();
        engine.set_strict_builtin_errors(true);
        engine.add_policy("e.rego".into(), text.into()).unwrap();
        let input = regorus::Value::from_json_str(r#"{"n": "abc"}"#).unwrap();

        engine.set_input(input.clone());
        assert!(engine.eval_rule("data.reasonix.deny".into()).is_err());

        let compiled = engine
            .compile_with_entrypoint(&"data.reasonix.deny".into())
            .unwrap();
        let program = Compiler::compile_from_policy(&compiled, &["data.reasonix.deny"]).unwrap();
        let mut vm = RegoVM::new();
        vm.load_program(program);
        vm.set_strict_builtin_errors(true);
        vm.set_input(input);
        let deny = vm.execute_entry_point_by_index(0).unwrap();
        assert_eq!(serde_json::to_value(&deny).unwrap(), serde_json::json!([]));
    }

    #[test]
    fn conflicting_values_are_an_error() {
        let rego = load(&[(
            "c.rego",
            "package reasonix\nx := 1 if input.a\nx := 2 if input.a\ndeny contains \"d\" if x == 1\n",
        )])
        .unwrap()
        .unwrap();
        assert!(rego.votes(r#"{"a": true}"#).is_err());
    }

    #[test]
    fn malformed_votes_are_errors() {
        for body in [
            "deny contains 5 if true",
            "deny contains {\"why\": \"x\"} if true",
            "ask contains {\"reason\": 1} if true",
        ] {
            let rego = load(&[("m.rego", &format!("package reasonix\n{body}\n"))])
                .unwrap()
                .unwrap();
            assert!(rego.votes("{}").is_err(), "{body}");
        }
    }

    #[test]
    fn parse_errors_name_file_line_and_column() {
        let problems =
            load(&[("bad.rego", "package reasonix\n\ndeny contains x if {\n")]).unwrap_err();
        assert_eq!(problems[0].file, "bad.rego");
        assert!(problems[0].line.is_some(), "{problems:?}");
    }

    #[test]
    fn a_pathological_policy_is_stopped_by_the_time_limit() {
        let rego = load(&[(
            "slow.rego",
            "package reasonix\ndeny contains \"slow\" if {\n  some i in numbers.range(1, 2000)\n  some j in numbers.range(1, 2000)\n  some k in numbers.range(1, 2000)\n  i + j + k < 0\n}\n",
        )])
        .unwrap()
        .unwrap();
        let started = std::time::Instant::now();
        let err = rego.votes("{}").unwrap_err();
        assert!(err.contains("time limit"), "{err}");
        assert!(
            started.elapsed() < TIME_LIMIT * 4,
            "{:?}",
            started.elapsed()
        );
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

    #[test]
    fn test_rules_are_found_and_run() {
        let rego = load(&[(
            "t_test.rego",
            "package reasonix.t\nimport rego.v1\nf(x) := x + 1\ntest_pass if f(1) == 2\ntest_fail if f(1) == 3\ntest_with if { data.reasonix.t.g with input as {\"v\": 1} }\ng if input.v == 1\n",
        )])
        .unwrap()
        .unwrap();
        let results = rego.run_tests();
        let outcome = |name: &str| {
            results
                .iter()
                .find(|r| r.1 == name)
                .map(|r| r.3.clone())
                .unwrap()
        };
        assert_eq!(outcome("test_pass"), TestOutcome::Pass);
        assert!(matches!(outcome("test_fail"), TestOutcome::Fail(_)));
        assert_eq!(outcome("test_with"), TestOutcome::Pass);
    }
}
