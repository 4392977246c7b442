//! A mock OpenAI-compatible chat-completions server on 127.0.0.1 (a random port): each request
//! gets the next scripted reply, streamed as server-sent events in the pieces the test chose, so
//! an event can be split across TCP writes. It can also stall, say nothing, or hang up. It keeps
//! every request body, and when it arrived, for inspection.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One answer of the server.
pub enum Reply {
    /// 200 with an SSE body written piece by piece (a short pause after each), then closed.
    Stream(Vec<String>),
    /// An error status with a body and, if given, a `Retry-After` of that many seconds.
    Status(u16, String, Option<u64>),
    /// An error status with these headers and a body.
    StatusWith(u16, Vec<(&'static str, String)>, String),
    /// 200 with the pieces of an SSE body, then nothing more for the duration, the connection
    /// held open.
    Stall(Vec<String>, Duration),
    /// Nothing at all, not even a head, for the duration; then the connection closes.
    Silent(Duration),
    /// The connection closes as soon as the request is read.
    Hangup,
}

/// A running server.
pub struct Mock {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Every request body received, in order, with when it arrived.
    pub requests: Arc<Mutex<Vec<(Instant, Value)>>>,
}

impl Mock {
    /// Starts serving `replies` in order; past the last one, every request gets a 500.
    pub async fn start(replies: Vec<Reply>) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let seen = Arc::clone(&requests);
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let seen = Arc::clone(&seen);
                let replies = Arc::clone(&replies);
                tokio::spawn(async move { serve(socket, seen, replies).await });
            }
        });
        Mock { url, requests }
    }

    /// The request bodies so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// The time between each request and the one before it.
    pub fn gaps(&self) -> Vec<Duration> {
        let requests = self.requests.lock().unwrap();
        requests.windows(2).map(|w| w[1].0 - w[0].0).collect()
    }
}

async fn serve(
    mut socket: TcpStream,
    seen: Arc<Mutex<Vec<(Instant, Value)>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
) {
    // Read the head, then as many body bytes as content-length says.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Value =
        serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    seen.lock().unwrap().push((Instant::now(), body));
    let reply = replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Stream(pieces)) => {
            if write_stream(&mut socket, pieces).await {
                let _ = socket.shutdown().await;
            }
        }
        Some(Reply::Stall(pieces, pause)) => {
            if write_stream(&mut socket, pieces).await {
                tokio::time::sleep(pause).await;
                let _ = socket.shutdown().await;
            }
        }
        Some(Reply::Silent(pause)) => {
            tokio::time::sleep(pause).await;
            let _ = socket.shutdown().await;
        }
        Some(Reply::Hangup) => drop(socket),
        Some(Reply::StatusWith(status, headers, body)) => {
            let headers: String = headers
                .iter()
                .map(|(k, v)| format!("{k}: {v}\r\n"))
                .collect();
            let text = format!(
                "HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{headers}connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(text.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
        Some(Reply::Status(status, body, retry)) => {
            let retry = retry
                .map(|s| format!("retry-after: {s}\r\n"))
                .unwrap_or_default();
            let text = format!(
                "HTTP/1.1 {status} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{retry}connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(text.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
        None => {
            let body = r#"{"error":{"message":"the mock has no more replies"}}"#;
            let text = format!(
                "HTTP/1.1 500 Error\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(text.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    }
}

/// Writes a 200 head and the pieces of an SSE body, a short pause after each; false when the
/// client went away.
async fn write_stream(socket: &mut TcpStream, pieces: Vec<String>) -> bool {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for piece in pieces {
        if socket.write_all(piece.as_bytes()).await.is_err() {
            return false;
        }
        let _ = socket.flush().await;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    true
}

/// One SSE event carrying a chunk.
pub fn event(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

/// A chunk with a text delta.
pub fn text(t: &str) -> String {
    event(json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]}))
}

/// A chunk with one tool-call fragment.
pub fn fragment(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    event(
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]}),
    )
}

/// The end of an answer: a finish reason, usage, and `[DONE]`.
pub fn finish(reason: &str) -> Vec<String> {
    vec![
        event(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})),
        event(json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})),
        "data: [DONE]\n\n".to_owned(),
    ]
}

/// A whole answer that only says `t`.
pub fn says(t: &str) -> Reply {
    let mut pieces = vec![text(t)];
    pieces.extend(finish("stop"));
    Reply::Stream(pieces)
}

/// A whole answer proposing `calls` (id, name, arguments text), each call's arguments cut into
/// `step`-byte fragments, the calls' fragments interleaved, and every SSE event split in two
/// TCP writes.
pub fn proposes(calls: &[(&str, &str, &str)], step: usize) -> Reply {
    let mut per_call: Vec<Vec<String>> = Vec::new();
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let mut frags = vec![fragment(index, Some(id), Some(name), "")];
        let bytes: Vec<char> = args.chars().collect();
        for piece in bytes.chunks(step) {
            frags.push(fragment(
                index,
                None,
                None,
                &piece.iter().collect::<String>(),
            ));
        }
        per_call.push(frags);
    }
    let mut events = Vec::new();
    let longest = per_call.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for frags in &per_call {
            if let Some(f) = frags.get(i) {
                events.push(f.clone());
            }
        }
    }
    events.extend(finish("tool_calls"));
    Reply::Stream(split_writes(events))
}

/// Each event written in two pieces, cut in its middle.
pub fn split_writes(events: Vec<String>) -> Vec<String> {
    let mut pieces = Vec::new();
    for e in events {
        let mid = e.ceil_char_boundary(e.len() / 2);
        pieces.push(e[..mid].to_owned());
        pieces.push(e[mid..].to_owned());
    }
    pieces
}
