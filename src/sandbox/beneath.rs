//! File operations that the kernel keeps beneath a root.
//!
//! Admission resolves a path once; by execution the disk may have changed (a folder swapped for a
//! symlink to `/etc`). So no operation here follows a path by name from `/`. Each opens its root
//! with `O_NOFOLLOW`, then walks the admitted, symlink-free relative path with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: a component that is
//! now a symlink, or a `..` that would climb out, fails with `ELOOP`/`EXDEV` instead of being
//! followed. Names in the final folder are then handled with `*at` calls that never follow a
//! symlink in the last component (`O_CREAT | O_EXCL`, `renameat2`, `unlinkat`).
//!
//! Writes are atomic: a temporary file in the same folder, written, `fsync`ed, renamed over the
//! target, and the folder `fsync`ed, so a crash leaves the old file or the new one, never half.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, RenameFlags, ResolveFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

/// A path admitted inside a root, held as the root and a relative path without symlinks or `..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfinedPath {
    root: PathBuf,
    rel: PathBuf,
    in_workspace: bool,
}

/// Counter for temporary-file names within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn errno(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

fn how(flags: OFlag, mode: Mode) -> OpenHow {
    // openat2 refuses O_NOCTTY beside O_PATH (it checks flags strictly).
    let extra = if flags.contains(OFlag::O_PATH) {
        OFlag::O_CLOEXEC
    } else {
        OFlag::O_CLOEXEC | OFlag::O_NOCTTY
    };
    OpenHow::new().flags(flags | extra).mode(mode).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS,
    )
}

impl ConfinedPath {
    pub(crate) fn new(root: PathBuf, rel: PathBuf, in_workspace: bool) -> ConfinedPath {
        ConfinedPath {
            root,
            rel,
            in_workspace,
        }
    }

    /// A path below this one; `rel` must hold only plain names (no `..`, `.` or `/`).
    pub fn child(&self, rel: &Path) -> Option<ConfinedPath> {
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return None;
        }
        Some(ConfinedPath {
            root: self.root.clone(),
            rel: self.rel.join(rel),
            in_workspace: self.in_workspace,
        })
    }

    /// How the path is shown to the model: relative to the workspace when it lies in it
    /// (`.` for the workspace itself), absolute otherwise.
    pub fn shown(&self) -> String {
        if !self.in_workspace {
            self.absolute().display().to_string()
        } else if self.rel.as_os_str().is_empty() {
            ".".into()
        } else {
            self.rel.display().to_string()
        }
    }

    /// True when the path exists and is reachable beneath its root without following any
    /// symlink. A final component that is itself a symlink counts (the link is not followed).
    pub fn exists_beneath(&self) -> bool {
        self.open_root()
            .and_then(|root| {
                let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW;
                nix::fcntl::openat2(&root, self.rel_or_dot(), how(flags, Mode::empty()))
                    .map_err(errno)
            })
            .is_ok()
    }

    /// The root folder holding this path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path relative to its root (empty for the root itself).
    pub fn relative(&self) -> &Path {
        &self.rel
    }

    /// The absolute path, for messages.
    pub fn absolute(&self) -> PathBuf {
        if self.rel.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(&self.rel)
        }
    }

    fn open_root(&self) -> io::Result<OwnedFd> {
        nix::fcntl::open(
            &self.root,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)
    }

    /// The relative path for `openat2`; `.` for the root itself.
    fn rel_or_dot(&self) -> &Path {
        if self.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.rel
        }
    }

    /// Opens the file for reading — a regular file only. It is opened without waiting and
    /// checked before anything reads it: a FIFO would hold the opener until some writer came
    /// (forever, for a file tool), and a device or socket is no file to read. A folder is
    /// `EISDIR`.
    pub fn open_read(&self) -> io::Result<File> {
        let root = self.open_root()?;
        let fd = nix::fcntl::openat2(
            &root,
            self.rel_or_dot(),
            how(OFlag::O_RDONLY | OFlag::O_NONBLOCK, Mode::empty()),
        )
        .map_err(errno)?;
        let st = nix::sys::stat::fstat(&fd).map_err(errno)?;
        match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFREG => {}
            SFlag::S_IFDIR => return Err(errno(Errno::EISDIR)),
            _ => {
                return Err(io::Error::other(
                    "not a regular file (a FIFO, socket or device is not read)",
                ));
            }
        }
        // A regular file's reads never wait; the flag is cleared so the file is an ordinary one.
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFL(OFlag::empty())).map_err(errno)?;
        Ok(File::from(fd))
    }

    /// Opens the folder for listing.
    pub fn open_dir(&self) -> io::Result<OwnedFd> {
        let root = self.open_root()?;
        nix::fcntl::openat2(
            &root,
            self.rel_or_dot(),
            how(OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty()),
        )
        .map_err(errno)
    }

    /// Status of the path itself (a symlink is not followed).
    pub fn stat(&self) -> io::Result<FileStat> {
        let (dir, name) = self.parent(false)?;
        nix::sys::stat::fstatat(&dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).map_err(errno)
    }

    /// Opens the parent folder beneath the root, creating missing folders when asked, and
    /// returns it with the final name.
    fn parent(&self, create: bool) -> io::Result<(OwnedFd, &OsStr)> {
        let name = self
            .rel
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let parent = self.rel.parent().unwrap_or(Path::new(""));
        let mut dir = self.open_root()?;
        for component in parent.components() {
            let Component::Normal(part) = component else {
                // Admission produced this path from a resolved one: only plain names.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "unexpected component in a confined path",
                ));
            };
            let open = |dir: &OwnedFd| {
                nix::fcntl::openat2(
                    dir,
                    part,
                    how(OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty()),
                )
            };
            dir = match open(&dir) {
                Ok(fd) => fd,
                Err(Errno::ENOENT) if create => {
                    match nix::sys::stat::mkdirat(&dir, part, Mode::from_bits_truncate(0o777)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(errno(e)),
                    }
                    open(&dir).map_err(errno)?
                }
                Err(e) => return Err(errno(e)),
            };
        }
        Ok((dir, name))
    }
}

/// A confined path admitted for writing: the only way to change, rename or remove a file.
///
/// The gate makes one only for a path a call was admitted to write ([`Access::Write`]); a path
/// admitted for reading stays a [`ConfinedPath`], which has no method that changes anything. So
/// a read admission cannot write, move or delete, whatever the tool that holds it tries.
///
/// [`Access::Write`]: crate::vocab::Access::Write
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritePath(ConfinedPath);

impl std::ops::Deref for WritePath {
    type Target = ConfinedPath;
    fn deref(&self) -> &ConfinedPath {
        &self.0
    }
}

impl WritePath {
    /// Grants write access to a path the gate admitted for writing.
    pub(crate) fn grant(path: ConfinedPath) -> WritePath {
        WritePath(path)
    }

    /// Replaces the file's content atomically, creating it (and its folders) when missing.
    /// An existing file keeps its permission bits.
    pub fn write_atomic(&self, bytes: &[u8]) -> io::Result<()> {
        let (dir, name) = self.0.parent(true)?;
        let keep_mode =
            match nix::sys::stat::fstatat(&dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(st) => match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
                    SFlag::S_IFREG => Some(Mode::from_bits_truncate(st.st_mode & 0o7777)),
                    SFlag::S_IFLNK => return Err(errno(Errno::ELOOP)),
                    SFlag::S_IFDIR => return Err(errno(Errno::EISDIR)),
                    _ => return Err(io::Error::other("not a regular file")),
                },
                Err(Errno::ENOENT) => None,
                Err(e) => return Err(errno(e)),
            };
        let temp = write_temp(&dir, name, &mut &bytes[..], 0o666, |file| {
            if let Some(mode) = keep_mode {
                nix::sys::stat::fchmod(file, mode).map_err(errno)?;
            }
            file.sync_all()
        })?;
        if let Err(e) = nix::fcntl::renameat(&dir, temp.as_os_str(), &dir, name) {
            let _ = nix::unistd::unlinkat(
                &dir,
                temp.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
            return Err(errno(e));
        }
        File::from(dir).sync_all()
    }

    /// Removes the file (never a folder).
    pub fn remove_file(&self) -> io::Result<()> {
        let (dir, name) = self.0.parent(false)?;
        nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
            .map_err(errno)?;
        File::from(dir).sync_all()
    }

    /// Renames this path to `to`, creating `to`'s folders; refuses to replace an existing `to`.
    pub fn rename_to(&self, to: &WritePath) -> io::Result<()> {
        let (from_dir, from_name) = self.0.parent(false)?;
        let (to_dir, to_name) = to.0.parent(true)?;
        nix::fcntl::renameat2(
            &from_dir,
            from_name,
            &to_dir,
            to_name,
            RenameFlags::RENAME_NOREPLACE,
        )
        .map_err(errno)?;
        File::from(to_dir).sync_all()?;
        File::from(from_dir).sync_all()
    }
}

/// A file or link written beside its path under a temporary name, not yet renamed over it
/// ([`WritePath::stage_file`], [`WritePath::land`]): a commit writes every file first, makes
/// them durable at once, then renames them into place.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
}

/// The operations a commit of observed changes makes (issue 25, `crate::effects`). None of
/// them syncs: the commit makes the whole filesystem durable once after staging and once at
/// the end (`syncfs`), rather than once per file.
impl WritePath {
    /// Removes what is at the path — a file, a link, or a folder that is empty; nothing there
    /// is no error.
    pub fn remove_any(&self) -> io::Result<()> {
        let (dir, name) = self.0.parent(false)?;
        let removed =
            match nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
                Err(Errno::EISDIR | Errno::EPERM) => {
                    nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::RemoveDir)
                }
                other => other,
            };
        match removed {
            Ok(()) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(errno(e)),
        }
    }

    /// Writes what `source` reads to a new file beside the path, with `mode` and, when given,
    /// the modification time `times`; folders on the way are made. [`WritePath::land`] puts it
    /// in place.
    pub fn stage_file(
        &self,
        source: &mut File,
        mode: u32,
        times: Option<std::time::SystemTime>,
    ) -> io::Result<Staged> {
        let (dir, name) = self.0.parent(true)?;
        let temp = write_temp(&dir, name, source, 0o600, |file| {
            nix::sys::stat::fchmod(file, Mode::from_bits_truncate(mode)).map_err(errno)?;
            if let Some(t) = times {
                file.set_modified(t)?;
            }
            Ok(())
        })?;
        Ok(Staged { temp })
    }

    /// Makes a symbolic link to `target` beside the path; [`WritePath::land`] puts it in place.
    pub fn stage_link(&self, target: &Path) -> io::Result<Staged> {
        let (dir, name) = self.0.parent(true)?;
        let temp = temp_name(name);
        nix::unistd::symlinkat(target, &dir, temp.as_os_str()).map_err(errno)?;
        Ok(Staged { temp })
    }

    /// Renames what was staged over the path: a file or link there is replaced, an empty
    /// folder there removed first.
    pub fn land(&self, staged: Staged) -> io::Result<()> {
        let (dir, name) = self.0.parent(false)?;
        remove_empty_folder(&dir, name)?;
        nix::fcntl::renameat(&dir, staged.temp.as_os_str(), &dir, name).map_err(errno)
    }

    /// Removes what was staged and will not land.
    pub fn unstage(&self, staged: Staged) {
        if let Ok((dir, _)) = self.0.parent(false) {
            let _ = nix::unistd::unlinkat(
                &dir,
                staged.temp.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
    }

    /// Makes a folder at the path with `mode`, or gives the folder there `mode`; a file or a
    /// link there is replaced.
    pub fn make_folder(&self, mode: u32) -> io::Result<()> {
        let (dir, name) = self.0.parent(true)?;
        match nix::sys::stat::fstatat(&dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st)
                if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits())
                    == SFlag::S_IFDIR =>
            {
                return self.set_folder_mode(mode);
            }
            Ok(_) => nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
                .map_err(errno)?,
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(errno(e)),
        }
        nix::sys::stat::mkdirat(&dir, name, Mode::from_bits_truncate(mode)).map_err(errno)?;
        // The umask may have taken bits away.
        self.set_folder_mode(mode)
    }

    /// Gives the folder at the path `mode` (opened beneath the root, never through a link).
    pub fn set_folder_mode(&self, mode: u32) -> io::Result<()> {
        let fd = self.0.open_dir()?;
        nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(mode)).map_err(errno)
    }

    /// Makes everything written on the filesystem of the path's root durable (`syncfs`).
    pub fn sync_filesystem(&self) -> io::Result<()> {
        let root = self.0.open_root()?;
        nix::unistd::syncfs(&root).map_err(errno)
    }
}

/// Removes an empty folder at `name` in `dir`, if one is there (a path a run replaced: what was
/// below it is gone already).
fn remove_empty_folder(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    match nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st)
            if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFDIR =>
        {
            nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::RemoveDir).map_err(errno)
        }
        _ => Ok(()),
    }
}

/// Writes what `source` reads to a new temporary file beside `name` in `dir` (made with
/// `create_mode`, never through a link), then `finish`es it (modes, times, `fsync`); removes it
/// again if anything fails. Returns its name.
fn write_temp(
    dir: &OwnedFd,
    name: &OsStr,
    source: &mut dyn io::Read,
    create_mode: u32,
    finish: impl FnOnce(&File) -> io::Result<()>,
) -> io::Result<PathBuf> {
    let temp = temp_name(name);
    let fd = nix::fcntl::openat(
        dir,
        temp.as_os_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
        Mode::from_bits_truncate(create_mode),
    )
    .map_err(errno)?;
    let mut file = File::from(fd);
    let written = io::copy(source, &mut file).and_then(|_| finish(&file));
    if let Err(e) = written {
        let _ = nix::unistd::unlinkat(
            dir,
            temp.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
        return Err(e);
    }
    Ok(temp)
}

/// `.<name>.<pid>-<n>.reasonix-tmp`, hidden and unique within the folder.
fn temp_name(name: &OsStr) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut temp = Vec::with_capacity(name.len() + 32);
    temp.push(b'.');
    // Keep the name short enough for NAME_MAX (255) whatever the target's length.
    temp.extend_from_slice(&name.as_bytes()[..name.len().min(200)]);
    temp.extend_from_slice(format!(".{}-{n}.reasonix-tmp", std::process::id()).as_bytes());
    PathBuf::from(OsStr::from_bytes(&temp))
}
