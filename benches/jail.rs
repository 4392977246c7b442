//! Spawning `true`: bare (std::process, output to /dev/null), through
//! `jail::danger::exec_unjudged` with the jail off (same pipes, watchdog, private temporary
//! folder), and jailed under `enforce` (Landlock, seccomp, limits, capability drop, pids
//! cgroup). `benches/bubblewrap.sh` runs the same command under bubblewrap for comparison.

use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::sandbox::jail::{Capture, JailConfig, Mode, Plan, danger};

fn spawn(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let plan = |mode| {
        let config = JailConfig {
            mode,
            ..JailConfig::default()
        };
        Plan::new(&config, &ws, home.as_deref())
    };
    let off = plan(Mode::Off);
    let enforce = plan(Mode::Enforce);
    let argv = ["true".to_owned()];
    assert!(danger::exec_unjudged(&enforce, &argv, None, Capture::Bounded(1024)).is_ok());

    c.bench_function("spawn true, bare", |b| {
        b.iter(|| {
            Command::new("true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("true")
        })
    });
    c.bench_function("spawn true, jail off", |b| {
        b.iter(|| danger::exec_unjudged(&off, &argv, None, Capture::Bounded(1024)).expect("run"))
    });
    c.bench_function("spawn true, jailed", |b| {
        b.iter(|| {
            danger::exec_unjudged(&enforce, &argv, None, Capture::Bounded(1024)).expect("run")
        })
    });
}

criterion_group!(benches, spawn);
criterion_main!(benches);
