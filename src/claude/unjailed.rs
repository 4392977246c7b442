//! What Claude Code's own tools do not do that Reasonix's do, and what the hook does instead. A
//! call admitted by the gate is safe in Reasonix partly because of **how Reasonix's tool runs
//! it**; Claude runs its own tool, so the adapter must not lean on that part. After the gate
//! (and the pre-tool hooks) have judged a mapped call, [`correct`] narrows what relied on it.
//!
//! | Claude tool | what Reasonix's tool adds beyond admission | the adapter |
//! |---|---|---|
//! | `Bash` (without `--jail`) | the jail: a read-only world, the host's files bound read-only, no network but through the egress proxy, an environment without the user's keys, a PID namespace; it is what contains a repository's makefile, package scripts, `conftest.py`, and what keeps `printenv` from reading API keys | no fallback allows a command (a `read_only: allow` fallback rests on the jail): it asks, and under `unattended`/`strict` it is denied; a command an allow rule names keeps its allow (the user named it, and it runs unjailed) |
//! | `mcp__*` | the server runs in the jail | nothing: what the tool does is the policy's own declaration (`mcp.classify`), not an analysis resting on the jail; under Claude the server runs unjailed, so declare a tool read-only only if you trust the server to keep to it |
//! | `Grep`, `Glob` | a search withholds every file a deny or ask rule protects, as it walks | a search whose folder holds such a file (among those its `glob`/`pattern` could reach) is denied (a deny rule) or asked (an ask rule); a folder too large to walk here asks |
//! | `WebFetch` | the egress proxy refuses loopback, private, link-local and metadata addresses, whatever the name resolves to | a host that is, or resolves to, such an address is denied unless a `sandbox.network` entry allowed it (Claude resolves the name again itself: a name that changes its answer is not caught) |
//! | `Read`, `Write`, `Edit`, `MultiEdit`, `NotebookEdit`, `LS` | each path re-opened beneath the workspace with `openat2(RESOLVE_BENEATH \| RESOLVE_NO_SYMLINKS)`, writes atomic | nothing: admission resolved every symlink as it stood; a link swapped between the hook and Claude's tool is not caught |
//! | any, through a pre-tool hook | a hook's replacement arguments are what runs | Claude runs its own input: a replaced call is denied |

use std::net::ToSocketAddrs;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use serde_json::{Map, Value};

use crate::gate::{Admission, Gate, Stage, Verdict};
use crate::policy::{Decision, Posture};

/// The most folder entries a search's folder is walked for; past it the search asks.
pub const MAX_WALKED: usize = 100_000;

/// `admission` (of the mapped call with these `arguments`) narrowed where it rested on how
/// Reasonix's own tool runs; see the module doc. `bash_jailed`: Claude runs Bash in Reasonix's
/// jail (`hook claude --jail`), so a bash call needs no narrowing.
pub fn correct(
    gate: &Gate,
    arguments: &Map<String, Value>,
    admission: Admission,
    bash_jailed: bool,
) -> Admission {
    if !matches!(admission.verdict, Verdict::Allow | Verdict::Ask) {
        return admission;
    }
    if admission.replaced_arguments.is_some() {
        return narrowed(
            admission,
            Decision::Deny,
            Stage::Hook,
            "a pre-tool hook replaced the call's arguments, and Claude Code runs its own input, not the replacement: blocked".into(),
        );
    }
    let tool = admission.tool.clone().unwrap_or_default();
    let admission = match tool.as_str() {
        "grep" | "glob" => searched(gate, &tool, arguments, admission),
        crate::claude::tools::NETWORK_CONNECT => fetched(arguments, admission),
        _ => admission,
    };
    if tool == "bash"
        && !bash_jailed
        && admission.verdict == Verdict::Allow
        && admission.fallback.is_some()
    {
        let why = "Claude Code runs this command outside Reasonix's jail, and only a fallback allowed it (no rule names it); the fallback rests on the jail (a repository's scripts contained, your environment's keys out of reach), so a person decides".to_owned();
        return narrowed(admission, Decision::Ask, Stage::Policy, why);
    }
    admission
}

/// `admission` made a deny or an ask (never widened), with `why` first.
fn narrowed(mut a: Admission, to: Decision, stage: Stage, why: String) -> Admission {
    let verdict = match to {
        Decision::Deny => Verdict::Deny,
        _ if a.posture != Posture::Interactive => {
            a.reasons.insert(
                0,
                format!(
                    "{why}; nobody can answer under the {} posture, so it is denied",
                    a.posture.as_str()
                ),
            );
            a.verdict = Verdict::Deny;
            a.stage = stage;
            return a;
        }
        _ if a.verdict == Verdict::Ask => {
            a.reasons.push(why);
            return a;
        }
        _ => Verdict::Ask,
    };
    a.verdict = verdict;
    a.stage = stage;
    a.reasons.insert(0, why);
    for r in &mut a.rules {
        r.decisive = false;
    }
    a
}

/// A glob of Claude's search, or `None` when it may match any file (none given, a negation,
/// or one that does not compile: judged as matching everything).
fn matcher(pattern: Option<&str>) -> Option<GlobMatcher> {
    let p = pattern?;
    if p.starts_with('!') || p.is_empty() {
        return None;
    }
    GlobBuilder::new(p)
        .literal_separator(false)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Grep and Glob: the folder searched, walked for a file a deny or ask rule protects.
fn searched(
    gate: &Gate,
    tool: &str,
    arguments: &Map<String, Value>,
    admission: Admission,
) -> Admission {
    let Some(folder) = admission
        .paths
        .iter()
        .find_map(|p| p.path.as_deref())
        .map(std::path::PathBuf::from)
    else {
        return admission;
    };
    if !folder.is_dir() {
        return admission;
    }
    let filter = match &arguments.get(if tool == "glob" { "pattern" } else { "glob" }) {
        Some(Value::String(p)) => matcher(Some(p)),
        _ => None,
    };
    let effects = admission.effects.iter().copied().collect();
    let protecting = gate.withholding(tool, &effects);
    let mut seen = 0usize;
    let mut found: Option<(String, String, Decision)> = None;
    let walk = ignore::WalkBuilder::new(&folder)
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .build();
    for entry in walk {
        let Ok(entry) = entry else { continue };
        seen += 1;
        if seen > MAX_WALKED {
            return narrowed(
                admission,
                Decision::Ask,
                Stage::Policy,
                format!(
                    "Claude Code's {} withholds nothing, and {} holds more than {MAX_WALKED} entries to check for files a rule protects: a person decides",
                    if tool == "glob" { "Glob" } else { "Grep" },
                    folder.display()
                ),
            );
        }
        let path = entry.path();
        let rel = path.strip_prefix(&folder).unwrap_or(path);
        // Matched as relative to the folder, by name, and whole (an absolute Glob pattern).
        if let Some(m) = &filter
            && !m.is_match(rel)
            && !m.is_match(path)
            && !rel.file_name().is_some_and(|n| m.is_match(Path::new(n)))
        {
            continue;
        }
        if let Some((id, decision)) = protecting.protects(path) {
            let stronger = found.as_ref().is_none_or(|(_, _, d)| decision > *d);
            if stronger {
                found = Some((path.display().to_string(), id.to_owned(), decision));
            }
            if decision == Decision::Deny {
                break;
            }
        }
    }
    match found {
        Some((path, id, decision)) => narrowed(
            admission,
            decision,
            Stage::Policy,
            format!(
                "{} searches {}, which holds {} that rule {id} protects, and Claude Code's {} withholds nothing (Reasonix's own would skip it)",
                if tool == "glob" { "Glob" } else { "Grep" },
                crate::text::visible(&folder.display().to_string()),
                crate::text::visible(&path),
                if tool == "glob" { "Glob" } else { "Grep" },
            ),
        ),
        None => admission,
    }
}

/// WebFetch: a host that is, or resolves to, an address the egress proxy refuses.
fn fetched(arguments: &Map<String, Value>, admission: Admission) -> Admission {
    let Some(host) = arguments.get("host").and_then(Value::as_str) else {
        return admission;
    };
    let port = arguments
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(443);
    if admission
        .rules
        .iter()
        .any(|r| r.decisive && r.id == "sandbox.network")
    {
        return admission;
    }
    let special = match crate::egress::hosts::ip_literal(host) {
        Some(ip) => crate::egress::address::special(ip).map(|w| (ip, w)),
        None => (host, port)
            .to_socket_addrs()
            .ok()
            .into_iter()
            .flatten()
            .find_map(|a| crate::egress::address::special(a.ip()).map(|w| (a.ip(), w))),
    };
    match special {
        Some((ip, what)) => narrowed(
            admission,
            Decision::Deny,
            Stage::Sandbox,
            format!(
                "{} is {ip}, a {what}: Reasonix's egress proxy refuses it unless a sandbox.network entry names it, and Claude Code's WebFetch would reach it",
                crate::text::visible(host)
            ),
        ),
        None => admission,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_glob_that_negates_or_does_not_compile_matches_everything() {
        assert!(matcher(None).is_none());
        assert!(matcher(Some("!*.rs")).is_none());
        assert!(matcher(Some("[")).is_none());
        let m = matcher(Some("*.rs")).unwrap();
        assert!(m.is_match("src/main.rs") && !m.is_match(".env"));
    }
}
