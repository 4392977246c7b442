//! The agent loop end to end: a mock OpenAI-compatible server streaming SSE (fragments split
//! across chunks, parallel calls, malformed arguments, HTTP errors), failed attempts and their
//! retries (cut streams, malformed chunks, stalls, dropped connections, retryable statuses), the
//! scripted provider, the approver, leases under concurrency, bounded results and the execution
//! record.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::mock::{self, Mock, Reply};
use common::{ALLOW_ALL, World};
use reasonix::agent::openai::{OpenAiConfig, OpenAiProvider};
use reasonix::agent::provider::{FailedAttempt, Jitter, RetryPolicy};
use reasonix::agent::script::{ScriptProvider, ScriptedCall, Turn};
use reasonix::agent::{
    Always, Answer, Approver, End, Provider, ProviderError, Session, SessionError, Terminal,
};
use reasonix::lease::Leases;
use reasonix::record::{CallRecord, Recorder, sha256};
use reasonix::{Admission, Gate, PolicySet, Posture};
use serde_json::{Value, json};

/// Shows nothing.
struct Quiet;

impl Terminal for Quiet {
    fn text(&self, _delta: &str) {}
    fn call(&self, _admission: &Admission, _record: &CallRecord) {}
}

/// Shows nothing, and keeps each failed attempt with the text and reasoning it had shown.
#[derive(Default)]
struct Watching(Mutex<Vec<(FailedAttempt, String, String)>>);

impl Terminal for Watching {
    fn text(&self, _delta: &str) {}
    fn call(&self, _admission: &Admission, _record: &CallRecord) {}
    fn attempt_failed(&self, failed: &FailedAttempt, text: &str, reasoning: &str) {
        self.0
            .lock()
            .unwrap()
            .push((failed.clone(), text.to_owned(), reasoning.to_owned()));
    }
}

/// Answers with a fixed answer and counts the asks.
struct Counting(Answer, AtomicUsize);

impl Approver for Counting {
    fn ask(&self, _admission: &Admission) -> Answer {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0
    }
}

/// Everything one session needs, with its record in the world's root (outside the workspace).
struct Rig {
    world: World,
    record: std::path::PathBuf,
    recorder: Arc<Recorder>,
}

impl Rig {
    fn new() -> Rig {
        let world = World::new();
        let record = world.root.join("record.jsonl");
        let recorder = Arc::new(
            Recorder::open(&record, reasonix::seal::Signing::Unsigned("a test".into())).unwrap(),
        );
        Rig {
            world,
            record,
            recorder,
        }
    }

    fn gate(&self, yaml: Option<&str>, posture: Posture) -> Arc<Gate> {
        let policy = match yaml {
            Some(y) => PolicySet::from_yaml("test.yaml", y).unwrap(),
            None => PolicySet::embedded_default(),
        };
        Arc::new(self.world.gate(&policy, posture))
    }

    fn session(
        &self,
        gate: Arc<Gate>,
        provider: Arc<dyn Provider>,
        approver: Arc<dyn Approver>,
        leases: Arc<Leases>,
        result_bytes: usize,
    ) -> Session {
        let recorder = Arc::clone(&self.recorder);
        Session::new(
            gate,
            provider,
            approver,
            recorder,
            leases,
            Arc::new(Quiet),
            10,
            result_bytes,
        )
    }

    fn simple(&self, gate: Arc<Gate>, provider: Arc<dyn Provider>) -> Session {
        self.session(
            gate,
            provider,
            Arc::new(Always(Answer::Deny)),
            Leases::new(),
            16 * 1024,
        )
    }

    /// A session whose terminal keeps the failed attempts.
    fn watched(&self, gate: Arc<Gate>, provider: Arc<dyn Provider>) -> (Session, Arc<Watching>) {
        let watching = Arc::new(Watching::default());
        let session = Session::new(
            gate,
            provider,
            Arc::new(Always(Answer::Deny)),
            Arc::clone(&self.recorder),
            Leases::new(),
            watching.clone(),
            10,
            16 * 1024,
        );
        (session, watching)
    }

    /// Runs a session on the mock that must fail, and returns why.
    async fn fails(&self, gate: &Arc<Gate>, mock: &Mock) -> SessionError {
        let mut session = self.simple(Arc::clone(gate), openai(mock));
        session.run("hi").await.unwrap_err()
    }

    /// Every line of the record.
    fn lines(&self) -> Vec<Value> {
        common::jsonl(&self.record)
    }

    /// The record's `attempt_failed` lines.
    fn attempts(&self) -> Vec<Value> {
        self.lines()
            .into_iter()
            .filter(|l| l["event"] == "attempt_failed")
            .collect()
    }

    /// The record's call lines.
    fn calls(&self) -> Vec<Value> {
        self.lines()
            .into_iter()
            .filter(|l| l.get("call_id").is_some() && l.get("event").is_none())
            .collect()
    }
}

/// The provider on the mock: 2 retries, 10 ms backoff, a 5 s read timeout.
fn openai(mock: &Mock) -> Arc<dyn Provider> {
    openai_with(mock, 2, Duration::from_secs(5))
}

/// The provider on the mock with `retries` retries, a backoff of 10 ms doubling up to 40 ms
/// (jitter seeded), and this read timeout.
fn openai_with(mock: &Mock, retries: u32, read_timeout: Duration) -> Arc<dyn Provider> {
    Arc::new(
        OpenAiProvider::new(OpenAiConfig {
            base_url: mock.url.clone(),
            model: "mock-model".into(),
            key_env: "PATH".into(), // any set variable: the mock does not check keys
            retry: RetryPolicy {
                max_retries: retries,
                base: Duration::from_millis(10),
                max_backoff: Duration::from_millis(40),
                jitter: Jitter::seeded(1),
                ..RetryPolicy::default()
            },
            read_timeout,
            ..OpenAiConfig::default()
        })
        .unwrap(),
    )
}

fn script(turns: Value) -> Arc<dyn Provider> {
    let turns: Vec<Turn> = serde_json::from_value(turns).unwrap();
    Arc::new(ScriptProvider::new("test", turns))
}

/// The tool messages of a request body, by call id.
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn lacks_jail(gate: &Gate) -> bool {
    let refusal = gate.jail().refusal();
    common::skip_unless(
        refusal.is_none(),
        &format!("a jail bash can run in ({})", refusal.unwrap_or_default()),
    )
}

/// [start, end) of each call that ran, in record order.
fn spans(calls: &[Value]) -> Vec<(u64, u64)> {
    calls
        .iter()
        .filter(|c| !c["started_ms"].is_null())
        .map(|c| {
            let s = c["started_ms"].as_u64().unwrap();
            (s, s + c["duration_ms"].as_u64().unwrap())
        })
        .collect()
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

// ---------------------------------------------------------------------------------------------
// The OpenAI-compatible provider against the mock server.

#[tokio::test(flavor = "multi_thread")]
async fn fragments_split_across_chunks_assemble_into_parallel_calls() {
    let rig = Rig::new();
    rig.world.file("a.txt", "alpha\n");
    rig.world.file("b.txt", "beta\n");
    let a = r#"{"path": "a.txt"}"#;
    let b = r#"{"path":"b.txt"}"#;
    let mock = Mock::start(vec![
        mock::proposes(&[("call_a", "read_file", a), ("call_b", "read_file", b)], 3),
        mock::says("Both read."),
    ])
    .await;
    let mut session = rig.simple(rig.gate(None, Posture::Interactive), openai(&mock));
    assert_eq!(session.run("read both").await.unwrap(), End::Finished);

    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "mock-model");
    assert_eq!(bodies[0]["stream"], true);
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read_file") && tools.contains(&"bash"),
        "{tools:?}"
    );
    // The assistant message replays both calls with their arguments reassembled exactly.
    let assistant = &bodies[1]["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_a");
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], a);
    assert_eq!(assistant["tool_calls"][1]["function"]["arguments"], b);
    let results = tool_messages(&bodies[1]);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "call_a");
    assert!(results[0].1.contains("alpha"), "{}", results[0].1);
    assert_eq!(results[1].0, "call_b");
    assert!(results[1].1.contains("beta"), "{}", results[1].1);

    let calls = rig.calls();
    assert_eq!(calls.len(), 2);
    for c in &calls {
        assert_eq!(c["outcome"], "succeeded", "{c}");
        assert_eq!(c["lease"]["kind"], "shared");
    }
    assert_eq!(calls[0]["arguments_sha256"], sha256(a.as_bytes()));
    let lines = rig.lines();
    assert_eq!(lines.first().unwrap()["event"], "run_started");
    assert_eq!(lines.last().unwrap()["event"], "run_ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_arguments_are_invalid_and_the_model_gets_the_schema() {
    let rig = Rig::new();
    let mock = Mock::start(vec![
        mock::proposes(
            &[("c1", "write_file", r#"{"path": "x.txt", "content": "#)],
            4,
        ),
        mock::says("I will fix it."),
    ])
    .await;
    let mut session = rig.simple(
        rig.gate(Some(ALLOW_ALL), Posture::Interactive),
        openai(&mock),
    );
    assert_eq!(session.run("write").await.unwrap(), End::Finished);
    let (_, told) = &tool_messages(&mock.bodies()[1])[0];
    assert!(told.starts_with("invalid: "), "{told}");
    assert!(
        told.contains("\"required\""),
        "the schema goes back: {told}"
    );
    assert!(told.contains("Nothing ran"), "{told}");
    let calls = rig.calls();
    assert_eq!(calls[0]["outcome"], "invalid");
    assert_eq!(calls[0]["admission"]["verdict"], "invalid");
    assert!(calls[0]["lease"].is_null() && calls[0]["started_ms"].is_null());
    assert!(!rig.world.ws.join("x.txt").exists());
}

/// The first attempt of a stream cut in the middle of an event, with text shown and two calls
/// begun (one of them with whole arguments).
fn cut_midway() -> Reply {
    Reply::Stream(vec![
        mock::text("Writing it now"),
        mock::fragment(
            0,
            Some("c_cut"),
            Some("write_file"),
            r#"{"path": "out.txt", "#,
        ),
        mock::fragment(
            1,
            Some("c_cut2"),
            Some("write_file"),
            r#"{"path": "b.txt", "content": "b"}"#,
        ),
        // Half an event, then the connection closes: no finish reason, no [DONE].
        r#"data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"ind"#.to_owned(),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_stream_followed_by_a_whole_one_succeeds_and_runs_the_calls_once() {
    let rig = Rig::new();
    let args = r#"{"path": "out.txt", "content": "whole\n"}"#;
    let mock = Mock::start(vec![
        cut_midway(),
        mock::proposes(&[("c1", "write_file", args)], 5),
        mock::says("Written."),
    ])
    .await;
    let (mut session, watching) = rig.watched(
        rig.gate(Some(ALLOW_ALL), Posture::Interactive),
        openai(&mock),
    );
    assert_eq!(session.run("write").await.unwrap(), End::Finished);

    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0], bodies[1], "the retry sends the same request");
    // The model's turn as replayed: the whole attempt's one call, nothing of the cut one.
    let assistant = &bodies[2]["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert!(
        assistant["content"].is_null(),
        "the cut text is gone: {assistant}"
    );
    assert_eq!(
        assistant["tool_calls"].as_array().unwrap().len(),
        1,
        "{assistant}"
    );
    assert_eq!(assistant["tool_calls"][0]["id"], "c1");
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], args);
    let told = tool_messages(&bodies[2]);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].0, "c1");

    // Run once, and only the whole attempt's call.
    let calls = rig.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["call_id"], "c1");
    assert_eq!(calls[0]["outcome"], "succeeded");
    assert_eq!(calls[0]["arguments_sha256"], sha256(args.as_bytes()));
    assert_eq!(
        std::fs::read_to_string(rig.world.ws.join("out.txt")).unwrap(),
        "whole\n"
    );
    assert!(
        !rig.world.ws.join("b.txt").exists(),
        "the cut attempt's call never ran"
    );

    // One record line for the failed attempt, before the call.
    let lines = rig.lines();
    let at = lines
        .iter()
        .position(|l| l["event"] == "attempt_failed")
        .unwrap();
    let call_at = lines.iter().position(|l| l["call_id"] == "c1").unwrap();
    assert!(at < call_at);
    let a = &lines[at];
    assert_eq!(a["step"], 0);
    assert_eq!(a["attempt"], 1);
    assert_eq!(a["fault"], "cut");
    assert!(a["status"].is_null());
    assert!(a["bytes"].as_u64().unwrap() > 100, "{a}");
    let wait = a["wait_ms"].as_u64().unwrap();
    assert!(
        (7..=10).contains(&wait),
        "the first backoff, jittered below 10 ms: {a}"
    );
    assert_eq!(a["discarded_chars"], "Writing it now".len());
    assert_eq!(rig.attempts().len(), 1);

    // The text shown from it is reported discarded.
    let seen = watching.0.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1, "Writing it now");
    assert_eq!(seen[0].0.attempt, 1);
    assert!(seen[0].0.wait.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_cut_on_every_attempt_fails_the_run_naming_each_attempt_and_nothing_partial_runs()
{
    let rig = Rig::new();
    let mock = Mock::start(vec![cut_midway(), cut_midway(), cut_midway()]).await;
    let (mut session, watching) = rig.watched(
        rig.gate(Some(ALLOW_ALL), Posture::Interactive),
        openai(&mock),
    );
    let err = session.run("write").await.unwrap_err();
    let SessionError::Provider(ProviderError::GaveUp { attempts, why }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(attempts.len(), 3);
    assert_eq!(why, "all 2 retries spent");
    assert!(
        err.to_string().starts_with("gave up after 3 attempts (all 2 retries spent): attempt 1: the stream was cut before its finish reason"),
        "{err}"
    );
    assert_eq!(mock.bodies().len(), 3, "retries are bounded");
    assert!(
        rig.calls().is_empty(),
        "no call of a cut answer is judged or run"
    );
    assert!(!rig.world.ws.join("out.txt").exists());
    assert!(!rig.world.ws.join("b.txt").exists());

    let lines = rig.attempts();
    let waits: Vec<Option<u64>> = lines.iter().map(|l| l["wait_ms"].as_u64()).collect();
    assert_eq!(lines.len(), 3);
    assert!(
        waits[0].is_some() && waits[1].is_some() && waits[2].is_none(),
        "{waits:?}"
    );
    assert!(waits[1] > waits[0], "the backoff grows: {waits:?}");
    assert_eq!(
        lines
            .iter()
            .map(|l| l["attempt"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let last = rig.lines().pop().unwrap();
    assert_eq!(last["event"], "provider_error");
    assert!(
        last["detail"]
            .as_str()
            .unwrap()
            .contains("gave up after 3 attempts"),
        "{last}"
    );
    assert_eq!(
        watching.0.lock().unwrap().len(),
        3,
        "every attempt's text is discarded"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stall_past_the_read_timeout_is_retried() {
    let rig = Rig::new();
    let mock = Mock::start(vec![
        // No head at all, then a head and some text and nothing more.
        Reply::Silent(Duration::from_secs(20)),
        Reply::Stall(vec![mock::text("Thinking")], Duration::from_secs(20)),
        mock::says("Done."),
    ])
    .await;
    let (mut session, watching) = rig.watched(
        rig.gate(None, Posture::Interactive),
        openai_with(&mock, 3, Duration::from_millis(300)),
    );
    let started = Instant::now();
    assert_eq!(session.run("hi").await.unwrap(), End::Finished);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "each stall ends at the read timeout: {:?}",
        started.elapsed()
    );
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[1] == bodies[0] && bodies[2] == bodies[0]);
    let lines = rig.attempts();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["fault"], "stall", "{l}");
        assert!(l["detail"].as_str().unwrap().contains("300 ms"), "{l}");
    }
    assert_eq!(lines[0]["bytes"], 0, "nothing came: {}", lines[0]);
    assert!(lines[1]["bytes"].as_u64().unwrap() > 0, "{}", lines[1]);
    assert_eq!(lines[1]["discarded_chars"], "Thinking".len());
    assert_eq!(watching.0.lock().unwrap()[1].1, "Thinking");
    match session.messages().last().unwrap() {
        reasonix::agent::Message::Assistant { content, .. } => {
            assert_eq!(
                content.as_deref(),
                Some("Done."),
                "only the whole attempt's text"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_chunk_fails_the_attempt_and_is_never_skipped() {
    let rig = Rig::new();
    // Skipping the middle chunk would leave a different, valid call: content "tail".
    let mut pieces = vec![
        mock::fragment(0, Some("c1"), Some("write_file"), r#"{"path": "m.txt", "content": ""#),
        r#"data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "lost "#.to_owned() + "\n\n",
        mock::fragment(0, None, None, r#"tail"}"#),
    ];
    pieces.extend(mock::finish("tool_calls"));
    let whole = r#"{"path": "m.txt", "content": "lost tail"}"#;
    let mock = Mock::start(vec![
        Reply::Stream(pieces),
        mock::proposes(&[("c1", "write_file", whole)], 6),
        mock::says("ok"),
    ])
    .await;
    let mut session = rig.simple(
        rig.gate(Some(ALLOW_ALL), Posture::Interactive),
        openai(&mock),
    );
    assert_eq!(session.run("write").await.unwrap(), End::Finished);
    assert_eq!(
        std::fs::read_to_string(rig.world.ws.join("m.txt")).unwrap(),
        "lost tail"
    );
    let calls = rig.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["arguments_sha256"], sha256(whole.as_bytes()));
    let lines = rig.attempts();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["fault"], "malformed");
    assert!(
        lines[0]["detail"]
            .as_str()
            .unwrap()
            .contains("unreadable chunk"),
        "{}",
        lines[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_connection_is_retried() {
    let rig = Rig::new();
    let mock = Mock::start(vec![Reply::Hangup, mock::says("hello")]).await;
    let mut session = rig.simple(rig.gate(None, Posture::Interactive), openai(&mock));
    assert_eq!(session.run("hi").await.unwrap(), End::Finished);
    assert_eq!(mock.bodies().len(), 2);
    let lines = rig.attempts();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["fault"], "transport", "{}", lines[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_400_is_not_retried_nor_is_any_other_4xx() {
    for status in [400, 403, 404, 413, 422] {
        let rig = Rig::new();
        let gate = rig.gate(None, Posture::Interactive);
        let mock = Mock::start(vec![
            Reply::Status(
                status,
                r#"{"error":{"message":"bad request"}}"#.into(),
                None,
            ),
            mock::says("never asked for"),
        ])
        .await;
        let err = rig.fails(&gate, &mock).await;
        assert!(
            matches!(
                &err,
                SessionError::Provider(ProviderError::Http { status: s, .. }) if *s == status
            ),
            "{status}: {err:?}"
        );
        assert_eq!(mock.bodies().len(), 1, "a {status} is not retried");
        assert!(
            rig.attempts().is_empty(),
            "{status}: no failed-attempt line"
        );
        assert_eq!(rig.lines().last().unwrap()["event"], "provider_error");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn http_errors_are_named_and_408_409_429_and_5xx_are_retried() {
    let rig = Rig::new();
    let gate = rig.gate(None, Posture::Interactive);

    let mock = Mock::start(vec![Reply::Status(
        401,
        r#"{"error":"bad key"}"#.into(),
        None,
    )])
    .await;
    let err = rig.fails(&gate, &mock).await;
    assert!(
        matches!(err, SessionError::Provider(ProviderError::Unauthorized(_))),
        "{err:?}"
    );
    assert!(err.to_string().contains("401"), "{err}");
    assert_eq!(mock.bodies().len(), 1, "a 401 is not retried");

    let body = r#"{"error":{"message":"Model Not Exist"}}"#;
    let mock = Mock::start(vec![Reply::Status(400, body.into(), None)]).await;
    let err = rig.fails(&gate, &mock).await;
    assert!(err.to_string().contains("\"mock-model\""), "{err}");
    assert_eq!(mock.bodies().len(), 1, "an unknown model is not retried");

    let retryable = [408, 409, 429, 500, 502, 503, 504];
    let mut replies: Vec<Reply> = retryable
        .iter()
        .map(|s| Reply::Status(*s, "busy".into(), None))
        .collect();
    replies.push(mock::says("hello"));
    let mock = Mock::start(replies).await;
    let rig = Rig::new();
    let end = rig
        .simple(
            Arc::clone(&gate),
            openai_with(&mock, 7, Duration::from_secs(5)),
        )
        .run("hi")
        .await
        .unwrap();
    assert_eq!(end, End::Finished);
    assert_eq!(mock.bodies().len(), 8, "seven retries, then the answer");
    let statuses: Vec<u64> = rig
        .attempts()
        .iter()
        .map(|l| l["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, retryable.map(|s| s as u64));

    let mock = Mock::start(vec![
        Reply::Status(500, "down".into(), None),
        Reply::Status(500, "down".into(), None),
        Reply::Status(500, "still down".into(), None),
    ])
    .await;
    let err = rig.fails(&gate, &mock).await;
    assert!(
        err.to_string().contains("500") && err.to_string().contains("still down"),
        "{err}"
    );
    assert_eq!(mock.bodies().len(), 3, "retries are bounded");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_retry_after_is_honoured() {
    let rig = Rig::new();
    let mock = Mock::start(vec![
        Reply::StatusWith(
            429,
            vec![
                ("retry-after-ms", "300".into()),
                ("retry-after", "9".into()),
            ],
            "slow down".into(),
        ),
        Reply::Status(503, "busy".into(), Some(1)),
        mock::says("hello"),
    ])
    .await;
    let mut session = rig.simple(rig.gate(None, Posture::Interactive), openai(&mock));
    assert_eq!(session.run("hi").await.unwrap(), End::Finished);
    let gaps = mock.gaps();
    assert!(
        gaps[0] >= Duration::from_millis(300) && gaps[0] < Duration::from_secs(2),
        "retry-after-ms wins over Retry-After: {gaps:?}"
    );
    assert!(gaps[1] >= Duration::from_secs(1), "{gaps:?}");
    let lines = rig.attempts();
    assert_eq!(lines[0]["retry_after_ms"], 300);
    assert_eq!(lines[0]["wait_ms"], 300);
    assert_eq!(lines[1]["retry_after_ms"], 1000);
    assert_eq!(lines[1]["wait_ms"], 1000);

    // A wait longer than reasonix sits through ends the retries at once.
    let rig = Rig::new();
    let mock = Mock::start(vec![Reply::Status(
        503,
        "down for an hour".into(),
        Some(3600),
    )])
    .await;
    let err = rig
        .fails(&rig.gate(None, Posture::Interactive), &mock)
        .await;
    assert!(err.to_string().contains("asked to wait 3600.0 s"), "{err}");
    assert_eq!(mock.bodies().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_is_replayed_to_the_provider() {
    let rig = Rig::new();
    rig.world.file("a.txt", "alpha\n");
    let mut pieces = vec![mock::event(
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "I should read a.txt"}}]}),
    )];
    pieces.push(mock::fragment(
        0,
        Some("c1"),
        Some("read_file"),
        r#"{"path":"a.txt"}"#,
    ));
    pieces.extend(mock::finish("tool_calls"));
    let mock = Mock::start(vec![Reply::Stream(pieces), mock::says("done")]).await;
    rig.simple(rig.gate(None, Posture::Interactive), openai(&mock))
        .run("go")
        .await
        .unwrap();
    assert_eq!(
        mock.bodies()[1]["messages"][2]["reasoning_content"],
        "I should read a.txt"
    );
}

// ---------------------------------------------------------------------------------------------
// The gate inside the loop.

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_write_never_touches_disk_and_the_model_is_told_why() {
    let rig = Rig::new();
    rig.world.file(".env", "SECRET=1\n");
    rig.world.file("notes.md", "mine\n");
    let calls = [
        (
            "c1",
            "write_file",
            r#"{"path": ".env", "content": "SECRET=stolen\n"}"#.to_owned(),
        ),
        (
            "c2",
            "write_file",
            json!({"path": "../outside/x.txt", "content": "out"}).to_string(),
        ),
        (
            "c3",
            "write_file",
            r#"{"path": "notes.md", "content": "theirs\n"}"#.to_owned(),
        ),
    ];
    let refs: Vec<(&str, &str, &str)> =
        calls.iter().map(|(a, b, c)| (*a, *b, c.as_str())).collect();
    let mock = Mock::start(vec![mock::proposes(&refs, 7), mock::says("ok")]).await;
    // Unattended: the default policy's ask for an ordinary write becomes deny.
    let mut session = rig.simple(rig.gate(None, Posture::Unattended), openai(&mock));
    session.run("write").await.unwrap();

    assert_eq!(
        std::fs::read_to_string(rig.world.ws.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    assert!(!rig.world.outside.join("x.txt").exists());
    assert_eq!(
        std::fs::read_to_string(rig.world.ws.join("notes.md")).unwrap(),
        "mine\n"
    );

    let told = tool_messages(&mock.bodies()[1]);
    assert!(
        told[0].1.starts_with("blocked") && told[0].1.contains("secrets"),
        "{}",
        told[0].1
    );
    assert!(
        told[1].1.starts_with("blocked") && told[1].1.contains("outside the workspace"),
        "{}",
        told[1].1
    );
    assert!(
        told[2].1.starts_with("blocked") && told[2].1.contains("unattended"),
        "{}",
        told[2].1
    );
    for c in rig.calls() {
        assert_eq!(c["outcome"], "blocked", "{c}");
        assert!(c["lease"].is_null(), "a blocked call holds no lease: {c}");
        assert!(c["receipts"].as_array().unwrap().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hosts_own_files_are_protected_whatever_the_policy() {
    let rig = Rig::new();
    let record_dir = rig.world.ws.join(".reasonix");
    std::fs::create_dir_all(&record_dir).unwrap();
    std::fs::write(record_dir.join("record.jsonl"), "").unwrap();
    let gate = rig.world.yaml_gate(ALLOW_ALL);
    for call in [
        json!({"name": "write_file", "arguments": {"path": ".reasonix/record.jsonl", "content": ""}}),
        json!({"name": "delete_file", "arguments": {"path": ".reasonix/record.jsonl"}}),
        json!({"name": "move_file", "arguments": {"source_path": "a", "destination_path": ".reasonix/record.jsonl"}}),
        json!({"name": "bash", "arguments": {"command": "rm -rf .reasonix"}}),
        json!({"name": "bash", "arguments": {"command": "echo forged > .reasonix/record.jsonl"}}),
    ] {
        let a = gate.admit_text(&call.to_string()).into_admission();
        assert_eq!(
            a.verdict,
            reasonix::Verdict::Deny,
            "{call}: {:?}",
            a.reasons
        );
        assert!(
            a.reasons.join(" ").contains("host's own file"),
            "{call}: {:?}",
            a.reasons
        );
    }
    // Reading it is fine, and so is writing beside it.
    for call in [
        json!({"name": "read_file", "arguments": {"path": ".reasonix/record.jsonl"}}),
        json!({"name": "write_file", "arguments": {"path": ".reasonixx", "content": ""}}),
    ] {
        let a = gate.admit_text(&call.to_string()).into_admission();
        assert_eq!(
            a.verdict,
            reasonix::Verdict::Allow,
            "{call}: {:?}",
            a.reasons
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_outcome_is_distinct_in_the_record_and_the_tool_message() {
    let rig = Rig::new();
    let gate = rig.gate(Some(ALLOW_ALL), Posture::Interactive);
    if lacks_jail(&gate) {
        return;
    }
    let provider = script(json!([
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "new.txt", "content": "hello\n"}},
            {"name": "bash", "arguments": {"command": "echo to stderr >&2; touch t; exit 3"}},
            {"name": "read_file", "arguments": {"path": "../outside/nope"}},
            {"name": "read_file", "arguments": "{\"path\": 5}"},
            {"name": "bash", "arguments": {"command": "echo ok"}}
        ]},
        {"text": "done"}
    ]));
    let mut session = rig.simple(gate, provider);
    assert_eq!(session.run("go").await.unwrap(), End::Finished);
    let calls = rig.calls();
    let outcomes: Vec<&str> = calls
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["succeeded", "failed", "blocked", "invalid", "succeeded"]
    );
    assert_eq!(calls[1]["exit_code"], 3);
    assert_eq!(calls[4]["exit_code"], 0);

    // A file writer's receipt: before (none), after and size.
    let r = &calls[0]["receipts"][0];
    assert_eq!(r["kind"], "file");
    assert!(r["before_sha256"].is_null());
    assert_eq!(r["after_sha256"], sha256(b"hello\n"));
    assert_eq!(r["bytes"], 6);
    assert_eq!(calls[0]["lease"]["kind"], "paths");
    // A process's receipts (issue 25): what its run changed, observed on its overlay and
    // landed — a failed command's changes too —, then its exit status.
    let receipts = calls[1]["receipts"].as_array().unwrap();
    assert_eq!(receipts[0]["kind"], "file");
    assert!(receipts[0]["path"].as_str().unwrap().ends_with("/t"));
    let r = receipts.last().unwrap();
    assert_eq!(r["kind"], "process");
    assert_eq!(r["exit_code"], 3);
    assert_eq!(r["observed"], true);
    assert!(
        r["note"]
            .as_str()
            .unwrap()
            .contains("observed on an overlay")
    );
    assert_eq!(
        calls[1]["lease"]["kind"], "workspace",
        "a writer bash holds the workspace"
    );
    assert!(!calls[1]["sandbox"].is_null(), "the jail plan is recorded");

    let told: Vec<String> = session
        .messages()
        .iter()
        .filter_map(|m| match m {
            reasonix::agent::Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(
        told[1].starts_with("failed: ") && told[1].contains("to stderr"),
        "{}",
        told[1]
    );
    assert!(told[2].starts_with("blocked by the host"), "{}", told[2]);
    assert!(told[3].starts_with("invalid: "), "{}", told[3]);
    assert!(
        !told[4].starts_with("failed") && told[4].contains("ok"),
        "{}",
        told[4]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn results_are_bounded_for_the_model_and_whole_in_the_record() {
    let rig = Rig::new();
    let big: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    rig.world.file("big.txt", &big);
    let provider =
        script(json!([{"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]}]));
    let gate = rig.gate(None, Posture::Interactive);
    let mut session = rig.session(
        gate,
        provider,
        Arc::new(Always(Answer::Deny)),
        Leases::new(),
        1000,
    );
    session.run("read").await.unwrap();
    let told = match &session.messages()[3] {
        reasonix::agent::Message::Tool { content, .. } => content.clone(),
        other => panic!("{other:?}"),
    };
    let call = &rig.calls()[0];
    let whole = call["result_bytes"].as_u64().unwrap();
    assert!(
        whole as usize >= big.len(),
        "the record keeps the true size: {whole}"
    );
    assert!(
        told.len() < 1200,
        "the model sees about 1000 bytes, not {}",
        told.len()
    );
    assert!(told.contains(&format!("; {whole} bytes in all")), "{told}");
    assert!(
        told.contains("line 0") && told.contains("line 1999"),
        "head and tail survive"
    );
    assert!(!told.contains("line 1000\n"), "the middle is cut");
}

// ---------------------------------------------------------------------------------------------
// The approver.

#[tokio::test(flavor = "multi_thread")]
async fn approvals_cover_the_exact_call_and_a_refusal_runs_nothing() {
    let rig = Rig::new();
    let gate = rig.gate(None, Posture::Interactive); // writes ask
    let write = |content: &str| json!({"name": "write_file", "arguments": {"path": "a.txt", "content": content}});
    let turns = json!([
        {"tool_calls": [write("one")]},
        {"tool_calls": [write("one")]},
        {"tool_calls": [write("two")]},
    ]);
    let approver = Arc::new(Counting(Answer::Session, AtomicUsize::new(0)));
    let mut session = rig.session(
        Arc::clone(&gate),
        script(turns.clone()),
        approver.clone(),
        Leases::new(),
        4096,
    );
    session.run("write").await.unwrap();
    assert_eq!(
        approver.1.load(Ordering::SeqCst),
        2,
        "the same exact call is not asked again; another is"
    );
    let approvals: Vec<Value> = rig.calls().iter().map(|c| c["approval"].clone()).collect();
    assert_eq!(
        approvals,
        [
            json!("allow_session"),
            json!("session"),
            json!("allow_session")
        ]
    );
    assert_eq!(
        std::fs::read_to_string(rig.world.ws.join("a.txt")).unwrap(),
        "two"
    );

    let rig = Rig::new();
    let gate = rig.gate(None, Posture::Interactive);
    let no = Arc::new(Counting(Answer::Deny, AtomicUsize::new(0)));
    let mut session = rig.session(
        gate,
        script(json!([{"tool_calls": [write("x")]}])),
        no,
        Leases::new(),
        4096,
    );
    session.run("write").await.unwrap();
    let c = &rig.calls()[0];
    assert_eq!(c["outcome"], "blocked");
    assert_eq!(c["approval"], "deny");
    assert!(c["lease"].is_null());
    assert!(!rig.world.ws.join("a.txt").exists());
}

/// Re-points `link` at `to` once `after` calls have ended, as a command of the model's could
/// have between two calls.
struct Repointing {
    ended: AtomicUsize,
    after: usize,
    link: std::path::PathBuf,
    to: std::path::PathBuf,
}

impl Terminal for Repointing {
    fn text(&self, _delta: &str) {}
    fn call(&self, _admission: &Admission, _record: &CallRecord) {
        if self.ended.fetch_add(1, Ordering::SeqCst) + 1 == self.after {
            std::fs::remove_file(&self.link).unwrap();
            std::os::unix::fs::symlink(&self.to, &self.link).unwrap();
        }
    }
}

/// Issue 26: "allow for this session" was keyed on the call's text, so after a symlink it wrote
/// through was re-pointed at `.git/hooks`, the same text ran there, past the rule that asks for
/// git internals, with nobody asked. An approval is bound to what was approved: the same text
/// resolving to the same place is not asked again (the twin); resolving elsewhere, it is.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_approval_is_bound_to_where_the_call_resolved() {
    let rig = Rig::new();
    let ws = &rig.world.ws;
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    rig.world.link("out", "notes");
    let gate = rig.gate(None, Posture::Interactive); // writes ask; .git/** asks (git-internals)
    let write = json!({"name": "write_file", "arguments": {"path": "out/post-commit", "content": "#!/bin/sh\n"}});
    let turns = json!([
        {"tool_calls": [write.clone()]},
        {"tool_calls": [write.clone()]},
        {"tool_calls": [write]},
    ]);
    let approver = Arc::new(Counting(Answer::Session, AtomicUsize::new(0)));
    let terminal = Arc::new(Repointing {
        ended: AtomicUsize::new(0),
        after: 2,
        link: ws.join("out"),
        to: std::path::PathBuf::from(".git/hooks"),
    });
    let mut session = Session::new(
        gate,
        script(turns),
        approver.clone(),
        Arc::clone(&rig.recorder),
        Leases::new(),
        terminal,
        10,
        4096,
    );
    session.run("write").await.unwrap();
    let approvals: Vec<Value> = rig.calls().iter().map(|c| c["approval"].clone()).collect();
    assert_eq!(
        approvals,
        [
            json!("allow_session"),
            json!("session"),
            json!("allow_session")
        ],
        "the third call, the same text resolving into .git/hooks, is asked again"
    );
    assert_eq!(approver.1.load(Ordering::SeqCst), 2);
    let third = &rig.calls()[2];
    assert!(
        common::reasons(&third["admission"]).contains("git-internals"),
        "{third}"
    );
}

// ---------------------------------------------------------------------------------------------
// Parallelism and leases.

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_batch_runs_at_once_and_a_batch_with_a_writer_in_order() {
    let rig = Rig::new();
    let gate = rig.gate(Some(ALLOW_ALL), Posture::Interactive);
    if lacks_jail(&gate) {
        return;
    }
    let sleep = |s: &str| json!({"name": "bash", "arguments": {"command": format!("sleep {s}")}});
    let provider = script(json!([
        {"tool_calls": [sleep("0.4"), sleep("0.4"), {"name": "read_file", "arguments": {"path": "."}}]},
        {"tool_calls": [sleep("0.3"), {"name": "bash", "arguments": {"command": "sleep 0.3; touch made"}}]},
    ]));
    let mut session = rig.simple(gate, provider);
    session.run("go").await.unwrap();
    let calls = rig.calls();
    assert!(calls.iter().all(|c| c["outcome"] != "invalid"), "{calls:?}");
    let s = spans(&calls);
    assert!(overlap(s[0], s[1]), "two read-only sleeps overlap: {s:?}");
    assert!(
        !overlap(s[3], s[4]) && s[3].1 <= s[4].0,
        "with a writer in the batch, in order: {s:?}"
    );
    assert!(rig.world.ws.join("made").exists());
}

/// Two sessions in one workspace, each doing read-modify-write of one counter three times with a
/// pause in the middle: with shared leases no update is lost.
#[tokio::test(flavor = "multi_thread")]
async fn conflicting_writes_are_serialized_by_leases_under_concurrency() {
    async fn race(shared: bool) -> (String, Vec<(u64, u64)>) {
        let rig = Rig::new();
        rig.world.file("count", "0\n");
        let gate = rig.gate(Some(ALLOW_ALL), Posture::Interactive);
        if lacks_jail(&gate) {
            return ("6".into(), Vec::new());
        }
        // `expr`, not `$((n+1))`: bash would evaluate the file's text as arithmetic, where a
        // subscript runs code (the `dynamic_code` hazard, issue 10). `$n` is decided at run time,
        // so even an allow-all fallback asks (policy step 5): a person approves each bump here,
        // as the lease is what this test is about.
        let bump = json!({"tool_calls": [{"name": "bash", "arguments": {"command": "n=$(cat count); sleep 0.15; expr \"$n\" + 1 > count"}}]});
        let turns = json!([bump, bump, bump]);
        let leases = Leases::new();
        let other = if shared {
            Arc::clone(&leases)
        } else {
            Leases::new()
        };
        let mut one = rig.session(
            Arc::clone(&gate),
            script(turns.clone()),
            Arc::new(Always(Answer::Once)),
            leases,
            4096,
        );
        let mut two = rig.session(
            gate,
            script(turns),
            Arc::new(Always(Answer::Once)),
            other,
            4096,
        );
        let (a, b) = tokio::join!(one.run("bump"), two.run("bump"));
        a.unwrap();
        b.unwrap();
        let calls = rig.calls();
        assert_eq!(calls.len(), 6);
        // Without a shared lease a bump may read the file while the other truncates it
        // (`expr: non-integer argument`): that failure is the race itself, so only the run with
        // shared leases must succeed throughout.
        if shared {
            assert!(
                calls.iter().all(|c| c["outcome"] == "succeeded"),
                "{calls:?}"
            );
        }
        let count = std::fs::read_to_string(rig.world.ws.join("count")).unwrap();
        (count.trim().to_owned(), spans(&calls))
    }

    let (count, spans) = race(true).await;
    assert_eq!(count, "6", "no update lost");
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            assert!(!overlap(*a, *b), "writers never overlap: {spans:?}");
        }
    }
    // The control: without a shared lease manager the same race loses updates, so the test
    // above can fail.
    let (count, spans) = race(false).await;
    if !spans.is_empty() {
        assert_ne!(
            count, "6",
            "without shared leases the writers overlap: {spans:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn max_steps_ends_the_run_and_is_recorded() {
    let rig = Rig::new();
    rig.world.file("a.txt", "a");
    let read = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]});
    let provider = script(json!([read, read, read, read]));
    let recorder = Arc::clone(&rig.recorder);
    let gate = rig.gate(None, Posture::Interactive);
    let mut session = Session::new(
        gate,
        provider,
        Arc::new(Always(Answer::Deny)),
        recorder,
        Leases::new(),
        Arc::new(Quiet),
        2,
        4096,
    );
    assert_eq!(session.run("loop").await.unwrap(), End::MaxSteps);
    assert_eq!(rig.calls().len(), 2);
    assert_eq!(rig.lines().last().unwrap()["detail"], "max_steps");
}

#[test]
fn scripted_calls_accept_objects_and_strings() {
    let call: ScriptedCall =
        serde_json::from_value(json!({"name": "t", "arguments": "{bad"})).unwrap();
    assert_eq!(call.arguments, json!("{bad"));
    let bad = serde_json::from_value::<Turn>(json!({"txt": "typo"}));
    assert!(bad.is_err(), "unknown fields in a script are errors");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_move_leases_and_receipts_both_ends() {
    let rig = Rig::new();
    rig.world.file("a.txt", "moved\n");
    let provider = script(json!([{"tool_calls": [
        {"name": "move_file", "arguments": {"source_path": "a.txt", "destination_path": "b.txt"}}
    ]}]));
    let mut session = rig.simple(rig.gate(Some(ALLOW_ALL), Posture::Interactive), provider);
    session.run("move").await.unwrap();
    let call = &rig.calls()[0];
    assert_eq!(call["outcome"], "succeeded", "{call}");
    let ws = rig.world.ws.display().to_string();
    assert_eq!(
        call["lease"],
        json!({"kind": "paths", "paths": [format!("{ws}/a.txt"), format!("{ws}/b.txt")]})
    );
    let digest = sha256(b"moved\n");
    assert_eq!(call["receipts"][0]["path"], format!("{ws}/a.txt"));
    assert_eq!(call["receipts"][0]["before_sha256"], digest);
    assert!(call["receipts"][0]["after_sha256"].is_null());
    assert_eq!(call["receipts"][1]["path"], format!("{ws}/b.txt"));
    assert!(call["receipts"][1]["before_sha256"].is_null());
    assert_eq!(call["receipts"][1]["after_sha256"], digest);
}
