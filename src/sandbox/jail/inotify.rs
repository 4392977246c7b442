//! The few inotify calls the walk for protected paths needs (`shape::WalkCache`): an instance,
//! a watch per folder read, and "has anything happened since I last looked". Through `libc`
//! directly (as `nix` re-exports it) rather than `nix`'s `inotify` feature: a feature turned on
//! in a dependency changes every symbol name of this crate, which the link order of a release
//! build (`linker/startup.order`) names.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc;

/// An inotify instance, non-blocking and closed on exec.
#[derive(Debug)]
pub(super) struct Inotify(OwnedFd);

impl Inotify {
    /// A new instance, or `None` where inotify cannot be had.
    pub(super) fn new() -> Option<Inotify> {
        // SAFETY: inotify_init1 takes integer flags only and returns a new descriptor or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just returned by the kernel, is open, and is owned by nothing else.
        Some(Inotify(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches the folder `dir` (not following a symbolic link) for entries made, removed or
    /// renamed in it and for its own removal or move; `false` if it cannot be watched.
    pub(super) fn watch_folder(&self, dir: &Path) -> bool {
        let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            return false;
        };
        let mask = libc::IN_CREATE
            | libc::IN_DELETE
            | libc::IN_MOVED_FROM
            | libc::IN_MOVED_TO
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF
            | libc::IN_ONLYDIR
            | libc::IN_DONT_FOLLOW;
        // SAFETY: the descriptor is open for the life of `self`; `c` is a NUL-terminated string
        // that lives across the call, which the kernel only reads.
        let wd = unsafe { libc::inotify_add_watch(self.0.as_raw_fd(), c.as_ptr(), mask) };
        wd >= 0
    }

    /// Whether no event (a queue overflow included) arrived since the last call; the queue is
    /// emptied. An error other than "nothing to read" counts as an event.
    pub(super) fn quiet(&self) -> bool {
        let mut buf = [0u8; 4096];
        let mut quiet = true;
        loop {
            // SAFETY: `buf` is a live, writable buffer of `buf.len()` bytes for the duration of
            // the call; the descriptor is open for the life of `self`.
            let n = unsafe {
                libc::read(
                    self.0.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                )
            };
            if n > 0 {
                quiet = false;
                continue;
            }
            if n == 0 {
                return false;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN) => return quiet,
                Some(libc::EINTR) => {}
                _ => return false,
            }
        }
    }
}
