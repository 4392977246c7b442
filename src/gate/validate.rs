//! Stage 3, **validate**: the tool must exist and the arguments must be a JSON object matching
//! its schema. Nothing after this stage sees an invalid call.

use std::sync::Arc;

use crate::call::Call;
use crate::policy::input::ToolSource;
use crate::tool::{Arguments, Registry, Tool};

pub(super) use super::verdict::Invalid;

/// A call whose tool exists and whose arguments match its schema.
pub(super) struct Validated {
    /// The provider's id for the call.
    pub id: Option<String>,
    /// The tool as called.
    pub name: String,
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Where the tool comes from.
    pub source: ToolSource,
    /// The arguments, validated.
    pub arguments: Arguments,
    /// The proxy the call went through (`use_capability`), when it did.
    pub via: Option<&'static str>,
}

/// Finds the tool and checks the arguments against its schema.
pub(super) fn validate(
    registry: &Registry,
    call: &Call,
    via: Option<&'static str>,
) -> Result<Validated, Invalid> {
    let invalid = |message: String| Invalid::of(call.id.clone(), &call.name, message);
    let Some(registered) = registry.get(&call.name) else {
        if let Some(why) = registry.withdrawn(&call.name) {
            return Err(invalid(format!(
                "tool {:?} is not available: {why}",
                call.name
            )));
        }
        let known: Vec<&str> = registry.names().collect();
        return Err(invalid(format!(
            "unknown tool {:?}; the tools are: {}",
            call.name,
            known.join(", ")
        )));
    };
    if let Some(why) = registered.tool().unavailable() {
        return Err(invalid(format!(
            "tool {:?} is not available: {why}",
            call.name
        )));
    }
    let schema = || serde_json::to_string(registered.schema()).unwrap_or_default();
    let args = match call.parse_arguments() {
        Ok(args) => args,
        Err(e) => {
            return Err(invalid(format!(
                "{e}. The schema of {} is {}",
                call.name,
                schema()
            )));
        }
    };
    if let Err(errors) = registered.validate(&args) {
        return Err(invalid(format!(
            "the arguments of {} do not match its schema: {}. The schema is {}",
            call.name,
            errors.join("; "),
            schema()
        )));
    }
    Ok(Validated {
        id: call.id.clone(),
        name: call.name.clone(),
        tool: Arc::clone(registered.tool()),
        source: registered.source(),
        arguments: Arguments::new(args),
        via,
    })
}
