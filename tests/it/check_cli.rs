//! `reasonix check` as users and scripts run it: malformed calls, JSONL, exit codes, postures,
//! policy errors, text output.

use crate::common;

use common::{World, reasons};
use serde_json::{Value, json};

/// Every kind of malformed call, with a word its message must contain.
const MALFORMED: &[(&str, &str)] = &[
    ("this is not json", "not valid JSON"),
    ("[\"read_file\"]", "must be a JSON object"),
    (r#"{"arguments":{"path":"a"}}"#, "name is missing"),
    (r#"{"name":42,"arguments":{}}"#, "name must be a string"),
    (
        r#"{"name":"read_file","arguments":{"path":"a"},"sudo":true}"#,
        "unknown field \"sudo\"",
    ),
    (
        r#"{"name":"rm_rf","arguments":{}}"#,
        "unknown tool \"rm_rf\"; the tools are: bash, delete_file",
    ),
    (r#"{"name":"read_file"}"#, "no arguments"),
    (
        r#"{"name":"read_file","arguments":"{\"path\": "}"#,
        "does not hold a JSON object",
    ),
    (
        r#"{"name":"read_file","arguments":"[\"a\"]"}"#,
        "got an array",
    ),
    (r#"{"name":"read_file","arguments":17}"#, "got a number"),
    (
        r#"{"name":"read_file","arguments":{}}"#,
        "\"path\" is a required property",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":7}}"#,
        "/path: 7 is not of type \"string\"",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"a","offset":0}}"#,
        "/offset: 0 is less than the minimum of 1",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"a","mode":"w"}}"#,
        "Additional properties are not allowed ('mode' was unexpected)",
    ),
    (
        r#"{"name":"write_file","arguments":{"path":"a","content":null}}"#,
        "/content: null is not of type \"string\"",
    ),
    (
        r#"{"name":"edit_file","arguments":{"path":"a","old_string":"","new_string":"x"}}"#,
        "/old_string",
    ),
    (
        r#"{"name":"move_file","arguments":{"source_path":"a"}}"#,
        "\"destination_path\" is a required property",
    ),
    (
        r#"{"name":"bash","arguments":{"command":"ls","timeout_ms":-5}}"#,
        "/timeout_ms",
    ),
    (r#"{"name":"bash","arguments":{"command":""}}"#, "/command"),
    (
        r#"{"name":"grep","arguments":{"pattern":"[z-a]"}}"#,
        "bad regular expression",
    ),
    (
        r#"{"name":"glob","arguments":{"pattern":"src/"}}"#,
        "must end in a name or a wildcard",
    ),
    (
        r#"{"type":"function","function":{"name":"read_file","arguments":"{}"}}"#,
        "\"path\" is a required property",
    ),
];

#[test]
fn every_malformed_call_is_invalid_with_a_useful_message() {
    let w = World::new();
    let stdin: String = MALFORMED.iter().map(|(c, _)| format!("{c}\n")).collect();
    let (code, verdicts) = w.check_lines(&stdin, &[]);
    assert_eq!(code, 30);
    assert_eq!(verdicts.len(), MALFORMED.len());
    for ((call, needle), v) in MALFORMED.iter().zip(&verdicts) {
        assert_eq!(v["verdict"], "invalid", "{call}");
        assert_eq!(v["stage"], "validate", "{call}");
        let why = reasons(v);
        assert!(
            why.contains(needle),
            "{call}\n  want {needle:?} in\n  {why}"
        );
        assert!(
            why.len() <= 2100,
            "the message is bounded: {} bytes",
            why.len()
        );
        assert_eq!(
            v["paths"],
            json!([]),
            "an invalid call is never resolved: {call}"
        );
    }
}

#[test]
fn schema_violations_show_the_schema() {
    let w = World::new();
    let (_, v) = w.check(&json!({"name":"write_file","arguments":{"path":"a"}}), &[]);
    assert!(
        reasons(&v).contains(r#""required":["content","path"]"#),
        "{}",
        reasons(&v)
    );
}

#[test]
fn checking_runs_nothing() {
    let w = World::new();
    let calls = [
        json!({"name":"write_file","arguments":{"path":"made.txt","content":"x"}}),
        json!({"name":"bash","arguments":{"command":"touch made_by_bash"}}),
        json!({"name":"delete_file","arguments":{"path":"keep.txt"}}),
    ];
    w.file("keep.txt", "k");
    for call in &calls {
        w.check(call, &[]);
    }
    assert!(!w.ws.join("made.txt").exists());
    assert!(!w.ws.join("made_by_bash").exists());
    assert!(w.ws.join("keep.txt").exists());
}

#[test]
fn jsonl_gives_one_verdict_per_line_in_order_and_skips_blank_lines() {
    let w = World::new();
    let stdin = concat!(
        r#"{"id":"1","name":"read_file","arguments":{"path":"a"}}"#,
        "\n",
        "\n",
        "garbage\n",
        "   \n",
        r#"{"id":"3","name":"read_file","arguments":{"path":".env"}}"#,
        "\n",
        r#"{"id":"4","name":"write_file","arguments":{"path":"b","content":""}}"#,
    );
    let (code, v) = w.check_lines(stdin, &[]);
    assert_eq!(v.len(), 4);
    assert_eq!(
        (v[0]["id"].as_str(), v[0]["verdict"].as_str()),
        (Some("1"), Some("allow"))
    );
    assert_eq!(v[1]["verdict"], "invalid");
    assert_eq!(
        (v[2]["id"].as_str(), v[2]["verdict"].as_str()),
        (Some("3"), Some("deny"))
    );
    assert_eq!(
        (v[3]["id"].as_str(), v[3]["verdict"].as_str()),
        (Some("4"), Some("ask"))
    );
    assert_eq!(code, 30, "invalid outranks deny and ask");
}

/// Issue 12: lines that wait together are judged together, spread over the cores; the verdicts
/// still come in input order, each naming its line, the same as each line judged alone.
#[test]
fn a_long_stream_keeps_its_order_and_line_numbers() {
    let w = World::new();
    let calls = [
        r#"{"id":"a","name":"read_file","arguments":{"path":"a"}}"#,
        r#"{"id":"env","name":"read_file","arguments":{"path":".env"}}"#,
        r#"{"id":"git","name":"bash","arguments":{"command":"git status && git diff | head"}}"#,
        "garbage",
        r#"{"id":"w","name":"write_file","arguments":{"path":"b","content":""}}"#,
        "",
    ];
    let alone: Vec<Value> = calls
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| w.check_lines(c, &[]).1.remove(0))
        .collect();
    let mut stdin = String::new();
    let mut expected = Vec::new();
    for n in 1..=600 {
        let i = (n * 7) % calls.len();
        stdin.push_str(calls[i]);
        stdin.push('\n');
        if !calls[i].is_empty() {
            let k = calls[..i].iter().filter(|c| !c.is_empty()).count();
            expected.push((n, k));
        }
    }
    let (code, v) = w.check_lines(&stdin, &[]);
    assert_eq!(code, 30);
    assert_eq!(v.len(), expected.len());
    for (got, (n, k)) in v.iter().zip(expected) {
        let mut want = alone[k].clone();
        want["line"] = json!(n);
        let mut got = got.clone();
        if want["verdict"] == "invalid" {
            // An invalid line's reason names its line.
            got["reasons"] = Value::Null;
            want["reasons"] = Value::Null;
        }
        assert_eq!(got, want, "line {n}");
    }
}

/// Issue 12: a dry run computes and shows the jail's plan, and builds none of it: it makes no
/// folder (with TMPDIR a file, where no folder can be made, a run's plan refuses — `sandbox
/// probe` shows it — and the dry run's does not, for it never tries), and on a working machine
/// what it shows is what a run is planned with.
#[test]
fn checking_a_bash_call_shows_the_plan_and_makes_no_folder() {
    let w = World::new();
    let not_a_folder = w.root.join("tmp-is-a-file");
    std::fs::write(&not_a_folder, "").unwrap();
    let ws = w.ws.to_str().unwrap();
    let run = |args: &[&str], tmpdir: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
            .args(args)
            .env("HOME", &w.home)
            .env("TMPDIR", tmpdir)
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };
    let check = [
        "check",
        "--format",
        "json",
        "--workspace",
        ws,
        r#"{"name":"bash","arguments":{"command":"ls -la"}}"#,
    ];
    let probe = ["sandbox", "probe", "--workspace", ws];
    let v = run(&check, &not_a_folder);
    assert_eq!(v["sandbox"]["refusal"], Value::Null, "{v}");
    let refused = run(&probe, &not_a_folder);
    // (The probe's own trial of the namespaces needs a folder too, so a run's plan lacks them
    // as well: its refusal names what fails first.)
    assert!(refused["plan"]["refusal"].is_string(), "{refused}");
    // With a usable TMPDIR, the dry run shows what a run is planned with.
    let tmp = tempfile::tempdir().unwrap();
    let (shown, planned) = (run(&check, tmp.path()), run(&probe, tmp.path()));
    let (shown, planned) = (&shown["sandbox"], &planned["plan"]);
    for field in [
        "mode",
        "backend",
        "read_roots",
        "write_roots",
        "network",
        "limits",
        "refusal",
    ] {
        assert_eq!(shown[field], planned[field], "{field}");
    }
    assert!(
        shown["enforced"].as_array().is_some_and(|e| e
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("Landlock")))),
        "{shown}"
    );
}

#[test]
fn exit_status_is_the_worst_verdict() {
    let w = World::new();
    let read = r#"{"name":"read_file","arguments":{"path":"a"}}"#;
    let write = r#"{"name":"write_file","arguments":{"path":"a","content":""}}"#;
    let secret = r#"{"name":"read_file","arguments":{"path":".env"}}"#;
    let cases = [
        (vec![read], 0),
        (vec![read, write], 10),
        (vec![read, write, secret], 20),
        (vec![secret, read], 20),
        (vec![read, "{", secret], 30),
        (vec![], 0),
    ];
    for (lines, want) in cases {
        let stdin = lines.join("\n");
        let (code, _) = w.check_lines(&stdin, &[]);
        assert_eq!(code, want, "{lines:?}");
    }
}

#[test]
fn postures_change_what_ask_and_fallback_become() {
    let w = World::new();
    let write = json!({"name":"write_file","arguments":{"path":"a","content":""}});
    let read = json!({"name":"read_file","arguments":{"path":"a"}});

    let (code, v) = w.check(&write, &["--posture", "interactive"]);
    assert_eq!((code, v["verdict"].as_str()), (10, Some("ask")));

    let (code, v) = w.check(&write, &["--posture", "unattended"]);
    assert_eq!(
        (code, v["verdict"].as_str(), v["stage"].as_str()),
        (20, Some("deny"), Some("approve"))
    );
    assert!(
        reasons(&v).contains("defaults.unattended"),
        "{}",
        reasons(&v)
    );

    let (code, v) = w.check(&read, &["--posture", "unattended"]);
    assert_eq!(
        (code, v["verdict"].as_str()),
        (0, Some("allow")),
        "reads still run unattended"
    );

    let (code, v) = w.check(&read, &["--posture", "strict"]);
    assert_eq!(
        (code, v["verdict"].as_str()),
        (20, Some("deny")),
        "strict: a fallback allow is not enough"
    );
    assert!(reasons(&v).contains("strict posture"), "{}", reasons(&v));

    let allow_reads = w.policy(
        "reads.yaml",
        "version: 1\nrules:\n  - id: reads\n    decision: allow\n    effects: [read]\n",
    );
    let (code, v) = w.check(&read, &["--posture", "strict", "--policy", &allow_reads]);
    assert_eq!(
        (code, v["verdict"].as_str()),
        (0, Some("allow")),
        "strict: an explicit allow runs"
    );
}

#[test]
fn unattended_allow_is_honoured_when_the_policy_says_so() {
    let w = World::new();
    let p = w.policy("ci.yaml", "version: 1\ndefaults:\n  unattended: allow\n");
    let write = json!({"name":"write_file","arguments":{"path":"a","content":""}});
    let (code, v) = w.check(&write, &["--posture", "unattended", "--policy", &p]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")));
}

#[test]
fn a_bad_policy_is_a_configuration_error_naming_file_and_line() {
    let w = World::new();
    let p = w.policy(
        "bad.yaml",
        "version: 1\nrules:\n  - id: oops\n    decision: deny\n    path: [\"**/.env\"]\n",
    );
    let (code, stdout, stderr) = w.run(
        &[
            "check",
            "--policy",
            &p,
            r#"{"name":"read_file","arguments":{"path":".env"}}"#,
        ],
        "",
    );
    assert_eq!(code, 2);
    assert!(stdout.is_empty(), "no verdict on a broken policy: {stdout}");
    assert!(stderr.contains(&format!("{p}:5:")), "{stderr}");
    assert!(stderr.contains("unknown field `path`"), "{stderr}");
}

#[test]
fn every_problem_in_every_policy_file_is_reported() {
    let w = World::new();
    let dir = w.root.join("policies");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), "version: 2\n").unwrap();
    std::fs::write(
        dir.join("b.yml"),
        "version: 1\nrules:\n  - decision: perhaps\n",
    )
    .unwrap();
    std::fs::write(dir.join("ok.cases.yaml"), "not a policy at all: [").unwrap();
    let (code, _, stderr) = w.run(&["check", "--policy", dir.to_str().unwrap(), "{}"], "");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("a.yaml:1:") && stderr.contains("unsupported policy version 2"),
        "{stderr}"
    );
    assert!(
        stderr.contains("b.yml:3:") && stderr.contains("unknown variant `perhaps`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("cases"),
        "case files are not policies: {stderr}"
    );
}

#[test]
fn missing_policy_workspace_and_bad_flags_exit_2() {
    let w = World::new();
    let call = r#"{"name":"read_file","arguments":{"path":"a"}}"#;
    let (code, _, stderr) = w.run(&["check", "--policy", "/no/such/policy.yaml", call], "");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/no/such/policy.yaml"), "{stderr}");
    let (code, _, stderr) = w.run(&["check", "--workspace", "/no/such/ws", call], "");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/no/such/ws"), "{stderr}");
    let (code, _, stderr) = w.run(&["check", "--posture", "lenient", call], "");
    assert_eq!(code, 2);
    assert!(
        stderr.contains("invalid value 'lenient'")
            && stderr.contains("possible values: interactive, unattended, strict"),
        "{stderr}"
    );
    let (code, _, _) = w.run(&["check", "--format", "xml", call], "");
    assert_eq!(code, 2);
    let (code, _, stderr) = w.run(
        &["check", "--policy", w.outside.to_str().unwrap(), call],
        "",
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("holds no policy files"), "{stderr}");
}

#[test]
fn several_policies_merge_and_deny_wins() {
    let w = World::new();
    let allow = w.policy(
        "allow.yaml",
        "version: 1\nrules:\n  - id: writes-ok\n    decision: allow\n    tools: [write_file]\n",
    );
    let deny = w.policy(
        "deny.yaml",
        "version: 1\nrules:\n  - id: no-lock\n    decision: deny\n    paths: [\"*.lock\"]\n",
    );
    let (code, v) = w.check(
        &json!({"name":"write_file","arguments":{"path":"Cargo.lock","content":""}}),
        &["--policy", &allow, "--policy", &deny],
    );
    assert_eq!(code, 20);
    assert_eq!(v["rules"][0]["id"], "no-lock");
    assert_eq!(v["rules"][0]["source"], deny.as_str());
    assert_eq!(v["rules"][0]["decisive"], true);
    assert_eq!(v["rules"][1]["id"], "writes-ok");
    assert_eq!(v["rules"][1]["decisive"], false);
    let (code, _) = w.check(
        &json!({"name":"write_file","arguments":{"path":"src/a.rs","content":""}}),
        &["--policy", &allow, "--policy", &deny],
    );
    assert_eq!(code, 0);
}

#[test]
fn text_output_gives_verdict_reason_rule_and_paths() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap();
    let call = r#"{"id":"c7","name":"read_file","arguments":{"path":"app/.env"}}"#;
    let (code, stdout, _) = w.run(&["check", "--workspace", ws, call], "");
    assert_eq!(code, 20);
    let first = stdout.lines().next().unwrap();
    assert!(first.starts_with("DENY"), "{stdout}");
    assert!(
        first.contains("read_file") && first.contains("[c7]") && first.contains("stage policy"),
        "{stdout}"
    );
    assert!(first.contains("secrets"), "{stdout}");
    assert!(
        stdout.contains("rule    deny no-secrets embedded:policies/default.yaml"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("path    target read {ws}/app/.env")),
        "{stdout}"
    );
    assert!(
        !stdout.contains('\u{1b}'),
        "no colour under NO_COLOR or on a pipe"
    );
}

#[test]
fn the_workspace_defaults_to_the_current_folder() {
    let w = World::new();
    // `run` starts the binary in the `outside` folder: that is the workspace now.
    std::fs::write(w.outside.join("here.txt"), "").unwrap();
    let (code, stdout, _) = w.run(
        &[
            "check",
            "--format",
            "json",
            r#"{"name":"read_file","arguments":{"path":"here.txt"}}"#,
        ],
        "",
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains(&w.outside.join("here.txt").display().to_string()),
        "{stdout}"
    );
}

#[test]
fn text_output_shows_escape_sequences_and_bidi_overrides_instead_of_obeying_them() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap();
    let call = json!({"id": "c\u{1b}[31m", "name": "bash", "arguments": {"command": "cat \u{202e}vne.x\u{1b}[8m hidden\u{9b}"}});
    let (_, stdout, _) = w.run(
        &["check", "--workspace", ws, "--explain", &call.to_string()],
        "",
    );
    for bad in ['\u{1b}', '\u{202e}', '\u{9b}'] {
        assert!(
            !stdout.contains(bad),
            "{bad:?} reached the terminal: {stdout:?}"
        );
    }
    assert!(
        stdout.contains(r"cat \u{202e}vne.x\x1b[8m hidden\u{9b}"),
        "{stdout}"
    );
    assert!(stdout.contains(r"[c\x1b[31m]"), "{stdout}");
}

#[test]
fn a_stream_is_judged_line_by_line_whatever_the_bad_bytes() {
    let w = World::new();
    let mut stdin = Vec::new();
    stdin.extend_from_slice(b"\xef\xbb\xbf");
    stdin.extend_from_slice(br#"{"name":"read_file","arguments":{"path":"a"}}"#);
    stdin.extend_from_slice(b"\n{\n  \"name\": \"read_file\"\n}\n\xff\xfe not utf-8\r\n\n");
    stdin.extend_from_slice(br#"{"name":"read_file","arguments":{"path":".env"}}"#);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["check", "--format", "json", "--workspace"])
        .arg(&w.ws)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(&stdin)?;
            child.wait_with_output()
        })
        .unwrap();
    let v: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(u64, &str)> = v
        .iter()
        .map(|v| (v["line"].as_u64().unwrap(), v["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (1, "allow"),
            (2, "invalid"),
            (3, "invalid"),
            (4, "invalid"),
            (5, "invalid"),
            (7, "deny")
        ],
        "the BOM is ignored, each line judged alone, the blank line 6 skipped"
    );
    assert!(
        common::reasons(&v[1]).contains("one call per line"),
        "{}",
        v[1]
    );
    assert!(
        common::reasons(&v[2]).contains("at line 3 column"),
        "{}",
        v[2]
    );
    assert!(
        common::reasons(&v[4]).contains("line 5 is not UTF-8"),
        "{}",
        v[4]
    );
    assert_eq!(out.status.code(), Some(30));
    // Every verdict has the same keys.
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert!(v.iter().all(|x| keys(x) == keys(&v[0])), "{v:?}");
    assert!(v[1]["fallback"].is_null() && v[1]["input"].is_null());
}

#[test]
fn a_closed_pipe_stops_check_quietly() {
    let w = World::new();
    let line = r#"{"name":"read_file","arguments":{"path":"a"}}"#.to_owned() + "\n";
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["check", "--workspace"])
        .arg(&w.ws)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader takes one line and goes away, as `| head -1` does.
    drop(child.stdout.take());
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        for _ in 0..20_000 {
            if stdin.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "nothing said about the pipe: {stderr}");
}

#[test]
fn a_program_sending_one_call_at_a_time_gets_each_verdict_at_once() {
    use std::io::{BufRead as _, Write as _};
    let w = World::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["check", "--format", "json", "--workspace"])
        .arg(&w.ws)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    for (i, path) in ["a", ".env", "b"].iter().enumerate() {
        writeln!(
            stdin,
            r#"{{"name":"read_file","arguments":{{"path":"{path}"}}}}"#
        )
        .unwrap();
        stdin.flush().unwrap();
        // The verdict comes while stdin is still open: no buffering holds it back.
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["line"], i + 1);
    }
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(20));
}

/// Issue 17, item 1: a policy of one's own replaces the embedded default, visibly.
fn read_env() -> Value {
    json!({"name": "read_file", "arguments": {"path": ".env"}})
}

const ALLOW_READS: &str = "package reasonix\nimport rego.v1\nallow contains \"reads are fine\" if input.tool == \"read_file\"\n";

#[test]
fn a_policy_flag_replaces_the_default_and_text_output_says_so() {
    let w = World::new();
    let rego = w.root.join("reads.rego");
    std::fs::write(&rego, ALLOW_READS).unwrap();
    let rego = rego.to_str().unwrap();
    let (code, v) = w.check(&read_env(), &["--policy", rego]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    let ws = w.ws.to_str().unwrap();
    let call = read_env().to_string();
    let (code, stdout, stderr) = w.run(
        &["check", "--workspace", ws, "--policy", rego, call.as_str()],
        "",
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stderr.contains("the embedded default policy (no-secrets, catastrophic")
            && stderr.contains("is not in force: --policy replaces it")
            && stderr.contains("add --policy builtin:default to keep it"),
        "{stderr}"
    );
    // JSON output is for programs: no line on stderr.
    let (_, _, stderr) = w.run(
        &[
            "check",
            "--format",
            "json",
            "--workspace",
            ws,
            "--policy",
            rego,
            &call,
        ],
        "",
    );
    assert!(stderr.is_empty(), "{stderr}");
    // Without --policy, the default is in force and nothing is said.
    let (code, stdout, stderr) = w.run(&["check", "--workspace", ws, &call], "");
    assert_eq!(code, 20, "{stdout}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn builtin_default_keeps_the_default_beside_ones_own_policies() {
    let w = World::new();
    let rego = w.root.join("reads.rego");
    std::fs::write(&rego, ALLOW_READS).unwrap();
    let rego = rego.to_str().unwrap();
    for order in [
        ["--policy", "builtin:default", "--policy", rego],
        ["--policy", rego, "--policy", "builtin:default"],
    ] {
        let (code, v) = w.check(&read_env(), &order);
        assert_eq!(code, 20, "{v}");
        assert_eq!(v["verdict"], "deny", "{v}");
        assert_eq!(v["rules"][0]["id"], "no-secrets", "{v}");
        assert_eq!(v["rules"][0]["source"], "embedded:policies/default.yaml");
        // Its own rules vote too.
        let (code, v) = w.check(
            &json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
            &order,
        );
        assert_eq!(code, 0);
        assert_eq!(v["rules"][0]["id"], "reasonix.allow", "{v}");
    }
    let ws = w.ws.to_str().unwrap();
    let call = read_env().to_string();
    let (_, _, stderr) = w.run(
        &[
            "check",
            "--workspace",
            ws,
            "--policy",
            "builtin:default",
            "--policy",
            rego,
            &call,
        ],
        "",
    );
    assert!(stderr.is_empty(), "the default is in force: {stderr}");
}

#[test]
fn reasonix_yaml_names_the_policies_and_a_policy_flag_wins() {
    let w = World::new();
    w.file(
        "policies/team.yaml",
        "version: 1\nrules:\n  - id: no-logs\n    decision: deny\n    paths: [\"*.log\"]\n",
    );
    w.file(
        "reasonix.yaml",
        "policies: [builtin:default, policies/team.yaml]\n",
    );
    let (code, v) = w.check(&read_env(), &[]);
    assert_eq!(
        (code, v["rules"][0]["id"].as_str()),
        (20, Some("no-secrets"))
    );
    let (code, v) = w.check(
        &json!({"name": "read_file", "arguments": {"path": "app.log"}}),
        &[],
    );
    assert_eq!((code, v["rules"][0]["id"].as_str()), (20, Some("no-logs")));
    // A policy file named there is the host's own: no call may change it.
    let (code, v) = w.check(
        &json!({"name": "write_file", "arguments": {"path": "policies/team.yaml", "content": "version: 1\n"}}),
        &[],
    );
    assert_eq!(code, 20, "{v}");
    assert_eq!(v["stage"], "sandbox", "{v}");

    // --policy wins over the file.
    let other = w.policy("other.yaml", "version: 1\ndefaults:\n  read_only: allow\n");
    let (code, v) = w.check(
        &json!({"name": "read_file", "arguments": {"path": "app.log"}}),
        &["--policy", &other],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");

    // Without builtin:default there, a project file nobody trusts cannot put the default out
    // of force: its list is added to it (issue 26).
    w.file("reasonix.yaml", "policies: [policies/team.yaml]\n");
    let ws = w.ws.to_str().unwrap();
    let call = read_env().to_string();
    let (code, _, stderr) = w.run(&["check", "--workspace", ws, &call], "");
    assert_eq!(code, 20, "{stderr}");
    // Trusted, the list replaces it, and text output says the default is not in force.
    w.trust();
    let (code, _, stderr) = w.run(&["check", "--workspace", ws, &call], "");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the policies: of reasonix.yaml replace it")
            && stderr.contains("add builtin:default to that list"),
        "{stderr}"
    );
    // A policy the file names that does not load is a configuration error with its place.
    w.file("reasonix.yaml", "policies: [policies/missing.yaml]\n");
    let (code, _, stderr) = w.run(&["check", "--workspace", ws, &call], "");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("policies/missing.yaml"), "{stderr}");
}

#[test]
fn show_default_prints_the_embedded_default_policy() {
    let w = World::new();
    let (code, stdout, _) = w.run(&["policy", "show-default"], "");
    assert_eq!(code, 0);
    let file = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/policies/default.yaml"
    ))
    .unwrap();
    assert_eq!(stdout, file);
}

/// The README's first command, as a user types it on a fresh clone, prints DENY for `.env`.
#[test]
fn the_readme_first_command_prints_deny_for_env() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let first = readme
        .lines()
        .find(|l| l.starts_with("cargo run -q -- check"))
        .unwrap();
    assert_eq!(
        first,
        r#"cargo run -q -- check --workspace examples/workspace '{"name":"read_file","arguments":{"path":".env"}}'"#
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args([
            "check",
            "--workspace",
            "examples/workspace",
            r#"{"name":"read_file","arguments":{"path":".env"}}"#,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env("HOME", std::env::temp_dir())
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(20), "{stdout}");
    assert!(stdout.starts_with("DENY    read_file"), "{stdout}");
}
