//! The `sandbox:` section of a policy file: how strictly bash (and every process Reasonix starts)
//! is jailed, which extra folders it may read or write, which TCP destinations it may reach, and
//! its resource limits.
//!
//! ```yaml
//! sandbox:
//!   bash: enforce            # enforce | best_effort | off
//!   write_roots: ["/tmp/build-cache"]
//!   read_roots: ["~/.m2"]
//!   network: ["github.com:443", "*:8080"]
//!   passthrough: ["target", "node_modules"]   # written in place, not observed
//!   limits: {cpu_seconds: 300, file_size: 1073741824, processes: 256, open_files: 1024,
//!            memory_bytes: 4294967296, timeout_ms: 120000, output_bytes: 65536}
//! ```
//!
//! Several files merge: the strictest mode wins, roots, network rules and pass-through folders
//! add up (each is a deliberate grant), and each limit takes the smallest value any file sets (or its default, if
//! that is smaller: a file can lower a limit, never raise it).
//!
//! `memory_bytes` bounds the memory of a whole run where a memory cgroup can be made for it
//! (`memory.max`, or `memory.limit_in_bytes` on cgroup v1; swap is held to the same bound), and
//! otherwise the address space of each process (`RLIMIT_AS`); the plan says which holds. Its
//! default, 4 GiB, is [`DEFAULT_MEMORY_BYTES`].

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How strictly a process is jailed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// No jail: the process runs with Reasonix's own rights. Only for trusted setups.
    Off,
    /// Apply what this kernel supports; report the rest as not enforced.
    BestEffort,
    /// Apply everything or run nothing: without a working backend, bash calls are blocked.
    #[default]
    Enforce,
}

impl Enforcement {
    /// The name used in policies and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Off => "off",
            Enforcement::BestEffort => "best_effort",
            Enforcement::Enforce => "enforce",
        }
    }
}

/// A TCP destination a jailed process may connect to. Landlock filters by port only; the host
/// is kept for the record and reported as not enforced.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NetRule {
    /// The host as written (`*` for any).
    pub host: String,
    /// The TCP port.
    pub port: u16,
}

impl TryFrom<String> for NetRule {
    type Error = String;
    fn try_from(s: String) -> Result<NetRule, String> {
        let (host, port) = s.rsplit_once(':').ok_or_else(|| {
            format!("network rule {s:?}: write HOST:PORT, e.g. github.com:443 or *:8080")
        })?;
        let port: u16 =
            port.parse().ok().filter(|p| *p > 0).ok_or_else(|| {
                format!("network rule {s:?}: {port:?} is not a TCP port (1-65535)")
            })?;
        if host.is_empty() {
            return Err(format!(
                "network rule {s:?}: the host is empty; use * for any host"
            ));
        }
        Ok(NetRule {
            host: host.to_owned(),
            port,
        })
    }
}

impl From<NetRule> for String {
    fn from(r: NetRule) -> String {
        r.to_string()
    }
}

impl fmt::Display for NetRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// The default of `sandbox.limits.memory_bytes`: 4 GiB for a whole run.
///
/// A `cargo build` fits in it with room to spare: a debug `cargo build -j2` of Reasonix itself
/// (about 300 crates, from scratch, on the 2-core machine of the README's speed table) ran to
/// its end inside a memory cgroup of 4 GiB, swap included, without once reaching it (`failcnt`
/// 0, nothing killed). The whole process tree peaked at about 0.95 GiB resident (the largest
/// process, rustc on Reasonix itself, at 1.0 GB) and 1.9 GiB with its page cache, which counts
/// toward a cgroup's limit but is reclaimed before anything is killed. A bigger machine
/// building with more jobs at once needs more, and a file cannot raise a limit above its
/// default (see the module doc), so the default leaves room rather than fitting tightly; it
/// stays below what an unbounded allocation on a small machine could take from everything
/// else.
pub const DEFAULT_MEMORY_BYTES: u64 = 4 << 30;

/// Resource limits of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// CPU seconds (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Largest file it may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size: u64,
    /// Most processes at once (a pids cgroup where one can be made, else `RLIMIT_NPROC`).
    pub processes: u64,
    /// Most open files (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Most memory, in bytes: of the whole run (a memory cgroup where one can be made), else
    /// of each process's address space (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// Wall-clock time before the whole process group is killed, in milliseconds.
    pub timeout_ms: u64,
    /// Output kept for the model, in bytes (head and tail; the true size is reported).
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            cpu_seconds: 600,
            file_size: 1 << 30,
            processes: 512,
            open_files: 1024,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            timeout_ms: 120_000,
            output_bytes: 64 * 1024,
        }
    }
}

/// The `limits:` section as written: every field optional.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsSpec {
    pub cpu_seconds: Option<u64>,
    pub file_size: Option<u64>,
    pub processes: Option<u64>,
    pub open_files: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub output_bytes: Option<usize>,
}

/// The `sandbox:` section as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SandboxSpec {
    pub bash: Option<Enforcement>,
    #[serde(default)]
    pub write_roots: Vec<String>,
    #[serde(default)]
    pub read_roots: Vec<String>,
    #[serde(default)]
    pub network: Vec<NetRule>,
    #[serde(default)]
    pub passthrough: Vec<String>,
    #[serde(default)]
    pub limits: LimitsSpec,
}

/// The merged sandbox configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JailConfig {
    /// How strictly bash is jailed.
    pub mode: Enforcement,
    /// Extra folders it may write (and read), as written (`~` allowed).
    pub write_roots: Vec<String>,
    /// Extra folders it may read and run programs from.
    pub read_roots: Vec<String>,
    /// TCP destinations it may connect to.
    pub network: Vec<NetRule>,
    /// Folders inside the write roots that a writer writes in place rather than through its
    /// overlay (build outputs too large to copy twice): relative to the workspace, or absolute
    /// (`~` allowed). Their changes are not observed, only counted (issue 25).
    pub passthrough: Vec<String>,
    /// Its limits.
    pub limits: Limits,
}

impl Default for JailConfig {
    fn default() -> JailConfig {
        JailConfig {
            mode: Enforcement::Enforce,
            write_roots: Vec::new(),
            read_roots: Vec::new(),
            network: Vec::new(),
            passthrough: Vec::new(),
            limits: Limits::default(),
        }
    }
}

impl JailConfig {
    /// Merges the sections of several files (see the module doc).
    pub(crate) fn merge<'a>(specs: impl IntoIterator<Item = &'a SandboxSpec>) -> JailConfig {
        let mut config = JailConfig::default();
        let mut mode: Option<Enforcement> = None;
        for spec in specs {
            if let Some(m) = spec.bash {
                mode = Some(mode.map_or(m, |old| old.max(m)));
            }
            for r in &spec.write_roots {
                if !config.write_roots.contains(r) {
                    config.write_roots.push(r.clone());
                }
            }
            for r in &spec.read_roots {
                if !config.read_roots.contains(r) {
                    config.read_roots.push(r.clone());
                }
            }
            for n in &spec.network {
                if !config.network.contains(n) {
                    config.network.push(n.clone());
                }
            }
            for p in &spec.passthrough {
                if !config.passthrough.contains(p) {
                    config.passthrough.push(p.clone());
                }
            }
            let l = &mut config.limits;
            let s = spec.limits;
            let min = |a: u64, b: Option<u64>| b.map_or(a, |b| a.min(b));
            l.cpu_seconds = min(l.cpu_seconds, s.cpu_seconds);
            l.file_size = min(l.file_size, s.file_size);
            l.processes = min(l.processes, s.processes);
            l.open_files = min(l.open_files, s.open_files);
            l.memory_bytes = min(l.memory_bytes, s.memory_bytes);
            l.timeout_ms = min(l.timeout_ms, s.timeout_ms);
            l.output_bytes = s
                .output_bytes
                .map_or(l.output_bytes, |b| l.output_bytes.min(b));
        }
        config.mode = mode.unwrap_or_default();
        config
    }

    /// The pass-through folders, `~` expanded and relative ones taken from `workspace`.
    pub fn passthrough(
        &self,
        workspace: &std::path::Path,
        home: Option<&std::path::Path>,
    ) -> Vec<PathBuf> {
        self.passthrough
            .iter()
            .filter_map(|p| crate::sandbox::resolve::expand_tilde(p, home).ok())
            .map(|p| workspace.join(p))
            .collect()
    }

    /// The extra roots, `~` expanded.
    pub fn roots(&self, home: Option<&std::path::Path>) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let expand = |r: &String| crate::sandbox::resolve::expand_tilde(r, home).ok();
        (
            self.write_roots.iter().filter_map(expand).collect(),
            self.read_roots.iter().filter_map(expand).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_rules_parse_and_refuse_nonsense() {
        assert_eq!(
            NetRule::try_from("github.com:443".to_owned()).unwrap().port,
            443
        );
        assert_eq!(NetRule::try_from("*:8080".to_owned()).unwrap().host, "*");
        for bad in ["github.com", "x:0", "x:http", ":443", "x:70000"] {
            assert!(NetRule::try_from(bad.to_owned()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_strictest_mode_and_the_smallest_limits_win() {
        let a = SandboxSpec {
            bash: Some(Enforcement::Off),
            limits: LimitsSpec {
                timeout_ms: Some(5000),
                ..LimitsSpec::default()
            },
            write_roots: vec!["/a".into()],
            ..SandboxSpec::default()
        };
        let b = SandboxSpec {
            bash: Some(Enforcement::BestEffort),
            limits: LimitsSpec {
                timeout_ms: Some(9000),
                processes: Some(10),
                ..LimitsSpec::default()
            },
            write_roots: vec!["/b".into()],
            ..SandboxSpec::default()
        };
        let c = JailConfig::merge([&a, &b]);
        assert_eq!(c.limits.memory_bytes, DEFAULT_MEMORY_BYTES);
        assert_eq!(c.mode, Enforcement::BestEffort);
        assert_eq!(c.limits.timeout_ms, 5000);
        assert_eq!(c.limits.processes, 10);
        assert_eq!(c.write_roots, ["/a", "/b"]);
        assert_eq!(JailConfig::merge([]).mode, Enforcement::Enforce);
    }

    #[test]
    fn memory_bytes_is_parsed_and_the_smallest_value_wins_over_the_default() {
        let lower: SandboxSpec =
            yaml_serde::from_str("limits: {memory_bytes: 1073741824}").unwrap();
        let higher: SandboxSpec =
            yaml_serde::from_str("limits: {memory_bytes: 17179869184}").unwrap();
        assert_eq!(lower.limits.memory_bytes, Some(1 << 30));
        assert_eq!(JailConfig::merge([&higher]).limits.memory_bytes, 4 << 30);
        assert_eq!(
            JailConfig::merge([&higher, &lower]).limits.memory_bytes,
            1 << 30
        );
        assert!(yaml_serde::from_str::<SandboxSpec>("limits: {memory: 1}").is_err());
    }
}
