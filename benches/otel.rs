//! The cost of OpenTelemetry export (issue 29): one `reasonix check` process judging a JSONL
//! batch of 10,000 calls (reads, writes, bash commands, a denied secret), with export off and
//! with export on to an OTLP/HTTP collector on 127.0.0.1. The collector here is a sink (hyper,
//! answering 200 to every request), so that decoding spans does not compete with the process
//! measured for this machine's two cores; a real collector runs elsewhere.
//!
//! `cargo bench --bench otel`. The claim: export on is at most 10 % slower than off.

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

/// Calls in the batch.
const CALLS: usize = 10_000;

fn batch() -> String {
    let kinds = [
        r#"{"id":"r%","name":"read_file","arguments":{"path":"src/lib%.rs"}}"#,
        r#"{"id":"w%","name":"write_file","arguments":{"path":"notes/n%.md","content":"x"}}"#,
        r#"{"id":"b%","name":"bash","arguments":{"command":"git status --short && grep -rn TODO src | head -20"}}"#,
        r#"{"id":"s%","name":"read_file","arguments":{"path":".env"}}"#,
    ];
    let mut out = String::new();
    for i in 0..CALLS {
        out.push_str(&kinds[i % kinds.len()].replace('%', &i.to_string()));
        out.push('\n');
    }
    out
}

/// A collector that takes every request and answers 200 with an empty body.
fn sink() -> (SocketAddr, tokio::runtime::Runtime) {
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("listener");
    let addr = listener.local_addr().expect("address");
    rt.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                    use http_body_util::BodyExt;
                    let _ = req.into_body().collect().await;
                    Ok::<_, std::convert::Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "application/x-protobuf")
                            .body(http_body_util::Full::new(hyper::body::Bytes::new()))
                            .expect("response"),
                    )
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, rt)
}

fn check(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(ws.join("src")).expect("folders");
    std::fs::create_dir_all(&home).expect("home");
    let input = batch();
    let (addr, _rt) = sink();
    let endpoint = format!("http://{addr}");
    let run = |export: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reasonix"));
        cmd.args(["check", "--format", "json", "--workspace"])
            .arg(&ws)
            .env("HOME", &home)
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if export {
            cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
        }
        let mut child = cmd.spawn().expect("reasonix check");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("batch");
        let out = child.wait_with_output().expect("reasonix check");
        // 20: some deny (the secret).
        assert_eq!(
            out.status.code(),
            Some(20),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("dropped"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let mut group = c.benchmark_group("check_10000_calls");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("export_off", |b| b.iter(|| run(false)));
    group.bench_function("export_on", |b| b.iter(|| run(true)));
    group.finish();
}

criterion_group!(benches, check);
criterion_main!(benches);
