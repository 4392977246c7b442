//! The probe's answer, kept across processes (issue 30): a `sandbox exec`, a `hook claude
//! --jail` or an MCP server's start takes the answer an earlier process on this machine found,
//! instead of trying each part again in a throwaway child (about 0.8 ms of every such process).
//!
//! An answer is kept only where it can be trusted to hold:
//!
//! - **For the same machine, as this process sees it.** It is kept with what it was found for
//!   ([`Machine`]): the boot, the kernel, this very executable (a rebuilt Reasonix tries again),
//!   the user, the process's capabilities, seccomp state and namespaces, its cgroup, and what
//!   the machine says it offers when asked without trying ([`super::expected_capabilities`]:
//!   the kernel's limits on namespaces, the cgroups' permissions and controllers, Landlock's
//!   ABI). A process for which any of it differs tries every part, as before. A process under a
//!   seccomp filter, which cannot read what the filter refuses, neither takes nor keeps one.
//! - **Only where trying agreed with the machine's word.** An answer is stored only when every
//!   part it tried came out as the machine said it would. A part that failed where the machine
//!   says it is offered (a transient failure, or something around Reasonix refusing it) is tried
//!   again by the next process rather than kept missing for the rest of the boot.
//! - **As a claim a run checks.** Each part a run applies fails its start when the kernel
//!   refuses it (Landlock, seccomp, the namespaces, the overlay), and a cgroup that cannot be
//!   made refuses the run under `enforce` or is listed as not enforced: a kept answer that is
//!   wrong costs a run that does not start, never a part claimed and not applied. A jailed run
//!   that fails to start forgets the answer ([`forget`]), so the next process tries again.
//! - **In the user's state folder, beside the trust store** (where the CLI says: a library user
//!   that does not call [`keep_answers_in`] keeps nothing), or, where that folder cannot be
//!   written (a service account's HOME often cannot), in the user's own folder in the temporary
//!   folder, where plans' folders are made (`reasonix-<uid>`, taken only when this user owns it
//!   and no one else may enter it): written whole (a temporary file renamed), readable by its
//!   owner only, and ignored unless this user owns it and no one else may write it. What is
//!   read is held to the same rule as what is written: an answer that differs from the
//!   machine's word in any part is not taken (so a forged one cannot, say, name a plain folder
//!   as the cgroups' parent, where a run's "cgroup" would limit nothing).
//!
//! `reasonix sandbox probe` always tries every part (and keeps what it finds); so does any
//! process with `REASONIX_PROBE=fresh` in its environment.

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use super::Capabilities;
use crate::sandbox::jail::plan_folder::own_folder;

/// The file's name in the state folder.
const FILE: &str = "probe.json";
/// The format of the file; another is ignored.
const VERSION: u32 = 2;
/// A kept file is a few KB; a larger file is not one.
const MAX_BYTES: u64 = 64 << 10;

/// Whether this process tries every part whatever is kept (`sandbox probe`,
/// `REASONIX_PROBE=fresh`).
static AFRESH: AtomicBool = AtomicBool::new(false);

/// Makes this process try every part, whatever answer is kept (it still keeps what it finds).
pub fn try_afresh() {
    AFRESH.store(true, Ordering::Relaxed);
}

fn afresh() -> bool {
    AFRESH.load(Ordering::Relaxed)
        || std::env::var_os("REASONIX_PROBE").is_some_and(|v| v == "fresh")
}

/// What an answer was found for: the same [`Machine`] gets the same answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Machine {
    /// `/proc/sys/kernel/random/boot_id`: a reboot (a new kernel, a module loaded at boot, a
    /// sysctl set at boot) tries again.
    boot_id: String,
    /// This executable's device, inode, size and change time: another build tries again.
    exe: [i64; 5],
    /// The user Reasonix runs as.
    uid: u32,
    /// The capability sets, seccomp state and `no_new_privs` of this process (its
    /// `/proc/thread-self/status` lines).
    status: Vec<String>,
    /// The namespaces this process is in (user, mount, PID, network, cgroup): a process in a
    /// container, or in another jail, tries again.
    namespaces: Vec<String>,
    /// `/proc/self/cgroup`: where the cgroups would be sought.
    cgroup: String,
    /// What the machine says it offers, read without trying anything.
    expected: Capabilities,
}

/// The kept file: the answers of the last [`KEPT`] machines, the latest first (two Reasonix
/// builds used in turns, or a container and its host, do not push each other's out).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptFile {
    version: u32,
    answers: Vec<Kept>,
}

/// How many machines' answers are kept.
const KEPT: usize = 4;

/// One answer.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    machine: Machine,
    /// Every part but the network namespace.
    base: Capabilities,
    /// Whether a network namespace can be made, if a process tried.
    net: Option<bool>,
}

/// What this process is, for a kept answer; `None` where it keeps none ([`keep_answers_in`]) or
/// a part of it cannot be read. (A process under a seccomp filter, whose `expected` is not the
/// machine's word, does not ask.)
pub(super) fn machine(status: &str) -> Option<Machine> {
    FOLDER.get()?;
    read_machine(status, super::expected_capabilities())
}

fn read_machine(status: &str, expected: &Capabilities) -> Option<Machine> {
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let exe = std::fs::metadata("/proc/self/exe").ok()?;
    let namespaces = ["user", "mnt", "pid", "net", "cgroup"]
        .iter()
        .map(|ns| {
            std::fs::read_link(format!("/proc/thread-self/ns/{ns}"))
                .map(|l| l.to_string_lossy().into_owned())
        })
        .collect::<std::io::Result<Vec<_>>>()
        .ok()?;
    Some(Machine {
        boot_id: boot_id.trim().to_owned(),
        exe: [
            exe.dev() as i64,
            exe.ino() as i64,
            exe.size() as i64,
            exe.ctime(),
            exe.ctime_nsec(),
        ],
        uid: nix::unistd::getuid().as_raw(),
        status: status
            .lines()
            .filter(|l| {
                ["Cap", "Seccomp", "NoNewPrivs"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(str::to_owned)
            .collect(),
        namespaces,
        // Empty only where it could not be read: no key, as for the other parts.
        cgroup: Some(crate::sandbox::jail::cgroup::own())
            .filter(|c| !c.is_empty())?
            .to_owned(),
        expected: expected.clone(),
    })
}

/// The folder answers are kept in, if this process keeps them ([`keep_answers_in`]).
static FOLDER: OnceLock<PathBuf> = OnceLock::new();

/// Keeps the probe's answers in `folder` (the CLI gives the user's state folder, beside the
/// trust store): a process that does not say where tries each part, as before. The first
/// folder given stands.
pub fn keep_answers_in(folder: PathBuf) {
    let _ = FOLDER.set(folder);
}

/// Where the answer is kept.
fn path() -> Option<PathBuf> {
    FOLDER.get().map(|dir| dir.join(FILE))
}

/// Where the answer is kept when [`path`] cannot be written: the user's own folder in the
/// temporary folder (`reasonix-<uid>`, this user's alone), for a process that keeps answers.
/// Without it, a user whose HOME cannot be written tried every part in every process (about
/// 0.7 ms of each `sandbox exec`: `docs/speed.md`).
fn fallback() -> Option<PathBuf> {
    FOLDER.get()?;
    own_folder(&std::env::temp_dir()).map(|dir| dir.join(FILE))
}

/// The answer kept for `machine` (every part but the network namespace, and that one if a
/// process tried it), if there is one that may be taken.
pub(super) fn load(machine: &Machine) -> Option<(Capabilities, Option<bool>)> {
    if afresh() {
        return None;
    }
    load_either(&path()?, fallback, machine)
}

/// The answer kept at `path`, else at `fallback`'s.
fn load_either(
    path: &Path,
    fallback: impl FnOnce() -> Option<PathBuf>,
    machine: &Machine,
) -> Option<(Capabilities, Option<bool>)> {
    load_from(path, machine).or_else(|| load_from(&fallback()?, machine))
}

fn load_from(path: &Path, machine: &Machine) -> Option<(Capabilities, Option<bool>)> {
    let kept = read(path)?
        .answers
        .into_iter()
        .find(|k| &k.machine == machine)?;
    agrees(&machine.expected, &kept.base, kept.net).then_some((kept.base, kept.net))
}

/// The kept file at `path`, if this user owns it, no one else may write it, and it is one.
fn read(path: &Path) -> Option<KeptFile> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    let own = meta.uid() == nix::unistd::getuid().as_raw() && meta.mode() & 0o022 == 0;
    if !own || !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    let kept: KeptFile = serde_json::from_str(&text).ok()?;
    (kept.version == VERSION).then_some(kept)
}

/// Keeps this answer for `machine`, if every part it tried came out as the machine said it
/// would ([`agrees`]); a failure to write it only means the next process tries again.
pub(super) fn store(machine: &Machine, base: &Capabilities, net: Option<bool>) {
    if let Some(path) = path() {
        store_either(&path, fallback, machine, base, net);
    }
}

/// Keeps the answer at `path`, or at `fallback`'s where `path` cannot be written; whether it was
/// kept at all.
fn store_either(
    path: &Path,
    fallback: impl FnOnce() -> Option<PathBuf>,
    machine: &Machine,
    base: &Capabilities,
    net: Option<bool>,
) -> bool {
    if !agrees(&machine.expected, base, net) {
        return false;
    }
    matches!(store_at(path, machine, base, net), Ok(true))
        || fallback().is_some_and(|other| matches!(store_at(&other, machine, base, net), Ok(true)))
}

fn store_at(
    path: &Path,
    machine: &Machine,
    base: &Capabilities,
    net: Option<bool>,
) -> std::io::Result<bool> {
    if !agrees(&machine.expected, base, net) {
        return Ok(false);
    }
    let mut answers = vec![Kept {
        machine: machine.clone(),
        base: base.clone(),
        net,
    }];
    let others = read(path).map(|f| f.answers).unwrap_or_default();
    answers.extend(others.into_iter().filter(|k| &k.machine != machine));
    answers.truncate(KEPT);
    let kept = KeptFile {
        version: VERSION,
        answers,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.is_dir() {
        // Made only below a folder of this user's: a Reasonix run as root with another user's
        // HOME (`sudo -E`) must not leave that user a state folder they cannot write.
        let owner = dir
            .ancestors()
            .find_map(|a| std::fs::metadata(a).ok())
            .map(|m| m.uid());
        if owner != Some(nix::unistd::getuid().as_raw()) {
            return Ok(false);
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    // NamedTempFile is made 0600.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut tmp, &kept)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(true)
}

/// Whether what was tried (`base`; the network namespace, if `net`) came out as the machine said
/// it would: the only answers kept, and taken.
fn agrees(expected: &Capabilities, base: &Capabilities, net: Option<bool>) -> bool {
    let untried_net = |c: &Capabilities| Capabilities {
        net_namespace: false,
        ..c.clone()
    };
    untried_net(expected) == untried_net(base) && net.is_none_or(|n| n == expected.net_namespace)
}

/// Forgets the kept answers: a jailed run failed to start, so the next process tries each part.
pub(in crate::sandbox::jail) fn forget() {
    for path in [path(), fallback()].into_iter().flatten() {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::jail::{capabilities, expected_capabilities};

    fn here() -> Machine {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        read_machine(&status, expected_capabilities()).expect("this test process reads its machine")
    }

    fn base() -> Capabilities {
        Capabilities {
            net_namespace: false,
            ..capabilities().clone()
        }
    }

    /// The answer comes back for the machine it was found for, and for no other.
    #[test]
    fn a_kept_answer_is_taken_only_by_the_same_machine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/probe.json");
        let m = here();
        assert!(store_at(&path, &m, &base(), Some(capabilities().net_namespace)).unwrap());
        assert_eq!(
            load_from(&path, &m),
            Some((base(), Some(capabilities().net_namespace)))
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().mode() & 0o777,
            0o600,
            "readable by its owner only"
        );
        type Change = fn(&mut Machine);
        let changes: [(&str, Change); 7] = [
            ("another boot", |m| m.boot_id.push('x')),
            ("another build", |m| m.exe[3] += 1),
            ("another user", |m| m.uid += 1),
            ("other capabilities", |m| m.status.push("CapEff:\t0".into())),
            ("another namespace", |m| m.namespaces[1].push('x')),
            ("another cgroup", |m| m.cgroup.push('x')),
            ("the machine says otherwise", |m| {
                m.expected.seccomp = !m.expected.seccomp
            }),
        ];
        for (what, change) in changes {
            let mut other = m.clone();
            change(&mut other);
            assert_eq!(load_from(&path, &other), None, "{what}");
        }
    }

    /// The state folder is made only below a folder of this user's: root, given another user's
    /// HOME, leaves that user no folder they cannot write.
    #[test]
    fn the_state_folder_is_made_only_below_a_folder_of_this_users() {
        let dir = tempfile::tempdir().unwrap();
        let m = here();
        let path = dir.path().join("a/b/probe.json");
        assert!(store_at(&path, &m, &base(), None).unwrap());
        assert!(load_from(&path, &m).is_some());
        if !nix::unistd::getuid().is_root() {
            return;
        }
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let path = theirs.join(".local/state/reasonix/probe.json");
        assert!(!store_at(&path, &m, &base(), None).unwrap());
        assert!(!theirs.join(".local").exists());
    }

    /// Where the state folder cannot be written (here its place is a file; as root, also a
    /// folder of another user's), the answer is kept in the user's own folder in the temporary
    /// folder, and taken from there; a folder there that is not this user's alone is not used.
    #[test]
    fn an_answer_the_state_folder_cannot_take_is_kept_in_the_users_own_temporary_folder() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let own = || own_folder(&tmp).map(|d| d.join(FILE));
        let m = here();
        let blocked = dir.path().join("not-a-folder");
        std::fs::write(&blocked, "").unwrap();
        let mut unwritable = vec![blocked.join("reasonix/probe.json")];
        if nix::unistd::getuid().is_root() {
            let theirs = dir.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            unwritable.push(theirs.join(".local/state/reasonix/probe.json"));
        }
        for state in &unwritable {
            let kept = own().unwrap();
            let _ = std::fs::remove_file(&kept);
            assert!(
                store_either(state, own, &m, &base(), None),
                "{}",
                state.display()
            );
            assert!(!state.exists());
            assert_eq!(
                std::fs::metadata(&kept).unwrap().mode() & 0o777,
                0o600,
                "readable by its owner only"
            );
            assert_eq!(load_either(state, own, &m), Some((base(), None)));
        }
        // A state folder that can be written takes it, and is read first.
        let state = dir.path().join("state/probe.json");
        assert!(store_either(&state, own, &m, &base(), Some(true)));
        assert_eq!(load_either(&state, own, &m), Some((base(), Some(true))));
        // An answer that disagrees with the machine's word is kept in neither.
        let failed = Capabilities {
            namespaces: false,
            ..base()
        };
        std::fs::remove_file(own().unwrap()).unwrap();
        assert!(!store_either(&unwritable[0], own, &m, &failed, None));
        assert!(!own().unwrap().exists());
        // A folder in the temporary folder that others may enter is not the user's own.
        use std::os::unix::fs::PermissionsExt;
        let shared = own().unwrap().parent().unwrap().to_path_buf();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!store_either(&unwritable[0], own, &m, &base(), None));
        assert!(!shared.join(FILE).exists());
    }

    /// Two builds (or a container and its host) used in turns keep an answer each; the fifth
    /// machine pushes out the one kept longest ago.
    #[test]
    fn the_answers_of_the_last_four_machines_are_kept_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.json");
        let builds: Vec<Machine> = (0..5)
            .map(|n| {
                let mut m = here();
                m.exe[1] += n;
                m
            })
            .collect();
        for m in &builds[..2] {
            assert!(store_at(&path, m, &base(), None).unwrap());
        }
        assert!(load_from(&path, &builds[0]).is_some());
        assert!(load_from(&path, &builds[1]).is_some());
        // Stored again, an answer moves to the front and is not kept twice.
        assert!(store_at(&path, &builds[0], &base(), Some(true)).unwrap());
        assert_eq!(read(&path).unwrap().answers.len(), 2);
        assert_eq!(load_from(&path, &builds[0]), Some((base(), Some(true))));
        for m in &builds[2..] {
            assert!(store_at(&path, m, &base(), None).unwrap());
        }
        let kept = read(&path).unwrap().answers;
        assert_eq!(kept.len(), KEPT);
        assert_eq!(load_from(&path, &builds[1]), None, "the oldest, pushed out");
        for m in [&builds[0], &builds[2], &builds[3], &builds[4]] {
            assert!(load_from(&path, m).is_some());
        }
    }

    /// A part that failed where the machine says it is offered is not kept missing: the next
    /// process tries it again. A part the machine itself does not offer agrees, and is kept.
    #[test]
    fn an_answer_that_disagrees_with_the_machines_word_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.json");
        let m = here();
        let failed = Capabilities {
            namespaces: false,
            overlay: false,
            ..base()
        };
        assert!(m.expected.namespaces, "this machine offers namespaces");
        assert!(!store_at(&path, &m, &failed, None).unwrap());
        assert!(!path.exists());
        let net_failed = Some(!m.expected.net_namespace);
        assert!(!store_at(&path, &m, &base(), net_failed).unwrap());
        // The machine says it has no seccomp, and trying agrees: kept.
        let mut without = m.clone();
        without.expected.seccomp = false;
        let agreed = Capabilities {
            seccomp: false,
            ..base()
        };
        assert!(store_at(&path, &without, &agreed, None).unwrap());
        assert_eq!(load_from(&path, &without), Some((agreed, None)));
    }

    /// A kept file anyone else could have written, or one that differs from the machine's word
    /// (here: a plain folder as the pids cgroups' parent, where a run's "cgroup" would limit
    /// nothing), is not taken.
    #[test]
    fn a_kept_answer_others_could_write_or_that_names_no_cgroup_is_ignored() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.json");
        let m = here();
        assert!(store_at(&path, &m, &base(), None).unwrap());
        assert!(load_from(&path, &m).is_some());
        for mode in [0o620, 0o602] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(load_from(&path, &m), None, "mode {mode:o}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        if nix::unistd::getuid().is_root() {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            assert_eq!(load_from(&path, &m), None, "owned by nobody");
            std::os::unix::fs::chown(&path, Some(0), None).unwrap();
        }
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(load_from(&link, &m), None, "a symlink is not followed");
        // Forged: the pids cgroup's parent is a plain folder.
        let text = std::fs::read_to_string(&path).unwrap();
        let mut kept: serde_json::Value = serde_json::from_str(&text).unwrap();
        kept["answers"][0]["base"]["cgroup_pids"] = serde_json::json!(dir.path());
        std::fs::write(&path, kept.to_string()).unwrap();
        assert_eq!(load_from(&path, &m), None);
        // And a file that is not one.
        for junk in [
            "",
            "{",
            "[]",
            "{\"version\":2}",
            "{\"version\":1,\"answers\":[]}",
        ] {
            std::fs::write(&path, junk).unwrap();
            assert_eq!(load_from(&path, &m), None, "{junk:?}");
        }
    }
}
