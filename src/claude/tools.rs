//! Tools another host runs, that Reasonix only judges: a network connection a web fetch makes
//! (`network_connect`) and an MCP tool of a server that host connected (`mcp__SERVER__TOOL`).
//! Both classify and validate like any tool; both refuse to execute, since nothing here runs
//! them.

use serde_json::{Value, json};

use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, Invocation, Output, Tool, ToolError,
};

/// The name of the call a web fetch is judged as.
pub const NETWORK_CONNECT: &str = "network_connect";

/// `network_connect {host, url?}`: a connection to `host`, effect `network`, no path.
pub struct NetworkConnect;

impl Tool for NetworkConnect {
    fn name(&self) -> &str {
        NETWORK_CONNECT
    }
    fn description(&self) -> &str {
        "A network connection another host makes (Claude Code's WebFetch): judged, never run here."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "host": {"type": "string", "minLength": 1},
                "url": {"type": "string"}
            },
            "required": ["host"]
        })
    }
    fn read_only(&self) -> bool {
        false
    }
    fn classify(&self, _: &Arguments) -> Result<Classification, ClassifyError> {
        Ok(Classification::changes(&[Effect::Network], Vec::new()))
    }
    fn execute(&self, _: &Invocation) -> Result<Output, ToolError> {
        Err(ToolError::Unavailable(
            "network_connect is only judged here; the host that asked runs it".into(),
        ))
    }
}

/// An MCP tool another host serves, known by name only: any arguments object. What it does is
/// declared by policy (`mcp.classify`), as for a server Reasonix connects itself; undeclared, it
/// is exec and network.
pub struct Observed {
    name: String,
}

impl Observed {
    /// The tool `mcp__SERVER__TOOL`.
    pub fn new(name: impl Into<String>) -> Observed {
        Observed { name: name.into() }
    }
}

impl Tool for Observed {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "An MCP tool another host serves: judged, never run here."
    }
    fn schema(&self) -> Value {
        // The host validated the arguments against its server's schema; Reasonix has not seen
        // that schema, so any object passes here and the policy judges the rest.
        json!({"type": "object", "additionalProperties": true})
    }
    fn read_only(&self) -> bool {
        false
    }
    fn classify(&self, _: &Arguments) -> Result<Classification, ClassifyError> {
        Ok(Classification::changes(
            &[Effect::Exec, Effect::Network],
            Vec::new(),
        ))
    }
    fn execute(&self, _: &Invocation) -> Result<Output, ToolError> {
        Err(ToolError::Unavailable(format!(
            "{} is only judged here; the host that asked runs it",
            self.name
        )))
    }
}
