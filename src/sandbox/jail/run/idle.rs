//! What a finished run leaves for the next runs of its plan: its cgroups and its TMPDIR,
//! emptied, so that the spawn path makes and removes neither.
//!
//! Making and removing a cgroup costs about 0.1 ms per controller. Making and removing a folder
//! costs more than the rest of a jailed spawn together on a filesystem like this machine's `/`
//! (ext4 without a journal: `mkdir` skips every inode removed in the last minute, and each run
//! removes one; 1.6–2.6 ms for a `mkdir` and `rmdir` of `/tmp` measured here, 10 µs on tmpfs).
//!
//! Only what is known to be empty of the run is kept:
//!
//! - cgroups, once every process in them is gone, and only from a run that had every cgroup its
//!   plan promised, so that a run that takes them has them all;
//! - a run's folder, only when the run's cgroups showed every process of the run gone (a process
//!   left behind could otherwise reach the next run's files through the folder its Landlock
//!   domain grants), and only once emptied: the next run finds it as a new one, mode `0700`,
//!   holding nothing but its TMPDIR and HOME folders, each mode `0700` and empty. Those two are
//!   emptied rather than removed: removing a folder costs far more than emptying one on a disk
//!   like this machine's (see `plan_folder`). A jailed run without cgroups (no cgroup can be made here) gets a new folder each
//!   time. Under `sandbox.bash: off` the TMPDIR is kept whatever is left: no run is confined
//!   there, so a process left behind reaches every folder of Reasonix's user anyway, the next
//!   run's TMPDIR included, kept or new.
//!
//! Everything kept is removed with the plan, or parked with its folder for the next plan
//! (`plan_folder`), which empties each run's folder again before use.

use std::path::Path;
use std::sync::Mutex;

use super::RunCgroups;
use crate::sandbox::jail::folder::Folder;

/// The most of each a plan keeps (one per run that may go on at once).
const IDLE: usize = 4;

/// Takes the last one kept, if any.
fn pop<T>(idle: &Mutex<Vec<T>>) -> Option<T> {
    match idle.lock() {
        Ok(mut idle) => idle.pop(),
        Err(poisoned) => poisoned.into_inner().pop(),
    }
}

/// Keeps `value` unless enough are kept (then it is dropped, which removes it).
fn keep<T>(idle: &Mutex<Vec<T>>, value: T) {
    if let Ok(mut idle) = idle.lock()
        && idle.len() < IDLE
    {
        idle.push(value);
    }
}

/// The cgroups of finished runs of one plan, emptied, for its next runs.
#[derive(Debug, Default)]
pub(crate) struct IdleCgroups(Mutex<Vec<RunCgroups>>);

impl IdleCgroups {
    /// Cgroups a finished run left, if any.
    pub(super) fn take(&self) -> Option<RunCgroups> {
        pop(&self.0)
    }

    /// Kills every process left in a finished run's `cgroups`, and keeps them for the next run
    /// when `whole` (the run had every cgroup its plan promised) and nothing is left in them;
    /// otherwise they are removed. Returns whether the cgroups show every process of the run
    /// gone: `Ok(false)` for a run without cgroups; an error when a process could not be killed
    /// (or a cgroup not read), which the run reports.
    pub(super) fn give_back(&self, cgroups: RunCgroups, whole: bool) -> std::io::Result<bool> {
        let mut killed = Ok(());
        for cg in &cgroups.groups {
            if let Err(e) = cg.kill_all() {
                killed = Err(e);
            }
        }
        killed?;
        let gone = !cgroups.groups.is_empty();
        if gone && whole {
            keep(&self.0, cgroups);
        }
        Ok(gone)
    }
}

/// The folders of finished runs of one plan, emptied, for its next runs.
#[derive(Debug, Default)]
pub(crate) struct IdleTmpdirs(Mutex<Vec<Folder>>);

impl IdleTmpdirs {
    /// A folder a finished run left, emptied, if any.
    pub(super) fn take(&self) -> Option<Folder> {
        pop(&self.0)
    }

    /// Keeps a finished run's folder for the next run if it can be emptied; otherwise it is
    /// removed. Only for a run whose processes are all known to be gone (or a folder taken over
    /// from a parked plan, whose runs all were).
    pub(in crate::sandbox::jail) fn give_back(&self, dir: Folder) {
        if reset(dir.path()).is_ok() {
            keep(&self.0, dir);
        }
    }

    /// Every folder kept, taken out (for the plan's folder to be parked with them).
    pub(in crate::sandbox::jail) fn drain(&self) -> Vec<Folder> {
        match self.0.lock() {
            Ok(mut idle) => std::mem::take(&mut *idle),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

/// Makes a run's folder `dir` what a new one is once its run's folders are made: a folder (not a
/// link to one), mode `0700`, holding nothing but its TMPDIR and HOME folders (not links), each
/// mode `0700` and empty. Anything else in it is removed.
fn reset(dir: &Path) -> std::io::Result<()> {
    emptied(dir, &[super::TMP_NAME, super::HOME_NAME])
}

/// Makes `dir` a folder (not a link to one), mode `0700`, holding nothing but the folders named
/// in `kept` (not links), each emptied the same way. Entries are removed without following
/// links (`remove_dir_all` opens each folder with `O_NOFOLLOW`).
fn emptied(dir: &Path, kept: &[&str]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other("not a folder"));
    }
    // First: the run may have taken its own rights away (`chmod 0 $TMPDIR`). Only when changed:
    // each change is an inode write.
    if meta.permissions().mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let is_kept = |name: &std::ffi::OsStr| kept.iter().any(|k| name == *k);
    let mut removed = false;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let is_dir = entry.file_type()?.is_dir();
        if is_dir && is_kept(&entry.file_name()) {
            emptied(&entry.path(), &[])?;
        } else if is_dir {
            removed = true;
            std::fs::remove_dir_all(entry.path())?;
        } else {
            removed = true;
            std::fs::remove_file(entry.path())?;
        }
    }
    if removed
        && std::fs::read_dir(dir)?
            .flatten()
            .any(|e| !is_kept(&e.file_name()))
    {
        return Err(std::io::Error::other("not empty"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_folder_is_kept_with_its_tmpdir_and_home_emptied_and_nothing_else() {
        use std::os::unix::fs::PermissionsExt;
        let outside = tempfile::tempdir().unwrap();
        let kept = outside.path().join("kept.txt");
        std::fs::write(&kept, "k").unwrap();
        let parent = tempfile::tempdir().unwrap();
        let dir = Folder::new_in(parent.path(), "run-").unwrap();
        let p = dir.path().to_path_buf();
        let (tmp, home) = (
            p.join(super::super::TMP_NAME),
            p.join(super::super::HOME_NAME),
        );
        std::fs::create_dir(&tmp).unwrap();
        std::fs::create_dir(&home).unwrap();
        std::fs::write(tmp.join("a"), "a").unwrap();
        std::fs::create_dir_all(tmp.join("d/e")).unwrap();
        std::fs::write(tmp.join("d/e/f"), "f").unwrap();
        std::fs::create_dir_all(home.join(".local/bin")).unwrap();
        // Links out of it are removed, not followed.
        std::os::unix::fs::symlink(outside.path(), tmp.join("to-dir")).unwrap();
        std::os::unix::fs::symlink(&kept, home.join(".cargo")).unwrap();
        // Beside them: a file and a folder of the run's, removed.
        std::fs::write(p.join("stray"), "s").unwrap();
        std::fs::create_dir(p.join("other")).unwrap();
        for taken in [&p, &tmp, &home] {
            std::fs::set_permissions(taken, std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        let idle = IdleTmpdirs::default();
        idle.give_back(dir);
        let again = idle.take().expect("kept");
        assert_eq!(again.path(), p);
        let mut names: Vec<_> = std::fs::read_dir(&p)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["home", "tmp"]);
        for folder in [&p, &tmp, &home] {
            let mode = std::fs::metadata(folder).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o700, "{}", folder.display());
        }
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0);
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "k");
        assert!(idle.take().is_none(), "taken once");
    }

    #[test]
    fn a_runs_folder_or_tmpdir_replaced_by_a_link_is_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x"), "x").unwrap();
        let parent = tempfile::tempdir().unwrap();
        // The run's folder itself a link: not kept.
        let dir = Folder::new_in(parent.path(), "run-").unwrap();
        let p = dir.path().to_path_buf();
        std::fs::remove_dir(&p).unwrap();
        std::os::unix::fs::symlink(outside.path(), &p).unwrap();
        let idle = IdleTmpdirs::default();
        idle.give_back(dir);
        assert!(idle.take().is_none());
        assert!(outside.path().join("x").exists(), "nothing behind the link");
        // Its TMPDIR a link: the link is removed, and the folder kept without it.
        let dir = Folder::new_in(parent.path(), "run-").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(super::super::TMP_NAME))
            .unwrap();
        idle.give_back(dir);
        let again = idle.take().expect("kept");
        assert_eq!(std::fs::read_dir(again.path()).unwrap().count(), 0);
        assert!(outside.path().join("x").exists(), "nothing behind the link");
    }
}
