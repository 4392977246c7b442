//! The Landlock rules of a plan: opened once (as `O_PATH` descriptors), turned into a ruleset for
//! each run.
//!
//! A read root holding a secret ([`super::SYSTEM_SECRETS`]) is granted entry by entry around it:
//! Landlock can only allow, so leaving a file out means allowing its siblings one by one.
//!
//! # One ruleset per run, built ahead
//!
//! Each run restricts itself with a ruleset of its own: the plan's rules, its own TMPDIR (and no
//! other run's), and — in a run with a PID namespace — the `/proc` mounted fresh for it, whose
//! root is a new inode no ruleset built beforehand can name (Landlock skips the folder a mount
//! covers, so the rule on the old `/proc` does not reach the new one). The child adds that last
//! rule itself, so the ruleset cannot be shared between runs.
//!
//! Building one takes about 0.5 ms of kernel time here (150 rules, `/etc` entry by entry), too
//! much for the spawn path; so a plan keeps one built ahead ([`Rulesets`]): a run takes it, adds
//! its TMPDIR, and — from the second run on, so that a plan run once builds one ruleset only —
//! asks a builder thread of the plan's for the next one, which is built while the command runs.
//! Runs that start faster than rulesets are built build their own.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

use std::os::fd::{AsFd, OwnedFd};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetError, Scope,
};

use super::NetRule;

/// The ABI whose access rights are asked for; a kernel with less gets what it has (best effort)
/// or the plan refuses (enforce).
const ABI_USED: ABI = ABI::V7;

/// One path opened, and whether it is a folder.
struct Opened {
    fd: PathFd,
    dir: bool,
}

/// The descriptors of a plan's roots.
pub(super) struct Rules {
    read: Vec<Opened>,
    write: Vec<Opened>,
    devices: Vec<Opened>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("read", &self.read.len())
            .field("write", &self.write.len())
            .field("devices", &self.devices.len())
            .finish()
    }
}

/// Opens `path`, a folder if `dir` says so (`None`: as the file system says, following a link).
fn open(path: &Path, dir: Option<bool>) -> Option<Opened> {
    let dir = dir.unwrap_or_else(|| path.is_dir());
    PathFd::new(path).ok().map(|fd| Opened { fd, dir })
}

/// A path to grant, and whether it is a folder when its folder's listing says so (`None`: a
/// link, or not listed).
type Entry = (PathBuf, Option<bool>);

/// `root`, or its entries around the secrets inside it, in order of name. An entry is matched
/// against the secrets by its name alone (one byte comparison each): the entries of `/etc` are
/// over a hundred, and each one compared path with path cost more than opening it.
fn around(root: &Path, dir: Option<bool>, secrets: &[PathBuf], out: &mut Vec<Entry>) {
    // What of each secret lies below `root`: its first name there, and whether that is all.
    let mut inside: Vec<(&std::ffi::OsStr, bool)> = Vec::new();
    for rel in secrets.iter().filter_map(|s| s.strip_prefix(root).ok()) {
        let mut names = rel.components();
        match names.next() {
            // The root itself is a secret.
            None => return,
            Some(first) => inside.push((first.as_os_str(), names.next().is_none())),
        }
    }
    if inside.is_empty() {
        out.push((root.to_path_buf(), dir));
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut children: Vec<(std::ffi::OsString, Option<bool>)> = entries
        .filter_map(Result::ok)
        .map(|e| {
            let dir = e
                .file_type()
                .ok()
                .filter(|t| !t.is_symlink())
                .map(|t| t.is_dir());
            (e.file_name(), dir)
        })
        .collect();
    children.sort();
    for (name, dir) in children {
        let name = name.as_os_str();
        if inside.iter().any(|&(first, all)| all && first == name) {
            continue;
        }
        if inside.iter().any(|&(first, _)| first == name) {
            around(&root.join(name), dir, secrets, out);
        } else {
            out.push((root.join(name), dir));
        }
    }
}

impl Rules {
    pub(super) fn open(
        read: &[PathBuf],
        write: &[PathBuf],
        devices: &[PathBuf],
        secrets: &[PathBuf],
    ) -> Rules {
        let mut readable = Vec::new();
        for root in read {
            around(root, None, secrets, &mut readable);
        }
        Rules {
            read: readable
                .iter()
                .filter_map(|(p, dir)| open(p, *dir))
                .collect(),
            write: write.iter().filter_map(|p| open(p, None)).collect(),
            devices: devices.iter().filter_map(|p| open(p, None)).collect(),
        }
    }

    /// The ruleset of a plan: the roots, the devices, the TCP ports. Each root's rule gets the
    /// rights that fit it as it was opened (a folder's, or a file's), of those the ruleset
    /// handles, and is added without the `landlock` crate's `fstat` of each descriptor (about
    /// 165 of them here, most of them `/etc`'s entries).
    pub(super) fn ruleset(&self, spec: &Spec) -> std::io::Result<RulesetCreated> {
        let Spec {
            network,
            strict,
            net,
            scope,
        } = spec;
        let (strict, net, scope) = (*strict, *net, *scope);
        let level = if strict {
            CompatLevel::HardRequirement
        } else {
            CompatLevel::BestEffort
        };
        let all = AccessFs::from_all(ABI_USED);
        let read = AccessFs::from_read(ABI_USED);
        let file_read = read & AccessFs::from_file(ABI_USED);
        let file_rw: BitFlags<AccessFs> = AccessFs::from_file(ABI_USED) & !AccessFs::Execute;
        let built = || -> Result<RulesetCreated, RulesetError> {
            let mut ruleset = Ruleset::default()
                .set_compatibility(level)
                .handle_access(all)?;
            if net {
                ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V4))?;
            }
            if scope {
                ruleset = ruleset.scope(Scope::from_all(ABI::V6))?;
            }
            let mut created = ruleset.create()?;
            if net {
                let mut ports: Vec<u16> = network.iter().map(|n| n.port).collect();
                ports.sort_unstable();
                ports.dedup();
                for port in ports {
                    created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
                }
            }
            Ok(created)
        };
        let created = built().map_err(std::io::Error::other)?;
        // The same ruleset through a second descriptor (`None`: best effort found no Landlock).
        let Some(fd) = Option::<OwnedFd>::from(created.try_clone()?) else {
            return Ok(created);
        };
        // What the ruleset handles: every right asked for, less (best effort) those this kernel
        // lacks; under `enforce`, a kernel lacking one refused the ruleset above.
        let kernel =
            super::landlock_raw::landlock_abi_reported().and_then(|v| u8::try_from(v).ok());
        let handled = write_access_bits(kernel);
        let add = |o: &Opened, dir: BitFlags<AccessFs>, file: BitFlags<AccessFs>| {
            let bits = |access: BitFlags<AccessFs>| access.bits() & handled;
            let access = if o.dir { dir } else { file };
            match super::landlock_raw::add_path_rule(fd.as_fd(), o.fd.as_fd(), bits(access)) {
                // A folder when listed, a file by now: a file's rights (fewer, never more), as
                // the crate gives under best effort; under `enforce` the crate refused instead.
                Err(e) if o.dir && e.raw_os_error() == Some(nix::libc::EINVAL) => {
                    super::landlock_raw::add_path_rule(fd.as_fd(), o.fd.as_fd(), bits(file))
                }
                done => done,
            }
        };
        for o in &self.read {
            add(o, read, file_read)?;
        }
        for o in &self.write {
            add(o, all, AccessFs::from_file(ABI_USED))?;
        }
        for o in &self.devices {
            add(o, file_rw, file_rw)?;
        }
        Ok(created)
    }
}

/// What a plan's rulesets handle besides the roots.
#[derive(Clone, Debug)]
pub(super) struct Spec {
    /// The TCP ports (of these rules) a process may connect to.
    pub network: Vec<NetRule>,
    /// Every access right asked for must be supported (`enforce`), or the best the kernel offers.
    pub strict: bool,
    /// Handle TCP (ABI 4).
    pub net: bool,
    /// Scope signals and abstract UNIX sockets (ABI 6).
    pub scope: bool,
}

/// A plan's rulesets: its rules, and one ruleset built ahead for the next run.
pub(super) struct Rulesets {
    rules: Arc<Rules>,
    spec: Arc<Spec>,
    /// Built ahead, waiting for a run.
    spare: Arc<Mutex<Vec<RulesetCreated>>>,
    /// Asks the builder thread for one more (started at the second run; it ends with the plan).
    refill: OnceLock<mpsc::Sender<()>>,
    /// A run has asked for a refill before: the plan runs more than once.
    again: AtomicBool,
}

impl std::fmt::Debug for Rulesets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rulesets")
            .field("rules", &self.rules)
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

/// The most rulesets a plan keeps built ahead.
const SPARE: usize = 2;

impl Rulesets {
    /// The rulesets of `rules` under `spec`; builds the first one now, so that a plan that
    /// cannot have one says so before anything runs.
    pub(super) fn new(rules: Rules, spec: Spec) -> std::io::Result<Rulesets> {
        let first = rules.ruleset(&spec)?;
        Ok(Rulesets {
            rules: Arc::new(rules),
            spec: Arc::new(spec),
            spare: Arc::new(Mutex::new(vec![first])),
            refill: OnceLock::new(),
            again: AtomicBool::new(false),
        })
    }

    /// A ruleset for one run: the plan's rules and full access to `tmp`, the run's own TMPDIR.
    /// Taken from those built ahead, or built now if none is left.
    pub(super) fn take(&self, tmp: &Path) -> std::io::Result<RulesetCreated> {
        let ready = match self.spare.lock() {
            Ok(mut spare) => spare.pop(),
            Err(poisoned) => poisoned.into_inner().pop(),
        };
        let ruleset = match ready {
            Some(r) => r,
            None => self.rules.ruleset(&self.spec)?,
        };
        let fd = PathFd::new(tmp).map_err(std::io::Error::other)?;
        ruleset
            .add_rule(PathBeneath::new(fd, AccessFs::from_all(ABI_USED)))
            .map_err(std::io::Error::other)
    }

    /// Asks for the next run's ruleset to be built, off the spawn path — from the second run
    /// on: a plan that runs once (`reasonix sandbox exec`) never needs a second ruleset, and one
    /// that runs again builds the one its second run takes on the spawn path.
    pub(super) fn refill(&self) {
        if !self.again.swap(true, Ordering::Relaxed) {
            return;
        }
        let sender = self.refill.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<()>();
            let (rules, spec, spare) = (
                Arc::clone(&self.rules),
                Arc::clone(&self.spec),
                Arc::clone(&self.spare),
            );
            // The thread ends when the plan (holding the sender) is dropped.
            let _ = std::thread::Builder::new()
                .name("reasonix-rulesets".into())
                .spawn(move || {
                    while rx.recv().is_ok() {
                        let full = spare.lock().map_or(true, |s| s.len() >= SPARE);
                        if full {
                            continue;
                        }
                        // A ruleset that cannot be built now is built (or its error reported)
                        // by the run that finds none.
                        if let Ok(r) = rules.ruleset(&spec)
                            && let Ok(mut s) = spare.lock()
                        {
                            s.push(r);
                        }
                    }
                });
            tx
        });
        let _ = sender.send(());
    }
}

/// The access rights of a read root, as the kernel's `landlock_add_rule` takes them: what a
/// child adds for the `/proc` mounted fresh in its PID namespace. Those of ABI 1 (run, read
/// files, read folders), which every ruleset handles.
pub(super) fn read_access_bits() -> u64 {
    AccessFs::from_read(ABI::V1).bits()
}

/// The access rights of a write root (a folder), as `landlock_add_rule` takes them: every right
/// the plan's rulesets handle on a kernel of Landlock ABI `abi` — those of [`ABI_USED`] the
/// kernel knows (a ruleset asks for them all, best effort dropping what the kernel lacks; a
/// rule may grant only handled rights). What a child adds for an overlay mounted over a write
/// root, a new inode no rule built beforehand names.
pub(super) fn write_access_bits(abi: Option<u8>) -> u64 {
    let kernel = match abi {
        Some(7..) => ABI::V7,
        Some(6) => ABI::V6,
        Some(5) => ABI::V5,
        Some(4) => ABI::V4,
        Some(3) => ABI::V3,
        Some(2) => ABI::V2,
        _ => ABI::V1,
    };
    (AccessFs::from_all(kernel) & AccessFs::from_all(ABI_USED)).bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_left_out_entry_by_entry() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for p in ["a", "keys/private/k", "keys/public", "b/c"] {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let rel = around_relative(&root, &[root.join("keys/private")]);
        assert_eq!(
            rel,
            [
                ("a".into(), Some(false)),
                ("b".into(), Some(true)),
                ("keys/public".into(), Some(false))
            ]
        );
    }

    #[test]
    fn a_rule_gets_the_rights_of_what_its_descriptor_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("was-a-folder");
        std::fs::write(&file, "").unwrap();
        let spec = Spec {
            network: Vec::new(),
            strict: true,
            net: false,
            scope: false,
        };
        // Listed as a folder, a file by the time it is added: a folder's rights on it would be
        // refused (EINVAL); it gets a file's, and the ruleset is built.
        let rules = Rules {
            read: vec![Opened {
                fd: PathFd::new(&file).unwrap(),
                dir: true,
            }],
            write: vec![Opened {
                fd: PathFd::new(dir.path()).unwrap(),
                dir: true,
            }],
            devices: Vec::new(),
        };
        rules.ruleset(&spec).unwrap();
        // A folder's rights on a file, added as such, are what the kernel refuses.
        let created = Ruleset::default()
            .handle_access(AccessFs::from_all(ABI_USED))
            .unwrap()
            .create()
            .unwrap();
        let fd = Option::<OwnedFd>::from(created).expect("Landlock is on this machine");
        let folder = AccessFs::from_read(ABI_USED).bits();
        let refused =
            super::super::landlock_raw::add_path_rule(fd.as_fd(), rules.read[0].fd.as_fd(), folder);
        assert_eq!(refused.unwrap_err().raw_os_error(), Some(nix::libc::EINVAL));
    }

    /// The walk before issue 12, path against path, to hold the one by name to it.
    /// What `around` grants below `root` leaving out `secrets`: each path relative to `root`,
    /// with whether it is a folder (`None`: not known from the listing).
    fn around_relative(root: &Path, secrets: &[PathBuf]) -> Vec<(String, Option<bool>)> {
        let mut out = Vec::new();
        around(root, None, secrets, &mut out);
        out.iter()
            .map(|(p, dir)| (p.strip_prefix(root).unwrap().display().to_string(), *dir))
            .collect()
    }

    fn around_by_paths(root: &Path, secrets: &[PathBuf], out: &mut Vec<PathBuf>) {
        if secrets.iter().any(|s| s == root) {
            return;
        }
        if !secrets.iter().any(|s| s.starts_with(root)) {
            out.push(root.to_path_buf());
            return;
        }
        let Ok(entries) = std::fs::read_dir(root) else {
            return;
        };
        let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        children.sort();
        for child in children {
            around_by_paths(&child, secrets, out);
        }
    }

    #[test]
    fn the_system_folders_are_granted_as_the_walk_by_paths_granted_them() {
        let secrets: Vec<PathBuf> = super::super::SYSTEM_SECRETS
            .iter()
            .map(PathBuf::from)
            .collect();
        let (mut by_name, mut by_paths) = (Vec::new(), Vec::new());
        for root in super::super::SYSTEM_READ.iter().map(Path::new) {
            around(root, None, &secrets, &mut by_name);
            around_by_paths(root, &secrets, &mut by_paths);
        }
        let names: Vec<&PathBuf> = by_name.iter().map(|(p, _)| p).collect();
        assert_eq!(names, by_paths.iter().collect::<Vec<_>>());
        assert!(by_paths.len() > 20, "{by_paths:?}");
        for (p, dir) in &by_name {
            if let Some(dir) = dir {
                assert_eq!(*dir, p.is_dir(), "{}", p.display());
            }
        }
    }

    /// Issue 12: entries are matched by name, as paths were: a secret is left out whole, a
    /// folder above one is listed around it, a name that only begins like a secret's is
    /// granted, a link is opened as what it points to, and a root that is a secret is left out.
    #[test]
    fn entries_are_matched_by_name_as_paths_were() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for p in [
            "shadow",
            "shadow-",
            "shadowy",
            "ssh/k",
            "ssl/private/k",
            "ssl/certs/c",
        ] {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::os::unix::fs::symlink(root.join("ssl/certs"), root.join("certs")).unwrap();
        let secrets = [
            root.join("shadow"),
            root.join("shadow-"),
            root.join("ssh"),
            root.join("ssl/private"),
            root.join("ssh/k"),
        ];
        let rel = around_relative(&root, &secrets);
        assert_eq!(
            rel,
            [
                ("certs".into(), None),
                ("shadowy".into(), Some(false)),
                ("ssl/certs".into(), Some(true)),
            ]
        );
        let rules = Rules::open(std::slice::from_ref(&root), &[], &[], &secrets);
        let dirs: Vec<bool> = rules.read.iter().map(|o| o.dir).collect();
        assert_eq!(
            dirs,
            [true, false, true],
            "the link is opened as its folder"
        );
        let mut out = Vec::new();
        around(&root.join("ssh"), None, &secrets, &mut out);
        assert!(out.is_empty());
    }
}
