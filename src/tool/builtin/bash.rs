//! `bash {command, timeout_ms?, description?}`: a shell command.
//!
//! Until the tree-sitter analysis lands, a bash call is an *unanalysed writer*: effects `exec`,
//! no known paths, not read-only, and no allow rule can cover it, so it falls back to
//! `defaults.writer` (or a deny/ask rule). It does not run yet either: it will run only inside
//! the OS jail (Landlock + seccomp), and until that exists `execute` refuses, running nothing.

use serde_json::{Value, json};

use super::object_schema;
use crate::tool::{
    Admitted, Arguments, Classification, ClassifyError, Effect, Output, Tool, ToolError,
};

pub(super) struct Bash;

impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }
    fn description(&self) -> &str {
        "Run a bash command in the workspace. `timeout_ms` bounds its run time; `description` \
         says in a few words what it is for."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "command": {"type": "string", "minLength": 1, "description": "The command line."},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 3_600_000, "description": "Time limit in milliseconds."},
                "description": {"type": "string", "description": "What the command is for, in a few words."},
            }),
            &["command"],
        )
    }
    fn read_only(&self) -> bool {
        false
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let command = args.required_str("command")?;
        Ok(Classification::opaque(
            &[Effect::Exec],
            Some(json!({
                "analysed": false,
                "command": command,
                "note": "bash commands are not analysed yet: treated as a writer no allow rule covers",
            })),
        ))
    }
    fn execute(&self, _call: &Admitted) -> Result<Output, ToolError> {
        Err(ToolError::Unavailable(
            "bash commands run only inside the OS jail, which this build does not have yet; nothing was executed".into(),
        ))
    }
}
