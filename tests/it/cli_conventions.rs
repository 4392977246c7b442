//! The command line's conventions, on the built binary (issue 17, items 3, 8 and 9): a closed
//! pipe stops every command quietly, logs go to stderr only, `--version` says what was built and
//! what the jail enforces here, completions, posture values in the help, `--max-steps 0`
//! refused, errors that say their cause once, and invalid verdicts that show a schema's shape.

use crate::common;

use std::process::{Command, Stdio};

use common::World;
use serde_json::Value;

fn reasonix() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reasonix"));
    c.env("NO_COLOR", "1").env_remove("RUST_LOG");
    c
}

/// Runs `reasonix` with its stdout a pipe whose reader is already gone: every write fails with
/// `EPIPE`. Returns the exit code and stderr.
fn with_closed_stdout(w: &World, args: &[&str]) -> (Option<i32>, String) {
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    let out = reasonix()
        .args(args)
        .current_dir(&w.outside)
        .env("HOME", &w.home)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn policies() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/policies").to_owned()
}

#[test]
fn every_listing_stops_quietly_on_a_closed_pipe() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let p = policies();
    for args in [
        vec!["policy", "test", p.as_str()],
        vec!["policy", "check", p.as_str()],
        vec!["policy", "show-default"],
        vec!["sandbox", "probe", "--workspace", ws.as_str()],
        vec!["completions", "bash"],
        vec!["completions", "zsh"],
        vec!["completions", "fish"],
        vec!["--version"],
    ] {
        let (code, stderr) = with_closed_stdout(&w, &args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?} said something: {stderr}");
    }
}

#[test]
fn a_closed_pipe_keeps_policy_tests_failing() {
    let w = World::new();
    let dir = w.root.join("suite");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("p.rego"),
        "package reasonix.p\nimport rego.v1\ntest_fails if false\n",
    )
    .unwrap();
    let (code, stderr) = with_closed_stdout(&w, &["policy", "test", dir.to_str().unwrap()]);
    assert_eq!(code, Some(1), "a failure is still a failure: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn version_names_the_commit_the_profile_and_what_the_jail_enforces_here() {
    let out = reasonix().arg("--version").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text.starts_with(concat!("reasonix ", env!("CARGO_PKG_VERSION"), "\n")),
        "{text}"
    );
    let commit = text
        .lines()
        .find_map(|l| l.strip_prefix("commit: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        commit == "unknown" || commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{commit}"
    );
    assert!(
        text.contains("profile: debug") || text.contains("profile: release"),
        "{text}"
    );
    let jail = text
        .lines()
        .find_map(|l| l.strip_prefix("jail here: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        jail.contains("Landlock") && jail.contains("seccomp"),
        "{jail}"
    );
    // The same from a subcommand, and `-V`.
    let sub = reasonix().args(["check", "--version"]).output().unwrap();
    assert_eq!(String::from_utf8(sub.stdout).unwrap(), text);
    let short = reasonix().arg("-V").output().unwrap();
    assert_eq!(String::from_utf8(short.stdout).unwrap(), text);
}

/// `--version` says what the jail enforces from the probe's answer kept for the next process,
/// as every other command does, rather than trying each part in every call (about 1 ms).
#[test]
fn version_keeps_the_probes_answer_for_the_next_process() {
    let w = World::new();
    let kept = w.home.join(".local/state/reasonix/probe.json");
    assert!(!kept.exists());
    let (code, stdout, stderr) = w.run(&["--version"], "");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("jail here: "), "{stdout}");
    assert!(kept.exists(), "no answer kept by --version");
    let (code, again, stderr) = w.run(&["--version"], "");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(again, stdout, "the kept answer says the same");
}

/// The unwinder is linked in (`build.rs`, issue 30): the executable does not load
/// `libgcc_s.so.1` at start (its constructor asks the CPU for its features, a trapped `cpuid`
/// on a virtual machine), and a panic still unwinds to the hook's exit 2
/// (`claude_hook::a_panic_exits_2_with_the_reason_on_stderr`).
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn the_executable_loads_no_libgcc_s() {
    if option_env!("REASONIX_STATIC_UNWIND") == Some("0") {
        return;
    }
    let out = Command::new("ldd")
        .arg(env!("CARGO_BIN_EXE_reasonix"))
        .output()
        .expect("ldd (Debian's libc-bin) lists what the dynamic linker loads");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("libc.so.6"), "{listed}");
    assert!(!listed.contains("libgcc_s"), "{listed}");
}

#[test]
fn completions_are_written_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef reasonix"),
        ("fish", "complete -c reasonix"),
    ] {
        let out = reasonix().args(["completions", shell]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(text.contains(marker), "{shell}: {text}");
        assert!(
            text.contains("show-default") && text.contains("posture"),
            "{shell}"
        );
    }
    let out = reasonix().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("possible values: bash, zsh, fish"),
        "{out:?}"
    );
}

#[test]
fn posture_help_lists_its_values() {
    let out = reasonix().args(["check", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for value in ["interactive:", "unattended:", "strict:"] {
        assert!(help.contains(value), "{value} missing from:\n{help}");
    }
    let out = reasonix().args(["check", "-h"]).output().unwrap();
    let short = String::from_utf8(out.stdout).unwrap();
    let short = short.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        short.contains("[possible values: interactive, unattended, strict]"),
        "{short}"
    );
}

#[test]
fn max_steps_zero_is_refused_on_the_command_line_and_in_reasonix_yaml() {
    let w = World::new();
    let script = w.root.join("s.json");
    std::fs::write(&script, "[]").unwrap();
    let provider = format!("script:{}", script.display());
    let ws = w.ws.to_str().unwrap();
    let (code, _, stderr) = w.run(
        &[
            "run",
            "--provider",
            &provider,
            "--workspace",
            ws,
            "--max-steps",
            "0",
            "go",
        ],
        "",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("must be at least 1"), "{stderr}");
    assert!(!w.ws.join(".reasonix").exists(), "nothing ran");

    std::fs::write(w.ws.join("reasonix.yaml"), "max_steps: 0\n").unwrap();
    let (code, _, stderr) = w.run(
        &["run", "--provider", &provider, "--workspace", ws, "go"],
        "",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("reasonix.yaml:1:") && stderr.contains("at least 1"),
        "{stderr}"
    );
}

#[test]
fn an_error_states_its_cause_once() {
    let w = World::new();
    let call = r#"{"name":"read_file","arguments":{"path":"a"}}"#;
    let file = w.root.join("a-file");
    std::fs::write(&file, "").unwrap();
    let (code, _, stderr) = w.run(&["check", "--workspace", file.to_str().unwrap(), call], "");
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.matches("not a folder").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for args in [
        vec!["check", "--policy", "/no/such.yaml", call],
        vec!["check", "--workspace", "/no/such/ws", call],
        vec!["policy", "test", "/no/such"],
        vec!["run", "--provider", "script:/no/such.json", "go"],
    ] {
        let (code, _, stderr) = w.run(&args, "");
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("No such file or directory").count(),
            1,
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn an_invalid_verdict_in_text_shows_the_schema_shape_not_its_json() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap();
    let (code, stdout, _) = w.run(
        &[
            "check",
            "--workspace",
            ws,
            r#"{"name":"read_file","arguments":{"path":7}}"#,
        ],
        "",
    );
    assert_eq!(code, 30);
    assert!(
        stdout.contains(r#"/path: 7 is not of type "string""#),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "schema  read_file {path: string length ≥1, limit?: integer ≥1, offset?: integer ≥1}"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("additionalProperties"), "{stdout}");
    assert!(stdout.lines().all(|l| l.len() < 200), "{stdout}");
    // JSON keeps the whole schema for programs and models.
    let (_, v) = w.check(
        &serde_json::json!({"name": "read_file", "arguments": {"path": 7}}),
        &[],
    );
    assert!(
        v["reasons"][0]
            .as_str()
            .unwrap()
            .contains("\"additionalProperties\":false"),
        "{v}"
    );
}

#[test]
fn logs_go_to_stderr_with_each_stage_s_duration_and_never_into_json() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap();
    let stdin = "{\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}}\n{\"name\":\"read_file\",\"arguments\":{\"path\":7}}\n";
    let (code, stdout, stderr) = w.run(
        &["-vv", "check", "--format", "json", "--workspace", ws],
        stdin,
    );
    assert_eq!(code, 30, "{stderr}");
    for line in stdout.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    assert_eq!(stdout.lines().count(), 2);
    let judged: Vec<&str> = stderr.lines().filter(|l| l.contains("judged")).collect();
    assert_eq!(judged.len(), 2, "{stderr}");
    assert!(judged[0].contains("call{"), "a span per call: {stderr}");
    for stage in [
        "validate_us=",
        "classify_us=",
        "resolve_us=",
        "policy_us=",
        "sandbox_us=",
        "approve_us=",
    ] {
        assert!(judged[0].contains(stage), "{stage}: {stderr}");
    }
    assert!(judged[0].contains("verdict=\"allow\""), "{stderr}");
    assert!(judged[1].contains("verdict=\"invalid\""), "{stderr}");
}

#[test]
fn rust_log_chooses_the_logs_and_quiet_silences_them() {
    let w = World::new();
    let call = r#"{"name":"read_file","arguments":{"path":"a"}}"#;
    let run = |args: &[&str], rust_log: Option<&str>| {
        let mut c = reasonix();
        c.args(args).arg("--workspace").arg(&w.ws).arg(call);
        if let Some(filter) = rust_log {
            c.env("RUST_LOG", filter);
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stderr).unwrap()
    };
    assert_eq!(run(&["check"], None), "", "warnings only by default");
    assert!(run(&["check"], Some("reasonix=debug")).contains("judged"));
    assert_eq!(run(&["check"], Some("reasonix=info")), "");
    assert_eq!(run(&["-q", "check"], Some("reasonix=debug")), "");
    assert!(run(&["-vv", "check"], Some("off")).contains("judged"));
}

/// The guide's walk-through, "Writing your first policy" (`docs/first-policy.md`), run as a
/// user copies it: from an empty folder to a passing `policy test`.
#[test]
fn the_guides_walk_through_ends_in_a_passing_policy_test() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/first-policy.md"))
            .unwrap();
    let section = readme
        .split("# Writing your first policy\n")
        .nth(1)
        .expect("the section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("\n```\n").next())
        .expect("its shell block");
    let w = World::new();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_reasonix"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(block)
        .current_dir(&w.outside)
        .env("PATH", path)
        .env("HOME", &w.home)
        .env("NO_COLOR", "1")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.is_empty(), "no warning, no notice: {stderr}");
    assert!(
        stdout.contains("rule    allow tests-run")
            && stdout.contains("rego    data.reasonix.team  votes: deny"),
        "{stdout}"
    );
    assert!(
        stdout.contains("DENY    read_file stage policy — no-secrets"),
        "{stdout}"
    );
    assert!(stdout.contains("ALLOW   bash stage policy"), "{stdout}");
    assert!(
        stdout
            .trim_end()
            .ends_with("ok Rego tests: 2 passed, 0 failed; cases: 4 passed, 0 failed"),
        "{stdout}"
    );
}
