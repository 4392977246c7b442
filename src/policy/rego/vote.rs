//! The votes of the Rego policies on one call's input document — failing closed: an error
//! anywhere is returned to the caller, which denies.
//!
//! # The VM, failing closed
//!
//! The votes are evaluated by regorus' bytecode VM (`vm.rs`), several times faster than its
//! interpreter. The published VM turned an error inside a rule body (a failing builtin,
//! conflicting values) into "no vote", so a `deny` that errors would silently not fire; Reasonix
//! runs it patched (`vendor/regorus/PATCHES.md` #6) so that, with strict builtin errors, it
//! reports every error the interpreter reports, and the gate then denies.
//! `the_vm_fails_closed_where_the_published_vm_failed_open` pins the case that was open;
//! `both_engines_fail_on_every_kind_of_error` (`engines.rs`) holds both engines to an error on
//! each kind of error, and `both_engines_vote_alike_on_every_policy_and_case`
//! (`tests/it/policy_rego.rs`) to the same votes over every policy and case in the repository. Policies the VM cannot compile are evaluated by the
//! interpreter, as before.
//!
//! # Bounds
//!
//! Evaluation stops with an error after [`TIME_LIMIT`](super::TIME_LIMIT) (checked every 64
//! steps by the interpreter, every 64 instructions by the VM), and the call is denied. The
//! limit is cooperative: it is not checked inside one builtin call, so a builtin asked for a
//! huge result (`numbers.range(1, 100000000)`) runs to its end first; and a recursive function
//! (which OPA rejects at compile time, and so does `reasonix` when the policies load) would
//! overflow the stack. Test policies with `reasonix policy test` (and `opa check` where
//! available) before deploying them.

use regorus::Value;

use super::index::Selection;
use super::{Package, Rego, RegoInput, flatten};
use crate::policy::Decision;

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
    /// Whether the package reads a started process's environment ([`Package::names_env`]).
    pub names_env: bool,
}

impl Rego {
    /// The value of a selection's generated rule on the input: by the VM when it compiled the
    /// votes, else by the interpreter. An error is returned as is; the caller denies. When the
    /// engines are cross-checked ([`Rego::cross_checked`]), the interpreter evaluates too and a
    /// difference is logged; the VM's answer is still the one returned.
    fn evaluate(&self, input: &RegoInput, selection: &Selection) -> Result<regorus::Value, String> {
        let rule = &selection.path;
        let Ok(vm) = &self.vm else {
            return self.interpret(input, rule.clone());
        };
        let by_vm = vm.eval(&input.0, rule);
        if let Some(log) = &self.cross_check {
            let by_interpreter = self.interpret(input, rule.clone());
            if let Some(difference) = differ(&by_vm, &by_interpreter) {
                log.push(format!(
                    "the bytecode VM and the interpreter disagree on {rule}: {difference} \
                     (please report it; REASONIX_REGO_ENGINE=interpreter runs the interpreter alone)"
                ));
            }
        }
        by_vm
    }

    /// The value of `rule` on the input, by the interpreter.
    fn interpret(&self, input: &RegoInput, rule: String) -> Result<regorus::Value, String> {
        let mut engine = self.spare.take(&self.engine);
        engine.set_input(input.0.clone());
        // An engine that failed is dropped, not kept (`spare.rs`).
        let result = engine
            .eval_rule(rule)
            .map_err(|e| flatten(&e.to_string()))?;
        self.spare.keep(engine);
        Ok(result)
    }

    /// The votes on one input document (JSON text). An error is returned as is; the caller
    /// denies.
    pub fn votes(&self, input_json: &str) -> Result<Vec<Vote>, String> {
        self.votes_on(&RegoInput::from_json(input_json)?)
    }

    /// The votes on one input document. An error is returned as is; the caller denies.
    pub fn votes_on(&self, input: &RegoInput) -> Result<Vec<Vote>, String> {
        let tool = match &input.0["tool"] {
            regorus::Value::String(s) => Some(s.as_ref()),
            _ => None,
        };
        self.votes_of(input, self.index.select(tool))
    }

    /// The votes of the packages a selection gathers (the tool index's choice, or all of them).
    pub(super) fn votes_of(
        &self,
        input: &RegoInput,
        selection: &Selection,
    ) -> Result<Vec<Vote>, String> {
        let result = self.evaluate(input, selection)?;
        read_votes(
            &result,
            selection.packages.iter().map(|&i| &self.packages[i]),
        )
    }
}

/// How two engines' answers differ, if they do: different values, or a value from one and an
/// error from the other. Two errors agree (each denies), whatever their words.
fn differ(by_vm: &Result<Value, String>, by_interpreter: &Result<Value, String>) -> Option<String> {
    let show = |r: &Result<Value, String>| match r {
        Ok(v) => serde_json::to_string(v).unwrap_or_else(|e| e.to_string()),
        Err(e) => format!("error: {e}"),
    };
    match (by_vm, by_interpreter) {
        (Ok(a), Ok(b)) if a == b => None,
        (Err(_), Err(_)) => None,
        _ => Some(format!(
            "the VM gives {}, the interpreter {}",
            show(by_vm),
            show(by_interpreter)
        )),
    }
}

/// The votes in an evaluation's result, `{package: {set: items}}`, read from regorus' values as
/// they are (they used to pass through a JSON document first, which cost as much as the
/// reading). Each declared set must be a set or an array (as in JSON, where both are arrays),
/// each item a string or an object with a string `reason` and, optionally, a string `id`;
/// anything else is an error, and the call is denied — as is a result that JSON cannot hold
/// (a number out of its range), which the JSON document refused.
fn read_votes<'a>(
    result: &Value,
    packages: impl Iterator<Item = &'a Package>,
) -> Result<Vec<Vote>, String> {
    fits_json(result)?;
    let mut votes = Vec::new();
    for package in packages {
        let source = package.files.join(", ");
        for decision in &package.sets {
            let set = field(result, &package.name).and_then(|p| field(p, decision.as_str()));
            let items: Box<dyn Iterator<Item = &Value>> = match set {
                Some(Value::Set(s)) => Box::new(s.iter()),
                Some(Value::Array(a)) => Box::new(a.iter()),
                _ => {
                    return Err(format!(
                        "data.{}.{} is not a set",
                        package.name,
                        decision.as_str()
                    ));
                }
            };
            for item in items {
                let (reason, id) = match item {
                    Value::String(s) => (s.to_string(), None),
                    Value::Object(_) => match (field(item, "reason"), field(item, "id")) {
                        (Some(Value::String(r)), None) => (r.to_string(), None),
                        (Some(Value::String(r)), Some(Value::String(i))) => {
                            (r.to_string(), Some(i.to_string()))
                        }
                        _ => return Err(malformed(package, *decision, item)),
                    },
                    _ => return Err(malformed(package, *decision, item)),
                };
                votes.push(Vote {
                    decision: *decision,
                    reason,
                    id: id.unwrap_or_else(|| format!("{}.{}", package.name, decision.as_str())),
                    source: source.clone(),
                    names_env: package.names_env,
                });
            }
        }
    }
    Ok(votes)
}

/// Whether JSON can hold the value: the first number it cannot, in the order serde writes the
/// value, is the error `serde_json::to_value` gives.
fn fits_json(value: &Value) -> Result<(), String> {
    match value {
        Value::Number(_) => serde_json::to_value(value)
            .map(drop)
            .map_err(|e| e.to_string()),
        Value::Array(a) => a.iter().try_for_each(fits_json),
        Value::Set(s) => s.iter().try_for_each(fits_json),
        Value::Object(o) => o.iter_sorted().try_for_each(|(k, v)| {
            fits_json(k)?;
            fits_json(v)
        }),
        Value::Null | Value::Bool(_) | Value::String(_) | Value::Undefined => Ok(()),
    }
}

/// The value under the string key `name` of an object; `None` for a missing key or a value
/// that is not an object.
fn field<'v>(value: &'v Value, name: &str) -> Option<&'v Value> {
    match value {
        Value::Object(o) => o
            .iter()
            .find(|(k, _)| matches!(k, Value::String(s) if s.as_ref() == name))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// The error of a vote that is neither a string nor `{"reason": string, "id": string}`, the
/// vote written as JSON.
fn malformed(package: &Package, decision: Decision, item: &Value) -> String {
    let item = serde_json::to_string(item).unwrap_or_else(|e| e.to_string());
    format!(
        "a vote in data.{}.{} is {item}: votes are strings or {{\"reason\": string, \"id\": string}}",
        package.name,
        decision.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::super::TIME_LIMIT;
    use super::super::load_texts as load;
    use super::*;

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
                source: "a.rego".into(),
                names_env: false,
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

    /// Votes are read from regorus' values as they were from their JSON: a set or an array of
    /// strings and `{"reason", "id"}` objects (other keys ignored); anything else is an error
    /// naming the vote as JSON.
    #[test]
    fn votes_are_read_from_sets_and_arrays_and_a_malformed_one_is_named() {
        let rego = load(&[(
            "v.rego",
            "package reasonix\nimport rego.v1\ndeny contains {\"reason\": \"r\", \"id\": \"i\", \"extra\": 1} if true\nask := [\"a\", {\"reason\": \"b\"}]\n",
        )])
        .unwrap()
        .unwrap();
        let votes = rego.votes("{}").unwrap();
        let got: Vec<(Decision, &str, &str)> = votes
            .iter()
            .map(|v| (v.decision, v.reason.as_str(), v.id.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (Decision::Deny, "r", "i"),
                (Decision::Ask, "a", "reasonix.ask"),
                (Decision::Ask, "b", "reasonix.ask"),
            ]
        );
        for (body, said) in [
            (
                "deny contains {\"reason\": \"r\", \"id\": 5} if true",
                "a vote in data.reasonix.deny is {\"id\":5,\"reason\":\"r\"}",
            ),
            (
                "ask contains [\"x\"] if true",
                "a vote in data.reasonix.ask is [\"x\"]",
            ),
            ("allow := \"x\"", "data.reasonix.allow is not a set"),
            ("deny := {\"a\": 1}", "data.reasonix.deny is not a set"),
            (
                "big := product([x | some _ in numbers.range(1, 21); x := 100000000000000000000])\ndeny contains {\"reason\": \"r\", \"n\": big} if true",
                "could not serialize number",
            ),
        ] {
            let rego = load(&[(
                "m.rego",
                &format!("package reasonix\nimport rego.v1\n{body}\n"),
            )])
            .unwrap()
            .unwrap();
            let err = rego.votes("{}").unwrap_err();
            assert!(err.starts_with(said), "{body}: {err}");
        }
    }

    /// The reasons of the votes, sorted.
    fn reasons(rego: &Rego, input: &str) -> Vec<String> {
        let mut r: Vec<String> = rego
            .votes(input)
            .unwrap()
            .into_iter()
            .map(|v| v.reason)
            .collect();
        r.sort();
        r
    }

    /// A function is looked up in the module of its call site (the interpreter's module
    /// bookkeeping, which an earlier patch to regorus changed and issue 31 dropped), also after a call into another module (and from there within that module) has
    /// returned, and through an import alias, an absolute path and a bracketed path. `f` and `h`
    /// are defined in both packages with different results, so a module path left stale by a
    /// call would pick the other package's function.
    #[test]
    fn functions_resolve_in_their_own_module_around_calls_into_another() {
        let rego = load(&[
            (
                "a.rego",
                "package reasonix.a\nimport rego.v1\nimport data.reasonix.b\n\nf(_) := \"a\"\nh(x) := f(x)\n\ndeny contains concat(\"\", [f(1), b.g(1), f(2), h(3)]) if input.go\ndeny contains concat(\"\", [data.reasonix.b.g(1), h(4)]) if input.go\ndeny contains concat(\"\", [data.reasonix[\"b\"].g(1), f(5), \"!\"]) if input.go\n",
            ),
            (
                "b.rego",
                "package reasonix.b\nimport rego.v1\n\nf(_) := \"B\"\nh(x) := f(x)\ng(x) := concat(\"\", [h(x), f(x)])\n\nask contains concat(\"\", [g(1), f(2)]) if input.go\n",
            ),
        ])
        .unwrap()
        .unwrap();
        for _ in 0..3 {
            assert_eq!(
                reasons(&rego, r#"{"go": true}"#),
                ["BBB", "BBa", "BBa!", "aBBaa"]
            );
            assert!(reasons(&rego, r#"{"go": false}"#).is_empty());
        }
    }

    /// vendor/regorus/PATCHES.md #3: a compiled regex is shared by every use of its pattern,
    /// across packages and evaluations, and gives each its own matches; an invalid pattern is
    /// still an error (the call is denied), in the first evaluation and in later ones.
    #[test]
    fn a_shared_regex_matches_per_use_and_a_bad_pattern_still_fails_closed() {
        let rego = load(&[
            (
                "r.rego",
                "package reasonix.r\nimport rego.v1\n\nhost(w) := m[1] if {\n  some m in regex.find_all_string_submatch_n(`^https://([^/]+)`, w, 1)\n}\n\ndeny contains host(w) if { some w in input.words; host(w) != \"ok.example\" }\n",
            ),
            (
                "s.rego",
                "package reasonix.s\nimport rego.v1\n\nask contains w if { some w in input.words; regex.match(`^https://([^/]+)`, w) }\n",
            ),
            (
                "p.rego",
                "package reasonix.p\nimport rego.v1\n\nallow contains \"p\" if regex.match(input.pattern, \"x\")\n",
            ),
        ])
        .unwrap()
        .unwrap();
        for _ in 0..3 {
            let input = r#"{"words": ["https://ok.example/a", "https://evil.example/b", "plain"], "pattern": "x"}"#;
            assert_eq!(
                reasons(&rego, input),
                [
                    "evil.example",
                    "https://evil.example/b",
                    "https://ok.example/a",
                    "p"
                ]
            );
            let err = rego.votes(r#"{"words": [], "pattern": "("}"#).unwrap_err();
            assert!(err.contains("p.rego"), "{err}");
        }
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

    /// Cross-checked engines: where they agree nothing is logged; where they differ (made
    /// here by giving the interpreter another policy's engine, since the real engines are held
    /// to the same answers) the difference is logged once per evaluation, with both answers,
    /// and the VM's answer is the one that votes.
    #[test]
    fn cross_checked_engines_log_a_difference_and_the_vm_still_answers() {
        let deny =
            "package reasonix\nimport rego.v1\ndeny contains \"rm\" if input.cmd == \"rm\"\n";
        let allow =
            "package reasonix\nimport rego.v1\ndeny contains \"rm\" if input.cmd == \"ls\"\n";
        let rego = load(&[("p.rego", deny)]).unwrap().unwrap();
        assert!(rego.with_interpreter().cross_checked().is_none());
        let (both, log) = rego.cross_checked().unwrap();
        assert_eq!(both.votes(r#"{"cmd": "rm"}"#).unwrap().len(), 1);
        assert_eq!(both.votes(r#"{"cmd": "ls"}"#).unwrap().len(), 0);
        assert!(log.take().is_empty());

        let mut skewed = rego.clone();
        skewed.engine = load(&[("p.rego", allow)]).unwrap().unwrap().engine;
        let (both, log) = skewed.cross_checked().unwrap();
        let votes = both.votes(r#"{"cmd": "rm"}"#).unwrap();
        assert_eq!(votes.len(), 1, "the VM's answer votes: {votes:?}");
        let differences = log.take();
        assert_eq!(differences.len(), 1, "{differences:?}");
        assert!(
            differences[0].contains("the bytecode VM and the interpreter disagree")
                && differences[0].contains("REASONIX_REGO_ENGINE=interpreter"),
            "{differences:?}"
        );
        assert!(log.take().is_empty(), "taken once");
        // An error on one side and a value on the other differ; two errors agree.
        let value = Ok(Value::from(1));
        let error: Result<Value, String> = Err("x".into());
        assert!(differ(&value, &error).is_some() && differ(&error, &value).is_some());
        assert!(differ(&error, &Err("y".into())).is_none() && differ(&value, &value).is_none());
    }
}
