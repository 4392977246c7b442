//! The bash analysis of a 100-byte and a 2 KB script, parser reused (as in a live gate), and a
//! whole `reasonix check` admission of the 100-byte one under the embedded default policy.

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::shell::Analysis;
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};
use std::hint::black_box;

/// 100 bytes: a pipeline, a chain and a redirection.
const SHORT: &str = "git status --short && git diff --stat HEAD~1 | head -20 2>/dev/null; cargo test -q --lib >> logs.txt";

fn long() -> String {
    let block = r#"
# build and test every crate, keep the logs
for crate in core cli web; do
  if [ -d "crates/$crate" ]; then
    (cd "crates/$crate" && timeout 600 cargo test --all-features 2>&1 | tee "../../logs/$crate.log")
  fi
done
grep -rn "FAILED" logs/ | sort | uniq -c > summary.txt
find target -name '*.rlib' -mtime +7 -exec rm {} +
echo "done: $(date -u +%FT%T)" >> summary.txt
"#;
    let mut s = String::new();
    while s.len() < 2048 {
        s.push_str(block);
    }
    s.truncate(2048);
    s
}

fn analysis(c: &mut Criterion) {
    assert_eq!(SHORT.len(), 100);
    let long = long();
    assert!(Analysis::of(SHORT).analysed);
    c.bench_function("analyse 100 B", |b| {
        b.iter(|| Analysis::of(black_box(SHORT)))
    });
    c.bench_function("analyse 2 KB", |b| {
        b.iter(|| Analysis::of(black_box(&long)))
    });

    let dir = tempfile::tempdir().expect("workspace");
    let policy = PolicySet::embedded_default();
    let gate = Gate::builder(Registry::with_builtins(), &policy, dir.path())
        .posture(Posture::Interactive)
        .host_files(HostFiles::for_workspace(dir.path()))
        .build()
        .expect("gate");
    let call = serde_json::json!({"name": "bash", "arguments": {"command": SHORT}}).to_string();
    c.bench_function("admit bash 100 B", |b| {
        b.iter(|| gate.admit_text(black_box(&call)))
    });
}

criterion_group!(benches, analysis);
criterion_main!(benches);
