//! The jail plan a gate shares with the calls it admits, computed the first time one of them
//! needs it.
//!
//! Planning the jail looks at the kernel and the disk ([`JailPlan::new`]); only a call that starts a
//! process needs a plan (the `bash` tool: the sandbox stage asks whether the plan can be
//! enforced, its verdict shows the plan, and it runs under it). A gate that judges only file
//! tools — a one-call `reasonix check` of a `read_file` — never plans a jail (issue 12). Once
//! computed, the plan is the same value for every call of the gate, as it was when the gate
//! computed it up front.

use std::sync::{Arc, LazyLock, OnceLock};

use super::jail::{JailPlan, JailPlanView};

/// How the plan is made when first needed.
type MakeJailPlan = Box<dyn FnOnce() -> JailPlan + Send>;

/// A jail plan, shared, made on first use. Cloning shares it.
#[derive(Clone)]
pub struct SharedJailPlan(Arc<Shared>);

struct Shared {
    plan: LazyLock<JailPlan, MakeJailPlan>,
    /// The plan as every bash call's verdict shows it, worded once.
    view: OnceLock<JailPlanView>,
}

impl SharedJailPlan {
    /// The plan `make` makes ([`JailPlan::new`], or [`JailPlan::read_only`] in plan mode), once asked
    /// for.
    pub fn new(make: impl FnOnce() -> JailPlan + Send + 'static) -> SharedJailPlan {
        let make: MakeJailPlan = Box::new(make);
        SharedJailPlan(Arc::new(Shared {
            plan: LazyLock::new(make),
            view: OnceLock::new(),
        }))
    }

    /// The plan, made now if it was not yet.
    pub fn get(&self) -> &JailPlan {
        &self.0.plan
    }

    /// [`JailPlan::view`], worded once (a plan never changes).
    pub fn view(&self) -> JailPlanView {
        self.0.view.get_or_init(|| self.get().view()).clone()
    }

    /// Whether the plan has been made (for tests).
    pub fn is_made(&self) -> bool {
        LazyLock::get(&self.0.plan).is_some()
    }
}

impl std::fmt::Debug for SharedJailPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match LazyLock::get(&self.0.plan) {
            Some(plan) => f.debug_tuple("SharedJailPlan").field(plan).finish(),
            None => f.write_str("SharedJailPlan(not made yet)"),
        }
    }
}
