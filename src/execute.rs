//! The **execute** stage: a leased admission runs its tool, once.
//!
//! [`Leased::execute`] consumes the leased call, hands its tool the one [`Invocation`] made for
//! it — the validated arguments, each path with the access it was admitted for, the paths
//! policy withholds, the jail — and returns the result with the lease, which is released when
//! the [`Executed`] value is dropped (after the caller has taken its receipts).
//!
//! Before it runs, the caller may read what the call is about to change ([`Leased::changes`]):
//! the paths admitted for writing, as read-only [`ConfinedPath`]s, so the rewind store keeps
//! their previous content while the lease is held and nothing else can change them.

use crate::lease::{Lease, Leased};
use crate::sandbox::ConfinedPath;
use crate::tool::{Grant, Invocation, Output, ToolError};

/// A call that ran: its result, and the lease still held.
pub struct Executed {
    /// What the tool returned, or why it failed.
    pub result: Result<Output, ToolError>,
    /// The lease, held until this value is dropped.
    pub lease: Lease,
}

impl Leased {
    /// The paths this call was admitted to change, in the order its tool names them, each for
    /// reading only (a [`ConfinedPath`] has no method that changes anything).
    pub fn changes(&self) -> Vec<ConfinedPath> {
        self.parts
            .grants
            .iter()
            .filter_map(|g| match g {
                Grant::Write(p) => Some(ConfinedPath::clone(p)),
                Grant::Read(_) => None,
            })
            .collect()
    }

    /// Runs the call's tool. Consumes the call: one admission, one execution.
    pub fn execute(self) -> Executed {
        let Leased { parts, lease } = self;
        let invocation = Invocation::new(
            parts.tool.name().to_owned(),
            parts.arguments,
            parts.grants,
            parts.withheld,
            parts.jail,
            parts.egress,
        )
        .with_effects(
            parts.admission.read_only != Some(true),
            parts.protected,
            parts.changes,
        );
        let result = parts.tool.execute(&invocation);
        Executed { result, lease }
    }
}
