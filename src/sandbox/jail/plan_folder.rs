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
//!
//! # Parked, not removed
//!
//! Removing a folder frees its block, which cost 60–100 µs a folder on the machine of
//! `docs/speed.md` (ext4 mounted with `discard`, likely the discard of the freed block; 1 µs on
//! tmpfs), against 2–5 µs for a rename; a one-call `sandbox exec` removed four (its plan's folder, its
//! run's, the run's TMPDIR and HOME), about a twentieth of the whole process. So a plan that
//! ends with nothing in its folder but the folders of its finished runs — each emptied, every
//! process of its run known gone (`run::IdleTmpdirs`) — is parked instead: renamed
//! `idle-<random>` in the user's own folder ([`PlanFolder::park`]). The next plan made takes
//! over a parked folder, renaming it `<pid>-<random>` (a rename is atomic: two processes cannot
//! both take one), and empties its runs' folders again before any run uses one. Only folders of
//! the user's own folder are parked, so no other user could have made or changed one; a plan
//! with anything else in its folder is removed as before. A few parked folders are kept
//! ([`PARKED`]); more (after a burst of processes) are removed by the next plan, each taken
//! over first like any other, so that no removal runs inside a folder another process uses.

use std::ffi::OsStr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::folder::Folder;

/// The most parked folders a user's folder keeps.
const PARKED: usize = 4;

/// The name of a parked plan's folder starts so.
const PARKED_PREFIX: &str = "idle-";

/// A plan's own folder, and the user's folder it is parked in when the plan ends (`None`: made
/// in the temporary folder itself, removed on drop).
#[derive(Debug)]
pub(super) struct PlanFolder {
    pub(super) dir: Folder,
    own: Option<PathBuf>,
}

/// A plan's own temporary folder: a parked one taken over, or a new one.
pub(super) fn make() -> std::io::Result<PlanFolder> {
    make_in(&std::env::temp_dir())
}

/// [`make`], in the temporary folder `base`.
fn make_in(base: &Path) -> std::io::Result<PlanFolder> {
    let Some(own) = own_folder(base) else {
        return Ok(PlanFolder {
            dir: Folder::new_in(base, "reasonix-tmp-")?,
            own: None,
        });
    };
    let pid = std::process::id();
    let mut parked = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&own) {
        for e in entries.flatten() {
            let name = e.file_name();
            if name.to_str().is_some_and(|n| n.starts_with(PARKED_PREFIX)) {
                parked.push(e.path());
            } else if super::owners::owner_gone(&name, "") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let mut taken = None;
    while let Some(folder) = parked.pop() {
        let suffix = suffix(&folder);
        let to = own.join(format!("{pid}-{suffix}"));
        if rename_new(&folder, &to).is_err() {
            continue;
        }
        // A folder, not a link to one (nothing but this user can have put one there).
        if std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()) {
            taken = Some(to);
            break;
        }
        let _ = std::fs::remove_file(&to);
    }
    // Taken (renamed to a name of this process's) before it is removed: another process may
    // take the same one meanwhile, and a removal under way would go on inside the folder it now
    // uses (a rename does not stop it).
    for extra in parked.iter().skip(PARKED.saturating_sub(1)) {
        let mine = own.join(format!("{pid}-{}", suffix(extra)));
        if rename_new(extra, &mine).is_ok() {
            let _ = std::fs::remove_dir_all(&mine);
        }
    }
    let dir = match taken {
        Some(path) => Folder::adopt(path),
        None => Folder::new_in(&own, &format!("{pid}-"))?,
    };
    Ok(PlanFolder {
        dir,
        own: Some(own),
    })
}

/// What follows the first `-` of a folder's name (its random part).
fn suffix(folder: &Path) -> String {
    let name = folder
        .file_name()
        .map(OsStr::to_string_lossy)
        .unwrap_or_default();
    name.split_once('-')
        .map_or(name.to_string(), |(_, s)| s.to_owned())
}

/// Renames `from` to `to`, which must not exist (`RENAME_NOREPLACE`: an empty folder there
/// is not replaced).
fn rename_new(from: &Path, to: &Path) -> std::io::Result<()> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE)
        .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
}

impl PlanFolder {
    /// Takes out of a folder taken over the folders of its runs (named `run-…`, real folders),
    /// to be emptied before a run uses one; removes anything else in it.
    pub(super) fn runs(&self) -> Vec<Folder> {
        let mut runs = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.dir.path()) else {
            return runs;
        };
        for e in entries.flatten() {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let named = e
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("run-"));
            if is_dir && named {
                runs.push(Folder::adopt(e.path()));
            } else if is_dir {
                let _ = std::fs::remove_dir_all(e.path());
            } else {
                let _ = std::fs::remove_file(e.path());
            }
        }
        runs
    }

    /// Parks the folder for the next plan, with `idle` — the folders of its finished runs,
    /// emptied — in it, when it holds nothing else; otherwise removes it, as dropping it does.
    pub(super) fn park(self, idle: Vec<Folder>) {
        let Some(own) = &self.own else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(self.dir.path()) else {
            return;
        };
        let mut names: Vec<&OsStr> = idle.iter().filter_map(|f| f.path().file_name()).collect();
        for e in entries {
            let Ok(e) = e else {
                return;
            };
            match names.iter().position(|n| *n == e.file_name()) {
                Some(i) => {
                    names.swap_remove(i);
                }
                // Something else: a run not given back (a process of it may live on).
                None => return,
            }
        }
        let to = own.join(format!("{PARKED_PREFIX}{}", suffix(self.dir.path())));
        if rename_new(self.dir.path(), &to).is_ok() {
            self.dir.keep();
            for f in idle {
                f.keep();
            }
        }
    }
}

/// `reasonix-<uid>` in `base`, made if missing, when it is this user's alone (also where the
/// probe's answer is kept when the state folder cannot be written: `probe/kept.rs`).
pub(in crate::sandbox::jail) fn own_folder(base: &Path) -> Option<PathBuf> {
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

    /// The user's own folder in the temporary folder `base`.
    fn own_in(base: &Path) -> PathBuf {
        base.join(format!("reasonix-{}", nix::unistd::geteuid()))
    }

    /// [`own_in`], made as a plan makes it (mode 0700).
    fn made_own(base: &Path) -> PathBuf {
        let own = own_in(base);
        std::fs::create_dir(&own).unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700)).unwrap();
        own
    }

    /// What `dir` holds, as paths.
    fn listed(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    }

    #[test]
    fn a_plans_folder_is_made_in_the_users_own_and_a_gone_owners_is_removed() {
        let base = tempfile::tempdir().unwrap();
        let first = make_in(base.path()).unwrap();
        let own = own_in(base.path());
        assert_eq!(first.dir.path().parent(), Some(own.as_path()));
        let name = first.dir.path().file_name().unwrap().to_string_lossy();
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
            first.dir.path().exists() && second.dir.path().exists(),
            "a live one's is kept"
        );
        assert!(other.exists(), "a folder with no owner's pid is left alone");
        let path = first.dir.path().to_path_buf();
        drop(first);
        assert!(!path.exists(), "removed with its plan");
    }

    /// A run's folder as a finished run leaves it: its TMPDIR and HOME, emptied.
    fn finished_run(plan: &PlanFolder) -> Folder {
        let run = Folder::new_in(plan.dir.path(), "run-").unwrap();
        std::fs::create_dir(run.path().join("tmp")).unwrap();
        std::fs::create_dir(run.path().join("home")).unwrap();
        run
    }

    #[test]
    fn a_plans_folder_holding_only_finished_runs_is_parked_and_taken_over_by_the_next_plan() {
        let base = tempfile::tempdir().unwrap();
        let own = own_in(base.path());
        let first = make_in(base.path()).unwrap();
        let run = finished_run(&first);
        let run_name = run.path().file_name().unwrap().to_owned();
        let first_path = first.dir.path().to_path_buf();
        first.park(vec![run]);
        assert!(!first_path.exists(), "renamed");
        let parked = listed(&own);
        assert_eq!(parked.len(), 1, "{parked:?}");
        assert!(parked[0].join(&run_name).join("tmp").is_dir());
        // The next plan takes it over, named for its own process, with the run's folder in it.
        let second = make_in(base.path()).unwrap();
        let name = second.dir.path().file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with(&format!("{}-", std::process::id())),
            "{name}"
        );
        assert!(!parked[0].exists());
        let runs = second.runs();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].path().file_name(), Some(run_name.as_os_str()));
        // A third plan meanwhile finds none parked: it makes its own.
        let third = make_in(base.path()).unwrap();
        assert_ne!(third.dir.path(), second.dir.path());
        assert!(third.runs().is_empty());
    }

    #[test]
    fn a_plans_folder_holding_anything_but_finished_runs_is_removed_not_parked() {
        let base = tempfile::tempdir().unwrap();
        let own = own_in(base.path());
        // A run not given back (a process of it may live on).
        let plan = make_in(base.path()).unwrap();
        let given = finished_run(&plan);
        let kept_out = finished_run(&plan).keep();
        plan.park(vec![given]);
        assert_eq!(std::fs::read_dir(&own).unwrap().count(), 0, "removed whole");
        assert!(!kept_out.exists());
        // A file of its own beside the runs.
        let plan = make_in(base.path()).unwrap();
        std::fs::write(plan.dir.path().join("stray"), "s").unwrap();
        plan.park(Vec::new());
        assert_eq!(std::fs::read_dir(&own).unwrap().count(), 0);
        // Made outside the user's folder (it is open to others): never parked.
        let open = tempfile::tempdir().unwrap();
        let theirs = own_in(open.path());
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
        let plan = make_in(open.path()).unwrap();
        let path = plan.dir.path().to_path_buf();
        plan.park(Vec::new());
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    }

    #[test]
    fn a_parked_name_that_is_a_link_is_not_taken_over_and_nothing_behind_it_is_touched() {
        let base = tempfile::tempdir().unwrap();
        let own = made_own(base.path());
        let elsewhere = base.path().join("elsewhere");
        std::fs::create_dir_all(elsewhere.join("run-a/tmp")).unwrap();
        std::fs::write(elsewhere.join("run-a/tmp/keep"), "k").unwrap();
        std::os::unix::fs::symlink(&elsewhere, own.join(format!("{PARKED_PREFIX}link"))).unwrap();
        let plan = make_in(base.path()).unwrap();
        assert!(plan.runs().is_empty(), "a new folder, not the link's");
        assert_eq!(plan.dir.path().parent(), Some(own.as_path()));
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("run-a/tmp/keep")).unwrap(),
            "k"
        );
        let left = listed(&own);
        assert_eq!(left, [plan.dir.path().to_path_buf()], "the link is gone");
    }

    #[test]
    fn a_taken_over_folders_strays_are_removed_and_only_a_few_parked_folders_are_kept() {
        let base = tempfile::tempdir().unwrap();
        let own = made_own(base.path());
        for i in 0..PARKED + 3 {
            let parked = own.join(format!("{PARKED_PREFIX}{i}"));
            std::fs::create_dir_all(parked.join("run-a/tmp")).unwrap();
            std::fs::write(parked.join("stray"), "s").unwrap();
            std::fs::create_dir(parked.join("other")).unwrap();
        }
        let plan = make_in(base.path()).unwrap();
        let runs = plan.runs();
        assert_eq!(runs.len(), 1);
        let left: Vec<_> = std::fs::read_dir(plan.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["run-a"], "the strays are removed");
        let parked = std::fs::read_dir(&own)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(PARKED_PREFIX)
            })
            .count();
        assert_eq!(
            parked,
            PARKED - 1,
            "with the one taken, no more than {PARKED}"
        );
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
        assert_eq!(plan.dir.path().parent(), Some(base.path()));
        assert!(
            plan.dir
                .path()
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
        assert_eq!(plan.dir.path().parent(), Some(base.path()));
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // Owned by another user (only root can make one to try it).
        if uid.is_root() {
            let base = tempfile::tempdir().unwrap();
            let theirs = base.path().join("reasonix-0");
            std::fs::create_dir(&theirs).unwrap();
            std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
            nix::unistd::chown(&theirs, Some(65534.into()), None).unwrap();
            let plan = make_in(base.path()).unwrap();
            assert_eq!(plan.dir.path().parent(), Some(base.path()));
        }
    }
}
