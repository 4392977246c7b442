//! The gate as the judge of what a bash writer's run changed ([`crate::effects`], issue 25):
//! each observed change is the call of the file tool that would make it — `write_file {path,
//! content}` (the new content when it is text of at most [`CONTENT_LIMIT`] bytes) or
//! `delete_file {path}` — admitted by the very gate that admitted the command, under the
//! interactive posture so that an `ask` comes back as one; then the command's own admission is
//! weighed, then the posture.
//!
//! # How an observed change relates to the command's own admission
//!
//! 1. A change the gate **denies** — a policy deny, a sandbox refusal (outside every write root,
//!    a host file, plan mode), a fifo or device node — is refused, and the whole run with it.
//!    Nothing waves a deny through.
//! 2. A change the gate **allows** lands.
//! 3. A change the gate **asks** about is the command's own, and lands, when
//!    - only the fallback asked (`defaults.writer`, no rule), and the command runs a program
//!      whose writes the analysis cannot name (`make`, `cargo build`, `python3 x.py`): its
//!      admission — by a rule, the fallback or a person — accepted writes it could not
//!      predict, and that is the decision about writing here. A command whose programs only
//!      read (`git status > out.txt`) writes what its redirections name; anything else its run
//!      changes (a repository's `core.fsmonitor` hook, say) is a surprise, judged on its own;
//!    - it lies at or below a path the command's own admission judged for writing, and every
//!      rule that asks about it asked about that path then (a person approved it): `cp -r x .`
//!      judged `.` for writing, and nothing asked about `.` — a `.git/hooks/` file it brings
//!      still asks;
//!    - it is a program's own bookkeeping ([`crate::effects::bookkeeping`]: git's objects,
//!      refs, logs and index, never its config, hooks or rebase plans) and the command ran that
//!      program.
//!
//!    Otherwise it asks: a person sees every change that asks (interactive); unattended,
//!    `defaults.unattended` decides; strict, it is refused.
//!
//! So an allow rule for `git commit *` commits without a prompt under the default policy
//! (its `.git/objects/…`, `.git/index` and `.git/refs/…` are git's bookkeeping), while a
//! `.git/hooks/` file, `.git/config`, a host file or a denied path the same run wrote is never
//! waved through: the run asks, or is discarded.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Gate, Judgement};
use crate::effects::bookkeeping::Bookkeeping;
use crate::effects::{Change, ChangeJudge, ChangeVerdict, Decision, Judged, Node};
use crate::policy::{Decision as RuleDecision, Posture, Unattended};
use crate::tool::Grant;

/// The most bytes of a changed text file given to the policy as `content`.
pub const CONTENT_LIMIT: u64 = 1 << 20;

/// What of the command's own admission covers its changes.
#[derive(Clone, Debug, Default)]
pub(super) struct Own {
    /// Whether it runs a program that may write what the analysis cannot name (not only
    /// readers, whose writes are their redirections): its admission accepted writes it could
    /// not predict.
    pub unpredictable: bool,
    /// The paths it was admitted to write (resolved).
    pub written: Vec<PathBuf>,
    /// The programs it runs, as the analysis names them.
    pub programs: Vec<String>,
}

/// The judge of a bash call's changes, for the admissions of `gate`.
pub(super) fn change_judge(gate: &Gate, own: Own) -> Arc<dyn ChangeJudge> {
    Arc::new(GateChanges {
        posture: gate.posture,
        asking: gate.with_posture(Posture::Interactive),
        asked: std::sync::Mutex::new(Vec::new()),
        own,
    })
}

struct GateChanges {
    /// The gate, under the interactive posture: an ask comes back as one.
    asking: Gate,
    /// The rules that ask about each path the command's admission judged for writing.
    asked: std::sync::Mutex<Vec<(PathBuf, Vec<String>)>>,
    /// The posture the command was admitted under.
    posture: Posture,
    own: Own,
}

impl ChangeJudge for GateChanges {
    fn judge_changes(&self, changes: Vec<Change>) -> (Vec<Judged>, Decision) {
        let workspace = self.asking.roots().workspace().to_path_buf();
        let judged: Vec<Judged> = changes
            .into_iter()
            .map(|change| self.one(change, &workspace))
            .collect();
        let decision = self.decide(&judged);
        (judged, decision)
    }
}

impl GateChanges {
    fn one(&self, change: Change, workspace: &std::path::Path) -> Judged {
        let shown = match change.path.strip_prefix(workspace) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => change.path.display().to_string(),
        };
        if let Node::Special { what } = change.after {
            return Judged {
                change,
                shown,
                verdict: ChangeVerdict::Deny,
                reasons: vec![format!(
                    "a {what} is never carried into the workspace: fifos and device nodes are refused"
                )],
                rules: Vec::new(),
                grant: None,
            };
        }
        let path = change.path.display().to_string();
        let call = if change.deletes() {
            serde_json::json!({"name": "delete_file", "arguments": {"path": path}})
        } else {
            serde_json::json!({"name": "write_file", "arguments": {"path": path, "content": content(&change)}})
        };
        let judgement = self.asking.admit_derived(&call.to_string());
        let a = judgement.admission();
        let rules: Vec<String> = a.decisive_rules().map(str::to_owned).collect();
        let mut reasons = a.reasons.clone();
        let asking_rules: Vec<String> = a
            .rules
            .iter()
            .filter(|r| r.decision == RuleDecision::Ask && r.decisive)
            .map(|r| r.id.clone())
            .collect();
        let rule_asked = !asking_rules.is_empty();
        let (verdict, grant) = match judgement {
            Judgement::Refused(_) => (ChangeVerdict::Deny, None),
            Judgement::Allowed(admitted) => (ChangeVerdict::Allow, grant_of(admitted)),
            Judgement::Ask(pending) => {
                let grant = grant_of(pending.approve());
                match self.covered(&change, rule_asked, &asking_rules) {
                    Some(why) => {
                        reasons.push(why);
                        (ChangeVerdict::Allow, grant)
                    }
                    None => (ChangeVerdict::Ask, grant),
                }
            }
        };
        Judged {
            change,
            shown,
            verdict,
            reasons,
            rules,
            grant,
        }
    }

    /// Why an asked change is the command's own (see the module doc), if it is.
    fn covered(&self, change: &Change, rule_asked: bool, rules: &[String]) -> Option<String> {
        if !rule_asked && self.own.unpredictable {
            return Some(
                "the command's own: only the fallback asked, and the command was admitted to run programs whose writes the analysis cannot name"
                    .into(),
            );
        }
        if let Some(p) = self.own.written.iter().find(|p| {
            change.path.starts_with(p) && rules.iter().all(|r| self.asked_at(p).contains(r))
        }) {
            return Some(format!(
                "the command's own: its admission judged {} for writing, and every rule that asks now asked there then",
                p.display()
            ));
        }
        Bookkeeping::get()
            .covers(&change.path, self.own.programs.iter().map(String::as_str))
            .map(|row| format!("the command's own: {} ({} ran)", row.why, row.program))
    }

    /// The rules that ask about writing `path` (one the command's admission judged for
    /// writing), as the gate judges a write there: what the person who let the command run was
    /// asked about it, or nothing when the admission allowed it. Judged once per path.
    fn asked_at(&self, path: &std::path::Path) -> Vec<String> {
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, rules)) = asked.iter().find(|(p, _)| p == path) {
            return rules.clone();
        }
        let call =
            serde_json::json!({"name": "write_file", "arguments": {"path": path, "content": ""}});
        let rules: Vec<String> = self
            .asking
            .admit_derived(&call.to_string())
            .admission()
            .rules
            .iter()
            .filter(|r| r.decision == RuleDecision::Ask && r.decisive)
            .map(|r| r.id.clone())
            .collect();
        asked.push((path.to_path_buf(), rules.clone()));
        rules
    }

    /// All the changes together, under the posture.
    fn decide(&self, judged: &[Judged]) -> Decision {
        if let Some(j) = judged.iter().find(|j| j.verdict == ChangeVerdict::Deny) {
            return Decision::Discard {
                why: format!(
                    "it also {} {}, which is refused: {}",
                    j.change.verb(),
                    j.shown,
                    j.reasons.join("; ")
                ),
            };
        }
        let Some(asked) = judged.iter().find(|j| j.verdict == ChangeVerdict::Ask) else {
            return Decision::Commit;
        };
        let ask = |why: String| Decision::Discard {
            why: format!(
                "it also {} {}, which asks, and {why}",
                asked.change.verb(),
                asked.shown
            ),
        };
        match self.posture {
            Posture::Interactive => Decision::Ask,
            Posture::Strict => ask("the strict posture refuses every ask".into()),
            Posture::Unattended => match self.asking.current().policy.defaults().unattended {
                Unattended::Allow => Decision::Commit,
                Unattended::Deny => ask(
                    "nobody can answer under the unattended posture (defaults.unattended: deny)"
                        .into(),
                ),
            },
        }
    }
}

/// The write grant an admitted change call holds.
fn grant_of(admitted: super::Admitted) -> Option<crate::sandbox::WritePath> {
    admitted
        .into_parts()
        .grants
        .into_iter()
        .find_map(|g| match g {
            Grant::Write(w) => Some(w),
            Grant::Read(_) => None,
        })
}

/// The content a changed file is judged with: its text, when it is UTF-8 of at most
/// [`CONTENT_LIMIT`] bytes; else nothing (a file tool could not write it either).
fn content(change: &Change) -> String {
    match (&change.after, &change.source) {
        (Node::File { bytes, .. }, Some(source)) if *bytes <= CONTENT_LIMIT => {
            std::fs::read(source)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default()
        }
        _ => String::new(),
    }
}
