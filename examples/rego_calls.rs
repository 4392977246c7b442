//! The Rego votes of `benches/rego.rs`, made N times in one process, for an instruction count
//! that does not move with the machine's load: `benches/rego_instructions.sh` runs this under
//! callgrind with N calls and with none, and divides the difference by N.
//!
//! Usage: `rego_calls N bash|read_file` — N votes on the 100-byte `bash` call of
//! `benches/check.rs` or on a `read_file` call, with the five example policies loaded
//! (`POLICIES=a,b` loads other examples of `policies/examples/`, by folder name;
//! `REGO_ENGINE=interpreter` evaluates with the interpreter instead of the bytecode VM).

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
    let dir = tempfile::tempdir().expect("temporary folder");
    let ws = dir.path();
    std::fs::create_dir_all(ws.join("src/deep")).expect("folders");
    std::fs::write(ws.join("src/deep/lib.rs"), "fn main() {}\n").expect("file");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policies/examples");
    let names = std::env::var("POLICIES").unwrap_or_else(|_| FIVE.into());
    let folders: Vec<PathBuf> = names.split(',').map(|e| root.join(e)).collect();
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
    let call = match which.as_str() {
        "bash" => {
            r#"{"id":"3","name":"bash","arguments":{"command":"git status --short && git diff --stat HEAD~1 | head -20 2>/dev/null; cargo test -q --lib >> logs.txt"}}"#
        }
        "read_file" => r#"{"id":"1","name":"read_file","arguments":{"path":"src/deep/lib.rs"}}"#,
        other => panic!("bash or read_file, not {other}"),
    };
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
