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
    /// Where the cross-process lock files are (`None`: this process only).
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

/// Takes an advisory lock on `path` (made if missing), shared or exclusive, waiting for other
/// processes without blocking the runtime's thread.
async fn lock_file(path: &Path, exclusive: bool) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)?;
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
    /// doc). Where that folder cannot be made, the leases hold within this process only, and
    /// the error says why.
    ///
    /// # Errors
    ///
    /// The folder could not be made.
    pub fn for_workspace(workspace: &Path) -> std::io::Result<Arc<Leases>> {
        let dir = workspace.join(LOCK_DIR);
        std::fs::create_dir_all(&dir)?;
        Ok(Arc::new(Leases {
            dir: Some(dir),
            ..Leases::default()
        }))
    }

    /// The cross-process locks a need takes, in order: the workspace's, then each path's.
    fn lock_files(&self, need: &Need) -> Vec<(PathBuf, bool)> {
        let Some(dir) = &self.dir else {
            return Vec::new();
        };
        let workspace = (dir.join("workspace.lock"), *need == Need::Workspace);
        let mut files = vec![workspace];
        if let Need::Paths(paths) = need {
            let mut names: Vec<PathBuf> = paths
                .iter()
                .map(|p| {
                    use sha2::Digest;
                    let digest = sha2::Sha256::digest(p.as_os_str().as_encoded_bytes());
                    let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                    dir.join(format!("{name}.lock"))
                })
                .collect();
            names.sort();
            names.dedup();
            files.extend(names.into_iter().map(|n| (n, true)));
        }
        files
    }

    fn path_lock(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = match self.paths.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        Arc::clone(map.entry(path.to_path_buf()).or_default())
    }

    /// Waits until the need can be met, within this process and (a manager made for a
    /// workspace) across processes, then holds it. A lock file that cannot be opened or locked
    /// (not "it is held": that waits) is logged, and the lease holds within this process only.
    pub async fn acquire(&self, need: Need) -> Lease {
        let files = self.lock_files(&need);
        let mut lease = self.acquire_here(need).await;
        for (path, exclusive) in files {
            match lock_file(&path, exclusive).await {
                Ok(file) => lease._files.push(file),
                Err(e) => tracing::warn!(
                    "cannot take the lease lock {}: {e}; this lease holds within this process only",
                    path.display()
                ),
            }
        }
        lease
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
    pub async fn lease(self, leases: &Leases) -> Leased {
        let lease = leases.acquire(self.need()).await;
        Leased {
            parts: self.into_parts(),
            lease,
            _sealed: (),
        }
    }

    /// [`Admitted::lease`] for code that is not async (tests, a CLI without a runtime). It must
    /// not be called from inside an async runtime.
    pub fn lease_blocking(self, leases: &Leases) -> std::io::Result<Leased> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        Ok(runtime.block_on(self.lease(leases)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn writers_of_one_path_wait_for_each_other_and_readers_share() {
        let leases = Leases::new();
        let a = leases.acquire(Need::Paths(vec!["/ws/f".into()])).await;
        let l2 = Arc::clone(&leases);
        let waiting =
            tokio::spawn(async move { l2.acquire(Need::Paths(vec!["/ws/f".into()])).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a second writer of the path waits");
        // Another path and a reader do not wait.
        let _b = leases.acquire(Need::Paths(vec!["/ws/g".into()])).await;
        let _r = leases.acquire(Need::Shared).await;
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
        let one = Leases::for_workspace(ws.path()).unwrap();
        let other = Leases::for_workspace(ws.path()).unwrap();
        let f = ws.path().join("f");
        let held = one.acquire(Need::Paths(vec![f.clone()])).await;
        let waiting = {
            let other = Arc::clone(&other);
            let f = f.clone();
            tokio::spawn(async move { other.acquire(Need::Paths(vec![f])).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a writer of the same path waits");
        let g = other.acquire(Need::Paths(vec![ws.path().join("g")])).await;
        let elsewhere = tempfile::tempdir().unwrap();
        let _e = Leases::for_workspace(elsewhere.path())
            .unwrap()
            .acquire(Need::Workspace)
            .await;
        drop(g);
        drop(held);
        let second = tokio::time::timeout(Duration::from_secs(2), waiting)
            .await
            .unwrap()
            .unwrap();
        // The workspace lease of one waits for the other's path writer, and excludes readers.
        let excl = {
            let one = Arc::clone(&one);
            tokio::spawn(async move { one.acquire(Need::Workspace).await })
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
            tokio::spawn(async move { other.acquire(Need::Shared).await })
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
        let ws = leases.acquire(Need::Workspace).await;
        let l2 = Arc::clone(&leases);
        let reader = tokio::spawn(async move { l2.acquire(Need::Shared).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!reader.is_finished());
        drop(ws);
        tokio::time::timeout(Duration::from_secs(1), reader)
            .await
            .unwrap()
            .unwrap();
    }
}
