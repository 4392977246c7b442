//! YAML policy semantics through the gate: precedence, the forms a path is matched in,
//! both ends of a move, effects, tools, and the strictness of allow.

use crate::common;

use common::{World, reasons};
use serde_json::{Value, json};

fn judge(w: &World, yaml: &str, call: Value) -> reasonix::Admission {
    w.yaml_gate(yaml)
        .admit_text(&call.to_string())
        .into_admission()
}

fn decisive(a: &reasonix::Admission) -> Vec<String> {
    a.rules
        .iter()
        .filter(|r| r.decisive)
        .map(|r| r.id.clone())
        .collect()
}

fn read(path: &str) -> Value {
    json!({"name":"read_file","arguments":{"path": path}})
}

fn write(path: &str) -> Value {
    json!({"name":"write_file","arguments":{"path": path, "content": ""}})
}

fn mv(from: &str, to: &str) -> Value {
    json!({"name":"move_file","arguments":{"source_path": from, "destination_path": to}})
}

const D: &str = "  - id: d\n    decision: deny\n    tools: [write_file]\n";
const A: &str = "  - id: k\n    decision: ask\n    tools: [write_file]\n";
const L: &str = "  - id: l\n    decision: allow\n    tools: [write_file]\n";

#[test]
fn precedence_deny_over_ask_over_allow_over_fallback_in_every_combination() {
    let w = World::new();
    // (rules present, fallback for writers, verdict, decisive rule ids)
    let cases: &[(&[&str], &str, &str, &[&str])] = &[
        (&[], "ask", "ask", &[]),
        (&[], "allow", "allow", &[]),
        (&[], "deny", "deny", &[]),
        (&[L], "deny", "allow", &["l"]),
        (&[A], "allow", "ask", &["k"]),
        (&[D], "allow", "deny", &["d"]),
        (&[L, A], "allow", "ask", &["k"]),
        (&[A, L], "allow", "ask", &["k"]),
        (&[L, D], "allow", "deny", &["d"]),
        (&[D, L], "allow", "deny", &["d"]),
        (&[A, D], "allow", "deny", &["d"]),
        (&[D, A], "allow", "deny", &["d"]),
        (&[L, A, D], "allow", "deny", &["d"]),
        (&[D, A, L], "allow", "deny", &["d"]),
    ];
    for (rules, fallback, want, want_rules) in cases {
        let yaml = format!(
            "version: 1\ndefaults:\n  writer: {fallback}\nrules:\n{}",
            rules.concat()
        );
        let yaml = if rules.is_empty() {
            yaml.replace("rules:\n", "")
        } else {
            yaml
        };
        let a = judge(&w, &yaml, write("x.txt"));
        assert_eq!(a.verdict.as_str(), *want, "{yaml}");
        assert_eq!(decisive(&a), *want_rules, "{yaml}");
        assert_eq!(a.fallback.is_some(), rules.is_empty(), "{yaml}");
    }
}

#[test]
fn overridden_rules_are_still_listed() {
    let w = World::new();
    let a = judge(&w, &format!("version: 1\nrules:\n{L}{D}"), write("x"));
    let all: Vec<(String, bool)> = a.rules.iter().map(|r| (r.id.clone(), r.decisive)).collect();
    assert_eq!(all, [("d".to_string(), true), ("l".to_string(), false)]);
}

const NO_ENV: &str =
    "version: 1\nrules:\n  - id: no-env\n    decision: deny\n    paths: [\"**/.env\"]\n";

#[test]
fn a_secret_is_denied_through_a_symlink_to_it() {
    let w = World::new();
    w.file(".env", "KEY=1");
    w.link("innocent.txt", ".env");
    let a = judge(&w, NO_ENV, read("innocent.txt"));
    assert_eq!(a.verdict.as_str(), "deny");
    assert_eq!(decisive(&a), ["no-env"]);
}

#[test]
fn a_symlink_named_like_a_secret_is_denied_as_itself() {
    let w = World::new();
    w.file("a.txt", "");
    w.link(".env", "a.txt");
    let a = judge(&w, NO_ENV, read(".env"));
    assert_eq!(a.verdict.as_str(), "deny");
}

#[test]
fn a_secret_folder_is_denied_through_a_linked_folder_and_by_the_link_name() {
    let w = World::new();
    w.file("vault/key", "k");
    w.link("cfg", "vault");
    let by_target =
        "version: 1\nrules:\n  - id: vault\n    decision: deny\n    paths: [\"vault/**\"]\n";
    assert_eq!(
        judge(&w, by_target, read("cfg/key")).verdict.as_str(),
        "deny"
    );
    let by_link = "version: 1\nrules:\n  - id: cfg\n    decision: deny\n    paths: [\"cfg/**\"]\n";
    assert_eq!(judge(&w, by_link, read("cfg/key")).verdict.as_str(), "deny");
    // And the secret is denied when written with `..` detours.
    assert_eq!(
        judge(&w, by_target, read("src/../vault/key"))
            .verdict
            .as_str(),
        "deny"
    );
}

#[test]
fn both_ends_of_a_move_are_judged() {
    let w = World::new();
    let no_lock =
        "version: 1\nrules:\n  - id: no-lock\n    decision: deny\n    paths: [\"*.lock\"]\n";
    assert_eq!(
        judge(&w, no_lock, mv("a.txt", "b.lock")).verdict.as_str(),
        "deny"
    );
    assert_eq!(
        judge(&w, no_lock, mv("x.lock", "y.txt")).verdict.as_str(),
        "deny"
    );
    assert_eq!(
        judge(&w, no_lock, mv("a.txt", "b.txt")).verdict.as_str(),
        "ask"
    );
}

const SRC_ONLY: &str =
    "version: 1\nrules:\n  - id: src\n    decision: allow\n    paths: [\"src/**\"]\n";

#[test]
fn allow_covers_only_when_every_form_of_every_path_matches() {
    let w = World::new();
    w.file("src/a.rs", "");
    w.file("other/x", "");
    w.link("src/escape", "../other");
    w.link("alias", "src");
    let cases = [
        (write("src/a.rs"), "allow"),
        (write("src/new/b.rs"), "allow"),
        (write("./src/a.rs"), "allow"),
        // Written under src/, lands outside it.
        (write("src/../b.rs"), "ask"),
        (write("src/escape/x"), "ask"),
        // `..` folds as text: this is written under src/ too.
        (write("other/../src/a.rs"), "allow"),
        // Lands in src/, but reached through a link named otherwise.
        (write("alias/a.rs"), "ask"),
        // One end of the move is outside the allowed paths.
        (mv("src/a.rs", "other/a.rs"), "ask"),
        (mv("other/x", "src/x"), "ask"),
        (mv("src/a.rs", "src/b.rs"), "allow"),
    ];
    for (call, want) in cases {
        let a = judge(&w, SRC_ONLY, call.clone());
        assert_eq!(a.verdict.as_str(), want, "{call}: {:?}", a.reasons);
    }
}

#[test]
fn effects_match_any_for_deny_and_all_for_allow() {
    let w = World::new();
    let no_delete = "version: 1\nrules:\n  - id: nd\n    decision: deny\n    effects: [delete]\n";
    assert_eq!(judge(&w, no_delete, mv("a", "b")).verdict.as_str(), "deny");
    assert_eq!(
        judge(
            &w,
            no_delete,
            json!({"name":"delete_file","arguments":{"path":"a"}})
        )
        .verdict
        .as_str(),
        "deny"
    );
    assert_eq!(judge(&w, no_delete, write("a")).verdict.as_str(), "ask");

    let allow_write = "version: 1\nrules:\n  - id: w\n    decision: allow\n    effects: [write]\n";
    assert_eq!(judge(&w, allow_write, write("a")).verdict.as_str(), "allow");
    assert_eq!(
        judge(&w, allow_write, mv("a", "b")).verdict.as_str(),
        "ask",
        "a move also deletes"
    );
    let allow_both =
        "version: 1\nrules:\n  - id: wd\n    decision: allow\n    effects: [write, delete]\n";
    assert_eq!(
        judge(&w, allow_both, mv("a", "b")).verdict.as_str(),
        "allow"
    );
}

#[test]
fn tool_globs_select_tools() {
    let w = World::new();
    let files = "version: 1\nrules:\n  - decision: deny\n    tools: [\"*_file\"]\n";
    let a = judge(&w, files, write("a"));
    assert_eq!(a.verdict.as_str(), "deny");
    assert_eq!(
        decisive(&a),
        ["rules[0]"],
        "a rule without id is named by its place"
    );
    assert_eq!(
        judge(
            &w,
            files,
            json!({"name":"grep","arguments":{"pattern":"x"}})
        )
        .verdict
        .as_str(),
        "allow"
    );
}

#[test]
fn no_allow_covers_a_bash_call_that_is_not_understood() {
    let w = World::new();
    let yaml = "version: 1\ndefaults:\n  writer: allow\n  read_only: allow\nrules:\n  - id: all\n    decision: allow\n    tools: [bash]\n    commands: [\"*\"]\n";
    for script in ["$CMD x", "{rm,-rf,/}", "ls 'unterminated", "eval ls"] {
        let a = judge(
            &w,
            yaml,
            json!({"name":"bash","arguments":{"command": script}}),
        );
        assert_eq!(a.verdict.as_str(), "ask", "{script}: {:?}", a.reasons);
    }
    // A deny still applies to it.
    let deny = "version: 1\nrules:\n  - id: no-bash\n    decision: deny\n    tools: [bash]\n";
    assert_eq!(
        judge(
            &w,
            deny,
            json!({"name":"bash","arguments":{"command":"$CMD x"}})
        )
        .verdict
        .as_str(),
        "deny"
    );
}

#[test]
fn a_deny_rule_outranks_the_sandbox_in_the_explanation() {
    let w = World::new();
    // Outside the workspace and matching a deny rule: the rule is named, at stage policy.
    let yaml = "version: 1\nrules:\n  - id: etc\n    decision: deny\n    paths: [\"/etc/**\"]\n";
    let a = judge(&w, yaml, read("/etc/hostname"));
    assert_eq!(
        (a.verdict.as_str(), a.stage),
        ("deny", reasonix::Stage::Policy)
    );
}

#[test]
fn home_patterns_follow_the_home_folder() {
    let w = World::new();
    std::fs::create_dir_all(w.home.join(".ssh")).unwrap();
    let p = w.policy(
        "home.yaml",
        "version: 1\nrules:\n  - id: ssh\n    decision: deny\n    paths: [\"~/.ssh/**\"]\n",
    );
    let (code, v) = w.check(&read("~/.ssh/id_ed25519"), &["--policy", &p]);
    assert_eq!(code, 20);
    assert_eq!(v["stage"], "policy");
    assert_eq!(v["rules"][0]["id"], "ssh");
    // A symlink in the workspace to the home's .ssh folder is caught the same way.
    w.link("keys", w.home.join(".ssh"));
    let (_, v) = w.check(&read("keys/id_ed25519"), &["--policy", &p]);
    assert_eq!(v["rules"][0]["id"], "ssh", "{}", reasons(&v));
}

#[test]
fn the_embedded_default_is_sensible_for_a_developer() {
    let w = World::new();
    let cases = [
        (read("src/main.rs"), "allow"),
        (
            json!({"name":"grep","arguments":{"pattern":"TODO"}}),
            "allow",
        ),
        (write("src/main.rs"), "ask"),
        (
            json!({"name":"bash","arguments":{"command":"cargo test"}}),
            "ask",
        ),
        (read(".env"), "deny"),
        (read("config/.env.production"), "deny"),
        (read("certs/server.key"), "deny"),
        (write(".git/hooks/pre-commit"), "ask"),
    ];
    let default = reasonix::policy::DEFAULT_POLICY;
    for (call, want) in cases {
        let a = judge(&w, default, call.clone());
        assert_eq!(a.verdict.as_str(), want, "{call}: {:?}", a.reasons);
    }
}

// Issue 17, item 5: `except:` states precedence within a rule. A rule applies unless the call
// matches its except; the except of a deny or ask rule must cover the whole call (as an allow
// does), the except of an allow rule withdraws it when any part matches (as a deny does).

fn bash(command: &str) -> Value {
    json!({"name":"bash","arguments":{"command": command}})
}

fn list(path: &str) -> Value {
    json!({"name":"list_dir","arguments":{"path": path}})
}

/// Whether rule `r` voted on the call.
fn voted(a: &reasonix::Admission) -> bool {
    a.rules.iter().any(|h| h.id == "r")
}

fn rule_with_except(decision: &str, condition: &str, except: &str) -> String {
    format!(
        "version: 1\ndefaults:\n  read_only: allow\n  writer: ask\nrules:\n  - id: r\n    decision: {decision}\n{condition}    except: {except}\n"
    )
}

#[test]
fn except_tools_exempts_a_tool_for_deny_ask_and_allow() {
    let w = World::new();
    w.file("secret/x", "s");
    for decision in ["deny", "ask", "allow"] {
        let yaml = rule_with_except(
            decision,
            "    paths: [\"secret/**\"]\n",
            "{tools: [list_dir]}",
        );
        let exempt = judge(&w, &yaml, list("secret"));
        assert!(!voted(&exempt), "{decision}: {:?}", exempt.rules);
        let applies = judge(&w, &yaml, read("secret/x"));
        assert!(voted(&applies), "{decision}: {:?}", applies.rules);
        assert_eq!(applies.verdict.as_str(), decision);
    }
}

#[test]
fn except_paths_on_deny_and_ask_must_cover_every_path_but_on_allow_any_path_withdraws_it() {
    let w = World::new();
    w.file("config/public/a", "a");
    w.file("config/private/b", "b");
    for decision in ["deny", "ask"] {
        let yaml = rule_with_except(
            decision,
            "    paths: [\"config/**\"]\n",
            "{paths: [\"config/public/**\"]}",
        );
        let exempt = judge(&w, &yaml, read("config/public/a"));
        assert!(!voted(&exempt), "{decision}: {:?}", exempt.rules);
        assert_eq!(exempt.verdict.as_str(), "allow", "{decision}");
        let applies = judge(&w, &yaml, read("config/private/b"));
        assert_eq!(applies.verdict.as_str(), decision);
        // One path the except covers and one it does not: the rule applies.
        let both = judge(&w, &yaml, bash("cat config/public/a config/private/b"));
        assert!(voted(&both), "{decision}: {:?}", both.rules);
        assert_eq!(both.verdict.as_str(), decision);
        let moved = judge(&w, &yaml, mv("config/public/a", "config/private/a"));
        assert!(voted(&moved), "{decision}: a move touches both ends");
    }
    let yaml = rule_with_except(
        "allow",
        "    tools: [write_file, move_file]\n    paths: [\"config/**\"]\n",
        "{paths: [\"config/public/**\"]}",
    );
    assert_eq!(
        judge(&w, &yaml, write("config/x")).verdict.as_str(),
        "allow"
    );
    let withdrawn = judge(&w, &yaml, write("config/public/a"));
    assert!(!voted(&withdrawn), "{:?}", withdrawn.rules);
    assert_eq!(withdrawn.verdict.as_str(), "ask", "the fallback decides");
    let moved = judge(&w, &yaml, mv("config/x", "config/public/x"));
    assert!(!voted(&moved), "one end is enough to withdraw an allow");
}

#[test]
fn except_commands_on_deny_and_ask_must_cover_every_command_but_on_allow_any_command_withdraws_it()
{
    let w = World::new();
    for decision in ["deny", "ask"] {
        let yaml = rule_with_except(
            decision,
            "    tools: [bash]\n    commands: [\"git *\"]\n",
            "{commands: [\"git status\", \"git log *\"]}",
        );
        for exempt in ["git status", "git log --oneline", "git status && git log"] {
            let a = judge(&w, &yaml, bash(exempt));
            assert!(!voted(&a), "{decision} {exempt}: {:?}", a.rules);
        }
        for applies in ["git push", "git status && git push", "git log $REF"] {
            let a = judge(&w, &yaml, bash(applies));
            assert!(voted(&a), "{decision} {applies}: {:?}", a.rules);
            assert_eq!(a.verdict.as_str(), decision, "{applies}");
        }
    }
    let yaml = rule_with_except(
        "allow",
        "    tools: [bash]\n    commands: [\"git *\"]\n",
        "{commands: [\"git push *\"]}",
    );
    assert_eq!(
        judge(&w, &yaml, bash("git status")).verdict.as_str(),
        "allow"
    );
    for withdrawn in [
        "git push origin",
        "git status; git push",
        "/usr/bin/git push",
    ] {
        let a = judge(&w, &yaml, bash(withdrawn));
        assert!(!voted(&a), "{withdrawn}: {:?}", a.rules);
        assert_eq!(a.verdict.as_str(), "ask", "{withdrawn}");
    }
}

#[test]
fn except_conditions_must_all_hold() {
    let w = World::new();
    let yaml = rule_with_except(
        "deny",
        "    paths: [\"data/**\"]\n",
        "{tools: [read_file], paths: [\"data/open/**\"]}",
    );
    assert!(!voted(&judge(&w, &yaml, read("data/open/a"))));
    assert!(voted(&judge(&w, &yaml, read("data/closed/a"))));
    assert!(voted(&judge(&w, &yaml, write("data/open/a"))));
}

/// The issue's case: an ask on the network and an allow of `cargo test *`. Cargo may fetch, so
/// `cargo test` has the network effect and the ask wins — unless the ask says it does not apply.
#[test]
fn an_ask_on_the_network_with_an_except_lets_cargo_test_be_allowed() {
    let w = World::new();
    let without = "version: 1\nrules:\n  - decision: ask\n    effects: [network]\n  - id: tests\n    decision: allow\n    tools: [bash]\n    commands: [\"cargo test *\"]\n";
    let a = judge(&w, without, bash("cargo test"));
    assert_eq!(a.verdict.as_str(), "ask", "{:?}", a.reasons);
    assert!(a.effects.contains(&reasonix::Effect::Network));

    let with = "version: 1\nrules:\n  - id: net\n    decision: ask\n    effects: [network]\n    except:\n      commands: [\"cargo test *\"]\n  - id: tests\n    decision: allow\n    tools: [bash]\n    commands: [\"cargo test *\"]\n";
    let a = judge(&w, with, bash("cargo test --all"));
    assert_eq!(a.verdict.as_str(), "allow", "{:?}", a.reasons);
    assert_eq!(decisive(&a), ["tests"]);
    for still_asks in [
        "cargo build",
        "cargo test && curl https://example.com",
        "cargo test $ARGS",
    ] {
        let a = judge(&w, with, bash(still_asks));
        assert_eq!(a.verdict.as_str(), "ask", "{still_asks}: {:?}", a.reasons);
    }
}

#[test]
fn grep_does_not_withhold_what_an_except_exempts() {
    let w = World::new();
    w.file(".env", "TOKEN=1\n");
    w.file(".env.example", "TOKEN=\n");
    let yaml = "version: 1\nrules:\n  - id: secrets\n    decision: deny\n    paths: [\".env*\"]\n    except: {paths: [\".env.example\"]}\n";
    let gate = w.yaml_gate(yaml);
    let call = json!({"name":"grep","arguments":{"pattern":"TOKEN", "path": "."}});
    let reasonix::Judgement::Allowed(admitted) = gate.admit_text(&call.to_string()) else {
        panic!("grep is allowed");
    };
    let out = common::execute(admitted).unwrap();
    assert!(out.text.contains(".env.example"), "{}", out.text);
    assert!(!out.text.contains("TOKEN=1"), "{}", out.text);
    assert!(
        out.text.contains("withheld by policy: secrets"),
        "{}",
        out.text
    );
}

#[test]
fn a_malformed_except_is_a_load_error() {
    for (except, needle) in [
        ("{}", "an empty except"),
        ("{effects: [read]}", "unknown field `effects`"),
        ("{paths: []}", "empty list"),
        ("{commands: [\"\"]}", "command name"),
    ] {
        let yaml = format!("version: 1\nrules:\n  - decision: deny\n    except: {except}\n");
        let e = reasonix::PolicySet::from_yaml("p.yaml", &yaml).unwrap_err();
        let e = e.to_string();
        assert!(e.contains(needle) && e.contains("p.yaml:"), "{except}: {e}");
    }
}
