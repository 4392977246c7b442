//! The provider contract: a request is the conversation and the tool schemas; the answer is a
//! stream of events. A provider knows nothing of the gate: it only carries text and proposed
//! calls.
//!
//! # Failed attempts
//!
//! An answer may take several attempts. Retrying is safe because nothing of an unfinished
//! answer is judged, leased or run: an attempt that fails before its answer is whole is simply
//! asked for again, with the same request. A provider that retries says so in its stream with
//! [`Event::AttemptFailed`]: everything it sent since the start (or since the previous
//! `AttemptFailed`) is void, and the event's `wait` says whether another attempt follows. The
//! session drops that attempt's text, reasoning and call fragments whole, marks what it had
//! shown as discarded, and records the attempt.
//!
//! [`RetryPolicy`] says which waits come between attempts: exponential backoff with jitter when
//! the server names no wait, the server's `retry-after-ms` or `Retry-After` when it does, and a
//! cap on the number of retries (3 by default).

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::Stream;
use serde::Serialize;

use crate::tool::ToolSchema;

/// One message of the conversation, in the OpenAI chat shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Instructions for the model.
    System(String),
    /// The person's words.
    User(String),
    /// What the model said and the calls it proposed.
    Assistant {
        /// Its text, if any.
        content: Option<String>,
        /// Its reasoning, replayed where the API requires it (DeepSeek's thinking mode).
        reasoning: Option<String>,
        /// The calls it proposed.
        tool_calls: Vec<ProposedCall>,
    },
    /// The result of one call, for the model.
    Tool {
        /// The id of the call it answers.
        call_id: String,
        /// What the model sees.
        content: String,
    },
}

/// A call as the model proposed it, assembled from its fragments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProposedCall {
    /// The provider's id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments, as the JSON text the model wrote (possibly malformed).
    pub arguments: String,
}

/// What a provider is asked.
#[derive(Clone, Debug)]
pub struct Request {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSchema>,
}

/// One event of a streamed answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// More of the answer's text.
    Text(String),
    /// More of the model's reasoning.
    Reasoning(String),
    /// A fragment of a tool call: fragments with the same index belong together; the id and
    /// name come once, the arguments in pieces.
    CallFragment {
        /// Which call of the answer.
        index: usize,
        /// Its id, when this fragment carries it.
        id: Option<String>,
        /// Its name, when this fragment carries it.
        name: Option<String>,
        /// More of its arguments.
        arguments: String,
    },
    /// Why the answer ended (`stop`, `tool_calls`, `length`…).
    Finish(String),
    /// Token counts.
    Usage {
        /// Prompt tokens.
        prompt: u64,
        /// Completion tokens.
        completion: u64,
    },
    /// The attempt so far failed before its answer was whole: every event since the start of
    /// the stream, or since the previous `AttemptFailed`, is void. When `wait` is set, another
    /// attempt with the same request follows after it; when it is not, the stream ends with an
    /// error.
    AttemptFailed(FailedAttempt),
}

/// What went wrong with one attempt at an answer, when asking again may mend it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// An HTTP status worth retrying: 408, 409, 429 or 5xx.
    Status {
        /// The status.
        status: u16,
        /// The wait the server asked for (`retry-after-ms`, else `Retry-After`).
        retry_after: Option<Duration>,
        /// The start of its body.
        body: String,
    },
    /// The connection failed, or dropped before the answer was whole.
    Transport(String),
    /// The stream ended before `[DONE]`.
    Cut {
        /// Whether the finish reason had come (the usage chunk or `[DONE]` was still missing).
        finished: bool,
    },
    /// A chunk that is not the protocol: not UTF-8, not server-sent events, not JSON. It is
    /// never skipped: a lost fragment of a call's arguments would change the call.
    Malformed(String),
    /// Nothing arrived for the read timeout.
    Stall(Duration),
}

impl Fault {
    /// The record's name for the kind of fault: `status`, `transport`, `cut`, `malformed` or
    /// `stall`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Status { .. } => "status",
            Fault::Transport(_) => "transport",
            Fault::Cut { .. } => "cut",
            Fault::Malformed(_) => "malformed",
            Fault::Stall(_) => "stall",
        }
    }

    /// The HTTP status, for a status fault.
    pub fn status(&self) -> Option<u16> {
        match self {
            Fault::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The wait the server asked for, if it named one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Fault::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Status {
                status,
                retry_after,
                body,
            } => {
                write!(f, "the provider answered {status}")?;
                if let Some(wait) = retry_after {
                    write!(f, " asking to wait {}", seconds(*wait))?;
                }
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                Ok(())
            }
            Fault::Transport(why) => write!(f, "the connection failed: {why}"),
            Fault::Cut { finished: false } => {
                write!(f, "the stream was cut before its finish reason")
            }
            Fault::Cut { finished: true } => {
                write!(
                    f,
                    "the stream was cut after its finish reason, before [DONE]"
                )
            }
            Fault::Malformed(why) => write!(f, "an unreadable chunk ({why})"),
            Fault::Stall(limit) => write!(
                f,
                "nothing arrived for {} (the read timeout)",
                seconds(*limit)
            ),
        }
    }
}

/// One attempt that failed before its answer was whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedAttempt {
    /// Which attempt of the answer: 1 for the first.
    pub attempt: u32,
    /// What went wrong.
    pub fault: Fault,
    /// Bytes of the response body received before it failed.
    pub bytes: u64,
    /// The wait before the next attempt; `None` when none follows.
    pub wait: Option<Duration>,
}

impl fmt::Display for FailedAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "attempt {}: {} ({} bytes received)",
            self.attempt, self.fault, self.bytes
        )
    }
}

/// A duration as people read it: `250 ms`, `1.5 s`.
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `1 attempt`, `3 attempts`.
fn count(n: usize) -> String {
    if n == 1 {
        "1 attempt".into()
    } else {
        format!("{n} attempts")
    }
}

/// Every attempt of a [`ProviderError::GaveUp`], one after the other.
fn each(list: &[FailedAttempt]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// How failed attempts are retried.
///
/// The wait before retry `n` (1 for the first) is the server's `retry-after-ms` or
/// `Retry-After` when it named one, else `base × 2^(n-1)`, capped at `max_backoff`, times a
/// jitter factor in (0.75, 1] (the OpenAI SDK's formula: successive waits still grow by at least
/// half). A server asking for more than `max_retry_after` ends the retries: waiting less would
/// only fail again.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff, when the server names no wait.
    pub base: Duration,
    /// The longest backoff.
    pub max_backoff: Duration,
    /// The longest wait a server may ask for.
    pub max_retry_after: Duration,
    /// Where the jitter comes from.
    pub jitter: Jitter,
}

/// The retries after the first attempt, when nothing else is configured.
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// The first backoff, when nothing else is configured.
pub const DEFAULT_RETRY_BASE: Duration = Duration::from_millis(500);

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: DEFAULT_MAX_RETRIES,
            base: DEFAULT_RETRY_BASE,
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            jitter: Jitter::from_entropy(),
        }
    }
}

/// What follows a failed attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Another attempt, after this wait.
    Retry(Duration),
    /// None; why.
    GiveUp(String),
}

impl RetryPolicy {
    /// What follows the failure of attempt `attempt` (1 for the first) with `fault`.
    pub fn next(&self, attempt: u32, fault: &Fault) -> Next {
        if attempt > self.max_retries {
            return Next::GiveUp(match self.max_retries {
                0 => "retries are off".into(),
                1 => "its one retry spent".into(),
                n => format!("all {n} retries spent"),
            });
        }
        if let Some(asked) = fault.retry_after() {
            if asked > self.max_retry_after {
                return Next::GiveUp(format!(
                    "the provider asked to wait {}, longer than the {} reasonix waits",
                    seconds(asked),
                    seconds(self.max_retry_after)
                ));
            }
            return Next::Retry(asked);
        }
        let doubled = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        let backoff = doubled.min(self.max_backoff);
        Next::Retry(backoff.mul_f64(1.0 - 0.25 * self.jitter.next()))
    }
}

/// A source of jitter in [0, 1): SplitMix64 over a counter, seeded for tests and from the clock
/// and the process otherwise. Shared by clones.
#[derive(Clone, Debug)]
pub struct Jitter(Arc<AtomicU64>);

impl Jitter {
    /// A reproducible sequence.
    pub fn seeded(seed: u64) -> Jitter {
        Jitter(Arc::new(AtomicU64::new(seed)))
    }

    /// A sequence seeded from the clock and the process id, so runs started together spread
    /// their retries apart.
    pub fn from_entropy() -> Jitter {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Jitter::seeded(nanos ^ (u64::from(std::process::id()) << 32))
    }

    /// The next value, in [0, 1).
    pub fn next(&self) -> f64 {
        const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut z = self
            .0
            .fetch_add(GAMMA, Ordering::Relaxed)
            .wrapping_add(GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits, as a fraction of 2^53.
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Why a provider failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The API key is missing.
    #[error("no API key: set {0}")]
    NoKey(String),
    /// 401: the key is wrong.
    #[error("the provider refused the API key (401): {0}")]
    Unauthorized(String),
    /// The model does not exist there.
    #[error("the provider does not know the model {model:?}: {detail}")]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// What the provider said.
        detail: String,
    },
    /// Another HTTP error, after any retries.
    #[error("the provider answered {status}: {body}")]
    Http {
        /// The status.
        status: u16,
        /// The body, bounded.
        body: String,
    },
    /// The request could not be made at all (not a fault of the moment: a bad URL).
    #[error("cannot reach the provider: {0}")]
    Network(String),
    /// Every attempt failed before its answer was whole, and no retry is left.
    #[error("gave up after {} ({why}): {}", count(.attempts.len()), each(.attempts))]
    GaveUp {
        /// Each attempt and why it failed.
        attempts: Vec<FailedAttempt>,
        /// Why no further attempt was made.
        why: String,
    },
    /// A scripted session ran out of turns or could not be read.
    #[error("{0}")]
    Script(String),
}

/// A stream of events.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event, ProviderError>> + Send>>;

/// A model behind an API, or a script.
pub trait Provider: Send + Sync {
    /// A name for messages and records (`deepseek-chat at https://api.deepseek.com`).
    fn describe(&self) -> String;
    /// Streams the answer to one request, with an [`Event::AttemptFailed`] for each attempt that
    /// failed before its answer was whole.
    fn stream(&self, request: Request) -> EventStream;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base: Duration::from_millis(100),
            max_backoff: Duration::from_millis(700),
            max_retry_after: Duration::from_secs(60),
            jitter: Jitter::seeded(7),
        }
    }

    fn wait(next: Next) -> Duration {
        match next {
            Next::Retry(w) => w,
            Next::GiveUp(why) => panic!("gave up: {why}"),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_below_and_stops_at_its_cap() {
        let p = policy(10);
        let mut last = Duration::ZERO;
        for attempt in 1..=6 {
            let w = wait(p.next(attempt, &Fault::Cut { finished: false }));
            let full = Duration::from_millis((100u64 << (attempt - 1)).min(700));
            assert!(
                w <= full && w > full.mul_f64(0.75),
                "attempt {attempt}: {w:?} not in (0.75, 1] × {full:?}"
            );
            if full < Duration::from_millis(700) {
                assert!(w > last.mul_f64(1.1), "waits grow: {last:?} then {w:?}");
            }
            last = w;
        }
    }

    #[test]
    fn a_seeded_jitter_repeats_and_differs_between_seeds() {
        let a: Vec<f64> = (0..5)
            .map(|_| Jitter::seeded(1))
            .map(|j| j.next())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]), "same seed, same value");
        let j = Jitter::seeded(1);
        let run: Vec<f64> = (0..100).map(|_| j.next()).collect();
        assert!(run.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(run.windows(2).all(|w| w[0] != w[1]));
        assert_ne!(Jitter::seeded(1).next(), Jitter::seeded(2).next());
    }

    #[test]
    fn the_servers_wait_is_honoured_exactly() {
        let p = policy(3);
        let fault = Fault::Status {
            status: 429,
            retry_after: Some(Duration::from_millis(1234)),
            body: String::new(),
        };
        assert_eq!(p.next(1, &fault), Next::Retry(Duration::from_millis(1234)));
        assert_eq!(p.next(3, &fault), Next::Retry(Duration::from_millis(1234)));
    }

    #[test]
    fn retries_stop_at_the_cap_and_at_a_wait_too_long_to_sit_through() {
        let p = policy(3);
        let cut = Fault::Cut { finished: false };
        assert!(matches!(p.next(3, &cut), Next::Retry(_)));
        assert_eq!(p.next(4, &cut), Next::GiveUp("all 3 retries spent".into()));
        assert!(matches!(policy(0).next(1, &cut), Next::GiveUp(_)));
        let hour = Fault::Status {
            status: 503,
            retry_after: Some(Duration::from_secs(3600)),
            body: String::new(),
        };
        match p.next(1, &hour) {
            Next::GiveUp(why) => assert!(why.contains("3600.0 s"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gave_up_says_how_many_attempts_and_why_each_failed() {
        let e = ProviderError::GaveUp {
            attempts: vec![
                FailedAttempt {
                    attempt: 1,
                    fault: Fault::Status {
                        status: 429,
                        retry_after: Some(Duration::from_secs(1)),
                        body: "slow down".into(),
                    },
                    bytes: 9,
                    wait: Some(Duration::from_secs(1)),
                },
                FailedAttempt {
                    attempt: 2,
                    fault: Fault::Malformed("expected value".into()),
                    bytes: 300,
                    wait: None,
                },
            ],
            why: "its one retry spent".into(),
        };
        assert_eq!(
            e.to_string(),
            "gave up after 2 attempts (its one retry spent): attempt 1: the provider answered 429 \
             asking to wait 1.0 s: slow down (9 bytes received); attempt 2: an unreadable chunk \
             (expected value) (300 bytes received)"
        );
    }
}
