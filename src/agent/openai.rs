//! An OpenAI-compatible chat-completions provider, streaming over SSE (`reqwest` and
//! `eventsource-stream`). DeepSeek is the default: `https://api.deepseek.com`, `deepseek-chat`,
//! the key in `DEEPSEEK_API_KEY`.
//!
//! - 429 and 5xx answers are retried with exponential backoff (honouring `Retry-After`, capped)
//!   before any of the answer is streamed; once streaming has begun, an error is not retried,
//!   because part of the answer was already shown.
//! - 401, an unknown model, and a stream that ends before the answer does (no `[DONE]` and no
//!   finish reason) are errors that say so.
//! - An assistant message's `reasoning_content` is sent back with it: DeepSeek's thinking mode
//!   requires it within a turn that uses tools.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::provider::{Event, EventStream, Message, Provider, ProviderError, Request};
use crate::text::{Keep, shorten};

/// The DeepSeek defaults.
pub const DEEPSEEK_URL: &str = "https://api.deepseek.com";
/// DeepSeek's chat model.
pub const DEEPSEEK_MODEL: &str = "deepseek-chat";
/// The variable holding DeepSeek's key.
pub const DEEPSEEK_KEY: &str = "DEEPSEEK_API_KEY";

/// Where and what to ask.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// The API's base URL (`.../chat/completions` is appended).
    pub base_url: String,
    /// The model.
    pub model: String,
    /// The environment variable holding the API key.
    pub key_env: String,
    /// Retries on 429 and 5xx.
    pub retries: u32,
    /// The first backoff; each retry doubles it.
    pub backoff: Duration,
}

impl Default for OpenAiConfig {
    fn default() -> OpenAiConfig {
        OpenAiConfig {
            base_url: DEEPSEEK_URL.into(),
            model: DEEPSEEK_MODEL.into(),
            key_env: DEEPSEEK_KEY.into(),
            retries: 3,
            backoff: Duration::from_millis(500),
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
            .connect_timeout(Duration::from_secs(20))
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
        let body = self.body(&request);
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let client = self.client.clone();
        let key = self.key.clone();
        let config = self.config.clone();
        tokio::spawn(async move {
            if let Err(e) = converse(&client, &url, &key, &config, &body, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        }))
    }
}

/// Sends the request (retrying what may be retried) and streams the answer into `tx`.
async fn converse(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    config: &OpenAiConfig,
    body: &Value,
    tx: &mpsc::Sender<Result<Event, ProviderError>>,
) -> Result<(), ProviderError> {
    let mut attempt = 0;
    let response = loop {
        let sent = client.post(url).bearer_auth(key).json(body).send().await;
        let retry_after = match sent {
            Err(e) if attempt < config.retries && (e.is_connect() || e.is_timeout()) => None,
            Err(e) => return Err(ProviderError::Network(e.to_string())),
            Ok(resp) => {
                let status = resp.status().as_u16();
                if status == 200 {
                    break resp;
                }
                let retry_after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(|s| Duration::from_secs(s.min(30)));
                let text = resp.text().await.unwrap_or_default();
                match status {
                    401 => return Err(ProviderError::Unauthorized(bounded(&text))),
                    400 | 404 if text.to_lowercase().contains("model") => {
                        return Err(ProviderError::UnknownModel {
                            model: config.model.clone(),
                            detail: bounded(&text),
                        });
                    }
                    429 | 500..=599 if attempt < config.retries => retry_after,
                    _ => {
                        return Err(ProviderError::Http {
                            status,
                            body: bounded(&text),
                        });
                    }
                }
            }
        };
        let wait = retry_after.unwrap_or(config.backoff * 2u32.pow(attempt));
        attempt += 1;
        tokio::time::sleep(wait).await;
    };

    let mut events = response.bytes_stream().eventsource();
    let mut ended = false;
    while let Some(item) = events.next().await {
        let event = item.map_err(|e| ProviderError::Cut(format!(": {e}")))?;
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            ended = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::Protocol(format!("{e} in {}", bounded(data))))?;
        if let Some(error) = chunk.get("error") {
            return Err(ProviderError::Http {
                status: 200,
                body: bounded(&error.to_string()),
            });
        }
        for event in decode(&chunk) {
            if matches!(event, Event::Finish(_)) {
                ended = true;
            }
            if tx.send(Ok(event)).await.is_err() {
                return Ok(());
            }
        }
    }
    if !ended {
        return Err(ProviderError::Cut(String::new()));
    }
    Ok(())
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
}
