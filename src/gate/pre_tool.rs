//! Stage 10, **hooks**: the pre-tool hooks of the settings the gate was built with
//! ([`super::GateBuilder::hooks`]) run on what the earlier stages allowed or asked about. They
//! only narrow: `deny` blocks, `ask` turns an allow into an ask (denied where nobody can
//! answer), and a replacement of the arguments enters the gate again from its first stage.
//! The protocol and the hooks' own jail are [`crate::hooks`]'.

use serde_json::{Value, json};

use super::{Gate, Judgement, Stage, Verdict};
use crate::call::Call;
use crate::hooks::{Decision, Hooks};
use crate::policy::Posture;
use crate::sandbox::jail::Enforcement;

/// Runs `hooks`' pre-tool hooks on the gate's judgement of `call` ([`crate::hooks`] says what
/// each answer does). [`Gate::admit`] calls it; nothing else may. `judgement` carries the
/// policy input; `gate` judges a replacement again, from its first stage.
pub(super) fn pre_tool(hooks: &Hooks, gate: &Gate, call: &Call, judgement: Judgement) -> Judgement {
    run(hooks, gate, call, judgement, false)
}

fn run(hooks: &Hooks, gate: &Gate, call: &Call, judgement: Judgement, replaced: bool) -> Judgement {
    if matches!(judgement, Judgement::Refused(_)) {
        return judgement;
    }
    let admission = judgement.admission();
    let Some(tool) = admission.tool.clone() else {
        return judgement;
    };
    let arguments = admission
        .input
        .as_ref()
        .map(|i| Value::Object(i.arguments.clone()))
        .unwrap_or_else(|| call_arguments(call));
    let mut judgement = judgement;
    for hook in hooks.pre_matching(&tool) {
        let admission = judgement.admission();
        let stdin = json!({
            "call": {"id": call.id, "name": tool, "arguments": arguments},
            "admission": admission,
            "input": admission.input,
        });
        let plan = gate.hooks_jail();
        let shape = gate.command_shape(plan, crate::sandbox::jail::Writes::None);
        let answer = match hook.ask(plan, &shape, &stdin) {
            Ok(a) => a,
            Err(why) => {
                return judgement.block(
                    Stage::Hook,
                    format!(
                        "{} ({}) blocked the call: {why}",
                        hook.name(),
                        hook.program()
                    ),
                );
            }
        };
        let said = answer
            .reason
            .as_deref()
            .map(|r| format!(": {}", crate::text::visible(r)))
            .unwrap_or_default();
        if plan.mode() == Enforcement::Off {
            judgement = judgement.note(format!(
                "not enforced: {} ran with Reasonix's own rights (sandbox.bash is off)",
                hook.name()
            ));
        }
        match (answer.decision, answer.arguments) {
            (Decision::Deny, _) => {
                // A hook that denies a call that was asked about has answered the ask.
                let asked = matches!(judgement, Judgement::Ask(_));
                let denied = judgement.block(Stage::Hook, format!("{} denied{said}", hook.name()));
                return if asked {
                    denied.settled_by("hook")
                } else {
                    denied
                };
            }
            (Decision::Ask, _) => {
                let why = format!("{} asks for a person{said}", hook.name());
                judgement = match gate.posture() {
                    Posture::Interactive => judgement.narrow_to_ask(Stage::Hook, why),
                    _ => judgement
                        .block(
                            Stage::Hook,
                            format!("{why}; nobody can answer under this posture, so it is denied"),
                        )
                        .settled_by("posture"),
                };
                if matches!(judgement, Judgement::Refused(_)) {
                    return judgement;
                }
            }
            (Decision::Continue, None) => {}
            (Decision::Continue, Some(_)) if replaced => {
                return judgement.block(
                    Stage::Hook,
                    format!(
                        "{} replaced the arguments of a call a hook had already replaced; one replacement per call",
                        hook.name()
                    ),
                );
            }
            (Decision::Continue, Some(new)) => {
                let was_ask = judgement.admission().verdict == Verdict::Ask;
                let again = Call {
                    id: call.id.clone(),
                    name: tool.clone(),
                    arguments: crate::call::RawArguments::Object(new),
                };
                let rejudged = gate.admit_stages(&again, true).note(format!(
                    "{} replaced the call's arguments{said}; the replaced call was judged again from the top",
                    hook.name()
                ));
                let rejudged = run(hooks, gate, &again, rejudged, true);
                let rejudged = if was_ask {
                    rejudged.narrow_to_ask(
                        Stage::Hook,
                        "the original call needed a person's approval, and its replacement does too".into(),
                    )
                } else {
                    rejudged
                };
                return rejudged.replaced(arguments);
            }
        }
    }
    judgement
}

/// The call's arguments as proposed, when the judgement carries no policy input.
fn call_arguments(call: &Call) -> Value {
    call.parse_arguments()
        .map(Value::Object)
        .unwrap_or(Value::Null)
}
