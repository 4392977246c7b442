//! The rewind's unit tests: the restore over a store and a ledger built by hand.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ledger::CallLine;
use super::store::NOTES;
use super::*;
use crate::record::sha256;
use crate::record::{FileState, SnapshotFile};
use crate::sandbox::ConfinedPath;

fn file(content: &[u8], mode: u32) -> FileState {
    FileState::file(sha256(content), mode, content.len() as u64)
}

fn snap(path: &Path, before: FileState, after: FileState, kept: bool) -> SnapshotFile {
    SnapshotFile {
        path: path.display().to_string(),
        before,
        after,
        kept,
        note: None,
    }
}

fn point(line: usize, call: &str, files: Vec<SnapshotFile>) -> Point {
    Point {
        line,
        run_id: "r".into(),
        call_id: call.into(),
        tool: "write_file".into(),
        files,
        recorded: true,
    }
}

fn anywhere(_: &Path, _: Restore<'_>) -> Result<(), String> {
    Ok(())
}

/// A ledger of these points, each after its call line.
fn ledger(points: Vec<Point>) -> Ledger {
    let calls = points
        .iter()
        .map(|p| CallLine {
            line: p.line,
            run_id: p.run_id.clone(),
            call_id: p.call_id.clone(),
            tool: p.tool.clone(),
            ran: true,
            unobserved: false,
            command: None,
        })
        .collect();
    Ledger {
        calls,
        points,
        ..Ledger::default()
    }
}

fn world() -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let store = Store::beside(&root.join("record.jsonl"));
    std::fs::create_dir_all(store.dir()).unwrap();
    (dir, root, store)
}

fn keep_blob(store: &Store, content: &[u8]) {
    std::fs::write(store.blob(&sha256(content)), content).unwrap();
}

#[test]
fn two_changes_to_one_file_are_undone_newest_first() {
    let (_d, root, store) = world();
    let f = root.join("f");
    std::fs::write(&f, "two").unwrap();
    keep_blob(&store, b"one");
    let l = ledger(vec![
        point(
            1,
            "a",
            vec![snap(&f, FileState::Absent, file(b"one", 0o644), false)],
        ),
        point(
            3,
            "b",
            vec![snap(&f, file(b"one", 0o644), file(b"two", 0o644), true)],
        ),
    ]);
    let target = Target::To {
        call: "a".into(),
        run: None,
    };
    // A dry run sees the second undo through the first, and changes nothing.
    let dry = rewind(&l, &store, &target, false, true, &anywhere).unwrap();
    assert_eq!(dry.restored.len(), 2, "{dry:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"two");
    let done = rewind(&l, &store, &target, false, false, &anywhere).unwrap();
    assert_eq!(done.restored.len(), 2, "{done:?}");
    assert!(done.left.is_empty());
    assert!(!f.exists(), "the file the first call created is gone");
}

#[test]
fn a_file_changed_since_is_left_alone_unless_forced() {
    let (_d, root, store) = world();
    let f = root.join("f");
    std::fs::write(&f, "edited by a person").unwrap();
    keep_blob(&store, b"one");
    let l = ledger(vec![point(
        1,
        "a",
        vec![snap(&f, file(b"one", 0o600), file(b"two", 0o600), true)],
    )]);
    let r = rewind(&l, &store, &Target::Last(1), false, false, &anywhere).unwrap();
    assert!(r.restored.is_empty());
    assert!(r.left[0].detail.contains("changed since"), "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"edited by a person");
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert_eq!(r.restored.len(), 1, "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"one");
    let mode = std::fs::metadata(&f).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_damaged_kept_copy_is_refused_and_the_file_stays() {
    let (_d, root, store) = world();
    let f = root.join("f");
    std::fs::write(&f, "two").unwrap();
    std::fs::write(store.blob(&sha256(b"one")), "not one").unwrap();
    let l = ledger(vec![point(
        1,
        "a",
        vec![snap(&f, file(b"one", 0o644), file(b"two", 0o644), true)],
    )]);
    let r = rewind(&l, &store, &Target::Last(1), false, false, &anywhere).unwrap();
    assert!(r.left[0].detail.contains("damaged"), "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"two");
}

#[test]
fn a_folder_on_the_way_that_became_a_symlink_is_not_followed() {
    let (_d, root, store) = world();
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("f"), "two").unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("sub")).unwrap();
    let f = root.join("sub/f");
    let l = ledger(vec![point(
        1,
        "a",
        vec![snap(&f, FileState::Absent, file(b"two", 0o644), false)],
    )]);
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert!(r.left[0].detail.contains("symlink"), "{r:?}");
    assert!(elsewhere.join("f").exists());
}

#[test]
fn a_missing_folder_behind_a_symlink_is_not_made_where_it_leads() {
    let (_d, root, store) = world();
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("sub")).unwrap();
    keep_blob(&store, b"one");
    let f = root.join("sub/new/deeper/f");
    let l = ledger(vec![point(
        1,
        "a",
        vec![snap(&f, file(b"one", 0o644), FileState::Absent, true)],
    )]);
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert!(r.left[0].detail.contains("symlink"), "{r:?}");
    assert!(
        !elsewhere.join("new").exists(),
        "nothing made through the link"
    );
    // Without the link, the folders are made and the file comes back.
    std::fs::remove_file(root.join("sub")).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert_eq!(r.restored.len(), 1, "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"one");
}

#[test]
fn a_folder_is_never_removed_and_an_unkept_file_is_not_restorable() {
    let (_d, root, store) = world();
    let dir = root.join("d");
    std::fs::create_dir(&dir).unwrap();
    let g = root.join("g");
    let l = ledger(vec![point(
        1,
        "a",
        vec![
            snap(&dir, FileState::Absent, file(b"x", 0o644), false),
            snap(&g, file(b"big", 0o644), FileState::Absent, false),
        ],
    )]);
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert!(dir.is_dir());
    assert!(r.left[0].detail.contains("folder"), "{r:?}");
    assert!(r.not_restorable[0].detail.contains("not kept"), "{r:?}");
}

/// Issue 28, item 6: a digest field that is not a sha256 names no blob — a forged record's
/// `../` path is never opened — and a restored file never gets setuid, setgid or sticky.
#[test]
fn a_digest_that_is_not_a_sha256_is_refused_and_special_mode_bits_are_masked() {
    let (_d, root, store) = world();
    let outside = root.join("outside-secret");
    std::fs::write(&outside, "secret").unwrap();
    let f = root.join("f");
    std::fs::write(&f, "now").unwrap();
    let forged = FileState::File {
        sha256: "../../outside-secret".into(),
        mode: "0644".into(),
        bytes: 6,
    };
    let l = ledger(vec![point(
        1,
        "a",
        vec![snap(&f, forged, file(b"now", 0o644), true)],
    )]);
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert!(r.not_restorable[0].detail.contains("not a sha256"), "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"now");
    // The twin: a true digest is written back, its mode without the special bits.
    keep_blob(&store, b"one");
    let l = ledger(vec![point(
        1,
        "b",
        vec![snap(&f, file(b"one", 0o6755), file(b"now", 0o644), true)],
    )]);
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert_eq!(r.restored.len(), 1, "{r:?}");
    assert!(r.restored[0].detail.contains("never restored"), "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"one");
    let mode = std::fs::metadata(&f).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o755);
    assert!(is_sha256(&sha256(b"x")) && !is_sha256(&sha256(b"x").to_uppercase()));
}

#[test]
fn what_an_earlier_rewind_restored_is_not_undone_again() {
    let text = [
        r#"{"run_id":"r","call_id":"a","tool":"write_file","outcome":"succeeded","started_ms":1,"lease":{"kind":"paths","paths":["/x/f"]},"snapshot":[{"path":"/x/f","before":{"kind":"absent"},"after":{"kind":"absent"},"kept":false,"note":null}]}"#,
        r#"{"run_id":"r","call_id":"b","tool":"bash","outcome":"failed","started_ms":2,"arguments":"{\"command\":\"rm -rf x\"}","lease":{"kind":"workspace"}}"#,
        r#"{"run_id":"w","event":"rewind","restored":[{"run_id":"r","call_id":"a","tool":"write_file","path":"/x/f","detail":"removed"}]}"#,
    ]
    .join("\n");
    let l = Ledger::parse(&text).unwrap();
    assert!(l.points().is_empty());
    assert_eq!(l.calls[1].command.as_deref(), Some("rm -rf x"));
    assert!(l.calls[1].unobserved && !l.calls[0].unobserved);
    // A line a run was writing when it stopped is skipped and named.
    let l = Ledger::parse("{}\n{\"run_id\":\"r\",\"call_").unwrap();
    assert_eq!(l.damaged(), [2]);
}

#[test]
fn a_path_out_of_bounds_is_not_restorable_and_stays() {
    let (_d, root, store) = world();
    let f = root.join("f");
    std::fs::write(&f, "two").unwrap();
    keep_blob(&store, b"one");
    let l = ledger(vec![point(
        1,
        "a",
        vec![snap(&f, file(b"one", 0o644), file(b"two", 0o644), true)],
    )]);
    let nowhere = |p: &Path, _: Restore<'_>| Err(format!("{} is out of bounds", p.display()));
    let r = rewind(&l, &store, &Target::Last(1), true, false, &nowhere).unwrap();
    assert!(r.restored.is_empty() && r.left.is_empty(), "{r:?}");
    assert!(
        r.not_restorable[0]
            .detail
            .starts_with("rewind does not write there: "),
        "{r:?}"
    );
    assert_eq!(std::fs::read(&f).unwrap(), b"two");
}

#[test]
fn a_call_noted_but_never_recorded_is_found_and_restored_only_with_force() {
    let (_d, root, store) = world();
    let f = root.join("f");
    std::fs::write(&f, "one").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    // What the session does before a write runs: keep, then note.
    let confined = ConfinedPath::new(root.clone(), PathBuf::from("f"), true);
    let kept = store.keep(&confined);
    assert!(kept.kept);
    let noted = store
        .note(
            "r",
            "c/../1",
            "write_file",
            &[(f.display().to_string(), kept)],
        )
        .unwrap();
    assert!(noted.starts_with(store.dir().join(NOTES)));
    // The write happens; the run dies before recording it.
    std::fs::write(&f, "two").unwrap();
    let record = r#"{"run_id":"r","event":"run_started"}"#;
    let l = Ledger::parse(record)
        .unwrap()
        .with_interrupted(store.interrupted().unwrap());
    let points = l.points();
    assert_eq!(points.len(), 1);
    assert!(!points[0].recorded && points[0].call_id == "c/../1");
    let r = rewind(&l, &store, &Target::Last(1), false, false, &anywhere).unwrap();
    assert!(r.left[0].detail.contains(UNRECORDED), "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"two");
    let r = rewind(&l, &store, &Target::Last(1), true, false, &anywhere).unwrap();
    assert_eq!(r.restored.len(), 1, "{r:?}");
    assert_eq!(std::fs::read(&f).unwrap(), b"one");
    assert_eq!(std::fs::metadata(&f).unwrap().mode() & 0o7777, 0o640);
    // Once the call's line is recorded, the note is settled and gone.
    store.settle(&noted).unwrap();
    assert!(store.interrupted().unwrap().is_empty());
}

#[test]
fn a_note_whose_call_is_recorded_is_ignored() {
    let (_d, root, store) = world();
    let f = root.join("f");
    let kept = Kept {
        state: FileState::Absent,
        kept: false,
        note: None,
    };
    store
        .note("r", "a", "write_file", &[(f.display().to_string(), kept)])
        .unwrap();
    let record = r#"{"run_id":"r","call_id":"a","tool":"write_file","outcome":"succeeded","started_ms":1,"lease":{"kind":"paths","paths":["/x/f"]},"snapshot":[]}"#;
    let l = Ledger::parse(record)
        .unwrap()
        .with_interrupted(store.interrupted().unwrap());
    assert!(l.points().is_empty());
}

#[test]
fn an_unreadable_note_is_an_error_not_a_skip() {
    let (_d, _root, store) = world();
    std::fs::create_dir_all(store.dir().join(NOTES)).unwrap();
    std::fs::write(store.dir().join(NOTES).join("x.json"), "{").unwrap();
    let e = store.interrupted().unwrap_err();
    assert!(e.to_string().contains("x.json"), "{e}");
}
