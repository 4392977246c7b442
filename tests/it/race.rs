//! A symlink swapped in between admission and execution must not redirect the effect.
//!
//! Each test admits a call while the path is an ordinary folder or file, then swaps a component
//! for a symlink to a folder outside the workspace, proves that a plain by-name operation would
//! now land outside, and executes the admitted call: it must fail and leave the outside untouched.

use crate::common;

use std::path::Path;

use common::{ALLOW_ALL, World};
use reasonix::{Gate, Judgement};

fn gate(w: &World) -> Gate {
    w.yaml_gate(ALLOW_ALL)
}

fn admitted(gate: &Gate, call: serde_json::Value) -> reasonix::gate::Admitted {
    match gate.admit_text(&call.to_string()) {
        Judgement::Allowed(a) => a,
        other => panic!("expected allow, got {:?}", other.admission()),
    }
}

/// Replaces folder `ws/rel` by a symlink to `target`, keeping the real folder as `rel.real`.
fn swap_for_link(w: &World, rel: &str, target: &Path) {
    let p = w.ws.join(rel);
    std::fs::rename(&p, w.ws.join(format!("{rel}.real"))).unwrap();
    std::os::unix::fs::symlink(target, &p).unwrap();
}

#[test]
fn write_through_a_folder_swapped_for_a_symlink_is_refused() {
    let w = World::new();
    w.file("dir/notes.txt", "mine\n");
    let gate = gate(&w);
    let call = admitted(
        &gate,
        serde_json::json!({"name":"write_file","arguments":{"path":"dir/notes.txt","content":"pwned"}}),
    );

    swap_for_link(&w, "dir", &w.outside);
    // The race is real: a by-name write would now land outside.
    assert!(
        std::fs::canonicalize(w.ws.join("dir"))
            .unwrap()
            .starts_with(&w.outside)
    );

    let err = common::execute(call).expect_err("the write must fail");
    assert!(err.to_string().contains("symbolic links"), "{err}");
    assert!(
        !w.outside.join("notes.txt").exists(),
        "nothing may appear outside"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("dir.real/notes.txt")).unwrap(),
        "mine\n"
    );
}

#[test]
fn read_through_a_folder_swapped_for_a_symlink_is_refused() {
    let w = World::new();
    w.file("dir/notes.txt", "mine\n");
    std::fs::write(w.outside.join("notes.txt"), "SECRET\n").unwrap();
    let gate = gate(&w);
    let call = admitted(
        &gate,
        serde_json::json!({"name":"read_file","arguments":{"path":"dir/notes.txt"}}),
    );

    swap_for_link(&w, "dir", &w.outside);
    assert_eq!(
        std::fs::read_to_string(w.ws.join("dir/notes.txt")).unwrap(),
        "SECRET\n"
    );

    let err = common::execute(call).expect_err("the read must fail");
    assert!(!err.to_string().contains("SECRET"));
}

#[test]
fn a_file_swapped_for_a_symlink_is_not_written_through() {
    let w = World::new();
    w.file("target.txt", "mine\n");
    std::fs::write(w.outside.join("victim"), "untouched\n").unwrap();
    let gate = gate(&w);
    let call = admitted(
        &gate,
        serde_json::json!({"name":"write_file","arguments":{"path":"target.txt","content":"pwned"}}),
    );

    std::fs::remove_file(w.ws.join("target.txt")).unwrap();
    std::os::unix::fs::symlink(w.outside.join("victim"), w.ws.join("target.txt")).unwrap();

    assert!(common::execute(call).is_err());
    assert_eq!(
        std::fs::read_to_string(w.outside.join("victim")).unwrap(),
        "untouched\n"
    );
}

#[test]
fn delete_through_a_folder_swapped_for_a_symlink_is_refused() {
    let w = World::new();
    w.file("dir/old.txt", "old\n");
    std::fs::write(w.outside.join("old.txt"), "keep me\n").unwrap();
    let gate = gate(&w);
    let call = admitted(
        &gate,
        serde_json::json!({"name":"delete_file","arguments":{"path":"dir/old.txt"}}),
    );

    swap_for_link(&w, "dir", &w.outside);

    assert!(common::execute(call).is_err());
    assert!(w.outside.join("old.txt").exists());
}

#[test]
fn move_into_a_folder_swapped_for_a_symlink_is_refused() {
    let w = World::new();
    w.file("a.txt", "a\n");
    w.file("dest/keep", "");
    let gate = gate(&w);
    let call = admitted(
        &gate,
        serde_json::json!({"name":"move_file","arguments":{"source_path":"a.txt","destination_path":"dest/a.txt"}}),
    );

    swap_for_link(&w, "dest", &w.outside);

    assert!(common::execute(call).is_err());
    assert!(!w.outside.join("a.txt").exists());
    assert!(w.ws.join("a.txt").exists(), "the source stays where it was");
}

#[test]
fn without_a_swap_the_same_calls_succeed() {
    let w = World::new();
    w.file("dir/notes.txt", "mine\n");
    let gate = gate(&w);
    let call = admitted(
        &gate,
        serde_json::json!({"name":"write_file","arguments":{"path":"dir/notes.txt","content":"new"}}),
    );
    common::execute(call).unwrap();
    assert_eq!(
        std::fs::read_to_string(w.ws.join("dir/notes.txt")).unwrap(),
        "new"
    );
}

/// Issue 28, item 8: two `reasonix run` processes on one workspace, each making 40
/// `edit_file` calls to its own lines of one file at the same time: every edit each record
/// says succeeded is in the file — none lost to the other process's read-modify-write.
#[test]
fn two_processes_editing_one_file_lose_no_update() {
    const EDITS: usize = 40;
    let w = World::new();
    let mut lines = String::new();
    for who in ["a", "b"] {
        for i in 0..EDITS {
            lines.push_str(&format!("{who}-line-{i}\n"));
        }
    }
    w.file("shared.txt", &lines);
    let policy = w.policy("allow.yaml", ALLOW_ALL);
    let ws = w.ws.to_str().unwrap().to_owned();
    let start = |who: &str| {
        let turns: Vec<serde_json::Value> = (0..EDITS)
            .map(|i| {
                serde_json::json!({"tool_calls": [{"name": "edit_file", "arguments": {
                    "path": "shared.txt",
                    "old_string": format!("{who}-line-{i}\n"),
                    "new_string": format!("{who}-edited-{i}\n"),
                }}]})
            })
            .collect();
        let script = w.root.join(format!("{who}.json"));
        std::fs::write(&script, serde_json::Value::Array(turns).to_string()).unwrap();
        let record = w.root.join(format!("{who}.jsonl"));
        let child = w.spawn(&[
            "run",
            "--provider",
            &format!("script:{}", script.display()),
            "--workspace",
            &ws,
            "--policy",
            &policy,
            "--record",
            record.to_str().unwrap(),
            "--max-steps",
            "60",
            "--unattended",
            "go",
        ]);
        (child, record)
    };
    let mut runs = [start("a"), start("b")];
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    for (child, _) in &mut runs {
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
            panic!("a run did not end within two minutes");
        }
    }
    let text = std::fs::read_to_string(w.ws.join("shared.txt")).unwrap();
    for (who, (_, record)) in ["a", "b"].iter().zip(&runs) {
        let calls: Vec<serde_json::Value> = common::jsonl(record)
            .into_iter()
            .filter(|l| l["tool"] == "edit_file")
            .collect();
        assert_eq!(calls.len(), EDITS, "{who}'s record");
        for (i, call) in calls.iter().enumerate() {
            assert_eq!(call["outcome"], "succeeded", "{who} {i}: {call}");
        }
        let missing: Vec<usize> = (0..EDITS)
            .filter(|i| !text.contains(&format!("{who}-edited-{i}\n")))
            .collect();
        assert!(
            missing.is_empty(),
            "{who}'s edits lost: {missing:?}\n{text}"
        );
    }
}

/// Runs `reasonix` to its end within a minute (killed and failed otherwise): exit code and
/// stderr.
fn run_bounded(w: &World, args: &[&str]) -> (i32, String) {
    let mut child = w.spawn(args);
    drop(child.stdin.take());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > until {
            let _ = child.kill();
            panic!("reasonix {args:?} did not end within a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One scripted `edit_file` of `notes.txt` through `reasonix run`: its record line.
fn edit_through_run(w: &World) -> serde_json::Value {
    let policy = w.policy("allow.yaml", ALLOW_ALL);
    let script = w.root.join("edit.json");
    let turns = serde_json::json!([{"tool_calls": [{"name": "edit_file", "arguments": {
        "path": "notes.txt", "old_string": "old", "new_string": "new"}}]}]);
    std::fs::write(&script, turns.to_string()).unwrap();
    let record = w.root.join("edit.jsonl");
    let _ = std::fs::remove_file(&record);
    let (_, stderr) = run_bounded(
        w,
        &[
            "run",
            "--provider",
            &format!("script:{}", script.display()),
            "--workspace",
            w.ws.to_str().unwrap(),
            "--policy",
            &policy,
            "--record",
            record.to_str().unwrap(),
            "--max-steps",
            "3",
            "--unattended",
            "go",
        ],
    );
    common::jsonl(&record)
        .into_iter()
        .find(|l| l["tool"] == "edit_file")
        .unwrap_or_else(|| panic!("no edit_file line; stderr: {stderr}"))
}

/// Issue 28, second round, item 1: a lock folder the workspace replaced by a symbolic link to
/// a folder elsewhere (or by a file) makes `reasonix run` refuse the edit — blocked, with what
/// to do — rather than run it on a lease of its own process only; nothing is made through the
/// link, and the file is untouched.
#[test]
fn a_run_whose_lease_cannot_be_taken_refuses_the_edit() {
    for planted in ["link", "file"] {
        let w = World::new();
        w.file("notes.txt", "old");
        std::fs::create_dir(w.ws.join(".reasonix")).unwrap();
        let at = w.ws.join(reasonix::lease::LOCK_DIR);
        match planted {
            "link" => std::os::unix::fs::symlink(&w.outside, &at).unwrap(),
            _ => std::fs::write(&at, "").unwrap(),
        }
        let line = edit_through_run(&w);
        assert_eq!(line["outcome"], "blocked", "{planted}: {line}");
        let told = line.to_string();
        assert!(
            told.contains("cannot take the write lease"),
            "{planted}: {told}"
        );
        assert!(
            told.contains("try again"),
            "{planted}: says what to do: {told}"
        );
        assert_eq!(
            std::fs::read_to_string(w.ws.join("notes.txt")).unwrap(),
            "old"
        );
        assert_eq!(
            std::fs::read_dir(&w.outside).unwrap().count(),
            0,
            "{planted}"
        );
    }
}

/// Its twin: the same run with a real lock folder edits the file.
#[test]
fn a_run_with_a_real_lock_folder_makes_the_edit() {
    let w = World::new();
    w.file("notes.txt", "old");
    std::fs::create_dir_all(w.ws.join(reasonix::lease::LOCK_DIR)).unwrap();
    let line = edit_through_run(&w);
    assert_eq!(line["outcome"], "succeeded", "{line}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("notes.txt")).unwrap(),
        "new"
    );
}
