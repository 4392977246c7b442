//! Issue 28: lock granularity across processes, measured. Two processes each make N
//! `edit_file` calls (admitted by the gate, leased, executed: the whole path but the record) on
//! one shared file (each its own lines) or on a file of its own, under
//!
//! - **per path** (what the code uses, [`reasonix::lease`]): the workspace lock shared, one
//!   exclusive lock file per written path;
//! - **per workspace**: one exclusive lock on the workspace's `workspace.lock` around each call
//!   (the lease a bash writer takes), emulated with a second lease manager.
//!
//! `cargo bench --bench leases` prints the wall time of both processes and the time per call
//! for each of the four runs (`LEASE_BENCH_N` sets N, default 300), and checks that every edit
//! is on disk. The figures are in docs/speed.md.

use std::path::{Path, PathBuf};
use std::time::Instant;

use reasonix::lease::{Leases, Need};
use reasonix::{Gate, HostFiles, Judgement, PolicySet, Posture, Registry};

const ALLOW_ALL: &str = "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n";
const CHILD: &str = "REASONIX_LEASE_BENCH_CHILD";

fn file_of(layout: &str, id: usize) -> String {
    if layout == "one-file" {
        "shared.txt".into()
    } else {
        format!("own-{id}.txt")
    }
}

/// One process's N edits.
fn child(spec: &str) {
    let parts: Vec<&str> = spec.split(',').collect();
    let (mode, layout, id, n, ws) = (
        parts[0],
        parts[1],
        parts[2].parse::<usize>().expect("id"),
        parts[3].parse::<usize>().expect("n"),
        PathBuf::from(parts[4]),
    );
    let policy = PolicySet::from_yaml("allow.yaml", ALLOW_ALL).expect("policy");
    let gate = Gate::builder(Registry::with_builtins(), &policy, &ws)
        .posture(Posture::Unattended)
        .host_files(HostFiles::for_workspace(&ws))
        .build()
        .expect("gate");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let across = Leases::for_workspace(&ws);
    let here = Leases::new();
    let path = file_of(layout, id);
    for i in 0..n {
        let call = serde_json::json!({"name": "edit_file", "arguments": {
            "path": path,
            "old_string": format!("p{id}-line-{i}\n"),
            "new_string": format!("p{id}-edited-{i}\n"),
        }});
        let Judgement::Allowed(admitted) = gate.admit_text(&call.to_string()) else {
            panic!("not allowed");
        };
        let (_whole, leased) = if mode == "per-path" {
            (
                None,
                runtime.block_on(admitted.lease(&across)).expect("lease"),
            )
        } else {
            let whole = runtime
                .block_on(across.acquire(Need::Workspace))
                .expect("workspace lease");
            (
                Some(whole),
                runtime.block_on(admitted.lease(&here)).expect("lease"),
            )
        };
        leased.execute().result.expect("edit");
    }
}

fn run(mode: &str, layout: &str, n: usize) -> f64 {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    for id in 0..2 {
        let lines: String = (0..n).map(|i| format!("p{id}-line-{i}\n")).collect();
        let file = ws.join(file_of(layout, id));
        let mut text = std::fs::read_to_string(&file).unwrap_or_default();
        text.push_str(&lines);
        std::fs::write(&file, text).expect("file");
    }
    let exe = std::env::current_exe().expect("exe");
    let start = Instant::now();
    let mut children: Vec<_> = (0..2)
        .map(|id| {
            std::process::Command::new(&exe)
                .env(CHILD, format!("{mode},{layout},{id},{n},{}", ws.display()))
                .spawn()
                .expect("child")
        })
        .collect();
    let until = start + std::time::Duration::from_secs(600);
    for c in &mut children {
        loop {
            if let Some(status) = c.try_wait().expect("wait") {
                assert!(status.success(), "a child failed");
                break;
            }
            if Instant::now() > until {
                let _ = c.kill();
                panic!("a child ran over ten minutes");
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    check(&ws, layout, n);
    secs
}

fn check(ws: &Path, layout: &str, n: usize) {
    for id in 0..2 {
        let text = std::fs::read_to_string(ws.join(file_of(layout, id))).expect("file");
        for i in 0..n {
            assert!(
                text.contains(&format!("p{id}-edited-{i}\n")),
                "p{id} edit {i} lost"
            );
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    // `cargo test --all-targets` (CI) runs this without `--bench`: a quick check that every
    // edit lands, not a measurement.
    let measuring = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("LEASE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 300 } else { 10 });
    let rounds = if measuring { 3 } else { 1 };
    println!("two processes x {n} edit_file calls each");
    for layout in ["one-file", "own-files"] {
        for mode in ["per-path", "per-workspace"] {
            // Best of three, to ride out the machine's load.
            let best = (0..rounds)
                .map(|_| run(mode, layout, n))
                .fold(f64::INFINITY, f64::min);
            println!(
                "{layout:9} {mode:13} {:7.3} s  {:6.3} ms/call",
                best,
                best * 1000.0 / (2 * n) as f64
            );
        }
    }
}
