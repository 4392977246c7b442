//! The scripted provider (`--provider script:FILE`): replays assistant turns in order, whatever
//! the tool results, for demos, tests and CI without a network.
//!
//! ```json
//! [
//!   {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
//!   {"text": "Done."}
//! ]
//! ```
//!
//! `arguments` may be an object or a string (which may hold malformed JSON, to exercise the
//! `invalid` outcome). When the turns run out the model stops.

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

use super::provider::{Event, EventStream, Provider, ProviderError, Request};

/// One scripted assistant turn.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// What the model says.
    #[serde(default)]
    pub text: Option<String>,
    /// The calls it proposes.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
}

/// One scripted call.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool.
    pub name: String,
    /// Its arguments: an object, or a string sent as is.
    pub arguments: Value,
}

/// Replays turns.
pub struct ScriptProvider {
    name: String,
    turns: Mutex<std::collections::VecDeque<Turn>>,
    played: Mutex<usize>,
}

impl ScriptProvider {
    /// Turns from a JSON file.
    pub fn load(path: &Path) -> Result<ScriptProvider, ProviderError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProviderError::Script(format!("cannot read the script {}: {e}", path.display()))
        })?;
        let turns: Vec<Turn> = serde_json::from_str(&text).map_err(|e| {
            ProviderError::Script(format!(
                "the script {} is not a list of turns: {e}",
                path.display()
            ))
        })?;
        Ok(ScriptProvider::new(&path.display().to_string(), turns))
    }

    /// Turns given directly.
    pub fn new(name: &str, turns: Vec<Turn>) -> ScriptProvider {
        ScriptProvider {
            name: name.to_owned(),
            turns: Mutex::new(turns.into()),
            played: Mutex::new(0),
        }
    }
}

impl Provider for ScriptProvider {
    fn describe(&self) -> String {
        format!("script {}", self.name)
    }

    fn stream(&self, _request: Request) -> EventStream {
        let turn = self.turns.lock().ok().and_then(|mut t| t.pop_front());
        let number = self
            .played
            .lock()
            .map(|mut n| {
                *n += 1;
                *n
            })
            .unwrap_or(0);
        let mut events = Vec::new();
        match turn {
            None => events.push(Ok(Event::Finish("stop".into()))),
            Some(turn) => {
                if let Some(text) = turn.text {
                    events.push(Ok(Event::Text(text)));
                }
                let calls = !turn.tool_calls.is_empty();
                for (index, call) in turn.tool_calls.into_iter().enumerate() {
                    let arguments = match call.arguments {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    events.push(Ok(Event::CallFragment {
                        index,
                        id: Some(format!("call_{number}_{index}")),
                        name: Some(call.name),
                        arguments,
                    }));
                }
                events.push(Ok(Event::Finish(
                    if calls { "tool_calls" } else { "stop" }.into(),
                )));
            }
        }
        Box::pin(futures_util::stream::iter(events))
    }
}
