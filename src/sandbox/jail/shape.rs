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
    protected_paths_cached(bases, protected, &WalkCache::default())
}

/// What a walk found in the folders it read, kept for the next walk of the same predicate: a
/// folder whose modification time has not changed since is not read again, nor its entries
/// matched again (a folder's time changes when an entry is made, removed or renamed in it, a
/// link re-pointed included). A folder changed within [`RACY`] of when it was read is read again
/// every time, as git treats a racily clean index entry: its time may not have moved yet.
///
/// On top of that (issue 30: the plan of a call in under 20 µs), from the second walk on every
/// folder a walk reads is watched with inotify (added before the folder is read, so no change
/// after the reading goes unseen): while the kernel reports no entry made, removed or renamed in
/// any of them, nor one of them removed or moved, nor its queue overflowed, the last walk's
/// answer stands and nothing is read at all — not even the folders' times. The first walk
/// watches nothing: a process that walks once (`sandbox exec --read-only`, `hook claude
/// --jail`) makes no inotify instance, whose watches the kernel retires when the process exits,
/// and that exit then waited 7–30 ms on this machine (a read-only `sandbox exec` took 22 ms
/// instead of 10). The second walk reads every folder again, watching each. A walk that met a
/// protected symbolic link (what it stands for is resolved anew each time), a folder it could
/// not read, or a watch it could not add (no inotify, the watch limit) is not kept that way:
/// the next walk reads the times again.
#[derive(Debug, Default)]
pub struct WalkCache {
    state: std::sync::Mutex<Walked>,
}

/// A [`WalkCache`]'s contents.
#[derive(Debug, Default)]
struct Walked {
    folders: std::collections::HashMap<PathBuf, Listed>,
    /// The watches on the folders read.
    watch: Watch,
    /// The bases and the answer of the last walk, while nothing watched has changed.
    last: Option<(Vec<PathBuf>, Vec<PathBuf>)>,
}

/// The inotify instance of a [`WalkCache`].
#[derive(Debug, Default)]
enum Watch {
    /// No walk yet: the first is read without watches.
    #[default]
    First,
    /// One walk done, without watches: the next makes the instance.
    Second,
    On(super::inotify::Inotify),
    /// inotify cannot be had here: every walk reads the folders' times.
    Off,
}

impl Watch {
    fn new() -> Watch {
        super::inotify::Inotify::new().map_or(Watch::Off, Watch::On)
    }

    /// Whether nothing watched has changed since the last look (the queue is emptied).
    fn quiet(&self) -> bool {
        match self {
            Watch::On(inotify) => inotify.quiet(),
            Watch::First | Watch::Second | Watch::Off => false,
        }
    }

    /// Watches `dir`; `false` if it cannot be watched.
    fn add(&self, dir: &Path) -> bool {
        match self {
            Watch::On(inotify) => inotify.watch_folder(dir),
            Watch::First | Watch::Second | Watch::Off => false,
        }
    }
}

/// How close to a folder's own modification time a reading of it is not trusted to stand for
/// it (file times come from a coarse clock).
const RACY: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Debug)]
struct Listed {
    mtime: std::time::SystemTime,
    /// Each entry: its path, whether it is a folder (not a link) and whether it is a link, and
    /// whether the predicate protects it.
    entries: Vec<(PathBuf, bool, bool, bool)>,
}

impl WalkCache {
    /// A cache that reads the folders' times on every walk, as where inotify cannot be had.
    #[cfg(test)]
    fn unwatched() -> WalkCache {
        WalkCache {
            state: std::sync::Mutex::new(Walked {
                watch: Watch::Off,
                ..Walked::default()
            }),
        }
    }
}

/// [`protected_paths`], reusing what `cache` kept of earlier walks with the same predicate
/// (the caller keeps one cache per predicate).
pub fn protected_paths_cached(
    bases: &[PathBuf],
    protected: &dyn Fn(&Path) -> bool,
    cache: &WalkCache,
) -> Vec<PathBuf> {
    let mut state = cache
        .state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let Walked {
        folders,
        watch,
        last,
    } = &mut *state;
    // Nothing of a first walk is kept: the second reads every folder again, watching each.
    let first = matches!(watch, Watch::First);
    match watch {
        Watch::First => *watch = Watch::Second,
        Watch::Second => {
            // Every folder read again, so that each is watched before it is read.
            *watch = Watch::new();
            folders.clear();
        }
        Watch::On(_) | Watch::Off => {}
    }
    // Nothing watched changed since the last walk of the same bases: its answer stands.
    let quiet = watch.quiet();
    match last {
        Some((b, found)) if quiet && b.as_slice() == bases => return found.clone(),
        _ => *last = None,
    }
    // Whether this walk's answer may stand for the next one while nothing watched changes.
    let mut exact = matches!(watch, Watch::On(_));
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
        if first {
            // So no folder's time is read, nor its entries stored (a quarter of a large
            // workspace's first walk, which is all a `sandbox exec` or `hook claude --jail` does).
            if let Some(entries) = listing(&dir, protected) {
                walk_entries(&entries, bases, &mut found, &mut stack);
            }
            continue;
        }
        let Ok(mtime) = std::fs::symlink_metadata(&dir).and_then(|m| m.modified()) else {
            folders.remove(&dir);
            exact = false;
            continue;
        };
        let fresh = folders.get(&dir).is_some_and(|l| l.mtime == mtime);
        if !fresh {
            // Watched before it is read: a change after the reading is reported.
            exact &= watch.add(&dir);
            let read_at = std::time::SystemTime::now();
            let Some(entries) = listing(&dir, protected) else {
                folders.remove(&dir);
                exact = false;
                continue;
            };
            let listed = Listed { mtime, entries };
            // Racily clean: read again next time.
            let racy = read_at
                .duration_since(mtime)
                .map_or(true, |since| since < RACY);
            if racy {
                exact &= walk_entries(&listed.entries, bases, &mut found, &mut stack);
                folders.remove(&dir);
                continue;
            }
            folders.insert(dir.clone(), listed);
        }
        if let Some(listed) = folders.get(&dir) {
            exact &= walk_entries(&listed.entries, bases, &mut found, &mut stack);
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
    if exact {
        *last = Some((bases.to_vec(), outermost.clone()));
    }
    outermost
}

/// The entries of `dir` (see [`Listed::entries`]), or `None` if it cannot be read.
fn listing(
    dir: &Path,
    protected: &dyn Fn(&Path) -> bool,
) -> Option<Vec<(PathBuf, bool, bool, bool)>> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .flatten()
            .filter_map(|e| {
                let kind = e.file_type().ok()?;
                let path = e.path();
                let hit = protected(&path);
                Some((path, kind.is_dir(), kind.is_symlink(), hit))
            })
            .collect(),
    )
}

/// One folder's entries: the protected found (a link by what it points to now), the other
/// folders walked into. `false` when a protected link was among them (what it points to may
/// change without a change to any folder walked).
fn walk_entries(
    entries: &[(PathBuf, bool, bool, bool)],
    bases: &[PathBuf],
    found: &mut Vec<PathBuf>,
    stack: &mut Vec<PathBuf>,
) -> bool {
    let mut no_link = true;
    for (path, dir, link, hit) in entries {
        if *hit {
            if *link {
                no_link = false;
                if let Ok(target) = path.canonicalize()
                    && bases.iter().any(|b| target.starts_with(b))
                {
                    found.push(target);
                }
            } else {
                found.push(path.clone());
            }
        } else if *dir {
            stack.push(path.clone());
        }
    }
    no_link
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

    /// A walk that reuses what it kept finds what one from scratch finds, a new protected file
    /// in a folder it had read among them; folders not changed are not matched again.
    #[test]
    fn a_cached_walk_finds_what_a_fresh_one_finds_and_reads_only_changed_folders() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        old_tree(&ws);
        let matched = std::cell::Cell::new(0usize);
        let protected = counting_env(&matched);
        // The folders' times alone, as where inotify cannot be had.
        let cache = WalkCache::unwatched();
        let bases = [ws.clone()];
        assert_eq!(
            protected_paths_cached(&bases, &protected, &cache),
            [ws.join("a/.env")]
        );
        let first = matched.get();
        assert!(first >= 7, "{first}");
        matched.set(0);
        assert_eq!(
            protected_paths_cached(&bases, &protected, &cache),
            [ws.join("a/.env")]
        );
        assert_eq!(matched.get(), 1, "only the base itself is matched again");
        // A new secret in a folder read before: its time moved, it is read again.
        std::fs::write(ws.join("d/.env"), "k").unwrap();
        assert_eq!(
            protected_paths_cached(&bases, &protected, &cache),
            protected_paths(&bases, &protected)
        );
        assert!(protected_paths_cached(&bases, &protected, &cache).contains(&ws.join("d/.env")));
    }

    /// The predicate of the cached-walk tests: `.env` is protected, and each path it is asked
    /// about is counted in `matched`.
    fn counting_env(matched: &std::cell::Cell<usize>) -> impl Fn(&Path) -> bool + '_ {
        move |p: &Path| {
            matched.set(matched.get() + 1);
            p.file_name().is_some_and(|n| n == ".env")
        }
    }

    /// A workspace of old folders, each with a file, one with a secret.
    fn old_tree(ws: &Path) {
        for f in ["a/b/c.txt", "a/.env", "d/e.txt"] {
            let p = ws.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for d in ["", "a", "a/b", "d"] {
            std::fs::File::open(ws.join(d))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }

    /// Issue 30: while nothing watched changes, a walk reads nothing and matches nothing; a
    /// secret made deep in the tree, a folder holding one moved in from outside, and a secret
    /// renamed into a protected name are each found on the next walk (each change is made
    /// within the same second as the walk before it, where a folder's time alone may not show
    /// it), and one removed is no longer listed.
    #[test]
    fn a_watched_walk_reads_nothing_until_a_folder_changes_and_then_finds_the_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        old_tree(&ws);
        let matched = std::cell::Cell::new(0usize);
        let protected = counting_env(&matched);
        let cache = WalkCache::default();
        let bases = [ws.clone()];
        let walk = || protected_paths_cached(&bases, &protected, &cache);
        // The first walk watches nothing; the second reads and watches every folder.
        assert_eq!(walk(), [ws.join("a/.env")]);
        assert_eq!(walk(), [ws.join("a/.env")]);
        matched.set(0);
        assert_eq!(walk(), [ws.join("a/.env")]);
        assert_eq!(
            matched.get(),
            0,
            "nothing changed: nothing is matched again"
        );

        // The attacks: each change must show on the next walk.
        std::fs::write(ws.join("a/b/.env"), "k").unwrap();
        assert_eq!(walk(), [ws.join("a/.env"), ws.join("a/b/.env")]);
        let outside = root.join("outside");
        std::fs::create_dir_all(outside.join("keys")).unwrap();
        std::fs::write(outside.join("keys/.env"), "k").unwrap();
        std::fs::rename(&outside, ws.join("d/moved")).unwrap();
        assert!(walk().contains(&ws.join("d/moved/keys/.env")));
        std::fs::write(ws.join("d/plain.txt"), "k").unwrap();
        let _ = walk();
        std::fs::rename(ws.join("d/plain.txt"), ws.join("d/.env")).unwrap();
        assert!(walk().contains(&ws.join("d/.env")));
        // The legitimate twin: a secret removed is not covered any more.
        std::fs::remove_file(ws.join("a/.env")).unwrap();
        assert!(!walk().contains(&ws.join("a/.env")));
        assert_eq!(walk(), protected_paths(&bases, &protected));
    }

    /// A walk that met a protected symbolic link is walked again each time: what the link
    /// points to can change without a change to any folder watched.
    #[test]
    fn a_walk_that_met_a_protected_link_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        old_tree(&ws);
        std::fs::create_dir(root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere/x"), ws.join("d/link.env")).unwrap();
        let matched = std::cell::Cell::new(0usize);
        let protected = |p: &Path| {
            matched.set(matched.get() + 1);
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".env"))
        };
        let cache = WalkCache::default();
        let bases = [ws.clone()];
        for _ in 0..2 {
            assert_eq!(
                protected_paths_cached(&bases, &protected, &cache),
                [ws.join("a/.env")]
            );
        }
        matched.set(0);
        let _ = protected_paths_cached(&bases, &protected, &cache);
        assert!(matched.get() >= 1, "walked again");
    }

    /// A process that walks once makes no inotify instance: the kernel retires an instance's
    /// watches when the process exits, and the exit waits for it (7–30 ms here). The second walk
    /// makes one, and watches every folder, read again — even one whose time has not moved.
    #[test]
    fn the_first_walk_watches_nothing_and_the_second_watches_every_folder() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        old_tree(&ws);
        let matched = std::cell::Cell::new(0usize);
        let protected = counting_env(&matched);
        let cache = WalkCache::default();
        let bases = [ws.clone()];
        let walk = || protected_paths_cached(&bases, &protected, &cache);
        let watching = || matches!(cache.state.lock().unwrap().watch, Watch::On(_));
        assert_eq!(walk(), [ws.join("a/.env")]);
        assert!(!watching(), "one walk, no inotify instance");
        let first = matched.get();
        matched.set(0);
        assert_eq!(walk(), [ws.join("a/.env")]);
        assert!(watching(), "the second walk watches");
        assert_eq!(
            matched.get(),
            first,
            "every folder read again, to be watched"
        );
        matched.set(0);
        assert_eq!(walk(), [ws.join("a/.env")]);
        assert_eq!(matched.get(), 0, "the third reads nothing");
    }
}
