//! Pre-tool hooks: the `hooks` stage of the admission path, after the gate has admitted a call
//! (after its approve stage) and before any lease or process. A hook can only **narrow**.
//!
//! ```yaml
//! hooks:                       # in reasonix.yaml
//!   pre_tool:
//!     - tools: ["bash", "mcp__*"]        # globs on the resolved tool name
//!       command: ["python3", "hooks/check.py"]
//!       timeout_ms: 5000                  # default 5000
//! ```
//!
//! # Protocol
//!
//! The hook reads one JSON object on stdin, `{"call": {"id", "name", "arguments"}, "admission":
//! {…the verdict as check prints it…}, "input": {…the policy input…}}`, and answers one JSON
//! object on stdout: `{"decision": "continue" | "deny" | "ask", "reason"?: str, "arguments"?:
//! object}` (`arguments` only with `continue`).
//!
//! 1. Hooks run only on a call the gate allowed or asked about; a refused call runs none.
//! 2. They run in the order written; the first that does not `continue` settles it.
//! 3. `deny` blocks the call (stage `hook`). `ask` turns an allow into an ask: a person (or the
//!    posture: unattended and strict deny it) must approve. `continue` leaves the verdict as
//!    the gate gave it. Nothing a hook says turns a deny or an ask into an allow.
//! 4. `arguments` replaces the call's arguments: the replaced call enters the gate again from
//!    its first stage — validation, classification, policy, sandbox, all of it — and its
//!    hooks run again; it runs only if that admits it, never with more than the original was
//!    given (an ask stays an ask). One replacement per call: a second is a block.
//! 5. A hook that exits non-zero, is killed by a signal, outlives its timeout, or prints
//!    anything but that one JSON object **blocks** the call, with a reason that says which.
//!
//! A hook runs in the OS jail, read-only on the workspace and the write roots
//! ([`Gate::hooks_jail`]): it can read what it judges, never change it. Its process group and
//! cgroups are killed at its timeout and once it has answered. A hooks plan that refuses to run
//! anything (`enforce` on a kernel that cannot enforce it) blocks every hooked call, in the
//! plan's words; with `sandbox.bash: off` a hook runs with Reasonix's own rights, and the
//! verdict says so.

mod process;

use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::call::Call;
use crate::gate::{Gate, Judgement, Stage, Verdict};
use crate::policy::Posture;
use crate::sandbox::jail::Mode;

/// Default limit on one hook run.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);

/// The `hooks:` section of `reasonix.yaml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HooksSpec {
    /// Run after admission, before the lease.
    #[serde(default)]
    pub pre_tool: Vec<HookSpec>,
    /// Run after the call (not run yet by this version; refused at load so that nobody relies
    /// on one).
    #[serde(default)]
    pub post_tool: Vec<HookSpec>,
}

/// One hook as written.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// Globs on the resolved tool name.
    pub tools: Vec<String>,
    /// The program and its arguments; a relative program is taken from the workspace.
    pub command: Vec<String>,
    /// Its limit, in ms.
    pub timeout_ms: Option<u64>,
}

struct Hook {
    name: String,
    tools: GlobSet,
    command: Vec<String>,
    timeout: Duration,
}

/// The pre-tool hooks of a session, checked. Immutable.
pub struct Hooks {
    pre: Vec<Hook>,
}

impl Hooks {
    /// Checks the section: every glob compiles, every command has a program, no post-tool hook
    /// (not supported by this version). Hooks run under the judging gate's
    /// [`Gate::hooks_jail`].
    pub fn new(spec: &HooksSpec) -> Result<Hooks, String> {
        if !spec.post_tool.is_empty() {
            return Err(
                "hooks.post_tool: post-tool hooks are not supported by this version of Reasonix; remove them"
                    .into(),
            );
        }
        let mut pre = Vec::new();
        for (i, h) in spec.pre_tool.iter().enumerate() {
            let name = format!("hooks.pre_tool[{i}]");
            if h.command.is_empty() || h.command[0].is_empty() {
                return Err(format!("{name}: `command` needs a program"));
            }
            if h.tools.is_empty() {
                return Err(format!(
                    "{name}: `tools` is empty; write [\"*\"] to run it on every call"
                ));
            }
            let mut set = GlobSetBuilder::new();
            for t in &h.tools {
                set.add(Glob::new(t).map_err(|e| format!("{name}: bad glob {t:?}: {e}"))?);
            }
            pre.push(Hook {
                name,
                tools: set.build().map_err(|e| e.to_string())?,
                command: h.command.clone(),
                timeout: h.timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis),
            });
        }
        Ok(Hooks { pre })
    }

    /// Whether there is no hook at all.
    pub fn is_empty(&self) -> bool {
        self.pre.is_empty()
    }

    /// Whether some pre-tool hook matches `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        self.pre.iter().any(|h| h.tools.is_match(tool))
    }

    /// Runs the pre-tool hooks on the gate's judgement of `call` (see the module doc). `gate`
    /// judges a replacement again; it must attach the policy input (`Gate::with_explain`), so
    /// hooks receive it.
    pub fn pre_tool(&self, gate: &Gate, call: &Call, judgement: Judgement) -> Judgement {
        self.run(gate, call, judgement, false)
    }

    fn run(&self, gate: &Gate, call: &Call, judgement: Judgement, replaced: bool) -> Judgement {
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
        for hook in self.pre.iter().filter(|h| h.tools.is_match(&tool)) {
            let admission = judgement.admission();
            let stdin = json!({
                "call": {"id": call.id, "name": tool, "arguments": arguments},
                "admission": admission,
                "input": admission.input,
            });
            let plan = gate.hooks_jail();
            let answer = match process::run(plan, &hook.command, &stdin, hook.timeout)
                .and_then(|out| parse(&out))
            {
                Ok(a) => a,
                Err(why) => {
                    return judgement.block(
                        Stage::Hook,
                        format!(
                            "{} ({}) blocked the call: {why}",
                            hook.name, hook.command[0]
                        ),
                    );
                }
            };
            let said = answer
                .reason
                .as_deref()
                .map(|r| format!(": {}", crate::text::visible(r)))
                .unwrap_or_default();
            if plan.mode() == Mode::Off {
                judgement = judgement.note(format!(
                    "not enforced: {} ran with Reasonix's own rights (sandbox.bash is off)",
                    hook.name
                ));
            }
            match (answer.decision, answer.arguments) {
                (Decision::Deny, _) => {
                    return judgement.block(Stage::Hook, format!("{} denied{said}", hook.name));
                }
                (Decision::Ask, _) => {
                    let why = format!("{} asks for a person{said}", hook.name);
                    judgement = match gate.posture() {
                        Posture::Interactive => judgement.narrow_to_ask(Stage::Hook, why),
                        _ => judgement.block(
                            Stage::Hook,
                            format!("{why}; nobody can answer under this posture, so it is denied"),
                        ),
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
                            hook.name
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
                    let rejudged = gate.admit(&again).note(format!(
                        "{} replaced the call's arguments{said}; the replaced call was judged again from the top",
                        hook.name
                    ));
                    let rejudged = self.run(gate, &again, rejudged, true);
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
}

fn call_arguments(call: &Call) -> Value {
    call.parse_arguments()
        .map(Value::Object)
        .unwrap_or(Value::Null)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Continue,
    Deny,
    Ask,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: Decision,
    reason: Option<String>,
    arguments: Option<Map<String, Value>>,
}

/// The hook's stdout as its one answer, or why it is not one.
fn parse(stdout: &str) -> Result<Answer, String> {
    let answer: Answer = serde_json::from_str(stdout.trim()).map_err(|e| {
        format!(
            "its output is not one answer object {{\"decision\": \"continue\"|\"deny\"|\"ask\", \"reason\"?, \"arguments\"?}} ({e}): {:?}",
            crate::text::shorten(stdout.trim(), 200, crate::text::Keep::Head)
        )
    })?;
    if answer.arguments.is_some() && answer.decision != Decision::Continue {
        return Err(
            "`arguments` (a replacement) comes only with \"decision\": \"continue\"".into(),
        );
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_one_answer_object_is_an_answer() {
        assert!(parse("{\"decision\":\"continue\"}\n").is_ok());
        assert!(parse("{\"decision\":\"deny\",\"reason\":\"no\"}").is_ok());
        for bad in [
            "",
            "ok",
            "{\"decision\":\"allow\"}",
            "{\"decision\":\"continue\",\"extra\":1}",
            "{\"decision\":\"continue\"}{\"decision\":\"continue\"}",
            "{\"decision\":\"deny\",\"arguments\":{}}",
            "[]",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn post_tool_hooks_and_empty_commands_are_refused_at_load() {
        let spec = |yaml: &str| -> HooksSpec { yaml_serde::from_str(yaml).unwrap() };
        let e = Hooks::new(&spec("post_tool: [{tools: ['*'], command: [x]}]"))
            .err()
            .unwrap();
        assert!(e.contains("not supported"), "{e}");
        let e = Hooks::new(&spec("pre_tool: [{tools: ['*'], command: []}]"))
            .err()
            .unwrap();
        assert!(e.contains("needs a program"), "{e}");
    }
}
