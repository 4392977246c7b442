//! Raw Landlock system calls the `landlock` crate keeps to itself or cannot make between fork
//! and exec: the ABI the kernel reports, a rule on a folder mounted after the ruleset was built,
//! and restricting the calling process.

use std::os::fd::OwnedFd;

/// `landlock_path_beneath_attr`: packed, as the kernel declares it.
#[repr(C, packed)]
pub(super) struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds to the run's own `ruleset` the right `access` on the folder just mounted at `path` in
/// its mount namespace: the `/proc` of its PID namespace, an overlay over a write root (each a
/// new inode, which no rule built beforehand names). Between fork and exec.
pub(super) fn grant_fresh(
    ruleset: &OwnedFd,
    path: &std::ffi::CStr,
    access: u64,
) -> std::io::Result<()> {
    use nix::libc;
    use std::os::fd::AsRawFd;
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
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
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: proc_fd,
    };
    // SAFETY: `attr` is a live, packed `struct landlock_path_beneath_attr` the kernel reads;
    // the ruleset descriptor is open for the life of `ruleset`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0 as libc::c_uint,
        )
    };
    let result = if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    };
    // SAFETY: `proc_fd` was opened above and is used no more.
    unsafe { libc::close(proc_fd) };
    result
}

/// The Landlock ABI the kernel reports (`landlock_create_ruleset` asked for its version: no
/// ruleset is made), `None` where Landlock is absent or disabled. The `landlock` crate keeps this
/// query to itself.
pub(crate) fn landlock_abi_reported() -> Option<i32> {
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
pub(super) fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
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
