//! The **execute** stage: a leased admission runs its tool, once.
//!
//! [`Leased::execute`] consumes the leased call, hands its tool the one [`Invocation`] made for
//! it — the validated arguments, each path with the access it was admitted for, the paths
//! policy withholds, the jail — and returns the result with the lease, which is released when
//! the [`Executed`] value is dropped (after the caller has taken its receipts).
//!
//! A bash writer ran on an overlay ([`crate::effects`]): here its changes, observed and judged,
//! land or are discarded before the result goes back ([`Leased::execute_with`]), so no caller
//! can run a writer and forget to settle it.
//!
//! Before it runs, the caller may read what the call is about to change ([`Leased::changes`]):
//! the paths admitted for writing, as read-only [`ConfinedPath`]s, so the rewind store keeps
//! their previous content while the lease is held and nothing else can change them.

use crate::effects::{self, Asker, Settled};
use crate::lease::{Lease, Leased};
use crate::sandbox::ConfinedPath;
use crate::tool::{Grant, Invocation, Output, ToolError};

/// A call that ran: its result, and the lease still held.
pub struct Executed {
    /// What the tool returned, or why it failed. A bash writer's text ends with what became
    /// of its changes (`--- reasonix ---`).
    pub result: Result<Output, ToolError>,
    /// The lease, held until this value is dropped.
    pub lease: Lease,
    /// What became of a bash writer's changes, observed on its overlay: landed, or discarded
    /// and why (issue 25). `None` for any other call.
    pub settled: Option<Settled>,
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

    /// Runs the call's tool. Consumes the call: one admission, one execution. A bash
    /// writer's changes are committed only if every one is allowed: a change that asks is
    /// refused (nobody is there to answer), and nothing lands.
    pub fn execute(self) -> Executed {
        self.execute_with(&mut |_| false, &mut |_| {})
    }

    /// [`Leased::execute`], with someone to answer the changes of a bash writer that ask
    /// (`ask`), and a look at every path about to change before the first one does
    /// (`before`: the rewind store keeps their previous state) — see [`effects::settle`].
    pub fn execute_with(self, ask: Asker<'_>, before: &mut dyn FnMut(&[ConfinedPath])) -> Executed {
        let Leased { parts, lease, .. } = self;
        // The jail run's span (OpenTelemetry export: `process.*` attributes), for a call that
        // starts a process.
        let span = match &parts.admission.sandbox {
            Some(plan) => {
                let bash = parts.tool.name() == "bash";
                tracing::info_span!(
                    "jail.run",
                    "process.executable.name" = if bash { "bash" } else { "" },
                    "process.command_line" = if bash {
                        parts.arguments.str("command").unwrap_or("")
                    } else {
                        ""
                    },
                    "process.exit.code" = tracing::field::Empty,
                    "reasonix.jail.mode" = ?plan.mode,
                    "reasonix.jail.run" = plan.run.unwrap_or(""),
                )
            }
            None => tracing::Span::none(),
        };
        let running = span.enter();
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
        let mut result = parts.tool.execute(&invocation);
        if let Ok(Some(code)) = result.as_ref().map(|o| o.exit_code) {
            span.record("process.exit.code", code);
        }
        drop(running);
        // Observe ─► judge ─► commit | discard: the output tells what became of the changes.
        let settled = match &mut result {
            Ok(output) => output.observed.take().map(|observed| {
                let settled = effects::settle(observed, ask, before);
                output.text.push_str("--- reasonix ---\n");
                for line in &settled.lines {
                    output.text.push_str(line);
                    output.text.push('\n');
                }
                settled
            }),
            Err(_) => None,
        };
        Executed {
            result,
            lease,
            settled,
        }
    }
}
