//! Path confinement on the built binary, over a temporary workspace with real symlinks.
//!
//! Each row is a call, the verdict and stage it must get, and (for most) where its first path
//! must resolve. Escapes must be denied at stage `sandbox`; the legitimate forms must pass
//! (reads fall back to allow, writes to ask under the embedded default policy).

use crate::common;

use common::{World, reasons};
use serde_json::Value;

/// The world every row runs in.
///
/// ```text
/// ws/a.txt  ws/b.txt  ws/inner/c.txt
/// ws/link_in -> inner              ws/link_file_in -> a.txt
/// ws/link_abs_in -> <ws>/inner/c.txt
/// ws/link_out -> <outside>         ws/link_file_out -> <outside>/secret.txt
/// ws/dangling_out -> <outside>/new.txt   ws/dangling_in -> new_inside.txt
/// ws/proc_link -> /proc/self/root  ws/chain1 -> chain2 -> link_out
/// ws/loop1 <-> ws/loop2            ws/inner/up -> ../..  (the workspace's parent)
/// <root>/ws-evil/x.txt             <outside>/secret.txt  <home>/secret
/// ```
fn world() -> World {
    let w = World::new();
    w.file("a.txt", "a\n");
    w.file("b.txt", "b\n");
    w.file("inner/c.txt", "c\n");
    std::fs::write(w.outside.join("secret.txt"), "secret\n").unwrap();
    std::fs::write(w.home.join("secret"), "secret\n").unwrap();
    std::fs::create_dir_all(w.root.join("ws-evil")).unwrap();
    std::fs::write(w.root.join("ws-evil/x.txt"), "x\n").unwrap();
    w.link("link_in", "inner");
    w.link("link_file_in", "a.txt");
    w.link("link_abs_in", w.ws.join("inner/c.txt"));
    w.link("link_out", &w.outside);
    w.link("link_file_out", w.outside.join("secret.txt"));
    w.link("dangling_out", w.outside.join("new.txt"));
    w.link("dangling_in", "new_inside.txt");
    w.link("proc_link", "/proc/self/root");
    w.link("chain2", "link_out");
    w.link("chain1", "chain2");
    w.link("loop1", "loop2");
    w.link("loop2", "loop1");
    w.link("inner/up", "../..");
    w
}

/// `(call, verdict, stage, resolved first path or "")`. `{ws}`, `{out}`, `{root}` are
/// replaced by the world's folders.
const CASES: &[(&str, &str, &str, &str)] = &[
    // --- legitimate reads: allowed by the read-only fallback ---
    (
        r#"{"name":"read_file","arguments":{"path":"a.txt"}}"#,
        "allow",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"./a.txt"}}"#,
        "allow",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"inner/../b.txt"}}"#,
        "allow",
        "policy",
        "{ws}/b.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"inner/./c.txt"}}"#,
        "allow",
        "policy",
        "{ws}/inner/c.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"inner//c.txt"}}"#,
        "allow",
        "policy",
        "{ws}/inner/c.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"link_in/c.txt"}}"#,
        "allow",
        "policy",
        "{ws}/inner/c.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"link_file_in"}}"#,
        "allow",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"link_abs_in"}}"#,
        "allow",
        "policy",
        "{ws}/inner/c.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"{ws}/a.txt"}}"#,
        "allow",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"{ws}/../ws/a.txt"}}"#,
        "allow",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"not_yet.txt"}}"#,
        "allow",
        "policy",
        "{ws}/not_yet.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"dangling_in"}}"#,
        "allow",
        "policy",
        "{ws}/new_inside.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"link_in/../a.txt"}}"#,
        "allow",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"list_dir","arguments":{"path":"."}}"#,
        "allow",
        "policy",
        "{ws}",
    ),
    (
        r#"{"name":"list_dir","arguments":{"path":"link_in"}}"#,
        "allow",
        "policy",
        "{ws}/inner",
    ),
    (
        r#"{"name":"glob","arguments":{"pattern":"inner/*.txt"}}"#,
        "allow",
        "policy",
        "{ws}/inner",
    ),
    (
        r#"{"name":"glob","arguments":{"pattern":"**/*.txt"}}"#,
        "allow",
        "policy",
        "{ws}",
    ),
    (
        r#"{"name":"grep","arguments":{"pattern":"c","path":"inner"}}"#,
        "allow",
        "policy",
        "{ws}/inner",
    ),
    (
        r#"{"name":"grep","arguments":{"pattern":"c"}}"#,
        "allow",
        "policy",
        "{ws}",
    ),
    // --- legitimate writes: asked about by the writer fallback ---
    (
        r#"{"name":"write_file","arguments":{"path":"new/deep/f.txt","content":""}}"#,
        "ask",
        "policy",
        "{ws}/new/deep/f.txt",
    ),
    (
        r#"{"name":"write_file","arguments":{"path":"link_in/new.txt","content":""}}"#,
        "ask",
        "policy",
        "{ws}/inner/new.txt",
    ),
    (
        r#"{"name":"write_file","arguments":{"path":"dangling_in","content":""}}"#,
        "ask",
        "policy",
        "{ws}/new_inside.txt",
    ),
    (
        r#"{"name":"edit_file","arguments":{"path":"inner/../a.txt","old_string":"a","new_string":"b"}}"#,
        "ask",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"move_file","arguments":{"source_path":"a.txt","destination_path":"inner/a2.txt"}}"#,
        "ask",
        "policy",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"delete_file","arguments":{"path":"link_in/c.txt"}}"#,
        "ask",
        "policy",
        "{ws}/inner/c.txt",
    ),
    // --- escapes: denied by the sandbox stage ---
    (
        r#"{"name":"read_file","arguments":{"path":"../outside/secret.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"inner/../../outside/secret.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"../../../../../../../../etc/hostname"}}"#,
        "deny",
        "sandbox",
        "/etc/hostname",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"/etc/hostname"}}"#,
        "deny",
        "sandbox",
        "/etc/hostname",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"{out}/secret.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"link_out/secret.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"link_file_out"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"chain1/secret.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"inner/up/outside/secret.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"write_file","arguments":{"path":"dangling_out","content":"x"}}"#,
        "deny",
        "sandbox",
        "{out}/new.txt",
    ),
    (
        r#"{"name":"write_file","arguments":{"path":"link_out/planted","content":"x"}}"#,
        "deny",
        "sandbox",
        "{out}/planted",
    ),
    (
        r#"{"name":"write_file","arguments":{"path":"missing/../link_out/p","content":"x"}}"#,
        "deny",
        "sandbox",
        "{out}/p",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"proc_link/etc/hostname"}}"#,
        "deny",
        "sandbox",
        "/etc/hostname",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"/proc/self/root/etc/hostname"}}"#,
        "deny",
        "sandbox",
        "/etc/hostname",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"/proc/self/cwd/secret.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"../ws-evil/x.txt"}}"#,
        "deny",
        "sandbox",
        "{root}/ws-evil/x.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"{ws}-evil/x.txt"}}"#,
        "deny",
        "sandbox",
        "{root}/ws-evil/x.txt",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"~/secret"}}"#,
        "deny",
        "sandbox",
        "{root}/home/secret",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"loop1"}}"#,
        "deny",
        "sandbox",
        "",
    ),
    (
        r#"{"name":"write_file","arguments":{"path":".","content":"x"}}"#,
        "deny",
        "sandbox",
        "{ws}",
    ),
    (
        r#"{"name":"delete_file","arguments":{"path":"{ws}"}}"#,
        "deny",
        "sandbox",
        "{ws}",
    ),
    (
        r#"{"name":"move_file","arguments":{"source_path":"a.txt","destination_path":"../outside/a.txt"}}"#,
        "deny",
        "sandbox",
        "{ws}/a.txt",
    ),
    (
        r#"{"name":"move_file","arguments":{"source_path":"link_out/secret.txt","destination_path":"stolen.txt"}}"#,
        "deny",
        "sandbox",
        "{out}/secret.txt",
    ),
    (
        r#"{"name":"list_dir","arguments":{"path":"link_out"}}"#,
        "deny",
        "sandbox",
        "{out}",
    ),
    (
        r#"{"name":"list_dir","arguments":{"path":".."}}"#,
        "deny",
        "sandbox",
        "{root}",
    ),
    (
        r#"{"name":"glob","arguments":{"pattern":"../outside/*"}}"#,
        "deny",
        "sandbox",
        "{out}",
    ),
    (
        r#"{"name":"glob","arguments":{"pattern":"/etc/**/*.conf"}}"#,
        "deny",
        "sandbox",
        "/etc",
    ),
    (
        r#"{"name":"glob","arguments":{"pattern":"*","path":"link_out"}}"#,
        "deny",
        "sandbox",
        "{out}",
    ),
    (
        r#"{"name":"grep","arguments":{"pattern":"secret","path":"link_out"}}"#,
        "deny",
        "sandbox",
        "{out}",
    ),
    (
        r#"{"name":"grep","arguments":{"pattern":"root","path":"/etc/passwd"}}"#,
        "deny",
        "sandbox",
        "/etc/passwd",
    ),
    // --- malformed paths: invalid, nothing resolved ---
    (
        r#"{"name":"read_file","arguments":{"path":""}}"#,
        "invalid",
        "validate",
        "",
    ),
    (
        r#"{"name":"read_file","arguments":{"path":"a\u0000b"}}"#,
        "invalid",
        "validate",
        "",
    ),
    (
        r#"{"name":"glob","arguments":{"pattern":"*/../../outside/*"}}"#,
        "invalid",
        "validate",
        "",
    ),
];

fn fill(template: &str, w: &World) -> String {
    template
        .replace("{ws}", w.ws.to_str().unwrap())
        .replace("{out}", w.outside.to_str().unwrap())
        .replace("{root}", w.root.to_str().unwrap())
}

#[test]
fn every_path_case_gets_its_verdict_stage_and_resolution() {
    assert!(CASES.len() >= 30);
    let w = world();
    let stdin: String = CASES.iter().map(|c| fill(c.0, &w) + "\n").collect();
    let (_, verdicts) = w.check_lines(&stdin, &[]);
    assert_eq!(
        verdicts.len(),
        CASES.len(),
        "one verdict per call, in order"
    );
    let mut failures = Vec::new();
    for ((call, verdict, stage, resolved), got) in CASES.iter().zip(&verdicts) {
        let call = fill(call, &w);
        let resolved = fill(resolved, &w);
        let got_path = got["paths"][0]["path"].as_str().unwrap_or("");
        if got["verdict"] != *verdict
            || got["stage"] != *stage
            || (!resolved.is_empty() && got_path != resolved)
        {
            failures.push(format!(
                "{call}\n  want {verdict} at {stage} resolving to {resolved:?}\n  got  {} at {} resolving to {got_path:?}: {}",
                got["verdict"], got["stage"], reasons(got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn sandbox_denials_say_where_the_path_really_goes() {
    let w = world();
    let call: Value =
        serde_json::json!({"name":"read_file","arguments":{"path":"link_out/secret.txt"}});
    let (code, v) = w.check(&call, &[]);
    assert_eq!(code, 20);
    let why = reasons(&v);
    assert!(why.contains("outside the workspace"), "{why}");
    assert!(
        why.contains(&w.outside.join("secret.txt").display().to_string()),
        "{why}"
    );
    assert_eq!(
        v["paths"][0]["symlinks"][0],
        w.ws.join("link_out").to_str().unwrap()
    );
    assert_eq!(v["paths"][0]["inside_workspace"], false);
}

#[test]
fn a_symlink_loop_is_denied_as_unresolvable() {
    let w = world();
    let (_, v) = w.check(
        &serde_json::json!({"name":"read_file","arguments":{"path":"loop1"}}),
        &[],
    );
    assert!(
        reasons(&v).contains("too many levels of symbolic links"),
        "{}",
        reasons(&v)
    );
}

#[test]
fn writing_the_workspace_root_itself_is_refused_with_a_reason() {
    let w = world();
    let (_, v) = w.check(
        &serde_json::json!({"name":"delete_file","arguments":{"path":"."}}),
        &[],
    );
    assert_eq!(v["verdict"], "deny");
    assert!(
        reasons(&v).contains("root folder itself"),
        "{}",
        reasons(&v)
    );
}
