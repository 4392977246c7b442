//! The provider contract: a request is the conversation and the tool schemas; the answer is a
//! stream of events. A provider knows nothing of the gate: it only carries text and proposed
//! calls.

use std::pin::Pin;

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
    /// The connection failed.
    #[error("cannot reach the provider: {0}")]
    Network(String),
    /// The stream ended before the answer did.
    #[error("the provider's stream was cut before the answer ended{0}")]
    Cut(String),
    /// The provider sent something that is not its protocol.
    #[error("the provider sent something unreadable: {0}")]
    Protocol(String),
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
    /// Streams the answer to one request.
    fn stream(&self, request: Request) -> EventStream;
}
