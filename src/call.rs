//! A proposed tool call, and the parse stage that reads it from a provider's envelope.
//!
//! The contract (docs/DESIGN.md) is `{"id"?: str, "name": str, "arguments": object | str}`; a string
//! `arguments` holds JSON, as OpenAI-style providers send it. The OpenAI tool-call shape
//! `{"id", "type": "function", "function": {"name", "arguments"}}` is accepted too, so a
//! provider's output can be piped into `reasonix check` unchanged.
//!
//! Parsing never judges: it only turns text into a [`Call`] or a [`CallError`] that says what is
//! wrong. The gate maps a [`CallError`] to an `invalid` verdict at stage `validate`.

use serde_json::{Map, Value};

/// A tool call as the model proposed it; nothing in it has been checked against a tool yet.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The provider's id for the call, echoed in verdicts and records.
    pub id: Option<String>,
    /// The tool name, as called.
    pub name: String,
    /// The arguments, still raw: an object, or a string that should hold a JSON object.
    pub arguments: RawArguments,
}

/// A call's arguments before they are parsed.
#[derive(Clone, Debug, PartialEq)]
pub enum RawArguments {
    /// A JSON object, as sent by most tool-call formats.
    Object(Map<String, Value>),
    /// A string that should hold a JSON object (OpenAI-style).
    Text(String),
    /// Anything else the model sent (number, array, null…); always invalid.
    Other(Value),
    /// No `arguments` at all.
    Missing,
}

/// Why a call could not be read. Each message says what was wrong, so a model can correct it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The text is not JSON.
    #[error("the call is not valid JSON: {0}")]
    NotJson(String),
    /// The JSON is not an object.
    #[error("the call must be a JSON object {{\"name\": ..., \"arguments\": {{...}}}}, got {0}")]
    NotObject(&'static str),
    /// A field has the wrong type or is missing.
    #[error("the call's {field} {problem}")]
    Field {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A field the envelope does not know; refused rather than ignored.
    #[error("the call has an unknown field {0:?}; expected id, name, arguments")]
    UnknownField(String),
    /// `arguments` is a string, but not a JSON object.
    #[error("arguments is a string but does not hold a JSON object: {0}")]
    ArgumentsNotJson(String),
    /// `arguments` is neither an object nor a string.
    #[error("arguments must be a JSON object (or a string holding one), got {0}")]
    ArgumentsNotObject(&'static str),
    /// There are no arguments.
    #[error("the call has no arguments; send \"arguments\": {{...}}")]
    ArgumentsMissing,
}

impl Call {
    /// Builds a call from a name and an argument object.
    pub fn new(name: impl Into<String>, arguments: Value) -> Call {
        let arguments = match arguments {
            Value::Object(map) => RawArguments::Object(map),
            Value::String(text) => RawArguments::Text(text),
            other => RawArguments::Other(other),
        };
        Call {
            id: None,
            name: name.into(),
            arguments,
        }
    }

    /// Parses one call from text (one JSONL line, or a CALL argument).
    pub fn parse(text: &str) -> Result<Call, (Option<String>, CallError)> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| (None, CallError::NotJson(e.to_string())))?;
        Call::from_value(value)
    }

    /// Reads a call from a JSON value in either accepted envelope.
    ///
    /// On error the call's id is returned beside the error when it could be read, so the
    /// verdict can still name the call.
    pub fn from_value(value: Value) -> Result<Call, (Option<String>, CallError)> {
        let Value::Object(mut map) = value else {
            return Err((None, CallError::NotObject(kind(&value))));
        };
        let id = match map.remove("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id),
            Some(other) => {
                return Err((
                    None,
                    CallError::Field {
                        field: "id",
                        problem: format!("must be a string, got {}", kind(&other)),
                    },
                ));
            }
        };
        let fail = |e| (id.clone(), e);
        // The OpenAI shape nests name and arguments under "function".
        if let Some(function) = map.remove("function") {
            match map.remove("type") {
                None => {}
                Some(Value::String(t)) if t == "function" => {}
                Some(_) => {
                    return Err(fail(CallError::Field {
                        field: "type",
                        problem: "must be \"function\"".into(),
                    }));
                }
            }
            if let Some(extra) = map.keys().next() {
                return Err(fail(CallError::UnknownField(extra.clone())));
            }
            let Value::Object(inner) = function else {
                return Err(fail(CallError::Field {
                    field: "function",
                    problem: format!("must be an object, got {}", kind(&function)),
                }));
            };
            map = inner;
        }
        let name = match map.remove("name") {
            Some(Value::String(name)) if !name.is_empty() => name,
            Some(Value::String(_)) => {
                return Err(fail(CallError::Field {
                    field: "name",
                    problem: "is empty".into(),
                }));
            }
            Some(other) => {
                return Err(fail(CallError::Field {
                    field: "name",
                    problem: format!("must be a string, got {}", kind(&other)),
                }));
            }
            None => {
                return Err(fail(CallError::Field {
                    field: "name",
                    problem: "is missing".into(),
                }));
            }
        };
        let arguments = match map.remove("arguments") {
            None => RawArguments::Missing,
            Some(Value::Object(args)) => RawArguments::Object(args),
            Some(Value::String(text)) => RawArguments::Text(text),
            Some(other) => RawArguments::Other(other),
        };
        if let Some(extra) = map.keys().next() {
            return Err(fail(CallError::UnknownField(extra.clone())));
        }
        Ok(Call {
            id,
            name,
            arguments,
        })
    }

    /// Parses the arguments into an object.
    ///
    /// An empty or blank string counts as `{}`, which is what providers send for a call without
    /// parameters; the tool's schema then says what is required.
    pub fn parse_arguments(&self) -> Result<Map<String, Value>, CallError> {
        match &self.arguments {
            RawArguments::Object(map) => Ok(map.clone()),
            RawArguments::Text(text) if text.trim().is_empty() => Ok(Map::new()),
            RawArguments::Text(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(map)) => Ok(map),
                Ok(other) => Err(CallError::ArgumentsNotObject(kind(&other))),
                Err(e) => Err(CallError::ArgumentsNotJson(e.to_string())),
            },
            RawArguments::Other(other) => Err(CallError::ArgumentsNotObject(kind(other))),
            RawArguments::Missing => Err(CallError::ArgumentsMissing),
        }
    }
}

/// The JSON kind of a value, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Call, CallError> {
        Call::parse(text).map_err(|(_, e)| e)
    }

    #[test]
    fn flat_envelope_with_object_arguments_parses() {
        let call = parse(r#"{"id":"c1","name":"read_file","arguments":{"path":"a"}}"#).unwrap();
        assert_eq!(call.id.as_deref(), Some("c1"));
        assert_eq!(call.name, "read_file");
        assert_eq!(
            call.parse_arguments().unwrap(),
            json!({"path":"a"}).as_object().unwrap().clone()
        );
    }

    #[test]
    fn string_arguments_hold_json() {
        let call = parse(r#"{"name":"read_file","arguments":"{\"path\":\"a\"}"}"#).unwrap();
        assert_eq!(call.parse_arguments().unwrap()["path"], "a");
    }

    #[test]
    fn openai_envelope_parses() {
        let call = parse(
            r#"{"id":"call_1","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}"#,
        )
        .unwrap();
        assert_eq!(call.name, "list_dir");
        assert_eq!(call.id.as_deref(), Some("call_1"));
    }

    #[test]
    fn empty_string_arguments_are_an_empty_object() {
        let call = parse(r#"{"name":"x","arguments":""}"#).unwrap();
        assert!(call.parse_arguments().unwrap().is_empty());
    }

    #[test]
    fn malformed_envelopes_are_refused_with_a_reason() {
        let cases: &[(&str, &str)] = &[
            ("not json", "not valid JSON"),
            ("[1,2]", "must be a JSON object"),
            (r#"{"arguments":{}}"#, "name is missing"),
            (r#"{"name":5,"arguments":{}}"#, "name must be a string"),
            (r#"{"name":"","arguments":{}}"#, "name is empty"),
            (
                r#"{"name":"a","arguments":{},"extra":1}"#,
                "unknown field \"extra\"",
            ),
            (
                r#"{"id":3,"name":"a","arguments":{}}"#,
                "id must be a string",
            ),
            (
                r#"{"type":"tool","function":{"name":"a"}}"#,
                "type must be \"function\"",
            ),
            (r#"{"function":"a"}"#, "function must be an object"),
        ];
        for (text, needle) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn malformed_arguments_are_refused_with_a_reason() {
        let cases: &[(&str, &str)] = &[
            (r#"{"name":"a"}"#, "no arguments"),
            (
                r#"{"name":"a","arguments":"{\"path\":"}"#,
                "does not hold a JSON object",
            ),
            (r#"{"name":"a","arguments":"[1]"}"#, "got an array"),
            (r#"{"name":"a","arguments":7}"#, "got a number"),
            (r#"{"name":"a","arguments":null}"#, "got null"),
        ];
        for (text, needle) in cases {
            let call = parse(text).unwrap();
            let err = call.parse_arguments().unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn the_id_survives_a_later_error() {
        let (id, _) = Call::parse(r#"{"id":"c9","arguments":{}}"#).unwrap_err();
        assert_eq!(id.as_deref(), Some("c9"));
    }
}
