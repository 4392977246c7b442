//! The builtin tools executed through the gate, under a policy that allows everything, so only
//! the tools' own behaviour is under test.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use common::{ALLOW_ALL, World};
use reasonix::{Gate, Judgement, PolicySet, Posture};
use serde_json::{Value, json};

fn gate(w: &World) -> Gate {
    w.yaml_gate(ALLOW_ALL)
}

/// Runs a call that must be admitted; returns the tool's text or its error message.
fn run(gate: &Gate, name: &str, args: Value) -> Result<String, String> {
    let call = json!({"name": name, "arguments": args}).to_string();
    match gate.admit_text(&call) {
        Judgement::Allowed(a) => common::execute(a)
            .map(|o| o.text)
            .map_err(|e| e.to_string()),
        other => panic!("{call} was not admitted: {:?}", other.admission()),
    }
}

fn leftovers(w: &World, dir: &str) -> Vec<String> {
    std::fs::read_dir(w.ws.join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("reasonix-tmp"))
        .collect()
}

#[test]
fn write_file_creates_folders_and_leaves_no_temporary_file() {
    let w = World::new();
    let g = gate(&w);
    let out = run(
        &g,
        "write_file",
        json!({"path":"a/b/c.txt","content":"hello"}),
    )
    .unwrap();
    assert_eq!(out, "wrote 5 bytes to a/b/c.txt");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("a/b/c.txt")).unwrap(),
        "hello"
    );
    assert!(leftovers(&w, "a/b").is_empty());
}

#[test]
fn write_file_replaces_by_rename_and_keeps_the_mode() {
    let w = World::new();
    let p = w.file("run.sh", "old");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o750)).unwrap();
    let inode_before = std::fs::metadata(&p).unwrap().ino();
    let g = gate(&w);
    run(&g, "write_file", json!({"path":"run.sh","content":"new"})).unwrap();
    let meta = std::fs::metadata(&p).unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750);
    assert_ne!(
        meta.ino(),
        inode_before,
        "a new file was renamed into place, not truncated in place"
    );
    assert!(leftovers(&w, ".").is_empty());
}

#[test]
fn write_file_onto_a_folder_fails_and_changes_nothing() {
    let w = World::new();
    w.file("d/x", "x");
    let g = gate(&w);
    let err = run(&g, "write_file", json!({"path":"d","content":"new"})).unwrap_err();
    assert!(err.contains("directory"), "{err}");
    assert!(w.ws.join("d/x").exists());
}

#[test]
fn edit_file_needs_a_unique_match_unless_replace_all() {
    let w = World::new();
    w.file("f.txt", "one two two\n");
    let g = gate(&w);
    let err = run(
        &g,
        "edit_file",
        json!({"path":"f.txt","old_string":"two","new_string":"2"}),
    )
    .unwrap_err();
    assert!(err.contains("occurs 2 times"), "{err}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("f.txt")).unwrap(),
        "one two two\n"
    );

    let err = run(
        &g,
        "edit_file",
        json!({"path":"f.txt","old_string":"three","new_string":"3"}),
    )
    .unwrap_err();
    assert!(err.contains("not found"), "{err}");

    run(
        &g,
        "edit_file",
        json!({"path":"f.txt","old_string":"one","new_string":"1"}),
    )
    .unwrap();
    let out = run(
        &g,
        "edit_file",
        json!({"path":"f.txt","old_string":"two","new_string":"2","replace_all":true}),
    )
    .unwrap();
    assert!(out.contains("replaced 2 occurrences"), "{out}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("f.txt")).unwrap(),
        "1 2 2\n"
    );
}

#[test]
fn edit_file_keeps_crlf_line_endings_and_mode() {
    let w = World::new();
    let p = w.file("win.txt", "a\r\nb\r\nc\r\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let g = gate(&w);
    run(
        &g,
        "edit_file",
        json!({"path":"win.txt","old_string":"a\nb","new_string":"x\ny\nz"}),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "x\r\ny\r\nz\r\nc\r\n");
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
        0o600
    );
}

#[test]
fn edit_file_that_changes_nothing_is_invalid() {
    let w = World::new();
    w.file("f.txt", "x");
    let g = gate(&w);
    let call =
        json!({"name":"edit_file","arguments":{"path":"f.txt","old_string":"x","new_string":"x"}});
    let j = g.admit_text(&call.to_string());
    assert_eq!(j.admission().verdict, reasonix::Verdict::Invalid);
    assert!(j.admission().reasons[0].contains("would change nothing"));
}

#[test]
fn move_file_moves_and_never_replaces() {
    let w = World::new();
    w.file("a.txt", "a");
    w.file("b.txt", "b");
    let g = gate(&w);
    let err = run(
        &g,
        "move_file",
        json!({"source_path":"a.txt","destination_path":"b.txt"}),
    )
    .unwrap_err();
    assert!(err.contains("exists"), "{err}");
    assert_eq!(std::fs::read_to_string(w.ws.join("b.txt")).unwrap(), "b");
    run(
        &g,
        "move_file",
        json!({"source_path":"a.txt","destination_path":"sub/a.txt"}),
    )
    .unwrap();
    assert!(!w.ws.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(w.ws.join("sub/a.txt")).unwrap(),
        "a"
    );
}

#[test]
fn delete_file_removes_files_but_not_folders() {
    let w = World::new();
    w.file("d/x", "x");
    let g = gate(&w);
    assert!(run(&g, "delete_file", json!({"path":"d"})).is_err());
    assert!(w.ws.join("d/x").exists());
    run(&g, "delete_file", json!({"path":"d/x"})).unwrap();
    assert!(!w.ws.join("d/x").exists());
}

#[test]
fn read_file_returns_a_window_of_lines() {
    let w = World::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    w.file("ten.txt", &text);
    let g = gate(&w);
    assert_eq!(
        run(&g, "read_file", json!({"path":"ten.txt"})).unwrap(),
        text
    );
    let window = run(
        &g,
        "read_file",
        json!({"path":"ten.txt","offset":3,"limit":2}),
    )
    .unwrap();
    assert!(window.starts_with("line 3\nline 4\n"), "{window}");
    assert!(window.contains("showing lines 3-4 of 10"), "{window}");
}

#[test]
fn read_file_does_not_dump_binary_files() {
    let w = World::new();
    std::fs::write(w.ws.join("b.bin"), [0u8, 1, 2, 3]).unwrap();
    let g = gate(&w);
    let out = run(&g, "read_file", json!({"path":"b.bin"})).unwrap();
    assert!(out.contains("binary file (4 bytes)"), "{out}");
}

#[test]
fn a_fifo_is_refused_by_the_file_tools_that_read_not_waited_on() {
    let w = World::new();
    nix::unistd::mkfifo(
        &w.ws.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    w.file("notes.txt", "TOKEN here\n");
    // Each call runs on a thread of its own: opening a FIFO for reading waits for a writer, so
    // a tool that opened it as a file would never return.
    let (tx, rx) = std::sync::mpsc::channel();
    let g = gate(&w);
    std::thread::spawn(move || {
        let read = run(&g, "read_file", json!({"path":"pipe"}));
        let edit = run(
            &g,
            "edit_file",
            json!({"path":"pipe","old_string":"a","new_string":"b"}),
        );
        let grep = run(&g, "grep", json!({"pattern":"TOKEN","path":"."}));
        let _ = tx.send((read, edit, grep));
    });
    let (read, edit, grep) = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("a file tool waited on a FIFO");
    let read = read.unwrap_err();
    assert!(read.contains("not a regular file"), "{read}");
    assert!(edit.is_err(), "{edit:?}");
    // A search of the folder reads the file beside it and passes the FIFO by.
    assert_eq!(grep.unwrap(), "notes.txt:1:TOKEN here");
}

#[test]
fn list_dir_marks_folders_and_symlinks() {
    let w = World::new();
    w.file("z.txt", "");
    w.file("d/x", "");
    w.link("l", "z.txt");
    let g = gate(&w);
    assert_eq!(
        run(&g, "list_dir", json!({"path":"."})).unwrap(),
        "d/\nl -> z.txt\nz.txt\n"
    );
}

#[test]
fn glob_matches_below_the_folder_and_star_stays_in_one_folder() {
    let w = World::new();
    w.file("src/main.rs", "");
    w.file("src/a/lib.rs", "");
    w.file("README.md", "");
    w.file(".git/config", "");
    let g = gate(&w);
    assert_eq!(
        run(&g, "glob", json!({"pattern":"src/*.rs"})).unwrap(),
        "src/main.rs"
    );
    assert_eq!(
        run(&g, "glob", json!({"pattern":"**/*.rs"})).unwrap(),
        "src/a/lib.rs\nsrc/main.rs"
    );
    let none = run(&g, "glob", json!({"pattern":"**/config"})).unwrap();
    assert!(
        none.starts_with("no paths match"),
        ".git is skipped: {none}"
    );
}

#[test]
fn grep_finds_lines_and_never_follows_links_out() {
    let w = World::new();
    w.file("a.rs", "fn main() {}\nlet TOKEN = 1;\n");
    w.file("b.md", "TOKEN in docs\n");
    std::fs::write(w.outside.join("secret.txt"), "TOKEN=outside\n").unwrap();
    w.link("link_dir", &w.outside);
    w.link("link_file", w.outside.join("secret.txt"));
    let g = gate(&w);
    let out = run(&g, "grep", json!({"pattern":"TOKEN"})).unwrap();
    assert_eq!(out, "a.rs:2:let TOKEN = 1;\nb.md:1:TOKEN in docs");
    let only_rs = run(&g, "grep", json!({"pattern":"TOKEN","glob":"*.rs"})).unwrap();
    assert_eq!(only_rs, "a.rs:2:let TOKEN = 1;");
    let one_file = run(&g, "grep", json!({"pattern":"main","path":"a.rs"})).unwrap();
    assert_eq!(one_file, "a.rs:1:fn main() {}");
}

#[test]
fn a_bad_regular_expression_is_invalid() {
    let w = World::new();
    let g = gate(&w);
    let j = g.admit_text(r#"{"name":"grep","arguments":{"pattern":"(unclosed"}}"#);
    assert_eq!(j.admission().verdict, reasonix::Verdict::Invalid);
    assert!(j.admission().reasons[0].contains("bad regular expression"));
}

#[test]
fn bash_runs_in_the_workspace_and_reports_its_status_and_output() {
    let w = World::new();
    let g = gate(&w);
    let j = g.admit_text(r#"{"name":"bash","arguments":{"command":"touch made && echo out && echo err >&2 && exit 4"}}"#);
    let Judgement::Allowed(admitted) = j else {
        panic!("an analysed writer under writer: allow is allowed")
    };
    let out = common::execute(admitted).unwrap();
    assert_eq!(out.exit_code, Some(4));
    // Then what became of its changes (issue 25): observed on its overlay, judged, applied.
    assert_eq!(
        out.text,
        "exit status 4\n--- stdout ---\nout\n--- stderr ---\nerr\n--- reasonix ---\n1 change observed and applied:\n  created made (file, 0 bytes, mode 0644)\n"
    );
    assert!(w.ws.join("made").exists());
}

#[test]
fn bash_timeout_ms_is_honoured() {
    let w = World::new();
    let g = gate(&w);
    let j = g.admit_text(r#"{"name":"bash","arguments":{"command":"sleep 30","timeout_ms":300}}"#);
    let Judgement::Allowed(admitted) = j else {
        panic!("allowed")
    };
    let started = std::time::Instant::now();
    let out = common::execute(admitted).unwrap();
    assert_eq!(out.exit_code, Some(124));
    assert!(out.text.starts_with("timed out after"), "{}", out.text);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn grep_does_not_read_files_a_deny_rule_protects() {
    let w = World::new();
    w.file("src/app.rs", "let key = env(\"TOKEN\");\n");
    w.file(".env", "TOKEN=hunter2\n");
    w.file("config/prod.env/.env", "TOKEN=prod\n");
    w.file("certs/server.pem", "TOKEN in a pem\n");
    let g = w.gate(&PolicySet::embedded_default(), Posture::Interactive);
    let out = run(&g, "grep", json!({"pattern":"TOKEN"})).unwrap();
    assert!(
        !out.contains("hunter2") && !out.contains("prod") && !out.contains("pem"),
        "{out}"
    );
    assert!(out.starts_with("src/app.rs:1:"), "{out}");
    assert!(out.contains("withheld by policy: no-secrets"), "{out}");
    // Without a protecting rule the same files are searched.
    let open = run(&gate(&w), "grep", json!({"pattern":"hunter2"})).unwrap();
    assert_eq!(open, ".env:1:TOKEN=hunter2");
}
