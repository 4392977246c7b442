//! The Rego votes of `benches/rego.rs`, made N times in one process, for an instruction count
//! that does not move with the machine's load: `benches/rego_instructions.sh` runs this under
//! callgrind with N calls and with none, and divides the difference by N.
//!
//! Usage: `rego_calls N bash|read_file [votes|admit]` — N votes on the 100-byte `bash` call of
//! `benches/check.rs` or on a `read_file` call, with the five example policies loaded
//! (`POLICIES=a,b` loads other examples of `policies/examples/`, by folder name;
//! `REGO_ENGINE=interpreter` evaluates the votes with the interpreter instead of the bytecode
//! VM). With `admit`, N whole admissions of the call (`Gate::admit_text`, as
//! `benches/check.rs` makes them: the YAML default beside the examples, no `--explain`);
//! `POLICIES=none` loads the YAML default alone, so that two runs give what Rego adds to a
//! whole admission.

use reasonix::policy::input::PolicyInput;
use reasonix::policy::rego::RegoInput;
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};
use std::hint::black_box;
use std::path::PathBuf;

const FIVE: &str =
    "claude-code-bash,git-push-origin,network-allowlist,read-size-limit,workflows-ask";

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let which = args.next().unwrap_or_else(|| "bash".into());
    let mode = args.next().unwrap_or_else(|| "votes".into());
    let dir = tempfile::tempdir().expect("temporary folder");
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("src/deep")).expect("folders");
    std::fs::write(ws.join("src/deep/lib.rs"), "fn main() {}\n").expect("file");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policies/examples");
    let names = std::env::var("POLICIES").unwrap_or_else(|_| FIVE.into());
    let folders: Vec<PathBuf> = names
        .split(',')
        .filter(|e| *e != "none")
        .map(|e| root.join(e))
        .collect();
    let call = match which.as_str() {
        "bash" => {
            r#"{"id":"3","name":"bash","arguments":{"command":"git status --short && git diff --stat HEAD~1 | head -20 2>/dev/null; cargo test -q --lib >> logs.txt"}}"#
        }
        "read_file" => r#"{"id":"1","name":"read_file","arguments":{"path":"src/deep/lib.rs"}}"#,
        other => panic!("bash or read_file, not {other}"),
    };
    if mode == "admit" {
        return admit(n, ws, &folders, call);
    }
    let policy = PolicySet::load(&folders).expect("policies");
    let rego = policy.rego().expect("Rego policies");
    let rego = if std::env::var("REGO_ENGINE").as_deref() == Ok("interpreter") {
        rego.with_interpreter()
    } else {
        rego.clone()
    };
    let gate = Gate::builder(Registry::with_builtins(), &policy, ws)
        .posture(Posture::Interactive)
        .explain(true)
        .host_files(HostFiles::for_workspace(ws))
        .build()
        .expect("gate");
    let doc: PolicyInput = gate
        .admit_text(call)
        .admission()
        .input
        .clone()
        .expect("explained");
    let ready = RegoInput::of(&doc).expect("converts");
    // Under valgrind the first evaluations run on code not yet translated, slowly enough to
    // reach the 250 ms time limit on a busy machine: three evaluations whose outcome is not
    // read come first, in every run, so the difference between two runs is still N.
    for _ in 0..3 {
        let _ = black_box(rego.votes_on(black_box(&ready)));
    }
    let votes = rego.votes_on(&ready).expect("votes");
    eprintln!("{} vote(s): {votes:?}", votes.len());
    for _ in 0..n {
        black_box(rego.votes_on(black_box(&ready)).expect("votes"));
    }
}

/// N admissions of `call` by a gate over the YAML default and `folders`, as `benches/check.rs`
/// builds it.
fn admit(n: usize, ws: &std::path::Path, folders: &[PathBuf], call: &str) {
    let default = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policies/default.yaml");
    let paths: Vec<PathBuf> = std::iter::once(default)
        .chain(folders.iter().cloned())
        .collect();
    let policy = PolicySet::load(&paths).expect("policies");
    let gate = Gate::builder(Registry::with_builtins(), &policy, ws)
        .posture(Posture::Interactive)
        .host_files(HostFiles::for_workspace(ws))
        .build()
        .expect("gate");
    // As for the votes: three admissions first in every run.
    for _ in 0..3 {
        black_box(gate.admit_text(black_box(call)));
    }
    let judged = gate.admit_text(call);
    let a = judged.admission();
    eprintln!("{}: {:?}", a.verdict.as_str(), a.rules);
    assert!(
        a.rules.iter().all(|r| r.id != "rego-error"),
        "{:?}",
        a.rules
    );
    for _ in 0..n {
        black_box(gate.admit_text(black_box(call)));
    }
}
