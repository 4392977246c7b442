//! Admission cost, excluding process start: one `read_file` and one `move_file` call judged by
//! a gate built once over the embedded default policy, from JSON text to admission.

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::{Gate, PolicySet, Posture, Registry};
use std::hint::black_box;

fn admission(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("src/deep")).expect("folders");
    std::fs::write(ws.join("src/deep/lib.rs"), "fn main() {}\n").expect("file");
    let gate = Gate::new(
        Registry::with_builtins(),
        &PolicySet::embedded_default(),
        ws,
        Posture::Interactive,
    )
    .expect("gate");

    let read = r#"{"id":"1","name":"read_file","arguments":{"path":"src/deep/lib.rs"}}"#;
    let mv = r#"{"id":"2","name":"move_file","arguments":{"source_path":"src/deep/lib.rs","destination_path":"src/new/lib.rs"}}"#;
    assert_eq!(gate.admit_text(read).admission().verdict.as_str(), "allow");
    assert_eq!(gate.admit_text(mv).admission().verdict.as_str(), "ask");

    c.bench_function("admit read_file", |b| {
        b.iter(|| gate.admit_text(black_box(read)))
    });
    c.bench_function("admit move_file", |b| {
        b.iter(|| gate.admit_text(black_box(mv)))
    });
}

criterion_group!(benches, admission);
criterion_main!(benches);
