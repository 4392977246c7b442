//! The policy input document: the one value Rego policies see as `input`, and what
//! `reasonix check --explain` prints. Documented field by field in `docs/policy-input.md`, with
//! a JSON Schema (`docs/policy-input.schema.json`) that `tests/it/policy_input.rs` checks real
//! inputs against for every builtin tool, for bash and for an extension tool.
//!
//! It is built from what the earlier stages produced — the validated arguments, the tool's
//! classification, the resolved paths — and never from the raw call.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Posture;
use crate::sandbox::{PathView, Roots};
use crate::shell::Analysis;
use crate::vocab::Effect;

/// Where a tool comes from, as the registry that offers it records it.
///
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSource {
    /// One of Reasonix's own tools (`Registry::with_builtins`).
    Builtin,
    /// A tool added to the registry by its embedder (`Registry::add`).
    Extension,
    /// A tool an MCP server offers (`mcp__SERVER__TOOL`), or connecting to one
    /// (`mcp_connect__SERVER`).
    Mcp,
}

/// The tool the call reaches: the tool as called, or the one a proxy (`use_capability`)
/// reached, with the proxy in `via`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The tool that acts.
    pub tool: String,
    /// Where the tool comes from.
    pub source: ToolSource,
    /// Whether the tool is declared read-only.
    pub read_only: bool,
    /// What the tool's provider says about it (an MCP tool's `annotations`: `readOnlyHint`,
    /// `destructiveHint`, …), as given; `null` for other tools. Hints only: they never make a
    /// call read-only.
    pub annotations: Option<Value>,
    /// The proxy the call went through (`use_capability`); `null` for a direct call.
    pub via: Option<String>,
}

/// A root folder the session's file tools may reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Root {
    /// The folder, canonical.
    pub path: String,
    /// `write` (read and write) or `read`.
    pub access: crate::vocab::Access,
}

/// Whether state-changing work may begin: the gate's mode, set when it is built.
///
/// In `plan` mode the gate's plan stage blocks every call that is not read-only, and the model
/// hands in a plan (`submit_plan`) instead; a session whose plan is approved goes on with a
/// gate built the same way in `normal` mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateMode {
    /// Calls may act, as the policy and the posture decide.
    #[default]
    Normal,
    /// Only read-only calls run; changes wait for an approved plan.
    Plan,
}

impl GateMode {
    /// The name used in output and in the policy input (`normal` or `plan`).
    pub fn as_str(self) -> &'static str {
        match self {
            GateMode::Normal => "normal",
            GateMode::Plan => "plan",
        }
    }
}

impl std::fmt::Display for GateMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The session the call belongs to: the document's `session` field. (Named apart from the agent
/// loop's `Session`, which runs one.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    /// `interactive`, `unattended` or `strict`.
    pub posture: Posture,
    /// `normal` or `plan`.
    pub mode: GateMode,
    /// The workspace, canonical.
    pub workspace: String,
    /// Every root, the workspace first.
    pub roots: Vec<Root>,
    /// The revision of the bundle the policy came from (its manifest's `revision`); `null`
    /// when the policy is not a bundle (`--policy`, the embedded default).
    pub policy_revision: Option<String>,
}

impl SessionInfo {
    /// The session of a gate.
    pub fn new(
        posture: Posture,
        mode: GateMode,
        roots: &Roots,
        policy_revision: Option<String>,
    ) -> SessionInfo {
        SessionInfo {
            policy_revision,
            posture,
            mode,
            workspace: roots.workspace().display().to_string(),
            roots: roots
                .all()
                .map(|(path, access)| Root {
                    path: path.display().to_string(),
                    access,
                })
                .collect(),
        }
    }
}

/// Rego's `input`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyInput {
    /// The tool as called.
    pub tool: String,
    /// The arguments, validated against the tool's schema.
    pub arguments: Map<String, Value>,
    /// What the call really reaches.
    pub target: Target,
    /// What the call may do: `read`, `write`, `delete`, `exec`, `network`.
    pub effects: Vec<Effect>,
    /// Every path it touches, resolved.
    pub paths: Vec<PathView>,
    /// The bash analysis; `null` for other tools.
    pub bash: Option<Analysis>,
    /// The session.
    pub session: SessionInfo,
}

/// The same document as [`PolicyInput`], field for field, borrowed from the stages' data: what
/// the gate converts for Rego without copying the analysis, the arguments or the session
/// (`the_gate_input_of_every_builtin_tool_and_a_bash_call_converts_as_its_text`, in
/// `policy/rego/value.rs`, holds the two together for every builtin tool and a bash call).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct InputRef<'a> {
    /// The tool as called.
    pub tool: &'a str,
    /// The arguments, validated against the tool's schema.
    pub arguments: &'a Map<String, Value>,
    /// What the call really reaches.
    pub target: &'a Target,
    /// What the call may do.
    pub effects: &'a BTreeSet<Effect>,
    /// Every path it touches, resolved.
    pub paths: &'a [PathView],
    /// The bash analysis; `null` for other tools.
    pub bash: Option<&'a Analysis>,
    /// The session.
    pub session: &'a SessionInfo,
}

impl InputRef<'_> {
    /// The owned document, as `check --explain` prints it.
    pub fn owned(self) -> PolicyInput {
        PolicyInput {
            tool: self.tool.to_owned(),
            arguments: self.arguments.clone(),
            target: self.target.clone(),
            effects: self.effects.iter().copied().collect(),
            paths: self.paths.to_vec(),
            bash: self.bash.cloned(),
            session: self.session.clone(),
        }
    }
}
