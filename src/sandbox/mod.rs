//! In-process path confinement for the file tools: the `sandbox` stage of the admission path.
//!
//! Every path a call touches is resolved ([`resolve`]) and must then lie inside an allowed root
//! *by path components*: `/ws-evil` is not inside `/ws`. The workspace is the root for reads and
//! writes; more roots can be configured (`read_roots` may only be read). The root itself may be
//! listed or searched but never written, renamed or removed.
//!
//! What the gate admits, the tools then do through [`ConfinedPath`], which re-opens the path
//! beneath its root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`: the kernel, not this
//! code, guarantees that a symlink swapped in after admission cannot redirect the effect.
//!
//! # Test strategy
//! `tests/it/paths.rs` runs the built binary over a temporary workspace with real symlinks: escapes
//! through `..`, absolute paths, symlinked folders and files, dangling links, `/proc/self/root`
//! and sibling prefixes must be denied at stage `sandbox`, and the legitimate forms must pass.
//! `tests/it/race.rs` swaps a folder for a symlink between admission and execution.

mod beneath;
pub mod jail;
mod jail_plan;
pub mod resolve;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::vocab::{Access, PathRequest, PathRole};
pub use beneath::{ConfinedPath, Staged, WritePath};
pub use jail_plan::SharedJailPlan;
pub use resolve::{Resolution, ResolveError};

/// Most paths one shell glob may expand to before the call is treated as unresolvable.
pub const MAX_GLOB: usize = 256;

/// The folders a session's file tools may reach.
#[derive(Clone, Debug)]
pub struct Roots {
    workspace: PathBuf,
    home: Option<PathBuf>,
    write: Vec<PathBuf>,
    read: Vec<PathBuf>,
}

/// Why the roots could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("workspace {path}: {source}")]
pub struct RootsError {
    path: PathBuf,
    source: std::io::Error,
}

impl Roots {
    /// The workspace as the only root; it must exist. It is canonicalized once, here.
    pub fn new(workspace: &Path) -> Result<Roots, RootsError> {
        let canonical = workspace.canonicalize().map_err(|source| RootsError {
            path: workspace.to_path_buf(),
            source,
        })?;
        if !canonical.is_dir() {
            return Err(RootsError {
                path: workspace.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a folder"),
            });
        }
        Ok(Roots {
            workspace: canonical,
            home: home_dir(),
            write: Vec::new(),
            read: Vec::new(),
        })
    }

    /// Adds roots: folders file tools may also write (and read), and folders they may only
    /// read. Folders that do not exist are left out; the others are canonicalized.
    pub fn with(mut self, write: &[PathBuf], read: &[PathBuf]) -> Roots {
        let canonical = |p: &PathBuf| p.canonicalize().ok().filter(|c| c.is_dir());
        self.write.extend(write.iter().filter_map(canonical));
        self.read.extend(read.iter().filter_map(canonical));
        self
    }

    /// The workspace, canonical.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Every root with what it allows, the workspace first.
    pub fn all(&self) -> impl Iterator<Item = (&Path, Access)> {
        std::iter::once(self.workspace.as_path())
            .chain(self.write.iter().map(PathBuf::as_path))
            .map(|p| (p, Access::Write))
            .chain(self.read.iter().map(|p| (p.as_path(), Access::Read)))
    }

    /// The home folder `~` expands to, if any.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Resolves every requested path. A shell glob is expanded against the disk the way bash
    /// would; one that matches nothing stays as written, as in bash.
    pub fn touch_all(&self, requests: &[PathRequest]) -> Vec<TouchedPath> {
        // One look at each folder the call's paths share ([`resolve::Looks`]).
        let mut looks = resolve::Looks::default();
        let mut out = Vec::with_capacity(requests.len());
        for request in requests {
            if !request.pattern {
                out.push(self.touch_with(&mut looks, request));
                continue;
            }
            match resolve::expand_glob(&request.written, &self.workspace, self.home(), MAX_GLOB) {
                Ok(found) => {
                    for written in found {
                        out.push(self.touch_with(
                            &mut looks,
                            &PathRequest {
                                written,
                                pattern: false,
                                ..request.clone()
                            },
                        ));
                    }
                }
                Err(e) => {
                    let mut t = self.touch_with(&mut looks, request);
                    t.resolution = None;
                    t.placement = Err(format!("cannot expand the glob: {e}"));
                    out.push(t);
                }
            }
        }
        out
    }

    /// Resolves one requested path and decides whether it is inside a root it may use.
    pub fn touch(&self, request: &PathRequest) -> TouchedPath {
        self.touch_with(&mut resolve::Looks::default(), request)
    }

    /// [`Roots::touch`], for one of several paths of a call.
    fn touch_with(&self, looks: &mut resolve::Looks, request: &PathRequest) -> TouchedPath {
        let resolution =
            resolve::resolve_with(looks, &request.written, &self.workspace, self.home());
        let (resolution, placement) = match resolution {
            Ok(r) => {
                let placement = self.place(&r.resolved, request.access);
                (Some(r), placement)
            }
            Err(e) => (None, Err(format!("cannot resolve the path: {e}"))),
        };
        TouchedPath {
            written: request.written.clone(),
            role: request.role,
            access: request.access,
            inside_workspace: resolution
                .as_ref()
                .is_some_and(|r| r.resolved.starts_with(&self.workspace)),
            resolution,
            placement,
        }
    }

    /// Finds the root holding `resolved` that allows `access`.
    fn place(&self, resolved: &Path, access: Access) -> Result<ConfinedPath, String> {
        let writable = std::iter::once(&self.workspace).chain(&self.write);
        let readable = self.read.iter();
        let candidates: Vec<&PathBuf> = match access {
            Access::Write => writable.collect(),
            Access::Read => writable.chain(readable).collect(),
        };
        for root in candidates {
            // `starts_with` compares whole components: `/ws-evil` is not under `/ws`.
            if let Ok(rel) = resolved.strip_prefix(root) {
                if access == Access::Write && rel.as_os_str().is_empty() {
                    return Err(format!(
                        "{} is a root folder itself; it cannot be written, moved or removed",
                        root.display()
                    ));
                }
                return Ok(ConfinedPath::new(
                    root.clone(),
                    rel.to_path_buf(),
                    *root == self.workspace,
                ));
            }
        }
        let what = match access {
            Access::Write => "writable root",
            Access::Read => "allowed root",
        };
        Err(format!(
            "{} is outside the workspace {} and every other {what}",
            resolved.display(),
            self.workspace.display()
        ))
    }
}

/// The home folder: `$HOME`, else the passwd entry of the current user.
fn home_dir() -> Option<PathBuf> {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => Some(PathBuf::from(h)),
        _ => nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .map(|u| u.dir),
    }
}

/// A path a call touches, resolved and placed: what policy judges and the verdict shows.
#[derive(Clone, Debug)]
pub struct TouchedPath {
    /// As the model wrote it.
    pub written: String,
    /// Its role in the call.
    pub role: PathRole,
    /// Read or write.
    pub access: Access,
    /// True when the resolved path is inside the workspace.
    pub inside_workspace: bool,
    /// Both forms of the path; `None` when it could not be resolved.
    pub resolution: Option<Resolution>,
    /// The confined path, or why it is refused.
    pub placement: Result<ConfinedPath, String>,
}

impl TouchedPath {
    /// The forms a policy `paths:` glob is matched against: the resolved path, the lexical
    /// path as written, and each symlink passed through on the way.
    pub fn forms(&self) -> Vec<&Path> {
        let Some(r) = &self.resolution else {
            return Vec::new();
        };
        let mut forms = vec![r.resolved.as_path()];
        if r.lexical != r.resolved {
            forms.push(r.lexical.as_path());
        }
        for link in &r.symlinks {
            if !forms.contains(&link.as_path()) {
                forms.push(link);
            }
        }
        forms
    }

    /// The serializable view shown in verdicts and given to policies.
    pub fn view(&self) -> PathView {
        let r = self.resolution.as_ref();
        PathView {
            path: r.map(|r| r.resolved.display().to_string()),
            written: self.written.clone(),
            role: self.role,
            access: self.access,
            inside_workspace: self.inside_workspace,
            exists: r.is_some_and(|r| r.exists),
            symlinks: r
                .map(|r| r.symlinks.iter().map(|l| l.display().to_string()).collect())
                .unwrap_or_default(),
            size: r.and_then(|r| r.size),
        }
    }
}

/// A touched path as shown in verdicts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathView {
    /// Resolved, absolute; `null` when the path could not be resolved.
    pub path: Option<String>,
    /// As the model wrote it.
    pub written: String,
    /// `target`, `source`, `destination` or `redirect`.
    pub role: PathRole,
    /// `read` or `write`.
    pub access: Access,
    /// Whether the resolved path lies inside the workspace.
    pub inside_workspace: bool,
    /// Whether it exists now.
    pub exists: bool,
    /// Symlinks followed to reach it.
    pub symlinks: Vec<String>,
    /// The size in bytes of an existing regular file; `null` otherwise.
    pub size: Option<u64>,
}
