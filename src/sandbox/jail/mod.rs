//! The OS jail every process Reasonix starts runs in: Landlock, seccomp, resource limits, a
//! process group and (where it can be made) a pids cgroup, a wall-clock timeout, a private
//! temporary folder and a bounded capture of its output.
//!
//! A [`Plan`] is computed once per gate from the `sandbox:` configuration and the workspace: the
//! folders a process may read and run programs from, those it may write, the TCP ports it may
//! reach, its limits — and, from the kernel's capabilities ([`probe`]), what of that will be
//! enforced and what will not. Under `enforce`, a plan that cannot be enforced in full refuses
//! to run anything ([`Plan::refusal`]); under `best_effort` it applies what it can and lists
//! the rest in [`Plan::not_enforced`]. [`run`] applies a plan to one process.
//!
//! # Between fork and exec
//!
//! Everything is built before the fork, most of it once per plan: the Landlock ruleset (each run
//! restricts itself with a duplicate of its descriptor), the seccomp program; per run only the
//! private temporary folder (under the plan's, which the ruleset grants) and the cgroup. The child then only makes
//! system calls, in this order: join the cgroup, set the limits, empty the capability bounding
//! set (root keeps uid 0 but no capability), `restrict_self` (which also sets `no_new_privs`),
//! install the seccomp filter. Nothing is allocated there.
//!
//! # Test strategy
//!
//! `tests/jail.rs` runs real processes on this kernel: writes outside the write roots fail with
//! `EACCES` and leave nothing, TCP connect and bind are refused (a live listener proves the
//! connection would otherwise succeed), UDP, `/dev/tcp` and `ptrace` are refused, a fork bomb is
//! contained, a child that ignores `SIGTERM` dies at the timeout with its whole group, output
//! past the bound is cut with the true size, a setuid program gains nothing. A test that needs a
//! kernel feature this machine lacks says so and skips.
//!
//! # Caveats
//!
//! - Landlock allows by folder; it cannot hide one file of a readable folder. Reasonix grants
//!   `/etc` entry by entry, leaving out the shadow and sudoers files and the ssh and ssl private
//!   keys, but a secret inside the workspace stays readable to a jailed process: keep secrets
//!   out of the workspace or deny them by policy.
//! - Landlock filters TCP by port, never by host: `github.com:443` allows port 443 to anywhere.
//!   UDP cannot be filtered by port on this ABI; it is refused unless network rules exist (DNS).
//! - Pathname UNIX sockets (`/run/docker.sock`) are not mediated by Landlock before ABI 9.
//! - `RLIMIT_NPROC` does not bind root; the pids cgroup does, where one can be made.
//! - Each run's temporary folder is private from other sessions and from the rest of `/tmp`,
//!   but the runs of one plan share the grant on their parent folder: two commands of one
//!   session running at once could reach each other's. (One ruleset per plan, instead of one
//!   per run, saves about 0.5 ms per spawn: `/etc` alone is over a hundred rules.)

pub mod cgroup;
pub mod config;
mod landlock_rules;
pub mod probe;
#[allow(unsafe_code)]
mod run;
pub mod seccomp;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use config::{JailConfig, Limits, Mode, NetRule};
pub use probe::{Capabilities, capabilities};
pub use run::{Capture, Outcome, RunError, RunResult, run};

/// System folders a process may read and run programs from.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/proc",
    "/sys", "/run", "/var/lib", "/nix", "/snap",
];

/// Inside the system folders: what is left out (Landlock allows by folder, so these folders are
/// granted entry by entry around them).
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/run/secrets",
];

/// Toolchains under the home folder a process may read and run programs from, when present.
const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".local/bin",
    ".local/lib",
    ".gitconfig",
    ".config/git",
];

/// Device files a process may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// What a jailed process may do, and what of it this machine enforces.
#[derive(Debug)]
pub struct Plan {
    /// How strictly.
    pub mode: Mode,
    /// The workspace (its working folder).
    pub workspace: PathBuf,
    /// Folders it may read and run programs from.
    pub read: Vec<PathBuf>,
    /// Folders it may write (and read, and run programs from).
    pub write: Vec<PathBuf>,
    /// Device files it may read and write.
    pub devices: Vec<PathBuf>,
    /// TCP destinations.
    pub network: Vec<NetRule>,
    /// Limits.
    pub limits: Limits,
    /// What this machine offers.
    pub capabilities: &'static Capabilities,
    /// What will be enforced, in words.
    pub enforced: Vec<String>,
    /// What was asked for and will not be enforced, in words.
    pub not_enforced: Vec<String>,
    /// Why nothing may run under this plan (`enforce` without a full backend).
    pub refusal: Option<String>,
    /// The Landlock ruleset, built once; each run restricts itself with a duplicate of it.
    ruleset: Option<landlock::RulesetCreated>,
    /// The seccomp program, compiled once.
    filter: Option<seccompiler::BpfProgram>,
    /// The parent of every run's private temporary folder (removed with the plan).
    tmp: Option<tempfile::TempDir>,
}

/// The plan as shown in verdicts and `sandbox probe`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlanView {
    /// `enforce`, `best_effort` or `off`.
    pub mode: Mode,
    /// The backends that will apply it.
    pub backend: Vec<String>,
    /// Folders it may read and run programs from.
    pub read_roots: Vec<String>,
    /// Folders it may write.
    pub write_roots: Vec<String>,
    /// TCP destinations (`[]`: none).
    pub network: Vec<NetRule>,
    /// Limits.
    pub limits: Limits,
    /// What will be enforced.
    pub enforced: Vec<String>,
    /// What will not.
    pub not_enforced: Vec<String>,
    /// Why nothing may run, if so.
    pub refusal: Option<String>,
}

impl Plan {
    /// Computes the plan for a workspace (canonical) under a configuration.
    pub fn new(config: &JailConfig, workspace: &Path, home: Option<&Path>) -> Plan {
        let caps = capabilities();
        let (extra_write, extra_read) = config.roots(home);
        let mut write = vec![workspace.to_path_buf()];
        write.extend(extra_write.into_iter().filter(|p| p.exists()));
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        if let Some(home) = home {
            read.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
        }
        read.extend(extra_read);
        read.retain(|p| p.exists());
        let devices: Vec<PathBuf> = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect();
        let secrets: Vec<PathBuf> = SYSTEM_SECRETS.iter().map(PathBuf::from).collect();

        let mut enforced = Vec::new();
        let mut not_enforced = Vec::new();
        let mut missing = Vec::new();
        if config.mode == Mode::Off {
            not_enforced.push(
                "everything: sandbox.bash is off, processes run with Reasonix's own rights".into(),
            );
        } else {
            if caps.landlock_fs {
                enforced.push(format!(
                    "filesystem (Landlock ABI {}): read and run from {} roots, write only to {}",
                    caps.landlock_abi.unwrap_or(0),
                    read.len(),
                    write
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            } else {
                missing.push("Landlock filesystem rules");
            }
            if caps.landlock_net {
                enforced.push(if config.network.is_empty() {
                    "TCP connect and bind: refused (Landlock)".into()
                } else {
                    format!(
                        "TCP connect only to ports {} (Landlock); bind refused",
                        config
                            .network
                            .iter()
                            .map(|n| n.port.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                });
                if config.network.iter().any(|n| n.host != "*") {
                    not_enforced.push(
                        "network host names: Landlock filters TCP by port only, to any host".into(),
                    );
                }
            } else {
                missing.push("Landlock TCP rules (ABI 4)");
            }
            if caps.landlock_scope {
                enforced.push(
                    "signals and abstract UNIX sockets scoped to the sandbox (Landlock)".into(),
                );
            } else {
                missing.push("Landlock scoping (ABI 6)");
            }
            if caps.seccomp {
                enforced.push(if config.network.is_empty() {
                    "seccomp: UDP, raw and other non-TCP sockets, ptrace, io_uring, bpf, mount, keyctl, namespaces refused".into()
                } else {
                    "seccomp: raw and other non-TCP sockets, ptrace, io_uring, bpf, mount, keyctl, namespaces refused; UDP allowed for DNS".into()
                });
                if !config.network.is_empty() {
                    not_enforced.push("UDP: allowed to any port while network rules exist (DNS needs it; seccomp cannot read the port)".into());
                }
            } else {
                missing.push("seccomp");
            }
            let limits = config.limits;
            enforced.push(format!(
                "limits: {} s CPU, {} bytes per file, {} open files, {} ms wall clock (whole process group killed)",
                limits.cpu_seconds, limits.file_size, limits.open_files, limits.timeout_ms
            ));
            if caps.uid == 0 {
                enforced.push(
                    "capabilities: the bounding set is emptied, so root runs without any".into(),
                );
            }
            match (&caps.cgroup_pids, caps.uid) {
                (Some(_), _) => enforced.push(format!("at most {} processes (pids cgroup)", limits.processes)),
                (None, 0) => not_enforced.push("process count: no pids cgroup can be made, and RLIMIT_NPROC does not bind root".into()),
                (None, _) => enforced.push(format!("at most {} processes of this user (RLIMIT_NPROC)", limits.processes)),
            }
            not_enforced.push("pathname UNIX sockets (Landlock mediates them from ABI 9)".into());
        }
        let refusal: Option<String> = (config.mode == Mode::Enforce && !missing.is_empty()).then(|| {
            format!(
                "sandbox.bash is enforce, and this kernel lacks {}; use best_effort to run with less, or a newer kernel",
                missing.join(", ")
            )
        });
        if config.mode == Mode::BestEffort {
            for m in &missing {
                not_enforced.push(format!("{m}: not available on this kernel"));
            }
        }
        let jailed = config.mode != Mode::Off;
        let tmp = tempfile::Builder::new()
            .prefix("reasonix-tmp-")
            .tempdir()
            .ok();
        let mut refusal = refusal;
        let ruleset = match (&tmp, jailed && caps.landlock_fs) {
            (Some(tmp), true) => {
                let rules = landlock_rules::Rules::open(&read, &write, &devices, &secrets);
                match rules.ruleset(
                    tmp.path(),
                    &config.network,
                    config.mode == Mode::Enforce,
                    caps.landlock_net,
                    caps.landlock_scope,
                ) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        let why = format!("the Landlock ruleset could not be built: {e}");
                        if config.mode == Mode::Enforce {
                            refusal.get_or_insert(why);
                        } else {
                            not_enforced.push(why);
                        }
                        None
                    }
                }
            }
            _ => None,
        };
        if tmp.is_none() {
            refusal.get_or_insert("no private temporary folder can be made".into());
        }
        let filter =
            match (jailed && caps.seccomp).then(|| seccomp::program(!config.network.is_empty())) {
                Some(Ok(program)) => Some(program),
                Some(Err(e)) => {
                    let why = format!("the seccomp filter could not be built: {e}");
                    if config.mode == Mode::Enforce {
                        refusal.get_or_insert(why);
                    } else {
                        not_enforced.push(why);
                    }
                    None
                }
                None => None,
            };
        Plan {
            mode: config.mode,
            workspace: workspace.to_path_buf(),
            read,
            write,
            devices,
            network: config.network.clone(),
            limits: config.limits,
            capabilities: caps,
            enforced,
            not_enforced,
            refusal,
            ruleset,
            filter,
            tmp,
        }
    }

    /// The plan as shown in verdicts.
    pub fn view(&self) -> PlanView {
        let caps = self.capabilities;
        let mut backend = Vec::new();
        if self.mode != Mode::Off {
            if let Some(abi) = caps.landlock_abi {
                backend.push(format!("landlock-abi-{abi}"));
            }
            if caps.seccomp {
                backend.push("seccomp".into());
            }
            if caps.cgroup_pids.is_some() {
                backend.push("pids-cgroup".into());
            }
            backend.push("rlimits".into());
        }
        PlanView {
            mode: self.mode,
            backend,
            read_roots: self.read.iter().map(|p| p.display().to_string()).collect(),
            write_roots: self.write.iter().map(|p| p.display().to_string()).collect(),
            network: self.network.clone(),
            limits: self.limits,
            enforced: self.enforced.clone(),
            not_enforced: self.not_enforced.clone(),
            refusal: self.refusal.clone(),
        }
    }
}
