//! Where a plan's own temporary folder is made — the parent of each run's TMPDIR and private
//! HOME — and how the folders of plans whose process was killed are removed.
//!
//! A plan removes its folder when dropped; a Reasonix killed with `SIGKILL` (an out-of-memory
//! kill, a hook's timeout, `kill -9`) cannot, and its runs' TMPDIRs stayed on disk with what the
//! commands wrote there. So each plan's folder is named for the process that owns it,
//! `<pid>-<random>`, inside a folder of this user's own, `reasonix-<uid>` in the system's
//! temporary folder (`$TMPDIR`, else `/tmp`), and the next plan made removes the folders whose
//! owner is gone (`owners`) — as `uppers` does for the in-memory upper layers, and
//! `cgroup::reclaim` (which runs first, on the probe's path) for the cgroups, killing what a dead
//! owner's runs left running. The folder of this user's own keeps that look cheap: a scan of
//! `/tmp` itself took 0.1 ms on the machine of `docs/speed.md` (620 entries on ext4), the
//! folder's own a few microseconds.
//!
//! `reasonix-<uid>` is used only if it is a folder (not a link) owned by this user that no one
//! else may enter or write (mode `0700` when made here); the system's temporary folder is
//! sticky, so no other user can replace it afterwards. Otherwise — someone else made it first,
//! or it cannot be made — the plan's folder is made as before, `reasonix-tmp-<random>` in the
//! temporary folder itself, and nothing is reclaimed.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A plan's own temporary folder (removed, whole, on drop).
pub(super) fn make() -> std::io::Result<tempfile::TempDir> {
    make_in(&std::env::temp_dir())
}

/// [`make`], in the temporary folder `base`.
fn make_in(base: &Path) -> std::io::Result<tempfile::TempDir> {
    match own_folder(base) {
        Some(own) => {
            super::owners::remove_gone(&own, "");
            tempfile::Builder::new()
                .prefix(&format!("{}-", std::process::id()))
                .tempdir_in(own)
        }
        None => tempfile::Builder::new()
            .prefix("reasonix-tmp-")
            .tempdir_in(base),
    }
}

/// `reasonix-<uid>` in `base`, made if missing, when it is this user's alone.
fn own_folder(base: &Path) -> Option<PathBuf> {
    let uid = nix::unistd::geteuid().as_raw();
    let dir = base.join(format!("reasonix-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    // Not followed if a link: a link is not this user's folder, wherever it points.
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0).then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_plans_folder_is_made_in_the_users_own_and_a_gone_owners_is_removed() {
        let base = tempfile::tempdir().unwrap();
        let first = make_in(base.path()).unwrap();
        let own = base
            .path()
            .join(format!("reasonix-{}", nix::unistd::geteuid()));
        assert_eq!(first.path().parent(), Some(own.as_path()));
        let name = first.path().file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with(&format!("{}-", std::process::id())),
            "{name}"
        );
        let mode = std::fs::metadata(&own).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        // A killed owner's folder (a pid above the kernel's maximum: never running), with a
        // run's TMPDIR and what its command wrote.
        let gone = own.join("2147483646-killed");
        std::fs::create_dir_all(gone.join("run-1/tmp")).unwrap();
        std::fs::write(gone.join("run-1/tmp/secret"), "s").unwrap();
        // Not a plan's folder: no pid in its name.
        let other = own.join("notes");
        std::fs::create_dir(&other).unwrap();
        let second = make_in(base.path()).unwrap();
        assert!(!gone.exists(), "a gone owner's folder is removed");
        assert!(
            first.path().exists() && second.path().exists(),
            "a live one's is kept"
        );
        assert!(other.exists(), "a folder with no owner's pid is left alone");
        let path = first.path().to_path_buf();
        drop(first);
        assert!(!path.exists(), "removed with its plan");
    }

    #[test]
    fn a_users_folder_others_could_enter_or_that_is_a_link_is_not_used() {
        let uid = nix::unistd::geteuid();
        // Made by someone else first, open to all.
        let base = tempfile::tempdir().unwrap();
        let open = base.path().join(format!("reasonix-{uid}"));
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let gone = open.join("2147483646-killed");
        std::fs::create_dir(&gone).unwrap();
        let plan = make_in(base.path()).unwrap();
        assert_eq!(plan.path().parent(), Some(base.path()));
        assert!(
            plan.path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("reasonix-tmp-")
        );
        assert!(
            gone.exists(),
            "nothing is removed from a folder that is not the user's own"
        );
        // A link to a folder of this user's: not followed, not used.
        let base = tempfile::tempdir().unwrap();
        let elsewhere = base.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, base.path().join(format!("reasonix-{uid}")))
            .unwrap();
        let plan = make_in(base.path()).unwrap();
        assert_eq!(plan.path().parent(), Some(base.path()));
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // Owned by another user (only root can make one to try it).
        if uid.is_root() {
            let base = tempfile::tempdir().unwrap();
            let theirs = base.path().join("reasonix-0");
            std::fs::create_dir(&theirs).unwrap();
            std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
            nix::unistd::chown(&theirs, Some(65534.into()), None).unwrap();
            let plan = make_in(base.path()).unwrap();
            assert_eq!(plan.path().parent(), Some(base.path()));
        }
    }
}
