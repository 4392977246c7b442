//! Raw Landlock system calls the `landlock` crate keeps to itself or cannot make between fork
//! and exec: the ABI the kernel reports, a rule whose descriptor's type is known (without the
//! crate's `fstat`), a rule on a folder mounted after the ruleset was built, and restricting the
//! calling process.

use std::os::fd::OwnedFd;

/// `landlock_path_beneath_attr`: packed, as the kernel declares it.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds to the run's own `ruleset` the right `access` on the folder just mounted at `path` in
/// its mount namespace: the `/proc` of its PID namespace, an overlay over a write root (each a
/// new inode, which no rule built beforehand names). Between fork and exec.
pub(in crate::sandbox::jail) fn grant_fresh(
    ruleset: &OwnedFd,
    path: &std::ffi::CStr,
    access: u64,
) -> std::io::Result<()> {
    use nix::libc;
    use std::os::fd::{AsFd, BorrowedFd};
    // SAFETY: `path` is a NUL-terminated string that lives across the call.
    let proc_fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if proc_fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `proc_fd` was opened above and is closed below, after its last use.
    let parent = unsafe { BorrowedFd::borrow_raw(proc_fd) };
    let result = add_path_rule(ruleset.as_fd(), parent, access);
    // SAFETY: `proc_fd` was opened above and is used no more.
    unsafe { libc::close(proc_fd) };
    result
}

/// Adds to `ruleset` the right `access` beneath `parent` (`landlock_add_rule` with a
/// `landlock_path_beneath_attr`). Unlike the `landlock` crate's `PathBeneath`, it does not `fstat`
/// `parent` to learn whether it is a folder: the caller knows, and gives only rights that the
/// ruleset handles and that fit the descriptor's type (the kernel refuses, `EINVAL`, folder
/// rights on a file). Also between fork and exec: a system call, no allocation.
pub(in crate::sandbox::jail) fn add_path_rule(
    ruleset: std::os::fd::BorrowedFd<'_>,
    parent: std::os::fd::BorrowedFd<'_>,
    access: u64,
) -> std::io::Result<()> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: `attr` is a live, packed `struct landlock_path_beneath_attr` the kernel reads;
    // both descriptors are borrowed for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0 as libc::c_uint,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The Landlock ABI the kernel reports (`landlock_create_ruleset` asked for its version: no
/// ruleset is made), `None` where Landlock is absent or disabled. The `landlock` crate keeps this
/// query to itself.
pub(super) fn landlock_abi_reported() -> Option<i32> {
    use nix::libc;
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the version flag, the kernel reads no
    // memory, makes no descriptor and returns the ABI version or -1.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0 as libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).ok().filter(|v| *v >= 1)
}

/// Restricts the calling process with `ruleset` (`no_new_privs` is set already). Between fork
/// and exec.
pub(in crate::sandbox::jail) fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    // SAFETY: landlock_restrict_self with a descriptor open for the life of `ruleset` and no
    // flags; no memory is passed to the kernel.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset.as_raw_fd(),
            0 as libc::c_uint,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
