//! `reasonix policy import`: a real-world Claude Code settings file (24 mixed rules) and a Codex
//! rules file become YAML policies whose generated cases `reasonix policy test` passes; what
//! could not be expressed is named and the exit status says so; a tampered import fails its
//! own cases.

mod common;

use std::path::Path;

use common::World;

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/import")
        .join(name)
        .display()
        .to_string()
}

/// Imports into `<outside>/imported/NAME.yaml`: exit status, stderr, the policy text.
fn import(w: &World, from: &str, file: &str, name: &str) -> (i32, String, String) {
    let dir = w.outside.join("imported");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}.yaml"));
    let (code, _, stderr) = w.run(
        &[
            "policy",
            "import",
            "--from",
            from,
            &example(file),
            "-o",
            out.to_str().unwrap(),
        ],
        "",
    );
    (
        code,
        stderr,
        std::fs::read_to_string(&out).unwrap_or_default(),
    )
}

fn policy_test(w: &World) -> (i32, String) {
    let dir = w.outside.join("imported");
    let (code, stdout, stderr) = w.run(&["policy", "test", dir.to_str().unwrap()], "");
    (code, format!("{stdout}{stderr}"))
}

#[test]
fn claude_settings_import_and_their_cases_pass() {
    let w = World::new();
    let (code, stderr, policy) = import(&w, "claude", "claude-settings.json", "claude");
    assert_eq!(code, 1, "some rules cannot be expressed: {stderr}");
    // The three that cannot be expressed are named, with why.
    for left in [
        "not imported: ask \"WebSearch\": Reasonix has no tool",
        "not imported: allow \"WebFetch(domain:docs.rs)\": a YAML rule cannot name a host",
        "not imported: allow \"Write(docs/**)\": Claude Code does not consult a path",
        "3 rules could not be expressed",
    ] {
        assert!(stderr.contains(left), "{left}\n{stderr}");
    }
    assert!(policy.contains("# Not imported (3):"), "{policy}");
    // Every imported rule follows a comment quoting its source; the strict reading is stated.
    let quoted = policy
        .lines()
        .filter(|l| {
            l.starts_with("  # allow \"")
                || l.starts_with("  # ask \"")
                || l.starts_with("  # deny \"")
        })
        .count();
    assert_eq!(quoted, 21, "{policy}");
    assert!(
        policy.contains(
            "# Strict reading: Claude Code matches a Bash rule against the command string"
        )
    );
    assert!(policy.contains(
        "  # strict reading: every simple command anywhere in the call must match word by word"
    ));
    assert!(policy.contains("    - npm run test *\n"), "{policy}");
    assert!(policy.contains("    - ./secrets/**\n"), "{policy}");

    // The round trip: the cases generated from each rule's examples pass.
    let (code, out) = policy_test(&w);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("cases: 29 passed, 0 failed"), "{out}");
    let cases = std::fs::read_to_string(w.outside.join("imported/claude.cases.yaml")).unwrap();
    assert!(cases.contains("not stretched over `&& curl`"), "{cases}");
}

#[test]
fn a_tampered_import_fails_its_own_cases() {
    let w = World::new();
    import(&w, "claude", "claude-settings.json", "claude");
    let path = w.outside.join("imported/claude.yaml");
    let policy = std::fs::read_to_string(&path).unwrap();
    // The .env deny turned into an allow, and the test allow widened to all of npm.
    let tampered = policy
        .replacen(
            "  - id: claude-deny-1\n    decision: deny",
            "  - id: claude-deny-1\n    decision: allow",
            1,
        )
        .replace("    - npm run test *\n", "    - npm *\n");
    assert_ne!(tampered, policy);
    std::fs::write(&path, tampered).unwrap();
    let (code, out) = policy_test(&w);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("claude-deny-1: deny \"Read(./.env)\": Read .env"),
        "{out}"
    );
}

#[test]
fn claude_rules_go_to_stdout_without_o() {
    let w = World::new();
    let file = w.file(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(git status)", "Read(src/**)"], "deny": ["Read(.env)"]}}"#,
    );
    let (code, stdout, stderr) = w.run(
        &[
            "policy",
            "import",
            "--from",
            "claude",
            file.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 0, "everything was expressed: {stderr}");
    assert!(
        stdout.starts_with("# Imported from Claude Code's permissions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  # allow \"Read(src/**)\"\n  - id: claude-allow-3\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains("-o POLICY.yaml also writes their"),
        "{stderr}"
    );
    // A file that is not settings is an error, exit 2.
    let bad = w.file("bad.json", "{\"permissions\": {\"allow\": [1]}}");
    let (code, _, stderr) = w.run(
        &[
            "policy",
            "import",
            "--from",
            "claude",
            bad.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("permissions.allow[0] is not a string"),
        "{stderr}"
    );
}

#[test]
fn codex_rules_import_and_their_cases_pass() {
    let w = World::new();
    let (code, stderr, policy) = import(&w, "codex", "codex.rules", "codex");
    assert_eq!(code, 1, "the helper variable is not a rule: {stderr}");
    assert!(
        stderr.contains(
            "not imported: line 49: ALLOWED = [\"ls\"]: only prefix_rule(...) calls are read"
        ),
        "{stderr}"
    );
    assert!(
        policy.contains("    - git {status,diff,log} *\n"),
        "{policy}"
    );
    assert!(policy.contains("    - git {push,fetch} *\n"), "{policy}");
    assert!(
        policy.contains("  - id: codex-forbidden-5\n    decision: deny\n"),
        "{policy}"
    );
    let (code, out) = policy_test(&w);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("cases: 10 passed, 0 failed"), "{out}");
}

#[test]
fn a_codex_file_that_is_not_starlark_imports_nothing() {
    let w = World::new();
    let file = w.file("broken.rules", "prefix_rule(pattern = [\"git\",\n");
    let (code, stdout, stderr) = w.run(
        &[
            "policy",
            "import",
            "--from",
            "codex",
            file.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("not valid Starlark; nothing was imported"),
        "{stderr}"
    );
}
