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
//! serialize their conflicting writes too.
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
}

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
}

impl Leases {
    /// A manager with nothing held.
    pub fn new() -> Arc<Leases> {
        Arc::new(Leases::default())
    }

    fn path_lock(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = match self.paths.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        Arc::clone(map.entry(path.to_path_buf()).or_default())
    }

    /// Waits until the need can be met, then holds it.
    pub async fn acquire(&self, need: Need) -> Lease {
        match &need {
            Need::Workspace => {
                let guard = Arc::clone(&self.workspace).write_owned().await;
                Lease {
                    need,
                    _workspace: Hold::Exclusive(guard),
                    _paths: Vec::new(),
                }
            }
            Need::Shared => {
                let guard = Arc::clone(&self.workspace).read_owned().await;
                Lease {
                    need,
                    _workspace: Hold::Shared(guard),
                    _paths: Vec::new(),
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
pub struct Leased {
    pub(crate) parts: Parts,
    pub(crate) lease: Lease,
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
        }
    }

    /// [`Admitted::lease`] for code that is not async (tests, a CLI without a runtime). It must
    /// not be called from inside an async runtime.
    pub fn lease_blocking(self, leases: &Leases) -> std::io::Result<Leased> {
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
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
