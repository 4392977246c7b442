//! regorus' bytecode VM for the votes: the generated rules of [`AGGREGATE`](super::AGGREGATE)
//! compiled into one program when the policies load, and run per call on the call's input.
//!
//! # Why it fails closed
//!
//! The published VM turns an error inside a rule body (a failing builtin, conflicting values,
//! `some .. in` over a string) into "no vote", where the interpreter reports it. Reasonix runs
//! the VM patched (`vendor/regorus/PATCHES.md` #6): with strict builtin errors, which is how it
//! is set here, every error the interpreter reports ends the VM's evaluation too, and the call
//! is denied. `engines.rs` holds the two engines to the same votes or the same failure over a
//! table of error kinds, and `tests/it/policy_rego.rs` over every policy and case under
//! `policies/` and `tests/`.
//!
//! # What falls back to the interpreter
//!
//! The VM compiles only what its compiler supports; `with` and `print` are not (among others).
//! When the program does not compile, or the VM refuses the data documents (a rule where a
//! document also has a value), the whole policy set is evaluated by the interpreter, as before,
//! and [`Rego::vm_refused`](super::Rego::vm_refused) says why (`reasonix policy check` shows
//! it). Test modules are never compiled: only the rules the votes reach are.
//!
//! # Bounds
//!
//! The same [`TIME_LIMIT`](super::TIME_LIMIT) as the interpreter's, checked by the VM's own
//! execution timer every 64 instructions. The VM's instruction limit (25,000 by default, which a
//! legitimate evaluation of a few policies can pass) is lifted: the time limit is the bound.

use std::num::NonZeroU32;
use std::sync::Arc;

use regorus::Engine;
use regorus::languages::rego::compiler::Compiler;
use regorus::rvm::vm::VmError;
use regorus::rvm::{Program, RegoVM};
use regorus::utils::limits::ExecutionTimerConfig;

use super::spare::Spare;
use super::{TIME_LIMIT, flatten};

/// The compiled votes: one entry point per generated rule, and the VMs kept between calls.
#[derive(Clone)]
pub(super) struct Vm {
    program: Arc<Program>,
    data: regorus::Value,
    /// The generated rules' paths (`data.<AGGREGATE>.<rule>`), in entry-point order.
    rules: Vec<String>,
    spare: Spare<RegoVM>,
}

impl Vm {
    /// Compiles `rules` (rule paths) from the prepared engine's modules and data, or says why
    /// the VM cannot run them.
    pub(super) fn compile(engine: &Engine, rules: &[String]) -> Result<Vm, String> {
        let Some(first) = rules.first() else {
            return Err("no rule to compile".into());
        };
        let mut engine = engine.clone();
        let compiled = engine
            .compile_with_entrypoint(&first.as_str().into())
            .map_err(|e| flatten(&e.to_string()))?;
        let entry_points: Vec<&str> = rules.iter().map(String::as_str).collect();
        let program = Compiler::compile_from_policy(&compiled, &entry_points)
            .map_err(|e| flatten(&e.to_string()))?;
        if program.entry_points.len() != rules.len() {
            return Err(format!(
                "the program has {} entry points for {} rules",
                program.entry_points.len(),
                rules.len()
            ));
        }
        let vm = Vm {
            program,
            data: engine.get_data(),
            rules: rules.to_vec(),
            spare: Spare::default(),
        };
        // The VM checks the data against the program's rules when it is given them.
        let first_vm = vm.fresh().map_err(|e| e.to_string())?;
        vm.spare.put(first_vm);
        Ok(vm)
    }

    /// A VM ready for an input.
    fn fresh(&self) -> Result<RegoVM, VmError> {
        let mut vm = RegoVM::new();
        vm.load_program(self.program.clone());
        vm.set_data(self.data.clone())?;
        vm.set_strict_builtin_errors(true);
        vm.set_max_instructions(usize::MAX);
        vm.set_execution_timer_config(Some(ExecutionTimerConfig {
            limit: TIME_LIMIT,
            check_interval: NonZeroU32::MIN.saturating_add(63),
        }));
        Ok(vm)
    }

    /// The value of the generated rule `rule` (its path) on `input`. An error is described
    /// with the file, line and column of the instruction that failed.
    pub(super) fn eval(
        &self,
        input: &regorus::Value,
        rule: &str,
    ) -> Result<regorus::Value, String> {
        let index =
            self.rules.iter().position(|r| r == rule).ok_or_else(|| {
                format!("internal error: {rule} was not compiled; please report it")
            })?;
        let mut vm = match self.spare.pop() {
            Some(vm) => vm,
            None => self.fresh().map_err(|e| e.to_string())?,
        };
        vm.set_input(input.clone());
        match vm.execute_entry_point_by_index(index) {
            Ok(value) => {
                // An execution that failed is dropped, not kept (`spare.rs`).
                self.spare.put(vm);
                Ok(value)
            }
            Err(e) => Err(self.describe(vm.get_pc(), &e)),
        }
    }

    /// `file:line:col: message` for an error at instruction `pc`. The VM's own `pc=` means
    /// nothing to a policy's author, and a builtin's error names a placeholder source
    /// (`<builtin>:1:1`): both are dropped.
    fn describe(&self, pc: usize, error: &VmError) -> String {
        let text = flatten(&error.to_string());
        let text = text.strip_prefix("<builtin>:1:1: ").unwrap_or(&text);
        let text = match text.rfind(" (pc=") {
            Some(at) if text.ends_with(')') => &text[..at],
            _ => text,
        };
        let span = self
            .program
            .instruction_spans
            .get(pc)
            .and_then(Option::as_ref);
        match span.and_then(|s| Some((s, self.program.sources.get(s.source_index)?))) {
            Some((span, source)) => {
                format!("{}:{}:{}: {text}", source.name, span.line, span.column)
            }
            None => text.to_owned(),
        }
    }
}

#[cfg(test)]
impl Vm {
    /// How many VMs wait.
    pub(super) fn spare_len(&self) -> usize {
        self.spare.len()
    }
}
