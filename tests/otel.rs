//! OpenTelemetry export against a real OTLP/HTTP receiver: `tests/fixtures/otlp_receiver.py`
//! decodes each protobuf request with the OpenTelemetry project's own Python definitions (PyPI
//! `opentelemetry-proto`, in a venv `.ci/run` makes; `REASONIX_OTEL_PYTHON` names its python)
//! and writes it as JSON. The tests read the spans back: their names, parent links and
//! attributes for a scripted run and a `check` batch; the metrics; an untrusted project that
//! may not turn export on (and its trusted twin that may); a slow collector whose dropped spans
//! are counted at exit while the trace's root still arrives; a stalled one that holds the exit
//! no longer than its bound.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::World;
use serde_json::Value;

fn python() -> Option<PathBuf> {
    let path = std::env::var_os("REASONIX_OTEL_PYTHON").map(PathBuf::from);
    if common::skip_unless(
        path.is_some(),
        "opentelemetry-proto (REASONIX_OTEL_PYTHON, the venv's python that .ci/run makes)",
    ) {
        return None;
    }
    path
}

/// A running receiver, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(python: &Path, dir: &Path, delay_ms: u64) -> Receiver {
        Receiver::start_with(python, dir, &["--delay-ms", &delay_ms.to_string()])
    }

    fn start_with(python: &Path, dir: &Path, args: &[&str]) -> Receiver {
        let out = dir.join("otlp.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otlp_receiver.py");
        let mut child = Command::new(python)
            .arg(&script)
            .arg(&out)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        // The port, on the first line; a reader thread so that a receiver that never prints
        // cannot hang the test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the receiver did not start");
        Receiver {
            child,
            port: line.trim().parse().expect("a port"),
            out,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far: (path, body).
    fn requests(&self) -> Vec<(String, Value)> {
        let Ok(text) = std::fs::read_to_string(&self.out) else {
            return Vec::new();
        };
        text.lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (v["path"].as_str().unwrap().to_owned(), v["body"].clone())
            })
            .collect()
    }

    /// Every span received: name, attributes (values as strings), ids.
    fn spans(&self) -> Vec<Span> {
        let mut out = Vec::new();
        for (path, body) in self.requests() {
            if path != "/v1/traces" {
                continue;
            }
            for rs in body["resourceSpans"].as_array().unwrap() {
                let resource = attributes(&rs["resource"]["attributes"]);
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    for s in ss["spans"].as_array().unwrap() {
                        out.push(Span {
                            name: s["name"].as_str().unwrap().to_owned(),
                            trace: s["traceId"].as_str().unwrap().to_owned(),
                            id: s["spanId"].as_str().unwrap().to_owned(),
                            parent: s["parentSpanId"].as_str().unwrap_or("").to_owned(),
                            attrs: attributes(&s["attributes"]),
                            resource: resource.clone(),
                        });
                    }
                }
            }
        }
        out
    }

    /// The names of the metrics received.
    fn metrics(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for (path, body) in self.requests() {
            if path != "/v1/metrics" {
                continue;
            }
            for rm in body["resourceMetrics"].as_array().unwrap() {
                for sm in rm["scopeMetrics"].as_array().unwrap() {
                    for m in sm["metrics"].as_array().unwrap() {
                        out.push((m["name"].as_str().unwrap().to_owned(), m.clone()));
                    }
                }
            }
        }
        out
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace: String,
    id: String,
    parent: String,
    attrs: HashMap<String, String>,
    resource: HashMap<String, String>,
}

fn attributes(list: &Value) -> HashMap<String, String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let v = a["value"].as_object().unwrap().values().next().unwrap();
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (a["key"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

/// Runs `cmd` to its end or kills it after `limit`.
fn bounded(mut cmd: Command, stdin: &str, limit: Duration) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn reasonix(w: &World, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reasonix"));
    cmd.args(args)
        .current_dir(&w.outside)
        .env("HOME", &w.home)
        .env("NO_COLOR", "1")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED")
        .envs(env.iter().copied());
    bounded(cmd, stdin, Duration::from_secs(120))
}

fn example(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

/// `reasonix run` of the example session (every outcome), unattended.
fn run_example(w: &World, env: &[(&str, &str)]) -> Output {
    for entry in ["notes.md", ".env", "src/main.rs"] {
        let text = std::fs::read_to_string(example("examples/workspace/") + entry).unwrap();
        w.file(entry, &text);
    }
    let provider = format!("script:{}", example("examples/session/session.json"));
    let policy = example("examples/session/policy.yaml");
    let ws = w.ws.display().to_string();
    reasonix(
        w,
        &[
            "run",
            "--provider",
            &provider,
            "--policy",
            &policy,
            "--workspace",
            &ws,
            "--unattended",
            "Tidy the notes",
        ],
        env,
        "",
    )
}

fn children<'a>(spans: &'a [Span], parent: &Span) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.parent == parent.id).collect()
}

const STAGES: [&str; 8] = [
    "gate.target",
    "gate.validate",
    "gate.classify",
    "gate.resolve",
    "gate.policy",
    "gate.sandbox",
    "gate.plan",
    "gate.approve",
];

#[test]
fn a_run_is_one_trace_with_a_span_per_call_its_stages_and_its_jail_run() {
    let Some(python) = python() else { return };
    let w = World::new();
    let receiver = Receiver::start(&python, &w.root, 0);
    let url = receiver.url();
    let out = run_example(
        &w,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &url),
            ("OTEL_SERVICE_NAME", "ci-agent"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("dropped"), "{stderr}");
    let spans = receiver.spans();
    let record = common::jsonl(&w.ws.join(".reasonix/record.jsonl"));

    // One trace, rooted in the run's span.
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    let run = roots[0];
    assert_eq!(run.name, "run");
    assert!(spans.iter().all(|s| s.trace == run.trace));
    assert_eq!(
        run.attrs["reasonix.run_id"],
        record[0]["run_id"].as_str().unwrap()
    );
    assert_eq!(run.resource["service.name"], "ci-agent");
    assert_eq!(run.resource["deployment.environment"], "ci");

    // A provider request per turn, as gen_ai.* says it.
    let chats: Vec<&Span> = children(&spans, run)
        .into_iter()
        .filter(|s| s.attrs.get("gen_ai.operation.name").map(String::as_str) == Some("chat"))
        .collect();
    assert_eq!(chats.len(), 6, "six turns");
    assert!(chats[0].name.starts_with("chat "));
    assert_eq!(
        chats[0].attrs["gen_ai.response.finish_reasons"],
        "tool_calls"
    );

    // A span per call of the record, a child of the run, with the record's outcome.
    let calls: Vec<&Value> = record.iter().filter(|l| l.get("event").is_none()).collect();
    assert_eq!(calls.len(), 10);
    for line in &calls {
        let id = line["call_id"].as_str().unwrap();
        let tool = line["tool"].as_str().unwrap();
        let span = spans
            .iter()
            .find(|s| {
                s.name.starts_with("execute_tool")
                    && s.attrs.get("gen_ai.tool.call.id").map(String::as_str) == Some(id)
            })
            .unwrap_or_else(|| panic!("no span for {id}"));
        assert_eq!(span.parent, run.id, "{id}");
        assert_eq!(span.name, format!("execute_tool {tool}"));
        assert_eq!(span.attrs["gen_ai.tool.name"], tool);
        assert_eq!(
            span.attrs["reasonix.outcome"],
            line["outcome"].as_str().unwrap()
        );
        assert_eq!(
            span.attrs["reasonix.verdict"],
            line["admission"]["verdict"].as_str().unwrap()
        );
        assert_eq!(
            span.attrs["reasonix.stage"],
            line["admission"]["stage"].as_str().unwrap()
        );
        assert_eq!(span.attrs["reasonix.posture"], "unattended");
        let decisive: Vec<&str> = line["admission"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["decisive"] == true)
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(span.attrs["reasonix.rules"], decisive.join(","));
        // The gate's call span, and under it a span per stage that ran, in order.
        let gate: Vec<&Span> = children(&spans, span)
            .into_iter()
            .filter(|s| s.name == "call")
            .collect();
        assert_eq!(gate.len(), 1, "{id}");
        let stages: Vec<&str> = children(&spans, gate[0])
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        let expected: &[&str] = if line["outcome"] == "invalid" {
            &STAGES[..2]
        } else {
            &STAGES
        };
        let mut sorted = stages.clone();
        sorted.sort_by_key(|n| STAGES.iter().position(|s| s == n));
        assert_eq!(sorted, expected, "{id}");
        // A bash call that ran has its jail run, with process.* attributes.
        let jail: Vec<&Span> = children(&spans, span)
            .into_iter()
            .filter(|s| s.name == "jail.run")
            .collect();
        if tool == "bash" && line["started_ms"].is_number() {
            assert_eq!(jail.len(), 1, "{id}");
            let command: Value = serde_json::from_str(line["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(
                jail[0].attrs["process.command_line"],
                command["command"].as_str().unwrap()
            );
            assert_eq!(jail[0].attrs["process.executable.name"], "bash");
            assert_eq!(
                jail[0].attrs["process.exit.code"],
                line["exit_code"].to_string()
            );
        } else {
            assert!(jail.is_empty(), "{id}: nothing ran in a jail");
        }
    }
    // The secret read was denied by its rule.
    let denied = spans
        .iter()
        .find(|s| {
            s.name.starts_with("execute_tool")
                && s.attrs.get("gen_ai.tool.call.id").map(String::as_str) == Some("call_3_0")
        })
        .unwrap();
    assert_eq!(denied.attrs["reasonix.rules"], "no-secrets");

    // Metrics: calls by tool, verdict and outcome; the latency histograms.
    let metrics = receiver.metrics();
    let names: Vec<&str> = metrics.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "reasonix.calls",
        "reasonix.admission.duration",
        "reasonix.jail.duration",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let calls_metric = &metrics
        .iter()
        .find(|(n, _)| n == "reasonix.calls")
        .unwrap()
        .1;
    let points = calls_metric["sum"]["dataPoints"].as_array().unwrap();
    let total: u64 = points
        .iter()
        .map(|p| p["asInt"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 10);
    let blocked: u64 = points
        .iter()
        .filter(|p| attributes(&p["attributes"])["reasonix.outcome"] == "blocked")
        .map(|p| p["asInt"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(blocked, 3);
}

#[test]
fn a_check_batch_is_one_trace_with_a_span_per_call_from_the_user_settings() {
    let Some(python) = python() else { return };
    let w = World::new();
    let receiver = Receiver::start(&python, &w.root, 0);
    let dir = w.home.join(".config/reasonix");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("reasonix.yaml"),
        format!(
            "otel:\n  endpoint: {}\n  resource_attributes: {{team: sec}}\n",
            receiver.url()
        ),
    )
    .unwrap();
    // Enough lines that they are judged on several threads.
    let mut lines = String::new();
    for i in 0..40 {
        lines.push_str(&format!(
            "{{\"id\":\"c{i}\",\"name\":\"read_file\",\"arguments\":{{\"path\":\"f{i}.txt\"}}}}\n"
        ));
    }
    lines.push_str("{\"id\":\"env\",\"name\":\"read_file\",\"arguments\":{\"path\":\".env\"}}\n");
    let ws = w.ws.display().to_string();
    let out = reasonix(
        &w,
        &["check", "--workspace", &ws, "--format", "json"],
        &[],
        &lines,
    );
    assert_eq!(
        out.status.code(),
        Some(20),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = receiver.spans();
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    assert_eq!(roots[0].name, "check");
    assert_eq!(roots[0].resource["team"], "sec");
    assert_eq!(roots[0].resource["service.name"], "reasonix");
    let calls: Vec<&Span> = children(&spans, roots[0]);
    assert_eq!(calls.len(), 41);
    assert!(calls.iter().all(|c| c.name == "call"));
    assert!(calls.iter().all(|c| children(&spans, c).len() == 8));
    let env = calls
        .iter()
        .find(|c| c.attrs["gen_ai.tool.call.id"] == "env")
        .unwrap();
    assert_eq!(env.attrs["reasonix.verdict"], "deny");
    assert_eq!(env.attrs["reasonix.rules"], "no-secrets");
}

#[test]
fn an_untrusted_project_cannot_turn_export_on_and_a_trusted_one_can() {
    let Some(python) = python() else { return };
    let w = World::new();
    let receiver = Receiver::start(&python, &w.root, 0);
    w.file(
        "reasonix.yaml",
        &format!("otel:\n  endpoint: {}\n", receiver.url()),
    );
    let ws = w.ws.display().to_string();
    let call = r#"{"name":"read_file","arguments":{"path":"a.txt"}}"#;
    // The attack: a cloned repository sends the gate's decisions to a URL of its choosing.
    let out = reasonix(&w, &["check", "--workspace", &ws, call], &[], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("otel.endpoint"), "{stderr}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(receiver.requests().is_empty(), "nothing was sent");
    // The legitimate twin: once the user trusts the file, export is on.
    w.trust();
    let out = reasonix(&w, &["check", "--workspace", &ws, call], &[], "");
    assert_eq!(out.status.code(), Some(0));
    let spans = receiver.spans();
    assert!(spans.iter().any(|s| s.name == "check"), "{spans:?}");
    assert!(spans.iter().any(|s| s.name == "call"));
}

/// `check` of `n` reads, its stdout lines.
fn reads(n: usize) -> String {
    let mut lines = String::new();
    for i in 0..n {
        lines.push_str(&format!(
            "{{\"id\":\"c{i}\",\"name\":\"read_file\",\"arguments\":{{\"path\":\"f{i}.txt\"}}}}\n"
        ));
    }
    lines
}

/// The user's settings: export to `url` with a queue of one span, a span per request.
fn tiny_queue(w: &World, url: &str) {
    let dir = w.home.join(".config/reasonix");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("reasonix.yaml"),
        format!("otel:\n  endpoint: {url}\n  queue: 1\n  batch: 1\n  metrics: false\n"),
    )
    .unwrap();
}

#[test]
fn spans_a_slow_collector_cannot_take_are_dropped_counted_and_said_at_exit() {
    let Some(python) = python() else { return };
    let w = World::new();
    // Each request is answered after 3 s; the queue holds one span and a request carries one.
    let receiver = Receiver::start(&python, &w.root, 3000);
    tiny_queue(&w, &receiver.url());
    let lines = reads(50);
    let ws = w.ws.display().to_string();
    let start = Instant::now();
    let out = reasonix(
        &w,
        &["check", "--workspace", &ws, "--format", "json"],
        &[],
        &lines,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // 50 verdicts, none waiting on the collector (the exit waits a few seconds at most for the
    // queue to be sent).
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 50);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert!(
        stderr.contains("OpenTelemetry:") && stderr.contains("span(s) dropped"),
        "{stderr}"
    );
    // The trace's root is not among them: it went first, on a request of its own.
    let spans = receiver.spans();
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{spans:?}");
    assert_eq!(roots[0].name, "check");
}

#[test]
fn a_stalled_collector_holds_the_exit_a_bounded_time_and_the_drops_are_said() {
    let Some(python) = python() else { return };
    let w = World::new();
    // Every request is held a minute before it is even read.
    let receiver = Receiver::start_with(&python, &w.root, &["--stall-ms", "60000"]);
    tiny_queue(&w, &receiver.url());
    let ws = w.ws.display().to_string();
    let start = Instant::now();
    let out = reasonix(
        &w,
        &["check", "--workspace", &ws, "--format", "json"],
        &[],
        &reads(20),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 20);
    // The exit waits at most five seconds for the collector (and the judging took little).
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert!(stderr.contains("span(s) dropped (0 sent)"), "{stderr}");
    assert!(receiver.requests().is_empty());
}
