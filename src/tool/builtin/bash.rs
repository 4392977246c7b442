//! `bash {command, timeout_ms?, description?}`: a shell command.
//!
//! Classification is the shell analysis ([`crate::shell`]): every simple command, redirection,
//! hazard and effect, and whether the whole command is read-only. Execution runs `bash -c` in
//! the OS jail of the admission's plan ([`crate::sandbox::jail`]), in the workspace, with the
//! smaller of `timeout_ms` and the plan's wall-clock limit, and returns the exit status and the
//! bounded output of both streams, with their true sizes when cut.

use serde_json::{Value, json};

use super::object_schema;
use std::time::Duration;

use crate::effects;
use crate::sandbox::jail::{self, Capture, Exit, Writes};
use crate::shell::Analysis;
use crate::tool::{Arguments, Classification, ClassifyError, Invocation, Output, Tool, ToolError};

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
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let args = call.arguments();
        let command = args.str("command").unwrap_or_default();
        let plan = call.jail();
        let timeout = args.u64("timeout_ms").map(Duration::from_millis);
        let argv = ["bash".to_owned(), "-c".to_owned(), command.to_owned()];
        let shape = call.shape();
        let result = jail::run_judged(
            plan,
            &argv,
            timeout,
            Capture::Bounded(plan.limits().output_bytes),
            call.egress(),
            &shape,
        )
        .map_err(|e| ToolError::Unavailable(format!("{e}; nothing was executed")))?;
        let mut text = match result.exit {
            Exit::Exited(code) => format!("exit status {code}\n"),
            Exit::Signaled(signal) => format!("killed by signal {signal}\n"),
            Exit::TimedOut => format!(
                "timed out after {} ms; the whole process group was killed\n",
                result.duration.as_millis()
            ),
        };
        for (name, body) in [("stdout", &result.stdout), ("stderr", &result.stderr)] {
            if !body.is_empty() {
                text.push_str(&format!("--- {name} ---\n{body}"));
                if !body.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        for c in result.connections.iter().filter(|c| c.outcome == "refused") {
            text.push_str(&format!(
                "reasonix: network_connect {}:{} refused: {}\n",
                c.host,
                c.port,
                c.reasons.join("; ")
            ));
        }
        if let Some(line) = result.not_enforced_line() {
            text.push_str(&line);
            text.push('\n');
        }
        // A writer's run, observed: judged now, landed (or not) by the caller's settle.
        let observed = match (result.observed, call.changes()) {
            (Some(upper), Some(judge)) => Some(effects::observe(upper, judge)),
            (Some(_), None) => {
                return Err(ToolError::Refused(
                    "internal error: a writer's run was observed with nobody to judge its changes; nothing it did was applied (please report it)".into(),
                ));
            }
            (None, _) => None,
        };
        let unobserved = match result.writes {
            Writes::Direct if plan.mode() == jail::Enforcement::Off => {
                Some("sandbox.bash is off: its effects were not observed".to_owned())
            }
            Writes::Direct => Some(
                result
                    .not_enforced
                    .iter()
                    .find(|w| w.starts_with("effects not observed"))
                    .cloned()
                    .unwrap_or_else(|| "its effects were not observed".to_owned()),
            ),
            _ => None,
        };
        Ok(Output {
            text,
            exit_code: Some(result.exit.code()),
            connections: result.connections,
            observed,
            unobserved,
        })
    }
}
