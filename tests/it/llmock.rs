//! `reasonix run` against LLMock (PyPI `llmock` 0.2.2), issue 19: an OpenAI-compatible server,
//! written elsewhere, that calls the tools it is offered with schema-valid arguments, injects
//! faults at random, and judges how its clients coped (`llmock report`).
//!
//! The fault mix is the issue's: streams cut (20 %), malformed chunks (10 %), dropped
//! connections (10 %), 429 (20 %), 503 (15 %), 400 (5 %). Each of the 30 runs has its own prompt,
//! since LLMock groups identical request bodies as retries of one call.
//!
//! `.ci/run` installs LLMock in a venv of its own and sets `REASONIX_LLMOCK` to its `llmock`
//! script. Without the variable the test says `SKIPPED` and passes, unless `REASONIX_NO_SKIP=1`
//! (CI), where a skip is a failure.
//!
//! # Why the settings
//!
//! - `--max-retries 9`: each attempt fails about 59 % of the time under this mix (a retryable
//!   status 35 %, a stream fault on 40 % of the rest), so a request spends four attempts (the
//!   default of 3 retries) 12 % of the time, and about a quarter of the runs would fail on spent
//!   retries. Ten attempts is the most LLMock allows before it calls a retry storm; a request
//!   still spends them 0.59^10 ≈ 0.5 % of the time, about 0.3 times in a batch of 30 runs. So a
//!   run may fail for two reasons only: it drew a 400 (never retried), or one of its requests drew
//!   ten retryable faults in a row, which must show as exactly ten attempts and stay rare (at most
//!   four in a batch: with 0.3 to 0.5 expected, a chance well under 1 in 1000 to see more).
//!
//!   LLMock judges such a request by its last attempt alone: when that was a cut stream it
//!   reports `truncated_stream_accepted` (an error), when it was a malformed chunk
//!   `malformed_chunk_ignored`, though the client refused the attempt and failed the run. Those
//!   two findings are let through on the requests of runs that spent their retries, and nowhere
//!   else; everywhere else LLMock must find no error and none of the findings the issue rules
//!   out.
//! - `retry_base_ms: 40`: waits that keep growing through all nine retries. LLMock warns of
//!   `no_backoff` when the waits before a request's retries (those the server named no wait for)
//!   stop growing by a tenth, and a wait stops growing at the 8 s cap: with the default 500 ms
//!   (or 200 ms) two late retries both sit at the cap, their jitter alone ordering them, and CI
//!   once saw `~6.1 s` twice. From 40 ms the eighth wait is at most 5.12 s and the ninth, capped,
//!   at least 6 s (a ratio ≥ 1.17), and the first two (30–40 ms, 60–80 ms) are not both under
//!   the 50 ms LLMock calls no wait at all.
//! - `--stream-chunk-delay-ms 10`: a real model paces its chunks. Without a pause, LLMock writes
//!   a short stream whole before it notices that the client hung up at the malformed chunk, counts
//!   that attempt as complete, and so does not see the retry that follows as one.
//! - LLMock's 429 and 503 ask for `Retry-After: 1`, which is honoured: those seconds are most of
//!   the test's time, so the runs go six at a time.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::World;
use serde_json::Value;

const RUNS: usize = 30;
const PARALLEL: usize = 6;
const MAX_RETRIES: usize = 9;
/// The findings the issue rules out.
const FORBIDDEN: &[&str] = &[
    "gave_up",
    "truncated_stream_accepted",
    "malformed_chunk_ignored",
    "retry_after_ignored",
    "no_backoff",
    "retry_storm",
];

/// The `llmock` script, or `None` when the test must skip (said by [`common::skip_unless`],
/// which fails instead under `REASONIX_NO_SKIP=1`).
fn llmock() -> Option<PathBuf> {
    let path = std::env::var_os("REASONIX_LLMOCK").map(PathBuf::from);
    if common::skip_unless(
        path.is_some(),
        "LLMock (REASONIX_LLMOCK, the `llmock` script that .ci/run installs)",
    ) {
        return None;
    }
    let path = path?;
    assert!(
        path.is_file(),
        "REASONIX_LLMOCK={} is not a file; .ci/run installs LLMock and sets it",
        path.display()
    );
    Some(path)
}

/// A running `llmock serve`, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts LLMock on a free port of 127.0.0.1 with `faults`, and waits until it answers.
    fn start(llmock: &Path, faults: &[&str]) -> Server {
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .unwrap()
                .port();
            let child = Command::new(llmock)
                .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--log-level", "warning"])
                .args(faults)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", llmock.display()));
            let mut server = Server { child, port };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // it exited: the port was taken after all; another one
                }
                if server.get("/health").is_some() {
                    return server;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("LLMock did not come up");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The body of a GET, or `None` if LLMock does not answer 200.
    fn get(&self, path: &str) -> Option<String> {
        let mut socket = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .ok()?;
        write!(
            socket,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut answer = String::new();
        socket.read_to_string(&mut answer).ok()?;
        let (head, body) = answer.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One run's end.
struct Ran {
    code: Option<i32>,
    stderr: String,
    record: Vec<Value>,
}

/// The prompt of run `i`: its own, so that its requests are its own to LLMock.
fn prompt(i: usize) -> String {
    format!("Issue 19, run {i:02}: list the files in the workspace.")
}

fn run(i: usize, url: &str) -> Ran {
    let w = World::new();
    w.file("reasonix.yaml", "provider:\n  retry_base_ms: 40\n");
    w.trust();
    let out = Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["run", "--provider", "openai", "--model", "gpt-4o"])
        .args([
            "--base-url",
            &format!("{url}/v1"),
            "--api-key-env",
            "LLMOCK_KEY",
        ])
        .args(["--max-retries", &MAX_RETRIES.to_string()])
        .args(["--read-timeout-ms", "10000", "--unattended", "--workspace"])
        .arg(&w.ws)
        .arg(prompt(i))
        .env("LLMOCK_KEY", "sk-llmock")
        .env("HOME", &w.home)
        .env("NO_COLOR", "1")
        .current_dir(&w.outside)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Ran {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        record: common::jsonl(&w.ws.join(".reasonix/record.jsonl")),
    }
}

#[test]
fn thirty_runs_under_the_issue_19_fault_mix_finish_unless_they_drew_a_400_and_llmock_finds_no_fault()
 {
    let Some(llmock) = llmock() else {
        return;
    };
    let server = Server::start(
        &llmock,
        &[
            "--stream-fault",
            "truncate=0.2",
            "--stream-fault",
            "malformed=0.1",
            "--stream-fault",
            "disconnect=0.1",
            "--error-rate",
            "429=0.2",
            "--error-rate",
            "503=0.15",
            "--error-rate",
            "400=0.05",
            "--stream-chunk-delay-ms",
            "10",
        ],
    );
    let url = server.url();
    let started = Instant::now();

    let next = Mutex::new(1..=RUNS);
    let ran: Mutex<BTreeMap<usize, Ran>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..PARALLEL {
            s.spawn(|| {
                loop {
                    // Taken in a statement of its own, so the lock is not held while it runs.
                    let i = next.lock().unwrap().next();
                    let Some(i) = i else { break };
                    let r = run(i, &url);
                    ran.lock().unwrap().insert(i, r);
                }
            });
        }
    });
    let ran = ran.into_inner().unwrap();
    let took = started.elapsed();

    // Each run ended in one of three ways, read from its own record.
    let (mut finished, mut drew_400, mut spent) = (Vec::new(), BTreeSet::new(), Vec::new());
    let mut faults: BTreeMap<String, usize> = BTreeMap::new();
    for (i, r) in &ran {
        let attempts: Vec<&Value> = r
            .record
            .iter()
            .filter(|l| l["event"] == "attempt_failed")
            .collect();
        for a in &attempts {
            let kind = match a["status"].as_u64() {
                Some(status) => format!("{status}"),
                None => a["fault"].as_str().unwrap().to_owned(),
            };
            *faults.entry(kind).or_default() += 1;
        }
        let last = r.record.last().unwrap();
        match r.code {
            Some(0) => {
                assert_eq!(last["detail"], "finished", "run {i}: {last}");
                finished.push(*i);
            }
            Some(4) => {
                assert_eq!(last["event"], "provider_error", "run {i}: {last}");
                let why = last["detail"].as_str().unwrap();
                if why.starts_with("the provider answered 400") {
                    drew_400.insert(*i);
                } else if why.starts_with(&format!("gave up after {} attempts", MAX_RETRIES + 1)) {
                    // Ten retryable faults in a row at one request: ten attempt lines for its
                    // step, the last with no wait after it.
                    let step = attempts.last().unwrap()["step"].clone();
                    let at_step: Vec<&&Value> =
                        attempts.iter().filter(|a| a["step"] == step).collect();
                    assert_eq!(at_step.len(), MAX_RETRIES + 1, "run {i}: {why}");
                    assert!(at_step.last().unwrap()["wait_ms"].is_null(), "run {i}");
                    spent.push(*i);
                } else {
                    panic!("run {i} failed for another reason: {why}\n{}", r.stderr);
                }
            }
            other => panic!("run {i} exited with {other:?}:\n{}", r.stderr),
        }
    }

    // LLMock's own journal: which run sent each request, how many attempts each request body
    // got, and which runs it served a 400.
    let journal: Value = serde_json::from_str(&server.get("/_llmock/requests").unwrap()).unwrap();
    let requests = journal["requests"].as_array().unwrap();
    let attempts = requests.len();
    let mut sent: BTreeMap<u64, (usize, String)> = BTreeMap::new();
    let mut per_body: BTreeMap<String, usize> = BTreeMap::new();
    let mut served_400 = BTreeSet::new();
    for r in requests {
        let body = r["body"].to_string();
        let i = (1..=RUNS)
            .find(|i| body.contains(&prompt(*i)))
            .unwrap_or_else(|| panic!("LLMock served a request of no run: {r}"));
        let fingerprint = r["fingerprint"].as_str().unwrap().to_owned();
        *per_body.entry(fingerprint.clone()).or_default() += 1;
        sent.insert(r["seq"].as_u64().unwrap(), (i, fingerprint));
        if r["status"] == 400 {
            served_400.insert(i);
        }
    }
    assert_eq!(
        drew_400, served_400,
        "the runs that failed on a 400 are those LLMock served one"
    );

    // LLMock's verdict. It flags a call whose last attempt was cut or malformed even when the
    // client gave up there after its tenth attempt and failed the run: such a finding is allowed
    // on the request of a run that spent its retries, and nowhere else.
    let report = Command::new(&llmock)
        .args(["report", "--url", &url, "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    let verdict: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("llmock report --json: {e}: {text}"));
    let (mut at_cap, mut elsewhere) = (Vec::new(), Vec::new());
    for f in verdict["findings"].as_array().unwrap() {
        let last = f["requests"].as_array().unwrap().last().unwrap();
        let (run, body) = &sent[&last.as_u64().unwrap()];
        let code = f["code"].as_str().unwrap();
        if spent.contains(run)
            && per_body[body] == MAX_RETRIES + 1
            && ["truncated_stream_accepted", "malformed_chunk_ignored"].contains(&code)
        {
            at_cap.push(f);
        } else {
            elsewhere.push(f);
        }
    }
    let show = |list: &[&Value]| -> Vec<String> {
        list.iter()
            .map(|f| format!("{} {} (#{})", f["severity"], f["code"], f["requests"]))
            .collect()
    };

    eprintln!(
        "LLMock, issue 19 mix: {RUNS} runs in {:.1} s: {} finished, {} drew a 400 {drew_400:?}, \
         {} spent their retries {spent:?}; {} calls, {attempts} attempts, {} faults injected, \
         retried faults by kind {faults:?}; llmock report exit {:?}, {} errors, {} warnings, \
         findings {:?}, on calls that spent their attempts {:?}",
        took.as_secs_f64(),
        finished.len(),
        drew_400.len(),
        spent.len(),
        verdict["calls"],
        verdict["faults_injected"],
        report.status.code(),
        verdict["errors"],
        verdict["warnings"],
        show(&elsewhere),
        show(&at_cap),
    );
    assert_eq!(
        finished.len() + drew_400.len() + spent.len(),
        RUNS,
        "every run is accounted for"
    );
    assert!(
        spent.len() <= 4,
        "{} runs spent all {} attempts: far more than the 0.3 to 0.5 expected; runs {spent:?}",
        spent.len(),
        MAX_RETRIES + 1
    );
    for f in &elsewhere {
        let code = f["code"].as_str().unwrap();
        assert!(
            f["severity"] != "error" && !FORBIDDEN.contains(&code),
            "LLMock found {code}: {f}"
        );
    }
    let errors_at_cap = at_cap.iter().filter(|f| f["severity"] == "error").count();
    assert_eq!(
        report.status.code() == Some(0),
        errors_at_cap == 0,
        "llmock report exits 0 unless its only errors are on calls that spent their attempts: \
         {:?} {:?}",
        show(&elsewhere),
        show(&at_cap)
    );
}
