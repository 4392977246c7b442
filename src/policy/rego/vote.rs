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
//! (`tests/policy_rego.rs`) to the same votes over every policy and case in the repository. Policies the VM cannot compile are evaluated by the
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

use serde_json::Value as Json;

use super::index::Selection;
use super::{AGGREGATE, Rego, RegoInput, flatten};
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
}

impl Rego {
    /// The value of a selection's generated rule on the input: by the VM when it compiled the
    /// votes, else by the interpreter. An error is returned as is; the caller denies.
    fn evaluate(&self, input: &RegoInput, selection: &Selection) -> Result<regorus::Value, String> {
        let rule = format!("data.{AGGREGATE}.{}", selection.rule);
        if let Ok(vm) = &self.vm {
            return vm.eval(&input.0, &rule);
        }
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
        let json = serde_json::to_value(&result).map_err(|e| e.to_string())?;
        let mut votes = Vec::new();
        for package in selection.packages.iter().map(|&i| &self.packages[i]) {
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

    /// vendor/regorus/PATCHES.md #1, #2, #4: a function is looked up in the module of its call
    /// site, also after a call into another module (and from there within that module) has
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
}
