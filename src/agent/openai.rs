//! An OpenAI-compatible chat-completions provider, streaming over SSE (`reqwest` and
//! `eventsource-stream`). DeepSeek is the default: `https://api.deepseek.com`, `deepseek-chat`,
//! the key in `DEEPSEEK_API_KEY`.
//!
//! # Attempts and retries
//!
//! An answer is whole only when its stream reaches `[DONE]`. Every attempt that fails before
//! that is retried with the very same request body (serialized once), under the
//! [`RetryPolicy`], and reported in the stream as an [`Event::AttemptFailed`] so the session can
//! drop what the attempt brought:
//!
//! - 408, 409, 429 and 5xx, honouring `retry-after-ms`, then `Retry-After` (seconds or an HTTP
//!   date);
//! - a connection that fails or drops, before the head or mid-stream;
//! - a stream cut before `[DONE]`, even after its finish reason: a cut there cannot be told from
//!   one anywhere else, and the usage that follows it is part of the answer;
//! - a malformed chunk (not UTF-8, not SSE, not JSON): never skipped, since a lost fragment of a
//!   call's arguments would change the call the model made;
//! - a stall: no byte for `read_timeout`, waiting for the head or between chunks.
//!
//! 401, an unknown model, any other 4xx and an error object inside a stream end the run at once:
//! asking again would fail the same way. When the retries are spent the stream ends with
//! [`ProviderError::GaveUp`], listing every attempt.
//!
//! An assistant message's `reasoning_content` is sent back with it: DeepSeek's thinking mode
//! requires it within a turn that uses tools.

use std::error::Error as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::provider::{
    Event, EventStream, FailedAttempt, Fault, Message, Next, Provider, ProviderError, Request,
    RetryPolicy,
};
use crate::text::{Keep, shorten};

/// The DeepSeek defaults.
pub const DEEPSEEK_URL: &str = "https://api.deepseek.com";
/// DeepSeek's chat model.
pub const DEEPSEEK_MODEL: &str = "deepseek-chat";
/// The variable holding DeepSeek's key.
pub const DEEPSEEK_KEY: &str = "DEEPSEEK_API_KEY";
/// The longest wait for the next bytes of an answer, when nothing else is configured: five
/// minutes, which a reasoning model that thinks before its first visible token still fits in.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(300);

/// Where and what to ask.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// The API's base URL (`.../chat/completions` is appended).
    pub base_url: String,
    /// The model.
    pub model: String,
    /// The environment variable holding the API key.
    pub key_env: String,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
    /// The longest wait for a connection.
    pub connect_timeout: Duration,
    /// The longest wait for the next bytes: the response's head, then each chunk of its body.
    pub read_timeout: Duration,
}

impl Default for OpenAiConfig {
    fn default() -> OpenAiConfig {
        OpenAiConfig {
            base_url: DEEPSEEK_URL.into(),
            model: DEEPSEEK_MODEL.into(),
            key_env: DEEPSEEK_KEY.into(),
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(20),
            read_timeout: DEFAULT_READ_TIMEOUT,
        }
    }
}

/// The provider.
pub struct OpenAiProvider {
    config: OpenAiConfig,
    key: String,
    client: reqwest::Client,
}

impl OpenAiProvider {
    /// A provider; the key is read from its variable now.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiProvider, ProviderError> {
        let key = std::env::var(&config.key_env)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| ProviderError::NoKey(config.key_env.clone()))?;
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| ProviderError::Network(e.to_string()))?;
        Ok(OpenAiProvider {
            config,
            key,
            client,
        })
    }

    fn body(&self, request: &Request) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(message).collect();
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        body
    }
}

/// One message in the chat-completions shape.
fn message(m: &Message) -> Value {
    match m {
        Message::System(text) => json!({"role": "system", "content": text}),
        Message::User(text) => json!({"role": "user", "content": text}),
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            let mut v = json!({"role": "assistant", "content": content});
            if let Some(r) = reasoning {
                v["reasoning_content"] = json!(r);
            }
            if !tool_calls.is_empty() {
                v["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
            }
            v
        }
        Message::Tool { call_id, content } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

fn bounded(text: &str) -> String {
    shorten(text.trim(), 500, Keep::Head).into_owned()
}

impl Provider for OpenAiProvider {
    fn describe(&self) -> String {
        format!("{} at {}", self.config.model, self.config.base_url)
    }

    fn stream(&self, request: Request) -> EventStream {
        let (tx, rx) = mpsc::channel(64);
        // Serialized once: every attempt sends these very bytes.
        let body = self.body(&request).to_string().into_bytes();
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let asker = Asker {
            client: self.client.clone(),
            url,
            key: self.key.clone(),
            config: self.config.clone(),
            body,
        };
        tokio::spawn(async move {
            if let Err(e) = asker.converse(&tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        }))
    }
}

/// One request, asked as many times as it takes.
struct Asker {
    client: reqwest::Client,
    url: String,
    key: String,
    config: OpenAiConfig,
    body: Vec<u8>,
}

/// How an attempt failed.
enum Failed {
    /// Worth another attempt.
    Fault(Fault),
    /// Not: the run ends.
    Fatal(ProviderError),
}

type Tx = mpsc::Sender<Result<Event, ProviderError>>;

impl Asker {
    /// Attempts until one brings the whole answer, a failure is not worth retrying, or the
    /// policy gives up. Returns early, without error, when nobody listens any more.
    async fn converse(&self, tx: &Tx) -> Result<(), ProviderError> {
        let mut failed = Vec::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let received = Arc::new(AtomicU64::new(0));
            let fault = match self.attempt(tx, &received).await {
                Ok(()) => return Ok(()),
                Err(Failed::Fatal(e)) => return Err(e),
                Err(Failed::Fault(fault)) => fault,
            };
            let next = self.config.retry.next(attempt, &fault);
            let report = FailedAttempt {
                attempt,
                fault,
                bytes: received.load(Ordering::Relaxed),
                wait: match &next {
                    Next::Retry(wait) => Some(*wait),
                    Next::GiveUp(_) => None,
                },
            };
            failed.push(report.clone());
            if tx.send(Ok(Event::AttemptFailed(report))).await.is_err() {
                return Ok(());
            }
            match next {
                Next::Retry(wait) => tokio::time::sleep(wait).await,
                Next::GiveUp(why) => {
                    return Err(ProviderError::GaveUp {
                        attempts: failed,
                        why,
                    });
                }
            }
        }
    }

    /// One attempt: sends the request and streams its answer into `tx`, counting the body's
    /// bytes in `received`. `Ok` once `[DONE]` came (or nobody listens any more).
    async fn attempt(&self, tx: &Tx, received: &Arc<AtomicU64>) -> Result<(), Failed> {
        let limit = self.config.read_timeout;
        let sent = self
            .client
            .post(&self.url)
            .bearer_auth(&self.key)
            .header(CONTENT_TYPE, "application/json")
            .body(self.body.clone())
            .send();
        let response = match tokio::time::timeout(limit, sent).await {
            Err(_) => return Err(Failed::Fault(Fault::Stall(limit))),
            Ok(Err(e)) if e.is_builder() => {
                return Err(Failed::Fatal(ProviderError::Network(chain(&e))));
            }
            Ok(Err(e)) => return Err(Failed::Fault(Fault::Transport(chain(&e)))),
            Ok(Ok(response)) => response,
        };

        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = retry_after(response.headers(), SystemTime::now());
            let text = match tokio::time::timeout(limit, response.text()).await {
                Ok(Ok(text)) => text,
                _ => String::new(),
            };
            received.fetch_add(text.len() as u64, Ordering::Relaxed);
            return Err(match status {
                401 => Failed::Fatal(ProviderError::Unauthorized(bounded(&text))),
                400 | 404 if text.to_lowercase().contains("model") => {
                    Failed::Fatal(ProviderError::UnknownModel {
                        model: self.config.model.clone(),
                        detail: bounded(&text),
                    })
                }
                408 | 409 | 429 | 500..=599 => Failed::Fault(Fault::Status {
                    status,
                    retry_after,
                    body: shorten(text.trim(), 200, Keep::Head).into_owned(),
                }),
                _ => Failed::Fatal(ProviderError::Http {
                    status,
                    body: bounded(&text),
                }),
            });
        }

        let mut events =
            Box::pin(timed(response.bytes_stream(), limit, Arc::clone(received)).eventsource());
        let mut finished = false;
        loop {
            let event = match events.next().await {
                None => return Err(Failed::Fault(Fault::Cut { finished })),
                Some(Ok(event)) => event,
                Some(Err(EventStreamError::Transport(Wire::Stalled))) => {
                    return Err(Failed::Fault(Fault::Stall(limit)));
                }
                Some(Err(EventStreamError::Transport(Wire::Dropped(why)))) => {
                    return Err(Failed::Fault(Fault::Transport(why)));
                }
                Some(Err(EventStreamError::Utf8(e))) => {
                    return Err(Failed::Fault(Fault::Malformed(format!("not UTF-8: {e}"))));
                }
                Some(Err(EventStreamError::Parser(e))) => {
                    return Err(Failed::Fault(Fault::Malformed(format!(
                        "not server-sent events: {e}"
                    ))));
                }
            };
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                return Ok(());
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                Failed::Fault(Fault::Malformed(format!(
                    "{e} in {}",
                    shorten(data, 120, Keep::Head)
                )))
            })?;
            if let Some(error) = chunk.get("error") {
                return Err(Failed::Fatal(ProviderError::Http {
                    status,
                    body: bounded(&error.to_string()),
                }));
            }
            for event in decode(&chunk) {
                if matches!(event, Event::Finish(_)) {
                    finished = true;
                }
                if tx.send(Ok(event)).await.is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// An error of the byte stream under the SSE parser.
#[derive(Debug)]
enum Wire {
    /// Nothing came for the read timeout.
    Stalled,
    /// The connection failed.
    Dropped(String),
}

/// A response body whose every chunk must come within `limit` of the one before, its bytes
/// counted in `received`. After an error it ends.
fn timed<B: AsRef<[u8]>>(
    body: impl Stream<Item = reqwest::Result<B>> + Send + 'static,
    limit: Duration,
    received: Arc<AtomicU64>,
) -> impl Stream<Item = Result<B, Wire>> + Send {
    futures_util::stream::unfold(Some(Box::pin(body)), move |body| {
        let received = Arc::clone(&received);
        async move {
            let mut body = body?;
            match tokio::time::timeout(limit, body.next()).await {
                Err(_) => Some((Err(Wire::Stalled), None)),
                Ok(None) => None,
                Ok(Some(Err(e))) => Some((Err(Wire::Dropped(chain(&e))), None)),
                Ok(Some(Ok(bytes))) => {
                    received.fetch_add(bytes.as_ref().len() as u64, Ordering::Relaxed);
                    Some((Ok(bytes), Some(body)))
                }
            }
        }
    })
}

/// An error with its sources, `outer: inner: innermost` (reqwest's own message is often only
/// "error sending request").
fn chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    bounded(&text)
}

/// The wait a response asks for: `retry-after-ms` (what the OpenAI and Anthropic SDKs read
/// first), else `Retry-After` in seconds or as an HTTP date (from `now`).
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    // `try_from_secs_f64` refuses what no duration can be: negative, NaN, too large.
    if let Some(ms) = header("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
    {
        return Some(ms);
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = http_date(value)?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one form RFC 9110 lets a server send.
fn http_date(text: &str) -> Option<SystemTime> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = words.as_slice() else {
        return None;
    };
    let day: u64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let month = MONTHS.iter().position(|m| m == month)? as u64 + 1;
    let year: u64 = year.parse().ok().filter(|y| *y >= 1970)?;
    let hms: Vec<u64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    // Days from 1970-01-01 to the date (the civil-from-days inverse, proleptic Gregorian).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y % 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let secs = days * 86_400 + h * 3600 + m * 60 + s;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// The events of one streamed chunk.
fn decode(chunk: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    for choice in chunk["choices"].as_array().into_iter().flatten() {
        let delta = &choice["delta"];
        if let Some(text) = delta["reasoning_content"].as_str()
            && !text.is_empty()
        {
            out.push(Event::Reasoning(text.to_owned()));
        }
        if let Some(text) = delta["content"].as_str()
            && !text.is_empty()
        {
            out.push(Event::Text(text.to_owned()));
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            out.push(Event::CallFragment {
                index: call["index"].as_u64().unwrap_or(0) as usize,
                id: call["id"].as_str().map(str::to_owned),
                name: call["function"]["name"].as_str().map(str::to_owned),
                arguments: call["function"]["arguments"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            });
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            out.push(Event::Finish(reason.to_owned()));
        }
    }
    if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
        out.push(Event::Usage {
            prompt: usage["prompt_tokens"].as_u64().unwrap_or(0),
            completion: usage["completion_tokens"].as_u64().unwrap_or(0),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::provider::ProposedCall;

    #[test]
    fn chunks_decode_into_events() {
        let chunk = json!({"choices": [{"delta": {"content": "hi", "tool_calls": [{"index": 1, "id": "c1", "function": {"name": "read_file", "arguments": "{\"pa"}}]}, "finish_reason": null}]});
        assert_eq!(
            decode(&chunk),
            [
                Event::Text("hi".into()),
                Event::CallFragment {
                    index: 1,
                    id: Some("c1".into()),
                    name: Some("read_file".into()),
                    arguments: "{\"pa".into()
                }
            ]
        );
        let end = json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 4}});
        assert_eq!(
            decode(&end),
            [
                Event::Finish("tool_calls".into()),
                Event::Usage {
                    prompt: 3,
                    completion: 4
                }
            ]
        );
    }

    #[test]
    fn assistant_messages_replay_reasoning_and_calls() {
        let m = Message::Assistant {
            content: None,
            reasoning: Some("think".into()),
            tool_calls: vec![ProposedCall {
                id: "c".into(),
                name: "t".into(),
                arguments: "{}".into(),
            }],
        };
        let v = message(&m);
        assert_eq!(v["reasoning_content"], "think");
        assert_eq!(v["tool_calls"][0]["function"]["name"], "t");
        assert_eq!(v["content"], Value::Null);
    }

    #[test]
    fn the_wait_a_response_asks_for_is_read_from_either_header() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250")]), now),
            ms(250)
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "1500"), ("retry-after", "2")]),
                now
            ),
            ms(1500),
            "retry-after-ms first"
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")]), now),
            ms(2000)
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")]), now),
            ms(500)
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:40 GMT")]),
                now
            ),
            ms(3000)
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")]),
                now
            ),
            ms(0),
            "a date in the past: no wait"
        );
        for junk in [
            "soon",
            "-1",
            "Sun, 06 Foo 1994 08:49:40 GMT",
            "NaN",
            "1e300",
            "inf",
        ] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", junk)]), now),
                None,
                "{junk}"
            );
        }
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "-5"), ("retry-after", "3")]),
                now
            ),
            ms(3000),
            "an unreadable retry-after-ms falls back to Retry-After"
        );
    }

    #[test]
    fn http_dates_convert_to_the_epoch() {
        let at = |t: &str| {
            http_date(t).map(|d| d.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs())
        };
        assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(at("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(at("Tue, 29 Feb 2000 12:00:00 GMT"), Some(951_825_600));
        assert_eq!(at("Sun, 06 Nov 1994 08:49:37 UTC"), None);
        assert_eq!(at("Sun, 06 Nov 1994 25:49:37 GMT"), None);
    }
}
