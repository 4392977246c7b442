//! Issue 25: what a per-call plan costs. A bash call admitted as read-only runs on a read-only
//! workspace, a writer on an overlay whose changes are read, judged and committed after it
//! ends. Against the jailed spawn of `true` writing in place (the plan of every call before):
//!
//! - `spawn true, in place`: the baseline (`Shape::direct`);
//! - `spawn true, read-only`: the same with the write roots left read-only;
//! - `spawn true, observed, nothing changed`: on an overlay, then its (empty) upper layer read
//!   and settled;
//! - `commit N files`: only what follows a writer's run — reading its upper layer, judging each
//!   change through the gate, staging, `syncfs`, landing — for a run that wrote N new files
//!   (the run itself is not timed).

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::effects;
use reasonix::sandbox::jail::{self, Capture, JailConfig, Plan, Shape, Writes, danger};
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};

const ALLOW_ALL: &str = "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n";

fn plans(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let plan = Plan::new(&JailConfig::default(), &ws, home.as_deref())
        .with_host_files([ws.join(".reasonix"), ws.join("reasonix.yaml")]);
    assert!(
        jail::capabilities().overlay,
        "overlays are what this measures"
    );
    let policy = PolicySet::from_yaml("allow.yaml", ALLOW_ALL).expect("policy");
    let gate = Gate::builder(Registry::with_builtins(), &policy, &ws)
        .posture(Posture::Unattended)
        .host_files(HostFiles::for_workspace(&ws))
        .build()
        .expect("gate");
    let argv = ["true".to_owned()];
    let judge = gate.command_changes(&argv);
    let observed = Shape {
        writes: Writes::Observed,
        hidden: Vec::new(),
    };
    let run = |shape: &Shape| {
        danger::exec_unjudged_shaped(&plan, &argv, None, Capture::Bounded(1024), shape)
            .expect("run")
    };

    let mut g = c.benchmark_group("per-call plans");
    g.bench_function("spawn true, in place", |b| b.iter(|| run(&Shape::direct())));
    g.bench_function("spawn true, read-only", |b| {
        b.iter(|| run(&Shape::read_only()))
    });
    g.bench_function("spawn true, observed, nothing changed", |b| {
        b.iter(|| {
            let r = run(&observed);
            let upper = r.observed.expect("observed");
            let settled = effects::settle(
                effects::observe(upper, judge.as_ref()),
                &mut |_| false,
                &mut |_| {},
            );
            assert!(settled.landed && settled.made.is_empty());
        })
    });
    g.finish();

    let mut g = c.benchmark_group("commit");
    g.sample_size(10);
    for n in [1usize, 100, 10_000] {
        // New files each time, under a folder of their own.
        let script = format!(
            "d=run-$RANDOM$RANDOM; mkdir $d && cd $d && i=0; while [ $i -lt {n} ]; do echo $i > f$i; i=$((i+1)); done"
        );
        let argv = ["bash".to_owned(), "-c".to_owned(), script];
        let judge = gate.command_changes(&argv);
        g.bench_function(format!("commit {n} files"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let r = danger::exec_unjudged_shaped(
                        &plan,
                        &argv,
                        None,
                        Capture::Bounded(1024),
                        &observed,
                    )
                    .expect("run");
                    let upper = r.observed.expect("observed");
                    let started = Instant::now();
                    let settled = effects::settle(
                        effects::observe(upper, judge.as_ref()),
                        &mut |_| false,
                        &mut |_| {},
                    );
                    total += started.elapsed();
                    assert!(settled.landed, "{:?}", settled.why);
                    assert_eq!(settled.made.len(), n + 1);
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, plans);
criterion_main!(benches);
