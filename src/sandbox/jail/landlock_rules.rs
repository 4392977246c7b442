//! The Landlock rules of a plan: opened once (as `O_PATH` descriptors), turned into a ruleset for
//! each run.
//!
//! A read root holding a secret ([`super::SYSTEM_SECRETS`]) is granted entry by entry around it:
//! Landlock can only allow, so leaving a file out means allowing its siblings one by one.

use std::path::{Path, PathBuf};

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

fn open(path: &Path) -> Option<Opened> {
    let dir = path.is_dir();
    PathFd::new(path).ok().map(|fd| Opened { fd, dir })
}

/// `root`, or its entries around the secrets inside it.
fn around(root: &Path, secrets: &[PathBuf], out: &mut Vec<PathBuf>) {
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
        around(&child, secrets, out);
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
            around(root, secrets, &mut readable);
        }
        Rules {
            read: readable.iter().filter_map(|p| open(p)).collect(),
            write: write.iter().filter_map(|p| open(p)).collect(),
            devices: devices.iter().filter_map(|p| open(p)).collect(),
        }
    }

    /// The ruleset of a plan: the roots, the folder holding the runs' private temporary
    /// folders, the TCP ports.
    pub(super) fn ruleset(
        &self,
        tmp: &Path,
        network: &[NetRule],
        strict: bool,
        net: bool,
        scope: bool,
    ) -> Result<RulesetCreated, RulesetError> {
        let level = if strict {
            CompatLevel::HardRequirement
        } else {
            CompatLevel::BestEffort
        };
        let all = AccessFs::from_all(ABI_USED);
        let read = AccessFs::from_read(ABI_USED);
        let file_read = read & AccessFs::from_file(ABI_USED);
        let file_rw: BitFlags<AccessFs> = AccessFs::from_file(ABI_USED) & !AccessFs::Execute;
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
        for o in &self.read {
            let access = if o.dir { read } else { file_read };
            created = created.add_rule(PathBeneath::new(&o.fd, access))?;
        }
        for o in &self.write {
            let access = if o.dir {
                all
            } else {
                AccessFs::from_file(ABI_USED)
            };
            created = created.add_rule(PathBeneath::new(&o.fd, access))?;
        }
        for o in &self.devices {
            created = created.add_rule(PathBeneath::new(&o.fd, file_rw))?;
        }
        if let Ok(fd) = PathFd::new(tmp) {
            created = created.add_rule(PathBeneath::new(fd, all))?;
        }
        if net {
            let mut ports: Vec<u16> = network.iter().map(|n| n.port).collect();
            ports.sort_unstable();
            ports.dedup();
            for port in ports {
                created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
            }
        }
        Ok(created)
    }
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
        let mut out = Vec::new();
        around(&root, &[root.join("keys/private")], &mut out);
        let rel: Vec<String> = out
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, ["a", "b", "keys/public"]);
    }
}
