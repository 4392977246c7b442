//! Pre-tool hooks: the `hooks` stage of the admission path, the gate's last (stage 10 of
//! [`crate::gate`]): a gate built with hooks ([`crate::gate::GateBuilder::hooks`]) runs them inside
//! every [`Gate::admit`], after its approve stage and before any lease or process, so no entry
//! point can judge a call without them. A hook can only **narrow**.
//! Post-tool hooks: after a call has ended, they see it and may add a note for the model; they
//! cannot change what happened.
//!
//! ```yaml
//! hooks:                       # in reasonix.yaml
//!   pre_tool:
//!     - tools: ["bash", "mcp__*"]        # globs on the resolved tool name
//!       command: ["python3", "hooks/check.py"]
//!       timeout_ms: 5000                  # default 5000
//!   post_tool:
//!     - tools: ["*"]
//!       command: ["./hooks/audit.sh"]
//! ```
//!
//! # Post-tool protocol
//!
//! A post-tool hook runs on every call of a run whose (resolved) tool name it matches, once
//! the call has ended — ran, failed, was blocked or invalid — and before its tool message goes
//! to the model. It reads `{"call": {"id", "name", "arguments"}, "outcome": "succeeded" |
//! "failed" | "blocked" | "invalid", "exit_code": int | null, "result": str}` (`result`: the
//! text the model is told, bounded as the model gets it) and answers `{}` or `{"note": str}`.
//! A note (at most 2 KiB kept) is appended to the tool message, marked as the hook's. A hook
//! that fails (exits non-zero, crashes, times out, answers anything else) is recorded with why
//! on the call's line (`post_tool`) and changes nothing else; nor does a note change the
//! outcome, the record's result digest or anything the gate decided. `reasonix check` runs no
//! post-tool hook: nothing ran.
//!
//! # Pre-tool protocol
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

use crate::sandbox::jail::{JailPlan, Shape};

/// Default limit on one hook run.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);

/// The `hooks:` section of `reasonix.yaml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HooksSpec {
    /// Run after admission, before the lease.
    #[serde(default)]
    pub pre_tool: Vec<HookSpec>,
    /// Run after the call has ended.
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

/// One hook, checked.
pub(crate) struct Hook {
    name: String,
    tools: GlobSet,
    command: Vec<String>,
    timeout: Duration,
}

/// The pre- and post-tool hooks of a session, checked. Immutable.
pub struct Hooks {
    pre: Vec<Hook>,
    post: Vec<Hook>,
}

/// The longest note of a post-tool hook that is kept.
const NOTE_KEPT: usize = 2048;

/// One post-tool hook that ran on a call, for the record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PostToolRan {
    /// Which hook (`hooks.post_tool[N]`).
    pub hook: String,
    /// Its note, as appended to the tool message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why it failed, when it did; the call's outcome is what it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// What a post-tool hook is shown of an ended call.
pub struct Ended<'a> {
    /// The call's id.
    pub id: &'a str,
    /// The resolved tool name.
    pub name: &'a str,
    /// Its arguments, as proposed.
    pub arguments: Value,
    /// `succeeded`, `failed`, `blocked` or `invalid`.
    pub outcome: &'a str,
    /// A process's exit status.
    pub exit_code: Option<i32>,
    /// The text the model is told, bounded.
    pub result: &'a str,
}

impl Hooks {
    /// Checks the section: every glob compiles, every command has a program. Hooks run under
    /// the judging gate's [`Gate::hooks_jail`].
    pub fn new(spec: &HooksSpec) -> Result<Hooks, String> {
        Ok(Hooks {
            pre: checked("pre_tool", &spec.pre_tool)?,
            post: checked("post_tool", &spec.post_tool)?,
        })
    }

    /// Whether there is no hook at all.
    pub fn is_empty(&self) -> bool {
        self.pre.is_empty() && self.post.is_empty()
    }

    /// Whether some pre-tool hook matches `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        self.pre.iter().any(|h| h.tools.is_match(tool))
    }

    /// Runs the post-tool hooks that match `ended.name`, in order, under `plan` (the gate's
    /// [`hooks_jail`](crate::Gate::hooks_jail): read-only) with `shape` (what its policy
    /// protects from reading covered); see the module doc. Returns each hook's note or failure.
    pub fn post_tool(&self, plan: &JailPlan, shape: &Shape, ended: &Ended<'_>) -> Vec<PostToolRan> {
        let matching: Vec<&Hook> = self
            .post
            .iter()
            .filter(|h| h.tools.is_match(ended.name))
            .collect();
        if matching.is_empty() {
            return Vec::new();
        }
        let stdin = json!({
            "call": {"id": ended.id, "name": ended.name, "arguments": ended.arguments},
            "outcome": ended.outcome,
            "exit_code": ended.exit_code,
            "result": ended.result,
        });
        matching
            .into_iter()
            .map(|hook| {
                let answer = process::run(plan, shape, &hook.command, &stdin, hook.timeout)
                    .and_then(|out| parse_post(&out));
                match answer {
                    Ok(note) => PostToolRan {
                        hook: hook.name.clone(),
                        note: note.map(|n| {
                            let n = crate::text::visible(n.trim()).into_owned();
                            crate::text::shorten(&n, NOTE_KEPT, crate::text::Keep::Head)
                                .into_owned()
                        }),
                        failure: None,
                    },
                    Err(why) => PostToolRan {
                        hook: hook.name.clone(),
                        note: None,
                        failure: Some(format!("{} ({}) failed: {why}", hook.name, hook.command[0])),
                    },
                }
            })
            .collect()
    }

    /// The pre-tool hooks that match `tool`, in the order written (the gate's hooks stage,
    /// `gate::pre_tool`, runs them).
    pub(crate) fn pre_matching<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a Hook> {
        self.pre.iter().filter(move |h| h.tools.is_match(tool))
    }
}

impl Hook {
    /// Which hook it is (`hooks.pre_tool[N]`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Its program, as written.
    pub(crate) fn program(&self) -> &str {
        &self.command[0]
    }

    /// Runs it on `stdin` under `plan` and `shape`, and reads its one answer; `Err` says why
    /// there is none (the call is then blocked).
    pub(crate) fn ask(
        &self,
        plan: &JailPlan,
        shape: &Shape,
        stdin: &Value,
    ) -> Result<Answer, String> {
        process::run(plan, shape, &self.command, stdin, self.timeout).and_then(|out| parse(&out))
    }
}

/// One list of hooks (`pre_tool` or `post_tool`), checked.
fn checked(list: &str, specs: &[HookSpec]) -> Result<Vec<Hook>, String> {
    let mut out = Vec::new();
    for (i, h) in specs.iter().enumerate() {
        let name = format!("hooks.{list}[{i}]");
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
        out.push(Hook {
            name,
            tools: set.build().map_err(|e| e.to_string())?,
            command: h.command.clone(),
            timeout: h.timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis),
        });
    }
    Ok(out)
}

/// A post-tool hook's stdout as its answer: its note, if any.
fn parse_post(stdout: &str) -> Result<Option<String>, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PostAnswer {
        note: Option<String>,
    }
    let answer: PostAnswer = serde_json::from_str(stdout.trim()).map_err(|e| {
        format!(
            "its output is not one answer object {{\"note\"?: str}} ({e}): {:?}",
            crate::text::shorten(stdout.trim(), 200, crate::text::Keep::Head)
        )
    })?;
    Ok(answer.note)
}

/// What a pre-tool hook decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Decision {
    Continue,
    Deny,
    Ask,
}

/// A pre-tool hook's one answer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    pub decision: Decision,
    pub reason: Option<String>,
    pub arguments: Option<Map<String, Value>>,
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
    fn post_tool_hooks_load_and_empty_commands_are_refused_at_load() {
        let spec = |yaml: &str| -> HooksSpec { yaml_serde::from_str(yaml).unwrap() };
        let hooks = Hooks::new(&spec("post_tool: [{tools: ['*'], command: [x]}]")).unwrap();
        assert!(!hooks.is_empty() && !hooks.matches("bash"), "post only");
        for (yaml, says) in [
            (
                "pre_tool: [{tools: ['*'], command: []}]",
                "hooks.pre_tool[0]: `command` needs a program",
            ),
            (
                "post_tool: [{tools: [], command: [x]}]",
                "hooks.post_tool[0]: `tools` is empty",
            ),
        ] {
            let e = Hooks::new(&spec(yaml)).err().unwrap();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_post_tool_answer_is_an_object_with_at_most_a_note() {
        assert_eq!(parse_post("{}"), Ok(None));
        assert_eq!(parse_post("{\"note\": \"n\"}\n"), Ok(Some("n".into())));
        for bad in [
            "",
            "note",
            "{\"note\": 1}",
            "{\"decision\": \"deny\"}",
            "[]",
        ] {
            assert!(parse_post(bad).is_err(), "{bad:?}");
        }
    }
}
