//! `reasonix.yaml`: the format of the run's settings. Where they are read from (the managed,
//! user and project layers), how they merge, and what a project file nobody trusts may decide
//! is [`crate::settings`]'s.
//!
//! ```yaml
//! provider:
//!   kind: openai                     # openai | script
//!   base_url: https://api.deepseek.com
//!   model: deepseek-chat
//!   api_key_env: DEEPSEEK_API_KEY
//!   max_retries: 3                   # retries of an attempt that failed before its answer was whole
//!   read_timeout_ms: 300000          # the longest wait for the next bytes of an answer
//!   retry_base_ms: 500               # the first backoff when the server names no wait; doubles
//!   # script: session.json           # for kind: script
//! policies: [builtin:default, policies/team.yaml]   # what --policy would say; --policy wins
//! data: [policies/hosts.json]        # what --data would say; --data wins
//! max_steps: 30                      # at least 1
//! result_bytes: 16384                # what the model sees of one result
//! record:
//!   path: .reasonix/record.jsonl     # `record: PATH` alone says the same
//!   arguments: full                  # full (bounded, beside the digest) | digest (the digest only)
//! hooks:                             # pre-tool hooks (crate::hooks)
//!   pre_tool: [{tools: [bash], command: [python3, hooks/check.py], timeout_ms: 5000}]
//! mcp_servers:                       # MCP servers, as in .mcp.json (which is read too)
//!   time: {command: uvx, args: [mcp-server-time], startup_timeout_ms: 10000}
//! bundle:                            # the policy as an OPA bundle (crate::bundle)
//!   url: https://bundles.example/reasonix.tar.gz   # or path: policy-bundle/ (a folder or .tar.gz)
//!   poll_ms: 60000                   # how often a run polls the server (0: never)
//!   cache: .reasonix/bundle.tar.gz   # the last good download, used when the first one fails
//!   verification: {key: keys/bundle.pem, algorithm: RS256, keyid: fleet, scope: ""}
//!   token_env: BUNDLE_TOKEN          # a bearer token for the bundle server, from the environment
//! decision_logs:                     # each decision in OPA's shape (crate::decisions)
//!   file: .reasonix/decisions.jsonl  # what --decision-log would say; --decision-log wins
//!   url: https://collector.example/logs   # batches POSTed gzip'd
//!   batch: 100                       # send when this many wait
//!   flush_ms: 5000                   # send at least this often
//!   buffer: .reasonix/decision-logs  # batches wait here while the collector is unreachable
//!   buffer_bytes: 10485760           # the buffer's bound; the oldest batches go first
//!   mask: [/input/arguments/content] # JSON pointers removed before a decision leaves
//!   token_env: COLLECTOR_TOKEN       # a bearer token for the collector, from the environment
//! otel:                              # OpenTelemetry traces and metrics (crate::telemetry)
//!   endpoint: http://collector:4318  # OTLP/HTTP base URL; OTEL_EXPORTER_OTLP_ENDPOINT wins
//!   headers: {authorization: Bearer x}   # OTEL_EXPORTER_OTLP_HEADERS adds to them
//!   service_name: reasonix           # OTEL_SERVICE_NAME wins
//!   resource_attributes: {deployment.environment: ci}   # OTEL_RESOURCE_ATTRIBUTES wins
//!   queue: 4096                      # spans waiting to be sent; past it they are dropped, counted
//!   batch: 512                       # spans per request
//!   flush_ms: 5000                   # send (and export metrics) at least this often
//!   metrics: true                    # export metrics too
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

/// The provider section.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// `openai` (any OpenAI-compatible API) or `script`.
    pub kind: Option<String>,
    /// The API's base URL.
    pub base_url: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// The script, for `kind: script`.
    pub script: Option<PathBuf>,
    /// Retries of an attempt that failed before its answer was whole.
    pub max_retries: Option<u32>,
    /// The longest wait for the next bytes of an answer (its head, then each chunk), in ms.
    pub read_timeout_ms: Option<u64>,
    /// The first backoff when the server names no wait, in ms; it doubles with each retry.
    pub retry_base_ms: Option<u64>,
}

/// What the record keeps of each call's arguments.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RecordArguments {
    /// The arguments as the model wrote them, cut past a bound, beside their digest.
    #[default]
    Full,
    /// Only their sha256, for teams that must not store contents.
    Digest,
}

/// The `record:` section: a mapping, or a path alone (the form earlier versions read).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RecordSpec {
    /// Where the execution record goes.
    pub path: Option<PathBuf>,
    /// What it keeps of each call's arguments.
    pub arguments: Option<RecordArguments>,
    /// The environment variable whose value is the key that signs the record's lines (else the
    /// key file in the user's state folder: see [`crate::seal`]).
    pub key_env: Option<String>,
}

/// `record: PATH` or `record: {path, arguments}`.
fn record_spec<'de, D: Deserializer<'de>>(de: D) -> Result<RecordSpec, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = RecordSpec;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a path, or a mapping with `path` and `arguments`")
        }
        fn visit_str<E: serde::de::Error>(self, path: &str) -> Result<RecordSpec, E> {
            Ok(RecordSpec {
                path: Some(PathBuf::from(path)),
                arguments: None,
                key_env: None,
            })
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RecordSpec, A::Error> {
            RecordSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    de.deserialize_any(Visitor)
}

/// `max_steps`, which must be at least 1: a run of no turns would end before it began.
fn at_least_one<'de, D: Deserializer<'de>>(de: D) -> Result<Option<usize>, D::Error> {
    match usize::deserialize(de)? {
        0 => Err(serde::de::Error::custom(
            "max_steps must be at least 1: a run of 0 turns would end before the model answered",
        )),
        n => Ok(Some(n)),
    }
}

/// One `reasonix.yaml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The provider.
    #[serde(default)]
    pub provider: ProviderSpec,
    /// The policies in force, as `--policy` would name them (relative to the workspace;
    /// `builtin:default` is the embedded default). `--policy` on the command line wins.
    pub policies: Option<Vec<PathBuf>>,
    /// Data documents for Rego, as `--data` would name them. `--data` wins.
    pub data: Option<Vec<PathBuf>>,
    /// Most model turns in one run.
    #[serde(default, deserialize_with = "at_least_one")]
    pub max_steps: Option<usize>,
    /// What the model sees of one result, in bytes.
    pub result_bytes: Option<usize>,
    /// The execution record.
    #[serde(default, deserialize_with = "record_spec")]
    pub record: RecordSpec,
    /// MCP servers, with the fields of `.mcp.json` (`crate::mcp::config`).
    pub mcp_servers: Option<std::collections::BTreeMap<String, crate::mcp::ServerSpec>>,
    /// Pre-tool hooks (`crate::hooks`).
    pub hooks: Option<crate::hooks::HooksSpec>,
    /// The policy as an OPA bundle (`crate::bundle`); `--bundle`/`--bundle-url` win, and
    /// `--policy` replaces it.
    pub bundle: Option<crate::bundle::BundleSpec>,
    /// Decision logs (`crate::decisions`); `--decision-log` sets the file.
    pub decision_logs: Option<crate::decisions::DecisionLogSpec>,
    /// OpenTelemetry export (`crate::telemetry`); the `OTEL_*` variables win.
    pub otel: Option<crate::telemetry::OtelSpec>,
}

impl RunConfig {
    /// `policies:` as paths: relative ones taken from the workspace, `builtin:default` as is.
    pub fn policy_paths(&self, workspace: &Path) -> Vec<PathBuf> {
        self.policies
            .iter()
            .flatten()
            .map(|p| {
                if p.as_os_str() == crate::policy::BUILTIN_DEFAULT {
                    p.clone()
                } else {
                    workspace.join(p)
                }
            })
            .collect()
    }

    /// `data:` as paths, relative ones taken from the workspace.
    pub fn data_paths(&self, workspace: &Path) -> Vec<PathBuf> {
        self.data
            .iter()
            .flatten()
            .map(|p| workspace.join(p))
            .collect()
    }

    /// Checks one settings file's text as the format says (unknown keys, bad values), an error
    /// naming `path` and the line. Layers and their merge are [`crate::settings`]'s: the one
    /// loader every entry point uses.
    pub fn parse(path: &Path, text: &str) -> Result<RunConfig, String> {
        if text.trim().is_empty() {
            return Ok(RunConfig::default());
        }
        yaml_serde::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(":{}:{}", l.line(), l.column()))
                .unwrap_or_default();
            format!("{}{at}: {e}", path.display())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace's file alone, as the settings loader checks it.
    fn load(workspace: &Path) -> Result<RunConfig, String> {
        let path = workspace.join("reasonix.yaml");
        RunConfig::parse(&path, &std::fs::read_to_string(&path).unwrap())
    }

    #[test]
    fn a_misspelt_key_is_an_error_with_its_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("reasonix.yaml"), "max_step: 3\n").unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(
            e.contains("reasonix.yaml:1:") && e.contains("max_step"),
            "{e}"
        );
    }

    #[test]
    fn the_record_is_a_path_or_a_section() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("reasonix.yaml");
        std::fs::write(&file, "record: r.jsonl\n").unwrap();
        let c = load(dir.path()).unwrap();
        assert_eq!(c.record.path, Some(PathBuf::from("r.jsonl")));
        assert_eq!(c.record.arguments, None);
        std::fs::write(&file, "record:\n  arguments: digest\n").unwrap();
        let c = load(dir.path()).unwrap();
        assert_eq!(c.record.path, None);
        assert_eq!(c.record.arguments, Some(RecordArguments::Digest));
        std::fs::write(&file, "record:\n  argument: digest\n").unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(
            e.contains("reasonix.yaml:2:") && e.contains("argument"),
            "{e}"
        );
        std::fs::write(&file, "record:\n  arguments: some\n").unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(e.contains("unknown variant `some`"), "{e}");
    }

    #[test]
    fn zero_max_steps_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("reasonix.yaml"), "max_steps: 0\n").unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
    }

    #[test]
    fn policies_are_relative_to_the_workspace_and_builtin_default_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("reasonix.yaml"),
            "policies: [builtin:default, team.yaml, /abs/p.rego]\ndata: [d.json]\n",
        )
        .unwrap();
        let c = load(dir.path()).unwrap();
        assert_eq!(
            c.policy_paths(dir.path()),
            [
                PathBuf::from("builtin:default"),
                dir.path().join("team.yaml"),
                PathBuf::from("/abs/p.rego")
            ]
        );
        assert_eq!(c.data_paths(dir.path()), [dir.path().join("d.json")]);
    }

    #[test]
    fn retry_settings_are_read_from_the_provider_section() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("reasonix.yaml"),
            "provider:\n  max_retries: 5\n  read_timeout_ms: 1500\n  retry_base_ms: 20\n",
        )
        .unwrap();
        let c = load(dir.path()).unwrap();
        assert_eq!(c.provider.max_retries, Some(5));
        assert_eq!(c.provider.read_timeout_ms, Some(1500));
        assert_eq!(c.provider.retry_base_ms, Some(20));
        std::fs::write(
            dir.path().join("reasonix.yaml"),
            "provider:\n  max_retries: -1\n",
        )
        .unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(e.contains("reasonix.yaml:2:"), "{e}");
    }
}
