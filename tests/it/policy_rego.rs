//! Rego policies beside YAML: voting together in every precedence combination, failing closed
//! on errors, naming the module and id of each vote, and the `policy` commands.

use crate::common;

use std::path::{Path, PathBuf};

use common::{World, reasons};
use reasonix::policy::rego::RegoEngine;
use reasonix::{PolicySet, Posture};
use serde_json::{Value, json};

const YAML_NONE: &str = "version: 1\ndefaults:\n  writer: allow\n";

fn yaml(decision: &str) -> String {
    if decision == "none" {
        YAML_NONE.to_owned()
    } else {
        format!(
            "version: 1\ndefaults:\n  writer: allow\nrules:\n  - id: y-{decision}\n    decision: {decision}\n    tools: [write_file]\n"
        )
    }
}

fn rego(decision: &str) -> String {
    if decision == "none" {
        "package reasonix\n".to_owned()
    } else {
        format!(
            "package reasonix.votes\n{decision} contains {{\"id\": \"r-{decision}\", \"reason\": \"rego says {decision}\"}} if input.tool == \"write_file\"\n"
        )
    }
}

fn admit(w: &World, yaml_text: &str, rego_text: &str, call: Value) -> reasonix::Admission {
    let set = PolicySet::from_texts(&[("p.yaml", yaml_text)], &[("p.rego", rego_text)], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let gate = w.gate(&set, Posture::Interactive);
    gate.admit_text(&call.to_string()).into_admission()
}

fn write() -> Value {
    json!({"name": "write_file", "arguments": {"path": "a.txt", "content": ""}})
}

#[test]
fn yaml_and_rego_vote_under_one_precedence_in_every_combination() {
    let w = World::new();
    let rank = |d: &str| {
        ["none", "allow", "ask", "deny"]
            .iter()
            .position(|x| *x == d)
            .unwrap()
    };
    for y in ["none", "allow", "ask", "deny"] {
        for r in ["none", "allow", "ask", "deny"] {
            let a = admit(&w, &yaml(y), &rego(r), write());
            let strongest = if rank(y) >= rank(r) { y } else { r };
            let want = if strongest == "none" {
                "allow"
            } else {
                strongest
            };
            assert_eq!(
                a.verdict.as_str(),
                want,
                "yaml {y}, rego {r}: {:?}",
                a.reasons
            );
            let mut decisive: Vec<&str> = a
                .rules
                .iter()
                .filter(|h| h.decisive)
                .map(|h| h.id.as_str())
                .collect();
            decisive.sort();
            let mut expected = Vec::new();
            if y == strongest && y != "none" {
                expected.push(format!("y-{y}"));
            }
            if r == strongest && r != "none" {
                expected.push(format!("r-{r}"));
            }
            expected.sort();
            assert_eq!(decisive, expected, "yaml {y}, rego {r}");
        }
    }
}

#[test]
fn a_vote_names_its_module_and_id() {
    let w = World::new();
    let a = admit(&w, YAML_NONE, &rego("deny"), write());
    assert_eq!(a.rules[0].id, "r-deny");
    assert_eq!(a.rules[0].source, "p.rego");
    assert_eq!(a.reasons[0], "r-deny: rego says deny");
    // A vote without an id is named by its package and set.
    let a = admit(
        &w,
        YAML_NONE,
        "package reasonix.x\nask contains \"why\" if true\n",
        write(),
    );
    assert_eq!(a.rules[0].id, "reasonix.x.ask");
}

#[test]
fn a_rego_runtime_error_denies() {
    let w = World::new();
    for body in [
        "deny contains \"x\" if to_number(input.arguments.content) > 1",
        "x := 1 if input.tool\nx := 2 if input.tool\nallow contains \"y\" if x",
        "allow contains 42 if true",
    ] {
        let text = format!("package reasonix\n{body}\n");
        let a = admit(
            &w,
            YAML_NONE,
            &text,
            json!({"name":"write_file","arguments":{"path":"a","content":"abc"}}),
        );
        assert_eq!(a.verdict.as_str(), "deny", "{body}: {:?}", a.reasons);
        assert_eq!(a.rules[0].id, "rego-error");
        assert!(
            reasons(&serde_json::to_value(&a).unwrap()).contains("the Rego policy failed"),
            "{:?}",
            a.reasons
        );
    }
}

#[test]
fn rego_may_allow_a_hazard_but_never_what_was_not_understood() {
    let w = World::new();
    let allow_all = "package reasonix\nallow contains \"all\" if true\n";
    let strict = "version: 1\ndefaults:\n  read_only: deny\n  writer: deny\n";
    let a = admit(
        &w,
        strict,
        allow_all,
        json!({"name":"bash","arguments":{"command":"python3 -c 'print(1)'"}}),
    );
    assert_eq!(a.verdict.as_str(), "allow", "{:?}", a.reasons);
    let a = admit(
        &w,
        strict,
        allow_all,
        json!({"name":"bash","arguments":{"command":"$CMD x"}}),
    );
    assert_eq!(a.verdict.as_str(), "ask", "{:?}", a.reasons);
}

#[test]
fn rego_sees_the_documented_input() {
    let w = World::new();
    w.file("big.log", &"x".repeat(2_000_000));
    w.file("small.log", "x");
    let policy =
        std::fs::read_to_string("policies/examples/read-size-limit/read_size.rego").unwrap();
    let set = PolicySet::from_texts(
        &[("y.yaml", YAML_NONE)],
        &[("read_size.rego", &policy)],
        &[],
    )
    .unwrap();
    let gate = w.gate(&set, Posture::Interactive);
    let verdict = |call: Value| gate.admit_text(&call.to_string()).into_admission();
    let big = verdict(json!({"name":"read_file","arguments":{"path":"big.log"}}));
    assert_eq!(big.verdict.as_str(), "deny");
    assert!(
        big.reasons[0].contains("2000000 bytes"),
        "{:?}",
        big.reasons
    );
    assert_eq!(
        verdict(json!({"name":"read_file","arguments":{"path":"big.log","limit":10}}))
            .verdict
            .as_str(),
        "allow"
    );
    assert_eq!(
        verdict(json!({"name":"read_file","arguments":{"path":"small.log"}}))
            .verdict
            .as_str(),
        "allow"
    );
}

#[test]
fn check_loads_rego_files_folders_and_data() {
    let w = World::new();
    let dir = w.root.join("pol");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("base.yaml"), YAML_NONE).unwrap();
    std::fs::write(
        dir.join("tools.rego"),
        "package reasonix.tools\nimport rego.v1\ndeny contains {\"id\": \"banned\", \"reason\": \"banned tool\"} if input.tool in data.banned.tools\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tools_test.rego"),
        "package reasonix.tools\ntest_never_loaded_into_the_gate if false\n",
    )
    .unwrap();
    let data = w.policy("banned.yaml", "banned:\n  tools: [delete_file]\n");
    let dir_s = dir.to_str().unwrap();
    let (code, v) = w.check(
        &json!({"name":"delete_file","arguments":{"path":"a"}}),
        &["--policy", dir_s, "--data", &data],
    );
    assert_eq!(code, 20, "{v}");
    assert_eq!(v["rules"][0]["id"], "banned");
    let (code, _) = w.check(
        &json!({"name":"read_file","arguments":{"path":"a"}}),
        &["--policy", dir_s, "--data", &data],
    );
    assert_eq!(code, 0);
    // Without the data the rule reads an undefined document: no vote, no error.
    let (code, _) = w.check(
        &json!({"name":"delete_file","arguments":{"path":"a"}}),
        &["--policy", dir_s],
    );
    assert_eq!(code, 0);
}

#[test]
fn a_bad_rego_module_is_a_configuration_error_with_file_and_line() {
    let w = World::new();
    let p = w.policy(
        "bad.rego",
        "package reasonix\n\ndeny contains x if {\n  x := \n}\n",
    );
    let (code, stdout, stderr) = w.run(
        &[
            "check",
            "--policy",
            &p,
            r#"{"name":"read_file","arguments":{"path":"a"}}"#,
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(stderr.contains(&format!("{p}:")), "{stderr}");
    let (code, _, stderr) = w.run(&["policy", "check", &p], "");
    assert_eq!(code, 2);
    assert!(stderr.contains("bad.rego:"), "{stderr}");
}

#[test]
fn policy_check_lists_rules_and_packages() {
    let w = World::new();
    let y = w.policy(
        "a.yaml",
        "version: 1\nrules:\n  - id: no-env\n    decision: deny\n    paths: [.env]\n",
    );
    let r = w.policy(
        "b.rego",
        "package reasonix.net\nask contains \"x\" if false\n",
    );
    let (code, stdout, _) = w.run(&["policy", "check", &y, &r], "");
    assert_eq!(code, 0);
    assert!(stdout.contains("deny  no-env"), "{stdout}");
    assert!(stdout.contains("data.reasonix.net  votes: ask"), "{stdout}");
}

#[test]
fn policy_check_says_which_engine_runs_the_votes() {
    let w = World::new();
    let vm = w.policy(
        "vm.rego",
        "package reasonix.vm\nimport rego.v1\ndeny contains \"x\" if to_number(input.n) > 1\n",
    );
    let (code, stdout, _) = w.run(&["policy", "check", &vm], "");
    assert_eq!(code, 0);
    assert!(
        stdout.contains("the votes run on the bytecode VM"),
        "{stdout}"
    );
    let with = w.policy(
        "with.rego",
        "package reasonix.with\nimport rego.v1\nstrict if input.strict\ndeny contains \"x\" if strict with input.strict as true\n",
    );
    let (code, stdout, _) = w.run(&["policy", "check", &vm, &with], "");
    assert_eq!(code, 0);
    assert!(
        stdout.contains("the votes run on the interpreter: the bytecode VM cannot compile them")
            && stdout.contains("with"),
        "{stdout}"
    );
}

/// `REASONIX_REGO_ENGINE=interpreter` runs the votes on the interpreter (and `policy check`
/// says so); `vm` is the default; any other value is refused when the policies load.
#[test]
fn the_engine_variable_picks_the_interpreter_and_another_value_is_refused() {
    let w = World::new();
    let p = w.policy(
        "vm.rego",
        "package reasonix.vm\nimport rego.v1\ndeny contains \"x\" if to_number(input.n) > 1\n",
    );
    let run = |value: &str| {
        w.run_env(
            &["policy", "check", &p],
            "",
            &[("REASONIX_REGO_ENGINE", value)],
        )
    };
    let (code, stdout, _) = run("interpreter");
    assert_eq!(code, 0);
    assert!(
        stdout.contains("the votes run on the interpreter")
            && stdout.contains("REASONIX_REGO_ENGINE=interpreter"),
        "{stdout}"
    );
    let (code, stdout, _) = run("vm");
    assert_eq!(code, 0);
    assert!(
        stdout.contains("the votes run on the bytecode VM"),
        "{stdout}"
    );
    let (code, _, stderr) = run("fast");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("REASONIX_REGO_ENGINE=fast")
            && stderr.contains("`vm` (the default) or `interpreter`"),
        "{stderr}"
    );
}

/// A suite with one passing and one failing Rego test, and one passing and one failing case.
fn failing_suite(w: &World) -> std::path::PathBuf {
    let dir = w.root.join("suite");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.rego"), "package reasonix.p\nimport rego.v1\ndeny contains \"no tmp\" if {\n  some p in input.paths\n  startswith(p.written, \"tmp/\")\n}\n").unwrap();
    std::fs::write(dir.join("p_test.rego"), "package reasonix.p\nimport rego.v1\ntest_tmp_denied if count(deny) == 1 with input as {\"paths\": [{\"written\": \"tmp/x\"}]}\ntest_wrong if count(deny) == 5 with input as {\"paths\": []}\n# A helper named like a test is not a test.\ntest_helper(x) := x\n").unwrap();
    std::fs::write(
        dir.join("p.cases.yaml"),
        "- call: {name: write_file, arguments: {path: tmp/x, content: ''}}\n  expect: deny\n- name: this one is wrong\n  call: {name: read_file, arguments: {path: a}}\n  expect: deny\n",
    )
    .unwrap();
    dir
}

#[test]
fn a_cases_file_that_is_not_a_list_of_cases_is_refused_with_its_line_and_its_shape() {
    let w = World::new();
    let dir = w.ws.join("shape");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.yaml"), "version: 1\n").unwrap();
    // A map of cases where a list is wanted, and a case with a misspelt key.
    for (text, at) in [
        (
            "cases:\n  - call: {name: bash, arguments: {command: ls}}\n    expect: allow\n",
            ":1:1",
        ),
        (
            "- call: {name: bash, arguments: {command: ls}}\n  expected: allow\n",
            ":2:3",
        ),
    ] {
        std::fs::write(dir.join("p.cases.yaml"), text).unwrap();
        let (code, _, stderr) = w.run(&["policy", "test", dir.to_str().unwrap()], "");
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(&format!("p.cases.yaml{at}: ")), "{stderr}");
        assert!(
            stderr.contains("a cases file is a YAML list")
                && stderr.contains("expect: allow|ask|deny|invalid"),
            "{stderr}"
        );
    }
}

#[test]
fn policy_test_names_each_failure_with_expected_and_got_and_counts_tests_and_cases_apart() {
    let w = World::new();
    let dir = failing_suite(&w);
    let (code, stdout, _) = w.run(&["policy", "test", dir.to_str().unwrap()], "");
    assert_eq!(code, 1, "{stdout}");
    let fails: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert_eq!(fails.len(), 2, "{stdout}");
    assert!(
        fails[0].starts_with("FAIL Rego test data.reasonix.p.test_wrong (")
            && fails[0].contains("p_test.rego): expected true, got undefined"),
        "{stdout}"
    );
    assert!(
        fails[1].starts_with("FAIL case this one is wrong (")
            && fails[1].ends_with("p.cases.yaml): expected deny, got allow"),
        "{stdout}"
    );
    assert!(
        stdout.contains("defaults.read_only is allow"),
        "the reasons follow: {stdout}"
    );
    assert!(
        stdout.contains("FAILED Rego tests: 1 passed, 1 failed; cases: 1 passed, 1 failed"),
        "{stdout}"
    );
    // The same folder named twice, and a case file named beside its folder, count once.
    let (_, again, _) = w.run(
        &[
            "policy",
            "test",
            dir.to_str().unwrap(),
            dir.to_str().unwrap(),
            dir.join("p.cases.yaml").to_str().unwrap(),
        ],
        "",
    );
    assert!(
        again.contains("Rego tests: 1 passed, 1 failed; cases: 1 passed, 1 failed"),
        "{again}"
    );
}

#[test]
fn policy_test_writes_json_for_ci() {
    let w = World::new();
    let dir = failing_suite(&w);
    let (code, stdout, _) = w.run(
        &["policy", "test", "--format", "json", dir.to_str().unwrap()],
        "",
    );
    assert_eq!(code, 1, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["rego_tests"], json!({"passed": 1, "failed": 1}));
    assert_eq!(report["cases"], json!({"passed": 1, "failed": 1}));
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let wrong = results
        .iter()
        .find(|r| r["name"] == "data.reasonix.p.test_wrong")
        .unwrap();
    assert_eq!(wrong["kind"], "rego");
    assert_eq!(wrong["passed"], false);
    assert_eq!(
        (&wrong["expected"], &wrong["got"]),
        (&json!("true"), &json!("undefined"))
    );
    let case = results
        .iter()
        .find(|r| r["name"] == "this one is wrong")
        .unwrap();
    assert_eq!(case["kind"], "case");
    assert_eq!(
        (&case["expected"], &case["got"]),
        (&json!("deny"), &json!("allow"))
    );
    assert!(case["file"].as_str().unwrap().ends_with("p.cases.yaml"));
    assert_eq!(results.iter().filter(|r| r["passed"] == true).count(), 2);

    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let (code, stdout, _) = w.run(
        &[
            "policy",
            "test",
            "--format",
            "json",
            shipped.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["cases"]["failed"], 0);
}

#[test]
fn a_recursive_function_is_an_error_naming_it_in_check_policy_check_and_policy_test() {
    let w = World::new();
    for (name, text, what) in [
        (
            "f.rego",
            "package reasonix\nimport rego.v1\n\nf(x) := y if {\n  y := f(x)\n}\ndeny contains \"r\" if f(1) == 2\n",
            "function data.reasonix.f is recursive (data.reasonix.f → data.reasonix.f)",
        ),
        (
            "g.rego",
            "package reasonix.g\nimport rego.v1\nimport data.helpers\n\nodd(n) if helpers.even(n - 1)\ndeny contains \"r\" if odd(3)\n",
            "data.reasonix.g.odd → data.helpers.even",
        ),
        (
            "r.rego",
            "package reasonix.r\nimport rego.v1\n\na if {\n  input.tool == \"bash\"\n  b\n}\nb if a\ndeny contains \"r\" if a\n",
            "rule data.reasonix.r.a is recursive (data.reasonix.r.a → data.reasonix.r.b → data.reasonix.r.a)",
        ),
    ] {
        let dir = w.root.join(name.trim_end_matches(".rego"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        std::fs::write(
            dir.join("helpers.rego"),
            "package helpers\nimport rego.v1\nimport data.reasonix.g\neven(n) if g.odd(n - 1)\n",
        )
        .unwrap();
        let dir = dir.to_str().unwrap();
        let call = json!({"name": "bash", "arguments": {"command": "ls"}}).to_string();
        let ws = w.ws.to_str().unwrap();
        for args in [
            vec!["check", "--workspace", ws, "--policy", dir, call.as_str()],
            vec!["policy", "check", dir],
            vec!["policy", "test", dir],
        ] {
            let (code, _, stderr) = w.run(&args, "");
            assert_eq!(code, 2, "{args:?}: {stderr}");
            assert!(stderr.contains(what), "{args:?}: {stderr}");
            assert!(stderr.contains(".rego:"), "file and line: {stderr}");
        }
    }
}

#[test]
fn a_name_a_rule_binds_itself_is_not_recursion() {
    let set = PolicySet::from_texts(
        &[],
        &[(
            "p.rego",
            "package reasonix\nimport rego.v1\nf(deny) := deny + 1\ndeny contains \"n\" if f(1) == 3\n",
        )],
        &[],
    );
    assert!(set.is_ok(), "{}", set.err().unwrap());
}

#[test]
fn policy_check_warns_about_rules_that_can_never_fire() {
    let w = World::new();
    let dir = w.root.join("warned");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("p.yaml"),
        "version: 1\nrules:\n  - id: typo\n    decision: deny\n    tools: [wirte_file]\n  - id: careful\n    decision: ask\n    effects: [exec]\n  - id: tests\n    decision: allow\n    tools: [bash]\n    commands: [\"cargo test *\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("helpers.rego"),
        "package helpers\nimport rego.v1\nbig if input.size > 10\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("p.rego"),
        "package reasonix\nimport rego.v1\ndeny contains \"host\" if {\n  input.tool == \"bsah\"\n  not data.allowed_hosts[input.host]\n}\n",
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let (code, stdout, stderr) = w.run(&["policy", "check", d], "");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("rule    deny  typo"),
        "the listing: {stdout}"
    );
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), 5, "{stderr}");
    for needle in [
        "p.yaml: rule typo: tools glob \"wirte_file\" matches no tool",
        "p.yaml: rule tests: this allow can never decide: ask rule careful",
        "helpers.rego:1: package helpers is outside `reasonix` and nothing imports it",
        "p.rego:4:18: input.tool is compared with \"bsah\", which no tool is called",
        "p.rego:5:7: data.allowed_hosts",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(needle)),
            "{needle}: {stderr}"
        );
    }
    assert!(stderr.contains("no data is mounted"), "{stderr}");
    assert!(stderr.contains("5 warnings"), "{stderr}");

    let (code, _, stderr) = w.run(&["policy", "check", "--deny-warnings", d], "");
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("denied by --deny-warnings"), "{stderr}");

    // Mounting the data and importing the helpers answers two of them.
    let data = w.root.join("hosts.json");
    std::fs::write(&data, r#"{"allowed_hosts": {"example.com": true}}"#).unwrap();
    std::fs::write(
        dir.join("uses.rego"),
        "package reasonix.uses\nimport rego.v1\nimport data.helpers\nask contains \"big\" if helpers.big\n",
    )
    .unwrap();
    let (_, _, stderr) = w.run(
        &["policy", "check", d, "--data", data.to_str().unwrap()],
        "",
    );
    assert!(stderr.contains("3 warnings"), "{stderr}");
    assert!(!stderr.contains("package helpers"), "{stderr}");
    assert!(!stderr.contains("allowed_hosts"), "{stderr}");
}

#[test]
fn the_shipped_policies_have_no_warnings() {
    let w = World::new();
    let policies = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let (code, _, stderr) = w.run(
        &[
            "policy",
            "check",
            "--deny-warnings",
            policies.to_str().unwrap(),
            "builtin:default",
        ],
        "",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn the_shipped_policies_pass_their_own_tests() {
    let w = World::new();
    let policies = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let (code, stdout, stderr) = w.run(&["policy", "test", policies.to_str().unwrap()], "");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("ok "), "{stdout}");
}

/// The reasons and ids of the votes by one engine, sorted, or the error.
fn engine_votes(rego: &reasonix::policy::rego::Rego, input: &str) -> Result<Vec<String>, String> {
    let mut v: Vec<String> = rego
        .votes(input)?
        .into_iter()
        .map(|v| format!("{} {} ({})", v.decision.as_str(), v.reason, v.id))
        .collect();
    v.sort();
    Ok(v)
}

/// Every folder under `root` with Rego modules in it.
fn rego_folders(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    if paths
        .iter()
        .any(|p| p.is_file() && p.extension().is_some_and(|e| e == "rego"))
    {
        out.push(root.to_owned());
    }
    for p in paths.into_iter().filter(|p| p.is_dir()) {
        rego_folders(&p, out);
    }
}

/// The inputs a folder's Rego tests give with `with input as EXPR`, each `EXPR` evaluated by
/// regorus in its test module's package, and the expressions that could not be evaluated.
fn test_inputs(folder: &Path) -> (Vec<String>, Vec<String>) {
    use regorus::unstable::Rule;
    let mut engine = regorus::Engine::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rego"))
        .collect();
    files.sort();
    for f in &files {
        engine
            .add_policy(f.display().to_string(), std::fs::read_to_string(f).unwrap())
            .unwrap();
    }
    let mut found = Vec::new();
    for module in engine.get_modules() {
        if !module.package.span.source.file().ends_with("_test.rego") {
            continue;
        }
        let package = module.package.refr.span().text().to_owned();
        for rule in &module.policy {
            let Rule::Spec { bodies, .. } = rule.as_ref() else {
                continue;
            };
            for body in bodies {
                for stmt in &body.query.stmts {
                    for with in &stmt.with_mods {
                        // The modifier's own span: an object literal's span (`r#as`) starts
                        // at its last key.
                        let expr = with
                            .span
                            .text()
                            .strip_prefix("with")
                            .map(str::trim_start)
                            .and_then(|t| t.strip_prefix("input"))
                            .map(str::trim_start)
                            .and_then(|t| t.strip_prefix("as"));
                        if let (true, Some(expr)) = (with.refr.span().text() == "input", expr) {
                            found.push((package.clone(), expr.trim().to_owned()));
                        }
                    }
                }
            }
        }
    }
    let (mut inputs, mut missed) = (Vec::new(), Vec::new());
    for (package, expr) in found {
        let mut e = engine.clone();
        let text = format!("package {package}\nimport rego.v1\n__engines_input := {expr}\n");
        let value = e
            .add_policy("(engines test input).rego".into(), text)
            .and_then(|_| e.eval_rule(format!("data.{package}.__engines_input")));
        match value {
            Ok(v) if v != regorus::Value::Undefined => inputs.push(v.to_json_str().unwrap()),
            other => missed.push(format!("{package}: {expr}: {other:?}")),
        }
    }
    (inputs, missed)
}

/// The policy inputs of a folder's `*.cases.yaml` cases, as the gate builds them.
fn case_inputs(folder: &Path, set: &PolicySet) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Case {
        call: Value,
        posture: Option<Posture>,
        mode: Option<reasonix::GateMode>,
        #[serde(default)]
        files: std::collections::BTreeMap<String, String>,
    }
    let mut inputs = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| reasonix::policy::is_case_file(p))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let cases: Vec<Case> =
            yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for case in cases {
            let workspace = tempfile::tempdir().unwrap();
            for (path, content) in &case.files {
                let target = workspace.path().join(path);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(&target, content).unwrap();
            }
            let gate =
                reasonix::Gate::builder(reasonix::Registry::with_builtins(), set, workspace.path())
                    .posture(case.posture.unwrap_or_default())
                    .mode(case.mode.unwrap_or_default())
                    .explain(true)
                    .dry_run(true)
                    .host_files(reasonix::HostFiles::for_workspace(workspace.path()))
                    .build()
                    .unwrap();
            let admission = gate.admit_text(&case.call.to_string()).into_admission();
            if let Some(input) = admission.input {
                inputs.push(serde_json::to_string(&input).unwrap());
            }
        }
    }
    inputs
}

/// Every Rego policy under `policies/` and `tests/`, on the input of every one of its cases
/// (`*.cases.yaml`, through the gate) and of its Rego tests (`with input as ...`): the bytecode
/// VM, which runs the votes, and the interpreter give the same votes, or both fail. A new policy
/// folder is covered without a change here.
#[test]
fn both_engines_vote_alike_on_every_policy_and_case() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders = Vec::new();
    rego_folders(&root.join("policies"), &mut folders);
    rego_folders(&root.join("tests"), &mut folders);
    assert!(!folders.is_empty());
    let (mut compared, mut failed_alike) = (0, 0);
    for folder in &folders {
        let set = PolicySet::load_with(std::slice::from_ref(folder), &[], false)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        let vm = set.rego().unwrap();
        assert_eq!(
            vm.engine(),
            RegoEngine::Vm,
            "{}: {:?}",
            folder.display(),
            vm.vm_refused()
        );
        let interpreter = vm.with_interpreter();
        assert_eq!(interpreter.engine(), RegoEngine::Interpreter);
        let (mut inputs, missed) = test_inputs(folder);
        assert!(missed.is_empty(), "{}: {missed:#?}", folder.display());
        inputs.extend(case_inputs(folder, &set));
        assert!(
            !inputs.is_empty(),
            "{}: no input to compare",
            folder.display()
        );
        for input in &inputs {
            let by_vm = engine_votes(vm, input);
            let by_interpreter = engine_votes(&interpreter, input);
            match (&by_vm, &by_interpreter) {
                (Err(_), Err(_)) => failed_alike += 1,
                _ => assert_eq!(by_vm, by_interpreter, "{}: {input}", folder.display()),
            }
            compared += 1;
        }
    }
    eprintln!(
        "{} folders, {compared} inputs compared, {failed_alike} failed in both",
        folders.len()
    );
    assert!(compared >= 50, "{compared}");
}

/// Rego's time builtins read named time zones from the IANA database built into Reasonix: the
/// same answers on every machine, whatever its own zoneinfo (a daylight-saving switch, a
/// half-hour offset, +14), and a zone the database does not name exactly (one unknown, or
/// spelt in another case) fails the vote, so the call is denied.
#[test]
fn rego_time_builtins_know_named_time_zones_and_fail_closed_on_others() {
    let w = World::new();
    let ask = "version: 1\ndefaults:\n  writer: ask\n";
    let zones = r#"package reasonix.votes
# 2024-03-10T07:00:00Z, the minute New York moves to daylight-saving time; one second before.
on := 1710054000000000000
before := 1710053999000000000
agree if {
  time.clock([before, "America/New_York"]) == [1, 59, 59]
  time.clock([on, "America/New_York"]) == [3, 0, 0]
  time.date([on, "Asia/Kolkata"]) == [2024, 3, 10]
  time.clock([on, "Asia/Kolkata"]) == [12, 30, 0]
  time.weekday([on, "Pacific/Kiritimati"]) == "Sunday"
  time.clock([on, "Pacific/Kiritimati"]) == [21, 0, 0]
  time.clock([on, "UTC"]) == [7, 0, 0]
}
allow contains {"id": "tz", "reason": "the named zones agree"} if {
  input.tool == "write_file"
  agree
}
"#;
    let a = admit(&w, ask, zones, write());
    assert_eq!(a.verdict.as_str(), "allow", "{:?}", a.reasons);
    assert_eq!(a.rules[0].id, "tz");
    for zone in [
        "Mars/Olympus_Mons",
        "america/new_york",
        "EST5EDT,M3.2.0,M11.1.0",
    ] {
        let text = format!(
            "package reasonix.votes\nallow contains {{\"id\": \"tz\", \"reason\": \"x\"}} if time.clock([0, \"{zone}\"])\n"
        );
        let a = admit(&w, ask, &text, write());
        assert_eq!(a.verdict.as_str(), "deny", "{zone}: {:?}", a.reasons);
        assert_eq!(a.rules[0].id, "rego-error", "{zone}");
    }
}
