//! The admission gate: one function from a proposed call to a judgement, stage by stage.
//!
//! 1. **parse**: the envelope becomes a [`Call`]; a malformed one is `invalid`.
//! 2. **validate**: the tool must exist, the arguments must be a JSON object matching its
//!    schema, and the tool must be able to classify them; otherwise `invalid`. Nothing after this
//!    point sees an invalid call.
//! 3. **classify**: the tool names the call's effects and the paths it touches.
//! 4. **resolve**: each path is resolved (`~`, `..`, symlinks) and placed in a root.
//! 5. **policy**: rules vote; deny > ask > allow > fallback.
//! 6. **sandbox**: a path outside every root it may use is refused, whatever policy said.
//!    (This runs before approval so that nobody is asked about a call that could not run.)
//! 7. **approve**: the posture decides what an `ask` becomes; under `strict` only an explicit
//!    allow stands.
//!
//! The result is a [`Judgement`]. Only an [`Admitted`] can execute, and only this module can
//! make one: its fields are private and it has no public constructor. `reasonix check` calls
//! exactly this code and stops before execution.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::call::Call;
use crate::policy::input::{PolicyInput, SessionInfo, Target};
use crate::policy::{
    CompiledPolicy, Decision, Facts, Fallback, PathFilter, PolicyError, PolicySet, Posture,
    RuleHit, Unattended,
};
use crate::sandbox::jail::{Plan, PlanView};
use crate::sandbox::resolve::resolve;
use crate::sandbox::{ConfinedPath, PathView, Roots, RootsError, TouchedPath};
use crate::tool::{Access, Arguments, Effect, Output, PathRole, Registry, Tool, ToolError};

/// Longest message an `invalid` verdict carries, so a model is never flooded.
const MAX_INVALID_MESSAGE: usize = 2000;

/// The verdict on a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// It may run.
    Allow,
    /// A person must approve it.
    Ask,
    /// It must not run.
    Deny,
    /// The model must correct it; nothing was resolved or run.
    Invalid,
}

impl Verdict {
    /// The name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
            Verdict::Invalid => "invalid",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Decision> for Verdict {
    fn from(d: Decision) -> Verdict {
        match d {
            Decision::Allow => Verdict::Allow,
            Decision::Ask => Verdict::Ask,
            Decision::Deny => Verdict::Deny,
        }
    }
}

/// The stage that settled the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Stage {
    /// Parsing or validation.
    Validate,
    /// Policy rules or the fallback.
    Policy,
    /// Path confinement.
    Sandbox,
    /// The posture (unattended or strict).
    Approve,
}

impl Stage {
    /// The name used in output (the same as its serialized form).
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Validate => "validate",
            Stage::Policy => "policy",
            Stage::Sandbox => "sandbox",
            Stage::Approve => "approve",
        }
    }
}

/// Everything the gate concluded about a call: what `reasonix check` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Admission {
    /// The call's id, when it had one.
    pub id: Option<String>,
    /// The tool as called; `null` when the envelope could not be read.
    pub tool: Option<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// The stage that settled it.
    pub stage: Stage,
    /// Why, in words; the first reason is the deciding one.
    pub reasons: Vec<String>,
    /// The rules that matched, decisive ones first.
    pub rules: Vec<RuleHit>,
    /// The fallback that decided, when no rule did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// The call's effects.
    pub effects: Vec<Effect>,
    /// Every path it touches.
    pub paths: Vec<PathView>,
    /// Whether the call changes nothing (`null` for an invalid call).
    pub read_only: Option<bool>,
    /// The bash analysis; `null` for other tools.
    pub bash: Option<Value>,
    /// The posture the verdict was reached under.
    pub posture: Posture,
    /// The policy input document, when the gate explains (`reasonix check --explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<PolicyInput>,
    /// The jail a bash call would run in; `null` for other tools.
    pub sandbox: Option<PlanView>,
}

impl Admission {
    fn invalid(
        id: Option<String>,
        tool: Option<String>,
        message: String,
        posture: Posture,
    ) -> Admission {
        Admission {
            id,
            tool,
            verdict: Verdict::Invalid,
            stage: Stage::Validate,
            reasons: vec![bound(message, MAX_INVALID_MESSAGE)],
            rules: Vec::new(),
            fallback: None,
            effects: Vec::new(),
            paths: Vec::new(),
            read_only: None,
            bash: None,
            posture,
            input: None,
            sandbox: None,
        }
    }
}

/// The gate's answer.
pub enum Judgement {
    /// It may run now.
    Allowed(Admitted),
    /// It may run once a person approves.
    Ask(Pending),
    /// It must not run (`deny` or `invalid`).
    Refused(Admission),
}

impl Judgement {
    /// What the gate concluded, whatever the outcome.
    pub fn admission(&self) -> &Admission {
        match self {
            Judgement::Allowed(a) => &a.admission,
            Judgement::Ask(p) => &p.0.admission,
            Judgement::Refused(a) => a,
        }
    }

    /// The conclusion, dropping any token.
    pub fn into_admission(self) -> Admission {
        match self {
            Judgement::Allowed(a) => a.admission,
            Judgement::Ask(p) => p.0.admission,
            Judgement::Refused(a) => a,
        }
    }
}

/// The right to run one call: made only by the gate, consumed by [`Admitted::execute`].
pub struct Admitted {
    admission: Admission,
    tool: Arc<dyn Tool>,
    arguments: Arguments,
    paths: Vec<ConfinedPath>,
    withheld: PathFilter,
    jail: Arc<Plan>,
}

impl Admitted {
    /// What the gate concluded.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// The validated arguments.
    pub fn arguments(&self) -> &Arguments {
        &self.arguments
    }

    /// The `i`-th path the tool's classification named, confined to its root. Tools act on
    /// these, never on the raw argument strings.
    pub fn path(&self, i: usize) -> Result<&ConfinedPath, ToolError> {
        self.paths.get(i).ok_or_else(|| {
            ToolError::Refused(format!(
                "internal error: tool {} asked for path {i} but classified {}; please report it",
                self.tool.name(),
                self.paths.len()
            ))
        })
    }

    /// What a tool that reads many files must skip: paths that a deny or ask rule protects
    /// from this call.
    pub fn withheld(&self) -> &PathFilter {
        &self.withheld
    }

    /// The jail every process of this call runs in.
    pub fn jail(&self) -> &Plan {
        &self.jail
    }

    /// Runs the call. Consumes the admission: one admission, one execution.
    pub fn execute(self) -> Result<Output, ToolError> {
        let tool = Arc::clone(&self.tool);
        tool.execute(&self)
    }
}

/// A call waiting for a person's approval. It holds no lease and runs nothing until approved.
pub struct Pending(Admitted);

impl Pending {
    /// What the gate concluded.
    pub fn admission(&self) -> &Admission {
        &self.0.admission
    }

    /// A person approved this exact call: it may run.
    pub fn approve(self) -> Admitted {
        self.0
    }
}

/// Why a gate could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The workspace is unusable.
    #[error(transparent)]
    Roots(#[from] RootsError),
    /// A policy does not compile for this workspace.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// The admission gate for one workspace, registry, policy and posture. Immutable once built.
pub struct Gate {
    registry: Arc<Registry>,
    policy: Arc<CompiledPolicy>,
    roots: Roots,
    posture: Posture,
    explain: bool,
    jail: Arc<Plan>,
    protected: Vec<std::path::PathBuf>,
}

impl Gate {
    /// Builds a gate; compiles the policy for `workspace`, which must exist.
    pub fn new(
        registry: Registry,
        policy: &PolicySet,
        workspace: &Path,
        posture: Posture,
    ) -> Result<Gate, GateError> {
        let jail_config = policy.jail();
        let roots = Roots::new(workspace)?;
        let (write, read) = jail_config.roots(roots.home());
        let roots = roots.with(&write, &read);
        let jail = Arc::new(Plan::new(&jail_config, roots.workspace(), roots.home()));
        let policy = Arc::new(policy.compile(&roots)?);
        Ok(Gate {
            registry: Arc::new(registry),
            policy,
            roots,
            posture,
            explain: false,
            jail,
            protected: Vec::new(),
        })
    }

    /// The jail plan bash calls run under.
    pub fn jail(&self) -> &Plan {
        &self.jail
    }

    /// A gate that attaches the policy input document to every admission (`--explain`).
    pub fn explaining(mut self, explain: bool) -> Gate {
        self.explain = explain;
        self
    }

    /// A gate that refuses, at the sandbox stage, any write to these paths or beneath them: the
    /// host's own files (the execution record, `reasonix.yaml`, policies in the workspace),
    /// whatever policy says. Paths are resolved (`~`, `..`, symlinks) now, relative to the
    /// workspace.
    pub fn protecting(mut self, paths: impl IntoIterator<Item = std::path::PathBuf>) -> Gate {
        for p in paths {
            // Resolved like any path a call names, so the forms a call's paths are compared in
            // match; a path that cannot be resolved is kept as given.
            let resolved = p.to_str().and_then(|written| {
                resolve(written, self.roots.workspace(), self.roots.home()).ok()
            });
            let p = resolved.map_or(p, |r| r.resolved);
            if !self.protected.contains(&p) {
                self.protected.push(p);
            }
        }
        self
    }

    /// The tools this gate admits calls to.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The roots file tools are confined to.
    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    /// The posture.
    pub fn posture(&self) -> Posture {
        self.posture
    }

    /// Judges a call given as JSON text (a CALL argument or one JSONL line).
    pub fn admit_text(&self, text: &str) -> Judgement {
        match Call::parse(text) {
            Ok(call) => self.admit(&call),
            Err((id, e)) => {
                Judgement::Refused(Admission::invalid(id, None, e.to_string(), self.posture))
            }
        }
    }

    /// Judges a parsed call. See the module doc for the stages.
    pub fn admit(&self, call: &Call) -> Judgement {
        let invalid = |message: String| {
            Judgement::Refused(Admission::invalid(
                call.id.clone(),
                Some(call.name.clone()),
                message,
                self.posture,
            ))
        };

        // Validate.
        let Some(registered) = self.registry.get(&call.name) else {
            let known: Vec<&str> = self.registry.names().collect();
            return invalid(format!(
                "unknown tool {:?}; the tools are: {}",
                call.name,
                known.join(", ")
            ));
        };
        let schema = || serde_json::to_string(registered.schema()).unwrap_or_default();
        let args = match call.parse_arguments() {
            Ok(args) => args,
            Err(e) => return invalid(format!("{e}. The schema of {} is {}", call.name, schema())),
        };
        if let Err(errors) = registered.validate(&args) {
            return invalid(format!(
                "the arguments of {} do not match its schema: {}. The schema is {}",
                call.name,
                errors.join("; "),
                schema()
            ));
        }
        let arguments = Arguments::new(args);
        let tool = Arc::clone(registered.tool());

        // Classify.
        let class = match tool.classify(&arguments) {
            Ok(class) => class,
            Err(e) => return invalid(format!("{}: {e}", call.name)),
        };

        // Resolve.
        let touched: Vec<TouchedPath> = self.roots.touch_all(&class.paths);
        let input = (self.explain || self.policy.has_rego()).then(|| PolicyInput {
            tool: call.name.clone(),
            arguments: arguments.as_map().clone(),
            target: Target {
                tool: call.name.clone(),
                source: registered.source(),
                read_only: tool.read_only(),
            },
            effects: class.effects.iter().copied().collect(),
            paths: touched.iter().map(TouchedPath::view).collect(),
            bash: class.bash.clone(),
            session: SessionInfo::new(self.posture, &self.roots),
        });

        // Policy.
        let input_json = match (&input, self.policy.has_rego()) {
            (Some(input), true) => serde_json::to_string(input).ok(),
            _ => None,
        };
        let judged = self.policy.judge(&Facts {
            input: input_json.as_deref(),
            tool: &call.name,
            effects: &class.effects,
            paths: &touched,
            read_only: class.read_only,
            analysed: class.analysed,
            bash: class.bash.as_ref(),
        });
        let mut verdict = Verdict::from(judged.decision);
        let mut stage = Stage::Policy;
        let mut reasons = judged.reasons;

        // Sandbox.
        if verdict != Verdict::Deny {
            // A shell word that may name a file is judged by rules, not confined: the jail
            // confines what the command really opens.
            let escapes: Vec<String> = touched
                .iter()
                .filter(|t| t.role != PathRole::Argument)
                .filter_map(|t| {
                    t.placement
                        .as_ref()
                        .err()
                        .map(|e| format!("{:?}: {e}", t.written))
                })
                .collect();
            // The host's own files: a path written, or any word of a shell command that may
            // change things (the analysis cannot tell which of its words it writes).
            let host_files = touched
                .iter()
                .filter(|t| {
                    t.access == Access::Write
                        || (t.role == PathRole::Argument && !class.read_only)
                })
                .filter(|t| {
                    t.forms()
                        .iter()
                        .any(|f| self.protected.iter().any(|p| f.starts_with(p)))
                })
                .map(|t| {
                    format!(
                        "{:?} is the host's own file (the execution record, the run's settings or a policy); no call may change it",
                        t.written
                    )
                });
            let escapes: Vec<String> = escapes.into_iter().chain(host_files).collect();
            // A process that would run under an `enforce` plan this kernel cannot enforce.
            let refusal = class.bash.as_ref().and_then(|_| self.jail.refusal.clone());
            let escapes: Vec<String> = escapes.into_iter().chain(refusal).collect();
            if !escapes.is_empty() {
                verdict = Verdict::Deny;
                stage = Stage::Sandbox;
                let mut sandbox_reasons = escapes;
                sandbox_reasons.extend(reasons.into_iter().map(|r| format!("(policy alone: {r})")));
                reasons = sandbox_reasons;
            }
        }

        // Approve: the posture.
        let defaults = self.policy.defaults();
        match (self.posture, verdict) {
            (Posture::Unattended, Verdict::Ask) => {
                stage = Stage::Approve;
                let to = match defaults.unattended {
                    Unattended::Allow => Verdict::Allow,
                    Unattended::Deny => Verdict::Deny,
                };
                reasons.insert(
                    0,
                    format!("unattended posture: nobody can answer, so ask becomes {to} (defaults.unattended)"),
                );
                verdict = to;
            }
            (Posture::Strict, Verdict::Ask) => {
                stage = Stage::Approve;
                verdict = Verdict::Deny;
                reasons.insert(0, "strict posture: ask becomes deny".into());
            }
            (Posture::Strict, Verdict::Allow) if judged.fallback.is_some() => {
                stage = Stage::Approve;
                verdict = Verdict::Deny;
                reasons.insert(
                    0,
                    "strict posture: only a call an allow rule covers may run, and no allow rule covers this one".into(),
                );
            }
            _ => {}
        }

        let withheld = self.policy.withholding(&call.name, &class.effects);
        let effects: BTreeSet<Effect> = class.effects;
        let admission = Admission {
            id: call.id.clone(),
            tool: Some(call.name.clone()),
            verdict,
            stage,
            reasons,
            rules: judged.hits,
            fallback: judged.fallback,
            effects: effects.into_iter().collect(),
            paths: touched.iter().map(TouchedPath::view).collect(),
            read_only: Some(class.read_only),
            bash: class
                .bash
                .as_ref()
                .and_then(|b| serde_json::to_value(b).ok()),
            posture: self.posture,
            input: input.filter(|_| self.explain),
            sandbox: class.bash.as_ref().map(|_| self.jail.view()),
        };
        if !matches!(verdict, Verdict::Allow | Verdict::Ask) {
            return Judgement::Refused(admission);
        }
        let mut paths = Vec::with_capacity(touched.len());
        for t in touched.into_iter().filter(|t| t.role != PathRole::Argument) {
            match t.placement {
                Ok(p) => paths.push(p),
                // The sandbox stage above refused every call with an unplaced path.
                Err(_) => return Judgement::Refused(admission),
            }
        }
        let admitted = Admitted {
            admission,
            tool,
            arguments,
            paths,
            withheld,
            jail: Arc::clone(&self.jail),
        };
        if verdict == Verdict::Allow {
            Judgement::Allowed(admitted)
        } else {
            Judgement::Ask(Pending(admitted))
        }
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary, saying how much was cut.
fn bound(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let cut = text.floor_char_boundary(max);
    text.truncate(cut);
    text.push_str(&format!("… [{} of {total} bytes shown]", cut));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_cuts_on_a_char_boundary_and_says_so() {
        let s = bound("ééééé".into(), 3);
        assert!(s.starts_with('é'));
        assert!(s.contains("[2 of 10 bytes shown]"), "{s}");
        assert_eq!(bound("short".into(), 10), "short");
    }

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Gate>();
        check::<Admission>();
        check::<Admitted>();
        check::<Pending>();
    }
}
