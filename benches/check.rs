//! Admission cost, excluding process start: a `read_file` and a `move_file` call judged by a
//! gate built once over the embedded default policy, from JSON text to admission; then the same
//! `read_file` and a short `bash` call with the five example Rego policies of issue 12
//! (`policies/examples/`: claude-code-bash, git-push-origin, network-allowlist, read-size-limit,
//! workflows-ask)
//! loaded beside the YAML default, to measure what Rego adds.

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};
use std::hint::black_box;
use std::path::PathBuf;

/// The five example Rego policies the speed figures are given for.
const FIVE: [&str; 5] = [
    "claude-code-bash",
    "git-push-origin",
    "network-allowlist",
    "read-size-limit",
    "workflows-ask",
];

fn admission(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("src/deep")).expect("folders");
    std::fs::write(ws.join("src/deep/lib.rs"), "fn main() {}\n").expect("file");
    let gate = |policy: &PolicySet| {
        Gate::builder(Registry::with_builtins(), policy, ws)
            .posture(Posture::Interactive)
            .host_files(HostFiles::for_workspace(ws))
            .build()
            .expect("gate")
    };
    let yaml = gate(&PolicySet::embedded_default());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policies");
    let with_rego = gate(
        &PolicySet::load(
            &[root.join("default.yaml")]
                .into_iter()
                .chain(FIVE.iter().map(|e| root.join("examples").join(e)))
                .collect::<Vec<_>>(),
        )
        .expect("policies"),
    );

    let read = r#"{"id":"1","name":"read_file","arguments":{"path":"src/deep/lib.rs"}}"#;
    let mv = r#"{"id":"2","name":"move_file","arguments":{"source_path":"src/deep/lib.rs","destination_path":"src/new/lib.rs"}}"#;
    let bash = r#"{"id":"3","name":"bash","arguments":{"command":"git status --short && git diff --stat HEAD~1 | head -20 2>/dev/null; cargo test -q --lib >> logs.txt"}}"#;
    assert_eq!(yaml.admit_text(read).admission().verdict.as_str(), "allow");
    assert_eq!(yaml.admit_text(mv).admission().verdict.as_str(), "ask");
    assert_eq!(
        with_rego.admit_text(read).admission().verdict.as_str(),
        "allow"
    );
    assert!(
        with_rego
            .admit_text(bash)
            .admission()
            .rules
            .iter()
            .all(|r| r.id != "rego-error")
    );

    c.bench_function("admit read_file", |b| {
        b.iter(|| yaml.admit_text(black_box(read)))
    });
    c.bench_function("admit move_file", |b| {
        b.iter(|| yaml.admit_text(black_box(mv)))
    });
    c.bench_function("admit read_file, YAML + Rego examples", |b| {
        b.iter(|| with_rego.admit_text(black_box(read)))
    });
    c.bench_function("admit bash 100 B, YAML only", |b| {
        b.iter(|| yaml.admit_text(black_box(bash)))
    });
    c.bench_function("admit bash 100 B, YAML + Rego examples", |b| {
        b.iter(|| with_rego.admit_text(black_box(bash)))
    });
}

criterion_group!(benches, admission);
criterion_main!(benches);
