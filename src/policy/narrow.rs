//! What a policy file nobody trusts may still say: its **narrowing** part. A repository's own
//! policy files (those its `reasonix.yaml` names) are written by whoever wrote the repository,
//! not by the user; until the user trusts a file's exact content (`reasonix trust`,
//! [`crate::settings::trust`]), only what can make the gate stricter is kept. This runs while
//! the policies load, before any workspace is known; the loader (`load.rs`) asks per file
//! whether it is trusted ([`Trust`]).
//!
//! | part | kept untrusted | why |
//! |---|---|---|
//! | a `deny` or `ask` rule (with its `except:`) | yes | a rule that refuses or asks only narrows; its except only narrows what the rule itself adds |
//! | an `allow` rule | no | it lets calls run that nothing else allowed |
//! | `defaults.read_only`, `defaults.writer` | only when at least as strict as the built-in value | the strictest value of all files wins, so a stricter one only narrows; a looser one would win where no other file sets the key |
//! | `defaults.unattended` | only `deny` | `allow` runs what nobody approved |
//! | `sandbox.bash` | only `enforce` | the strictest mode wins, so `enforce` only narrows; `off` or `best_effort` would win where no other file sets it |
//! | `sandbox.write_roots`, `read_roots`, `network` | no | each entry grants the jail more of the machine |
//! | `sandbox.limits` | yes | the smallest limit wins: a file can only lower one |
//! | `mcp.classify` | no | a declaration replaces the undeclared default (exec and network, never read-only), so it could make an MCP tool read-only |
//! | a Rego module | its `deny` and `ask` votes | evaluated by an engine of its own, apart from the trusted modules (it cannot define what they read), and its `allow` votes are dropped |
//! | a data document | only to the untrusted Rego modules | a trusted module never reads what an untrusted file wrote |
//!
//! Every row is tested in this file (`each_row_of_the_table_*`).

use std::path::Path;

use super::yaml::{PolicyFile, Unattended};
use super::{Decision, Defaults};
use crate::sandbox::jail::config::Enforcement;

/// Whether a policy or data file's widening parts count, asked by the loader once per file.
pub trait Trust {
    /// Before the file is read: `Err(why)` leaves it out unread (a file nobody trusts that lies
    /// outside the workspace is never read: its text could end up in an error message).
    fn readable(&self, path: &Path) -> Result<(), String>;
    /// Once it is read: whether all of it counts (`false`: only its narrowing part).
    fn trusted(&self, path: &Path, text: &str) -> bool;
}

/// Every file counts whole: a file the user named (`--policy`, their own settings).
pub struct Trusted;

impl Trust for Trusted {
    fn readable(&self, _: &Path) -> Result<(), String> {
        Ok(())
    }
    fn trusted(&self, _: &Path, _: &str) -> bool {
        true
    }
}

/// What was left out of a policy file nobody trusts, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// The file.
    pub file: String,
    /// The part (`rules[2] (id allow-all)`, `defaults.writer`, `sandbox.network`, …).
    pub part: String,
    /// Why it cannot count untrusted.
    pub why: String,
}

/// The narrowing part of a parsed YAML policy file, and what was left out of it.
pub(super) fn yaml(name: &str, mut file: PolicyFile) -> (PolicyFile, Vec<LeftOut>) {
    let mut out = Vec::new();
    let mut left = |part: String, why: &str| {
        out.push(LeftOut {
            file: name.to_owned(),
            part,
            why: why.to_owned(),
        })
    };
    let mut kept = Vec::new();
    for (i, rule) in std::mem::take(&mut file.rules).into_iter().enumerate() {
        if rule.decision == Decision::Allow {
            let id = rule
                .id
                .as_ref()
                .map(|id| format!(" ({})", id.0))
                .unwrap_or_default();
            left(
                format!("rules[{i}]{id}"),
                "an allow rule lets calls run that nothing else allowed",
            );
        } else {
            kept.push(rule);
        }
    }
    file.rules = kept;
    let builtin = Defaults::default();
    if file
        .defaults
        .read_only
        .is_some_and(|d| d < builtin.read_only)
    {
        file.defaults.read_only = None;
        left(
            "defaults.read_only".into(),
            "looser than the built-in value",
        );
    }
    if file.defaults.writer.is_some_and(|d| d < builtin.writer) {
        left(
            format!(
                "defaults.writer: {}",
                file.defaults.writer.map_or("", Decision::as_str)
            ),
            "looser than the built-in `ask`: calls that change things would run unasked",
        );
        file.defaults.writer = None;
    }
    if file.defaults.unattended == Some(Unattended::Allow) {
        file.defaults.unattended = None;
        left(
            "defaults.unattended: allow".into(),
            "an ask would run with nobody asked",
        );
    }
    if let Some(sandbox) = &mut file.sandbox {
        if sandbox.bash.is_some_and(|m| m < Enforcement::Enforce) {
            left(
                format!(
                    "sandbox.bash: {}",
                    sandbox.bash.map_or("", Enforcement::as_str)
                ),
                "weakens the jail every command runs in",
            );
            sandbox.bash = None;
        }
        for (field, list) in [
            ("write_roots", &mut sandbox.write_roots),
            ("read_roots", &mut sandbox.read_roots),
        ] {
            for root in std::mem::take(list) {
                left(
                    format!("sandbox.{field}: {root}"),
                    "grants the jail and the file tools a folder outside the workspace",
                );
            }
        }
        for rule in std::mem::take(&mut sandbox.network) {
            left(
                format!("sandbox.network: {rule}"),
                "lets jailed commands connect there",
            );
        }
    }
    if let Some(mcp) = file.mcp.take()
        && !mcp.classify.is_empty()
    {
        left(
            "mcp.classify".into(),
            "declares what MCP tools do, and could make one read-only",
        );
    }
    (file, out)
}

#[cfg(test)]
mod tests {
    use super::super::yaml::parse;
    use super::*;

    fn narrowed(text: &str) -> (PolicyFile, Vec<String>) {
        let (file, out) = yaml("p.yaml", parse(text).unwrap());
        (file, out.into_iter().map(|l| l.part).collect())
    }

    #[test]
    fn each_row_of_the_table_deny_and_ask_rules_stay_allow_rules_go() {
        let (file, out) = narrowed(
            "version: 1\nrules:\n  - {id: d, decision: deny, paths: [x], except: {paths: [y]}}\n  - {id: a, decision: ask, tools: [bash]}\n  - {id: all, decision: allow}\n  - {decision: allow, tools: [read_file]}\n",
        );
        let kept: Vec<Decision> = file.rules.iter().map(|r| r.decision).collect();
        assert_eq!(kept, [Decision::Deny, Decision::Ask]);
        assert!(file.rules[0].except.is_some(), "a deny keeps its except");
        assert_eq!(out, ["rules[2] (all)", "rules[3]"]);
    }

    #[test]
    fn each_row_of_the_table_defaults_stay_only_when_as_strict_as_the_builtin() {
        let (file, out) = narrowed(
            "version: 1\ndefaults: {read_only: allow, writer: allow, unattended: allow}\n",
        );
        assert_eq!(file.defaults.read_only, Some(Decision::Allow), "= built-in");
        assert_eq!(file.defaults.writer, None);
        assert_eq!(file.defaults.unattended, None);
        assert_eq!(
            out,
            ["defaults.writer: allow", "defaults.unattended: allow"]
        );
        // The legitimate twin: stricter values stay.
        let (file, out) =
            narrowed("version: 1\ndefaults: {read_only: ask, writer: deny, unattended: deny}\n");
        assert_eq!(file.defaults.read_only, Some(Decision::Ask));
        assert_eq!(file.defaults.writer, Some(Decision::Deny));
        assert_eq!(file.defaults.unattended, Some(Unattended::Deny));
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn each_row_of_the_table_the_sandbox_keeps_enforce_and_limits_only() {
        let (file, out) = narrowed(
            "version: 1\nsandbox:\n  bash: off\n  write_roots: [/etc]\n  read_roots: ['~/.ssh']\n  network: ['evil.example:443']\n  limits: {timeout_ms: 10}\n",
        );
        let s = file.sandbox.unwrap();
        assert_eq!(s.bash, None);
        assert!(s.write_roots.is_empty() && s.read_roots.is_empty() && s.network.is_empty());
        assert_eq!(s.limits.timeout_ms, Some(10), "a lower limit stays");
        assert_eq!(
            out,
            [
                "sandbox.bash: off",
                "sandbox.write_roots: /etc",
                "sandbox.read_roots: ~/.ssh",
                "sandbox.network: evil.example:443"
            ]
        );
        let (file, out) = narrowed("version: 1\nsandbox: {bash: enforce}\n");
        assert_eq!(file.sandbox.unwrap().bash, Some(Enforcement::Enforce));
        assert!(out.is_empty());
        let (_, out) = narrowed("version: 1\nsandbox: {bash: best_effort}\n");
        assert_eq!(out, ["sandbox.bash: best_effort"]);
    }

    #[test]
    fn each_row_of_the_table_mcp_declarations_go() {
        let (file, out) = narrowed(
            "version: 1\nmcp:\n  classify:\n    - {tools: ['mcp__x__*'], effects: [read]}\n",
        );
        assert!(file.mcp.is_none());
        assert_eq!(out, ["mcp.classify"]);
    }
}
