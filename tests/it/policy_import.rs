//! `reasonix policy import`: a real-world Claude Code settings file (24 mixed rules) and a Codex
//! rules file become YAML policies whose generated cases `reasonix policy test` passes; what
//! could not be expressed is named and the exit status says so; a tampered import fails its
//! own cases.

use crate::common;

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
    // A prompt rule's alternatives are one pattern each: its generous match reads an option
    // word in any spelling, and no `{a,b}` word.
    assert!(
        policy.contains("    - git push *\n    - git fetch *\n"),
        "{policy}"
    );
    // The left-out statement may have narrowed reads too: the read-only fallback asks.
    assert!(
        policy.contains("defaults: {read_only: ask, writer: ask, unattended: deny}"),
        "{policy}"
    );
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

/// Issue 28, item 3, as a property: for generated Claude Code permission sets (rules that can
/// and cannot be carried over, in every list), the imported policy never allows a call that
/// Claude Code's own precedence over the source rules would not allow — deny over ask over
/// allow, with its defaults (reads run, the rest asks) — and asks at least where the source
/// asks or denies. The oracle here is written apart from the importer.
#[test]
fn a_claude_import_is_never_more_permissive_than_its_source() {
    use reasonix::{Call, Judgement, PolicySet, Posture, Verdict};
    use serde_json::json;
    // (rule text, which calls it matches, by index into `calls`).
    let alphabet: &[(&str, &[usize])] = &[
        ("Bash", &[0, 1]),
        ("Bash(npm test:*)", &[0]),
        ("Bash(rm:*)", &[1]),
        ("WebFetch", &[2, 3]),
        ("WebFetch(domain:x.com)", &[2]),
        ("Read", &[4, 5]),
        ("Read(./src/**)", &[4]),
        ("WebSearch", &[]),
        ("Bash(", &[]),
        ("mcp__srv__tool", &[]),
    ];
    let calls = [
        Call::new("bash", json!({"command": "npm test"})),
        Call::new("bash", json!({"command": "rm -rf build"})),
        Call::new("network_connect", json!({"host": "x.com", "port": 443})),
        Call::new("network_connect", json!({"host": "y.com", "port": 443})),
        Call::new("read_file", json!({"path": "src/a.rs"})),
        Call::new("read_file", json!({"path": "notes.txt"})),
    ];
    // Claude Code's default with no rule: reads run, everything else asks.
    let default_rank = [1, 1, 1, 1, 0, 0];
    let rank = |d: &str| match d {
        "deny" => 2,
        "ask" => 1,
        _ => 0,
    };
    let w = World::new();
    w.file("src/a.rs", "fn main() {}\n");
    w.file("notes.txt", "n\n");
    let mut seed: u64 = 0x2028_1234_5678_9abc;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % n
    };
    let mut widened = Vec::new();
    let mut demoted_somewhere = false;
    for case in 0..200 {
        let lists = ["deny", "ask", "allow"];
        let mut permissions = serde_json::Map::new();
        let mut rules: Vec<(&str, usize)> = Vec::new();
        for _ in 0..1 + next(5) {
            let (list, rule) = (lists[next(3)], next(alphabet.len()));
            rules.push((list, rule));
            permissions
                .entry(list)
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .unwrap()
                .push(json!(alphabet[rule].0));
        }
        let settings = json!({"permissions": permissions});
        let imported = reasonix::claude::settings::import(&settings, "generated").unwrap();
        demoted_somewhere |= imported.rules.iter().any(|r| {
            r.reading
                .as_deref()
                .is_some_and(|r| r.contains("imported as ask"))
        });
        let yaml = imported.policy_yaml().unwrap();
        let set = PolicySet::from_yaml("imported.yaml", &yaml)
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{yaml}"));
        let gate = w.gate(&set, Posture::Interactive);
        for (i, call) in calls.iter().enumerate() {
            let source = rules
                .iter()
                .filter(|(_, r)| alphabet[*r].1.contains(&i))
                .map(|(list, _)| rank(list))
                .max()
                .unwrap_or(default_rank[i]);
            let got = match gate.admit(call) {
                Judgement::Allowed(_) => 0,
                Judgement::Ask(_) => 1,
                Judgement::Refused(a) => {
                    assert!(matches!(a.verdict, Verdict::Deny | Verdict::Invalid));
                    2
                }
            };
            // A deny that cannot be carried is at least an ask (the issue's remedy: the allows
            // it narrowed become asks, so a person or the unattended default decides).
            if got < source.min(1) {
                widened.push(format!(
                    "case {case}: {settings} lets call {i} through as rank {got}, the source says {source}"
                ));
            }
        }
    }
    assert!(widened.is_empty(), "{}", widened.join("\n"));
    assert!(
        demoted_somewhere,
        "the generator never reached a left-out narrowing rule"
    );
}

/// Issue 28, item 3, the two reported cases: a Claude `WebFetch(domain:…)` deny beside a
/// `WebFetch` allow, and a Codex `forbidden` rule whose justification holds an escaped newline
/// beside an allow of `rm`. The twin: a Claude import that only narrows keeps its allow.
#[test]
fn an_import_whose_narrowing_rule_cannot_be_carried_never_widens() {
    use serde_json::json;
    let claude = reasonix::claude::settings::import(
        &json!({"permissions": {"allow": ["WebFetch"], "deny": ["WebFetch(domain:evil.com)"]}}),
        "s",
    )
    .unwrap();
    let fetch = &claude.rules[0];
    assert_eq!(fetch.yaml["decision"], "ask", "{:?}", fetch.yaml);
    let only_narrows = reasonix::claude::settings::import(
        &json!({"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Bash(rm:*)"]}}),
        "s",
    )
    .unwrap();
    assert!(
        only_narrows
            .rules
            .iter()
            .any(|r| r.yaml["decision"] == "allow"),
        "{:?}",
        only_narrows.rules
    );
    let codex = reasonix::codex::import(
        "prefix_rule(pattern = [\"rm\"], decision = \"allow\")\nprefix_rule(pattern = [\"rm\", \"-rf\"], decision = \"forbidden\", justification = \"never\\nthis\")\n",
        "r",
    )
    .unwrap();
    let decisions: Vec<&str> = codex
        .rules
        .iter()
        .map(|r| r.yaml["decision"].as_str().unwrap())
        .collect();
    assert_eq!(
        decisions,
        ["allow", "deny"],
        "the forbidden rule survives its justification"
    );
}
