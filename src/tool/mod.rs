//! The tool contract: what a tool declares (name, schema, read-only flag), how it classifies a
//! concrete call (effects and the paths it touches), and how it executes once admitted.
//!
//! Classification is the `classify` stage of the admission path. It only reads the validated
//! arguments: it never touches the filesystem. Path resolution (symlinks, `..`, `~`) is the
//! sandbox's job, so every tool's paths are resolved by the same code.
//!
//! Execution takes an [`Invocation`], which only the crate's execute stage makes, from a leased
//! admission of this very tool: a tool cannot be run by any path that skips validation, policy,
//! approval or the lease, nor with another call's admission, nor twice.

pub mod builtin;
mod invocation;
mod registry;

use std::collections::BTreeSet;

use serde_json::{Map, Value};

pub use crate::vocab::{Access, Effect, PathRequest, PathRole};
pub(crate) use invocation::Grant;
pub use invocation::Invocation;
pub use registry::{Registered, Registry, RegistryError, ToolSchema};

/// What a concrete, validated call would do: the tool's answer to `classify`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Classification {
    /// Every effect the call may have.
    pub effects: BTreeSet<Effect>,
    /// Every path it touches, with its role.
    pub paths: Vec<PathRequest>,
    /// True when the call changes nothing; selects the `read_only` fallback.
    pub read_only: bool,
    /// False when the tool could not see everything the call does (an unanalysed shell
    /// command). No allow rule covers an unanalysed call: the gate fails closed.
    pub analysed: bool,
    /// The analysis of a bash call (`None` for other tools).
    pub bash: Option<crate::shell::Analysis>,
    /// The call starts a long-lived process in the OS jail (a stdio MCP server), as a bash
    /// call starts a command there: the sandbox stage refuses it when the jail plan refuses to
    /// run anything, and its verdict shows the plan.
    pub starts_process: bool,
    /// For a call that starts a process (an MCP server): each variable it sets in that
    /// process's environment, with why it can change what the process runs when it is not
    /// known to be inert (the shell analysis's own table, [`crate::shell::environment`]). Such
    /// a call needs a person unless an allow names the variables (the policy stage's step 5).
    pub environment: Vec<(String, Option<String>)>,
}

impl Classification {
    /// A call that only reads the given paths.
    pub fn reads(paths: Vec<PathRequest>) -> Classification {
        Classification {
            effects: BTreeSet::from([Effect::Read]),
            paths,
            read_only: true,
            analysed: true,
            bash: None,
            starts_process: false,
            environment: Vec::new(),
        }
    }

    /// A call with the given effects on the given paths; not read-only.
    pub fn changes(effects: &[Effect], paths: Vec<PathRequest>) -> Classification {
        Classification {
            effects: effects.iter().copied().collect(),
            paths,
            read_only: false,
            analysed: true,
            bash: None,
            starts_process: false,
            environment: Vec::new(),
        }
    }

    /// A bash call, from its analysis.
    pub fn shell(analysis: crate::shell::Analysis) -> Classification {
        Classification {
            effects: analysis.effects.clone(),
            paths: analysis.path_requests(),
            read_only: analysis.read_only,
            analysed: analysis.analysed,
            bash: Some(analysis),
            starts_process: false,
            environment: Vec::new(),
        }
    }
}

/// A call whose arguments match the schema but make no sense (an edit that changes nothing, a
/// glob that climbs out with `..` after a wildcard). The gate reports it as `invalid`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClassifyError(pub String);

/// Validated arguments: an object that matched the tool's schema.
#[derive(Clone, Debug, PartialEq)]
pub struct Arguments(Map<String, Value>);

/// How an argument names a host ([`Tool::host_arguments`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostArgument {
    /// A host name or IP address: `index.crates.io`, `192.0.2.2`, `[::1]`.
    Host,
    /// A URL whose host is judged: `https://example.com/mcp`.
    Url,
}

impl Arguments {
    pub(crate) fn new(map: Map<String, Value>) -> Arguments {
        Arguments(map)
    }

    /// The arguments as a JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// Sets an argument (stage resolve's canonical hosts).
    pub(crate) fn set(&mut self, key: &str, value: Value) {
        self.0.insert(key.to_owned(), value);
    }

    /// A string argument; `None` when absent or not a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// A string argument the schema requires. Validation ran first, so absence means the tool's
    /// schema and its code disagree: reported as an error, never a panic.
    pub fn required_str(&self, key: &str) -> Result<&str, ClassifyError> {
        self.str(key)
            .ok_or_else(|| ClassifyError(format!("argument {key:?} is required")))
    }

    /// A non-negative integer argument.
    pub fn u64(&self, key: &str) -> Option<u64> {
        self.0.get(key).and_then(Value::as_u64)
    }

    /// A boolean argument.
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.0.get(key).and_then(Value::as_bool)
    }
}

/// What a tool returns to the model.
#[derive(Debug)]
pub struct Output {
    /// The text the model sees.
    pub text: String,
    /// A process's exit status (128 + signal; 124 for a timeout), when a process ran.
    pub exit_code: Option<i32>,
    /// Each connection the process asked the egress proxy for (a record line each).
    pub connections: Vec<crate::egress::Connection>,
    /// What a bash writer's run changed, observed and judged, not yet in the workspace
    /// ([`crate::effects::settle`] lands it or discards it; dropping it discards it).
    pub observed: Option<crate::effects::Observed>,
    /// Why a process's effects were not observed, when they were not (a writer under
    /// `best_effort` with no overlay, or the jail off).
    pub unobserved: Option<String>,
}

impl Output {
    /// Plain text output.
    pub fn text(text: impl Into<String>) -> Output {
        Output {
            text: text.into(),
            exit_code: None,
            connections: Vec::new(),
            observed: None,
            unobserved: None,
        }
    }
}

/// A tool ran and reported an error (outcome `failed`, not `blocked`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation, in words ("open", "rename").
        op: &'static str,
        /// The path, as resolved.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The call cannot be carried out as asked (an edit whose old text is not there).
    #[error("{0}")]
    Refused(String),
    /// The server behind the tool (an MCP server) answered with an error, or went away.
    #[error("{0}")]
    Server(String),
    /// This tool cannot run here yet; nothing was executed.
    #[error("{0}")]
    Unavailable(String),
}

impl ToolError {
    /// An I/O error with the operation and path that failed.
    pub fn io(op: &'static str, path: &std::path::Path, source: std::io::Error) -> ToolError {
        ToolError::Io {
            op,
            path: path.display().to_string(),
            source,
        }
    }
}

/// A tool the model can call.
///
/// `classify` must report every path the call touches and every effect it may have; the gate
/// judges nothing else. `execute` receives the admitted call and performs its effects through
/// the confined paths the gate resolved ([`Invocation::path`], [`Invocation::writable`]), never
/// through the raw arguments.
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by: `^[a-zA-Z0-9_-]{1,64}$`.
    fn name(&self) -> &str;
    /// One paragraph for the model.
    fn description(&self) -> &str;
    /// The JSON Schema (draft 2020-12) of the arguments object.
    fn schema(&self) -> Value;
    /// True when no call of this tool changes anything.
    fn read_only(&self) -> bool;
    /// What the tool's provider says about it (an MCP server's `annotations`): shown to
    /// policy and in the record, never trusted to classify a call.
    fn annotations(&self) -> Option<Value> {
        None
    }
    /// Why the tool cannot take calls now (its server died), if it cannot. Checked at stage
    /// validate: a call to an unavailable tool is `invalid`.
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// The arguments that name a host the gate judges, and how: each is put in its one
    /// canonical spelling at stage resolve, before anything judges the call
    /// ([`crate::egress::hosts::canonical_host`]), so YAML, Rego, the record and the connection
    /// see the same value. None by default.
    fn host_arguments(&self) -> &'static [(&'static str, HostArgument)] {
        &[]
    }
    /// What a concrete, validated call does.
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError>;
    /// Performs an admitted call.
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError>;
}
