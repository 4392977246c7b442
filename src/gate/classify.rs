//! Stage 4, **classify**: the tool names the call's effects and every path it touches with its
//! role and access; a `bash` command is analysed with tree-sitter first. A call whose arguments
//! match the schema but make no sense (an edit that changes nothing) is still invalid here.
//!
//! An MCP tool (`mcp__SERVER__TOOL`) does not classify itself: what it does is declared by
//! policy (`mcp.classify`, [`crate::policy::mcp`]), never borrowed from the server's hints.
//! Its declared path arguments become paths like a builtin's, judged and confined the same way.

use super::validate::{Invalid, Validated};
use crate::policy::CompiledPolicy;
use crate::policy::input::ToolSource;
use crate::policy::mcp::McpClass;
use crate::tool::{Arguments, Classification, ClassifyError, Effect, PathRequest};
use crate::vocab::Access;

/// A validated call and what it would do.
pub(super) struct Classified {
    pub call: Validated,
    pub class: Classification,
}

/// Asks the tool what the call does, or policy when the tool is an MCP server's.
pub(super) fn classify(call: Validated, policy: &CompiledPolicy) -> Result<Classified, Invalid> {
    let class = if call.source == ToolSource::Mcp && call.name.starts_with("mcp__") {
        declared(&policy.mcp_class(&call.name), &call.arguments)
    } else {
        call.tool.classify(&call.arguments)
    };
    match class {
        Ok(class) => Ok(Classified { call, class }),
        Err(e) => Err(Invalid::of(
            call.id.clone(),
            &call.name,
            format!("{}: {e}", call.name),
        )),
    }
}

/// The classification policy declares for an MCP call: its effects, and each declared argument
/// present in the call as a path (a string, or each string of a list).
fn declared(class: &McpClass, args: &Arguments) -> Result<Classification, ClassifyError> {
    let access =
        if class.effects.contains(&Effect::Write) || class.effects.contains(&Effect::Delete) {
            Access::Write
        } else {
            Access::Read
        };
    let mut paths = Vec::new();
    for (arg, role) in &class.paths {
        let Some(value) = args.as_map().get(arg) else {
            continue;
        };
        let strings: Vec<&str> = match value {
            serde_json::Value::String(s) => vec![s.as_str()],
            serde_json::Value::Array(items) => items
                .iter()
                .map(|v| v.as_str())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| not_a_path(arg))?,
            _ => return Err(not_a_path(arg)),
        };
        for s in strings {
            paths.push(PathRequest {
                written: s.to_owned(),
                role: *role,
                access,
                pattern: false,
            });
        }
    }
    let effects: Vec<Effect> = class.effects.iter().copied().collect();
    let mut out = Classification::changes(&effects, paths);
    out.read_only = class.read_only();
    Ok(out)
}

fn not_a_path(arg: &str) -> ClassifyError {
    ClassifyError(format!(
        "argument {arg:?} is declared a path by the policy (mcp.classify), so it must be a string or a list of strings"
    ))
}
