//! A folder of the jail's own, removed whole when dropped: what `tempfile::TempDir` is, for a
//! folder that may also have been made by an earlier process and taken over (a parked plan's
//! folder and its runs' folders, `plan_folder`), or handed on to a later one instead of removed.

use std::path::{Path, PathBuf};

/// A folder removed, whole and without following links, on drop — unless [`Folder::keep`]
/// hands it on.
#[derive(Debug)]
pub(crate) struct Folder {
    path: PathBuf,
}

impl Folder {
    /// A new folder in `parent`, named `prefix` and random characters, mode `0700`.
    pub(crate) fn new_in(parent: &Path, prefix: &str) -> std::io::Result<Folder> {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .rand_bytes(12)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(parent)?;
        Ok(Folder { path: dir.keep() })
    }

    /// Takes over the folder at `path`, which this process now owns (removed on drop).
    pub(crate) fn adopt(path: PathBuf) -> Folder {
        Folder { path }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Hands the folder on: it is no longer removed on drop. Its path.
    pub(crate) fn keep(mut self) -> PathBuf {
        // An empty path is what drop leaves alone.
        std::mem::take(&mut self.path)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            // `remove_dir_all` opens each folder below without following links.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_removed_whole_on_drop_and_kept_when_handed_on() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let outside = parent.path().join("outside");
        std::fs::write(&outside, "o").unwrap();
        let f = Folder::new_in(parent.path(), "run-").unwrap();
        let mode = std::fs::metadata(f.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::create_dir(f.path().join("d")).unwrap();
        std::os::unix::fs::symlink(&outside, f.path().join("d/link")).unwrap();
        let path = f.path().to_path_buf();
        drop(f);
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "o",
            "a link is not followed"
        );
        let kept = Folder::new_in(parent.path(), "run-").unwrap().keep();
        assert!(kept.is_dir());
        drop(Folder::adopt(kept.clone()));
        assert!(!kept.exists());
    }
}
