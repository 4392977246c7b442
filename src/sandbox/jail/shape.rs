//! What one run of a plan gets beyond the plan itself, from the admission of the call it runs
//! (issue 25): the analysis predicts, the jail enforces the prediction.
//!
//! - **Writes** ([`Writes`]): a call admitted as read-only (the analysis vouches it changes
//!   nothing: no `write` or `delete` effect, no program it does not know) runs
//!   with the workspace and every write root read-only — a command that writes anyway gets
//!   `EROFS` and changes nothing. A call admitted to write runs with each write root as an
//!   overlay in its own mount namespace: what it changes lands in an upper layer of the run's
//!   own, which Reasonix reads once every process of the run is gone
//!   ([`super::RunResult::observed`]) and which lands in the workspace only after each change is
//!   judged ([`crate::effects`]). Writing in place, as before, is left for what asks for it
//!   (`reasonix sandbox exec` without `--observe`), for `best_effort` where no overlay can be
//!   made, and for the `sandbox.passthrough` folders inside an overlay.
//! - **Hidden** ([`protected_paths`]): each path a deny or ask rule protects from reading that
//!   exists in the workspace, the write roots or the read roots when the run starts is covered
//!   by an empty file or folder in the run's mount namespace, the way the system's secrets are.
//!   The walk runs only when the policy has such a rule: a workspace without one pays nothing.
//!
//! The jail module knows nothing of policy: the caller (the bash tool, `sandbox exec`) says what
//! is protected, as a predicate on paths.

use std::path::{Path, PathBuf};

/// How a run may change the write roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// Not at all: the call was admitted as read-only. The write roots are read-only in the
    /// run's mount namespace (only its TMPDIR and private HOME can be written).
    None,
    /// Through an overlay of each write root, observed and judged before anything lands.
    Observed,
    /// In place, unobserved: the plan's write roots as they are.
    Direct,
}

impl Writes {
    /// The shape of a call that may change something (`writes`: it was not admitted as
    /// read-only) — observed — or may not — read-only.
    pub fn for_effects(writes: bool) -> Writes {
        if writes {
            Writes::Observed
        } else {
            Writes::None
        }
    }
}

/// One run's shape: how it may write, and what it must not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// How it may change the write roots.
    pub writes: Writes,
    /// Paths to cover with an empty file or folder (canonical, existing when the run starts,
    /// none inside another).
    pub hidden: Vec<PathBuf>,
}

impl Shape {
    /// Writing in place, nothing hidden beyond the plan's own secrets: the shape of a command
    /// no call's admission describes (`sandbox exec` without `--observe`).
    pub fn direct() -> Shape {
        Shape {
            writes: Writes::Direct,
            hidden: Vec::new(),
        }
    }

    /// Read-only, nothing hidden beyond the plan's own secrets (hooks, plan mode's servers).
    pub fn read_only() -> Shape {
        Shape {
            writes: Writes::None,
            hidden: Vec::new(),
        }
    }
}

/// The paths below `bases` that `protected` names, as they are now: a protected folder is
/// taken whole (not walked into); a symlink that is protected stands for what it points to, if
/// that lies below a base too (covering a mount target follows the link; what a link points to
/// outside the bases is judged by its own path wherever it is read); a dangling one for
/// nothing. Symlinks are never followed while walking. Canonical, sorted, none inside another.
pub fn protected_paths(bases: &[PathBuf], protected: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut stack: Vec<PathBuf> = Vec::new();
    for base in bases {
        if protected(base) {
            found.push(base.clone());
        } else {
            stack.push(base.clone());
        }
    }
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if protected(&path) {
                if kind.is_symlink() {
                    if let Ok(target) = path.canonicalize()
                        && bases.iter().any(|b| target.starts_with(b))
                    {
                        found.push(target);
                    }
                } else {
                    found.push(path);
                }
            } else if kind.is_dir() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found.dedup();
    let mut outermost: Vec<PathBuf> = Vec::with_capacity(found.len());
    for p in found {
        if !outermost.iter().any(|o| p.starts_with(o)) {
            outermost.push(p);
        }
    }
    outermost
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_paths_are_found_whole_links_stand_for_their_targets_and_nothing_else_is() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        let outside = dir.path().canonicalize().unwrap().join("outside");
        for f in [
            "ws/.env",
            "ws/app/.env",
            "ws/keys/a/b.pem",
            "ws/src/main.rs",
            "ws/real.txt",
            "outside/secret.txt",
        ] {
            let p = dir.path().canonicalize().unwrap().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        // A protected name pointing at an ordinary file inside, one pointing outside, one
        // dangling.
        std::os::unix::fs::symlink(ws.join("real.txt"), ws.join("link.env")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("out.env")).unwrap();
        std::os::unix::fs::symlink(ws.join("nothing"), ws.join("gone.env")).unwrap();
        let protected = |p: &Path| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".env") || name == "keys"
        };
        let found = protected_paths(std::slice::from_ref(&ws), &protected);
        assert_eq!(
            found,
            [
                ws.join(".env"),
                ws.join("app/.env"),
                ws.join("keys"),
                ws.join("real.txt"),
            ]
        );
        // The legitimate twin: nothing protected, nothing found.
        assert!(protected_paths(std::slice::from_ref(&ws), &|_| false).is_empty());
    }
}
