//! Decision logs: every admission, in Open Policy Agent's decision-log shape, written to a local
//! file (`--decision-log FILE`) and/or sent to a collector (`decision_logs.url`), so a security
//! team sees a fleet's decisions where it already sees OPA's. This module reads what the gate
//! concluded (after the `approve` stage, and for a live run after the call ended); it never
//! changes a verdict and never makes a call wait.
//!
//! One event per decision:
//!
//! ```json
//! {"decision_id": "…uuid…", "path": "reasonix", "labels": {"app": "reasonix", "id": "…", "version": "0.1.0"},
//!  "input": {…policy input…}, "result": {"verdict": "deny", "reasons": [...], …},
//!  "timestamp": "2026-12-01T10:00:00.123456789Z", "bundles": {"reasonix": {"revision": "v7"}},
//!  "stage": "policy", "rules": [...], "outcome": "blocked", "erased": ["/input/arguments/content"]}
//! ```
//!
//! `outcome` is how the call ended (`invalid`, `blocked`, `failed`, `succeeded`) in a live run;
//! in a dry run (`check`) it is `invalid` or `blocked` for a refused call and `null` for one that
//! would run, since nothing ran. `input` is `null` for a call that was not valid. Masks
//! ([`mask`]) remove fields before the event leaves the process, in the file as in the upload.
//!
//! - `mask.rs`: JSON-pointer masks, as OPA applies them;
//! - `upload.rs`: batches, gzip, the bounded buffer on disk, the sending thread.

mod mask;
mod upload;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value as Json, json};

use crate::gate::Admission;
use crate::record::Outcome;

/// Defaults of the `decision_logs:` section.
pub const DEFAULT_BATCH: usize = 100;
/// Send at least this often while decisions wait, in ms.
pub const DEFAULT_FLUSH_MS: u64 = 5_000;
/// The buffer folder, relative to the workspace.
pub const DEFAULT_BUFFER: &str = ".reasonix/decision-logs";
/// The most bytes the buffer may hold.
pub const DEFAULT_BUFFER_BYTES: u64 = 10 * 1024 * 1024;

/// The `decision_logs:` section of `reasonix.yaml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DecisionLogSpec {
    /// Append each decision as a JSON line to this file (`--decision-log` wins).
    pub file: Option<PathBuf>,
    /// A collector: each batch is POSTed as a gzip'd JSON array.
    pub url: Option<String>,
    /// Send when this many decisions wait (default [`DEFAULT_BATCH`]).
    pub batch: Option<usize>,
    /// Send at least this often, in ms (default [`DEFAULT_FLUSH_MS`]).
    pub flush_ms: Option<u64>,
    /// Where batches wait while the collector is unreachable (default [`DEFAULT_BUFFER`]).
    pub buffer: Option<PathBuf>,
    /// The most bytes the buffer holds; the oldest batches go first (default
    /// [`DEFAULT_BUFFER_BYTES`]).
    pub buffer_bytes: Option<u64>,
    /// JSON pointers into each event's `input` or `result` to remove, as OPA masks.
    pub mask: Option<Vec<String>>,
    /// The environment variable holding a bearer token for the collector.
    pub token_env: Option<String>,
}

impl DecisionLogSpec {
    /// The files the log writes (relative paths from `base`): host files no call may change.
    pub fn files(&self, base: &Path, file_flag: Option<&Path>) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = file_flag
            .map(Path::to_path_buf)
            .or_else(|| self.file.as_ref().map(|f| base.join(f)))
            .into_iter()
            .collect();
        if self.url.is_some() {
            out.push(base.join(self.buffer.as_deref().unwrap_or(Path::new(DEFAULT_BUFFER))));
        }
        out
    }
}

/// Where decisions go.
pub struct DecisionLog {
    instance: String,
    bundle: Option<String>,
    mask: Vec<String>,
    file: Option<Mutex<File>>,
    upload: Option<upload::Uploader>,
}

impl DecisionLog {
    /// Opens the log `spec` and `file_flag` describe (relative paths from `base`); `None` when
    /// neither names a place. `bundle` is the policy bundle's name, for `bundles`.
    pub fn open(
        spec: &DecisionLogSpec,
        file_flag: Option<&Path>,
        base: &Path,
        bundle: Option<String>,
    ) -> Result<Option<DecisionLog>, String> {
        let mask = spec.mask.clone().unwrap_or_default();
        mask::check(&mask)?;
        let path = file_flag
            .map(Path::to_path_buf)
            .or_else(|| spec.file.as_ref().map(|f| base.join(f)));
        let file = match &path {
            Some(p) => {
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
                Some(Mutex::new(
                    OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(p)
                        .map_err(|e| {
                            format!("cannot open the decision log {}: {e}", p.display())
                        })?,
                ))
            }
            None => None,
        };
        let upload = match &spec.url {
            Some(url) => {
                let token =
                    crate::bundle::fetch::token(spec.token_env.as_deref(), "decision_logs")?;
                let buffer = base.join(spec.buffer.as_deref().unwrap_or(Path::new(DEFAULT_BUFFER)));
                Some(
                    upload::Uploader::start(upload::Upload {
                        url: url.clone(),
                        batch: spec.batch.unwrap_or(DEFAULT_BATCH).max(1),
                        flush: Duration::from_millis(spec.flush_ms.unwrap_or(DEFAULT_FLUSH_MS)),
                        buffer_bytes: spec.buffer_bytes.unwrap_or(DEFAULT_BUFFER_BYTES),
                        buffer: buffer.clone(),
                        token,
                    })
                    .map_err(|e| {
                        format!(
                            "cannot start sending decision logs (buffer {}): {e}",
                            buffer.display()
                        )
                    })?,
                )
            }
            None => None,
        };
        if file.is_none() && upload.is_none() {
            return Ok(None);
        }
        Ok(Some(DecisionLog {
            instance: uuid::Uuid::new_v4().to_string(),
            bundle,
            mask,
            file,
            upload,
        }))
    }

    /// Logs one decision; `outcome` is how the call ended, when it is known.
    pub fn decide(&self, admission: &Admission, outcome: Option<Outcome>) {
        let mut event = self.event(admission, outcome);
        mask::apply(&mut event, &self.mask);
        if let Some(file) = &self.file {
            let mut line = event.to_string();
            line.push('\n');
            let mut f = file.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = f.write_all(line.as_bytes()) {
                tracing::warn!("cannot write the decision log: {e}");
            }
        }
        if let Some(upload) = &self.upload {
            upload.send(event);
        }
    }

    /// Decisions dropped so far on the way to the collector.
    pub fn dropped(&self) -> u64 {
        self.upload.as_ref().map_or(0, upload::Uploader::dropped)
    }

    /// Sends what waits (once; what cannot be sent stays buffered for the next run).
    pub fn close(&self) {
        if let Some(upload) = &self.upload {
            upload.close();
        }
    }

    fn event(&self, a: &Admission, outcome: Option<Outcome>) -> Json {
        let outcome = outcome.or(match a.verdict {
            crate::gate::Verdict::Invalid => Some(Outcome::Invalid),
            crate::gate::Verdict::Deny => Some(Outcome::Blocked),
            _ => None,
        });
        let bundles = match (&self.bundle, &a.policy_revision) {
            (Some(name), Some(revision)) => json!({ name.clone(): { "revision": revision } }),
            _ => json!({}),
        };
        json!({
            "decision_id": uuid::Uuid::new_v4().to_string(),
            "labels": {
                "app": "reasonix",
                "id": self.instance,
                "version": env!("CARGO_PKG_VERSION"),
            },
            "path": crate::policy::rego::ROOT_PACKAGE,
            "input": a.input,
            "result": {
                "id": a.id,
                "tool": a.tool,
                "verdict": a.verdict,
                "reasons": a.reasons,
                "effects": a.effects,
                "posture": a.posture,
            },
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
            "bundles": bundles,
            "stage": a.stage,
            "rules": a.rules,
            "outcome": outcome,
        })
    }
}

impl Drop for DecisionLog {
    fn drop(&mut self) {
        self.close();
    }
}
