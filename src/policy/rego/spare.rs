//! Engines and VMs kept for the next evaluation, so a call does not clone the prepared engine
//! (or build a VM) and drop it afterwards (about 5 % of an evaluation's instructions).
//!
//! regorus documents an engine as reusable for many evaluations with different inputs
//! (`Engine::eval_query`'s example): `eval_rule` resets the evaluation state (data document,
//! rule values, scopes, contexts, builtin cache, time limit) before it starts, and
//! `set_input` replaces the input in both places it is kept. Only an engine whose evaluation
//! succeeded is kept, its gathered `print` output taken first: an error may leave a `with`
//! modifier or a loop variable in place, so an engine that failed is dropped and the next call
//! starts from a clone of the prepared one. `a_reused_engine_votes_as_a_fresh_one` holds a
//! reused engine to fresh ones over calls that differ, errors between them included. A VM
//! resets its registers, rule cache and stacks at the start of each execution; it too is kept
//! only after a success (`vm.rs`; `a_reused_vm_votes_as_a_fresh_one` in `engines.rs`).

use std::sync::Mutex;

use regorus::Engine;

/// At most this many wait: one per thread judging calls at once is enough.
const KEPT: usize = 8;

/// Engines (or VMs) that evaluated without error, ready for another input. A clone of the set
/// starts empty (what it keeps belongs to one [`Rego`](super::Rego)).
pub(super) struct Spare<T>(Mutex<Vec<T>>);

impl<T> Default for Spare<T> {
    fn default() -> Self {
        Spare(Mutex::new(Vec::new()))
    }
}

impl<T> Spare<T> {
    /// A kept one, if one waits.
    pub(super) fn pop(&self) -> Option<T> {
        self.0.lock().ok().and_then(|mut v| v.pop())
    }

    /// Keeps one whose evaluation succeeded, unless enough wait.
    pub(super) fn put(&self, value: T) {
        if let Ok(mut v) = self.0.lock()
            && v.len() < KEPT
        {
            v.push(value);
        }
    }
}

impl Spare<Engine> {
    /// A kept engine, or a clone of `prepared` when none waits.
    pub(super) fn take(&self, prepared: &Engine) -> Engine {
        self.pop().unwrap_or_else(|| prepared.clone())
    }

    /// Keeps an engine whose evaluation succeeded (its prints dropped), unless enough wait.
    pub(super) fn keep(&self, mut engine: Engine) {
        let _ = engine.take_prints();
        self.put(engine);
    }
}

#[cfg(test)]
impl<T> Spare<T> {
    /// How many wait.
    pub(super) fn len(&self) -> usize {
        self.0.lock().map(|v| v.len()).unwrap_or(0)
    }
}

impl<T> Clone for Spare<T> {
    fn clone(&self) -> Self {
        Spare::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::load_texts as load;

    /// Loops, a comprehension, a function in another package, a `with` modifier, `print`, a
    /// builtin error and conflicting values: what a reused engine could carry from one call to
    /// the next.
    const POLICY: &[(&str, &str)] = &[
        (
            "r.rego",
            "package reasonix\nimport rego.v1\nimport data.helpers\n\
             deny contains sprintf(\"bad %s\", [w]) if { some w in input.words; helpers.bad(w) }\n\
             ask contains \"many\" if count([w | some w in input.words; startswith(w, \"a\")]) > 1\n\
             allow contains \"ok\" if { every w in input.words { not helpers.bad(w) }; print(\"ok\", input.words) }\n\
             deny contains \"with\" if helpers.bad(\"x\") with input.strict as true\n\
             deny contains \"number\" if to_number(input.n) > 1\n\
             v := 1 if input.conflict\nv := 2 if input.conflict\n\
             deny contains \"conflict\" if v == 1\n",
        ),
        (
            "h.rego",
            "package helpers\nimport rego.v1\nbad(w) if w == \"rm\"\nbad(w) if { w == \"x\"; input.strict }\n",
        ),
    ];

    /// A reused engine answers each call as a fresh clone of the prepared engine does, over
    /// calls that differ in what they bind, loop over and print, with failing calls between
    /// them; a failed engine is not kept.
    #[test]
    fn a_reused_engine_votes_as_a_fresh_one() {
        let rego = load(POLICY).unwrap().unwrap();
        let calls = [
            r#"{"words": ["ls", "rm", "ab", "ac"], "n": "0"}"#,
            r#"{"words": ["ls"], "n": "1"}"#,
            r#"{"words": [], "n": "abc"}"#,
            r#"{"words": ["ax", "rm"], "n": "0", "strict": true}"#,
            r#"{"words": ["a"], "n": "0", "conflict": true}"#,
            r#"{"words": ["ls"], "n": "1"}"#,
            r#"{"words": ["ab", "ac"], "n": "5"}"#,
            r#"{"n": "0"}"#,
        ];
        let mut failed = 0;
        for round in 0..2 {
            for input in calls {
                let kept_before = rego.spare.len();
                let reused = rego.votes(input);
                let fresh = rego.clone().votes(input);
                assert_eq!(reused, fresh, "round {round}, {input}");
                match reused {
                    Ok(_) => assert_eq!(rego.spare.len(), 1, "{input}"),
                    Err(_) => {
                        failed += 1;
                        assert_eq!(rego.spare.len(), kept_before.saturating_sub(1), "{input}");
                    }
                }
            }
        }
        assert_eq!(
            failed, 4,
            "the calls with n = abc and with conflicting values fail, twice"
        );
        let votes = rego.votes(calls[0]).unwrap();
        let reasons: Vec<&str> = votes.iter().map(|v| v.reason.as_str()).collect();
        assert!(
            reasons.contains(&"bad rm") && reasons.contains(&"many"),
            "{reasons:?}"
        );
        assert!(
            reasons.contains(&"with") && !reasons.contains(&"ok"),
            "{reasons:?}"
        );
        let votes = rego.votes(calls[1]).unwrap();
        let reasons: Vec<&str> = votes.iter().map(|v| v.reason.as_str()).collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons.contains(&"ok") && reasons.contains(&"with"),
            "{reasons:?}"
        );
    }
}
