//! Observation: how a path is now (kind, sha256, permission bits, size), beneath its root or by
//! its absolute name, and a state in words.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;
use nix::sys::stat::SFlag;
use sha2::{Digest, Sha256};

use crate::record::FileState;
use crate::sandbox::ConfinedPath;

/// How `path` is now, observed beneath its root without following a symlink.
pub fn observe(path: &ConfinedPath) -> FileState {
    match see(path) {
        Seen::State(state) => state,
        Seen::File { mut file, mode, .. } => match digest(&mut file, None) {
            Ok((sha, n)) => FileState::file(sha, mode, n),
            Err(e) => unknown(&e),
        },
    }
}

/// A path, looked at: a regular file opened for reading, or its state.
pub(super) enum Seen {
    File { file: File, mode: u32, size: u64 },
    State(FileState),
}

pub(super) fn see(path: &ConfinedPath) -> Seen {
    let st = match path.stat() {
        Ok(st) => st,
        Err(e) if gone(&e) => return Seen::State(FileState::Absent),
        Err(e) => return Seen::State(unknown(&e)),
    };
    match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFDIR => Seen::State(FileState::Folder),
        SFlag::S_IFREG => {
            let opened = path.open_read().and_then(|f| f.metadata().map(|m| (f, m)));
            match opened {
                Ok((file, meta)) => Seen::File {
                    file,
                    mode: meta.mode() & 0o7777,
                    size: meta.len(),
                },
                Err(e) => Seen::State(unknown(&e)),
            }
        }
        _ => Seen::State(FileState::Other),
    }
}

/// How the file at `path` is now, by its absolute name: the rewind's view of the disk. A final
/// symlink is not followed (it is `other`).
pub fn observe_path(path: &Path) -> FileState {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if gone(&e) => return FileState::Absent,
        Err(e) => return unknown(&e),
    };
    if meta.is_dir() {
        return FileState::Folder;
    }
    if !meta.is_file() {
        return FileState::Other;
    }
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(path)
        .and_then(|f| f.metadata().map(|m| (f, m)));
    match opened {
        Ok((mut file, meta)) => match digest(&mut file, None) {
            Ok((sha, n)) => FileState::file(sha, meta.mode() & 0o7777, n),
            Err(e) => unknown(&e),
        },
        Err(e) => unknown(&e),
    }
}

pub(super) fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

pub(super) fn unknown(e: &io::Error) -> FileState {
    FileState::Unknown {
        error: e.to_string(),
    }
}

/// Reads `from` to its end, hashing it and copying it into `copy` when given.
pub(super) fn digest(
    from: &mut impl Read,
    mut copy: Option<&mut File>,
) -> io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        hasher.update(chunk);
        if let Some(out) = copy.as_deref_mut() {
            out.write_all(chunk)?;
        }
        total += n as u64;
    }
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((hex, total))
}

/// A state in words, for messages.
pub fn describe(state: &FileState) -> String {
    match state {
        FileState::Absent => "absent".into(),
        FileState::File {
            sha256,
            mode,
            bytes,
        } => format!(
            "a file of {bytes} bytes (sha256 {}…, mode {mode})",
            &sha256[..sha256.len().min(12)]
        ),
        FileState::Folder => "a folder".into(),
        FileState::Other => "neither a file nor a folder".into(),
        FileState::Unknown { error } => format!("unreadable ({error})"),
    }
}
