//! Building a plan: [`JailPlan::build`] as the list of its steps, each a function below.
//!
//! 1. [`Roots::of`]: where a run reads, writes and finds devices, and the secrets left out;
//! 2. [`Facts::of`]: what the configuration and the machine allow (jailed, namespaced, an
//!    overlay, network by host through the egress proxy);
//! 3. [`Words::of`]: what the plan enforces and what not, in words, and what the kernel lacks;
//! 4. [`Words::refuse`]: why nothing may run (under `enforce`, a part the kernel lacks or a
//!    network entry the proxy cannot read); under `best_effort`, what is missing is listed;
//! 5. [`private_tmp`]: the plan's own temporary folder, without which nothing runs;
//! 6. [`landlock_rulesets`], [`seccomp_filter`], [`namespaces`]: the parts built ahead of the
//!    runs; one that exists but cannot be built refuses under `enforce` ([`Words::broken`]).

use std::path::{Path, PathBuf};

use super::run::{self, CapDrop};
use super::{
    Capabilities, DEVICES, Enforcement, HOME_TOOLCHAINS, JailConfig, JailPlan, Namespaces, NetRule,
    SYSTEM_READ, SYSTEM_SECRETS, Tmp, landlock_rules, mounts, seccomp, uppers,
};

impl JailPlan {
    /// The plan, given the folder for its runs' temporary folders (or why none could be made),
    /// or `None` for a dry run's plan, which builds nothing. Unless `writable`, the workspace and
    /// the write roots are granted for reading only.
    pub(super) fn build(
        config: &JailConfig,
        workspace: &Path,
        home: Option<&Path>,
        caps: Capabilities,
        tmp: Option<std::io::Result<super::plan_folder::PlanFolder>>,
        writable: bool,
    ) -> JailPlan {
        let dry = tmp.is_none();
        let roots = Roots::of(config, workspace, home, writable);
        let (egress, unreadable) = egress_allowlist(config, &caps);
        let facts = Facts::of(config, &caps, &roots, egress.is_some());
        let mut words = Words::of(&facts);
        words.refuse(&facts, &unreadable);
        let tmp = private_tmp(tmp, &mut words);
        // The folders of the runs of a plan whose folder was taken over (`plan_folder`).
        let idle_tmpdirs = run::IdleTmpdirs::default();
        for folder in tmp.iter().flat_map(|t| t.dir.runs()) {
            idle_tmpdirs.give_back(folder);
        }
        let rulesets = tmp
            .as_ref()
            .and_then(|_| landlock_rulesets(&facts, &roots, &mut words));
        let filter = seccomp_filter(&facts, dry, &mut words);
        let namespaces = tmp
            .as_ref()
            .and_then(|_| namespaces(&facts, &roots.secrets));
        let (namespaced, overlay, cap_drop) = (facts.namespaced, facts.overlay, facts.cap_drop);
        JailPlan {
            mode: config.mode,
            workspace: workspace.to_path_buf(),
            read: roots.read,
            write: roots.write,
            network: config.network.clone(),
            egress,
            limits: config.limits,
            write_access: landlock_rules::write_access_bits(caps.landlock_abi),
            capabilities: caps,
            enforced: words.enforced,
            not_enforced: words.not_enforced,
            refusal: words.refusal,
            cap_drop,
            rulesets,
            filter,
            namespaced: if dry {
                namespaced
            } else {
                namespaces.is_some()
            },
            dry,
            tmp,
            namespaces,
            host_files: Vec::new(),
            idle_cgroups: run::IdleCgroups::default(),
            idle_tmpdirs,
            home: home.map(Path::to_path_buf),
            read_roots: roots.read_roots,
            passthrough: config
                .passthrough(workspace, home)
                .into_iter()
                .map(|p| p.canonicalize().unwrap_or(p))
                .collect(),
            overlay,
            writer_refusal: words.writer_refusal,
            walks: std::sync::Mutex::new(Vec::new()),
            uppers: (overlay && !dry).then(uppers::Uppers::in_memory).flatten(),
        }
    }
}

/// Where a run reads and writes.
struct Roots {
    /// Folders it may write: the workspace and the write roots (none unless `writable`).
    write: Vec<PathBuf>,
    /// Folders it may read and run programs from (those that exist).
    read: Vec<PathBuf>,
    /// The `read_roots`, canonical and existing.
    read_roots: Vec<PathBuf>,
    /// The device files that exist.
    devices: Vec<PathBuf>,
    /// The system secrets left out of the folders it reads.
    secrets: Vec<PathBuf>,
}

impl Roots {
    /// The workspace and the write roots (for reading only unless `writable`), the system's
    /// folders, the home folder's toolchains and the read roots.
    fn of(config: &JailConfig, workspace: &Path, home: Option<&Path>, writable: bool) -> Roots {
        let (extra_write, extra_read) = config.roots(home);
        let mut roots = vec![workspace.to_path_buf()];
        // Canonical: a mount namespace binds them by path, and does not follow a last symlink.
        for root in extra_write.iter().filter_map(|p| p.canonicalize().ok()) {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
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
        let read_roots: Vec<PathBuf> = extra_read
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        read.extend(extra_read);
        read.retain(|p| p.exists());
        let devices: Vec<PathBuf> = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect();
        let secrets: Vec<PathBuf> = SYSTEM_SECRETS.iter().map(PathBuf::from).collect();
        Roots {
            write,
            read,
            read_roots,
            devices,
            secrets,
        }
    }
}

/// Network rules name hosts: each run gets a network namespace with the egress proxy in it where
/// one can be made; without, Landlock can keep only the ports. Returns the proxy's allowlist, and
/// the entry it cannot read (a broken glob), which refuses under enforce.
fn egress_allowlist(
    config: &JailConfig,
    caps: &Capabilities,
) -> (Option<crate::egress::Allowlist>, Vec<String>) {
    let jailed = config.mode != Enforcement::Off;
    let enforce = config.mode == Enforcement::Enforce;
    let by_host = jailed && !config.network.is_empty();
    let mut missing_words: Vec<String> = Vec::new();
    let egress = match (by_host && caps.net_namespace).then(|| {
        crate::egress::Allowlist::new(config.network.iter().map(|n| (n.host.as_str(), n.port)))
    }) {
        Some(Ok(list)) => Some(list),
        Some(Err(e)) => {
            if enforce {
                missing_words.push(e);
            }
            None
        }
        None => None,
    };
    (egress, missing_words)
}

/// What the configuration and the machine allow, decided once for every step after.
struct Facts<'a> {
    config: &'a JailConfig,
    caps: &'a Capabilities,
    read: &'a [PathBuf],
    write: &'a [PathBuf],
    jailed: bool,
    enforce: bool,
    cap_drop: CapDrop,
    namespaced: bool,
    overlay: bool,
    /// Network rules name hosts.
    by_host: bool,
    /// Network by host through the egress proxy, in a network namespace of the run's own.
    proxied: bool,
}

impl<'a> Facts<'a> {
    fn of(
        config: &'a JailConfig,
        caps: &'a Capabilities,
        roots: &'a Roots,
        proxied: bool,
    ) -> Facts<'a> {
        let jailed = config.mode != Enforcement::Off;
        let namespaced = jailed && caps.namespaces;
        Facts {
            config,
            caps,
            read: &roots.read,
            write: &roots.write,
            jailed,
            enforce: config.mode == Enforcement::Enforce,
            cap_drop: CapDrop::for_capabilities(caps),
            namespaced,
            overlay: namespaced && caps.overlay,
            by_host: jailed && !config.network.is_empty(),
            proxied,
        }
    }
}

/// The plan's words as they are built: what it enforces, what not, and why it refuses.
#[derive(Default)]
struct Words {
    enforced: Vec<String>,
    not_enforced: Vec<String>,
    /// Parts this kernel lacks: under enforce they refuse, under best_effort they are listed.
    missing: Vec<&'static str>,
    /// Why nothing may run under the plan.
    refusal: Option<String>,
    /// Why a writer may not run, when it cannot be observed under `enforce`.
    writer_refusal: Option<String>,
}

impl Words {
    /// Each part of the jail in turn, in the order the plan lists them.
    fn of(f: &Facts<'_>) -> Words {
        let mut words = Words::default();
        if !f.jailed {
            words.not_enforced.push(
                "everything: sandbox.bash is off, processes run with Reasonix's own rights".into(),
            );
            return words;
        }
        words.filesystem(f);
        words.network(f);
        words.scoping(f);
        words.seccomp(f);
        words.namespaces(f);
        words.tmpdir(f);
        words.per_call(f);
        words.process(f);
        words
    }

    /// What Landlock grants on the filesystem.
    fn filesystem(&mut self, f: &Facts<'_>) {
        if f.caps.landlock_fs {
            let writes = if f.write.is_empty() {
                "the run's temporary folder (plan mode: the workspace and write_roots are read-only)".to_owned()
            } else {
                f.write
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            self.enforced.push(format!(
                "filesystem (Landlock ABI {}): read and run from {} roots, write only to {writes}",
                f.caps.landlock_abi.unwrap_or(0),
                f.read.len(),
            ));
        } else {
            self.missing.push("Landlock filesystem rules");
        }
    }

    /// Network: by host through the egress proxy, or by port with Landlock.
    fn network(&mut self, f: &Facts<'_>) {
        if f.proxied {
            self.enforced.push(format!(
                "network by host: a network namespace of the run's own with only loopback, where TCP reaches only the egress proxy on 127.0.0.1:{} (Landlock: that port only); it connects to {} as the gate judges each network_connect call, and refuses loopback, private, link-local and metadata addresses unless an entry names the IP itself",
                crate::egress::PROXY_PORT,
                f.config
                    .network
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if !f.caps.landlock_net {
                self.missing.push("Landlock TCP rules (ABI 4)");
            }
        } else if f.caps.landlock_net {
            self.enforced.push(if f.config.network.is_empty() {
                "TCP connect and bind: refused (Landlock)".into()
            } else {
                format!(
                    "TCP connect only to ports {} (Landlock); bind refused",
                    f.config
                        .network
                        .iter()
                        .map(|n| n.port.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
            if f.config.network.iter().any(|n| n.host != "*") {
                self.not_enforced.push(
                    "network host names: Landlock filters TCP by port only, to any host".into(),
                );
            }
            if f.by_host {
                self.missing.push("a network namespace for the egress proxy, which enforces sandbox.network by host (it needs CAP_SYS_ADMIN: run Reasonix as root)");
            }
        } else {
            self.missing.push("Landlock TCP rules (ABI 4)");
        }
    }

    /// Signals and abstract sockets scoped by Landlock.
    fn scoping(&mut self, f: &Facts<'_>) {
        if f.caps.landlock_scope {
            self.enforced
                .push("signals and abstract UNIX sockets scoped to the sandbox (Landlock)".into());
        } else {
            self.missing.push("Landlock scoping (ABI 6)");
        }
    }

    /// What the seccomp filter refuses.
    fn seccomp(&mut self, f: &Facts<'_>) {
        if f.caps.seccomp {
            self.enforced.push(if f.config.network.is_empty() || f.proxied {
                "seccomp: UDP, raw and other non-TCP sockets, ptrace, io_uring, bpf, mount, keyctl, namespaces refused".into()
            } else {
                "seccomp: raw and other non-TCP sockets, ptrace, io_uring, bpf, mount, keyctl, namespaces refused; UDP allowed for DNS".into()
            });
            if !f.config.network.is_empty() && !f.proxied {
                self.not_enforced.push("UDP: allowed to any port while network rules exist (DNS needs it; seccomp cannot read the port)".into());
            }
        } else {
            self.missing.push("seccomp");
        }
    }

    /// What the mount and PID namespaces keep (or, without them, what seccomp does instead).
    fn namespaces(&mut self, f: &Facts<'_>) {
        if f.namespaced {
            self.enforced.push("filesystem read-only outside the write roots and the run's TMPDIR (mount namespace): there no file can be written, nor its mode, owner, times or extended attributes changed".into());
            self.enforced.push("system secrets covered by an empty file or folder (mount namespace), besides Landlock's refusal".into());
            self.enforced.push("processes: a PID namespace of the run's own, so /proc shows its processes only, and none outlives the first".into());
            if f.caps.user_namespace {
                self.enforced.push(format!("namespaces made inside a user namespace that maps only uid {} and gid {}: files of other users show as owned by nobody", f.caps.uid, nix::unistd::getgid().as_raw()));
            }
        } else {
            self.missing.push("mount and PID namespaces");
            if f.caps.seccomp {
                self.enforced.push("metadata: chmod, chown, utime and extended attribute calls refused everywhere (seccomp; without a mount namespace it cannot tell the write roots apart)".into());
                self.not_enforced.push("metadata inside the write roots: without a mount namespace, chmod, chown, utime and extended attribute changes are refused there too (`chmod +x` fails)".into());
                self.not_enforced.push("file times outside the write roots: without a mount namespace, setting them to the current time is let through (`touch` needs it), to no other time".into());
            } else {
                self.not_enforced.push("metadata outside the write roots: Landlock does not mediate chmod, chown, utime or extended attributes, and neither a mount namespace nor seccomp refuses them".into());
            }
            self.not_enforced.push("process visibility: without a PID namespace, /proc shows every process on this machine, command lines included".into());
        }
    }

    /// Whose TMPDIR a run reaches.
    fn tmpdir(&mut self, f: &Facts<'_>) {
        match (f.namespaced, f.caps.landlock_fs) {
            (true, _) => self.enforced.push("TMPDIR: the run's own, out of reach of every other run (Landlock grants each run its own folder; the mount namespace hides the others)".into()),
            (false, true) => self.enforced.push("TMPDIR: the run's own, out of reach of every other run (Landlock grants each run its own folder)".into()),
            (false, false) => self.not_enforced.push("per-run TMPDIR: without Landlock or a mount namespace, a run can reach another's".into()),
        }
    }

    /// Issue 25: each run as its call's admission says (read-only, observed on an overlay, or in place).
    fn per_call(&mut self, f: &Facts<'_>) {
        if f.namespaced {
            self.enforced.push("a call admitted as read-only runs with the workspace and write_roots read-only (mount namespace: a write gets EROFS and changes nothing)".into());
            self.enforced.push("paths a deny or ask rule protects from reading, as they exist when a run starts in the workspace, write_roots and read_roots, covered by an empty file or folder (mount namespace)".into());
            if f.overlay {
                self.enforced.push("a call admitted to write runs on an overlay of the workspace and write_roots: what it changed is kept apart, judged change by change as the file tool that would make it, and lands only if allowed (sandbox.passthrough folders are written in place, not observed)".into());
            } else if f.enforce {
                self.writer_refusal = Some("sandbox.bash is enforce, and no overlay can be mounted in a run's mount namespace here, so a writer's changes cannot be observed and judged before they land; use best_effort to let writers change the workspace in place (their effects then not observed), or a kernel with overlayfs".into());
            } else {
                self.not_enforced.push("a writer's changes: no overlay can be mounted here, so a call admitted to write changes the workspace in place and its effects are not observed".into());
            }
        } else {
            self.not_enforced.push("read-only calls: without a mount namespace, the write roots stay writable to a call admitted as read-only".into());
            self.not_enforced.push("paths a policy protects from reading: without a mount namespace they cannot be covered, and Landlock cannot hide one file of a readable folder".into());
            self.not_enforced.push("a writer's changes: without a mount namespace no overlay can be made, so they are made in place and not observed".into());
        }
    }

    /// The process itself: HOME, descriptors, limits, memory, capabilities, process count.
    fn process(&mut self, f: &Facts<'_>) {
        self.enforced.push("HOME: a private folder of each run inside its TMPDIR, linking the toolchains of the real home folder; nothing written to ~ reaches it".into());
        self.enforced.push("descriptors: the command gets standard input from /dev/null, standard output and error, and no other descriptor (close_range)".into());
        let limits = f.config.limits;
        self.enforced.push(format!(
            "limits: {} s CPU, {} bytes per file, {} open files, {} ms wall clock (whole process group killed)",
            limits.cpu_seconds, limits.file_size, limits.open_files, limits.timeout_ms
        ));
        self.enforced.push(match &f.caps.cgroup_memory {
            Some(_) => format!("memory: at most {} bytes for the whole run, swap included (memory cgroup)", limits.memory_bytes),
            None => format!("memory: at most {} bytes of address space per process (RLIMIT_AS; no memory cgroup can be made, so a run of several processes may use more in all)", limits.memory_bytes),
        });
        self.enforced.push(f.cap_drop.words(f.caps.uid));
        match (&f.caps.cgroup_pids, f.caps.uid) {
            (Some(_), _) => self.enforced.push(format!(
                "at most {} processes (pids cgroup)",
                limits.processes
            )),
            (None, 0) => self.not_enforced.push(
                "process count: no pids cgroup can be made, and RLIMIT_NPROC does not bind root"
                    .into(),
            ),
            (None, _) => self.enforced.push(format!(
                "at most {} processes of this user (RLIMIT_NPROC)",
                limits.processes
            )),
        }
        self.not_enforced
            .push("pathname UNIX sockets (Landlock mediates them from ABI 9)".into());
    }

    /// Why nothing may run: under `enforce`, a part this kernel lacks, or a network entry the
    /// proxy cannot read (`unreadable`); under `best_effort` each missing part is listed.
    fn refuse(&mut self, f: &Facts<'_>, unreadable: &[String]) {
        self.refusal = (f.enforce && !self.missing.is_empty()).then(|| {
            format!(
                "sandbox.bash is enforce, and this kernel lacks {}; use best_effort to run with less, or a newer kernel",
                self.missing.join(", ")
            )
        });
        if let Some(why) = unreadable.first() {
            self.refusal.get_or_insert(format!(
                "sandbox.bash is enforce, and sandbox.network cannot be used: {why}"
            ));
        }
        if f.config.mode == Enforcement::BestEffort {
            for m in &self.missing {
                self.not_enforced
                    .push(format!("{m}: not available on this kernel"));
            }
        }
    }

    /// A part that exists but could not be built: refuses under enforce, listed otherwise.
    fn broken(&mut self, enforce: bool, why: String) {
        if enforce {
            self.refusal.get_or_insert(why);
        } else {
            self.not_enforced.push(why);
        }
    }
}

/// The plan's own temporary folder (`None` for a dry plan). Every mode refuses without one: a
/// run's TMPDIR is made under it, and the ruleset grants it.
fn private_tmp(
    tmp: Option<std::io::Result<super::plan_folder::PlanFolder>>,
    words: &mut Words,
) -> Option<Tmp> {
    match tmp.map(|t| t.and_then(Tmp::new)) {
        None => None,
        Some(Ok(tmp)) => Some(tmp),
        Some(Err(e)) => {
            words.refusal.get_or_insert(format!(
                "no private temporary folder can be made in {} ({e}); nothing runs without one",
                std::env::temp_dir().display()
            ));
            None
        }
    }
}

/// The Landlock rules, opened once, and a ruleset built ahead for the first run.
fn landlock_rulesets(
    f: &Facts<'_>,
    roots: &Roots,
    words: &mut Words,
) -> Option<landlock_rules::Rulesets> {
    if !(f.jailed && f.caps.landlock_fs) {
        return None;
    }
    let rules =
        landlock_rules::Rules::open(&roots.read, &roots.write, &roots.devices, &roots.secrets);
    let spec = landlock_rules::Spec {
        network: if f.proxied {
            vec![NetRule {
                host: "127.0.0.1".into(),
                port: crate::egress::PROXY_PORT,
            }]
        } else {
            f.config.network.clone()
        },
        strict: f.enforce,
        net: f.caps.landlock_net,
        scope: f.caps.landlock_scope,
    };
    match landlock_rules::Rulesets::new(rules, spec) {
        Ok(r) => Some(r),
        Err(e) => {
            words.broken(
                f.enforce,
                format!("the Landlock ruleset could not be built: {e}"),
            );
            None
        }
    }
}

/// The seccomp program, compiled once (not for a dry plan).
fn seccomp_filter(f: &Facts<'_>, dry: bool, words: &mut Words) -> Option<seccompiler::BpfProgram> {
    match (f.jailed && f.caps.seccomp && !dry)
        .then(|| seccomp::program(!f.config.network.is_empty() && !f.proxied, !f.namespaced))
    {
        Some(Ok(program)) => Some(program),
        Some(Err(e)) => {
            words.broken(
                f.enforce,
                format!("the seccomp filter could not be built: {e}"),
            );
            None
        }
        None => None,
    }
}

/// What each run's namespaces get: the user namespace's ids, and what covers each secret.
fn namespaces(f: &Facts<'_>, secrets: &[PathBuf]) -> Option<Namespaces> {
    f.namespaced.then(|| Namespaces {
        users: f.caps.user_namespace.then(|| mounts::Users {
            uid: f.caps.uid,
            gid: nix::unistd::getgid().as_raw(),
        }),
        covers: secrets
            .iter()
            .filter_map(|s| s.canonicalize().ok())
            .map(|s| {
                let cover = mounts::Cover::of(&s);
                (s, cover)
            })
            .collect(),
    })
}
