//! What this machine can enforce, found by asking the kernel (once per process): the Landlock
//! ABI and which of its parts work, whether a seccomp filter can be installed, whether a run can
//! have mount and PID namespaces of its own (tried in a throwaway child, with the very steps a
//! run takes), whether a pids and a memory cgroup can be made for a run, and whether Reasonix
//! may empty a child's capability bounding set.
//!
//! A process that says where (the CLI: the user's state folder) takes the answer an earlier
//! process kept for the same machine instead of trying each part again, and keeps what it
//! tries for the next ([`kept`], issue 30).
//!
//! [`capabilities`] is the probed value, once per process; a [`Capabilities`] is a plain value
//! too, so a plan can be computed for capabilities this machine lacks
//! ([`super::JailPlan::with_capabilities`]): that is how the refusals of `enforce` are tested on a
//! machine that has everything.
//!
//! A plan tries only what it can use ([`for_plan`], issue 12): the network namespace only for a
//! plan with `network` rules (a plan without them runs in the host's network namespace, and
//! making one and dropping it is the dearest trial), and nothing at all for a plan that is off.
//! What was not tried is `false` (or `None`) in that plan's capabilities, so its words cannot
//! claim it; [`capabilities`], which `sandbox probe` and `--version` show, tries everything.
//!
//! [`expected_capabilities`] is what the machine says it offers, read without trying anything:
//! the plan a dry run shows (`reasonix check`, [`super::JailPlan::dry`]) is computed from it, so that
//! a dry run never touches the kernel's sandbox or makes a folder (issue 12). Where the two
//! differ — settings that allow what a confinement around Reasonix then refuses — a run's plan,
//! probed, is the true one: it refuses under `enforce`, or lists the part as not enforced.
//! `the_expected_capabilities_are_the_probed_ones_here` holds them to each other on the machine
//! the tests run on. A process already under a seccomp filter cannot read what the filter
//! refuses: there the dry run's plan is the probed one.

use std::path::PathBuf;
use std::sync::OnceLock;

pub(in crate::sandbox::jail) mod kept;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
};
use serde::{Deserialize, Serialize};

/// What the kernel offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// The kernel release.
    pub kernel: String,
    /// Landlock: the highest ABI this build and the kernel share (`null`: none).
    pub landlock_abi: Option<u8>,
    /// Landlock filesystem rules (ABI 1).
    pub landlock_fs: bool,
    /// Landlock TCP bind/connect rules by port (ABI 4).
    pub landlock_net: bool,
    /// Landlock scoping of signals and abstract UNIX sockets (ABI 6).
    pub landlock_scope: bool,
    /// A seccomp filter can be installed (checked in a throwaway thread).
    pub seccomp: bool,
    /// A run can have a private mount namespace and a PID namespace of its own (tried: the
    /// filesystem made read-only, folders bound over themselves, `/proc` mounted fresh).
    pub namespaces: bool,
    /// Those namespaces are made inside a new user namespace, which maps only Reasonix's own user
    /// and group: Reasonix lacks `CAP_SYS_ADMIN` (any user but root, usually), and this kernel
    /// lets an unprivileged user make user namespaces.
    pub user_namespace: bool,
    /// A run's write roots can be overlays in its mount namespace (tried with the namespaces:
    /// an overlay made, a pass-through folder bound inside it): a writer's changes are then
    /// kept apart and judged before they land (issue 25). Never without `namespaces`.
    pub overlay: bool,
    /// A run can have a network namespace of its own, made by Reasonix before the fork with the
    /// egress proxy listening in it (tried: needs `CAP_SYS_ADMIN`, so root; see `netns`). In the
    /// capabilities of a plan without `network` rules, `false`: such a plan has no use for one,
    /// so it is not tried for it ([`super::JailPlan::capabilities`]).
    pub net_namespace: bool,
    /// Where a pids cgroup can be made for a run, if anywhere.
    pub cgroup_pids: Option<PathBuf>,
    /// Where a memory cgroup can be made for a run, if anywhere.
    pub cgroup_memory: Option<PathBuf>,
    /// The user id Reasonix runs as (`RLIMIT_NPROC` does not bind root).
    pub uid: u32,
    /// Reasonix holds `CAP_SETPCAP` (in its effective set): it can empty a child's capability
    /// bounding set and lock `SECBIT_NOROOT`. Without it, the child's capability sets are still
    /// emptied, and `no_new_privs` keeps exec from granting any back.
    pub cap_setpcap: bool,
}

/// The capabilities of this machine, probed once (every part, the network namespace included).
pub fn capabilities() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(|| probed(true, false))
}

/// What a plan of `mode` with `network` rules (or none) is computed for: nothing tried for a plan
/// that is off, and the network namespace tried only where there are network rules (else
/// `net_namespace: false`: the plan neither uses nor claims one). Each part is tried once per
/// process, whichever plan asks first; the cgroups made to try their parents are kept for the
/// plan that asked, which takes them at once (`cgroup::take_tried`).
pub(super) fn for_plan(mode: super::Enforcement, network: bool) -> Capabilities {
    if mode == super::Enforcement::Off {
        return untried();
    }
    probed(network, true)
}

/// The parts but the network namespace, tried once per process.
static BASE: OnceLock<Capabilities> = OnceLock::new();
/// Whether a network namespace can be made, tried once per process.
static NET: OnceLock<bool> = OnceLock::new();

/// The probed capabilities, with the network namespace tried (`net`) or left out as `false`;
/// the trial cgroups kept for the caller (`keep`) if this call probes. The answer an earlier
/// process kept for this machine is taken instead of trying, and what this process tries is
/// kept for the next ([`kept`]).
fn probed(net: bool, keep: bool) -> Capabilities {
    let mut tried = false;
    let base = BASE.get_or_init(|| {
        let status = own_status();
        // Under a seccomp filter the machine's word is the probe's own (see
        // `expected_capabilities`): nothing is kept or taken there.
        let machine = (!under_seccomp(status))
            .then(|| kept::machine(status))
            .flatten();
        if let Some((base, net)) = machine.as_ref().and_then(kept::load) {
            if let Some(net) = net {
                let _ = NET.set(net);
            }
            for parent in [&base.cgroup_pids, &base.cgroup_memory]
                .into_iter()
                .flatten()
            {
                // What the probe's trial would have done first (issue 28, item 9).
                super::cgroup::reclaim(parent);
            }
            let _ = MACHINE.set(machine);
            tracing::debug!("jail probe: the answer kept for this machine is taken");
            return base;
        }
        tracing::debug!("jail probe: each part is tried");
        tried = true;
        let _ = MACHINE.set(machine);
        probe(net, keep)
    });
    let caps = with_net_namespace(base, net, || {
        *NET.get_or_init(|| {
            tried = true;
            !base.user_namespace && super::netns::works()
        })
    });
    if tried && let Some(Some(machine)) = MACHINE.get() {
        kept::store(machine, base, NET.get().copied());
    }
    caps
}

/// What this process is, for the kept answer (`None`: none may be taken or kept here).
static MACHINE: OnceLock<Option<kept::Machine>> = OnceLock::new();

/// `base` with `net_namespace` from `tried` — called only when `net`; else `false`, untried.
fn with_net_namespace(
    base: &Capabilities,
    net: bool,
    tried: impl FnOnce() -> bool,
) -> Capabilities {
    Capabilities {
        net_namespace: net && tried(),
        ..base.clone()
    }
}

/// What a plan that confines nothing is computed for: no part tried, so none present; the kernel
/// release and the user only.
fn untried() -> Capabilities {
    Capabilities {
        kernel: kernel_release(),
        landlock_abi: None,
        landlock_fs: false,
        landlock_net: false,
        landlock_scope: false,
        seccomp: false,
        namespaces: false,
        user_namespace: false,
        overlay: false,
        net_namespace: false,
        cgroup_pids: None,
        cgroup_memory: None,
        uid: nix::unistd::getuid().as_raw(),
        cap_setpcap: false,
    }
}

fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Tries every part but the network namespace (`net_namespace: false` here), and that too when
/// `net` (its answer goes to [`NET`]); keeps the cgroups it makes for the caller when `keep`.
fn probe(net: bool, keep: bool) -> Capabilities {
    let abi = [
        ABI::V7,
        ABI::V6,
        ABI::V5,
        ABI::V4,
        ABI::V3,
        ABI::V2,
        ABI::V1,
    ]
    .into_iter()
    .find(|abi| supports_fs(*abi));
    let effective = effective_set(own_status()).unwrap_or(0);
    // Without CAP_SYS_ADMIN, the namespaces can only be had inside a user namespace.
    let user_namespace = effective & (1 << CAP_SYS_ADMIN) == 0;
    // The slow probes (a child process, a network namespace made and dropped, cgroups made and
    // removed, a filter loaded on a thread) run side by side: a `check` or `sandbox exec` pays
    // for the slowest, not for their sum.
    let (seccomp, (namespaces, overlay), net_namespace, (cgroup_pids, cgroup_memory)) =
        std::thread::scope(|s| {
            // One trial with an overlay in it; only where that fails, a second without.
            let namespaces = s.spawn(|| {
                if super::run::overlays_work(user_namespace) {
                    (true, true)
                } else {
                    (super::run::namespaces_work(user_namespace), false)
                }
            });
            let net_namespace = net.then(|| s.spawn(|| !user_namespace && super::netns::works()));
            let cgroups = s.spawn(|| {
                (
                    super::cgroup::available(keep),
                    super::cgroup::available_memory(keep),
                )
            });
            let seccomp = super::seccomp::works();
            (
                seccomp,
                namespaces.join().unwrap_or((false, false)),
                net_namespace.map(|t| t.join().unwrap_or(false)),
                cgroups.join().unwrap_or((None, None)),
            )
        });
    if let Some(tried) = net_namespace {
        let _ = NET.set(tried);
    }
    Capabilities {
        kernel: kernel_release(),
        landlock_abi: abi.map(|a| a as u8),
        landlock_fs: abi.is_some(),
        landlock_net: supports_net(),
        landlock_scope: supports_scope(),
        seccomp,
        namespaces,
        user_namespace,
        overlay,
        net_namespace: false,
        cgroup_pids,
        cgroup_memory,
        uid: nix::unistd::getuid().as_raw(),
        cap_setpcap: effective & (1 << CAP_SETPCAP) != 0,
    }
}

/// What this machine says it offers, read once per process without trying any part: the
/// Landlock ABI the kernel reports (asked for its version; no ruleset is made), seccomp filters
/// from the process's status (`Seccomp_filters:`, or `Seccomp:` on kernels before 5.9), the
/// namespaces from the kernel's limits on them (and, for a user namespace, whether unprivileged
/// users may make one), the cgroups from the folders' permissions and controllers (none is
/// made), the user and its capabilities from `/proc`.
///
/// A process that runs under a seccomp filter already (in a container, or in Reasonix's own
/// jail) cannot read what that filter refuses: there this is [`capabilities`], probed by trying,
/// as a run's plan is.
pub fn expected_capabilities() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(|| {
        let status = own_status();
        if under_seccomp(status) {
            capabilities().clone()
        } else {
            expect(status)
        }
    })
}

/// This process's `/proc/thread-self/status`, read once: the probe, the machine's word and the
/// kept answer's key all read its capability sets and seccomp state, which Reasonix's threads
/// share (only the seccomp trial's throwaway thread loads a filter, and it reads nothing here).
fn own_status() -> &'static str {
    static STATUS: OnceLock<String> = OnceLock::new();
    STATUS.get_or_init(|| std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default())
}

/// `Seccomp: 2` (a filter) in a `/proc/<pid>/status`.
fn under_seccomp(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .is_some_and(|mode| mode.trim() == "2")
}

fn expect(status: &str) -> Capabilities {
    let effective = effective_set(status).unwrap_or(0);
    let user_namespace = effective & (1 << CAP_SYS_ADMIN) == 0;
    // The highest ABI both this build and the kernel know, as the probe finds it.
    let abi = super::landlock_raw::landlock_abi_reported().map(|v| v.min(ABI::V7 as i32));
    let namespaces = namespaces_allowed(user_namespace, &|name| std::fs::read_to_string(name).ok());
    Capabilities {
        kernel: kernel_release(),
        landlock_abi: abi.and_then(|a| u8::try_from(a).ok()),
        landlock_fs: abi.is_some(),
        landlock_net: abi.is_some_and(|a| a >= ABI::V4 as i32),
        landlock_scope: abi.is_some_and(|a| a >= ABI::V6 as i32),
        seccomp: status
            .lines()
            .any(|l| l.starts_with("Seccomp_filters:") || l.starts_with("Seccomp:")),
        namespaces,
        user_namespace,
        overlay: namespaces && overlay_expected(),
        net_namespace: !user_namespace && std::path::Path::new("/proc/self/ns/net").exists(),
        cgroup_pids: super::cgroup::expected(),
        cgroup_memory: super::cgroup::expected_memory(),
        uid: nix::unistd::getuid().as_raw(),
        cap_setpcap: effective & (1 << CAP_SETPCAP) != 0,
    }
}

/// Whether this kernel has overlayfs: registered (`/proc/filesystems`), or as a module it loads
/// on the first mount.
fn overlay_expected() -> bool {
    let listed = std::fs::read_to_string("/proc/filesystems").is_ok_and(|f| {
        f.lines()
            .any(|l| l.split_whitespace().last() == Some("overlay"))
    });
    listed
        || std::path::Path::new(&format!(
            "/lib/modules/{}/kernel/fs/overlayfs",
            kernel_release()
        ))
        .exists()
}

/// Whether the kernel's settings let a run have mount and PID namespaces (inside a user
/// namespace when `user`), given a reader of `/proc/sys` files.
fn namespaces_allowed(user: bool, read: &dyn Fn(&str) -> Option<String>) -> bool {
    let number = |name: &str| read(name).and_then(|v| v.trim().parse::<i64>().ok());
    let above_zero = |name: &str| number(name).is_none_or(|n| n > 0);
    let namespaces = above_zero("/proc/sys/user/max_mnt_namespaces")
        && above_zero("/proc/sys/user/max_pid_namespaces");
    if !user {
        return namespaces;
    }
    namespaces
        && above_zero("/proc/sys/user/max_user_namespaces")
        // Debian's switch for unprivileged user namespaces, and Ubuntu's AppArmor restriction.
        && number("/proc/sys/kernel/unprivileged_userns_clone").is_none_or(|n| n == 1)
        && number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").is_none_or(|n| n == 0)
}

const CAP_SETPCAP: u32 = 8;
const CAP_SYS_ADMIN: u32 = 21;

/// The `CapEff:` line of a `/proc/<pid>/status`, as a bit set.
fn effective_set(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

fn supports_fs(abi: ABI) -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.create())
        .is_ok()
}

fn supports_net() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessNet::from_all(ABI::V4))
        .and_then(|r| r.create())
        .is_ok()
}

fn supports_scope() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::from_all(ABI::V6))
        .and_then(|r| r.create())
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 12: a dry run plans with what the machine says it offers; here, that is what the
    /// probe finds by trying.
    #[test]
    fn the_expected_capabilities_are_the_probed_ones_here() {
        // Tried here and now, not taken from a kept answer (which agrees with the machine's
        // word by construction: `kept_probe`).
        let tried = with_net_namespace(&probe(true, false), true, || {
            *NET.get()
                .expect("probe(true, ..) tries the network namespace")
        });
        assert_eq!(expected_capabilities(), &tried);
        assert_eq!(expected_capabilities(), capabilities());
    }

    /// Issue 12: the dearest trial, made only for a plan that can use it.
    #[test]
    fn the_network_namespace_is_tried_only_for_a_plan_with_network_rules() {
        let base = Capabilities {
            net_namespace: false,
            ..capabilities().clone()
        };
        let mut tried = 0;
        let caps = with_net_namespace(&base, false, || {
            tried += 1;
            true
        });
        assert_eq!((caps.net_namespace, tried), (false, 0));
        let caps = with_net_namespace(&base, true, || {
            tried += 1;
            true
        });
        assert_eq!((caps.net_namespace, tried), (true, 1));
        assert_eq!(
            caps,
            Capabilities {
                net_namespace: true,
                ..base
            }
        );
        // What the machine has, a plan with network rules gets.
        let net = for_plan(super::super::Enforcement::Enforce, true);
        assert_eq!(&net, capabilities());
        let none = for_plan(super::super::Enforcement::BestEffort, false);
        assert_eq!(
            none,
            Capabilities {
                net_namespace: false,
                ..capabilities().clone()
            }
        );
    }

    /// Issue 12: a plan that is off confines nothing, so it tries nothing and claims nothing.
    #[test]
    fn a_plan_that_is_off_tries_and_claims_nothing() {
        let caps = for_plan(super::super::Enforcement::Off, true);
        assert_eq!(caps.landlock_abi, None);
        assert!(
            !(caps.landlock_fs
                || caps.landlock_net
                || caps.landlock_scope
                || caps.seccomp
                || caps.namespaces
                || caps.user_namespace
                || caps.net_namespace
                || caps.cap_setpcap)
        );
        assert_eq!((caps.cgroup_pids, caps.cgroup_memory), (None, None));
        assert_eq!(caps.uid, nix::unistd::getuid().as_raw());
    }

    #[test]
    fn a_seccomp_filter_is_read_from_the_status_line() {
        assert!(under_seccomp(
            "Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t1\n"
        ));
        assert!(!under_seccomp("Seccomp:\t0\nSeccomp_filters:\t0\n"));
        assert!(!under_seccomp("Name:\tx\n"));
    }

    #[test]
    fn namespaces_are_expected_where_the_kernel_allows_them() {
        let sysctl = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| name.ends_with(n))
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert!(namespaces_allowed(false, &sysctl(&[])));
        assert!(!namespaces_allowed(
            false,
            &sysctl(&[("max_mnt_namespaces", "0\n")])
        ));
        assert!(namespaces_allowed(
            true,
            &sysctl(&[("max_user_namespaces", "63\n")])
        ));
        assert!(!namespaces_allowed(
            true,
            &sysctl(&[("max_user_namespaces", "0")])
        ));
        assert!(!namespaces_allowed(
            true,
            &sysctl(&[("unprivileged_userns_clone", "0")])
        ));
        assert!(!namespaces_allowed(
            true,
            &sysctl(&[("apparmor_restrict_unprivileged_userns", "1")])
        ));
        // Root with CAP_SYS_ADMIN needs no user namespace.
        assert!(namespaces_allowed(
            false,
            &sysctl(&[("unprivileged_userns_clone", "0")])
        ));
    }

    #[test]
    fn the_effective_set_is_read_from_its_status_line() {
        let status = "Name:\tx\nCapPrm:\t0000000000000100\nCapEff:\t0000000000000100\n";
        assert_eq!(effective_set(status), Some(1 << 8));
        assert_eq!(effective_set("CapEff:\t0000000000000000\n"), Some(0));
        assert_eq!(effective_set("Name:\tx\n"), None);
    }
}
