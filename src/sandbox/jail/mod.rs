//! The OS jail every process Reasonix starts runs in: Landlock, seccomp, resource limits, a
//! private mount namespace and a PID namespace of its own (where the kernel lets Reasonix make
//! them), a process group and (where they can be made) pids and memory cgroups, a wall-clock
//! timeout, a private temporary folder and a bounded capture of its output.
//!
//! A [`JailPlan`] is computed once per gate from the `sandbox:` configuration, the workspace, the
//! host's own files ([`JailPlan::with_host_files`]) and the kernel's capabilities ([`probe`]): the
//! folders a process may read and run programs from, those it may write, the TCP ports it may
//! reach, its limits — and what of that will be enforced and what will not. Under `enforce`, a
//! plan that cannot be enforced in full refuses to run anything ([`JailPlan::refusal`]); under
//! `best_effort` it applies what it can and lists the rest in [`JailPlan::not_enforced`]. A plan is
//! frozen: its fields are private, and what a run applies comes from the same computation as its
//! words.
//!
//! Each run is shaped by the admission of the call it runs ([`Shape`], issue 25): read-only
//! (the write roots left read-only in its mount namespace), observed (each write root an
//! overlay whose upper layer comes back in [`RunResult::observed`], judged and committed by
//! [`crate::effects`]) or in place; and with the paths a policy protects from reading covered.
//! Every jailed run also gets a private HOME beside its TMPDIR.
//!
//! A process is started under a plan in three ways only: an admitted bash call (the bash tool
//! runs it to completion under its admission's plan; the function is crate-private); a
//! long-lived child with piped standard streams ([`Jailed`], crate-private too): a stdio MCP
//! server started by its admitted connect call, under that call's plan, and a pre-tool hook,
//! under the gate's read-only hooks plan ([`crate::Gate::hooks_jail`]) — the same steps between
//! fork and exec, no wall clock, killed with its group and cgroups when dropped; or
//! [`danger::exec_unjudged`], which runs a command no gate judged — for `reasonix sandbox exec`
//! and tests.
//!
//! # Two layers over the filesystem
//!
//! Landlock decides by path what a process may read, write and run, but it does not mediate
//! metadata: `chmod`, `chown`, `utime` and extended attributes of a file it may read. Where
//! Reasonix may make namespaces (root, or a kernel that lets any user make a user namespace),
//! each run therefore gets a mount namespace of its own in which the whole tree is read-only but
//! for the write roots and the run's TMPDIR, the host's own files inside the write roots are
//! bound read-only over themselves, the system secrets Landlock hides are covered by an empty
//! file or folder, and `/proc` is mounted fresh for a PID namespace of the run's own (the steps
//! and their order are in `mounts`). Landlock and seccomp stay on top: each layer holds without
//! the other. Where no namespace can be made, `enforce` refuses; `best_effort` runs with seccomp
//! refusing the metadata calls everywhere (it cannot tell the workspace apart, so `chmod +x`
//! fails too) and lists what is then not enforced.
//!
//! # Between fork and exec
//!
//! Everything is built before the fork: the Landlock rules (opened once per plan; each run gets
//! a ruleset of its own, built ahead of it, that grants its own TMPDIR), the seccomp program,
//! the way capabilities are dropped (with the highest capability number, read from
//! `/proc/sys/kernel/cap_last_cap`), and per run the private temporary folder, the cgroups,
//! the mount layout as C strings and, where `network` rules exist, the run's network namespace
//! with the egress proxy listening in it (`netns`, [`crate::egress`]). The child then only makes
//! system calls, in this order, and nothing is allocated there:
//!
//! 1. mark every descriptor but 0, 1 and 2 close-on-exec (`close_range`): the command inherits
//!    none of Reasonix's, nor one its caller passed (`3>>file`); its standard input is
//!    `/dev/null`; where the run has a network namespace, join it (`setns`, through a descriptor
//!    that close-on-exec closes at exec);
//! 2. where the run has namespaces: `clone` into new mount and PID namespaces (and a user
//!    namespace when Reasonix lacks `CAP_SYS_ADMIN`); the process std forked stays outside,
//!    waits, and exits as the command did (`run::namespace`); the clone goes on as pid 1 of its
//!    namespace, and dies with it (`PR_SET_PDEATHSIG`);
//! 3. join the cgroups (one write to each `tasks` on cgroup v1, `cgroup.procs` on v2: the
//!    process has one thread here);
//! 4. where the run has namespaces: map the user namespace (if any), lay out the mounts, mount
//!    `/proc`, and enter the workspace again;
//! 5. set the limits (`RLIMIT_NPROC` only where the run has no pids cgroup, `RLIMIT_AS` only
//!    where it has no memory cgroup);
//! 6. drop capabilities: where Reasonix holds `CAP_SETPCAP`, empty the bounding set
//!    (`PR_CAPBSET_DROP` for every capability) and lock `SECBIT_NOROOT`; in every case empty the
//!    permitted, effective and inheritable sets with `capset` (which empties the ambient set) —
//!    root keeps uid 0 but no capability;
//! 7. set `no_new_privs`; add the fresh `/proc` to the run's ruleset (a new inode, which no rule
//!    built beforehand names) and `landlock_restrict_self`;
//! 8. install the seccomp filter, last: it refuses `mount`, `unshare` and the like to the
//!    command, not to the steps above.
//!
//! Any step that fails fails the spawn: nothing runs, and the run returns the error.
//!
//! # Test strategy
//!
//! `tests/it/jail.rs` runs real processes on this kernel, each attack beside a control that shows
//! it succeeding without the jail: writes outside the write roots fail and leave nothing — with
//! `EROFS` from the read-only mount and, namespaces taken away, with `EACCES` from Landlock
//! alone; `chmod`, `chown`, `utime` and `setxattr` on a file outside fail and change nothing,
//! while inside the workspace they work (`chmod +x script.sh`); a descriptor to an outside file
//! passed to `sandbox exec` as 9 cannot be written, and the bash tool gets `/dev/null` and none
//! of the host's descriptors; a 6 GiB allocation fails under the default memory limit (with the
//! memory cgroup and with `RLIMIT_AS`) and 100 MiB works; `/proc` shows only the jail's
//! processes and `/proc/1/cmdline` is the command's own; `find . -delete`, `rm -rf .reasonix`
//! and a folder renamed away leave the host's files as they were (and `tests/it/run_cli.rs` does
//! it in an allowed bash call of an agent run, which goes on to its end with its record whole);
//! two concurrent runs cannot read or write each other's TMPDIR, with and without namespaces;
//! with Landlock taken away, `/etc/shadow` still reads empty (its cover);
//! a Reasonix run by `nobody` makes its namespaces in a user namespace. Then the older ones: TCP
//! connect and bind are refused (a live listener proves the connection would otherwise
//! succeed), UDP, `/dev/tcp` and `ptrace` are refused, a fork bomb is contained, a child that
//! ignores `SIGTERM` dies at the timeout with its whole group and background processes do not
//! outlive their command (with and without a PID namespace), output past the bound is cut with
//! the true size, a setuid program gains nothing, root in the jail shows empty capability sets
//! and bounding set in `/proc/self/status` (and `noroot,noroot_locked` securebits), and a
//! Reasonix started without `CAP_SETPCAP` still leaves its command without capabilities.
//!
//! The refusals are tested on every machine: a plan can be computed for capabilities with a part
//! taken away ([`JailPlan::with_capabilities`]), so each refusal of `enforce` (no Landlock
//! filesystem rules, TCP rules or scoping, no seccomp, no namespaces) is shown to refuse in its
//! words and to start nothing, while `best_effort` lists the part and runs — without namespaces,
//! with the metadata calls refused everywhere, as its words say; a pids cgroup parent that
//! cannot be used shows a run refused under `enforce` and reported in
//! [`RunResult::not_enforced`] under `best_effort`. `sandbox probe` and `check --format json`
//! list each part (read-only world, covered secrets, PID namespace, descriptors, memory and its
//! mechanism, the run's own TMPDIR, the host's files) as enforced and show one plan; and
//! Reasonix run inside its own jail — where seccomp refuses namespaces and the read-only world
//! refuses cgroups, so nothing is faked — finds them missing: its `probe`, `check` and `sandbox
//! exec` refuse under `enforce` in the plan's words, and under `best_effort` list each part as
//! it then stands and run. The unit tests cover a plan without a private temporary folder, the
//! host files a run binds, and the memory cgroup's parents.
//!
//! A test that needs a feature this machine lacks prints a `SKIPPED` line and returns; with
//! `REASONIX_NO_SKIP=1` (set by `.ci/run`) it fails instead, so CI cannot pass by skipping.
//!
//! # Caveats
//!
//! - Landlock allows by folder; it cannot hide one file of a readable folder. Reasonix grants
//!   `/etc` entry by entry, leaving out the shadow and sudoers files and the ssh and ssl private
//!   keys (and covers them in the mount namespace), but a secret inside the workspace stays
//!   readable to a jailed process: keep secrets out of the workspace or deny them by policy.
//! - Landlock filters TCP by port, never by host: on its own, `github.com:443` allows port 443
//!   to anywhere. Hosts are enforced by the egress proxy in a network namespace per run, which
//!   needs `CAP_SYS_ADMIN` (root); without it, `enforce` with network rules refuses and
//!   `best_effort` keeps the ports only, and then allows UDP (DNS), which cannot be filtered by
//!   port on this ABI. With the proxy, UDP is refused (it resolves names for the run).
//! - Pathname UNIX sockets (`/run/docker.sock`) are not mediated by Landlock before ABI 9, and a
//!   read-only mount does not stop a `connect` either.
//! - The host's files are bound read-only if they exist when a run starts: a workspace without
//!   `reasonix.yaml` lets a command create one (the gate still refuses a command that names
//!   it). A host file reached through a symlink is bound where the link points; the link
//!   itself can be replaced.
//! - The command is pid 1 of its PID namespace: a signal from inside the namespace that it does
//!   not handle does not reach it (`kill 1`), and when it exits, everything it started dies.
//! - Without namespaces (`best_effort` only), metadata calls are refused everywhere but for
//!   setting a file's times to now (`touch` needs it; it can do so outside the workspace too),
//!   `/proc` shows every process of the machine, and the host's files inside the workspace are
//!   kept only by the gate (a command that does not name them is not stopped).
//! - In a user namespace (Reasonix run by a user other than root), files of other users show as
//!   owned by `nobody`, and the cgroups are usually not writable: the limits fall back to
//!   `RLIMIT_NPROC` and `RLIMIT_AS`, as the plan says.
//! - `RLIMIT_AS` bounds each process's address space, not the run's memory: several processes
//!   may use more together, and a program that reserves much address space (a JIT, a sanitizer)
//!   may fail below the limit. The memory cgroup, where one can be made, counts the whole run,
//!   page cache included (reclaimed before anything is killed); a command past its limit is
//!   killed by the kernel (`SIGKILL`).
//! - `RLIMIT_NPROC` does not bind root; the pids cgroup does, where one can be made. A plan
//!   that promises a cgroup keeps its word for every run: where one run's cgroup cannot be made,
//!   `enforce` refuses that run and `best_effort` runs it under the rlimit and says so in the
//!   run's result. Where no pids cgroup can be made at all, a root plan lists the process count
//!   as not enforced, under `enforce` too.
//! - Without `CAP_SETPCAP` (any user but root, usually) the bounding set cannot be emptied and
//!   stays as it is; the capability sets are still emptied, and `no_new_privs` keeps exec — of
//!   a setuid program or one with file capabilities — from granting any. The plan says which.
//! - A plan computed with [`JailPlan::with_capabilities`] believes what it is given: taking a part
//!   away is safe (it is neither applied nor claimed); claiming a part the kernel lacks makes a
//!   plan whose words the kernel may not keep. The gate uses [`JailPlan::new`], the probed value.
//! - A dry run (`reasonix check`, a gate built with `dry_run`) shows [`JailPlan::dry`]: the same
//!   words, computed from what the machine says it offers ([`expected_capabilities`]) with
//!   nothing built — no ruleset, no seccomp program, no folder, no probe child — and under it
//!   nothing runs. Where the machine's settings allow a part that something around Reasonix then
//!   refuses (an LSM; a seccomp filter is detected, and there the dry plan is probed as a run's
//!   is), the dry run shows that part and a run's plan refuses or lists it as not enforced.
//! - A run's ruleset costs about 0.5 ms of kernel time to build (`/etc` alone is over a hundred
//!   rules); a plan builds the next one on a thread of its own while a run goes on, so runs that
//!   start faster than that (several at once) build theirs on the spawn path. Likewise a plan
//!   keeps the emptied cgroups and TMPDIRs of finished runs for its next ones (`run::idle`:
//!   making and removing a cgroup costs about 0.1 ms per controller, a folder in `/tmp` up to
//!   2.6 ms on this machine's ext4); the memory a run left charged to them (page cache) is
//!   reclaimed as the next run needs it. A TMPDIR is kept only from a run whose cgroups show
//!   every process gone, emptied whole: without cgroups, each run gets a new folder.

mod build;
pub mod cgroup;
pub mod config;
pub mod danger;
mod folder;
#[allow(unsafe_code)]
mod inotify;
#[allow(unsafe_code)]
mod landlock_raw;
mod landlock_rules;
mod mounts;
#[allow(unsafe_code)]
mod netns;
mod owners;
mod plan_folder;
pub mod probe;
#[allow(unsafe_code)]
mod run;
pub mod seccomp;
pub mod shape;
mod uppers;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use config::{Enforcement, JailConfig, Limits, NetRule};
pub use probe::kept::{keep_answers_in, try_afresh};
pub use probe::{Capabilities, capabilities, expected_capabilities};
use run::CapDrop;
pub use run::{Capture, Exit, Jailed, RunError, RunResult, Upper};
pub(crate) use run::{run, run_judged, spawn};
pub use shape::{Shape, WalkCache, Writes, protected_paths};

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
/// A plan is frozen once computed: its fields are private, its words ([`JailPlan::enforced`],
/// [`JailPlan::not_enforced`], [`JailPlan::refusal`]) are read through getters, and what a run applies
/// (the ruleset, the filter, the capability drop, the cgroup) comes from the same computation
/// as those words.
#[derive(Debug)]
pub struct JailPlan {
    /// How strictly.
    mode: Enforcement,
    /// The workspace (its working folder).
    workspace: PathBuf,
    /// Folders it may read and run programs from.
    read: Vec<PathBuf>,
    /// Folders it may write (and read, and run programs from).
    write: Vec<PathBuf>,
    /// TCP destinations.
    network: Vec<NetRule>,
    /// Network by host: the `sandbox.network` entries the egress proxy of each run serves, when
    /// each run gets a network namespace with the proxy in it ([`crate::egress`]).
    egress: Option<crate::egress::Allowlist>,
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
    /// The Landlock rules, opened once, and a ruleset built ahead for the next run.
    rulesets: Option<landlock_rules::Rulesets>,
    /// The seccomp program, compiled once.
    filter: Option<seccompiler::BpfProgram>,
    /// The folder of the runs' temporary folders (removed with the plan).
    tmp: Option<Tmp>,
    /// A run's own namespaces, when it gets them.
    namespaces: Option<Namespaces>,
    /// Whether a run gets its own namespaces (in a dry plan, which builds no [`Namespaces`],
    /// whether it would).
    namespaced: bool,
    /// Computed for a dry run ([`JailPlan::dry`]): nothing was built, and nothing runs under it.
    dry: bool,
    /// The host's own files (as given): bound read-only in each run's mount namespace.
    host_files: Vec<PathBuf>,
    /// The cgroups of finished runs, emptied, for the next ones.
    idle_cgroups: run::IdleCgroups,
    /// The TMPDIRs of finished runs, emptied, for the next ones.
    idle_tmpdirs: run::IdleTmpdirs,
    /// The real home folder, whose toolchains each run's private HOME links to.
    home: Option<PathBuf>,
    /// The `read_roots` (canonical, existing): walked with the workspace and the write roots
    /// for the paths a policy protects from reading ([`JailPlan::protected_bases`]).
    read_roots: Vec<PathBuf>,
    /// The `sandbox.passthrough` folders (absolute, as configured).
    passthrough: Vec<PathBuf>,
    /// A writer's run is observed: its write roots are overlays (issue 25).
    overlay: bool,
    /// Why a writer may not run, when it cannot be observed under `enforce`.
    writer_refusal: Option<String>,
    /// What a write root is granted in Landlock, as the bit set the kernel takes: the rights
    /// the plan's rulesets handle (given to an overlay mounted over a write root).
    write_access: u64,
    /// The walks for protected paths of its runs, one per predicate ([`JailPlan::protected`]).
    walks: std::sync::Mutex<Vec<(u64, std::sync::Arc<WalkCache>)>>,
    /// Where its writers' upper layers go when in memory (`uppers`); else beside the TMPDIRs.
    uppers: Option<uppers::Uppers>,
}

/// A jailed run failed to start: a part the probe's kept answer claims may be what failed, so
/// the next process tries each part again ([`probe::kept`]).
fn failed_to_start() {
    probe::kept::forget();
}

/// The probed capabilities a plan of `config` can use ([`probe::for_plan`]).
fn probed_for(config: &JailConfig) -> Capabilities {
    probe::for_plan(config.mode, !config.network.is_empty())
}

/// What a plan gives each run's namespaces.
#[derive(Debug)]
struct Namespaces {
    /// The user namespace's ids, when one is needed (Reasonix lacks `CAP_SYS_ADMIN`).
    users: Option<mounts::Users>,
    /// Each secret that exists here (canonical), with what covers it (made in the run's mount
    /// namespace, on a tmpfs of its own: see `mounts`).
    covers: Vec<(PathBuf, mounts::Cover)>,
}

/// A plan's own temporary folder: it holds each run's TMPDIR (the Landlock ruleset grants it).
/// Nothing else is made on disk for a plan: the empty file and folder that cover secrets are
/// made in each run's mount namespace (`mounts`).
#[derive(Debug)]
struct Tmp {
    /// Removed on drop, or parked by the plan's drop (`plan_folder`).
    dir: plan_folder::PlanFolder,
    /// The folder itself, canonical: the parent of each run's TMPDIR.
    runs: PathBuf,
}

impl Tmp {
    fn new(dir: plan_folder::PlanFolder) -> std::io::Result<Tmp> {
        let runs = dir.dir.path().canonicalize()?;
        Ok(Tmp { dir, runs })
    }
}

impl Drop for JailPlan {
    /// The plan's folder, with its finished runs' folders, parked for the next plan when it
    /// holds nothing else (`plan_folder`); otherwise removed.
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            tmp.dir.park(self.idle_tmpdirs.drain());
        }
    }
}

/// The plan as shown in verdicts and `sandbox probe`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JailPlanView {
    /// `enforce`, `best_effort` or `off`.
    pub mode: Enforcement,
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
    /// How the call whose verdict shows this plan runs in it (issue 25): `read_only`,
    /// `observed` (on an overlay, its changes judged before they land) or `in_place` (not
    /// observed). Absent in `sandbox probe`, which shows no call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<&'static str>,
}

impl JailPlan {
    /// Computes the plan for a workspace (canonical) under a configuration, for this machine's
    /// probed [`capabilities`] — those the plan can use: a plan without `network` rules does not
    /// try a network namespace (nor claim one), and a plan that is off tries nothing
    /// ([`probe::for_plan`]). The gate and `reasonix sandbox` use this one.
    pub fn new(config: &JailConfig, workspace: &Path, home: Option<&Path>) -> JailPlan {
        let caps = probed_for(config);
        let tmp = plan_folder::make();
        JailPlan::build(config, workspace, home, caps, Some(tmp), true).seeded()
    }

    /// The plan of a session in plan mode: as [`JailPlan::new`], except that the workspace and the
    /// `write_roots` are granted for reading only. The gate lets a bash command run in plan mode
    /// only when the analysis finds it read-only; this makes the kernel hold it to that — a
    /// command that writes anyway (an analysis mistake, or a "read-only" program that rewrites
    /// a cache or `.git/index`) gets `EACCES`. The run's private temporary folder stays writable.
    pub fn read_only(config: &JailConfig, workspace: &Path, home: Option<&Path>) -> JailPlan {
        let caps = probed_for(config);
        let tmp = plan_folder::make();
        JailPlan::build(config, workspace, home, caps, Some(tmp), false).seeded()
    }

    /// The plan, with the cgroups its probe made (if this process probed for it) kept for its
    /// first run ([`run::seed_cgroups`]).
    fn seeded(self) -> JailPlan {
        run::seed_cgroups(&self, cgroup::take_tried());
        self
    }

    /// The plan a dry run shows (`reasonix check`): what [`JailPlan::new`] plans, computed from what
    /// this machine says it offers ([`expected_capabilities`]) and built no further — no
    /// Landlock ruleset, no seccomp program, no temporary folder, no probe child (issue 12). Its
    /// words are a run's words; nothing runs under it ([`RunError::Refused`]).
    pub fn dry(config: &JailConfig, workspace: &Path, home: Option<&Path>) -> JailPlan {
        JailPlan::build(
            config,
            workspace,
            home,
            expected_capabilities().clone(),
            None,
            true,
        )
    }

    /// [`JailPlan::dry`] for plan mode: what [`JailPlan::read_only`] plans.
    pub fn dry_read_only(config: &JailConfig, workspace: &Path, home: Option<&Path>) -> JailPlan {
        JailPlan::build(
            config,
            workspace,
            home,
            expected_capabilities().clone(),
            None,
            false,
        )
    }

    /// Whether this is a dry run's plan ([`JailPlan::dry`]).
    pub fn is_dry(&self) -> bool {
        self.dry
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
    /// use reasonix::sandbox::jail::{self, Capabilities, JailConfig, JailPlan};
    ///
    /// let no_seccomp = Capabilities { seccomp: false, ..jail::capabilities().clone() };
    /// let ws = std::env::temp_dir();
    /// let plan = JailPlan::with_capabilities(&JailConfig::default(), &ws, None, no_seccomp);
    /// assert!(plan.refusal().is_some_and(|why| why.contains("lacks") && why.contains("seccomp")));
    /// ```
    pub fn with_capabilities(
        config: &JailConfig,
        workspace: &Path,
        home: Option<&Path>,
        caps: Capabilities,
    ) -> JailPlan {
        let tmp = plan_folder::make();
        JailPlan::build(config, workspace, home, caps, Some(tmp), true)
    }

    /// The same plan, protecting the host's own files (the record and its folder, the settings,
    /// the policy and data files — [`crate::HostFiles::all`]): in each run's mount namespace,
    /// those that exist when the run starts and lie inside a write root are bound read-only over
    /// themselves, and the folders between them and their write root cannot be renamed or
    /// removed. Their words join [`JailPlan::enforced`], or [`JailPlan::not_enforced`] where a run has
    /// no mount namespace. The host itself (the recorder) still writes them: they are read-only
    /// inside the jail only.
    ///
    /// ```
    /// use reasonix::sandbox::jail::{JailConfig, JailPlan};
    ///
    /// let ws = std::env::temp_dir();
    /// let plan = JailPlan::new(&JailConfig::default(), &ws, None)
    ///     .with_host_files([ws.join(".reasonix"), ws.join("reasonix.yaml")]);
    /// let words = [plan.enforced(), plan.not_enforced()].concat();
    /// assert!(words.iter().any(|w| w.contains("the host's own files")));
    /// ```
    pub fn with_host_files<P: AsRef<Path>>(
        mut self,
        files: impl IntoIterator<Item = P>,
    ) -> JailPlan {
        for f in files {
            let f = f.as_ref().to_path_buf();
            if !self.host_files.contains(&f) {
                self.host_files.push(f);
            }
        }
        if self.mode == Enforcement::Off || self.host_files.is_empty() {
            return self;
        }
        let (words, list) = if self.namespaced {
            (
                "the host's own files inside the write roots (record, settings, policy and data files that exist when a run starts) bound read-only over themselves, the folders above them pinned (mount namespace)",
                &mut self.enforced,
            )
        } else {
            (
                "the host's own files inside the write roots: without a mount namespace only the gate keeps a command from changing them, and a command that does not name them is not stopped (the recorder notices a changed record afterwards)",
                &mut self.not_enforced,
            )
        };
        if !list.iter().any(|w| w == words) {
            list.push(words.to_owned());
        }
        self
    }

    /// How strictly.
    pub fn mode(&self) -> Enforcement {
        self.mode
    }

    /// Why a call admitted with `writes` may not run under this plan, if so: the plan's own
    /// refusal, or — for a writer, under `enforce` — that its changes cannot be observed here.
    pub fn refusal_for(&self, writes: Writes) -> Option<&str> {
        self.refusal.as_deref().or(match writes {
            Writes::Observed => self.writer_refusal.as_deref(),
            _ => None,
        })
    }

    /// Whether a writer's run is observed (its write roots are overlays).
    pub fn observes(&self) -> bool {
        self.overlay && self.mode != Enforcement::Off
    }

    /// Where the paths a policy protects from reading are looked for when a run starts: the
    /// workspace, the write roots and the read roots ([`protected_paths`]).
    pub fn protected_bases(&self) -> Vec<PathBuf> {
        let mut bases = vec![self.workspace.clone()];
        for p in self.write.iter().chain(&self.read_roots) {
            if !bases.iter().any(|b| p.starts_with(b)) {
                bases.push(p.clone());
            }
        }
        bases
    }

    /// The paths below [`JailPlan::protected_bases`] that `protected` names now
    /// ([`protected_paths`]), for a run's [`Shape::hidden`]. `key` names the predicate: what an
    /// earlier walk with the same key read of a folder is reused while the folder has not
    /// changed ([`WalkCache`]), so a session's runs do not read an unchanged workspace again.
    pub fn protected(&self, key: u64, protected: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
        let cache = {
            let mut walks = self.walks.lock().unwrap_or_else(|p| p.into_inner());
            match walks.iter().find(|(k, _)| *k == key) {
                Some((_, c)) => std::sync::Arc::clone(c),
                None => {
                    // A few predicates at most (a bundle swap makes a new one): keep the last.
                    if walks.len() >= 4 {
                        walks.remove(0);
                    }
                    let c = std::sync::Arc::new(WalkCache::default());
                    walks.push((key, std::sync::Arc::clone(&c)));
                    c
                }
            }
        };
        shape::protected_paths_cached(&self.protected_bases(), protected, &cache)
    }

    /// The workspace: the working folder of every run.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The limits of every run.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What the plan was computed for: this machine's probe ([`JailPlan::new`]: what the plan can
    /// use of it, so `net_namespace` is `false` without `network` rules and every part absent
    /// under `off`) or the value given to [`JailPlan::with_capabilities`].
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
    pub fn view(&self) -> JailPlanView {
        let caps = &self.capabilities;
        let mut backend = Vec::new();
        if self.mode != Enforcement::Off {
            if let Some(abi) = caps.landlock_abi {
                backend.push(format!("landlock-abi-{abi}"));
            }
            if caps.seccomp {
                backend.push("seccomp".into());
            }
            if self.egress.is_some() {
                backend.push("network-namespace".into());
                backend.push("egress-proxy".into());
            }
            if self.namespaced {
                backend.push("mount-namespace".into());
                backend.push("pid-namespace".into());
                if caps.user_namespace {
                    backend.push("user-namespace".into());
                }
            }
            if caps.cgroup_pids.is_some() {
                backend.push("pids-cgroup".into());
            }
            if caps.cgroup_memory.is_some() {
                backend.push("memory-cgroup".into());
            }
            backend.push("rlimits".into());
        }
        JailPlanView {
            mode: self.mode,
            backend,
            read_roots: self.read.iter().map(|p| p.display().to_string()).collect(),
            write_roots: self.write.iter().map(|p| p.display().to_string()).collect(),
            network: self.network.clone(),
            limits: self.limits,
            enforced: self.enforced.clone(),
            not_enforced: self.not_enforced.clone(),
            refusal: self.refusal.clone(),
            run: None,
        }
    }

    /// How a call that may (`writes`) or may not change anything runs under this plan:
    /// `read_only`, `observed` or `in_place` (issue 25; [`JailPlanView::run`]).
    pub fn runs(&self, writes: bool) -> &'static str {
        match (writes, self.mode, self.namespaced, self.overlay) {
            (_, Enforcement::Off, _, _) => "in_place",
            (false, _, true, _) => "read_only",
            (true, _, _, true) => "observed",
            _ => "in_place",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of a workspace, with or without the parent of its runs' temporary folders.
    fn plan(
        ws: &Path,
        mode: Enforcement,
        tmp: std::io::Result<plan_folder::PlanFolder>,
    ) -> JailPlan {
        let config = JailConfig {
            mode,
            ..JailConfig::default()
        };
        JailPlan::build(&config, ws, None, capabilities().clone(), Some(tmp), true)
    }

    /// Issue 12: a dry run shows the plan a run would have, and builds none of it.
    #[test]
    fn a_dry_plan_says_what_a_plan_says_builds_nothing_and_runs_nothing() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let marker = ws.join("ran.txt");
        let argv = ["touch".to_owned(), marker.display().to_string()];
        for mode in [
            Enforcement::Enforce,
            Enforcement::BestEffort,
            Enforcement::Off,
        ] {
            let config = JailConfig {
                mode,
                network: vec![NetRule::try_from("crates.io:443".to_owned()).unwrap()],
                ..JailConfig::default()
            };
            for (dry, built) in [
                (
                    JailPlan::dry(&config, &ws, home.as_deref()),
                    JailPlan::new(&config, &ws, home.as_deref()),
                ),
                (
                    JailPlan::dry_read_only(&config, &ws, home.as_deref()),
                    JailPlan::read_only(&config, &ws, home.as_deref()),
                ),
            ] {
                let files = [ws.join("reasonix.yaml")];
                let (dry, built) = (
                    dry.with_host_files(files.clone()),
                    built.with_host_files(files),
                );
                assert_eq!(dry.view(), built.view(), "{mode:?}");
                assert!(dry.is_dry() && !built.is_dry());
                assert!(dry.rulesets.is_none() && dry.filter.is_none(), "{mode:?}");
                assert!(dry.tmp.is_none() && dry.namespaces.is_none(), "{mode:?}");
                match run(&dry, &argv, None, Capture::Bounded(1024), &Shape::direct()) {
                    Err(RunError::Refused(why)) => assert!(why.contains("dry run"), "{why}"),
                    other => panic!("{mode:?}: {other:?}"),
                }
                assert!(!marker.exists(), "{mode:?}: nothing ran");
            }
        }
    }

    #[test]
    fn without_a_private_temporary_folder_every_mode_refuses_and_runs_nothing() {
        // Unlike a missing kernel part, best_effort cannot run with less here: each run's
        // TMPDIR is made under that folder, and the Landlock ruleset grants it.
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let marker = ws.join("ran.txt");
        let argv = ["touch".to_owned(), marker.display().to_string()];
        for mode in [
            Enforcement::Enforce,
            Enforcement::BestEffort,
            Enforcement::Off,
        ] {
            let no_tmp = Err(std::io::Error::other("faked: no room"));
            let p = plan(&ws, mode, no_tmp);
            let why = p.refusal().unwrap_or_else(|| panic!("{mode:?}: {p:?}"));
            assert!(
                why.starts_with("no private temporary folder can be made in ")
                    && why.ends_with("(faked: no room); nothing runs without one"),
                "{why}"
            );
            match run(&p, &argv, None, Capture::Bounded(1024), &Shape::direct()) {
                Err(RunError::Refused(refused)) => assert_eq!(refused, why),
                other => panic!("{mode:?}: {other:?}"),
            }
            assert!(!marker.exists(), "{mode:?}: nothing ran");
        }
        // The control: with the folder, the same command runs (jail off: on every machine).
        let p = plan(&ws, Enforcement::Off, plan_folder::make());
        assert_eq!(p.refusal(), None);
        let r = run(&p, &argv, None, Capture::Bounded(1024), &Shape::direct()).unwrap();
        assert_eq!(r.exit, Exit::Exited(0));
        assert!(marker.exists());
    }

    #[test]
    fn a_plan_off_claims_nothing_but_that_it_is_off() {
        let ws = std::env::temp_dir();
        let p = JailPlan::with_capabilities(
            &JailConfig {
                mode: Enforcement::Off,
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
