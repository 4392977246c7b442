//! OpenTelemetry export against a real OTLP/HTTP receiver: `tests/fixtures/otlp_receiver.py`
//! decodes each protobuf request with the OpenTelemetry project's own Python definitions (PyPI
//! `opentelemetry-proto`, in a venv `.ci/run` makes; `REASONIX_OTEL_PYTHON` names its python)
//! and writes it as JSON. The tests read the spans back: their names, parent links and
//! attributes for a scripted run and a `check` batch; the metrics; an untrusted project that
//! may not turn export on (and its trusted twin that may); a slow collector whose dropped spans
//! are counted at exit while the trace's root still arrives; a stalled one that holds the exit
//! no longer than its bound.

use crate::common;

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
    // Nobody can answer: each ask the unattended posture settled is an ask it answered.
    let settled = calls
        .iter()
        .filter(|l| l["admission"]["stage"] == "approve")
        .count() as u64;
    assert!(settled > 0);
    assert_eq!(
        asks_answered(&metrics),
        [("deny".to_owned(), "posture".to_owned(), settled)]
    );
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

/// The data points of a sum metric: each point's attributes and value.
fn points(metrics: &[(String, Value)], name: &str) -> Vec<(HashMap<String, String>, u64)> {
    metrics
        .iter()
        .filter(|(n, _)| n == name)
        .flat_map(|(_, m)| {
            m["sum"]["dataPoints"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|p| {
            (
                attributes(&p["attributes"]),
                p["asInt"].as_str().unwrap().parse::<u64>().unwrap(),
            )
        })
        .collect()
}

/// The asks answered, as (answer, who answered, count), sorted.
fn asks_answered(metrics: &[(String, Value)]) -> Vec<(String, String, u64)> {
    let mut out: Vec<(String, String, u64)> = points(metrics, "reasonix.asks.answered")
        .into_iter()
        .map(|(a, n)| {
            (
                a["reasonix.approval"].clone(),
                a["reasonix.approver"].clone(),
                n,
            )
        })
        .collect();
    out.sort();
    out
}

/// Claude Code's hook input for one tool call in `w`'s workspace.
fn claude_input(w: &World, tool: &str, input: Value) -> String {
    serde_json::json!({
        "session_id": "s1",
        "cwd": w.ws,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": format!("toolu_{tool}"),
    })
    .to_string()
}

#[test]
fn the_claude_hook_exports_a_trace_per_call_with_the_gate_stages_and_its_metrics() {
    let Some(python) = python() else { return };
    let w = World::new();
    w.file("src/main.rs", "fn main() {}\n");
    let receiver = Receiver::start(&python, &w.root, 0);
    let url = receiver.url();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str())];
    // A read the default policy allows, then a write it asks about, which the unattended
    // posture answers (deny).
    let read = claude_input(
        &w,
        "Read",
        serde_json::json!({"file_path": w.ws.join("src/main.rs")}),
    );
    let out = reasonix(&w, &["hook", "claude"], &env, &read);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let write = claude_input(
        &w,
        "Write",
        serde_json::json!({"file_path": w.ws.join("notes.md"), "content": "x"}),
    );
    let out = reasonix(
        &w,
        &["hook", "claude", "--posture", "unattended"],
        &env,
        &write,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"deny\""));

    let spans = receiver.spans();
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 2, "a trace per hook call: {roots:?}");
    for (root, tool, decision) in [(roots[0], "Read", "allow"), (roots[1], "Write", "deny")] {
        assert_eq!(root.name, "hook");
        assert_eq!(root.attrs["reasonix.hook"], "claude");
        assert_eq!(root.attrs["reasonix.claude_tool"], tool);
        assert_eq!(root.attrs["reasonix.decision"], decision);
        assert_eq!(root.attrs["gen_ai.tool.call.id"], format!("toolu_{tool}"));
        assert!(spans.iter().filter(|s| s.trace == root.trace).count() > 1);
        let calls = children(&spans, root);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].name, "call");
        let mut stages: Vec<&str> = children(&spans, calls[0])
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        stages.sort_by_key(|n| STAGES.iter().position(|s| s == n));
        assert_eq!(stages, STAGES);
    }
    let write_call = children(&spans, roots[1])[0];
    assert_eq!(write_call.attrs["reasonix.tool"], "write_file");
    assert_eq!(write_call.attrs["reasonix.verdict"], "deny");
    assert_eq!(write_call.attrs["reasonix.stage"], "approve");

    let metrics = receiver.metrics();
    let calls: Vec<(String, String, u64)> = points(&metrics, "reasonix.calls")
        .into_iter()
        .map(|(a, n)| (a["reasonix.tool"].clone(), a["reasonix.verdict"].clone(), n))
        .collect();
    assert!(
        calls.contains(&("read_file".into(), "allow".into(), 1)),
        "{calls:?}"
    );
    assert!(
        calls.contains(&("write_file".into(), "deny".into(), 1)),
        "{calls:?}"
    );
    assert_eq!(
        asks_answered(&metrics),
        [("deny".to_owned(), "posture".to_owned(), 1)]
    );
}

/// A Rust SDK client whose user approves every ask put to it (MCP elicitation).
#[derive(Clone)]
struct Approving;

impl rmcp::ClientHandler for Approving {
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::service::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(serde_json::json!({ "approve": true })),
        )
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build(),
            rmcp::model::Implementation::new("approving", "1.0"),
        )
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_serve_exports_one_trace_with_a_span_per_client_call() {
    use rmcp::ServiceExt as _;
    let Some(python) = python() else { return };
    let w = World::new();
    w.file("notes.md", "hello\n");
    w.file(".env", "KEY=1\n");
    let receiver = Receiver::start(&python, &w.root, 0);
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["mcp", "serve", "--no-mcp", "--workspace"])
        .arg(&w.ws)
        .env("HOME", &w.home)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url())
        .env("OTEL_SERVICE_NAME", "served")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let calls = [
        ("read_file", serde_json::json!({"path": "notes.md"})),
        (
            "write_file",
            serde_json::json!({"path": "new.md", "content": "x"}),
        ),
        ("read_file", serde_json::json!({"path": ".env"})),
    ];
    let served = async {
        let running = Approving.serve((stdout, stdin)).await.unwrap();
        for (name, arguments) in &calls {
            running
                .call_tool(
                    rmcp::model::CallToolRequestParams::new(name.to_string())
                        .with_arguments(arguments.as_object().cloned().unwrap()),
                )
                .await
                .unwrap();
        }
        running.cancel().await.unwrap();
        child.wait().await.unwrap()
    };
    let status = tokio::time::timeout(Duration::from_secs(120), served)
        .await
        .expect("mcp serve ran past two minutes");
    assert!(status.success(), "{status:?}");

    let spans = receiver.spans();
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
    let run = roots[0];
    assert_eq!(run.name, "run");
    assert_eq!(run.attrs["reasonix.entry"], "mcp serve");
    assert_eq!(run.resource["service.name"], "served");
    assert!(spans.iter().all(|s| s.trace == run.trace));
    let record = common::jsonl(&w.ws.join(".reasonix/record.jsonl"));
    assert_eq!(
        run.attrs["reasonix.run_id"],
        record[0]["run_id"].as_str().unwrap()
    );
    let executed = children(&spans, run);
    let tools: Vec<&str> = executed.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        tools,
        [
            "execute_tool read_file",
            "execute_tool write_file",
            "execute_tool read_file"
        ]
    );
    let outcomes: Vec<&str> = executed
        .iter()
        .map(|s| s.attrs["reasonix.outcome"].as_str())
        .collect();
    assert_eq!(outcomes, ["succeeded", "succeeded", "blocked"]);
    for s in &executed {
        let gate = children(&spans, s);
        assert_eq!(gate.len(), 1, "{s:?}");
        assert_eq!(gate[0].name, "call");
        assert_eq!(children(&spans, gate[0]).len(), STAGES.len());
    }
    assert_eq!(executed[1].attrs["reasonix.approver"], "mcp_elicitation");

    let metrics = receiver.metrics();
    let total: u64 = points(&metrics, "reasonix.calls")
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(total, 3);
    assert_eq!(
        asks_answered(&metrics),
        [("allow_once".to_owned(), "mcp_elicitation".to_owned(), 1)]
    );
}

/// On a terminal, over the OpenAI-compatible provider: the first request fails (503) and is
/// retried; then a person allows one write once and another for the session, the session's
/// approval answers that write's repeat, and a pre-tool hook denies a delete that was asked
/// about. Each is counted by who answered; the retry is counted too.
#[tokio::test(flavor = "multi_thread")]
async fn asks_answered_are_counted_by_who_answered_and_provider_retries_are_counted() {
    use common::mock::{self, Mock, Reply};
    use std::io::Write as _;
    let Some(python) = python() else { return };
    let a = r#"{"path": "a.txt", "content": "a"}"#;
    let b = r#"{"path": "b.txt", "content": "b"}"#;
    let server = Mock::start(vec![
        Reply::Status(503, "busy".into(), None),
        mock::proposes(&[("c1", "write_file", a)], 7),
        mock::proposes(&[("c2", "write_file", b)], 7),
        mock::proposes(&[("c3", "write_file", b)], 7),
        mock::proposes(&[("c4", "delete_file", r#"{"path": "gone.txt"}"#)], 7),
        mock::says("done"),
    ])
    .await;
    let url = server.url.clone();
    let (spans, metrics, stderr) = tokio::task::spawn_blocking(move || {
        let w = World::new();
        w.file("gone.txt", "x");
        let receiver = Receiver::start(&python, &w.root, 0);
        let dir = w.home.join(".config/reasonix");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("reasonix.yaml"),
            r#"hooks:
  pre_tool:
    - tools: [delete_file]
      command: [sh, -c, "cat >/dev/null; echo '{\"decision\": \"deny\", \"reason\": \"no deletes\"}'"]
"#,
        )
        .unwrap();
        let policy = w.policy(
            "asks.yaml",
            "version: 1\ndefaults:\n  read_only: allow\n  writer: ask\n",
        );
        let pty = nix::pty::openpty(None, None).unwrap();
        let mut master = std::fs::File::from(pty.master);
        // Once for a.txt, for the session for b.txt; nothing else is put to the person.
        master.write_all(b"o\ns\n").unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reasonix"));
        cmd.args(["run", "--provider", "openai", "--model", "m", "--base-url", &url])
            .args(["--api-key-env", "MOCK_KEY", "--policy", &policy, "--workspace"])
            .arg(&w.ws)
            .arg("write two files")
            .stdin(Stdio::from(pty.slave))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("MOCK_KEY", "k")
            .env("HOME", &w.home)
            .env("NO_COLOR", "1")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url())
            .env_remove("OTEL_SDK_DISABLED");
        let child = cmd.spawn().unwrap();
        let pid = child.id();
        // Bounded: killed after two minutes.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            if rx.recv_timeout(Duration::from_secs(120)).is_err() {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        });
        let out = child.wait_with_output().unwrap();
        let _ = tx.send(());
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        (receiver.spans(), receiver.metrics(), stderr)
    })
    .await
    .unwrap();
    assert_eq!(stderr.matches("Run it?").count(), 2, "{stderr}");
    assert_eq!(
        asks_answered(&metrics),
        [
            ("allow_once".to_owned(), "person".to_owned(), 1),
            ("allow_session".to_owned(), "person".to_owned(), 1),
            ("deny".to_owned(), "hook".to_owned(), 1),
            ("session".to_owned(), "session".to_owned(), 1),
        ],
        "{stderr}"
    );
    let retries = points(&metrics, "reasonix.provider.retries");
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!(retries[0].0["error.type"], "status");
    assert_eq!(retries[0].1, 1);
    // The chat span of the first turn says it was retried.
    assert!(
        spans.iter().any(|s| s.name.starts_with("chat")
            && s.attrs.get("reasonix.retries").map(String::as_str) == Some("1")),
        "{spans:?}"
    );
    // Each call's span names who answered.
    let approvers: Vec<&str> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool"))
        .filter_map(|s| s.attrs.get("reasonix.approver").map(String::as_str))
        .collect();
    let mut sorted = approvers.clone();
    sorted.sort();
    assert_eq!(sorted, ["hook", "person", "person", "session"]);
}
