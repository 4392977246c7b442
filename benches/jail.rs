//! Spawning `true`: bare (std::process, output to /dev/null), through
//! `jail::danger::exec_unjudged` with the jail off (same pipes, watchdog, private temporary
//! folder), and jailed: under `enforce` as this machine allows (Landlock, seccomp, limits,
//! capability drop, pids and memory cgroups, mount and PID namespaces), the same without
//! namespaces (`best_effort` with them taken away: seccomp refuses metadata calls instead), and
//! with the namespaces made inside a user namespace (the path a user other than root takes).
//! `benches/bubblewrap.sh` runs the same command under bubblewrap for comparison.

use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::sandbox::jail::{
    self, Capabilities, Capture, Enforcement, JailConfig, JailPlan, danger,
};

fn spawn(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let plan = |mode, caps: Capabilities| {
        let config = JailConfig {
            mode,
            ..JailConfig::default()
        };
        JailPlan::with_capabilities(&config, &ws, home.as_deref(), caps)
            .with_host_files([ws.join(".reasonix"), ws.join("reasonix.yaml")])
    };
    let probed = jail::capabilities().clone();
    let off = plan(Enforcement::Off, probed.clone());
    let enforce = plan(Enforcement::Enforce, probed.clone());
    let flat = plan(
        Enforcement::BestEffort,
        Capabilities {
            namespaces: false,
            ..probed.clone()
        },
    );
    let user = plan(
        Enforcement::Enforce,
        Capabilities {
            user_namespace: true,
            ..probed.clone()
        },
    );
    let argv = ["true".to_owned()];
    for (name, p) in [("enforce", &enforce), ("flat", &flat), ("user", &user)] {
        let r = danger::exec_unjudged(p, &argv, None, Capture::Bounded(1024));
        assert!(r.is_ok(), "{name}: {r:?}");
    }

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
    c.bench_function("spawn true, jailed without namespaces", |b| {
        b.iter(|| danger::exec_unjudged(&flat, &argv, None, Capture::Bounded(1024)).expect("run"))
    });
    c.bench_function("spawn true, jailed", |b| {
        b.iter(|| {
            danger::exec_unjudged(&enforce, &argv, None, Capture::Bounded(1024)).expect("run")
        })
    });
    c.bench_function("spawn true, jailed in a user namespace", |b| {
        b.iter(|| danger::exec_unjudged(&user, &argv, None, Capture::Bounded(1024)).expect("run"))
    });
}

criterion_group!(benches, spawn);
criterion_main!(benches);
