//! The words every stage of Reasonix's admission path shares: what a call can do ([`Effect`]),
//! how it touches a path ([`Access`]), the part a path plays ([`PathRole`]) and a path as the
//! model wrote it ([`PathRequest`]). The analysis speaks them ([`Analysis::effects`],
//! [`Analysis::path_requests`]); the gateway re-exports this module as `reasonix::vocab`.
//!
//! This module is a leaf: it imports nothing from the crate, so the shell analysis, the tools,
//! the sandbox and the policy can all speak of effects and paths without importing each other.
//!
//! [`Analysis::effects`]: crate::Analysis::effects
//! [`Analysis::path_requests`]: crate::Analysis::path_requests

use std::fmt;

use serde::Serialize;

/// What a call can do to the world. Policy rules match on these (`effects:`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Reads files or folders.
    Read,
    /// Creates or changes files.
    Write,
    /// Removes files (a move removes its source).
    Delete,
    /// Runs a program.
    Exec,
    /// Talks to the network.
    Network,
}

impl Effect {
    /// The name used in policies and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Delete => "delete",
            Effect::Exec => "exec",
            Effect::Network => "network",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The part a path plays in a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PathRole {
    /// The file or folder the call acts on.
    Target,
    /// Where a move takes from.
    Source,
    /// Where a move puts to.
    Destination,
    /// A shell redirection target.
    Redirect,
    /// A shell command's word that may name a file. Deny and ask rules see it; it is not
    /// confined (it may not be a path at all) and allow rules need not cover it.
    Argument,
}

/// Whether a path is only looked at, or changed. Decides which roots may hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read or listed.
    Read,
    /// Created, changed, renamed or removed.
    Write,
}

/// A path a call touches, as the model wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRequest {
    /// The path exactly as written in the arguments.
    pub written: String,
    /// Its role in the call.
    pub role: PathRole,
    /// Whether the call reads or changes it.
    pub access: Access,
    /// True when it is an unquoted shell glob, expanded against the disk when resolved.
    pub pattern: bool,
}

impl PathRequest {
    /// A path the call reads.
    pub fn read(written: impl Into<String>, role: PathRole) -> PathRequest {
        PathRequest {
            written: written.into(),
            role,
            access: Access::Read,
            pattern: false,
        }
    }

    /// A path the call changes.
    pub fn write(written: impl Into<String>, role: PathRole) -> PathRequest {
        PathRequest {
            written: written.into(),
            role,
            access: Access::Write,
            pattern: false,
        }
    }
}
