//! The builtin tools, exactly as docs/DESIGN.md names them. Read-only: `read_file`, `list_dir`,
//! `glob`, `grep`. Writers: `write_file`, `edit_file`, `move_file`, `delete_file`, `bash`. And
//! the capability proxy, `use_capability`, which the gate resolves to the tool it names.
//!
//! One more builtin exists only in plan mode ([`plan_mode`]): `submit_plan`, added by a gate
//! built in plan mode and offered by no other, so a normal session's tools are the nine above.
//!
//! Every file tool reaches the disk only through the [`ConfinedPath`]s its admission carries,
//! so the kernel keeps each effect beneath the root the gate placed it in.
//!
//! [`ConfinedPath`]: crate::sandbox::ConfinedPath

mod bash;
mod delete_file;
mod edit_file;
mod glob;
mod grep;
mod list_dir;
mod move_file;
mod network_connect;
mod read_file;
mod search_walk;
mod submit_plan;
pub mod use_capability;
mod write_file;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::Tool;

/// One instance of every builtin tool.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile),
        Arc::new(write_file::WriteFile),
        Arc::new(edit_file::EditFile),
        Arc::new(move_file::MoveFile),
        Arc::new(delete_file::DeleteFile),
        Arc::new(list_dir::ListDir),
        Arc::new(glob::GlobTool),
        Arc::new(grep::Grep),
        Arc::new(bash::Bash),
        Arc::new(use_capability::UseCapability),
        Arc::new(network_connect::NetworkConnect),
    ]
}

/// The name of the tool a plan-mode session hands its plan in with.
pub const SUBMIT_PLAN: &str = "submit_plan";

/// The builtin tools only a gate in plan mode offers: `submit_plan`.
pub fn plan_mode() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(submit_plan::SubmitPlan)]
}

/// The schema of a path argument: a non-empty string without NUL bytes.
fn path_property(description: &str) -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "pattern": "^[^\\u0000]*$",
        "description": description,
    })
}

/// An object schema with these properties and required names.
fn object_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    schema.insert("required".into(), json!(required));
    schema.insert("additionalProperties".into(), json!(false));
    Value::Object(schema)
}

/// Cuts one line of a file to `max` bytes, saying so.
fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    crate::text::shorten(text, max, crate::text::Keep::Head)
}

/// How a confined path is shown to the model (see [`ConfinedPath::shown`]).
///
/// [`ConfinedPath::shown`]: crate::sandbox::ConfinedPath::shown
fn shown(path: &crate::sandbox::ConfinedPath) -> String {
    path.shown()
}
