//! OPA bundles: one policy shipped to a fleet of gates, in Open Policy Agent's bundle format, so
//! a security team's existing bundle servers and signing keys serve Reasonix too. This module
//! owns the policy's *source*; it enters the admission path before it, when the gate is built,
//! and between calls, when a new revision is swapped in ([`live`]).
//!
//! - `layout.rs`: a bundle's files → manifest, Rego, data and YAML rules, checked as OPA checks
//!   them (roots, data paths, a missing manifest);
//! - `sign.rs`: `.signatures.json` verified with a configured key;
//! - [`fetch`]: a bundle server over HTTP(S) — `ETag`/`If-None-Match`, the last good copy on disk,
//!   polling;
//! - [`live`]: the newest good bundle, which gates read between calls.
//!
//! A bundle is a `.tar.gz` (as `opa build` writes it) or a folder in the same layout. Reasonix's
//! YAML rules travel in it under `reasonix/rules/` ([`RULES_DIR`]); Rego modules in package
//! `reasonix` vote as with `--policy`. A bundle that holds neither is refused: a gate never runs
//! on an empty policy.

pub mod fetch;
mod layout;
pub mod live;
mod sign;

use std::io::Read;
use std::path::Path;

pub use layout::{Files, RULES_DIR};
pub use sign::{SIGNATURES, VerificationSpec, Verifier, digest};

use crate::policy::{PolicyError, PolicySet};

/// The most bytes a bundle's files may hold together, unpacked: a gzip bomb is refused, not
/// unpacked.
pub const MAX_BUNDLE_BYTES: u64 = 64 * 1024 * 1024;

/// The most entries a bundle's tarball or folder may hold (files, folders, anything): a
/// tarball of hundreds of thousands of empty entries is refused when it passes the bound, not
/// read to its end (issue 28, item 7).
pub const MAX_BUNDLE_ENTRIES: usize = 10_000;

/// Whether revision `new` goes back from `current`, the one in force: both read as versions —
/// numbers separated by `.` (a leading `v` allowed: `41`, `1.10.2`, `v2.0`) — and `new` is the
/// lower, compared number by number. Revisions that do not both read so (a git commit id) have
/// no order here; a rollback to one of them is seen by [`fetch::Remote`] as a revision that was
/// in force earlier.
pub fn goes_back(current: &str, new: &str) -> bool {
    let version = |r: &str| -> Option<Vec<u64>> {
        let r = r.strip_prefix('v').unwrap_or(r);
        r.split('.').map(|n| n.parse::<u64>().ok()).collect()
    };
    match (version(current), version(new)) {
        (Some(c), Some(n)) => n < c,
        _ => false,
    }
}

/// Why a bundle was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The bundle could not be read (a file, a folder, a tarball).
    #[error("cannot read the bundle {where_}: {why}")]
    Read {
        /// The bundle.
        where_: String,
        /// Why.
        why: String,
    },
    /// Its layout breaks OPA's rules, or it holds no policy.
    #[error("the bundle {where_} is refused: {why}")]
    Layout {
        /// The bundle.
        where_: String,
        /// Why.
        why: String,
    },
    /// Its signature does not verify.
    #[error("the bundle {where_} is refused: its signature does not verify: {why}")]
    Signature {
        /// The bundle.
        where_: String,
        /// Why.
        why: String,
    },
    /// Its policies do not load.
    #[error("the bundle {where_} is refused: its policies do not load:\n{source}")]
    Policy {
        /// The bundle.
        where_: String,
        /// The problems.
        source: PolicyError,
    },
    /// The bundle server could not be reached or answered with an error.
    #[error("cannot download the bundle {where_}: {why}")]
    Fetch {
        /// The URL.
        where_: String,
        /// Why.
        why: String,
    },
}

/// A bundle, loaded and checked: its policies, ready to compile.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The bundle's name in decision logs (`bundles: {NAME: {revision}}`).
    pub name: String,
    /// The manifest's revision (`""` when it has none).
    pub revision: String,
    /// Whether its signature was verified.
    pub verified: bool,
    /// Its policies.
    pub set: PolicySet,
}

impl Bundle {
    /// Loads a bundle from a `.tar.gz` file or a folder.
    pub fn load(
        path: &Path,
        name: &str,
        verifier: Option<&Verifier>,
    ) -> Result<Bundle, BundleError> {
        let where_ = path.display().to_string();
        let read = |why: String| BundleError::Read {
            where_: where_.clone(),
            why,
        };
        let meta = std::fs::metadata(path).map_err(|e| read(e.to_string()))?;
        let files = if meta.is_dir() {
            read_folder(path).map_err(read)?
        } else {
            let bytes = std::fs::read(path).map_err(|e| read(e.to_string()))?;
            read_tarball(&bytes).map_err(read)?
        };
        Bundle::from_files(&files, &where_, name, verifier)
    }

    /// Loads a bundle from the bytes of a `.tar.gz`.
    pub fn from_tarball(
        bytes: &[u8],
        where_: &str,
        name: &str,
        verifier: Option<&Verifier>,
    ) -> Result<Bundle, BundleError> {
        let files = read_tarball(bytes).map_err(|why| BundleError::Read {
            where_: where_.to_owned(),
            why,
        })?;
        Bundle::from_files(&files, where_, name, verifier)
    }

    /// Checks the files (signature first, then layout) and loads their policies.
    pub fn from_files(
        files: &Files,
        where_: &str,
        name: &str,
        verifier: Option<&Verifier>,
    ) -> Result<Bundle, BundleError> {
        match verifier {
            Some(verifier) => {
                sign::verify(files, verifier).map_err(|why| BundleError::Signature {
                    where_: where_.to_owned(),
                    why,
                })?;
            }
            None if files.contains_key(SIGNATURES) => tracing::warn!(
                bundle = where_,
                "the bundle is signed, and no verification key is configured (bundle.verification): its signature was not checked"
            ),
            None => {}
        }
        let layout = layout::layout(files).map_err(|why| BundleError::Layout {
            where_: where_.to_owned(),
            why,
        })?;
        if layout.rego.is_empty() && layout.yaml.is_empty() {
            return Err(BundleError::Layout {
                where_: where_.to_owned(),
                why: format!(
                    "it holds no policy (no .rego module, no YAML rules under /{RULES_DIR}/); a gate never runs on an empty policy"
                ),
            });
        }
        let label = |p: &str| format!("{where_}//{p}");
        let yaml: Vec<(String, &str)> = layout
            .yaml
            .iter()
            .map(|(p, t)| (label(p), t.as_str()))
            .collect();
        let rego: Vec<(String, &str)> = layout
            .rego
            .iter()
            .map(|(p, t)| (label(p), t.as_str()))
            .collect();
        // Data is read by Rego only; a bundle of YAML rules may still carry some.
        let data: Vec<(String, serde_json::Value)> = match (&layout.data, rego.is_empty()) {
            (Some(d), false) => vec![(label("data"), d.clone())],
            _ => Vec::new(),
        };
        let yaml_refs: Vec<(&str, &str)> = yaml.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let rego_refs: Vec<(&str, &str)> = rego.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let data_refs: Vec<(&str, serde_json::Value)> =
            data.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
        let set = PolicySet::from_texts(&yaml_refs, &rego_refs, &data_refs).map_err(|source| {
            BundleError::Policy {
                where_: where_.to_owned(),
                source,
            }
        })?;
        Ok(Bundle {
            name: name.to_owned(),
            revision: layout.revision,
            verified: verifier.is_some(),
            set,
        })
    }
}

/// The `bundle:` section of `reasonix.yaml` (`--bundle` and `--bundle-url` set `path` and `url`).
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BundleSpec {
    /// A `.tar.gz` bundle or a folder in OPA's layout (relative to the workspace).
    pub path: Option<std::path::PathBuf>,
    /// A bundle server's URL for the `.tar.gz`.
    pub url: Option<String>,
    /// The bundle's name in decision logs (default [`DEFAULT_NAME`]).
    pub name: Option<String>,
    /// How often a run polls the server, in ms (default [`DEFAULT_POLL_MS`]; 0: never).
    pub poll_ms: Option<u64>,
    /// Where the last good download is kept, and read when the first download fails.
    pub cache: Option<std::path::PathBuf>,
    /// The key signed bundles are verified with; with it, an unsigned bundle is refused.
    pub verification: Option<VerificationSpec>,
    /// The environment variable holding a bearer token for the bundle server.
    pub token_env: Option<String>,
    /// Whether a downloaded bundle may go back to an older revision than the one in force
    /// (default false: it is refused, and the one in force stays).
    #[serde(default)]
    pub allow_rollback: bool,
}

/// The bundle's name when none is configured.
pub const DEFAULT_NAME: &str = "reasonix";
/// How often a bundle server is polled when nothing else is configured: every minute.
pub const DEFAULT_POLL_MS: u64 = 60_000;

/// A bundle in force: the newest good one, and where the first came from.
pub struct Started {
    /// What gates judge with.
    pub live: std::sync::Arc<live::LiveBundle>,
    /// For a server: whether the first bundle was downloaded or read from the last good copy.
    pub origin: Option<fetch::Origin>,
}

/// Loads the bundle `spec` names (a `url` wins over a `path`; relative paths from `base`) and,
/// for a server, starts polling it.
pub fn start(spec: &BundleSpec, base: &Path) -> Result<Started, BundleError> {
    let name = spec.name.as_deref().unwrap_or(DEFAULT_NAME);
    let where_ = spec
        .url
        .clone()
        .or_else(|| spec.path.as_ref().map(|p| p.display().to_string()))
        .unwrap_or_default();
    let verifier = match &spec.verification {
        Some(v) => Some(std::sync::Arc::new(Verifier::new(v, base).map_err(
            |why| BundleError::Signature {
                where_: where_.clone(),
                why,
            },
        )?)),
        None => None,
    };
    if let Some(url) = &spec.url {
        if verifier.is_none() && plain_http_off_host(url) {
            tracing::warn!(
                url = %url,
                "the policy bundle comes over plain HTTP and is not signed: anyone on the way can change the policy; use https or bundle.verification"
            );
        }
        let cache = spec.cache.as_ref().map(|c| base.join(c));
        let token = fetch::token(spec.token_env.as_deref(), "bundle").map_err(|why| {
            BundleError::Fetch {
                where_: url.clone(),
                why,
            }
        })?;
        let mut remote = fetch::Remote::new(url, name, verifier, cache, token.as_deref())?
            .with_rollback(spec.allow_rollback);
        let (bundle, origin) = remote.first()?;
        let live = std::sync::Arc::new(live::LiveBundle::new(bundle));
        let every = spec.poll_ms.unwrap_or(DEFAULT_POLL_MS);
        if every > 0 {
            remote
                .poll(
                    std::sync::Arc::clone(&live),
                    std::time::Duration::from_millis(every),
                )
                .map_err(|e| BundleError::Fetch {
                    where_: url.clone(),
                    why: format!("cannot start polling: {e}"),
                })?;
        }
        return Ok(Started {
            live,
            origin: Some(origin),
        });
    }
    let Some(path) = &spec.path else {
        return Err(BundleError::Read {
            where_,
            why: "the bundle section names neither a path nor a url".into(),
        });
    };
    let bundle = Bundle::load(&base.join(path), name, verifier.as_deref())?;
    Ok(Started {
        live: std::sync::Arc::new(live::LiveBundle::new(bundle)),
        origin: None,
    })
}

/// Whether `url` is plain `http://` to a host other than this machine's loopback.
fn plain_http_off_host(url: &str) -> bool {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            u.scheme() == "http"
                && !matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"))
        }
        Err(_) => false,
    }
}

/// A path inside a bundle, normalised (`/`-separated, no leading `/` or `./`); a path that
/// climbs out (`..`) is refused.
fn bundle_path(raw: &str) -> Result<String, String> {
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(format!("the path {raw:?} climbs out of the bundle")),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// Every regular file of a `.tar.gz`, by path. Links and devices are refused; directories skipped.
fn read_tarball(bytes: &[u8]) -> Result<Files, String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut files = Files::new();
    let mut total: u64 = 0;
    let entries = archive
        .entries()
        .map_err(|e| format!("not a .tar.gz bundle: {e}"))?;
    for (n, entry) in entries.enumerate() {
        if n >= MAX_BUNDLE_ENTRIES {
            return Err(format!("it holds more than {MAX_BUNDLE_ENTRIES} entries"));
        }
        let mut entry = entry.map_err(|e| format!("not a .tar.gz bundle: {e}"))?;
        let kind = entry.header().entry_type();
        let raw = entry
            .path()
            .map_err(|e| format!("a path in the tarball: {e}"))?
            .to_string_lossy()
            .into_owned();
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(format!("{raw:?} is not a regular file ({kind:?})"));
        }
        let path = bundle_path(&raw)?;
        let mut content = Vec::new();
        let limit = MAX_BUNDLE_BYTES - total;
        (&mut entry)
            .take(limit + 1)
            .read_to_end(&mut content)
            .map_err(|e| format!("{raw}: {e}"))?;
        total += content.len() as u64;
        if total > MAX_BUNDLE_BYTES {
            return Err(format!("it unpacks to more than {MAX_BUNDLE_BYTES} bytes"));
        }
        if files.insert(path, content).is_some() {
            return Err(format!("{raw:?} appears twice in the tarball"));
        }
    }
    Ok(files)
}

/// Every regular file below a folder, by path. A symbolic link is refused: a bundle folder holds
/// its own files.
fn read_folder(root: &Path) -> Result<Files, String> {
    let mut files = Files::new();
    let mut total: u64 = 0;
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries {
            seen += 1;
            if seen > MAX_BUNDLE_ENTRIES {
                return Err(format!("it holds more than {MAX_BUNDLE_ENTRIES} entries"));
            }
            let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            if !kind.is_file() {
                return Err(format!(
                    "{} is not a regular file (a bundle folder holds no links)",
                    path.display()
                ));
            }
            let rel = path
                .strip_prefix(root)
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            total += bytes.len() as u64;
            if total > MAX_BUNDLE_BYTES {
                return Err(format!("it holds more than {MAX_BUNDLE_BYTES} bytes"));
            }
            files.insert(bundle_path(&rel)?, bytes);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28, item 7: a tarball of more entries than the bound (empty ones: no byte bound
    /// would see them) is refused; the twin at the bound is read.
    #[test]
    fn a_tarball_of_too_many_entries_is_refused_and_one_at_the_bound_is_read() {
        let tarball = |entries: usize| {
            let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::fast(),
            ));
            for i in 0..entries {
                let mut header = tar::Header::new_gnu();
                header.set_size(0);
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                builder
                    .append_data(&mut header, format!("e/{i}.json"), std::io::empty())
                    .unwrap();
            }
            builder.into_inner().unwrap().finish().unwrap()
        };
        let e = read_tarball(&tarball(MAX_BUNDLE_ENTRIES + 1)).unwrap_err();
        assert!(e.contains("more than 10000 entries"), "{e}");
        assert_eq!(
            read_tarball(&tarball(MAX_BUNDLE_ENTRIES)).unwrap().len(),
            MAX_BUNDLE_ENTRIES
        );
    }

    #[test]
    fn revisions_that_read_as_versions_are_ordered_and_others_are_not() {
        for (current, new, back) in [
            ("7", "5", true),
            ("7", "8", false),
            ("1.10.2", "1.9.9", true),
            ("v2.0", "v1.9", true),
            ("1.2", "1.2.1", false),
            ("2026-12-03", "2026-11-30", false),
            ("abc123", "0fe1", false),
            ("", "1", false),
        ] {
            assert_eq!(goes_back(current, new), back, "{current} -> {new}");
        }
    }

    #[test]
    fn a_revision_that_goes_back_is_refused_unless_rollback_is_allowed() {
        let remote =
            || fetch::Remote::new("http://127.0.0.1:9/b.tar.gz", "b", None, None, None).unwrap();
        let mut r = remote();
        r.take_revision("7").unwrap();
        assert!(r.take_revision("5").unwrap_err().contains("goes back"));
        r.take_revision("8").unwrap();
        // A revision without an order, in force earlier and replaced: a replay, refused.
        let mut r = remote();
        r.take_revision("abc").unwrap();
        r.take_revision("def").unwrap();
        assert!(r.take_revision("abc").is_err());
        // The twin: configured, a trusted older revision is taken.
        let mut r = remote().with_rollback(true);
        r.take_revision("7").unwrap();
        r.take_revision("5").unwrap();
        r.take_revision("7").unwrap();
    }

    #[test]
    fn a_bundle_without_policy_is_refused() {
        let files: Files = [(".manifest".to_owned(), br#"{"revision":"1"}"#.to_vec())]
            .into_iter()
            .collect();
        let e = Bundle::from_files(&files, "b", "b", None).unwrap_err();
        assert!(e.to_string().contains("holds no policy"), "{e}");
    }

    #[test]
    fn plain_http_is_flagged_unless_it_stays_on_this_machine() {
        assert!(plain_http_off_host("http://bundles.example/b.tar.gz"));
        assert!(!plain_http_off_host("https://bundles.example/b.tar.gz"));
        assert!(!plain_http_off_host("http://127.0.0.1:8181/b.tar.gz"));
        assert!(!plain_http_off_host("http://[::1]:8181/b.tar.gz"));
    }

    #[test]
    fn paths_that_climb_out_are_refused() {
        assert!(bundle_path("../etc/passwd").is_err());
        assert_eq!(bundle_path("./a//b/data.json").unwrap(), "a/b/data.json");
        assert_eq!(bundle_path("/.manifest").unwrap(), ".manifest");
    }
}
