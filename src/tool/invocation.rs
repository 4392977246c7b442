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
use crate::sandbox::jail::Plan;
use crate::sandbox::{ConfinedPath, SharedPlan, WritePath};

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
    jail: SharedPlan,
    egress: Option<std::sync::Arc<dyn crate::egress::Judge>>,
}

impl Invocation {
    /// Made only by the execute stage, from a leased admission.
    pub(crate) fn new(
        tool: String,
        arguments: Arguments,
        grants: Vec<Grant>,
        withheld: PathFilter,
        jail: SharedPlan,
        egress: Option<std::sync::Arc<dyn crate::egress::Judge>>,
    ) -> Invocation {
        Invocation {
            tool,
            arguments,
            grants,
            withheld,
            jail,
            egress,
        }
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
    pub fn jail(&self) -> &Plan {
        self.jail.get()
    }

    /// Who judges the connections this call's processes ask the egress proxy for: the gate
    /// that admitted it (for a bash call).
    pub fn egress(&self) -> Option<std::sync::Arc<dyn crate::egress::Judge>> {
        self.egress.clone()
    }
}
