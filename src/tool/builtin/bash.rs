//! `bash {command, timeout_ms?, description?}`: a shell command.
//!
//! Classification is the shell analysis ([`crate::shell`]): every simple command, redirection,
//! hazard and effect, and whether the whole command is read-only. The command does not run yet:
//! it will run only inside the OS jail (Landlock + seccomp), and until that exists `execute`
//! refuses, running nothing.

use serde_json::{Value, json};

use super::object_schema;
use crate::shell::Analysis;
use crate::tool::{Admitted, Arguments, Classification, ClassifyError, Output, Tool, ToolError};

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
        Ok(Classification::shell(Analysis::of(command)))
    }
    fn execute(&self, _call: &Admitted) -> Result<Output, ToolError> {
        Err(ToolError::Unavailable(
            "bash commands run only inside the OS jail, which this build does not have yet; nothing was executed".into(),
        ))
    }
}
