//! Running one process under a plan: spawn, jail between fork and exec, watch the clock, capture
//! a bounded output, and leave nothing behind.
//!
//! # What happens to the process group
//!
//! The child leads a new process group. When the main process exits — or the wall clock runs
//! out — the whole group is killed with `SIGKILL`, and, where the run has a pids cgroup, every
//! process still in it too (even one that left the group with `setsid`). With a PID namespace,
//! the command is its pid 1, and the kernel kills everything in the namespace when it exits. So
//! a jailed command never leaves a background process behind.
//!
//! With namespaces, the thread that starts the run clones the command straight into them
//! ([`namespace::clone_command`]): no launcher, no copy of Reasonix's page tables. Only a run
//! that joins the egress proxy's network namespace first has a launcher (the child std forks,
//! which enters it and clones the command); without namespaces, the child std forked execs the
//! command itself.
//!
//! # When Reasonix itself dies
//!
//! Each process of the chain dies with the one before it (`PR_SET_PDEATHSIG`, set and then
//! checked against a parent that may already be gone — its pid, or a pidfd of it from inside a
//! PID namespace — so there is no window between the clone and `prctl`): a `kill -9` of
//! Reasonix kills the command (or the launcher, whose death kills the command), and with a PID
//! namespace everything the command started dies with it. Without one, what the
//! command left in the background lives on in the run's cgroups until the next Reasonix that
//! probes the jail reclaims the cgroups whose owner is gone (`cgroup::reclaim`).
//!
//! # Where each part lives
//!
//! - `mod.rs`: one run — its folders, its environment, the start, the wait, the result;
//! - `pre_exec.rs`: what the command's process applies between fork and exec (`Confine`);
//! - `cap_drop.rs`: how it loses its capabilities (`CapDrop`);
//! - `cgroups.rs`: the run's cgroups, and what stands in for one that cannot be made;
//! - [`namespace`]: the command cloned into new namespaces; `process.rs`: a started process,
//!   cloned or forked, and its pipes; `watch.rs`: the clock and the bounded output; `idle.rs`:
//!   the cgroups and run folders kept between runs; `child.rs`: a long-lived jailed process.

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::resource::Resource;
use nix::unistd::Pid;

use super::cgroup::Cgroup;
use super::folder::Folder;
use super::mounts::{self, Layer, Layout};
use super::shape::{Shape, Writes};
use super::{Enforcement, JailPlan};

mod cap_drop;
mod cgroups;
mod child;
mod idle;
mod namespace;
mod pre_exec;
mod process;
mod watch;

pub use child::Jailed;
pub(crate) use child::spawn;

pub(super) use idle::{IdleCgroups, IdleTmpdirs};
use namespace::{Direct, Exec, Prepared};
pub(super) use namespace::{namespaces_work, overlays_work};
use process::{Cloned, Pipes, Process, Stream};
use watch::Watch;

pub(super) use cap_drop::CapDrop;
pub(super) use cgroups::seed_cgroups;
use cgroups::{RunCgroups, run_cgroups};
use pre_exec::{Confine, close_inherited, die_with};

/// What to do with the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    /// Keep at most this many bytes of each stream, head and tail.
    Bounded(usize),
    /// Let the output go to Reasonix's own stdout and stderr (`sandbox exec`).
    Inherit,
}

/// How the process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// The wall clock ran out; the group was killed.
    TimedOut,
}

impl Exit {
    /// The status a shell would report: the exit status, 128 + signal, or 124 for a timeout
    /// (as `timeout(1)` does).
    pub fn code(self) -> i32 {
        match self {
            Exit::Exited(c) => c,
            Exit::Signaled(s) => 128 + s,
            Exit::TimedOut => 124,
        }
    }
}

/// A finished run.
#[derive(Debug)]
pub struct RunResult {
    /// How it ended.
    pub exit: Exit,
    /// Standard output, bounded (empty with [`Capture::Inherit`]).
    pub stdout: String,
    /// Standard error, bounded.
    pub stderr: String,
    /// The true size of standard output.
    pub stdout_bytes: u64,
    /// The true size of standard error.
    pub stderr_bytes: u64,
    /// How long it ran.
    pub duration: Duration,
    /// What the plan promised and this run could not apply (under `best_effort`; `enforce`
    /// refuses the run instead), in words. Empty when the run kept every promise.
    pub not_enforced: Vec<String>,
    /// Each connection its processes asked the egress proxy for, in order (empty without one).
    pub connections: Vec<crate::egress::Connection>,
    /// How it could write: as its shape asked, or in place where `best_effort` could not
    /// observe (then [`RunResult::not_enforced`] says why).
    pub writes: Writes,
    /// What it wrote, kept apart, when it wrote observed: the upper layer of each write root,
    /// every process of the run gone. Nothing of it is in the workspace yet; dropping it
    /// discards it ([`crate::effects`] reads, judges and commits it).
    pub observed: Option<Upper>,
}

/// The upper layers of a run that wrote observed: for each write root, the folder holding
/// what the run created, changed and deleted there (overlayfs's whiteouts and opaque marks
/// included), and the pass-through folders it wrote in place. Removed whole on drop.
#[derive(Debug)]
pub struct Upper {
    _dir: tempfile::TempDir,
    /// Each write root (canonical) and its upper layer.
    pub layers: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    /// The pass-through folders (canonical), written in place.
    pub passthrough: Vec<std::path::PathBuf>,
    /// When the run started (less 50 ms: file times come from a coarser clock): a pass-through
    /// file changed since was written by it (or beside it).
    pub started: std::time::SystemTime,
    /// overlayfs kept its marks in `user.overlay.*` (a user namespace), else `trusted.overlay.*`.
    pub userxattr: bool,
}

impl RunResult {
    /// One line for the reader of the output, when this run did not apply all of its plan.
    pub fn not_enforced_line(&self) -> Option<String> {
        (!self.not_enforced.is_empty()).then(|| {
            format!(
                "not enforced for this run: {}",
                self.not_enforced.join("; ")
            )
        })
    }
}

/// Why a process did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The plan refuses to run anything (enforce without a full backend), or a part it promises
    /// could not be set up for this run under `enforce`. Nothing was started.
    #[error("{0}")]
    Refused(String),
    /// Preparing the jail failed.
    #[error("cannot prepare the jail ({what}): {source}")]
    Setup {
        /// What was being prepared.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The process could not be started (the jail failed to apply, or the program is missing).
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The environment a jailed process gets: nothing of Reasonix's own (API keys stay out) but
/// what programs need to find themselves; `HOME` is the run's private one when given.
fn environment(tmp: &std::path::Path, home: Option<&std::path::Path>) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for key in [
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    ] {
        if let Ok(v) = std::env::var(key) {
            env.push((key.to_owned(), v));
        }
    }
    if let Some(home) = home {
        env.retain(|(k, _)| k != "HOME");
        env.push(("HOME".into(), home.display().to_string()));
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push((
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ));
    }
    env.push(("TMPDIR".into(), tmp.display().to_string()));
    env.push(("TERM".into(), "dumb".into()));
    env
}

/// Where `program` is found: itself if it names a path, else the first executable file of that
/// name on the `PATH` of `env` (as `execvp` would search it); if none, the name as given, which
/// exec then refuses with `ENOENT`.
fn find_program(program: &str, env: &[(String, String)]) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return program.into();
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or("", |(_, v)| v.as_str());
    path.split(':')
        .map(|dir| std::path::Path::new(if dir.is_empty() { "." } else { dir }).join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| program.into())
}

/// Where a started process's standard streams go: stdin, stdout, stderr.
type Streams = [Stream; 3];

/// A process started under a plan, with what its run holds until it ends.
struct Start {
    child: Process,
    pgid: Pid,
    /// Its private temporary folder (removed on drop).
    tmp: Folder,
    /// Its cgroups (everything left in them killed, and removed, on drop).
    cgroups: RunCgroups,
    /// What this run could not apply of its plan.
    not_enforced: Vec<String>,
    started: Instant,
    /// The run's network namespace and the egress proxy serving it, while the process runs.
    egress: Option<(std::os::fd::OwnedFd, crate::egress::Proxy)>,
    /// How it writes.
    writes: Writes,
    /// Its upper layers, when it writes observed.
    upper: Option<Upper>,
}

/// Starts `argv` under `plan` (see the module doc of `jail` for the steps between fork and
/// exec), in the workspace, with the jail's environment plus `extra` (which may not replace
/// `TMPDIR`) and the streams given.
fn start(
    plan: &JailPlan,
    argv: &[String],
    extra: &[(String, String)],
    streams: Streams,
    judge: Option<std::sync::Arc<dyn crate::egress::ConnectionJudge>>,
    shape: &Shape,
) -> Result<Start, RunError> {
    if plan.dry {
        return Err(RunError::Refused(
            "this plan was computed for a dry run (reasonix check), which runs nothing".into(),
        ));
    }
    if let Some(why) = &plan.refusal {
        return Err(RunError::Refused(why.clone()));
    }
    let Some((program, args)) = argv.split_first() else {
        return Err(RunError::Spawn {
            program: String::new(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command"),
        });
    };
    let parent = plan
        .tmp
        .as_ref()
        .map(|t| t.runs.clone())
        .unwrap_or_else(std::env::temp_dir);
    let tmp = match plan.idle_tmpdirs.take() {
        Some(tmp) => tmp,
        None => Folder::new_in(&parent, "run-").map_err(|source| RunError::Setup {
            what: "private temporary folder",
            source,
        })?,
    };
    let jailed = plan.mode != Enforcement::Off;
    let mut not_enforced = Vec::new();
    let writes = run_writes(plan, shape.writes, &mut not_enforced)?;
    // The run's folder holds its TMPDIR and (jailed) its private HOME, the toolchains linked
    // in (issue 25): both empty for each run, made anew or kept emptied from the run before.
    run_folders(tmp.path(), jailed.then_some(plan.home.as_deref())).map_err(|source| {
        RunError::Setup {
            what: "private TMPDIR and HOME",
            source,
        }
    })?;

    // The run's own ruleset: the plan's rules and this run's TMPDIR (and, added by the child of
    // a PID namespace, its fresh /proc). `None` also where best_effort found Landlock missing.
    let ruleset: Option<OwnedFd> = match &plan.rulesets {
        Some(r) if jailed => r
            .take(tmp.path())
            .map_err(|source| RunError::Setup {
                what: "Landlock ruleset",
                source,
            })?
            .into(),
        _ => None,
    };
    let proc_access = super::landlock_rules::read_access_bits();
    let filter = if jailed { plan.filter.clone() } else { None };
    // The plan promised a pids (memory) cgroup wherever the capabilities name a parent for one.
    let cgroups = if jailed {
        run_cgroups(plan, &mut not_enforced)?
    } else {
        RunCgroups {
            groups: Vec::new(),
            nproc: false,
            address_space: false,
        }
    };
    let procs = cgroups
        .groups
        .iter()
        .map(Cgroup::procs)
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|source| RunError::Setup {
            what: "cgroup",
            source,
        })?;
    // The upper layers of a writer that is observed, made beside the runs' TMPDIRs: outside
    // every root, and hidden in its mount namespace with the other runs' TMPDIRs.
    let upper = match writes {
        Writes::Observed => Some(make_upper(plan, &parent).map_err(|source| RunError::Setup {
            what: "overlay upper layers",
            source,
        })?),
        _ => None,
    };
    // Inside its mount namespace, the run's TMPDIR is bound over the folder of every run's.
    let (namespace, tmpdir) = match &plan.namespaces {
        Some(ns) if jailed => {
            let (write_roots, overlays, passthrough) = match (writes, &upper) {
                (Writes::Observed, Some((_, layers))) => {
                    (Vec::new(), layers.clone(), upper_passthrough(plan, layers))
                }
                (Writes::None, _) => (Vec::new(), Vec::new(), Vec::new()),
                _ => (plan.write.clone(), Vec::new(), Vec::new()),
            };
            let writable: Vec<std::path::PathBuf> = write_roots
                .iter()
                .cloned()
                .chain(overlays.iter().map(|l| l.root.clone()))
                .collect();
            let (pins, read_only) = mounts::host_binds(&plan.host_files, &writable);
            let mut covers = ns.covers.clone();
            // No run sees another's upper layers (in memory, outside the TMPDIRs' folder).
            if let Some(u) = &plan.uppers {
                covers.push((u.path().to_path_buf(), mounts::Cover::Dir));
            }
            for hidden in &shape.hidden {
                if !covers.iter().any(|(c, _)| hidden.starts_with(c)) {
                    covers.push((hidden.clone(), mounts::Cover::of(hidden)));
                }
            }
            let layout = Layout {
                write_roots,
                overlays,
                passthrough,
                covers,
                pins,
                read_only,
                tmp_run: tmp.path().to_path_buf(),
                tmp_at: parent.clone(),
                workspace: plan.workspace.clone(),
            };
            let prepared = Prepared::new(&layout, ns.users).map_err(|source| RunError::Setup {
                what: "mount namespace",
                source,
            })?;
            (Some(prepared), parent.clone())
        }
        _ => (None, tmp.path().to_path_buf()),
    };
    let limits = plan.limits;
    let (nproc, address_space) = (cgroups.nproc, cgroups.address_space);
    let cap_drop = plan.cap_drop;
    let open_max = nix::sys::resource::getrlimit(Resource::RLIMIT_NOFILE)
        .map_or(65_536, |(soft, _)| soft.min(65_536) as i32);

    // The egress proxy: its listener in a network namespace made for this run, which the child
    // joins; the proxy serves it from here until the run ends.
    let egress = match &plan.egress {
        Some(list) if jailed => {
            let ns = super::netns::make(crate::egress::PROXY_PORT).map_err(|e| {
                RunError::Refused(format!(
                    "the egress proxy cannot be set up for this run (network namespace: {e}); sandbox.network is enforced by host through it, so nothing runs without it"
                ))
            })?;
            let judge = judge
                .unwrap_or_else(|| std::sync::Arc::new(crate::egress::ListJudge(list.clone())));
            let proxy = crate::egress::Proxy::start(ns.listener, judge, list.clone()).map_err(
                |source| RunError::Setup {
                    what: "egress proxy",
                    source,
                },
            )?;
            Some((ns.fd, proxy))
        }
        _ => None,
    };
    let netns_fd = egress.as_ref().map(|(fd, _)| {
        use std::os::fd::AsRawFd;
        fd.as_raw_fd()
    });
    // TMPDIR and HOME as the command sees them: in the run's folder, wherever that is bound.
    let seen_home = jailed.then(|| tmpdir.join(HOME_NAME));
    let mut environment = environment(&tmpdir.join(TMP_NAME), seen_home.as_deref());
    if writes == Writes::None {
        // git's opportunistic index refresh would only meet a read-only workspace.
        environment.push(("GIT_OPTIONAL_LOCKS".into(), "0".into()));
    }
    if egress.is_some() {
        environment.extend(crate::egress::environment(crate::egress::PROXY_PORT));
    }
    for (k, v) in extra.iter().filter(|(k, _)| k != "TMPDIR") {
        environment.retain(|(e, _)| e != k);
        environment.push((k.clone(), v.clone()));
    }
    // Found on the jail's PATH here, as `execvp` would find it in the child, so that the child
    // does not try each folder of the PATH in turn (an `execve` each, through the filter).
    let found = find_program(program, &environment);
    let confine = Confine {
        procs,
        limits,
        nproc,
        address_space,
        cap_drop,
        ruleset,
        fresh_proc: namespace.as_ref().map(|_| proc_access),
        fresh_overlays: match &upper {
            Some((_, layers)) if namespace.is_some() => layers
                .iter()
                .map(|l| namespace::c_path(&l.root))
                .collect::<std::io::Result<Vec<_>>>()
                .map_err(|source| RunError::Setup {
                    what: "overlay",
                    source,
                })?,
            _ => Vec::new(),
        },
        write_access: plan.write_access,
        filter,
    };
    // With namespaces, the command's process execs itself (see `namespace`): its program is
    // found on the jail's PATH here, before the fork, as std would find it after.
    let exec = match &namespace {
        Some(_) => Some(
            Exec::new(&found, program, args, &environment).map_err(|source| RunError::Spawn {
                program: program.clone(),
                source,
            })?,
        ),
        None => None,
    };
    let started = Instant::now();
    // A pass-through file changed since is counted as this run's: less a margin, since a
    // file's times come from the kernel's coarse clock, which may lag this one by a tick.
    let wall_started = std::time::SystemTime::now() - Duration::from_millis(50);
    let spawn_error = |source| {
        if jailed {
            super::failed_to_start();
        }
        RunError::Spawn {
            program: program.clone(),
            source,
        }
    };
    let child = match (namespace, exec) {
        // In namespaces, no egress proxy's network namespace to enter first: cloned straight
        // into them from this thread (`namespace::clone_command`), without a launcher.
        (Some(mut ns), Some(exec)) if netns_fd.is_none() => {
            let mut pipes = Pipes::new(streams).map_err(|source| RunError::Setup {
                what: "standard streams",
                source,
            })?;
            let raw = |n: usize| {
                pipes.child[n]
                    .as_ref()
                    .map_or(-1, std::os::fd::AsRawFd::as_raw_fd)
            };
            let direct = Direct {
                stdio: [raw(0), raw(1), raw(2)],
                open_max,
            };
            let pid = namespace::clone_command(&mut ns, &exec, &|| confine.apply(), direct)
                .map_err(spawn_error)?;
            Process::Cloned(Cloned {
                pid: pid as u32,
                stdin: pipes.stdin.take(),
                stdout: pipes.stdout.take(),
                stderr: pipes.stderr.take(),
                reaped: None,
            })
        }
        (mut namespace, exec) => {
            let mut command = Command::new(&found);
            command
                .arg0(program)
                .args(args)
                .current_dir(&plan.workspace)
                .env_clear()
                .envs(environment.iter().map(|(k, v)| (k, v)))
                .stdin(streams[0].stdio())
                .stdout(streams[1].stdio())
                .stderr(streams[2].stdio())
                .process_group(0);
            // The process that starts the run: the child dies with it (issue 28, item 9).
            let starter = nix::unistd::getpid();
            let hook = move || -> std::io::Result<()> {
                die_with(starter)?;
                if !jailed {
                    return Ok(());
                }
                close_inherited(open_max)?;
                if let Some(fd) = netns_fd {
                    super::netns::enter(fd)?;
                }
                match (&mut namespace, &exec) {
                    // Returns only if the command could not be started; see `namespace::launch`.
                    (Some(ns), Some(exec)) => namespace::launch(ns, exec, &|| confine.apply()),
                    _ => confine.apply(),
                }
            };
            // SAFETY: the hook runs in the forked child before exec. It makes only system calls
            // (close_range, setns, clone, wait4, mount and the new mount API, chdir, write,
            // setrlimit, prctl, capset, landlock_add_rule, landlock_restrict_self, seccomp,
            // execve, close) on values built before the fork (the highest capability number, the
            // mount layout, program, arguments and environment as C strings, and the room for
            // the clones' descriptors included), allocates nothing, takes no lock, and touches no
            // state shared with other threads; errors are returned as `io::Error` from raw OS
            // codes, which does not allocate. The process it clones shares this child's memory
            // (not Reasonix's) until it execs (`namespace`).
            unsafe {
                command.pre_exec(hook);
            }
            Process::Forked(command.spawn().map_err(spawn_error)?)
        }
    };
    let pgid = Pid::from_raw(child.id() as i32);
    // The next run's ruleset is built while this one runs.
    if let Some(rulesets) = plan.rulesets.as_ref().filter(|_| jailed) {
        rulesets.refill();
    }
    let upper = upper.map(|(dir, layers)| Upper {
        _dir: dir,
        passthrough: upper_passthrough(plan, &layers),
        layers: layers.into_iter().map(|l| (l.root, l.upper)).collect(),
        started: wall_started,
        userxattr: plan
            .namespaces
            .as_ref()
            .is_some_and(|ns| ns.users.is_some()),
    });
    Ok(Start {
        child,
        pgid,
        tmp,
        cgroups,
        not_enforced,
        started,
        egress,
        writes,
        upper,
    })
}

/// The run's TMPDIR, inside the run's folder.
pub(super) const TMP_NAME: &str = "tmp";

/// The run's private HOME, inside the run's folder.
pub(super) const HOME_NAME: &str = "home";

/// Makes the run's TMPDIR (`tmp`, mode `0700`, empty) in its folder `run` (as Reasonix sees
/// it) and, for a jailed run, its private HOME (`home`) with a link to each toolchain of the
/// real home folder `real` (`super::HOME_TOOLCHAINS`) that exists: programs find cargo, rustup,
/// pyenv, nvm and git's configuration where they look, while what they write to `~` stays in
/// the run — and the rest of the real home stays out of reach, as the Landlock rules keep it.
fn run_folders(
    run: &std::path::Path,
    home: Option<Option<&std::path::Path>>,
) -> std::io::Result<()> {
    // Made anew, or kept from the run before (emptied, mode 0700: see `idle`).
    let made = |path: &std::path::Path| -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        match std::fs::DirBuilder::new().mode(0o700).create(path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if std::fs::symlink_metadata(path)?.is_dir() {
                    Ok(())
                } else {
                    Err(e)
                }
            }
            made => made,
        }
    };
    made(&run.join(TMP_NAME))?;
    let Some(real) = home else {
        return Ok(());
    };
    let home = run.join(HOME_NAME);
    made(&home)?;
    for entry in real
        .map(|r| super::HOME_TOOLCHAINS.iter().map(move |e| (r, e)))
        .into_iter()
        .flatten()
    {
        let (real, entry) = entry;
        let target = real.join(entry);
        if std::fs::symlink_metadata(&target).is_err() {
            continue;
        }
        let link = home.join(entry);
        if let Some(parent) = link.parent().filter(|p| *p != home) {
            std::fs::create_dir_all(parent)?;
        }
        std::os::unix::fs::symlink(&target, &link)?;
    }
    Ok(())
}

/// How a run of `plan` writes, given the shape its call asked for: under `off`, in place;
/// observed only where the plan can make overlays — else, under `enforce`, the run is refused,
/// and under `best_effort` it writes in place and says its effects were not observed. A
/// read-only run without a mount namespace (`best_effort` only) cannot be held to it.
fn run_writes(
    plan: &JailPlan,
    asked: Writes,
    not_enforced: &mut Vec<String>,
) -> Result<Writes, RunError> {
    if plan.mode == Enforcement::Off {
        return Ok(Writes::Direct);
    }
    match asked {
        Writes::Observed if !plan.overlay => {
            if let Some(why) = &plan.writer_refusal {
                return Err(RunError::Refused(why.clone()));
            }
            not_enforced.push(NOT_OBSERVED.into());
            Ok(Writes::Direct)
        }
        Writes::None if plan.namespaces.is_none() => {
            not_enforced.push(
                "read-only: without a mount namespace the write roots stayed writable to this run"
                    .into(),
            );
            Ok(Writes::None)
        }
        w => Ok(w),
    }
}

/// What a writer's run says when it wrote in place for want of an overlay.
pub(crate) const NOT_OBSERVED: &str = "effects not observed: no overlay can be made here, so this writer changed the workspace in place";

/// Makes a run's upper layers: a folder beside the runs' TMPDIRs holding, for each write root
/// not inside another, an upper folder and overlayfs's work folder (one filesystem, outside
/// every root). Returns the folder (removed on drop) and the layers.
fn make_upper(
    plan: &JailPlan,
    parent: &std::path::Path,
) -> std::io::Result<(tempfile::TempDir, Vec<Layer>)> {
    // In memory where the plan has a folder there (`uppers`), else beside the TMPDIRs.
    let parent = plan.uppers.as_ref().map_or(parent, |u| u.path());
    let dir = tempfile::Builder::new()
        .prefix("upper-")
        .rand_bytes(12)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(parent)?;
    let mut layers = Vec::new();
    for (i, root) in plan.write.iter().enumerate() {
        if plan.write.iter().any(|o| o != root && root.starts_with(o)) {
            continue;
        }
        let (upper, work) = (
            dir.path().join(format!("u{i}")),
            dir.path().join(format!("w{i}")),
        );
        std::fs::create_dir(&upper)?;
        std::fs::create_dir(&work)?;
        layers.push(Layer {
            root: root.clone(),
            upper,
            work,
        });
    }
    Ok((dir, layers))
}

/// The plan's pass-through folders that exist as folders now inside one of `layers`' roots.
fn upper_passthrough(plan: &JailPlan, layers: &[Layer]) -> Vec<std::path::PathBuf> {
    plan.passthrough
        .iter()
        .filter(|p| {
            layers
                .iter()
                .any(|l| p.starts_with(&l.root) && **p != l.root)
        })
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        .cloned()
        .collect()
}

/// Runs `argv` under `plan`, with a wall-clock limit (the smaller of `timeout` and the plan's),
/// capturing output as asked. Crate-private: a bash call reaches it with an admission (the bash
/// tool), anything else through [`super::danger::exec_unjudged`].
pub(crate) fn run(
    plan: &JailPlan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
    shape: &Shape,
) -> Result<RunResult, RunError> {
    run_judged(plan, argv, timeout, capture, None, shape)
}

/// [`run`], with the judge of the connections its processes ask the egress proxy for (the
/// gate, for an admitted bash call). Without one — or for a plan without a proxy — the
/// `sandbox.network` entries alone decide ([`crate::egress::ListJudge`]).
pub(crate) fn run_judged(
    plan: &JailPlan,
    argv: &[String],
    timeout: Option<Duration>,
    capture: Capture,
    judge: Option<std::sync::Arc<dyn crate::egress::ConnectionJudge>>,
    shape: &Shape,
) -> Result<RunResult, RunError> {
    let limit = Duration::from_millis(plan.limits.timeout_ms);
    let timeout = timeout.map_or(limit, |t| t.min(limit));
    let output = match capture {
        Capture::Bounded(_) => Stream::Piped,
        Capture::Inherit => Stream::Inherit,
    };
    let streams = [Stream::Null, output, output];
    let Start {
        mut child,
        pgid,
        tmp,
        cgroups,
        mut not_enforced,
        started,
        egress,
        writes,
        upper,
    } = start(plan, argv, &[], streams, judge, shape)?;
    let jailed = plan.mode != Enforcement::Off;
    let program = &argv[0];

    // Watched on this thread until it exits, its output read as it comes; at the wall clock,
    // its group is killed (see `watch`).
    let limit = match capture {
        Capture::Bounded(limit) => Some(limit),
        Capture::Inherit => None,
    };
    let mut watch = Watch::new(&mut child, limit, started + timeout);
    let exited = watch.until_exit(&mut child, pgid);
    // Nothing outlives the run: the rest of the group is killed (by `until_exit`, before the
    // process is reaped), then the rest of the cgroups. What is known to be empty of the run
    // is kept for the next one (see `idle`).
    // Under `off` nothing is confined, so the TMPDIR is kept whatever is left (see `idle`).
    match plan
        .idle_cgroups
        .give_back(cgroups, not_enforced.is_empty())
    {
        Ok(gone) => {
            if gone || !jailed {
                plan.idle_tmpdirs.give_back(tmp);
            }
        }
        Err(e) => not_enforced.push(format!(
            "nothing outlives the run: its cgroups could not be emptied after it ended ({e}); what is left runs on, and its TMPDIR is removed"
        )),
    }
    let duration = started.elapsed();
    let connections = match egress {
        Some((fd, proxy)) => {
            let connections = proxy.stop();
            drop(fd);
            connections
        }
        None => Vec::new(),
    };
    let spawn_error = |source| RunError::Spawn {
        program: program.clone(),
        source,
    };
    let exited = exited.map_err(spawn_error)?;
    // Nothing holds the pipes open now; what is left in them is read.
    watch.drain().map_err(spawn_error)?;
    let ((stdout, stdout_bytes), (stderr, stderr_bytes)) = watch.finish();
    let (status, timed_out) = (exited.status, exited.timed_out);
    use std::os::unix::process::ExitStatusExt;
    let outcome = if timed_out {
        Exit::TimedOut
    } else if let Some(code) = status.code() {
        Exit::Exited(code)
    } else {
        Exit::Signaled(status.signal().unwrap_or(0))
    };
    Ok(RunResult {
        exit: outcome,
        stdout,
        stderr,
        stdout_bytes,
        stderr_bytes,
        duration,
        not_enforced,
        connections,
        writes,
        observed: upper,
    })
}

#[cfg(test)]
mod tests {
    use super::watch::Bounded;
    use super::{CapDrop, Duration, Exit, RunResult};
    use crate::sandbox::jail::capabilities;

    #[test]
    fn with_cap_setpcap_the_bounding_set_is_dropped_up_to_the_kernels_last_capability() {
        let caps = crate::sandbox::jail::Capabilities {
            cap_setpcap: true,
            ..capabilities().clone()
        };
        let last: u32 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(CapDrop::for_capabilities(&caps), CapDrop::Full { last });
        let words = CapDrop::for_capabilities(&caps).words(0);
        assert!(words.contains("the bounding, permitted"), "{words}");
    }

    #[test]
    fn without_cap_setpcap_the_sets_are_still_emptied_and_the_bounding_set_is_not_claimed() {
        let caps = crate::sandbox::jail::Capabilities {
            cap_setpcap: false,
            ..capabilities().clone()
        };
        let drop = CapDrop::for_capabilities(&caps);
        assert_eq!(drop, CapDrop::SetsOnly);
        for uid in [0, 1000] {
            let words = drop.words(uid);
            assert!(
                words.contains("permitted, effective, inheritable and ambient sets are emptied"),
                "{words}"
            );
            assert!(words.contains("no_new_privs"), "{words}");
            assert!(
                words.contains("the bounding set stays as it is")
                    && !words.contains("bounding, permitted"),
                "{words}"
            );
        }
        assert!(drop.words(0).contains("root runs without any"));
    }

    #[test]
    fn a_run_that_kept_every_promise_adds_no_line_and_one_that_did_not_adds_one() {
        let mut r = RunResult {
            exit: Exit::Exited(0),
            stdout: String::new(),
            stderr: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            duration: Duration::ZERO,
            not_enforced: Vec::new(),
            connections: Vec::new(),
            writes: super::Writes::Direct,
            observed: None,
        };
        assert_eq!(r.not_enforced_line(), None);
        r.not_enforced = vec!["process count: x".into(), "y".into()];
        assert_eq!(
            r.not_enforced_line().as_deref(),
            Some("not enforced for this run: process count: x; y")
        );
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut b = Bounded::new(100);
        b.push(b"hello ");
        b.push(b"world");
        assert_eq!(b.finish(), ("hello world".to_owned(), 11));
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_says_how_much() {
        let mut b = Bounded::new(10);
        for chunk in [&b"0123456789"[..], b"abcdefghij", b"ABCDE"] {
            b.push(chunk);
        }
        let (text, total) = b.finish();
        assert_eq!(total, 25);
        assert!(
            text.starts_with("01234\n[… 15 bytes elided; the output was 25 bytes in all …]\n"),
            "{text}"
        );
        assert!(text.ends_with("ABCDE"), "{text}");
    }
}
