//! The tool registry: the set of tools a session offers, each with its schema canonicalized and
//! compiled once.
//!
//! Canonical means: an object schema (`"type": "object"`), keys in sorted order, `required`
//! sorted and de-duplicated, and `additionalProperties: false` unless the tool says otherwise —
//! an argument the tool does not know is a mistake the model should hear about, not something
//! to ignore. The schema must be valid draft 2020-12; it is compiled with `jsonschema` once,
//! never per call: an extension or MCP tool ([`Registry::add`], [`Registry::add_mcp`]) when it is
//! added, so a bad schema is refused there; a builtin tool the first time a call to it is
//! validated, so a process that checks one call compiles one schema, not nine (the builtin
//! schemas are constants, and `builtin_tools_register_cleanly` compiles every one).
//!
//! The registry also records where each tool comes from: [`Registry::with_builtins`] adds
//! Reasonix's own tools, and any tool added with [`Registry::add`] is an extension. The policy
//! input document reports it (`target.source`), so a policy can treat an embedder's tools apart.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};

use super::Tool;
use crate::policy::input::ToolSource;

/// A tool with its canonical schema and compiled validator.
#[derive(Clone)]
pub struct Registered {
    tool: Arc<dyn Tool>,
    schema: Value,
    /// Compiled when the tool is added (extensions) or first used (builtins).
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    source: ToolSource,
}

impl Registered {
    /// The tool.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }

    /// Where it comes from: `builtin` for the tools of [`Registry::with_builtins`], `extension`
    /// for any tool given to [`Registry::add`].
    pub fn source(&self) -> ToolSource {
        self.source
    }

    /// Its canonical schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Checks arguments against the schema; on failure, every violation as
    /// `"<where>: <what>"`, in the validator's order.
    pub fn validate(&self, args: &Map<String, Value>) -> Result<(), Vec<String>> {
        let validator = match self.validator() {
            Ok(v) => v,
            // Only a builtin is compiled here, and its schema is a tested constant; were it
            // broken, no call to it would pass.
            Err(e) => {
                return Err(vec![format!(
                    "(schema): the tool's schema does not compile: {e}"
                )]);
            }
        };
        // The validator takes a `Value`; the clone is small next to the rest of a call.
        let instance = Value::Object(args.clone());
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| {
                let at = e.instance_path().as_str();
                let at = if at.is_empty() { "(arguments)" } else { at };
                format!("{at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

impl Registered {
    /// The compiled validator, compiled now if it was not yet.
    fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.validator
            .get_or_init(|| compile(&self.schema))
            .as_ref()
            .map_err(String::as_str)
    }
}

/// Compiles a canonical schema.
fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::draft202012::new(schema).map_err(|e| e.to_string())
}

/// What a provider is sent for one tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSchema {
    /// The tool name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its canonical JSON Schema.
    pub parameters: Value,
}

/// Why a tool could not be added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools with one name.
    #[error("a tool named {0:?} is already registered")]
    Duplicate(String),
    /// A name a provider would reject.
    #[error("tool name {0:?} is not allowed; use 1 to 64 of a-z A-Z 0-9 _ -")]
    BadName(String),
    /// The schema is not an object schema, or not valid draft 2020-12.
    #[error("tool {name:?} has an unusable schema: {problem}")]
    BadSchema {
        /// The tool.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

/// The tools of a session, by name.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Registered>,
    /// Tool-name prefixes that are withdrawn, with why: an MCP server that was refused or did
    /// not start (`mcp__NAME__` → the reason). A call to such a tool is invalid, naming it.
    withdrawn: BTreeMap<String, String>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// A registry holding every builtin tool.
    pub fn with_builtins() -> Registry {
        let mut registry = Registry::new();
        for tool in super::builtin::all() {
            // The builtin schemas and names are constants covered by
            // `builtin_tools_register_cleanly`; a failure here is a bug in this crate.
            if let Err(e) = registry.insert(tool, ToolSource::Builtin) {
                unreachable!("builtin tool failed to register: {e}");
            }
        }
        registry
    }

    /// Adds a tool, as an extension; refuses a duplicate name, a bad name or a schema that does
    /// not compile.
    pub fn add(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.insert(tool, ToolSource::Extension)
    }

    /// Adds one of Reasonix's own tools that only some gates offer (`submit_plan`, which a gate
    /// in plan mode adds): a builtin, like those of [`Registry::with_builtins`].
    pub(crate) fn add_builtin(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.insert(tool, ToolSource::Builtin)
    }

    /// Adds a tool an MCP server offers, or the call that connects to one.
    pub fn add_mcp(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.insert(tool, ToolSource::Mcp)
    }

    /// Says why a tool is not offered: `key` is a tool's name, or, ending in `__`, the prefix
    /// of every tool of a server that was refused or failed to start (`mcp__NAME__`).
    pub fn withdraw(&mut self, key: impl Into<String>, why: impl Into<String>) {
        self.withdrawn.insert(key.into(), why.into());
    }

    /// Why a tool of this name is not offered, when a withdrawn prefix covers it.
    pub fn withdrawn(&self, name: &str) -> Option<&str> {
        self.withdrawn
            .iter()
            .find(|(key, _)| {
                *key == name || (key.ends_with("__") && name.starts_with(key.as_str()))
            })
            .map(|(_, why)| why.as_str())
    }

    /// Every withdrawn prefix with why.
    pub fn withdrawals(&self) -> impl Iterator<Item = (&str, &str)> {
        self.withdrawn.iter().map(|(p, w)| (p.as_str(), w.as_str()))
    }

    /// Adds a tool from the given source (see [`Registry::add`]).
    fn insert(&mut self, tool: Arc<dyn Tool>, source: ToolSource) -> Result<(), RegistryError> {
        let name = tool.name().to_owned();
        if !valid_name(&name) {
            return Err(RegistryError::BadName(name));
        }
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let schema = canonicalize(tool.schema()).map_err(|problem| RegistryError::BadSchema {
            name: name.clone(),
            problem,
        })?;
        // Any other tool's schema is compiled now, so a bad one is refused here; a builtin's on
        // first use (see the module doc).
        let validator = OnceLock::new();
        if source != ToolSource::Builtin {
            let compiled = compile(&schema).map_err(|problem| RegistryError::BadSchema {
                name: name.clone(),
                problem,
            })?;
            let _ = validator.set(Ok(compiled));
        }
        self.tools.insert(
            name,
            Registered {
                tool,
                schema,
                validator,
                source,
            },
        );
        Ok(())
    }

    /// The tool of that name.
    pub fn get(&self, name: &str) -> Option<&Registered> {
        self.tools.get(name)
    }

    /// Every tool name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The schemas a provider is sent, sorted by name.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools
            .values()
            .map(|r| ToolSchema {
                name: r.tool.name().to_owned(),
                description: r.tool.description().to_owned(),
                parameters: r.schema.clone(),
            })
            .collect()
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Canonicalizes a tool schema (see the module doc).
fn canonicalize(schema: Value) -> Result<Value, String> {
    let Value::Object(mut map) = schema else {
        return Err("the schema must be a JSON object".into());
    };
    match map.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        _ => return Err("the schema must describe an object (\"type\": \"object\")".into()),
    }
    map.entry("additionalProperties")
        .or_insert(Value::Bool(false));
    if let Some(required) = map.get_mut("required") {
        let Value::Array(items) = required else {
            return Err("\"required\" must be an array of property names".into());
        };
        let mut names = Vec::with_capacity(items.len());
        for item in items.iter() {
            match item {
                Value::String(s) => names.push(s.clone()),
                _ => return Err("\"required\" must be an array of property names".into()),
            }
        }
        names.sort();
        names.dedup();
        *items = names.into_iter().map(Value::String).collect();
    }
    // serde_json's map is a BTreeMap here (no `preserve_order`), so keys come out sorted.
    Ok(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Arguments, Classification, ClassifyError, Invocation, Output, ToolError};
    use serde_json::json;

    struct Fake {
        name: &'static str,
        schema: Value,
    }

    impl Tool for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "fake"
        }
        fn schema(&self) -> Value {
            self.schema.clone()
        }
        fn read_only(&self) -> bool {
            true
        }
        fn classify(&self, _: &Arguments) -> Result<Classification, ClassifyError> {
            Ok(Classification::reads(vec![]))
        }
        fn execute(&self, _: &Invocation) -> Result<Output, ToolError> {
            Ok(Output::text(""))
        }
    }

    fn fake(name: &'static str, schema: Value) -> Arc<dyn Tool> {
        Arc::new(Fake { name, schema })
    }

    #[test]
    fn builtin_tools_register_cleanly() {
        let registry = Registry::with_builtins();
        for name in registry.names() {
            let registered = registry.get(name).unwrap();
            assert!(
                registered.validator.get().is_none(),
                "{name} compiled early"
            );
            assert!(
                registered.validator().is_ok(),
                "{name}'s schema does not compile"
            );
        }
        let names: Vec<_> = registry.names().collect();
        assert_eq!(
            names,
            [
                "bash",
                "delete_file",
                "edit_file",
                "glob",
                "grep",
                "list_dir",
                "move_file",
                "network_connect",
                "read_file",
                "use_capability",
                "write_file"
            ]
        );
    }

    #[test]
    fn builtins_say_builtin_and_added_tools_say_extension() {
        let mut registry = Registry::with_builtins();
        registry.add(fake("ext", json!({"type":"object"}))).unwrap();
        for name in registry.names() {
            let want = if name == "ext" {
                ToolSource::Extension
            } else {
                ToolSource::Builtin
            };
            assert_eq!(registry.get(name).unwrap().source(), want, "{name}");
        }
        // A builtin tool added by hand is not a builtin: only `with_builtins` vouches for one.
        let mut by_hand = Registry::new();
        for tool in crate::tool::builtin::all() {
            by_hand.add(tool).unwrap();
        }
        assert_eq!(by_hand.get("bash").unwrap().source(), ToolSource::Extension);
    }

    #[test]
    fn duplicate_names_are_refused() {
        let mut registry = Registry::new();
        registry.add(fake("t", json!({"type":"object"}))).unwrap();
        let err = registry
            .add(fake("t", json!({"type":"object"})))
            .unwrap_err();
        assert!(matches!(err, RegistryError::Duplicate(_)));
    }

    #[test]
    fn bad_names_are_refused() {
        let mut registry = Registry::new();
        for name in ["", "has space", "dots.in.name", "ünï"] {
            let err = registry
                .add(fake(name, json!({"type":"object"})))
                .unwrap_err();
            assert!(matches!(err, RegistryError::BadName(_)), "{name}");
        }
    }

    #[test]
    fn non_object_and_broken_schemas_are_refused() {
        let mut registry = Registry::new();
        for schema in [
            json!([]),
            json!({"type": "string"}),
            json!({"properties": {}}),
            json!({"type": "object", "required": "path"}),
            json!({"type": "object", "properties": {"a": {"type": "no-such-type"}}}),
        ] {
            let err = registry.add(fake("t", schema.clone())).unwrap_err();
            assert!(matches!(err, RegistryError::BadSchema { .. }), "{schema}");
        }
    }

    #[test]
    fn schemas_are_canonical_and_sorted_by_name() {
        let mut registry = Registry::new();
        registry
            .add(fake(
                "zeta",
                json!({"type":"object","required":["b","a","b"],"properties":{"a":{},"b":{}}}),
            ))
            .unwrap();
        registry
            .add(fake("alpha", json!({"type":"object"})))
            .unwrap();
        let schemas = registry.schemas();
        assert_eq!(schemas[0].name, "alpha");
        assert_eq!(schemas[1].name, "zeta");
        assert_eq!(schemas[1].parameters["required"], json!(["a", "b"]));
        assert_eq!(schemas[1].parameters["additionalProperties"], json!(false));
    }

    #[test]
    fn validation_reports_every_violation_with_its_place() {
        let registry = Registry::with_builtins();
        let write = registry.get("write_file").unwrap();
        let args = json!({"path": 5, "extra": true});
        let errors = write.validate(args.as_object().unwrap()).unwrap_err();
        let all = errors.join("\n");
        assert!(all.contains("/path"), "{all}");
        assert!(all.contains("content"), "{all}");
        assert!(all.contains("extra"), "{all}");
    }
}
