//! What this machine can enforce, found by asking the kernel (once per process): the Landlock
//! ABI and which of its parts work, whether a seccomp filter can be installed, and whether a
//! pids cgroup can be made for a run.

use std::path::PathBuf;
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
};
use serde::Serialize;

/// What the kernel offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
    /// Where a pids cgroup can be made for a run, if anywhere.
    pub cgroup_pids: Option<PathBuf>,
    /// The user id Reasonix runs as (`RLIMIT_NPROC` does not bind root).
    pub uid: u32,
}

/// The capabilities of this machine, probed once.
pub fn capabilities() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(probe)
}

fn probe() -> Capabilities {
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
    Capabilities {
        kernel: nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default(),
        landlock_abi: abi.map(|a| a as u8),
        landlock_fs: abi.is_some(),
        landlock_net: supports_net(),
        landlock_scope: supports_scope(),
        seccomp: super::seccomp::works(),
        cgroup_pids: super::cgroup::available(),
        uid: nix::unistd::getuid().as_raw(),
    }
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
