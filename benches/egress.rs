//! The cost of the egress proxy (issue 15), measured three ways:
//!
//! - **one connection**: connect, send a byte, read it back from an echo server on 127.0.0.1 —
//!   directly, and through the proxy (`CONNECT`, judged by the `sandbox.network` entries) — so
//!   the difference is the proxy's own set-up per connection: accept, parse the head, judge,
//!   check the address, connect, answer `200`;
//! - **the gate's judgement** of one `network_connect` call (what a bash call's connections pay
//!   on top of the entry list: the whole admission path);
//! - **one run**: spawning `true` under `enforce` without network rules, and with one (each run
//!   then makes a network namespace, brings `lo` up, binds the proxy and stops it).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use reasonix::egress::{Allowlist, ListJudge, Proxy};
use reasonix::sandbox::jail::{Capture, Enforcement, JailConfig, JailPlan, NetRule, danger};
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};

/// An echo server on 127.0.0.1: its port.
fn echo() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 256];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

fn round_trip(s: &mut TcpStream) {
    s.write_all(b"x").expect("write");
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("echo");
}

/// Reads a response head up to its blank line.
fn read_head(s: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).expect("head");
        head.push(b[0]);
    }
    head
}

fn connection(c: &mut Criterion) {
    let port = echo();
    let list = Allowlist::new([("127.0.0.1", port)]).expect("list");
    // The proxy on a host listener: the same code a run serves in its namespace.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let proxy_port = listener.local_addr().expect("addr").port();
    let proxy = Proxy::start(listener, Arc::new(ListJudge(list.clone())), list).expect("proxy");

    c.bench_function("connect and echo, direct", |b| {
        b.iter(|| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            round_trip(&mut s);
        })
    });
    c.bench_function("connect and echo, through the proxy (CONNECT)", |b| {
        b.iter(|| {
            let mut s = TcpStream::connect(("127.0.0.1", proxy_port)).expect("connect");
            write!(
                s,
                "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
            )
            .expect("connect line");
            let head = read_head(&mut s);
            assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
            round_trip(&mut s);
        })
    });
    drop(proxy);
}

fn judgement(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    let policy = PolicySet::from_yaml(
        "p.yaml",
        "version: 1\nsandbox:\n  network: [\"*.crates.io:443\", \"github.com:443\"]\n",
    )
    .expect("policy");
    let gate = Gate::builder(Registry::with_builtins(), &policy, &ws)
        .posture(Posture::Unattended)
        .host_files(HostFiles::for_workspace(&ws))
        .build()
        .expect("gate");
    let call = r#"{"name":"network_connect","arguments":{"host":"index.crates.io","port":443}}"#;
    c.bench_function("network_connect judged by the gate", |b| {
        b.iter(|| gate.admit_text(call))
    });
}

fn run(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("workspace");
    let ws = dir.path().canonicalize().expect("workspace");
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let plan = |network: Vec<NetRule>| {
        let config = JailConfig {
            mode: Enforcement::Enforce,
            network,
            ..JailConfig::default()
        };
        JailPlan::new(&config, &ws, home.as_deref())
    };
    let bare = plan(Vec::new());
    let proxied = plan(vec![
        NetRule::try_from("index.crates.io:443".to_owned()).expect("rule"),
    ]);
    let argv = ["true".to_owned()];
    for p in [&bare, &proxied] {
        let r = danger::exec_unjudged(p, &argv, None, Capture::Bounded(1024));
        assert!(r.is_ok(), "{r:?}: {:?}", p.refusal());
    }
    c.bench_function("spawn true, enforce", |b| {
        b.iter(|| danger::exec_unjudged(&bare, &argv, None, Capture::Bounded(1024)).expect("run"))
    });
    c.bench_function(
        "spawn true, enforce with sandbox.network (network namespace and proxy)",
        |b| {
            b.iter(|| {
                danger::exec_unjudged(&proxied, &argv, None, Capture::Bounded(1024)).expect("run")
            })
        },
    );
}

criterion_group!(benches, connection, judgement, run);
criterion_main!(benches);
