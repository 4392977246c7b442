//! The `test_*` rules of Rego modules, as `opa test` runs them: found by their heads when the
//! policies load, run one by one on an empty input by `reasonix policy test`. A rule that is
//! `true` passes; undefined or any other value fails; an evaluation error is reported as such.

use super::analysis::ModuleFacts;
use super::{Rego, flatten};

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

impl Rego {
    /// The `test_*` rules found: `(package, rule, file)`.
    pub fn tests(&self) -> &[(String, String, String)] {
        &self.tests
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

/// The `test_*` rules of every module: `(package, rule, file)`, found by their heads in the
/// syntax tree — a rule, not a function (`test_helper(x)` is a helper, as with `opa test`), each
/// name once per package.
pub(super) fn find(modules: &[ModuleFacts]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for m in modules {
        let package = m.package.join(".");
        for rule in &m.tests {
            if !out.iter().any(|(p, r, _)| *p == package && r == rule) {
                out.push((package.clone(), rule.clone(), m.file.clone()));
            }
        }
    }
    out
}

// Named apart from this file's own name (clippy's `module_inception`).
#[cfg(test)]
mod unit {
    use super::super::load_texts as load;
    use super::*;

    #[test]
    fn a_function_named_test_is_a_helper_not_a_test() {
        let rego = load(&[(
            "h_test.rego",
            "package reasonix.h\nimport rego.v1\ntest_helper(x) := x + 1\ntest_uses if test_helper(1) == 2\n  test_indented if true\n",
        )])
        .unwrap()
        .unwrap();
        let names: Vec<&str> = rego.tests().iter().map(|t| t.1.as_str()).collect();
        assert_eq!(names, ["test_uses", "test_indented"]);
        assert!(rego.run_tests().iter().all(|t| t.3 == TestOutcome::Pass));
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
