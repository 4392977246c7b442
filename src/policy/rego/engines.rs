//! The bytecode VM held to the interpreter (tests only): the same votes, or a failure from
//! both, on a table of error kinds; `tests/it/policy_rego.rs`
//! (`both_engines_vote_alike_on_every_policy_and_case`) does the same on every policy and case
//! in the repository, through the gate.

use super::load_texts as load;
use super::{Rego, RegoEngine, TIME_LIMIT};

/// The same policies, evaluated by the interpreter only.
fn interpreter(rego: &Rego) -> Rego {
    let only = rego.with_interpreter();
    assert_eq!(only.engine(), RegoEngine::Interpreter);
    only
}

/// The reasons and ids of the votes, sorted, or the error.
fn votes(rego: &Rego, input: &str) -> Result<Vec<(String, String)>, String> {
    let mut v: Vec<(String, String)> = rego
        .votes(input)?
        .into_iter()
        .map(|v| (format!("{} {}", v.decision.as_str(), v.reason), v.id))
        .collect();
    v.sort();
    Ok(v)
}

/// Why this module exists: the published VM answered this policy and input with an empty
/// `deny` set, where the interpreter reports the builtin error. Through Reasonix's path the VM
/// now runs it, and the call fails (the gate denies it); the number it can read still votes.
#[test]
fn the_vm_fails_closed_where_the_published_vm_failed_open() {
    let text = "package reasonix\nimport rego.v1\ndeny contains \"x\" if to_number(input.n) > 1\n";
    let rego = load(&[("e.rego", text)]).unwrap().unwrap();
    assert_eq!(rego.engine(), RegoEngine::Vm, "{:?}", rego.vm_refused());
    let err = rego.votes(r#"{"n": "abc"}"#).unwrap_err();
    assert!(err.contains("e.rego:3:"), "{err}");
    assert!(err.contains("could not parse string as number"), "{err}");
    assert_eq!(votes(&rego, r#"{"n": "5"}"#).unwrap().len(), 1);
    assert!(votes(&rego, r#"{"n": "0"}"#).unwrap().is_empty());

    // The VM itself: with strict builtin errors it fails; without them it keeps the published
    // behaviour (no vote), which Reasonix never uses.
    use regorus::languages::rego::compiler::Compiler;
    use regorus::rvm::RegoVM;
    let mut engine = regorus::Engine::new();
    engine.add_policy("e.rego".into(), text.into()).unwrap();
    let compiled = engine
        .compile_with_entrypoint(&"data.reasonix.deny".into())
        .unwrap();
    let program = Compiler::compile_from_policy(&compiled, &["data.reasonix.deny"]).unwrap();
    for strict in [true, false] {
        let mut vm = RegoVM::new();
        vm.load_program(program.clone());
        vm.set_strict_builtin_errors(strict);
        vm.set_input(regorus::Value::from_json_str(r#"{"n": "abc"}"#).unwrap());
        let deny = vm.execute_entry_point_by_index(0);
        if strict {
            assert!(deny.is_err(), "{deny:?}");
        } else {
            assert_eq!(
                serde_json::to_value(deny.unwrap()).unwrap(),
                serde_json::json!([])
            );
        }
    }
}

/// One kind of error: a policy (package `reasonix`, with `import rego.v1`), an input on which
/// the interpreter fails, and one on which it votes (the legitimate use that must still pass).
struct ErrorKind {
    what: &'static str,
    rules: &'static str,
    fails: &'static str,
    votes: &'static str,
}

/// Each kind of error the interpreter reports under strict builtin errors, where the published
/// VM answered "no vote" (or another value) for most of them.
const ERROR_KINDS: &[ErrorKind] = &[
    ErrorKind {
        what: "a bad builtin argument",
        rules: "deny contains \"d\" if to_number(input.n) > 1",
        fails: r#"{"n": "abc"}"#,
        votes: r#"{"n": "5"}"#,
    },
    ErrorKind {
        what: "a type error in arithmetic",
        rules: "deny contains \"d\" if input.n + 1 > 2",
        fails: r#"{"n": "a"}"#,
        votes: r#"{"n": 5}"#,
    },
    ErrorKind {
        what: "division by zero",
        rules: "deny contains \"d\" if 10 / input.n > 1",
        fails: r#"{"n": 0}"#,
        votes: r#"{"n": 2}"#,
    },
    ErrorKind {
        what: "modulo by zero",
        rules: "deny contains \"d\" if input.n % input.m == 0",
        fails: r#"{"n": 4, "m": 0}"#,
        votes: r#"{"n": 4, "m": 2}"#,
    },
    ErrorKind {
        what: "conflicting values of a complete rule",
        rules: "x := 1 if input.a\nx := 2 if input.b\ndeny contains \"d\" if x == 1",
        fails: r#"{"a": true, "b": true}"#,
        votes: r#"{"a": true}"#,
    },
    ErrorKind {
        what: "an error in a later definition of a complete rule whose definitions agree",
        rules: "flag := true if input.a\nflag := true if to_number(input.n) > 1\ndeny contains \"d\" if flag",
        fails: r#"{"a": true, "n": "abc"}"#,
        votes: r#"{"a": true, "n": "0"}"#,
    },
    ErrorKind {
        what: "conflicting values of a function",
        rules: "f(x) := 1 if x > 0\nf(x) := 2 if x > 1\ndeny contains \"d\" if f(input.n) == 1",
        fails: r#"{"n": 5}"#,
        votes: r#"{"n": 1}"#,
    },
    ErrorKind {
        what: "a key given two values in an object comprehension",
        rules: "deny contains \"d\" if count({k: v | some v in input.vs; k := \"key\"}) > 0",
        fails: r#"{"vs": [1, 2]}"#,
        votes: r#"{"vs": [1]}"#,
    },
    ErrorKind {
        what: "a key given two values by a partial object rule",
        rules: "o[k] := v if { some v in input.vs; k := \"key\" }\ndeny contains \"d\" if o.key",
        fails: r#"{"vs": [1, 2]}"#,
        votes: r#"{"vs": [1]}"#,
    },
    ErrorKind {
        what: "an error inside `not`",
        rules: "deny contains \"d\" if not to_number(input.n) > 1",
        fails: r#"{"n": "abc"}"#,
        votes: r#"{"n": "0"}"#,
    },
    ErrorKind {
        what: "an error inside `every`",
        rules: "deny contains \"d\" if every x in input.xs { to_number(x) > 0 }",
        fails: r#"{"xs": ["1", "a"]}"#,
        votes: r#"{"xs": ["1", "2"]}"#,
    },
    ErrorKind {
        what: "an error inside a comprehension",
        rules: "deny contains \"d\" if count([y | some x in input.xs; y := to_number(x)]) > 1",
        fails: r#"{"xs": ["1", "a"]}"#,
        votes: r#"{"xs": ["1", "2"]}"#,
    },
    ErrorKind {
        what: "an error inside a function called from a rule",
        rules: "f(x) := to_number(x)\ndeny contains \"d\" if f(input.n) > 1",
        fails: r#"{"n": "abc"}"#,
        votes: r#"{"n": "5"}"#,
    },
    ErrorKind {
        what: "an error in a function's second definition after its first has matched",
        rules: "f(x) := 1 if x == \"a\"\nf(x) := 1 if to_number(x) > 0\ndeny contains \"d\" if f(input.n) == 1",
        fails: r#"{"n": "a"}"#,
        votes: r#"{"n": "5"}"#,
    },
    ErrorKind {
        what: "an error inside an `else`",
        rules: "v := 1 if input.first else := to_number(input.n)\ndeny contains \"d\" if v > 1",
        fails: r#"{"first": false, "n": "abc"}"#,
        votes: r#"{"first": false, "n": "5"}"#,
    },
    ErrorKind {
        what: "an error in the body an `else` follows",
        rules: "v := 1 if to_number(input.n) > 100 else := 2\ndeny contains \"d\" if v == 2",
        fails: r#"{"n": "abc"}"#,
        votes: r#"{"n": "5"}"#,
    },
    ErrorKind {
        what: "an error in one iteration of a set rule",
        rules: "deny contains w if { some w in input.ws; to_number(w) > 1 }",
        fails: r#"{"ws": ["5", "x"]}"#,
        votes: r#"{"ws": ["5", "0"]}"#,
    },
    ErrorKind {
        what: "`some .. in` over a string",
        rules: "deny contains \"d\" if { some c in input.cmd; c == \"rm\" }",
        fails: r#"{"cmd": "rm -rf /"}"#,
        votes: r#"{"cmd": ["rm", "-rf", "/"]}"#,
    },
    ErrorKind {
        what: "`some k, v in` over a number",
        rules: "deny contains k if { some k, v in input.env; v == \"1\" }",
        fails: r#"{"env": 7}"#,
        votes: r#"{"env": {"DEBUG": "1"}}"#,
    },
    ErrorKind {
        what: "a reference loop in a rule head over a string",
        rules: "deny contains input.words[_] if input.go",
        fails: r#"{"go": true, "words": "abc"}"#,
        votes: r#"{"go": true, "words": ["abc"]}"#,
    },
    ErrorKind {
        what: "a reference loop in a rule head over nothing",
        rules: "deny contains input.words[_] if input.go",
        fails: r#"{"go": true}"#,
        votes: r#"{"go": true, "words": {"k": "v"}}"#,
    },
    ErrorKind {
        what: "a reference loop in a comprehension's term over a number",
        rules: "deny contains \"d\" if count([input.xs[_] | input.go]) > 0",
        fails: r#"{"go": true, "xs": 5}"#,
        votes: r#"{"go": true, "xs": [5]}"#,
    },
    ErrorKind {
        what: "an error in a rule of another package the vote reads",
        rules: "import data.lib\ndeny contains \"d\" if lib.bad",
        fails: r#"{"n": "abc"}"#,
        votes: r#"{"n": "5"}"#,
    },
    ErrorKind {
        what: "a regex that does not compile",
        rules: "deny contains \"d\" if regex.match(input.p, \"x\")",
        fails: r#"{"p": "("}"#,
        votes: r#"{"p": "x"}"#,
    },
    ErrorKind {
        what: "a vote of the wrong shape",
        rules: "deny contains input.v if true",
        fails: r#"{"v": 5}"#,
        votes: r#"{"v": "five"}"#,
    },
];

/// The helper package `lib` (for the row that reads another package).
const LIB: &str = "package lib\nimport rego.v1\nbad if to_number(input.n) > 1\n";

/// Every kind of error fails the evaluation in both engines (the gate denies), and the
/// legitimate input of each gets the same votes from both.
#[test]
fn both_engines_fail_on_every_kind_of_error() {
    for kind in ERROR_KINDS {
        let text = format!("package reasonix\nimport rego.v1\n{}\n", kind.rules);
        let rego = load(&[("k.rego", text.as_str()), ("lib.rego", LIB)])
            .unwrap_or_else(|e| panic!("{}: {e:?}", kind.what))
            .unwrap();
        assert_eq!(
            rego.engine(),
            RegoEngine::Vm,
            "{}: {:?}",
            kind.what,
            rego.vm_refused()
        );
        let only = interpreter(&rego);
        for round in 0..2 {
            let vm = votes(&rego, kind.fails);
            let int = votes(&only, kind.fails);
            assert!(
                vm.is_err() && int.is_err(),
                "{} (round {round}): the VM gave {vm:?}, the interpreter {int:?}",
                kind.what
            );
            let vm = votes(&rego, kind.votes);
            let int = votes(&only, kind.votes);
            assert!(
                vm.as_ref().is_ok_and(|v| !v.is_empty()),
                "{}: the legitimate input: {vm:?}",
                kind.what
            );
            assert_eq!(vm, int, "{}: the legitimate input", kind.what);
        }
    }
}

/// What neither engine reports as an error, both answer alike: values of different types
/// compare by type (OPA's order), a reference loop over a string iterates nothing, `every`
/// over nothing holds, a builtin or a function given an undefined argument is undefined (the
/// function's bodies do not run), an undefined term or value adds nothing to a comprehension
/// or a partial object rule.
#[test]
fn both_engines_agree_where_neither_fails() {
    let rules = "deny contains \"greater\" if input.n > 1\n\
                 deny contains \"indexed\" if input.s[_] == \"x\"\n\
                 deny contains \"every\" if every x in input.xs { x > 0 }\n\
                 deny contains \"undefined\" if not to_number(input.missing)\n\
                 deny contains \"member\" if \"r\" in input.s\n\
                 deny contains \"function\" if f(input.missing)\n\
                 deny contains \"array\" if count([input.missing | some i in [1, 2]]) == 0\n\
                 deny contains \"object\" if count({i: input.missing | some i in [1, 2]}) == 0\n\
                 o[k] := input.missing if { some k in [\"a\"] }\n\
                 deny contains \"partial object\" if count(o) == 0\n\
                 f(x) if not g(x)\n\
                 g(x) if x == \"rm\"\n";
    let text = format!("package reasonix\nimport rego.v1\n{rules}");
    let rego = load(&[("a.rego", text.as_str())]).unwrap().unwrap();
    assert_eq!(rego.engine(), RegoEngine::Vm, "{:?}", rego.vm_refused());
    let only = interpreter(&rego);
    for input in [
        r#"{"n": "a", "s": "xr", "xs": []}"#,
        r#"{"n": 0, "s": ["x"], "xs": [1, 2]}"#,
        r#"{"n": null, "s": {"k": "x"}, "xs": [0]}"#,
        r#"{"n": [1], "s": 5, "xs": "abc"}"#,
        r#"{}"#,
    ] {
        let vm = votes(&rego, input);
        assert!(vm.is_ok(), "{input}: {vm:?}");
        assert_eq!(vm, votes(&only, input), "{input}");
    }
    let reasons: Vec<String> = votes(&rego, "{}")
        .unwrap()
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    assert_eq!(
        reasons,
        [
            "deny array",
            "deny object",
            "deny partial object",
            "deny undefined"
        ],
    );
}

/// A VM kept after a call answers the next as a fresh one does, over calls that differ, with
/// failing calls between them; a VM that failed is not kept.
#[test]
fn a_reused_vm_votes_as_a_fresh_one() {
    let rego = load(&[
        (
            "r.rego",
            "package reasonix\nimport rego.v1\nimport data.helpers\n\
             deny contains sprintf(\"bad %s\", [w]) if { some w in input.words; helpers.bad(w) }\n\
             ask contains \"many\" if count([w | some w in input.words; startswith(w, \"a\")]) > 1\n\
             allow contains \"ok\" if { every w in input.words { not helpers.bad(w) } }\n\
             deny contains \"number\" if to_number(input.n) > 1\n\
             v := 1 if input.conflict\nv := 2 if input.conflict\n\
             deny contains \"conflict\" if v == 1\n",
        ),
        (
            "h.rego",
            "package helpers\nimport rego.v1\nbad(w) if w == \"rm\"\n",
        ),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(rego.engine(), RegoEngine::Vm, "{:?}", rego.vm_refused());
    let Ok(vm) = &rego.vm else { unreachable!() };
    let calls = [
        r#"{"words": ["ls", "rm", "ab", "ac"], "n": "0"}"#,
        r#"{"words": ["ls"], "n": "1"}"#,
        r#"{"words": [], "n": "abc"}"#,
        r#"{"words": ["a"], "n": "0", "conflict": true}"#,
        r#"{"words": ["ab", "ac"], "n": "5"}"#,
        r#"{"n": "0"}"#,
    ];
    let mut failed = 0;
    for round in 0..2 {
        for input in calls {
            let kept_before = vm.spare_len();
            let reused = votes(&rego, input);
            let fresh = votes(&rego.clone(), input);
            assert_eq!(reused, fresh, "round {round}, {input}");
            let int = votes(&interpreter(&rego), input);
            assert_eq!(reused.is_ok(), int.is_ok(), "{input}: {int:?}");
            if reused.is_ok() {
                assert_eq!(reused, int, "{input}");
            }
            match reused {
                Ok(_) => assert_eq!(vm.spare_len(), kept_before.max(1), "{input}"),
                Err(_) => {
                    failed += 1;
                    assert_eq!(vm.spare_len(), kept_before.saturating_sub(1), "{input}");
                }
            }
        }
    }
    assert_eq!(failed, 4, "n = abc and the conflict fail, twice");
}

/// The time limit stops an endless evaluation in the VM as in the interpreter.
#[test]
fn the_time_limit_stops_the_vm() {
    let rego = load(&[(
        "slow.rego",
        "package reasonix\nimport rego.v1\ndeny contains \"slow\" if {\n  some i in numbers.range(1, 2000)\n  some j in numbers.range(1, 2000)\n  some k in numbers.range(1, 2000)\n  i + j + k < 0\n}\n",
    )])
    .unwrap()
    .unwrap();
    assert_eq!(rego.engine(), RegoEngine::Vm, "{:?}", rego.vm_refused());
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let err = rego.votes("{}").unwrap_err();
        assert!(err.contains("time limit"), "{err}");
        assert!(err.contains("slow.rego"), "{err}");
        let took = started.elapsed();
        assert!(took >= TIME_LIMIT && took < TIME_LIMIT * 4, "{took:?}");
    }
}

/// What the VM cannot compile runs on the interpreter, which says why.
#[test]
fn what_the_vm_cannot_compile_runs_on_the_interpreter() {
    let rego = load(&[(
        "w.rego",
        "package reasonix\nimport rego.v1\nstrict if input.strict\n\
         deny contains \"with\" if strict with input.strict as true\n",
    )])
    .unwrap()
    .unwrap();
    assert_eq!(rego.engine(), RegoEngine::Interpreter);
    assert!(
        rego.vm_refused().is_some_and(|r| r.contains("with")),
        "{:?}",
        rego.vm_refused()
    );
    assert_eq!(votes(&rego, "{}").unwrap().len(), 1);
}
