//! The policy input document: the one value Rego policies see as `input`, and what
//! `reasonix check --explain` prints. Documented field by field in `docs/policy-input.md`, with
//! a JSON Schema (`docs/policy-input.schema.json`) that `tests/policy_input.rs` checks real
//! inputs against for every builtin tool, for bash and for an extension tool.
//!
//! It is built from what the earlier stages produced — the validated arguments, the tool's
//! classification, the resolved paths — and never from the raw call.

use serde::Serialize;
use serde_json::{Map, Value};

use super::Posture;
use crate::sandbox::{PathView, Roots};
use crate::shell::Analysis;
use crate::vocab::Effect;

/// Where a tool comes from, as the registry that offers it records it.
///
/// More sources (MCP servers) join when a stage fills them; until then the document offers
/// only what the gate can say truthfully.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSource {
    /// One of Reasonix's own tools (`Registry::with_builtins`).
    Builtin,
    /// A tool added to the registry by its embedder (`Registry::add`).
    Extension,
}

/// The tool the call reaches.
///
/// There are no proxies yet, so this is the tool as called; a `via` field (the proxy the call
/// went through) joins when the stage that resolves proxies does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The tool that acts.
    pub tool: String,
    /// Where the tool comes from.
    pub source: ToolSource,
    /// Whether the tool is declared read-only.
    pub read_only: bool,
}

/// A root folder the session's file tools may reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Root {
    /// The folder, canonical.
    pub path: String,
    /// `write` (read and write) or `read`.
    pub access: crate::vocab::Access,
}

/// The session the call belongs to: the document's `session` field. (Named apart from the agent
/// loop's `Session`, which runs one.) A `mode` field (plan or act) joins when plan mode does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    /// `interactive`, `unattended` or `strict`.
    pub posture: Posture,
    /// The workspace, canonical.
    pub workspace: String,
    /// Every root, the workspace first.
    pub roots: Vec<Root>,
}

impl SessionInfo {
    /// The session of a gate.
    pub fn new(posture: Posture, roots: &Roots) -> SessionInfo {
        SessionInfo {
            posture,
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
