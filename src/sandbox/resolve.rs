//! Path resolution: from a path as the model wrote it to where its effect would really land.
//!
//! The steps, in order:
//!
//! 1. A path holding a NUL byte is refused (no OS call could take it).
//! 2. `~` and `~/…` expand to the home folder, `~user/…` to that user's home.
//! 3. A relative path is taken from the workspace.
//! 4. The *lexical* form folds `.` and `..` without looking at the disk: what the path says.
//! 5. The *resolved* form walks the components the way the kernel does: each symlink is read and
//!    followed (relative to its folder, or from `/` when absolute), `..` climbs from where the
//!    walk really is, at most 40 links are followed (`ELOOP`). Past the first component that does
//!    not exist, the walk stays lexical — until a `..` climbs back into folders that exist, where
//!    links are followed again, as they would be once the missing folders were created.
//!
//! Procfs "magic" links such as `/proc/self/root` are followed by what `readlink` says, which for
//! the ones that matter is a real path (`/`); anything under `/proc` is outside every root anyway.
//! The result is only a judgement aid: execution re-opens the resolved path beneath its root with
//! `openat2`, so a link swapped in after this walk cannot redirect the effect (see `beneath`).

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::fs::Metadata;
use std::io;
use std::path::{Component, Path, PathBuf};

/// At most this many symlinks are followed while resolving one path (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// A path resolved both lexically and physically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// Absolute, `.` and `..` folded as text; symlinks not followed.
    pub lexical: PathBuf,
    /// Absolute, every symlink followed: where the effect lands.
    pub resolved: PathBuf,
    /// Whether the resolved path exists now.
    pub exists: bool,
    /// The symlinks followed on the way, in order (absolute paths of the links themselves).
    pub symlinks: Vec<PathBuf>,
    /// The size in bytes of an existing regular file.
    pub size: Option<u64>,
    /// Whether the resolved path is an existing folder.
    pub folder: bool,
}

/// Why a path could not be resolved. Every one of these fails closed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The path holds a NUL byte.
    #[error("the path contains a NUL byte")]
    Nul,
    /// `~user` names no user on this machine, or no home folder is known.
    #[error("cannot expand {0:?}: no such user or home folder")]
    UnknownHome(String),
    /// More than [`MAX_LINKS`] symlinks.
    #[error("too many levels of symbolic links (a loop?) at {0}")]
    Loop(PathBuf),
    /// The walk could not look at a component (permission denied, I/O error).
    #[error("cannot inspect {path}: {source}")]
    Io {
        /// The component that could not be inspected.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

/// Expands a leading `~` or `~user`. Paths without one are returned unchanged.
pub fn expand_tilde(written: &str, home: Option<&Path>) -> Result<PathBuf, ResolveError> {
    let Some(rest) = written.strip_prefix('~') else {
        return Ok(PathBuf::from(written));
    };
    let (user, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i + 1..].trim_start_matches('/')),
        None => (rest, ""),
    };
    let base = if user.is_empty() {
        home.map(Path::to_path_buf)
            .ok_or_else(|| ResolveError::UnknownHome("~".into()))?
    } else {
        match nix::unistd::User::from_name(user) {
            Ok(Some(u)) => u.dir,
            _ => return Err(ResolveError::UnknownHome(format!("~{user}"))),
        }
    };
    Ok(if tail.is_empty() {
        base
    } else {
        base.join(tail)
    })
}

/// Folds `.` and `..` in an absolute path as text. `..` at `/` stays at `/`, as in the kernel.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// What the walks of one call's paths have seen of the disk: each component is looked at once
/// (`lstat`, `readlink`) however many of the call's paths pass through it — the workspace's own
/// folders, for a start. So one call's paths are resolved against one look at each folder they
/// share, as a single walk would see it; the next call looks again. A look that failed other than
/// by the path not existing is not kept: the next walk looks again, and reports what it sees.
#[derive(Debug, Default)]
pub struct Looks {
    meta: HashMap<PathBuf, Result<Metadata, io::ErrorKind>>,
    links: HashMap<PathBuf, PathBuf>,
}

impl Looks {
    /// `lstat`, once per path.
    fn lstat(&mut self, path: &Path) -> io::Result<Metadata> {
        if let Some(seen) = self.meta.get(path) {
            return seen.clone().map_err(io::Error::from);
        }
        let meta = std::fs::symlink_metadata(path);
        match &meta {
            Ok(m) => {
                self.meta.insert(path.to_path_buf(), Ok(m.clone()));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                self.meta.insert(path.to_path_buf(), Err(e.kind()));
            }
            Err(_) => {}
        }
        meta
    }

    /// `readlink`, once per path.
    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf> {
        if let Some(target) = self.links.get(path) {
            return Ok(target.clone());
        }
        let target = std::fs::read_link(path)?;
        self.links.insert(path.to_path_buf(), target.clone());
        Ok(target)
    }
}

/// Resolves `written` against `base` (the workspace) and `home`. See the module doc.
pub fn resolve(
    written: &str,
    base: &Path,
    home: Option<&Path>,
) -> Result<Resolution, ResolveError> {
    resolve_with(&mut Looks::default(), written, base, home)
}

/// [`resolve`], for one of several paths of a call: what `looks` holds is not looked at again.
pub fn resolve_with(
    looks: &mut Looks,
    written: &str,
    base: &Path,
    home: Option<&Path>,
) -> Result<Resolution, ResolveError> {
    if written.contains('\0') {
        return Err(ResolveError::Nul);
    }
    let expanded = expand_tilde(written, home)?;
    let absolute = if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    };
    let lexical_form = lexical(&absolute);

    let mut queue: VecDeque<OsString> = VecDeque::new();
    push_components(&mut queue, &absolute, false);
    let mut out = PathBuf::from("/");
    let mut depth = 0usize;
    // Depth at which the first missing component was pushed; `None` while everything exists.
    let mut missing_at: Option<usize> = None;
    let mut links = 0usize;
    let mut symlinks = Vec::new();
    // What the last look at the disk found at `out`, while `out` is still that path: an existing
    // path's size comes from it, not from looking again.
    let mut seen: Option<std::fs::Metadata> = None;

    while let Some(name) = queue.pop_front() {
        if name == "." {
            continue;
        }
        seen = None;
        if name == ".." {
            if out.pop() {
                depth -= 1;
            }
            if missing_at.is_some_and(|at| depth < at) {
                missing_at = None;
            }
            continue;
        }
        out.push(&name);
        depth += 1;
        if missing_at.is_some() {
            continue;
        }
        match looks.lstat(&out) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(ResolveError::Loop(out));
                }
                let target = looks.read_link(&out).map_err(|source| ResolveError::Io {
                    path: out.clone(),
                    source,
                })?;
                symlinks.push(out.clone());
                out.pop();
                depth -= 1;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                    depth = 0;
                }
                push_components(&mut queue, &target, true);
            }
            Ok(meta) => {
                // A file in the middle of a path: the kernel says ENOTDIR; nothing below exists.
                if !meta.is_dir() && queue.iter().any(|c| c != ".") {
                    missing_at = Some(depth);
                }
                seen = Some(meta);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                missing_at = Some(depth);
            }
            Err(source) => return Err(ResolveError::Io { path: out, source }),
        }
    }
    let exists = missing_at.is_none();
    let meta = exists
        .then(|| seen.or_else(|| looks.lstat(&out).ok()))
        .flatten();
    let size = meta.as_ref().filter(|m| m.is_file()).map(|m| m.len());
    let folder = meta.as_ref().is_some_and(|m| m.is_dir());
    Ok(Resolution {
        lexical: lexical_form,
        exists,
        resolved: out,
        symlinks,
        size,
        folder,
    })
}

/// The matcher of one component of a shell glob (`**` is `*`: no globstar). Compiling one
/// builds a regular expression; the same components come back call after call (`src/*.rs`), so
/// each thread keeps the last [`GLOB_CACHE`] it compiled — a matcher depends on its text alone.
fn component_glob(component: &str) -> Result<globset::GlobMatcher, String> {
    thread_local! {
        static COMPILED: std::cell::RefCell<HashMap<String, globset::GlobMatcher>> =
            std::cell::RefCell::new(HashMap::new());
    }
    if let Some(glob) = COMPILED.with(|c| c.borrow().get(component).cloned()) {
        return Ok(glob);
    }
    let glob = globset::GlobBuilder::new(&component.replace("**", "*"))
        .literal_separator(true)
        .build()
        .map_err(|e| e.to_string())?
        .compile_matcher();
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= GLOB_CACHE {
            c.clear();
        }
        c.insert(component.to_owned(), glob.clone());
    });
    Ok(glob)
}

/// How many compiled glob components a thread keeps.
const GLOB_CACHE: usize = 64;

/// Expands an unquoted shell glob as bash does by default: `*`, `?` and `[...]` within one
/// component, no match for a leading `.` unless the pattern has one, `**` the same as `*` (no
/// globstar). Relative patterns expand from `base`. Returns the matches as they would be
/// written, sorted; the pattern itself when nothing matches (bash leaves it as it is); an error
/// past `limit` matches.
pub fn expand_glob(
    pattern: &str,
    base: &Path,
    home: Option<&Path>,
    limit: usize,
) -> Result<Vec<String>, String> {
    let expanded = expand_tilde(pattern, home).map_err(|e| e.to_string())?;
    let text = expanded.to_string_lossy().into_owned();
    let absolute = text.starts_with('/');
    // (as written, where on disk)
    let mut current: Vec<(String, PathBuf)> = vec![(
        if absolute { "/".into() } else { String::new() },
        if absolute {
            PathBuf::from("/")
        } else {
            base.to_path_buf()
        },
    )];
    for component in text.split('/').filter(|c| !c.is_empty()) {
        let join = |written: &str, name: &str| {
            if written.is_empty() || written.ends_with('/') {
                format!("{written}{name}")
            } else {
                format!("{written}/{name}")
            }
        };
        if !crate::shell::word::has_glob(component) {
            current = current
                .into_iter()
                .map(|(w, p)| (join(&w, component), p.join(component)))
                .collect();
            continue;
        }
        let glob = component_glob(component)?;
        let mut next = Vec::new();
        for (written, dir) in current {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| (!n.starts_with('.') || component.starts_with('.')) && glob.is_match(n))
                .collect();
            names.sort();
            for name in names {
                next.push((join(&written, &name), dir.join(&name)));
                if next.len() > limit {
                    return Err(format!("{pattern:?} matches more than {limit} paths"));
                }
            }
        }
        current = next;
    }
    let found: Vec<String> = current
        .into_iter()
        .filter(|(_, p)| std::fs::symlink_metadata(p).is_ok())
        .map(|(w, _)| w)
        .collect();
    Ok(if found.is_empty() {
        vec![pattern.to_owned()]
    } else {
        found
    })
}

/// Queues a path's components; `front` puts them before what is already queued (a link's
/// target is walked before the rest of the path).
fn push_components(queue: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir => Some(".".into()),
            Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    if front {
        for name in names.into_iter().rev() {
            queue.push_front(name);
        }
    } else {
        queue.extend(names);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn the_size_is_that_of_the_file_the_path_lands_on() {
        let (_d, root) = ws();
        std::fs::create_dir(root.join("d")).unwrap();
        std::fs::write(root.join("d/f"), "12345").unwrap();
        symlink("d/f", root.join("link")).unwrap();
        symlink("d", root.join("dir")).unwrap();
        // As before the size was taken from the loop's own look at the disk: a second look at
        // the resolved path.
        for written in [
            "d/f",
            "link",
            "dir/f",
            "d/f/.",
            "d/./f/.",
            "d/../d/f",
            "d/f/..",
            "dir/../d/./f",
            "d",
            "dir",
            "d/missing",
            "d/missing/../f",
            "link/..",
        ] {
            let r = resolve(written, &root, None).unwrap();
            let again = r
                .exists
                .then(|| std::fs::symlink_metadata(&r.resolved).ok())
                .flatten()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            assert_eq!(r.size, again, "{written}: {r:?}");
        }
        assert_eq!(resolve("dir/f", &root, None).unwrap().size, Some(5));
        assert_eq!(resolve("d", &root, None).unwrap().size, None);
    }

    /// Issue 12: a call's paths share one look at each component; each resolves as it would
    /// alone.
    #[test]
    fn paths_resolved_together_resolve_as_each_alone() {
        let (_d, root) = ws();
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        std::fs::write(root.join("d/f"), "12345").unwrap();
        symlink("d/f", root.join("link")).unwrap();
        symlink("d", root.join("dir")).unwrap();
        symlink("/etc", root.join("abs")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        symlink("missing/x", root.join("dangling")).unwrap();
        let written = [
            "d/f",
            "link",
            "dir/f",
            "dir/e/../f",
            "abs/passwd",
            "loop1",
            "loop2/x",
            "dangling",
            "dangling/../d",
            "d/f/x",
            "d/missing/../../link",
            "../outside",
            "/etc/hostname",
            "link",
            "dir/f",
            "~/x",
            "d\0x",
        ];
        let home = Some(root.as_path());
        let mut looks = Looks::default();
        for w in written {
            let together = resolve_with(&mut looks, w, &root, home);
            let alone = resolve(w, &root, home);
            assert_eq!(format!("{together:?}"), format!("{alone:?}"), "{w}");
        }
        assert!(matches!(
            resolve("loop1", &root, home),
            Err(ResolveError::Loop(_))
        ));
    }

    #[test]
    fn lexical_folds_dots_and_stops_at_root() {
        assert_eq!(lexical(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(lexical(Path::new("/../../etc")), PathBuf::from("/etc"));
    }

    #[test]
    fn tilde_expands_to_home_and_users() {
        let home = Path::new("/home/me");
        assert_eq!(expand_tilde("~", Some(home)).unwrap(), home);
        assert_eq!(
            expand_tilde("~/.ssh/id", Some(home)).unwrap(),
            home.join(".ssh/id")
        );
        assert_eq!(
            expand_tilde("a/~", Some(home)).unwrap(),
            PathBuf::from("a/~")
        );
        assert_eq!(
            expand_tilde("~root/x", None).unwrap(),
            PathBuf::from("/root/x")
        );
        assert!(expand_tilde("~no-such-user-xyz/x", None).is_err());
        assert!(expand_tilde("~/x", None).is_err());
    }

    #[test]
    fn relative_paths_resolve_inside_the_base() {
        let (_d, root) = ws();
        let r = resolve("a/b.txt", &root, None).unwrap();
        assert_eq!(r.resolved, root.join("a/b.txt"));
        assert!(!r.exists);
    }

    #[test]
    fn symlinked_folder_is_followed() {
        let (_d, root) = ws();
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().canonicalize().unwrap();
        symlink(&out, root.join("link")).unwrap();
        let r = resolve("link/secret", &root, None).unwrap();
        assert_eq!(r.resolved, out.join("secret"));
        assert_eq!(r.lexical, root.join("link/secret"));
        assert_eq!(r.symlinks, vec![root.join("link")]);
    }

    #[test]
    fn dotdot_after_a_link_climbs_from_the_target() {
        let (_d, root) = ws();
        std::fs::create_dir_all(root.join("deep/er")).unwrap();
        symlink("deep/er", root.join("l")).unwrap();
        let r = resolve("l/../x", &root, None).unwrap();
        assert_eq!(r.resolved, root.join("deep/x"));
        assert_eq!(r.lexical, root.join("x"));
    }

    #[test]
    fn links_past_a_missing_folder_are_followed_after_climbing_back() {
        let (_d, root) = ws();
        symlink("/etc", root.join("l")).unwrap();
        let r = resolve("missing/../l/passwd", &root, None).unwrap();
        assert_eq!(r.resolved, PathBuf::from("/etc/passwd"));
    }

    #[test]
    fn loops_are_errors() {
        let (_d, root) = ws();
        symlink("b", root.join("a")).unwrap();
        symlink("a", root.join("b")).unwrap();
        assert!(matches!(
            resolve("a", &root, None),
            Err(ResolveError::Loop(_))
        ));
    }

    #[test]
    fn nul_bytes_are_refused() {
        assert!(matches!(
            resolve("a\0b", Path::new("/"), None),
            Err(ResolveError::Nul)
        ));
    }

    #[test]
    fn globs_expand_like_bash() {
        let (_d, root) = ws();
        for f in ["a.rs", "b.rs", ".hidden.rs", "src/c.rs", "src/d/e.rs"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let g = |p: &str| expand_glob(p, &root, None, 100).unwrap();
        assert_eq!(g("*.rs"), ["a.rs", "b.rs"]);
        assert_eq!(g(".*.rs"), [".hidden.rs"]);
        assert_eq!(g("src/*.rs"), ["src/c.rs"]);
        assert_eq!(g("**/*.rs"), ["src/c.rs"], "no globstar: ** is *");
        assert_eq!(g("*/d/*"), ["src/d/e.rs"]);
        assert_eq!(g("*.none"), ["*.none"], "no match leaves the word as it is");
        assert!(expand_glob("*", &root, None, 2).is_err());
        // Compiled components are kept, and dropped when too many: the answers stay the same.
        for i in 0..GLOB_CACHE + 5 {
            assert_eq!(g(&format!("*.x{i}")), [format!("*.x{i}")]);
        }
        assert_eq!(g("*.rs"), ["a.rs", "b.rs"]);
        assert_eq!(g("src/*.rs"), ["src/c.rs"]);
    }

    #[test]
    fn proc_self_root_resolves_to_the_real_root() {
        let r = resolve("/proc/self/root/etc/hostname", Path::new("/"), None).unwrap();
        assert_eq!(r.resolved, PathBuf::from("/etc/hostname"));
    }
}
