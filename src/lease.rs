//! Write leases: the `lease` stage, taken only after permission, so a blocked or waiting call
//! never holds one.
//!
//! - A read-only call shares the workspace.
//! - A file writer shares the workspace and holds each path it changes exclusively — both ends
//!   of a move. Paths are locked in sorted order, so two writers never wait on each other.
//! - A bash call that is not read-only holds the workspace exclusively: nothing else runs
//!   beside it.
//!
//! Leases are shared between sessions through an `Arc<Leases>`, so two agents in one workspace
//! serialize their conflicting writes too. Across processes (two `reasonix run`, `mcp serve`
//! and `sandbox exec` on one workspace; issue 28, item 8), a manager made for a workspace
//! ([`Leases::for_workspace`]) takes the same locks again as advisory file locks (`flock`)
//! under the workspace's `.reasonix/leases/`: `workspace.lock` shared or exclusive, and one
//! lock file per written path, named by the sha256 of the path. A lock held by a process that
//! dies is released by the kernel with its descriptors: nothing is left to clean up but the
//! empty lock files themselves.
//!
//! The lease travels with the call: an [`Admitted`] becomes a [`Leased`] only by taking its
//! lease ([`Admitted::lease`]), and only a [`Leased`] can execute (`crate::execute`). So no code
//! path runs a call without holding what it needs, and a call holds nothing before it is
//! admitted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::gate::{Admission, Admitted, Parts};
use crate::vocab::Access;
use tokio::sync::{OwnedMutexGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// What a call needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "paths")]
pub enum Need {
    /// Reading: the workspace, shared.
    Shared,
    /// Writing these paths: each exclusively, the workspace shared.
    Paths(Vec<PathBuf>),
    /// Anything at all: the workspace exclusively.
    Workspace,
}

/// The lease manager of a workspace.
#[derive(Default)]
pub struct Leases {
    workspace: Arc<RwLock<()>>,
    paths: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    /// The workspace whose `.reasonix/leases/` holds the cross-process lock files (`None`:
    /// this process only).
    dir: Option<PathBuf>,
}

/// The folder of a workspace's lock files.
pub const LOCK_DIR: &str = ".reasonix/leases";

/// How long a lease waits between two tries of a lock another process holds.
const RETRY: std::time::Duration = std::time::Duration::from_millis(2);

enum Hold {
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

/// A held lease; released on drop.
pub struct Lease {
    /// What is held.
    pub need: Need,
    _workspace: Hold,
    _paths: Vec<OwnedMutexGuard<()>>,
    /// The lock files held across processes (unlocked when closed, on drop).
    _files: Vec<std::fs::File>,
}

/// Why a lease could not be taken across processes. The call is refused (it never runs on a
/// lease that holds within this process only, issue 28): the message says what is wrong and
/// what to do.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot take the write lease: {what} ({source}). Nothing ran. Reasonix locks what a call writes under {dir}, so that another reasonix on this workspace cannot overwrite its edits; make {dir} a writable folder (a real folder, not a symbolic link or a file) and try again"
)]
pub struct LeaseError {
    what: String,
    dir: String,
    #[source]
    source: std::io::Error,
}

/// Opens (making it if missing) the folder `name` inside `parent`, never through a symbolic
/// link: a link or a file planted there by the workspace is refused (`O_NOFOLLOW`,
/// `O_DIRECTORY`), so a lock is never made elsewhere.
fn open_dir_at(parent: &std::os::fd::OwnedFd, name: &str) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::{Mode, mkdirat};
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match openat(parent, name, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(nix::errno::Errno::ENOENT) => {
            match mkdirat(parent, name, Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
                Err(e) => return Err(e.into()),
            }
            Ok(openat(parent, name, flags, Mode::empty())?)
        }
        Err(e) => Err(e.into()),
    }
}

/// Opens the lock file `name` in the lock folder `dir` (made if missing, never truncated),
/// never through a symbolic link, and only if it is a plain file with no other name (a hard
/// link planted at the lock path could name a file elsewhere).
fn open_lock_at(dir: &std::os::fd::OwnedFd, name: &str) -> std::io::Result<std::fs::File> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::{Mode, SFlag, fstat};
    let flags = OFlag::O_RDWR
        | OFlag::O_CREAT
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_CLOEXEC;
    let fd = openat(dir, name, flags, Mode::from_bits_truncate(0o644))?;
    let stat = fstat(&fd)?;
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
        return Err(std::io::Error::other("the lock path is not a plain file"));
    }
    if stat.st_nlink != 1 {
        return Err(std::io::Error::other(
            "the lock file has another name (a hard link)",
        ));
    }
    Ok(std::fs::File::from(fd))
}

/// Takes an advisory lock on `file`, shared or exclusive, waiting for other processes without
/// blocking the runtime's thread.
async fn lock_file(file: std::fs::File, exclusive: bool) -> std::io::Result<std::fs::File> {
    loop {
        let tried = if exclusive {
            file.try_lock()
        } else {
            file.try_lock_shared()
        };
        match tried {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => tokio::time::sleep(RETRY).await,
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

impl Leases {
    /// A manager with nothing held, for this process only.
    pub fn new() -> Arc<Leases> {
        Arc::new(Leases::default())
    }

    /// A manager for the workspace `workspace` whose leases hold across processes too: each
    /// lock is taken again as an advisory file lock under `.reasonix/leases/` (see the module
    /// doc). The folder is opened (and made) at each lease, never through a symbolic link;
    /// where it cannot be, the lease is refused ([`LeaseError`]), never taken within this
    /// process only.
    pub fn for_workspace(workspace: &Path) -> Arc<Leases> {
        Arc::new(Leases {
            dir: Some(workspace.to_path_buf()),
            ..Leases::default()
        })
    }

    /// The cross-process locks a need takes, in order: the workspace's, then each path's (by
    /// name in the lock folder, with whether it is exclusive).
    fn lock_files(need: &Need) -> Vec<(String, bool)> {
        let workspace = ("workspace.lock".to_owned(), *need == Need::Workspace);
        let mut files = vec![workspace];
        if let Need::Paths(paths) = need {
            let mut names: Vec<String> = paths
                .iter()
                .map(|p| {
                    use sha2::Digest;
                    let digest = sha2::Sha256::digest(p.as_os_str().as_encoded_bytes());
                    let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                    format!("{name}.lock")
                })
                .collect();
            names.sort();
            names.dedup();
            files.extend(names.into_iter().map(|n| (n, true)));
        }
        files
    }

    /// Takes the cross-process locks of `need` in the workspace `workspace`.
    async fn lock_across(workspace: &Path, need: &Need) -> Result<Vec<std::fs::File>, LeaseError> {
        use nix::fcntl::{OFlag, open};
        use nix::sys::stat::Mode;
        let shown = workspace.join(LOCK_DIR);
        let fail = |what: String| {
            let dir = shown.display().to_string();
            move |source: std::io::Error| LeaseError { what, dir, source }
        };
        let root = open(
            workspace,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(std::io::Error::from)
        .map_err(fail(format!(
            "the workspace {} cannot be opened",
            workspace.display()
        )))?;
        let (top, leaf) = LOCK_DIR.split_once('/').unwrap_or((LOCK_DIR, ""));
        let parent = open_dir_at(&root, top).map_err(fail(format!(
            "the folder {} cannot be opened or made",
            workspace.join(top).display()
        )))?;
        let dir = open_dir_at(&parent, leaf).map_err(fail(format!(
            "the lock folder {} cannot be opened or made",
            shown.display()
        )))?;
        let mut held = Vec::new();
        for (name, exclusive) in Self::lock_files(need) {
            let what = || {
                format!(
                    "the lock file {} cannot be taken",
                    shown.join(&name).display()
                )
            };
            let file = open_lock_at(&dir, &name).map_err(fail(what()))?;
            held.push(lock_file(file, exclusive).await.map_err(fail(what()))?);
        }
        Ok(held)
    }

    fn path_lock(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = match self.paths.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        Arc::clone(map.entry(path.to_path_buf()).or_default())
    }

    /// Waits until the need can be met, within this process and (a manager made for a
    /// workspace) across processes, then holds it.
    ///
    /// # Errors
    ///
    /// A manager made for a workspace whose lock folder or a lock file cannot be opened, made
    /// or locked (not "it is held": that waits): the call must not run ([`LeaseError`]).
    pub async fn acquire(&self, need: Need) -> Result<Lease, LeaseError> {
        let mut lease = self.acquire_here(need).await;
        if let Some(workspace) = &self.dir {
            lease._files = Self::lock_across(workspace, &lease.need).await?;
        }
        Ok(lease)
    }

    /// The lease within this process.
    async fn acquire_here(&self, need: Need) -> Lease {
        match &need {
            Need::Workspace => {
                let guard = Arc::clone(&self.workspace).write_owned().await;
                Lease {
                    need,
                    _workspace: Hold::Exclusive(guard),
                    _paths: Vec::new(),
                    _files: Vec::new(),
                }
            }
            Need::Shared => {
                let guard = Arc::clone(&self.workspace).read_owned().await;
                Lease {
                    need,
                    _workspace: Hold::Shared(guard),
                    _paths: Vec::new(),
                    _files: Vec::new(),
                }
            }
            Need::Paths(paths) => {
                let guard = Arc::clone(&self.workspace).read_owned().await;
                let mut sorted = paths.clone();
                sorted.sort();
                sorted.dedup();
                let mut held = Vec::with_capacity(sorted.len());
                for p in &sorted {
                    held.push(self.path_lock(p).lock_owned().await);
                }
                Lease {
                    need,
                    _workspace: Hold::Shared(guard),
                    _paths: held,
                    _files: Vec::new(),
                }
            }
        }
    }
}

/// The lease an admitted call needs: shared for a read-only call, the workspace for a bash
/// command that may change things, each written path for a file writer.
pub fn need(admission: &Admission) -> Need {
    if admission.read_only == Some(true) {
        return Need::Shared;
    }
    if admission.bash.is_some() {
        return Need::Workspace;
    }
    let paths: Vec<PathBuf> = admission
        .paths
        .iter()
        .filter(|p| p.access == Access::Write)
        .filter_map(|p| p.path.as_ref().map(PathBuf::from))
        .collect();
    Need::Paths(paths)
}

/// An admitted call holding its lease: the only thing that can execute (`Leased::execute`).
/// The execute stage reads its fields; only [`Admitted::lease`] makes one (`_sealed` is private
/// to this module, so a `Leased { .. }` literal compiles nowhere else).
pub struct Leased {
    pub(crate) parts: Parts,
    pub(crate) lease: Lease,
    _sealed: (),
}

impl Leased {
    /// What the gate concluded.
    pub fn admission(&self) -> &Admission {
        &self.parts.admission
    }

    /// What is held.
    pub fn need(&self) -> &Need {
        &self.lease.need
    }
}

impl Admitted {
    /// The lease this call will take.
    pub fn need(&self) -> Need {
        need(self.admission())
    }

    /// Waits for the call's lease and holds it: the call may now execute.
    ///
    /// # Errors
    ///
    /// The lease cannot be taken across processes ([`Leases::acquire`]): the call is refused.
    pub async fn lease(self, leases: &Leases) -> Result<Leased, LeaseError> {
        let lease = leases.acquire(self.need()).await?;
        Ok(Leased {
            parts: self.into_parts(),
            lease,
            _sealed: (),
        })
    }

    /// [`Admitted::lease`] for code that is not async (tests, a CLI without a runtime). It must
    /// not be called from inside an async runtime.
    pub fn lease_blocking(self, leases: &Leases) -> std::io::Result<Leased> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        runtime
            .block_on(self.lease(leases))
            .map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn writers_of_one_path_wait_for_each_other_and_readers_share() {
        let leases = Leases::new();
        let a = leases
            .acquire(Need::Paths(vec!["/ws/f".into()]))
            .await
            .unwrap();
        let l2 = Arc::clone(&leases);
        let waiting =
            tokio::spawn(
                async move { l2.acquire(Need::Paths(vec!["/ws/f".into()])).await.unwrap() },
            );
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a second writer of the path waits");
        // Another path and a reader do not wait.
        let _b = leases
            .acquire(Need::Paths(vec!["/ws/g".into()]))
            .await
            .unwrap();
        let _r = leases.acquire(Need::Shared).await.unwrap();
        drop(a);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .unwrap()
            .unwrap();
    }

    /// Issue 28, item 8: a manager made for a workspace holds its leases against another
    /// manager of the same workspace — another process, as far as the locks can tell (a second
    /// manager shares no in-process lock with the first) — and a path it does not hold, or a
    /// manager of another workspace, does not wait.
    #[tokio::test]
    async fn leases_for_one_workspace_hold_across_managers_as_across_processes() {
        let ws = tempfile::tempdir().unwrap();
        let one = Leases::for_workspace(ws.path());
        let other = Leases::for_workspace(ws.path());
        let f = ws.path().join("f");
        let held = one.acquire(Need::Paths(vec![f.clone()])).await.unwrap();
        let waiting = {
            let other = Arc::clone(&other);
            let f = f.clone();
            tokio::spawn(async move { other.acquire(Need::Paths(vec![f])).await.unwrap() })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a writer of the same path waits");
        let g = other
            .acquire(Need::Paths(vec![ws.path().join("g")]))
            .await
            .unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let _e = Leases::for_workspace(elsewhere.path())
            .acquire(Need::Workspace)
            .await
            .unwrap();
        drop(g);
        drop(held);
        let second = tokio::time::timeout(Duration::from_secs(2), waiting)
            .await
            .unwrap()
            .unwrap();
        // The workspace lease of one waits for the other's path writer, and excludes readers.
        let excl = {
            let one = Arc::clone(&one);
            tokio::spawn(async move { one.acquire(Need::Workspace).await.unwrap() })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !excl.is_finished(),
            "the workspace lease waits for a writer elsewhere"
        );
        drop(second);
        let _ws = tokio::time::timeout(Duration::from_secs(2), excl)
            .await
            .unwrap()
            .unwrap();
        let reader = {
            let other = Arc::clone(&other);
            tokio::spawn(async move { other.acquire(Need::Shared).await.unwrap() })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !reader.is_finished(),
            "a reader elsewhere waits for the workspace lease"
        );
    }

    #[tokio::test]
    async fn the_workspace_lease_excludes_everything() {
        let leases = Leases::new();
        let ws = leases.acquire(Need::Workspace).await.unwrap();
        let l2 = Arc::clone(&leases);
        let reader = tokio::spawn(async move { l2.acquire(Need::Shared).await.unwrap() });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!reader.is_finished());
        drop(ws);
        tokio::time::timeout(Duration::from_secs(1), reader)
            .await
            .unwrap()
            .unwrap();
    }

    /// The refusals of item 1 (issue 28, second round): each planted shape at the lock
    /// folder or a lock path, and what each would have made Reasonix do elsewhere.
    fn refused(ws: &Path, need: Need) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        match rt.block_on(Leases::for_workspace(ws).acquire(need)) {
            Ok(_) => panic!("the lease was taken"),
            Err(e) => e.to_string(),
        }
    }

    fn lock_name(path: &Path) -> String {
        Leases::lock_files(&Need::Paths(vec![path.to_path_buf()]))[1]
            .0
            .clone()
    }

    #[test]
    fn a_file_where_the_state_folder_should_be_refuses_the_lease() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join(".reasonix"), "x").unwrap();
        let why = refused(ws.path(), Need::Paths(vec![ws.path().join("f")]));
        assert!(why.contains("cannot take the write lease"), "{why}");
        assert!(why.contains("Nothing ran"), "{why}");
        assert!(why.contains("make "), "says what to do: {why}");
    }

    #[test]
    fn a_file_where_the_lock_folder_should_be_refuses_the_lease() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".reasonix")).unwrap();
        std::fs::write(ws.path().join(LOCK_DIR), "x").unwrap();
        let why = refused(ws.path(), Need::Shared);
        assert!(why.contains("lock folder"), "{why}");
    }

    #[test]
    fn a_symlinked_state_or_lock_folder_is_not_followed() {
        for planted in [".reasonix", LOCK_DIR] {
            let ws = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            if planted == LOCK_DIR {
                std::fs::create_dir(ws.path().join(".reasonix")).unwrap();
            }
            std::os::unix::fs::symlink(outside.path(), ws.path().join(planted)).unwrap();
            let why = refused(ws.path(), Need::Paths(vec![ws.path().join("f")]));
            assert!(why.contains("cannot be opened or made"), "{planted}: {why}");
            assert_eq!(
                std::fs::read_dir(outside.path()).unwrap().count(),
                0,
                "{planted}: nothing was made through the link"
            );
        }
    }

    #[test]
    fn a_symlink_planted_at_a_lock_path_creates_and_truncates_nothing_elsewhere() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let dir = ws.path().join(LOCK_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let f = ws.path().join("f");
        // A link to a file that does not exist yet (O_CREAT would make it) and one to a file
        // with content (a truncating open would empty it).
        let missing = outside.path().join("made");
        std::os::unix::fs::symlink(&missing, dir.join(lock_name(&f))).unwrap();
        let why = refused(ws.path(), Need::Paths(vec![f.clone()]));
        assert!(why.contains("lock file"), "{why}");
        assert!(!missing.exists(), "no file was made through the link");
        let kept = outside.path().join("kept");
        std::fs::write(&kept, "precious").unwrap();
        std::fs::remove_file(dir.join(lock_name(&f))).unwrap();
        std::os::unix::fs::symlink(&kept, dir.join(lock_name(&f))).unwrap();
        refused(ws.path(), Need::Paths(vec![f]));
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "precious");
        // The workspace's own lock too.
        let ws2 = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws2.path().join(LOCK_DIR)).unwrap();
        std::os::unix::fs::symlink(&kept, ws2.path().join(LOCK_DIR).join("workspace.lock"))
            .unwrap();
        refused(ws2.path(), Need::Workspace);
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "precious");
    }

    #[test]
    fn a_hard_link_fifo_or_folder_at_a_lock_path_refuses_the_lease() {
        let f = PathBuf::from("/ws/f");
        let outside = tempfile::tempdir().unwrap();
        let kept = outside.path().join("kept");
        std::fs::write(&kept, "precious").unwrap();
        type Plant<'a> = (&'a str, &'a dyn Fn(&Path));
        let plant: [Plant; 3] = [
            ("hard link", &|at| {
                if std::fs::hard_link(&kept, at).is_err() {
                    // Another filesystem: a hard link to a file inside the workspace instead.
                    std::fs::write(at.with_extension("other"), "x").unwrap();
                    std::fs::hard_link(at.with_extension("other"), at).unwrap();
                }
            }),
            ("fifo", &|at| {
                nix::unistd::mkfifo(at, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap()
            }),
            ("folder", &|at| std::fs::create_dir(at).unwrap()),
        ];
        for (what, plant) in plant {
            let ws = tempfile::tempdir().unwrap();
            let dir = ws.path().join(LOCK_DIR);
            std::fs::create_dir_all(&dir).unwrap();
            plant(&dir.join(lock_name(&f)));
            let why = refused(ws.path(), Need::Paths(vec![f.clone()]));
            assert!(why.contains("lock file"), "{what}: {why}");
        }
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "precious");
    }

    /// The legitimate twin: a fresh workspace gets a real lock folder and plain lock files,
    /// and a second lease over the folder already made works as well.
    #[tokio::test]
    async fn a_workspace_with_a_real_lock_folder_takes_its_leases() {
        let ws = tempfile::tempdir().unwrap();
        let f = ws.path().join("f");
        let leases = Leases::for_workspace(ws.path());
        drop(leases.acquire(Need::Paths(vec![f.clone()])).await.unwrap());
        let dir = ws.path().join(LOCK_DIR);
        assert!(std::fs::symlink_metadata(&dir).unwrap().is_dir());
        let lock = dir.join(lock_name(&f));
        assert!(std::fs::symlink_metadata(&lock).unwrap().is_file());
        let _again = leases.acquire(Need::Paths(vec![f])).await.unwrap();
        let _other = leases.acquire(Need::Shared).await.unwrap();
    }
}
