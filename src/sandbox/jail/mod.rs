//! The OS jail every process Reasonix starts runs in: Landlock, seccomp, resource limits, a
//! process group and (where it can be made) a pids cgroup, a wall-clock timeout, a private
//! temporary folder and a bounded capture of its output.
//!
//! A [`Plan`] is computed once per gate from the `sandbox:` configuration, the workspace and the
//! kernel's capabilities ([`probe`]): the folders a process may read and run programs from, those
//! it may write, the TCP ports it may reach, its limits — and what of that will be enforced and
//! what will not. Under `enforce`, a plan that cannot be enforced in full refuses to run anything
//! ([`Plan::refusal`]); under `best_effort` it applies what it can and lists the rest in
//! [`Plan::not_enforced`]. A plan is frozen: its fields are private, and what a run applies comes
//! from the same computation as its words.
//!
//! A process is started under a plan in two ways only: an admitted bash call (the bash tool runs
//! it under its admission's plan; the function is crate-private), or
//! [`danger::exec_unjudged`], which runs a command no gate judged — for `reasonix sandbox exec`
//! and tests.
//!
//! # Between fork and exec
//!
//! Everything is built before the fork, most of it once per plan: the Landlock ruleset (each run
//! restricts itself with a duplicate of its descriptor), the seccomp program, the way
//! capabilities are dropped (with the highest capability number, read from
//! `/proc/sys/kernel/cap_last_cap`); per run only the private temporary folder (under the plan's,
//! which the ruleset grants) and the cgroup. The child then only makes system calls, in this
//! order, and nothing is allocated there:
//!
//! 1. join the cgroup (one write to its `cgroup.procs`);
//! 2. set the limits (`RLIMIT_NPROC` only where the run has no pids cgroup);
//! 3. drop capabilities: where Reasonix holds `CAP_SETPCAP`, empty the bounding set
//!    (`PR_CAPBSET_DROP` for every capability) and lock `SECBIT_NOROOT`; in every case empty the
//!    permitted, effective and inheritable sets with `capset` (which empties the ambient set) —
//!    root keeps uid 0 but no capability;
//! 4. `restrict_self` (which also sets `no_new_privs`; without a ruleset, `no_new_privs` alone);
//! 5. install the seccomp filter.
//!
//! Any step that fails fails the spawn: nothing runs, and the run returns the error.
//!
//! # Test strategy
//!
//! `tests/jail.rs` runs real processes on this kernel: writes outside the write roots fail with
//! `EACCES` and leave nothing, TCP connect and bind are refused (a live listener proves the
//! connection would otherwise succeed), UDP, `/dev/tcp` and `ptrace` are refused, a fork bomb is
//! contained, a child that ignores `SIGTERM` dies at the timeout with its whole group, output
//! past the bound is cut with the true size, a setuid program gains nothing, root in the jail
//! shows empty capability sets and bounding set in `/proc/self/status` (and
//! `noroot,noroot_locked` securebits), and a Reasonix started without `CAP_SETPCAP` still leaves
//! its command without capabilities.
//!
//! The refusals are tested on every machine: a plan can be computed for capabilities with a part
//! taken away ([`Plan::with_capabilities`]), so each refusal of `enforce` (no Landlock
//! filesystem rules, TCP rules or scoping, no seccomp) is shown to refuse in its words and to
//! start nothing, while `best_effort` lists the part and runs; a pids cgroup parent that cannot
//! be used shows a run refused under `enforce` and reported in [`RunResult::not_enforced`]
//! under `best_effort`. The unit tests cover a plan without a private temporary folder.
//!
//! A test that needs a feature this machine lacks prints a `SKIPPED` line and returns; with
//! `REASONIX_NO_SKIP=1` (set by `.ci/run`) it fails instead, so CI cannot pass by skipping.
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
//! - `RLIMIT_NPROC` does not bind root; the pids cgroup does, where one can be made. A plan
//!   that promises a pids cgroup keeps its word for every run: where one run's cgroup cannot be
//!   made, `enforce` refuses that run and `best_effort` runs it under `RLIMIT_NPROC` and says
//!   so in the run's result. Where no pids cgroup can be made at all, a root plan lists the
//!   process count as not enforced, under `enforce` too.
//! - Without `CAP_SETPCAP` (any user but root, usually) the bounding set cannot be emptied and
//!   stays as it is; the capability sets are still emptied, and `no_new_privs` keeps exec — of
//!   a setuid program or one with file capabilities — from granting any. The plan says which.
//! - A plan computed with [`Plan::with_capabilities`] believes what it is given: taking a part
//!   away is safe (it is neither applied nor claimed); claiming a part the kernel lacks makes a
//!   plan whose words the kernel may not keep. The gate uses [`Plan::new`], the probed value.
//! - Each run's temporary folder is private from other sessions and from the rest of `/tmp`,
//!   but the runs of one plan share the grant on their parent folder: two commands of one
//!   session running at once could reach each other's. (One ruleset per plan, instead of one
//!   per run, saves about 0.5 ms per spawn: `/etc` alone is over a hundred rules.)

pub mod cgroup;
pub mod config;
pub mod danger;
mod landlock_rules;
pub mod probe;
#[allow(unsafe_code)]
mod run;
pub mod seccomp;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use config::{JailConfig, Limits, Mode, NetRule};
pub use probe::{Capabilities, capabilities};
use run::CapDrop;
pub(crate) use run::run;
pub use run::{Capture, Exit, RunError, RunResult};

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
///
/// A plan is frozen once computed: its fields are private, its words ([`Plan::enforced`],
/// [`Plan::not_enforced`], [`Plan::refusal`]) are read through getters, and what a run applies
/// (the ruleset, the filter, the capability drop, the cgroup) comes from the same computation
/// as those words.
#[derive(Debug)]
pub struct Plan {
    /// How strictly.
    mode: Mode,
    /// The workspace (its working folder).
    workspace: PathBuf,
    /// Folders it may read and run programs from.
    read: Vec<PathBuf>,
    /// Folders it may write (and read, and run programs from).
    write: Vec<PathBuf>,
    /// TCP destinations.
    network: Vec<NetRule>,
    /// Limits.
    limits: Limits,
    /// What the plan was computed for: this machine's probe, or a test's.
    capabilities: Capabilities,
    /// What will be enforced, in words.
    enforced: Vec<String>,
    /// What was asked for and will not be enforced, in words.
    not_enforced: Vec<String>,
    /// Why nothing may run under this plan (`enforce` without a full backend).
    refusal: Option<String>,
    /// How a child loses its capabilities (decided from `capabilities.cap_setpcap`).
    cap_drop: CapDrop,
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
    /// Computes the plan for a workspace (canonical) under a configuration, for this machine's
    /// probed [`capabilities`]. The gate and `reasonix sandbox` use this one.
    pub fn new(config: &JailConfig, workspace: &Path, home: Option<&Path>) -> Plan {
        Plan::with_capabilities(config, workspace, home, capabilities().clone())
    }

    /// The plan of a session in plan mode: as [`Plan::new`], except that the workspace and the
    /// `write_roots` are granted for reading only. The gate lets a bash command run in plan mode
    /// only when the analysis finds it read-only; this makes the kernel hold it to that — a
    /// command that writes anyway (an analysis mistake, or a "read-only" program that rewrites
    /// a cache or `.git/index`) gets `EACCES`. The run's private temporary folder stays writable.
    pub fn read_only(config: &JailConfig, workspace: &Path, home: Option<&Path>) -> Plan {
        let tmp = tempfile::Builder::new().prefix("reasonix-tmp-").tempdir();
        Plan::build(config, workspace, home, capabilities().clone(), tmp, false)
    }

    /// Computes the plan as if the machine offered `caps`: what `caps` lacks, the plan neither
    /// applies nor claims (under `enforce` it refuses; under `best_effort` it lists the part as
    /// not enforced).
    ///
    /// Meant for tests, to take parts away and see the plan refuse or say so. Claiming a part
    /// the kernel lacks does not make the kernel enforce it: the plan's words would then promise
    /// what the kernel may not keep (a run fails to start where the part is applied and missing).
    ///
    /// ```
    /// use reasonix::sandbox::jail::{self, Capabilities, JailConfig, Plan};
    ///
    /// let no_seccomp = Capabilities { seccomp: false, ..jail::capabilities().clone() };
    /// let ws = std::env::temp_dir();
    /// let plan = Plan::with_capabilities(&JailConfig::default(), &ws, None, no_seccomp);
    /// assert!(plan.refusal().is_some_and(|why| why.contains("lacks") && why.contains("seccomp")));
    /// ```
    pub fn with_capabilities(
        config: &JailConfig,
        workspace: &Path,
        home: Option<&Path>,
        caps: Capabilities,
    ) -> Plan {
        let tmp = tempfile::Builder::new().prefix("reasonix-tmp-").tempdir();
        Plan::build(config, workspace, home, caps, tmp, true)
    }

    /// The plan, given the parent of its runs' temporary folders (or why none could be made).
    /// Unless `writable`, the workspace and the write roots are granted for reading only.
    fn build(
        config: &JailConfig,
        workspace: &Path,
        home: Option<&Path>,
        caps: Capabilities,
        tmp: std::io::Result<tempfile::TempDir>,
        writable: bool,
    ) -> Plan {
        let (extra_write, extra_read) = config.roots(home);
        let mut roots = vec![workspace.to_path_buf()];
        roots.extend(extra_write.into_iter().filter(|p| p.exists()));
        let (write, read_only_roots) = if writable {
            (roots, Vec::new())
        } else {
            (Vec::new(), roots)
        };
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        read.extend(read_only_roots);
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
        let jailed = config.mode != Mode::Off;
        let enforce = config.mode == Mode::Enforce;
        let cap_drop = CapDrop::for_capabilities(&caps);

        let mut enforced = Vec::new();
        let mut not_enforced = Vec::new();
        // Parts this kernel lacks: under enforce they refuse, under best_effort they are listed.
        let mut missing = Vec::new();
        if !jailed {
            not_enforced.push(
                "everything: sandbox.bash is off, processes run with Reasonix's own rights".into(),
            );
        } else {
            if caps.landlock_fs {
                let writes = if write.is_empty() {
                    "the run's temporary folder (plan mode: the workspace and write_roots are read-only)".to_owned()
                } else {
                    write
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                enforced.push(format!(
                    "filesystem (Landlock ABI {}): read and run from {} roots, write only to {writes}",
                    caps.landlock_abi.unwrap_or(0),
                    read.len(),
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
            enforced.push(cap_drop.words(caps.uid));
            match (&caps.cgroup_pids, caps.uid) {
                (Some(_), _) => enforced.push(format!("at most {} processes (pids cgroup)", limits.processes)),
                (None, 0) => not_enforced.push("process count: no pids cgroup can be made, and RLIMIT_NPROC does not bind root".into()),
                (None, _) => enforced.push(format!("at most {} processes of this user (RLIMIT_NPROC)", limits.processes)),
            }
            not_enforced.push("pathname UNIX sockets (Landlock mediates them from ABI 9)".into());
        }
        let mut refusal: Option<String> = (enforce && !missing.is_empty()).then(|| {
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
        let tmp = match tmp {
            Ok(tmp) => Some(tmp),
            Err(e) => {
                // Every mode: a run's TMPDIR is made under it, and the ruleset grants it.
                refusal.get_or_insert(format!(
                    "no private temporary folder can be made in {} ({e}); nothing runs without one",
                    std::env::temp_dir().display()
                ));
                None
            }
        };
        // A part that exists but could not be built: refuses under enforce, listed otherwise.
        let mut broken = |why: String| {
            if enforce {
                refusal.get_or_insert(why);
            } else {
                not_enforced.push(why);
            }
        };
        let ruleset = match (&tmp, jailed && caps.landlock_fs) {
            (Some(tmp), true) => {
                let rules = landlock_rules::Rules::open(&read, &write, &devices, &secrets);
                match rules.ruleset(
                    tmp.path(),
                    &config.network,
                    enforce,
                    caps.landlock_net,
                    caps.landlock_scope,
                ) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        broken(format!("the Landlock ruleset could not be built: {e}"));
                        None
                    }
                }
            }
            _ => None,
        };
        let filter =
            match (jailed && caps.seccomp).then(|| seccomp::program(!config.network.is_empty())) {
                Some(Ok(program)) => Some(program),
                Some(Err(e)) => {
                    broken(format!("the seccomp filter could not be built: {e}"));
                    None
                }
                None => None,
            };
        Plan {
            mode: config.mode,
            workspace: workspace.to_path_buf(),
            read,
            write,
            network: config.network.clone(),
            limits: config.limits,
            capabilities: caps,
            enforced,
            not_enforced,
            refusal,
            cap_drop,
            ruleset,
            filter,
            tmp,
        }
    }

    /// How strictly.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The workspace: the working folder of every run.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The limits of every run.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What the plan was computed for: this machine's probe ([`Plan::new`]) or the value given
    /// to [`Plan::with_capabilities`].
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// What will be enforced, in words.
    pub fn enforced(&self) -> &[String] {
        &self.enforced
    }

    /// What was asked for and will not be enforced, in words. A run may add its own
    /// ([`RunResult::not_enforced`]).
    pub fn not_enforced(&self) -> &[String] {
        &self.not_enforced
    }

    /// Why nothing may run under this plan, if so: `enforce` where a part is missing or could
    /// not be built, or any mode without a private temporary folder.
    pub fn refusal(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

    /// The plan as shown in verdicts.
    pub fn view(&self) -> PlanView {
        let caps = &self.capabilities;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of a workspace, with or without the parent of its runs' temporary folders.
    fn plan(ws: &Path, mode: Mode, tmp: std::io::Result<tempfile::TempDir>) -> Plan {
        let config = JailConfig {
            mode,
            ..JailConfig::default()
        };
        Plan::build(&config, ws, None, capabilities().clone(), tmp, true)
    }

    #[test]
    fn without_a_private_temporary_folder_every_mode_refuses_and_runs_nothing() {
        // Unlike a missing kernel part, best_effort cannot run with less here: each run's
        // TMPDIR is made under that folder, and the Landlock ruleset grants it.
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let marker = ws.join("ran.txt");
        let argv = ["touch".to_owned(), marker.display().to_string()];
        for mode in [Mode::Enforce, Mode::BestEffort, Mode::Off] {
            let no_tmp = Err(std::io::Error::other("faked: no room"));
            let p = plan(&ws, mode, no_tmp);
            let why = p.refusal().unwrap_or_else(|| panic!("{mode:?}: {p:?}"));
            assert!(
                why.starts_with("no private temporary folder can be made in ")
                    && why.ends_with("(faked: no room); nothing runs without one"),
                "{why}"
            );
            match run(&p, &argv, None, Capture::Bounded(1024)) {
                Err(RunError::Refused(refused)) => assert_eq!(refused, why),
                other => panic!("{mode:?}: {other:?}"),
            }
            assert!(!marker.exists(), "{mode:?}: nothing ran");
        }
        // The control: with the folder, the same command runs (jail off: on every machine).
        let tmp = tempfile::Builder::new().prefix("reasonix-tmp-").tempdir();
        let p = plan(&ws, Mode::Off, tmp);
        assert_eq!(p.refusal(), None);
        let r = run(&p, &argv, None, Capture::Bounded(1024)).unwrap();
        assert_eq!(r.exit, Exit::Exited(0));
        assert!(marker.exists());
    }

    #[test]
    fn a_plan_off_claims_nothing_but_that_it_is_off() {
        let ws = std::env::temp_dir();
        let p = Plan::with_capabilities(
            &JailConfig {
                mode: Mode::Off,
                ..JailConfig::default()
            },
            &ws,
            None,
            capabilities().clone(),
        );
        assert!(p.enforced().is_empty(), "{:?}", p.enforced());
        assert_eq!(
            p.not_enforced(),
            ["everything: sandbox.bash is off, processes run with Reasonix's own rights"]
        );
        assert!(p.view().backend.is_empty());
    }
}
