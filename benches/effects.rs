//! Issue 25: what a per-call plan costs. The spawns are timed in turns (each sample of one runs
//! the other two beside it), so their differences hold under a changing load. A bash call admitted as read-only runs on a read-only
//! workspace, a writer on an overlay whose changes are read, judged and committed after it
//! ends. Against the jailed spawn of `true` writing in place (the plan of every call before):
//!
//! - `spawn true, in place`: the baseline (`Shape::direct`);
//! - `spawn true, read-only`: the same with the write roots left read-only;
//! - `spawn true, observed, nothing changed`: on an overlay, then its (empty) upper layer read
//!   and settled;
//! - `commit N files`: only what follows a writer's run — reading its upper layer, judging each
//!   change through the gate, staging, `syncfs`, landing — for a run that wrote N new files
//!   (the run itself is not timed);
//! - `plan a call, …` (issue 30): the plan of one call, computed as the bash tool computes it
//!   (`Invocation::shape`): how it may write, and the paths the default policy protects from
//!   reading that exist now (`**/.env` and the like), looked for in a workspace of 1,000 files
//!   in 50 folders holding one `.env` — the walk a session keeps (`WalkCache`), so only the
//!   folders' times are read again; and the same for a policy that protects nothing.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::effects;
use reasonix::sandbox::jail::{self, Capture, JailConfig, JailPlan, Shape, Writes, danger};
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};

const ALLOW_ALL: &str = "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n";

fn plans(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let plan = JailPlan::new(&JailConfig::default(), &ws, home.as_deref())
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

    // The three are timed in turns: each sample of one runs the other two beside it, untimed,
    // so that a change in the machine's load falls on all three alike.
    let observe_nothing = |r: jail::RunResult| {
        let upper = r.observed.expect("observed");
        let settled = effects::settle(
            effects::observe(upper, judge.as_ref()),
            &mut |_| false,
            &mut |_| {},
        );
        assert!(settled.landed && settled.made.is_empty());
    };
    let variants: [(&str, &dyn Fn()); 3] = [
        ("spawn true, in place", &|| {
            run(&Shape::direct());
        }),
        ("spawn true, read-only", &|| {
            run(&Shape::read_only());
        }),
        ("spawn true, observed, nothing changed", &|| {
            observe_nothing(run(&observed));
        }),
    ];
    let mut g = c.benchmark_group("per-call plans");
    for (i, (name, timed)) in variants.iter().enumerate() {
        g.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    for (k, (_, other)) in variants.iter().enumerate() {
                        if k == i {
                            let started = Instant::now();
                            timed();
                            total += started.elapsed();
                        } else {
                            other();
                        }
                    }
                }
                total
            })
        });
    }
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

/// The plan of one call: its shape, as `Invocation::shape` computes it from its admission.
fn call_plans(c: &mut Criterion) {
    use std::collections::BTreeSet;
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    for d in 0..50 {
        let folder = ws.join(format!("src/m{d}"));
        std::fs::create_dir_all(&folder).expect("folder");
        for f in 0..20 {
            std::fs::write(folder.join(format!("f{f}.rs")), "fn f() {}\n").expect("file");
        }
    }
    std::fs::write(ws.join("src/m7/.env"), "KEY=v\n").expect("secret");
    // Old enough that no folder is racily clean (read again every time).
    let old = std::time::SystemTime::now() - Duration::from_secs(60);
    for d in std::iter::once(ws.clone())
        .chain(std::iter::once(ws.join("src")))
        .chain((0..50).map(|d| ws.join(format!("src/m{d}"))))
    {
        std::fs::File::open(&d)
            .and_then(|f| f.set_modified(old))
            .expect("folder time");
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let plan = JailPlan::new(&JailConfig::default(), &ws, home.as_deref());
    let effects: BTreeSet<reasonix::vocab::Effect> = [reasonix::vocab::Effect::Exec].into();
    let default = PolicySet::embedded_default();
    let nothing = PolicySet::from_yaml("allow.yaml", ALLOW_ALL).expect("policy");
    let mut g = c.benchmark_group("per-call plans");
    for (name, policy) in [
        ("plan a call, default policy, 1,000 files", &default),
        ("plan a call, nothing protected", &nothing),
    ] {
        let gate = Gate::builder(Registry::with_builtins(), policy, &ws)
            .posture(Posture::Unattended)
            .host_files(HostFiles::for_workspace(&ws))
            .build()
            .expect("gate");
        let filter = gate.withholding("bash", &effects);
        let shape = || {
            let hidden = if filter.protects_any() {
                plan.protected(filter.identity(), &|p| filter.withholds(p).is_some())
            } else {
                Vec::new()
            };
            Shape {
                writes: Writes::for_effects(true),
                hidden,
            }
        };
        // The first walk reads every folder; the session keeps it.
        let first = shape();
        if filter.protects_any() {
            assert_eq!(first.hidden, [ws.join("src/m7/.env")]);
        }
        g.bench_function(name, |b| b.iter(shape));
    }
    g.finish();
}

criterion_group!(benches, call_plans, plans);
criterion_main!(benches);
