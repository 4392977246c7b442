//! Entering a run's own namespaces between fork and exec: the system calls that carry out a
//! [`Layout`] (see `super::super::mounts` for the order and why), and the process structure
//! that a PID namespace needs.
//!
//! # Who clones the command
//!
//! A new PID namespace applies to the children of the process that makes it, so the command's
//! process is cloned into it:
//!
//! ```text
//! reasonix ──clone(CLONE_VM | CLONE_VFORK | CLONE_NEWPID | CLONE_NEWNS [| CLONE_NEWUSER])──► the command (pid 1 inside)
//! reasonix ──fork (std)──► launcher ──setns(the proxy's network namespace), clone(the same)──► the command
//! ```
//!
//! Most runs take the first line ([`clone_command`]): the thread that starts the run clones the
//! command's process straight into its namespaces. It shares Reasonix's memory on a stack of its
//! own until it execs, while that thread is suspended (`CLONE_VFORK`): no page table is copied,
//! and nothing is torn down when it ends but the command itself. It does what std's fork did
//! for it (its signals, its process group, its standard streams, its descriptors), lays out the
//! mounts, confines itself and execs the command with the program, arguments and environment
//! prepared beforehand ([`Exec`]). If any step fails, it leaves the error in the memory it
//! shares and exits, and the thread returns the error. Reasonix waits for it as its child.
//!
//! A run whose connections go through the egress proxy takes the second: its network namespace
//! must be entered before the others are made (from inside a new user namespace, the proxy's
//! could not be joined), and not by a thread of Reasonix's, which would then be in it. The launcher — the child std forked,
//! running the `pre_exec` hook — enters it and clones the command in the same way ([`launch`]).
//! Once it has exec'd, the launcher blocks every signal, closes every descriptor (std's error
//! pipe with them, so that `spawn` returns), waits for the command and exits as it did: with its
//! status, or killed by its signal.
//!
//! Either way the command dies with the process that cloned it (`PR_SET_PDEATHSIG`), and
//! everything in its PID namespace dies with the command; the wall clock's `killpg` ends the
//! whole group.
//!
//! Everything the command's process runs here runs in memory it shares: system calls only, on
//! values prepared before it ([`Prepared`], [`Exec`]), no allocation, no lock.

use std::cell::UnsafeCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc::{self, c_int, c_long, c_uint, c_ulong};

use super::super::mounts::{Cover, Layer, Layout, Users};
use super::process::wait_raw;

const OPEN_TREE_CLONE: c_uint = 1;
const AT_RECURSIVE: c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const FSOPEN_CLOEXEC: c_uint = 0x1;
const FSMOUNT_CLOEXEC: c_uint = 0x1;
const FSCONFIG_SET_FLAG: c_uint = 0;
const FSCONFIG_SET_STRING: c_uint = 1;
const FSCONFIG_CMD_CREATE: c_uint = 6;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A [`Layout`] (and the user namespace's maps) as C strings, made before the fork; the child
/// reads them and writes only into `fds`, whose room is made here too.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// `clone` flags of the command's process.
    flags: c_ulong,
    /// The files written to map the user namespace (`setgroups`, `uid_map`, `gid_map`).
    maps: Vec<(&'static CStr, Vec<u8>)>,
    write_roots: Vec<CString>,
    /// Each overlay: the write root (its lower layer and where it is attached), its upper
    /// layer and work folder.
    overlays: Vec<[CString; 3]>,
    /// Mounted in a user namespace: overlayfs keeps its marks in `user.overlay.*`.
    userxattr: bool,
    /// Pass-through folders inside the overlays.
    passthrough: Vec<CString>,
    /// Each kind of cover, its path on the run's tmpfs (mounted over `tmp_at`) and the secrets
    /// it covers: one clone of it is attached over the first, and bound from there over the
    /// rest.
    covers: Vec<(Cover, CString, Vec<CString>)>,
    pins: Vec<CString>,
    read_only: Vec<CString>,
    tmp_run: CString,
    tmp_at: CString,
    workspace: CString,
    /// The detached mounts' descriptors: one per write root, overlay and pass-through folder,
    /// one per kind of cover, then the TMPDIR's.
    fds: Vec<c_int>,
}

pub(super) fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} holds a NUL byte", p.display()),
        )
    })
}

impl Prepared {
    /// Prepares `layout`, inside a user namespace mapping `users` when given.
    pub(crate) fn new(layout: &Layout, users: Option<Users>) -> io::Result<Prepared> {
        let all = |paths: &[std::path::PathBuf]| -> io::Result<Vec<CString>> {
            paths.iter().map(|p| c_path(p)).collect()
        };
        let mut flags = (libc::CLONE_NEWNS | libc::CLONE_NEWPID) as c_ulong;
        let mut maps = Vec::new();
        if let Some(Users { uid, gid }) = users {
            flags |= libc::CLONE_NEWUSER as c_ulong;
            maps = vec![
                (c"/proc/self/setgroups", b"deny".to_vec()),
                (c"/proc/self/uid_map", format!("{uid} {uid} 1").into_bytes()),
                (c"/proc/self/gid_map", format!("{gid} {gid} 1").into_bytes()),
            ];
        }
        let mut covers: Vec<(Cover, CString, Vec<CString>)> = Vec::new();
        for (target, cover) in &layout.covers {
            let target = c_path(target)?;
            match covers.iter_mut().find(|(c, _, _)| c == cover) {
                Some((_, _, targets)) => targets.push(target),
                None => covers.push((
                    *cover,
                    c_path(&layout.tmp_at.join(cover.name()))?,
                    vec![target],
                )),
            }
        }
        let overlays = layout
            .overlays
            .iter()
            .map(|Layer { root, upper, work }| Ok([c_path(root)?, c_path(upper)?, c_path(work)?]))
            .collect::<io::Result<Vec<_>>>()?;
        let mounts = layout.write_roots.len() + overlays.len() + layout.passthrough.len();
        Ok(Prepared {
            flags,
            maps,
            fds: vec![-1; mounts + covers.len() + 1],
            write_roots: all(&layout.write_roots)?,
            overlays,
            userxattr: users.is_some(),
            passthrough: all(&layout.passthrough)?,
            covers,
            pins: all(&layout.pins)?,
            read_only: all(&layout.read_only)?,
            tmp_run: c_path(&layout.tmp_run)?,
            tmp_at: c_path(&layout.tmp_at)?,
            workspace: c_path(&layout.workspace)?,
        })
    }

    /// In the command's process, first in its namespaces: maps the user namespace (if any),
    /// lays out the mounts and enters the working folder again.
    fn enter(&mut self) -> io::Result<()> {
        self.map_users()?;
        self.lay_out()
    }

    /// Maps the user namespace, if the command's process has one.
    fn map_users(&self) -> io::Result<()> {
        for (file, content) in &self.maps {
            write_file(file, content)?;
        }
        Ok(())
    }

    /// Lays out the mounts and enters the working folder again (the user namespace mapped).
    fn lay_out(&mut self) -> io::Result<()> {
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)?;
        let (roots, rest) = self.fds.split_at_mut(self.write_roots.len());
        let (overlays, rest) = rest.split_at_mut(self.overlays.len());
        let (passthrough, rest) = rest.split_at_mut(self.passthrough.len());
        let (covers, tmp) = rest.split_at_mut(self.covers.len());
        for (fd, root) in roots.iter_mut().zip(&self.write_roots) {
            *fd = open_tree(root, true)?;
        }
        // Before anything is mounted over the folder that holds their upper layers.
        for (fd, layer) in overlays.iter_mut().zip(&self.overlays) {
            *fd = overlay(layer, self.userxattr)?;
        }
        for (fd, folder) in passthrough.iter_mut().zip(&self.passthrough) {
            *fd = open_tree(folder, true)?;
        }
        // Before the covers' tmpfs goes over the folder the run's TMPDIR lies in.
        tmp[0] = open_tree(&self.tmp_run, true)?;
        if !self.covers.is_empty() {
            mount(
                Some(c"tmpfs"),
                &self.tmp_at,
                Some(c"tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            )?;
        }
        for (fd, (cover, source, _)) in covers.iter_mut().zip(&self.covers) {
            make_empty(*cover, source)?;
            *fd = open_tree(source, false)?;
            let sealed =
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
            set_attributes(*fd, c"", libc::AT_EMPTY_PATH as c_uint, sealed)?;
        }
        set_attributes(
            libc::AT_FDCWD,
            c"/",
            AT_RECURSIVE,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        )?;
        for (fd, root) in roots.iter().zip(&self.write_roots) {
            move_mount(*fd, root)?;
            close(*fd);
        }
        for (fd, [root, _, _]) in overlays.iter().zip(&self.overlays) {
            move_mount(*fd, root)?;
            close(*fd);
        }
        for (fd, folder) in passthrough.iter().zip(&self.passthrough) {
            move_mount(*fd, folder)?;
            close(*fd);
        }
        for (fd, (_, _, targets)) in covers.iter().zip(&self.covers) {
            let Some((first, rest)) = targets.split_first() else {
                close(*fd);
                continue;
            };
            move_mount(*fd, first)?;
            close(*fd);
            // A bind keeps the flags of the mount it copies: read-only, nosuid, nodev, noexec.
            for target in rest {
                mount(Some(first), target, None, libc::MS_BIND)?;
            }
        }
        // A host file that vanished since the parent looked has nothing left to protect.
        let gone = |e: &io::Error| e.raw_os_error() == Some(libc::ENOENT);
        for pin in &self.pins {
            match mount(Some(pin), pin, None, libc::MS_BIND | libc::MS_REC) {
                Err(e) if !gone(&e) => return Err(e),
                _ => {}
            }
        }
        for file in &self.read_only {
            match mount(Some(file), file, None, libc::MS_BIND | libc::MS_REC) {
                Err(e) if gone(&e) => continue,
                Err(e) => return Err(e),
                Ok(()) => {}
            }
            set_attributes(
                libc::AT_FDCWD,
                file,
                AT_RECURSIVE,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            )?;
        }
        move_mount(tmp[0], &self.tmp_at)?;
        close(tmp[0]);
        mount(
            Some(c"proc"),
            c"/proc",
            Some(c"proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
        )?;
        // SAFETY: `workspace` is a NUL-terminated path that lives across the call.
        check(unsafe { libc::chdir(self.workspace.as_ptr()) } as c_long)?;
        Ok(())
    }
}

/// A detached overlay mount of `layer` (lower, upper, work): its descriptor, for `move_mount`.
/// The overlay is made with the new mount API, so no option string is parsed: a path holding
/// `,` or `:` stays one path (`lowerdir+`, kernel 6.8; an older kernel gets `lowerdir`, which
/// refuses such a path rather than misreading it). Renamed folders are copied rather than
/// redirected (`redirect_dir=off`) and a copy-up copies data too (`metacopy=off`), so that the
/// upper layer holds every change as plain files, folders, links and whiteouts; nothing set-id
/// or device-like runs from it (`nosuid`, `nodev`). In a user namespace overlayfs keeps its
/// marks in `user.overlay.*` (`userxattr`), and refuses `redirect_dir=off` beside it
/// ("conflicting options"): there it is `nofollow`, which makes no redirect either (nor follows
/// one), so a renamed folder is copied all the same.
fn overlay(layer: &[CString; 3], userxattr: bool) -> io::Result<c_int> {
    let [lower, upper, work] = layer;
    // SAFETY: a NUL-terminated literal and integer flags.
    let fs = check(unsafe { libc::syscall(libc::SYS_fsopen, c"overlay".as_ptr(), FSOPEN_CLOEXEC) })?
        as c_int;
    let made = (|| {
        if let Err(e) = fs_set(fs, c"lowerdir+", Some(lower)) {
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(e);
            }
            fs_set(fs, c"lowerdir", Some(lower))?;
        }
        fs_set(fs, c"upperdir", Some(upper))?;
        fs_set(fs, c"workdir", Some(work))?;
        let redirect = if userxattr { c"nofollow" } else { c"off" };
        fs_set(fs, c"redirect_dir", Some(redirect))?;
        fs_set(fs, c"metacopy", Some(c"off"))?;
        if userxattr {
            fs_set(fs, c"userxattr", None)?;
        }
        // SAFETY: the command takes no key or value.
        check(unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_CMD_CREATE,
                std::ptr::null::<c_char>(),
                std::ptr::null::<c_void>(),
                0 as c_int,
            )
        })?;
        // SAFETY: integer arguments only.
        let fd = check(unsafe {
            libc::syscall(
                libc::SYS_fsmount,
                fs,
                FSMOUNT_CLOEXEC,
                (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) as c_uint,
            )
        })?;
        Ok(fd as c_int)
    })();
    close(fs);
    made
}

/// Sets one parameter of the filesystem context `fs`: a string, or a flag when `value` is
/// `None`.
fn fs_set(fs: c_int, key: &CStr, value: Option<&CStr>) -> io::Result<()> {
    let (cmd, value) = match value {
        Some(v) => (FSCONFIG_SET_STRING, v.as_ptr()),
        None => (FSCONFIG_SET_FLAG, std::ptr::null()),
    };
    // SAFETY: `key` and `value` are NUL-terminated strings (or null for a flag) that live
    // across the call.
    check(unsafe { libc::syscall(libc::SYS_fsconfig, fs, cmd, key.as_ptr(), value, 0 as c_int) })
        .map(drop)
}

/// Makes the empty folder (mode `0555`) or file (`0444`) of a cover at `path`, whatever the
/// umask. System calls only.
fn make_empty(cover: Cover, path: &CStr) -> io::Result<()> {
    let (mode, fd) = match cover {
        Cover::Dir => {
            // SAFETY: `path` is a NUL-terminated path that lives across the call.
            check(unsafe { libc::mkdir(path.as_ptr(), 0o555) } as c_long)?;
            // SAFETY: as above.
            let fd = unsafe {
                libc::open(
                    path.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            (0o555, fd)
        }
        // SAFETY: `path` is a NUL-terminated path that lives across the call; the mode is
        // passed as the variadic third argument O_CREAT reads.
        Cover::File => (0o444, unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o444 as c_uint,
            )
        }),
    };
    let fd = check(fd as c_long)? as c_int;
    // SAFETY: `fd` was opened above; fchmod takes integers only.
    let changed = check(unsafe { libc::fchmod(fd, mode) } as c_long);
    close(fd);
    changed.map(drop)
}

/// A program, its arguments and its environment as `execve` takes them, prepared before the
/// fork.
pub(crate) struct Exec {
    program: CString,
    _strings: Vec<CString>,
    /// Null-terminated pointers into `_strings`: the arguments, the environment, and the
    /// arguments of `/bin/sh` running the program as a script (as `execvp` does when the kernel
    /// does not know its format).
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    script: Vec<*const c_char>,
}

// SAFETY: the pointers point into the `CString`s the same value owns, which never change or
// move (their buffers are on the heap) while it lives; nothing writes through them.
unsafe impl Send for Exec {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Exec {}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exec")
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

impl Exec {
    /// `program` (a path), run as `name` (its first argument, as given) with `args`, in `env`.
    pub(crate) fn new(
        program: &Path,
        name: &str,
        args: &[String],
        env: &[(String, String)],
    ) -> io::Result<Exec> {
        let c = |s: &str| {
            CString::new(s).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a NUL byte in an argument or the environment",
                )
            })
        };
        let mut strings = Vec::with_capacity(1 + args.len() + env.len());
        let mut argv = Vec::with_capacity(args.len() + 2);
        let mut envp = Vec::with_capacity(env.len() + 1);
        for a in std::iter::once(name).chain(args.iter().map(String::as_str)) {
            let s = c(a)?;
            argv.push(s.as_ptr());
            strings.push(s);
        }
        for (k, v) in env {
            let s = c(&format!("{k}={v}"))?;
            envp.push(s.as_ptr());
            strings.push(s);
        }
        let program = c_path(program)?;
        let mut script = vec![c"/bin/sh".as_ptr(), program.as_ptr()];
        script.extend_from_slice(&argv[1..]);
        argv.push(std::ptr::null());
        envp.push(std::ptr::null());
        script.push(std::ptr::null());
        Ok(Exec {
            program,
            _strings: strings,
            argv,
            envp,
            script,
        })
    }

    /// Replaces this process with the program (or, if the kernel does not know its format, with
    /// `/bin/sh` running it, as `execvp` does); returns only the error.
    fn exec(&self) -> io::Error {
        // SAFETY: the paths are NUL-terminated and `argv`, `script` and `envp` null-terminated
        // arrays of NUL-terminated strings, all owned by `self` (or static) and alive across the
        // calls.
        unsafe {
            libc::execve(
                self.program.as_ptr(),
                self.argv.as_ptr(),
                self.envp.as_ptr(),
            );
            if io::Error::last_os_error().raw_os_error() == Some(libc::ENOEXEC) {
                libc::execve(
                    c"/bin/sh".as_ptr(),
                    self.script.as_ptr(),
                    self.envp.as_ptr(),
                );
                return io::Error::from_raw_os_error(libc::ENOEXEC);
            }
        }
        io::Error::last_os_error()
    }
}

/// The stack the command's process runs on until it execs. Only ever written by that process,
/// in the launcher's private copy of this memory (each run's launcher is a process of its own,
/// forked by std), never in Reasonix itself.
struct Stack(UnsafeCell<[u8; STACK_SIZE]>);

const STACK_SIZE: usize = 256 * 1024;

// SAFETY: Reasonix's own threads never touch it (see the type's doc); each launcher has its own
// copy and one command process at a time on it.
unsafe impl Sync for Stack {}

static STACK: Stack = Stack(UnsafeCell::new([0; STACK_SIZE]));

/// What the command's process reads and writes in the launcher's memory.
struct Launch<'a> {
    ns: &'a mut Prepared,
    exec: &'a Exec,
    confine: &'a dyn Fn() -> io::Result<()>,
    /// The error that stopped it before exec (0: it exec'd).
    error: c_int,
    /// A pidfd of the process that cloned it, the launcher or Reasonix (-1 where the kernel has
    /// none): how the command tells that it is gone, which `getppid` cannot say from inside a
    /// new PID namespace.
    parent: c_int,
    /// Cloned by the run's own thread rather than a launcher: what it does first.
    direct: Option<Direct>,
}

/// The command's process: first in its namespaces, it dies with the process that cloned it,
/// (cloned by the run's thread) takes its signals, group and streams, lays out its mounts,
/// confines itself and execs; on an error, it leaves the error code and exits.
extern "C" fn command(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Launch` that `clone_on` passed to clone; it lives in the memory of
    // the process that cloned this one, which this process shares while the cloning thread is
    // suspended (CLONE_VFORK), so no one else accesses it until this process execs or exits.
    let launch = unsafe { &mut *arg.cast::<Launch<'_>>() };
    let started = (|| -> io::Result<()> {
        if launch.direct.is_some() {
            default_signals();
        }
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
            .map_err(|e| io::Error::from_raw_os_error(e as i32))?;
        // Had its parent died before the prctl (killed with Reasonix while suspended in the
        // clone), no signal would come: its pidfd, readable once it has exited, says so.
        if launch.parent >= 0 {
            let mut gone = libc::pollfd {
                fd: launch.parent,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one live `pollfd` on this stack, with no timeout.
            if unsafe { libc::poll(&mut gone, 1, 0) } != 0 {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        if let Some(direct) = &launch.direct {
            // SAFETY: setpgid and dup2 with integer arguments only.
            check(unsafe { libc::setpgid(0, 0) } as c_long)?;
            for (n, &fd) in direct.stdio.iter().enumerate() {
                if fd >= 0 {
                    // SAFETY: as above; `fd` is 3 or above, so never `n` itself.
                    check(unsafe { libc::dup2(fd, n as c_int) } as c_long)?;
                }
            }
            super::pre_exec::close_inherited(direct.open_max)?;
        }
        launch.ns.enter()?;
        (launch.confine)()?;
        if launch.direct.is_some() {
            // SAFETY: sigemptyset and sigprocmask on a set on this stack: the command starts
            // with no signal blocked, as std starts a process.
            unsafe {
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            }
        }
        Err(launch.exec.exec())
    })();
    launch.error = started
        .err()
        .and_then(|e| e.raw_os_error())
        .filter(|&e| e != 0)
        .unwrap_or(libc::EIO);
    127
}

/// In the launcher (std's forked child): starts the command in its namespaces, applying
/// `confine` there before exec. Returns only if the command could not be started, with why;
/// once it has exec'd, the launcher waits for it and exits as it did.
pub(super) fn launch(
    ns: &mut Prepared,
    exec: &Exec,
    confine: &dyn Fn() -> io::Result<()>,
) -> io::Result<()> {
    let mut launch = Launch {
        ns,
        exec,
        confine,
        error: 0,
        parent: own_pidfd(),
        direct: None,
    };
    // The top of the stack, 16-byte aligned as the ABI asks.
    let top = (STACK.0.get() as usize + STACK_SIZE) & !0xf;
    // SAFETY: `command` runs on `STACK` (this launcher's own copy, unused by anything else)
    // sharing this process's memory; CLONE_VFORK suspends this process until it execs or
    // exits, so `launch` is not touched by both at once, and outlives its use there.
    let pid = unsafe { clone_on(top, &mut launch) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if launch.error != 0 {
        let _ = wait_raw(pid, 0);
        return Err(io::Error::from_raw_os_error(launch.error));
    }
    relay(pid)
}

/// What the command's process does first when the run's own thread clones it
/// ([`clone_command`]): what std's fork and the launcher did for it otherwise.
pub(super) struct Direct {
    /// The descriptors it takes as 0, 1 and 2 (-1: Reasonix's own, inherited), each 3 or
    /// above.
    pub(super) stdio: [c_int; 3],
    /// Where the descriptors end, on a kernel without `close_range`.
    pub(super) open_max: c_int,
}

/// Clones the command's process straight into its namespaces from the thread that starts the
/// run: no launcher is forked, so Reasonix's page tables are not copied, nor torn down again
/// when it exits. The process shares Reasonix's memory until it execs, on a stack of its own,
/// while this thread alone is suspended (`CLONE_VFORK`); Reasonix's other threads run on, and
/// share nothing with it: it makes system calls only, on values this thread prepared ([`Prepared`],
/// [`Exec`], `direct`), allocates nothing and takes no lock. Every signal is blocked across the
/// clone, so no handler of Reasonix's runs in it; it sets each handled signal back to its default
/// action, then unblocks them all just before exec.
///
/// It leads a process group of its own, takes `direct`'s streams, marks every other descriptor
/// close-on-exec, dies with this thread (`PR_SET_PDEATHSIG`, checked against a pidfd of Reasonix
/// for a death in between), lays out its mounts, applies `confine` and execs. Returns its pid
/// once it has exec'd (a child of this process, to be reaped by it), or the error of the step
/// that failed (it is reaped then).
pub(super) fn clone_command(
    ns: &mut Prepared,
    exec: &Exec,
    confine: &dyn Fn() -> io::Result<()>,
    direct: Direct,
) -> io::Result<libc::pid_t> {
    let parent = own_pidfd();
    let mut launch = Launch {
        ns,
        exec,
        confine,
        error: 0,
        parent,
        direct: Some(direct),
    };
    // Its stack, on the heap: its own for each run, since runs may start on several threads at
    // once. Not zeroed (a stack is written before it is read); its pages are touched only as
    // the process uses them. Only the pointer to its spare room is taken, never a slice.
    let mut stack: Vec<u8> = Vec::with_capacity(STACK_SIZE);
    // The top of the stack, 16-byte aligned as the ABI asks.
    let top = (stack.as_mut_ptr() as usize + STACK_SIZE) & !0xf;
    // SAFETY: sigfillset and pthread_sigmask on sets on this stack: this thread blocks every
    // signal it can across the clone, and takes back its mask after.
    let mut kept: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut kept);
    }
    // SAFETY: `command` runs on `stack`, which nothing else uses and which outlives it, sharing
    // Reasonix's memory while this thread is suspended until it execs or exits (CLONE_VFORK):
    // it reads and writes `launch` alone, which this thread does not touch until then, and
    // its errno is this suspended thread's (see the function's doc for the rest).
    let pid = unsafe { clone_on(top, &mut launch) };
    let cloned = io::Error::last_os_error();
    // SAFETY: as above; the mask this thread had.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &kept, std::ptr::null_mut()) };
    drop(stack);
    if parent >= 0 {
        close(parent);
    }
    if pid < 0 {
        return Err(cloned);
    }
    if launch.error != 0 {
        let _ = wait_raw(pid, 0);
        return Err(io::Error::from_raw_os_error(launch.error));
    }
    Ok(pid)
}

/// Clones `command` on the stack whose top is `top`, into `launch.ns`'s namespaces, sharing
/// this process's memory, this thread suspended until it execs or exits.
///
/// # Safety
///
/// `top` is the 16-byte-aligned top of a stack that nothing else uses and that outlives the
/// call; `launch` is not touched by anything else until the call returns.
unsafe fn clone_on(top: usize, launch: &mut Launch<'_>) -> libc::pid_t {
    let flags = launch.ns.flags as c_int | libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    // SAFETY: as the caller promises.
    unsafe {
        libc::clone(
            command,
            top as *mut c_void,
            flags,
            (launch as *mut Launch<'_>).cast::<c_void>(),
        )
    }
}

/// A pidfd of this process, -1 where the kernel has none (before 5.3).
fn own_pidfd() -> c_int {
    // SAFETY: getpid and pidfd_open with integer arguments only; the descriptor it returns is
    // close-on-exec.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0 as c_uint) };
    c_int::try_from(fd).unwrap_or(-1)
}

/// Whether a run's namespaces can be made here (in a user namespace when `user`): a throwaway
/// child makes them over a small layout — every kind of step a run takes — and exits. It is
/// cloned as a run's command is (`CLONE_VM | CLONE_VFORK`, on a stack of its own), so Reasonix's
/// memory is not copied for it (issue 12: a fork copied the page tables of the whole process,
/// then faulted the pages its threads wrote back in).
///
/// The layout's folders and files are made by the child itself, on a tmpfs it mounts over the
/// folder of temporary files inside its own mount namespace: nothing is made or removed on the
/// host's disk, where removing folders cost milliseconds (ext4 mounted with `discard` on the
/// machine issue 12 measured; the trial on disk took most of `sandbox exec`'s probe).
pub(crate) fn namespaces_work(user: bool) -> bool {
    try_namespaces(user, false).is_ok()
}

/// Whether a run's namespaces can be made here with its write roots as overlays too (issue
/// 25): [`namespaces_work`]'s trial with an overlay, and a pass-through folder inside it, in
/// the layout. `false` where overlayfs is missing or refuses (a kernel before 5.11 in a user
/// namespace, say).
pub(crate) fn overlays_work(user: bool) -> bool {
    try_namespaces(user, true).is_ok()
}

fn try_namespaces(user: bool, overlay: bool) -> io::Result<()> {
    let root = std::env::temp_dir().canonicalize()?;
    let (ws, runs) = (root.join("ws"), root.join("runs"));
    let run = runs.join("run");
    let ovl = root.join("ovl");
    let (lower, upper, work) = (ovl.join("lower"), ovl.join("upper"), ovl.join("work"));
    let pass = lower.join("pass");
    let all =
        |paths: &[&Path]| -> io::Result<Vec<CString>> { paths.iter().map(|p| c_path(p)).collect() };
    let mut folders = vec![&ws, &runs, &run];
    let (pinned, secrets) = (ws.join("pinned"), ws.join("secrets"));
    folders.extend([&pinned, &secrets]);
    if overlay {
        folders.extend([&ovl, &lower, &upper, &work, &pass]);
    }
    let scratch = Scratch {
        root: c_path(&root)?,
        folders: all(&folders.iter().map(|p| p.as_path()).collect::<Vec<_>>())?,
        files: all(&[&ws.join("secret"), &ws.join("pinned/host")])?,
    };
    let layout = Layout {
        write_roots: vec![ws.clone()],
        overlays: if overlay {
            vec![Layer {
                root: lower.clone(),
                upper: upper.clone(),
                work: work.clone(),
            }]
        } else {
            Vec::new()
        },
        passthrough: if overlay {
            vec![pass.clone()]
        } else {
            Vec::new()
        },
        covers: vec![
            (ws.join("secret"), Cover::File),
            (ws.join("secrets"), Cover::Dir),
        ],
        pins: vec![ws.join("pinned")],
        read_only: vec![ws.join("pinned/host")],
        tmp_run: run,
        tmp_at: runs,
        workspace: ws,
    };
    let users = user.then(|| Users {
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
    });
    let mut trial = Trial {
        prepared: Prepared::new(&layout, users)?,
        scratch,
    };
    // The trial's stack, on the heap: its pages are touched only as the child uses them.
    let mut stack = vec![0u8; TRIAL_STACK];
    // The top of the stack, 16-byte aligned as the ABI asks.
    let top = (stack.as_mut_ptr() as usize + TRIAL_STACK) & !0xf;
    let flags = trial.prepared.flags as c_int | libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    // SAFETY: `try_in_child` runs on `stack`, which nothing else uses and which outlives it,
    // sharing this process's memory (CLONE_VM) while this thread is suspended until it exits
    // (CLONE_VFORK): it reads and writes `trial` alone, which this thread does not touch until
    // then, makes system calls only — no allocation, no lock, so Reasonix's other threads,
    // running meanwhile, share nothing with it — and its errno is this suspended thread's. It
    // has descriptors, a working folder and namespaces of its own (no CLONE_FILES, CLONE_FS).
    let pid = unsafe {
        libc::clone(
            try_in_child,
            top as *mut c_void,
            flags,
            (&mut trial as *mut Trial).cast::<c_void>(),
        )
    };
    drop(stack);
    let pid = check(pid as c_long)? as libc::pid_t;
    // A blocking wait returns a status; none would be a failed trial, never a passed one.
    let status =
        wait_raw(pid, 0)?.ok_or_else(|| io::Error::other("the probe child was not reaped"))?;
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, code) => Err(io::Error::from_raw_os_error(code)),
        _ => Err(io::Error::other("the probe child was killed")),
    }
}

/// The trial child's stack: lay_out's frames are small, but a mount call made through libc
/// has room.
const TRIAL_STACK: usize = 64 * 1024;

/// What the trial's child reads and writes, in the memory it shares with the prober.
struct Trial {
    prepared: Prepared,
    scratch: Scratch,
}

/// The trial's child: first in its namespaces, it maps its user namespace, makes the scratch
/// layout and lays out the mounts; it exits with 0, or the error code of the step that failed.
extern "C" fn try_in_child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Trial` that `try_namespaces` passed to clone; the thread that owns
    // it is suspended (CLONE_VFORK) until this process exits, so no one else accesses it.
    let trial = unsafe { &mut *arg.cast::<Trial>() };
    let entered = trial
        .prepared
        .map_users()
        .and_then(|()| trial.scratch.make())
        .and_then(|()| trial.prepared.lay_out());
    match entered {
        Ok(()) => 0,
        Err(e) => e.raw_os_error().unwrap_or(1).clamp(1, 255),
    }
}

/// The folders and files of the trial's layout, as C strings made before the fork.
struct Scratch {
    /// Where the tmpfs that holds them is mounted.
    root: CString,
    folders: Vec<CString>,
    files: Vec<CString>,
}

impl Scratch {
    /// In the trial's child, its user namespace mapped: makes every mount private, mounts an
    /// empty tmpfs over `root` and makes the folders, then the (empty) files, in it. System
    /// calls only.
    fn make(&self) -> io::Result<()> {
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)?;
        mount(
            Some(c"tmpfs"),
            &self.root,
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
        )?;
        for folder in &self.folders {
            // SAFETY: `folder` is a NUL-terminated path that lives across the call.
            check(unsafe { libc::mkdir(folder.as_ptr(), 0o700) } as c_long)?;
        }
        for file in &self.files {
            // SAFETY: `file` is a NUL-terminated path that lives across the call; the mode is
            // passed as the variadic third argument O_CREAT reads.
            let fd = unsafe {
                libc::open(
                    file.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                    0o600 as c_uint,
                )
            };
            close(check(fd as c_long)? as c_int);
        }
        Ok(())
    }
}

fn check(rc: c_long) -> io::Result<c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The launcher's part: waits for the command and exits as it did. Never returns.
/// In a process cloned by the run's thread, every signal still blocked: each signal Reasonix
/// handles goes back to its default action, as does `SIGPIPE` (which Rust's runtime ignores), so
/// that the command starts as std starts a process — and no handler of Reasonix's can run in a
/// process that shares its memory. A signal ignored by whoever started Reasonix stays ignored.
fn default_signals() {
    for signal in 1..65 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: sigaction on `sigaction` values on this stack; a number the C library keeps
        // for itself, or above the kernel's last, fails with EINVAL and is left alone.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let ignored = old.sa_sigaction == libc::SIG_IGN && signal != libc::SIGPIPE;
            if ignored || old.sa_sigaction == libc::SIG_DFL {
                continue;
            }
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &default, std::ptr::null_mut());
        }
    }
}

fn relay(pid: libc::pid_t) -> ! {
    use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};
    // No handler inherited from Reasonix runs here; SIGKILL (the wall clock's) still ends it.
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::all()), None);
    // Std's error pipe among them: spawn returns once the command has exec'd.
    // SAFETY: close_range with integer arguments only; this process uses no descriptor after it.
    unsafe { libc::syscall(libc::SYS_close_range, 0 as c_uint, c_uint::MAX, 0 as c_uint) };
    let status = match wait_raw(pid, 0) {
        Ok(Some(status)) => status,
        // SAFETY: `_exit` ends this process at once.
        _ => unsafe { libc::_exit(127) },
    };
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
        // SAFETY: signal, sigprocmask and kill with integer arguments and a set built on the
        // stack: restore the default action of the command's signal, unblock it and take it,
        // so that Reasonix sees the launcher end as the command did.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        // SAFETY: `_exit` ends this process at once (a signal that did not kill it).
        unsafe { libc::_exit(128 + signal) }
    }
    // SAFETY: `_exit` ends this process at once, with the command's status.
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}

fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: c_ulong,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: each pointer is null or a NUL-terminated string that lives across the call; the
    // data argument is null.
    let rc = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            std::ptr::null(),
        )
    };
    check(rc as c_long).map(drop)
}

/// A detached clone of the mount at `path` (and those below it when `recursive`).
fn open_tree(path: &CStr, recursive: bool) -> io::Result<c_int> {
    let mut flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as c_uint;
    if recursive {
        flags |= AT_RECURSIVE;
    }
    // SAFETY: `path` is a NUL-terminated string that lives across the call.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    check(fd).map(|fd| fd as c_int)
}

/// Attaches the detached tree `fd` over `target`.
fn move_mount(fd: c_int, target: &CStr) -> io::Result<()> {
    // SAFETY: both paths are NUL-terminated strings that live across the call; `fd` is a
    // descriptor this process opened.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    check(rc).map(drop)
}

/// Sets mount attributes on the mount at `dirfd`/`path`.
fn set_attributes(dirfd: c_int, path: &CStr, flags: c_uint, set: u64) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is a NUL-terminated string and `attr` a `struct mount_attr` of the size
    // given, both live across the call; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(rc).map(drop)
}

fn close(fd: c_int) {
    // SAFETY: `fd` is a descriptor this process opened and uses no more.
    unsafe { libc::close(fd) };
}

/// Writes `content` to `file` in one `write`.
fn write_file(file: &CStr, content: &[u8]) -> io::Result<()> {
    // SAFETY: `file` is a NUL-terminated string that lives across the call.
    let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd as c_long)?;
    // SAFETY: `content` is a live buffer of `content.len()` bytes the kernel reads.
    let n = unsafe { libc::write(fd, content.as_ptr().cast(), content.len()) };
    let written = check(n as c_long);
    close(fd);
    match written {
        Ok(n) if n as usize == content.len() => Ok(()),
        Ok(_) => Err(io::Error::from_raw_os_error(libc::EIO)),
        Err(e) => Err(e),
    }
}
