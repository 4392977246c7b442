//! Tools another host runs, that Reasonix only judges: an MCP tool of a server that host
//! connected (`mcp__SERVER__TOOL`). It classifies and validates like any tool and refuses to
//! execute, since nothing here runs it. A web fetch is judged as the builtin `network_connect`.

use serde_json::{Value, json};

use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, Invocation, Output, Tool, ToolError,
};

/// The name of the call a web fetch is judged as: the builtin `network_connect {host, port}`,
/// the call the egress proxy makes for a connection (issue 15).
pub const NETWORK_CONNECT: &str = "network_connect";

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
