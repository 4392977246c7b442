//! Where a plan's writers keep their upper layers (issue 25): a folder of the plan's own on
//! `/dev/shm` where that is a tmpfs Reasonix may write — in memory, so that making an overlay
//! and removing its layer cost no disk work (on this machine's ext4, mounted with `discard`,
//! the overlay's work folder and the removal of a layer cost about 8 ms a run; on tmpfs, 0.1 ms)
//! — else beside the runs' TMPDIRs.
//!
//! In memory, a writer's upper layer counts against its run's memory cgroup (tmpfs pages are
//! charged to the process that writes them), so `limits.memory_bytes` bounds what a writer may
//! change through its overlay; build outputs larger than that belong in `sandbox.passthrough`.
//!
//! The folder is named for the process that owns it, `reasonix-upper-<pid>-<random>`: a plan
//! removes it when dropped, and the folders of owners that are gone (a crash, a `kill -9`) are
//! removed by the next plan that makes one, so memory is not held past its owner. In each run's
//! mount namespace the folder is covered by an empty one: no run sees another's changes.

use std::path::Path;

/// The folder of in-memory upper layers tried first.
const SHM: &str = "/dev/shm";

/// The prefix of a plan's folder there.
const PREFIX: &str = "reasonix-upper-";

/// A plan's folder of upper layers (removed, whole, on drop).
#[derive(Debug)]
pub(super) struct Uppers {
    dir: tempfile::TempDir,
}

impl Uppers {
    /// A folder on `/dev/shm` when it is a tmpfs this process can write; `None` otherwise (the
    /// runs' upper layers then go beside their TMPDIRs). Reclaims the folders of owners that
    /// are gone first.
    pub(super) fn in_memory() -> Option<Uppers> {
        let shm = Path::new(SHM);
        let tmpfs = nix::sys::statfs::statfs(shm)
            .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
        if !tmpfs {
            return None;
        }
        super::owners::remove_gone(shm, PREFIX);
        tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .rand_bytes(10)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(shm)
            .ok()
            .map(|dir| Uppers { dir })
    }

    /// The folder.
    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Every `reasonix-upper-*` folder under `/dev/shm`.
    fn listed() -> Vec<PathBuf> {
        std::fs::read_dir(SHM)
            .map(|es| {
                es.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_folder_whose_owner_is_gone_is_reclaimed_and_a_live_ones_is_kept() {
        let Some(mine) = Uppers::in_memory() else {
            assert!(
                std::env::var("REASONIX_NO_SKIP").as_deref() != Ok("1"),
                "/dev/shm is not a tmpfs here, and REASONIX_NO_SKIP=1 counts a skip as a failure"
            );
            eprintln!("SKIPPED: /dev/shm is not a tmpfs here");
            return;
        };
        // A pid that cannot be running (above the kernel's maximum).
        let gone = Path::new(SHM).join(format!("{PREFIX}2147483646-test"));
        std::fs::create_dir_all(gone.join("u0")).unwrap();
        let again = Uppers::in_memory().expect("in memory");
        assert!(!gone.exists(), "a gone owner's folder is removed");
        assert!(
            mine.path().exists() && again.path().exists(),
            "a live one is kept"
        );
        let path = mine.path().to_path_buf();
        drop(mine);
        assert!(!path.exists(), "removed with its plan");
        assert!(!listed().contains(&path));
    }
}
