//! The user's trust in a project's files, by exact content: `reasonix trust` records a file's
//! sha256 under its canonical path, and a file counts as trusted only while its bytes still have
//! that digest. Any change — one byte, a `git pull`, a file the model wrote — makes it untrusted
//! again, as direnv's and mise's `allow` do.
//!
//! The store is one JSON file in the user's state folder, `$XDG_STATE_HOME/reasonix/trust.json`
//! (else `~/.local/state/reasonix/trust.json`), outside every workspace: nothing a repository
//! holds can say it is trusted. It is rewritten whole and atomically (a temporary file in the
//! same folder, `fsync`, `rename`, `fsync` of the folder) under a lock, so two `reasonix trust`
//! at once neither tear it nor lose an entry. It is a host file: no call may change it.
//!
//! ```json
//! {"version": 1, "files": {"/home/me/app/reasonix.yaml": {"sha256": "…", "trusted_ms": 1764700000000}}}
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The store's file name in the state folder.
pub const TRUST_FILE: &str = "trust.json";

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// Neither `XDG_STATE_HOME` nor `HOME` is set.
    #[error(
        "cannot find the user's state folder: set XDG_STATE_HOME or HOME (the trust store lives there)"
    )]
    NoStateFolder,
    /// The store could not be read or written.
    #[error("the trust store {path}: {why}")]
    Io {
        /// The store.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The store is not what `reasonix trust` writes.
    #[error(
        "the trust store {path} is not valid ({why}); move it away and run `reasonix trust` again"
    )]
    Invalid {
        /// The store.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

/// One trusted file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The sha256 of the bytes the user trusted.
    pub sha256: String,
    /// When, in ms since the epoch.
    pub trusted_ms: u128,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    files: BTreeMap<PathBuf, Entry>,
}

/// The trust store, as read. Immutable; [`Store::trust`] rewrites the file.
#[derive(Clone, Debug, Default)]
pub struct Store {
    path: PathBuf,
    files: BTreeMap<PathBuf, Entry>,
}

/// The user's state folder for Reasonix: `$XDG_STATE_HOME/reasonix`, else
/// `~/.local/state/reasonix`.
pub fn state_folder() -> Result<PathBuf, TrustError> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
        .map(|s| s.join("reasonix"))
        .ok_or(TrustError::NoStateFolder)
}

/// The key a file is trusted under: its canonical path (a file reached through a symlink is
/// trusted where it really is).
fn key(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

impl Store {
    /// The store in the user's state folder (empty when it does not exist yet).
    pub fn open_default() -> Result<Store, TrustError> {
        Store::open(&state_folder()?.join(TRUST_FILE))
    }

    /// The store at `path` (empty when it does not exist yet).
    pub fn open(path: &Path) -> Result<Store, TrustError> {
        let io = |e: std::io::Error| TrustError::Io {
            path: path.to_path_buf(),
            why: e.to_string(),
        };
        let files = match std::fs::read(path) {
            Ok(bytes) => {
                let file: StoreFile =
                    serde_json::from_slice(&bytes).map_err(|e| TrustError::Invalid {
                        path: path.to_path_buf(),
                        why: e.to_string(),
                    })?;
                if file.version != 1 {
                    return Err(TrustError::Invalid {
                        path: path.to_path_buf(),
                        why: format!("version {} (this Reasonix writes 1)", file.version),
                    });
                }
                file.files
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(io(e)),
        };
        Ok(Store {
            path: path.to_path_buf(),
            files,
        })
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the user trusts `path` with exactly these bytes.
    pub fn trusts(&self, path: &Path, bytes: &[u8]) -> bool {
        self.files
            .get(&key(path))
            .is_some_and(|e| e.sha256 == crate::record::sha256(bytes))
    }

    /// What the store holds for `path`, if anything (trusted once; maybe changed since).
    pub fn entry(&self, path: &Path) -> Option<&Entry> {
        self.files.get(&key(path))
    }

    /// Records that the user trusts each file with the bytes it holds now, and rewrites the
    /// store atomically under its lock (re-read under the lock, so a concurrent `reasonix
    /// trust` keeps its entries). Returns each file's canonical path and digest.
    pub fn trust(&self, files: &[PathBuf]) -> Result<Vec<(PathBuf, String)>, TrustError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |e: std::io::Error| TrustError::Io {
                path,
                why: e.to_string(),
            }
        };
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let lock_path = self.path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        lock.lock().map_err(io(&lock_path))?;
        let mut current = Store::open(&self.path)?;
        let mut done = Vec::new();
        let now = crate::record::now_ms();
        for file in files {
            let bytes = std::fs::read(file).map_err(io(file))?;
            let sha256 = crate::record::sha256(&bytes);
            let key = key(file);
            current.files.insert(
                key.clone(),
                Entry {
                    sha256: sha256.clone(),
                    trusted_ms: now,
                },
            );
            done.push((key, sha256));
        }
        let text = serde_json::to_vec_pretty(&StoreFile {
            version: 1,
            files: current.files,
        })
        .map_err(|e| TrustError::Invalid {
            path: self.path.clone(),
            why: e.to_string(),
        })?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
        tmp.write_all(&text).map_err(io(&self.path))?;
        tmp.write_all(b"\n").map_err(io(&self.path))?;
        tmp.as_file().sync_all().map_err(io(&self.path))?;
        tmp.persist(&self.path)
            .map_err(|e| io(&self.path)(e.error))?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_file_stays_trusted_until_one_byte_changes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state/trust.json")).unwrap();
        let file = dir.path().join("reasonix.yaml");
        std::fs::write(&file, "max_steps: 3\n").unwrap();
        assert!(
            !store.trusts(&file, b"max_steps: 3\n"),
            "nothing is trusted at first"
        );
        store.trust(std::slice::from_ref(&file)).unwrap();
        let store = Store::open(store.path()).unwrap();
        assert!(store.trusts(&file, b"max_steps: 3\n"));
        assert!(!store.trusts(&file, b"max_steps: 4\n"), "one byte changed");
        assert!(
            !store.trusts(&dir.path().join("other.yaml"), b"max_steps: 3\n"),
            "the same bytes elsewhere are not trusted"
        );
    }

    #[test]
    fn trusting_keeps_the_entries_of_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        Store::open(&path)
            .unwrap()
            .trust(std::slice::from_ref(&a))
            .unwrap();
        // A store read before the first trust still keeps it: the file is re-read under the lock.
        Store::default_for(&path)
            .trust(std::slice::from_ref(&b))
            .unwrap();
        let store = Store::open(&path).unwrap();
        assert!(store.trusts(&a, b"a") && store.trusts(&b, b"b"));
    }

    #[test]
    fn a_store_that_is_not_valid_is_an_error_that_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        std::fs::write(&path, "{\"version\": 1, \"files\": 3}").unwrap();
        let e = Store::open(&path).unwrap_err().to_string();
        assert!(e.contains("move it away"), "{e}");
    }

    impl Store {
        fn default_for(path: &Path) -> Store {
            Store {
                path: path.to_path_buf(),
                files: BTreeMap::new(),
            }
        }
    }
}
