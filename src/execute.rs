//! The **execute** stage: a leased admission runs its tool, once.
//!
//! [`Leased::execute`] consumes the leased call, hands its tool the one [`Invocation`] made for
//! it — the validated arguments, each path with the access it was admitted for, the paths
//! policy withholds, the jail — and returns the result with the lease, which is released when
//! the [`Executed`] value is dropped (after the caller has taken its receipts).

use crate::lease::{Lease, Leased};
use crate::tool::{Invocation, Output, ToolError};

/// A call that ran: its result, and the lease still held.
pub struct Executed {
    /// What the tool returned, or why it failed.
    pub result: Result<Output, ToolError>,
    /// The lease, held until this value is dropped.
    pub lease: Lease,
}

impl Leased {
    /// Runs the call's tool. Consumes the call: one admission, one execution.
    pub fn execute(self) -> Executed {
        let Leased { parts, lease } = self;
        let invocation = Invocation::new(
            parts.tool.name().to_owned(),
            parts.arguments,
            parts.grants,
            parts.withheld,
            parts.jail,
        );
        let result = parts.tool.execute(&invocation);
        Executed { result, lease }
    }
}
