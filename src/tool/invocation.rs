//! What a tool is given to perform one admitted call: the `execute` stage's view of an admission.
//!
//! An [`Invocation`] is made only inside this crate, once, when a leased admission executes
//! (`Leased::execute`), and only for the tool that was judged: a tool cannot be run with
//! another call's admission, or twice, because there is no other way to get one. Each path it
//! carries keeps the access it was admitted for: [`Invocation::path`] gives any admitted path
//! for reading, [`Invocation::writable`] only a path admitted for writing — the only type with
//! methods that change the disk ([`WritePath`]).

use super::{Arguments, ToolError};
use crate::policy::PathFilter;
use crate::sandbox::jail::{JailPlan, Shape, Writes};
use crate::sandbox::{ConfinedPath, SharedJailPlan, WritePath};

/// An admitted path with the access it was admitted for.
#[derive(Debug)]
pub(crate) enum Grant {
    /// Read or listed only.
    Read(ConfinedPath),
    /// Created, changed, renamed or removed.
    Write(WritePath),
}

impl Grant {
    fn path(&self) -> &ConfinedPath {
        match self {
            Grant::Read(p) => p,
            Grant::Write(p) => p,
        }
    }
}

/// One admitted call, as its tool sees it while it runs. See the module doc.
pub struct Invocation {
    tool: String,
    arguments: Arguments,
    grants: Vec<Grant>,
    withheld: PathFilter,
    jail: SharedJailPlan,
    egress: Option<std::sync::Arc<dyn crate::egress::ConnectionJudge>>,
    writes: bool,
    protected: Option<PathFilter>,
    changes: Option<std::sync::Arc<dyn crate::effects::ChangeJudge>>,
}

impl Invocation {
    /// Made only by the execute stage, from a leased admission.
    pub(crate) fn new(
        tool: String,
        arguments: Arguments,
        grants: Vec<Grant>,
        withheld: PathFilter,
        jail: SharedJailPlan,
        egress: Option<std::sync::Arc<dyn crate::egress::ConnectionJudge>>,
    ) -> Invocation {
        Invocation {
            tool,
            arguments,
            grants,
            withheld,
            jail,
            egress,
            writes: true,
            protected: None,
            changes: None,
        }
    }

    /// What the call was admitted to do beyond its paths (issue 25): whether it may change
    /// anything (it was not admitted as read-only), what its jail covers from reading, and who
    /// judges what a writer's run changed.
    pub(crate) fn with_effects(
        mut self,
        writes: bool,
        protected: Option<PathFilter>,
        changes: Option<std::sync::Arc<dyn crate::effects::ChangeJudge>>,
    ) -> Invocation {
        self.writes = writes;
        self.protected = protected;
        self.changes = changes;
        self
    }

    /// The shape of this call's run in its jail: read-only when it was admitted as read-only,
    /// observed otherwise (issue 25); the paths its admission's rules protect from reading, as
    /// they exist now, covered.
    pub fn shape(&self) -> Shape {
        self.shape_with(Writes::for_effects(self.writes))
    }

    /// [`Invocation::shape`] with the writes given (an MCP server writes in place, or not at
    /// all in plan mode).
    pub fn shape_with(&self, writes: Writes) -> Shape {
        match &self.protected {
            Some(filter) => filter.shape(self.jail(), writes),
            None => Shape {
                writes,
                hidden: Vec::new(),
            },
        }
    }

    /// Who judges what this call's run changed (a bash call's).
    pub fn changes(&self) -> Option<&dyn crate::effects::ChangeJudge> {
        self.changes.as_deref()
    }

    /// The validated arguments.
    pub fn arguments(&self) -> &Arguments {
        &self.arguments
    }

    /// The `i`-th path the tool's classification named, confined to its root, for reading.
    /// Tools act on these, never on the raw argument strings.
    pub fn path(&self, i: usize) -> Result<&ConfinedPath, ToolError> {
        self.grants
            .get(i)
            .map(Grant::path)
            .ok_or_else(|| self.missing(i))
    }

    /// The `i`-th path, for changing: refused when the call was admitted only to read it.
    pub fn writable(&self, i: usize) -> Result<&WritePath, ToolError> {
        match self.grants.get(i) {
            Some(Grant::Write(p)) => Ok(p),
            Some(Grant::Read(p)) => Err(ToolError::Refused(format!(
                "{} was admitted for reading only; {} cannot change it",
                p.shown(),
                self.tool
            ))),
            None => Err(self.missing(i)),
        }
    }

    fn missing(&self, i: usize) -> ToolError {
        ToolError::Refused(format!(
            "internal error: tool {} asked for path {i} but its call was admitted with {}; please report it",
            self.tool,
            self.grants.len()
        ))
    }

    /// What a tool that reads many files must skip: paths that a deny or ask rule protects
    /// from this call.
    pub fn withheld(&self) -> &PathFilter {
        &self.withheld
    }

    /// The jail every process of this call runs in.
    pub fn jail(&self) -> &JailPlan {
        self.jail.get()
    }

    /// Who judges the connections this call's processes ask the egress proxy for: the gate
    /// that admitted it (for a bash call).
    pub fn egress(&self) -> Option<std::sync::Arc<dyn crate::egress::ConnectionJudge>> {
        self.egress.clone()
    }
}
