//! What Rego costs a call, piece by piece, with the five example policies of
//! `policies/examples/` loaded (claude-code-bash, git-push-origin, network-allowlist,
//! read-size-limit, workflows-ask): making the input document regorus evaluates (as JSON text parsed
//! back, the route before issue 12, and serialized straight into regorus' values), and the
//! votes on a ready document, for the 100-byte `bash` call of `benches/check.rs` and a
//! `read_file` call. `cargo bench --bench check` measures the same calls through the whole gate.

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::policy::input::PolicyInput;
use reasonix::policy::rego::RegoInput;
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};
use std::hint::black_box;
use std::path::PathBuf;

fn rego(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("src/deep")).expect("folders");
    std::fs::write(ws.join("src/deep/lib.rs"), "fn main() {}\n").expect("file");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policies");
    let five: Vec<PathBuf> = [
        "claude-code-bash",
        "git-push-origin",
        "network-allowlist",
        "read-size-limit",
        "workflows-ask",
    ]
    .iter()
    .map(|e| root.join("examples").join(e))
    .collect();
    let policy = PolicySet::load(&five).expect("policies");
    let rego = policy.rego().expect("Rego policies");
    let gate = Gate::builder(Registry::with_builtins(), &policy, ws)
        .posture(Posture::Interactive)
        .explain(true)
        .host_files(HostFiles::for_workspace(ws))
        .build()
        .expect("gate");
    let input = |call: &str| -> PolicyInput {
        gate.admit_text(call)
            .admission()
            .input
            .clone()
            .expect("explained")
    };
    let bash = input(
        r#"{"id":"3","name":"bash","arguments":{"command":"git status --short && git diff --stat HEAD~1 | head -20 2>/dev/null; cargo test -q --lib >> logs.txt"}}"#,
    );
    let read = input(r#"{"id":"1","name":"read_file","arguments":{"path":"src/deep/lib.rs"}}"#);

    for (name, doc) in [("bash", &bash), ("read_file", &read)] {
        let ready = RegoInput::of(doc).expect("converts");
        assert!(rego.votes_on(&ready).is_ok());
        c.bench_function(&format!("rego input {name}, JSON text parsed"), |b| {
            b.iter(|| {
                let text = serde_json::to_string(black_box(doc)).expect("JSON");
                RegoInput::from_json(&text)
            })
        });
        c.bench_function(&format!("rego input {name}, serialized"), |b| {
            b.iter(|| RegoInput::of(black_box(doc)))
        });
        c.bench_function(&format!("rego votes {name}, five examples"), |b| {
            b.iter(|| rego.votes_on(black_box(&ready)))
        });
        // The same votes by the interpreter, which ran them before the bytecode VM did.
        let interpreter = rego.with_interpreter();
        assert_eq!(interpreter.votes_on(&ready), rego.votes_on(&ready));
        c.bench_function(
            &format!("rego votes {name}, five examples, interpreter"),
            |b| b.iter(|| interpreter.votes_on(black_box(&ready))),
        );
    }
}

criterion_group!(benches, rego);
criterion_main!(benches);
