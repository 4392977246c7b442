//! `use_capability {capability, arguments}`: the capability proxy. The model names any
//! registered tool (builtin or MCP) and its arguments.
//!
//! The gate resolves the proxy **before** anything else (stage `target`): the call is judged as
//! the tool it reaches, with its real arguments, against that tool's schema; the proxy's own
//! name and read-only flag lend nothing. So this tool never classifies or executes a call
//! itself: reaching either means a gate skipped its first stage, and the call is refused.

use serde_json::{Value, json};

use crate::tool::{Arguments, Classification, ClassifyError, Invocation, Output, Tool, ToolError};

/// The proxy's name.
pub const NAME: &str = "use_capability";

/// The capability proxy.
pub struct UseCapability;

impl Tool for UseCapability {
    fn name(&self) -> &str {
        NAME
    }
    fn description(&self) -> &str {
        "Use any available tool by name: `capability` is the tool's name, `arguments` its arguments. The call is judged exactly as the tool called directly."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "capability": {"type": "string", "minLength": 1, "description": "the name of the tool to use"},
                "arguments": {"type": "object", "description": "its arguments"}
            },
            "required": ["capability", "arguments"],
            "additionalProperties": false
        })
    }
    fn read_only(&self) -> bool {
        // Lends nothing: the gate judges the target, never this flag.
        false
    }
    fn classify(&self, _: &Arguments) -> Result<Classification, ClassifyError> {
        Err(ClassifyError(
            "use_capability is resolved to its target before classification; a gate that reaches this skipped its target stage".into(),
        ))
    }
    fn execute(&self, _: &Invocation) -> Result<Output, ToolError> {
        Err(ToolError::Refused(
            "use_capability never runs itself: the gate runs the tool it reaches".into(),
        ))
    }
}
