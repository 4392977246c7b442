//! What the gate concludes about a call ([`Admission`], [`Verdict`], [`Stage`]) and the values it
//! hands out: a [`Judgement`] holding either a refusal or a token — [`Admitted`] (may run now) or
//! [`Pending`] (may run once a person approves). Only this module's parent can make a token: its
//! fields are private and it has no public constructor.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::policy::input::PolicyInput;
use crate::policy::{Decision, Fallback, PathFilter, Posture, RuleHit};
use crate::sandbox::PathView;
use crate::sandbox::SharedJailPlan;
use crate::sandbox::jail::JailPlanView;
use crate::text::{Keep, shorten};
use crate::tool::{Arguments, Grant, Tool};
use crate::vocab::Effect;

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
    /// Path confinement, the host's own files, or a jail that cannot be enforced.
    Sandbox,
    /// Plan mode: a call that is not read-only waits for an approved plan.
    Plan,
    /// The posture (unattended or strict).
    Approve,
    /// A pre-tool hook (after approval, before the lease): it denied, or could not be run.
    Hook,
}

impl Stage {
    /// The name used in output (the same as its serialized form).
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Validate => "validate",
            Stage::Policy => "policy",
            Stage::Sandbox => "sandbox",
            Stage::Plan => "plan",
            Stage::Approve => "approve",
            Stage::Hook => "hook",
        }
    }
}

/// Everything the gate concluded about a call: what `reasonix check` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Admission {
    /// The call's id, when it had one.
    pub id: Option<String>,
    /// The tool judged: the tool as called, or the one a proxy reached; `null` when the
    /// envelope could not be read.
    pub tool: Option<String>,
    /// The proxy the call went through (`use_capability`); `null` for a direct call.
    pub via: Option<&'static str>,
    /// The verdict.
    pub verdict: Verdict,
    /// The stage that settled it.
    pub stage: Stage,
    /// Why, in words; the first reason is the deciding one.
    pub reasons: Vec<String>,
    /// The rules that matched, decisive ones first.
    pub rules: Vec<RuleHit>,
    /// The fallback that decided, when no rule did.
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
    /// The revision of the policy bundle that judged (`null` when the policy is not a bundle).
    pub policy_revision: Option<String>,
    /// The policy input document, when the gate explains (`reasonix check --explain`).
    pub input: Option<PolicyInput>,
    /// The jail a bash call would run in; `null` for other tools.
    pub sandbox: Option<JailPlanView>,
    /// What the tool's provider says about it (an MCP tool's `annotations`), as given; `null`
    /// for other tools. Shown, never trusted: it plays no part in the verdict.
    pub annotations: Option<Value>,
    /// When a pre-tool hook replaced the call's arguments: the model's original arguments (the
    /// verdict is on the replacement, judged again from the top).
    pub replaced_arguments: Option<Value>,
    /// When a pre-tool hook replaced the call's arguments: the replacement as the gate judged
    /// it (the record keeps its digest; not printed, since the policy input shows it).
    #[serde(skip)]
    pub replacement: Option<serde_json::Map<String, Value>>,
    /// Who settled an `ask` within the admission path, when someone did: `posture` (the
    /// unattended or strict posture answered it) or `hook` (a pre-tool hook denied a call that
    /// was asked about). Not printed; OpenTelemetry's `reasonix.asks.answered` counts it.
    #[serde(skip)]
    pub ask_settled_by: Option<&'static str>,
}

impl Admission {
    /// The ids of the rules that decided it (those marked `decisive`), in order.
    pub fn decisive_rules(&self) -> impl Iterator<Item = &str> {
        self.rules
            .iter()
            .filter(|r| r.decisive)
            .map(|r| r.id.as_str())
    }

    /// Its `reasonix.*` attributes for OpenTelemetry export ([`crate::telemetry`]): tool,
    /// verdict, stage, the rules that decided (comma-separated), posture, policy revision, and
    /// the call's id as `gen_ai.tool.call.id`.
    pub fn attributes(&self) -> crate::telemetry::Attributes {
        let decisive: Vec<&str> = self.decisive_rules().collect();
        let rules = decisive.join(",");
        let mut out = crate::telemetry::Attributes::with_capacity(256 + rules.len());
        out.add("reasonix.tool", self.tool.as_deref().unwrap_or_default());
        out.add("reasonix.verdict", self.verdict.as_str());
        out.add("reasonix.stage", self.stage.as_str());
        out.add("reasonix.rules", &rules);
        out.add("reasonix.posture", self.posture.as_str());
        if let Some(r) = &self.policy_revision {
            out.add("reasonix.policy_revision", r);
        }
        if let Some(id) = &self.id {
            out.add("gen_ai.tool.call.id", id);
        }
        out
    }

    /// Records its `reasonix.*` attributes on `span`, which declares them (the gate's `call`
    /// span, a run's `execute_tool` span), for OpenTelemetry export ([`crate::telemetry`]):
    /// tool, verdict, stage, the rules that decided (comma-separated), posture, policy revision.
    pub fn record_on(&self, span: &tracing::Span) {
        if span.is_disabled() {
            return;
        }
        let decisive: Vec<&str> = self.decisive_rules().collect();
        span.record("reasonix.tool", self.tool.as_deref().unwrap_or(""));
        span.record("reasonix.verdict", self.verdict.as_str());
        span.record("reasonix.stage", self.stage.as_str());
        span.record("reasonix.rules", decisive.join(",").as_str());
        span.record("reasonix.posture", self.posture.as_str());
        if let Some(r) = &self.policy_revision {
            span.record("reasonix.policy_revision", r.as_str());
        }
    }

    /// The admission of input that is not even a call (a line that is not UTF-8): `invalid`.
    pub fn unreadable(why: String, posture: Posture) -> Admission {
        Admission::invalid(None, None, &why, posture)
    }

    /// The admission of a call that could not be read or validated.
    pub(crate) fn invalid(
        id: Option<String>,
        tool: Option<String>,
        message: &str,
        posture: Posture,
    ) -> Admission {
        Admission {
            id,
            tool,
            via: None,
            verdict: Verdict::Invalid,
            stage: Stage::Validate,
            reasons: vec![shorten(message, MAX_INVALID_MESSAGE, Keep::Head).into_owned()],
            rules: Vec::new(),
            fallback: None,
            effects: Vec::new(),
            paths: Vec::new(),
            read_only: None,
            bash: None,
            posture,
            policy_revision: None,
            input: None,
            sandbox: None,
            annotations: None,
            replaced_arguments: None,
            replacement: None,
            ask_settled_by: None,
        }
    }
}

/// Why a call is invalid: the model must correct it.
pub(super) struct Invalid {
    pub id: Option<String>,
    pub tool: Option<String>,
    pub message: String,
}

impl Invalid {
    pub(super) fn of(call_id: Option<String>, tool: &str, message: String) -> Invalid {
        Invalid {
            id: call_id,
            tool: Some(tool.to_owned()),
            message,
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

    /// Narrows the judgement to a block at `stage`, dropping any token: the verdict becomes
    /// `deny` and `why` the deciding reason. A refusal stays as it is.
    pub(crate) fn block(self, stage: Stage, why: String) -> Judgement {
        let mut a = match self {
            Judgement::Refused(a) => return Judgement::Refused(a),
            other => other.into_admission(),
        };
        a.verdict = Verdict::Deny;
        a.stage = stage;
        a.reasons.insert(0, why);
        Judgement::Refused(a)
    }

    /// Says who settled an ask (a refusal or an allow the admission path made of it):
    /// [`Admission::ask_settled_by`].
    pub(crate) fn settled_by(mut self, by: &'static str) -> Judgement {
        match &mut self {
            Judgement::Allowed(a) => a.admission.ask_settled_by = Some(by),
            Judgement::Ask(p) => p.0.admission.ask_settled_by = Some(by),
            Judgement::Refused(a) => a.ask_settled_by = Some(by),
        }
        self
    }

    /// Narrows an allow to an ask (a person, or the posture, must approve), with `why` as the
    /// deciding reason; an ask or a refusal is left as it is.
    pub(crate) fn narrow_to_ask(self, stage: Stage, why: String) -> Judgement {
        match self {
            Judgement::Allowed(mut a) => {
                a.admission.verdict = Verdict::Ask;
                a.admission.stage = stage;
                a.admission.reasons.insert(0, why);
                Judgement::Ask(Pending(a))
            }
            other => other,
        }
    }

    /// Adds a reason after the deciding one.
    pub(crate) fn note(mut self, why: String) -> Judgement {
        let a = match &mut self {
            Judgement::Allowed(a) => &mut a.admission,
            Judgement::Ask(p) => &mut p.0.admission,
            Judgement::Refused(a) => a,
        };
        a.reasons.push(why);
        self
    }

    /// Records the arguments a hook put in place of the model's, on the admission.
    pub(crate) fn replaced(mut self, original: Value) -> Judgement {
        let a = match &mut self {
            Judgement::Allowed(a) => &mut a.admission,
            Judgement::Ask(p) => &mut p.0.admission,
            Judgement::Refused(a) => a,
        };
        a.replacement = a.input.as_ref().map(|input| input.arguments.clone());
        a.replaced_arguments = Some(original);
        self
    }

    /// The same judgement without the policy input (attached for the hooks stage only).
    pub(crate) fn without_input(mut self) -> Judgement {
        match &mut self {
            Judgement::Allowed(a) => a.admission.input = None,
            Judgement::Ask(p) => p.0.admission.input = None,
            Judgement::Refused(a) => a.input = None,
        }
        self
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

/// The right to run one call, bound to the one tool that was judged: made only by the gate,
/// consumed by taking its lease (`Admitted::lease`), which alone can execute it.
pub struct Admitted {
    admission: Admission,
    tool: Arc<dyn Tool>,
    arguments: Arguments,
    grants: Vec<Grant>,
    withheld: PathFilter,
    jail: SharedJailPlan,
    egress: Option<Arc<dyn crate::egress::ConnectionJudge>>,
    protected: Option<PathFilter>,
    changes: Option<Arc<dyn crate::effects::ChangeJudge>>,
}

/// What an [`Admitted`] is made of, for the later stages of this crate (lease, execute): they
/// read and move its fields; only the gate can make one (`sealed`), so no module can assemble
/// an executable call by hand.
pub(crate) struct Parts {
    /// Visible to the gate's modules alone: outside them, a `Parts { .. }` literal does not
    /// compile.
    pub(super) sealed: (),
    pub admission: Admission,
    pub tool: Arc<dyn Tool>,
    pub arguments: Arguments,
    pub grants: Vec<Grant>,
    pub withheld: PathFilter,
    pub jail: SharedJailPlan,
    /// The judge of the connections a bash call's processes ask the egress proxy for.
    pub egress: Option<Arc<dyn crate::egress::ConnectionJudge>>,
    /// For a call that starts a process: what a deny or ask rule protects from reading, which
    /// its jail covers (issue 25).
    pub protected: Option<PathFilter>,
    /// The judge of what a bash writer's run changed (issue 25).
    pub changes: Option<Arc<dyn crate::effects::ChangeJudge>>,
}

impl Admitted {
    pub(super) fn new(parts: Parts) -> Admitted {
        let Parts {
            sealed: (),
            admission,
            tool,
            arguments,
            grants,
            withheld,
            jail,
            egress,
            protected,
            changes,
        } = parts;
        Admitted {
            admission,
            tool,
            arguments,
            grants,
            withheld,
            jail,
            egress,
            protected,
            changes,
        }
    }

    /// What the gate concluded.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// The validated arguments.
    pub fn arguments(&self) -> &Arguments {
        &self.arguments
    }

    /// Takes the token apart: only the lease stage does, to carry it to execution.
    pub(crate) fn into_parts(self) -> Parts {
        Parts {
            sealed: (),
            admission: self.admission,
            tool: self.tool,
            arguments: self.arguments,
            grants: self.grants,
            withheld: self.withheld,
            jail: self.jail,
            egress: self.egress,
            protected: self.protected,
            changes: self.changes,
        }
    }
}

/// A call waiting for a person's approval. It holds no lease and runs nothing until approved.
pub struct Pending(Admitted);

impl Pending {
    pub(super) fn new(admitted: Admitted) -> Pending {
        Pending(admitted)
    }

    /// What the gate concluded.
    pub fn admission(&self) -> &Admission {
        &self.0.admission
    }

    /// A person approved this exact call: it may run.
    pub fn approve(self) -> Admitted {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_message_is_bounded() {
        let a = Admission::invalid(None, None, &"x".repeat(5000), Posture::Interactive);
        assert!(a.reasons[0].len() < 2100);
        assert!(
            a.reasons[0].contains("[2000 of 5000 bytes shown]"),
            "{}",
            a.reasons[0]
        );
    }

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Admission>();
        check::<Admitted>();
        check::<Pending>();
    }
}
