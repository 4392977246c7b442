//! Rego policies on `regorus`: loading, the votes of one call, and the `test_*` rules.
//!
//! Modules in package `reasonix` or below it define sets `deny`, `ask` and `allow` of reasons —
//! strings, or objects `{"reason": ..., "id": ...}`. Their votes join the YAML rules' under the
//! same precedence. Modules in other packages may hold helpers; they do not vote.
//!
//! This file holds the prepared policies ([`Rego`]) and what loading finds in them; the work is
//! split by what it owns:
//!
//! - `load.rs`: modules and data → a prepared engine, the voting sets discovered, problems with
//!   file, line and column;
//! - `index.rs`: which packages a call's tool lets the evaluation skip;
//! - `vote.rs`: the votes on one input document, failing closed, and the time limit;
//! - `vm.rs`: the votes compiled for regorus' bytecode VM, which runs them when it can compile
//!   them (patched to fail closed as the interpreter does; the interpreter runs the rest);
//! - `value.rs`: the input document as regorus values ([`RegoInput`]), serialized straight from
//!   the Rust types;
//! - `reads.rs`: what of the input document the modules can read, so a call converts only that;
//! - `spare.rs`: engines and VMs kept for the next evaluation;
//! - `tests.rs`: the `test_*` rules, found at load and run by `reasonix policy test`;
//! - `analysis.rs`: what the modules' syntax trees say — recursion, refused at load, and the
//!   warnings of `reasonix policy check`.
//!
//! # How a call is evaluated
//!
//! Everything is parsed and prepared once, when the policies load: the modules are added to one
//! `regorus::Engine`, the sets each package declares are discovered, and a generated module
//! (package [`AGGREGATE`]) gathers the declared sets into one rule per tool the modules are
//! indexed by (`index.rs`: a package whose every vote requires another tool is left out), so a
//! call costs one rule evaluation. The engine is evaluated once with an empty input to finish
//! its preparation, then the generated rules are compiled for the bytecode VM (`vm.rs`). Each
//! call then takes a VM (or, when the VM cannot run these policies, an engine) that evaluated
//! before without error, or a fresh one, and sets its own input (`spare.rs`).

mod analysis;
#[cfg(test)]
mod engines;
mod index;
mod load;
mod reads;
mod spare;
mod tests;
mod value;
mod vm;
mod vote;

use std::time::Duration;

use regorus::Engine;

use super::Decision;

pub use tests::TestOutcome;
pub use value::RegoInput;
pub use vote::Vote;

/// The generated package that gathers every vote.
pub const AGGREGATE: &str = "reasonix_gate_internal";
/// The most time one evaluation may take (see `vote.rs`).
pub const TIME_LIMIT: Duration = Duration::from_millis(250);
/// The package whose sets vote, with everything below it.
pub const ROOT_PACKAGE: &str = "reasonix";

/// One Rego module as loaded.
#[derive(Clone, Debug)]
pub struct RegoSource {
    /// How it is reported (the file path).
    pub name: String,
    /// The module text.
    pub text: String,
}

/// A package that votes, and the files that define it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    /// Dotted package name (`reasonix.network`).
    pub name: String,
    /// The files its modules came from.
    pub files: Vec<String>,
    /// The sets it declares, in `deny`, `ask`, `allow` order.
    pub sets: Vec<Decision>,
    /// Whether its modules read `input.arguments.env` (or all of `input.arguments`, or the
    /// whole input): its allow votes then name a started process's environment.
    pub names_env: bool,
}

/// Which engine evaluates the votes of a policy set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegoEngine {
    /// regorus' bytecode VM (patched to fail closed, `vm.rs`).
    Vm,
    /// regorus' interpreter: the VM cannot compile these policies ([`Rego::vm_refused`]).
    Interpreter,
}

/// Loaded, prepared Rego policies. Immutable; each evaluation works on a kept VM or engine, or
/// a fresh one (`spare.rs`).
#[derive(Clone)]
pub struct Rego {
    engine: Engine,
    spare: spare::Spare<Engine>,
    /// The votes compiled for the VM, or why they could not be.
    vm: Result<vm::Vm, String>,
    packages: Vec<Package>,
    index: index::Index,
    tests: Vec<(String, String, String)>,
    facts: Vec<analysis::ModuleFacts>,
    data_keys: Vec<String>,
    /// What of the input document the modules can read (`reads.rs`).
    reads: reads::Reads,
    /// Where the engines' differences go when both evaluate ([`Rego::cross_checked`]).
    cross_check: Option<EngineLog>,
}

/// The environment variable that picks the engine: `vm` (the default) or `interpreter`.
pub const ENGINE_VARIABLE: &str = "REASONIX_REGO_ENGINE";

/// The differences between the bytecode VM's and the interpreter's answers on the calls of a
/// cross-checked [`Rego`], as they happened. Clones share the log.
#[derive(Clone, Debug, Default)]
pub struct EngineLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl EngineLog {
    fn push(&self, difference: String) {
        if let Ok(mut log) = self.0.lock() {
            log.push(difference);
        }
    }

    /// The differences logged since the last call.
    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut log| std::mem::take(&mut *log))
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Rego {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rego")
            .field("packages", &self.packages)
            .finish_non_exhaustive()
    }
}

impl Rego {
    /// The voting packages.
    pub fn packages(&self) -> &[Package] {
        &self.packages
    }

    /// Which engine evaluates the votes.
    pub fn engine(&self) -> RegoEngine {
        match self.vm {
            Ok(_) => RegoEngine::Vm,
            Err(_) => RegoEngine::Interpreter,
        }
    }

    /// The same policies, their votes evaluated by the interpreter only (as before the VM ran
    /// them): for the benchmarks and tests that compare the two engines.
    pub fn with_interpreter(&self) -> Rego {
        let mut only = self.clone();
        only.vm = Err("the interpreter was asked for".into());
        only
    }

    /// The same policies, each evaluation on the VM also made by the interpreter, and any
    /// difference in their answers written to the log (`reasonix policy test` runs its cases
    /// so: what the cases test is what the VM answers, and the interpreter, which the `test_*`
    /// rules run on, answers the same). `None` when the interpreter runs the votes anyway.
    pub fn cross_checked(&self) -> Option<(Rego, EngineLog)> {
        self.vm.as_ref().ok()?;
        let log = EngineLog::default();
        let mut both = self.clone();
        both.cross_check = Some(log.clone());
        Some((both, log))
    }

    /// Why the bytecode VM cannot evaluate these policies (a construct its compiler does not
    /// support, such as `with` or `print` in a rule the votes reach), when it cannot.
    pub fn vm_refused(&self) -> Option<&str> {
        self.vm.as_ref().err().map(String::as_str)
    }

    /// What loads but cannot do what it seems to say: a package outside `reasonix` that
    /// nothing imports, a `data.` reference nothing provides, a tool name compared with
    /// `input.tool` that none of `tools` has.
    pub fn warnings(&self, tools: &[&str]) -> Vec<super::PolicyProblem> {
        analysis::warnings(&self.facts, tools, &self.data_keys)
    }

    /// What of the input document these modules' references reach.
    fn reads_of(facts: &[analysis::ModuleFacts]) -> reads::Reads {
        reads::Reads::of(
            facts
                .iter()
                .flat_map(|m| m.input_reads.iter().map(Vec::as_slice)),
        )
    }
}

/// regorus errors span several lines; a verdict's reason is one.
fn flatten(message: &str) -> String {
    let location = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("--> "))
        .map(|l| format!("{l}: "))
        .unwrap_or_default();
    let what = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(message.trim());
    format!("{location}{what}")
}

/// Loads modules given as `(name, text)`, for unit tests.
#[cfg(test)]
fn load_texts(modules: &[(&str, &str)]) -> Result<Option<Rego>, Vec<super::PolicyProblem>> {
    let sources: Vec<RegoSource> = modules
        .iter()
        .map(|(n, t)| RegoSource {
            name: (*n).into(),
            text: (*t).into(),
        })
        .collect();
    Rego::load(&sources, &[])
}
