//! `reasonix.yaml`: the run's settings, read from the workspace, then from the user's config
//! folder (`$XDG_CONFIG_HOME/reasonix/` or `~/.config/reasonix/`); a field set in the workspace
//! file wins, and command-line flags win over both.
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
//! max_steps: 30
//! result_bytes: 16384                # what the model sees of one result
//! record: .reasonix/record.jsonl
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

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

/// One `reasonix.yaml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The provider.
    #[serde(default)]
    pub provider: ProviderSpec,
    /// Most model turns in one run.
    pub max_steps: Option<usize>,
    /// What the model sees of one result, in bytes.
    pub result_bytes: Option<usize>,
    /// Where the execution record goes.
    pub record: Option<PathBuf>,
}

impl RunConfig {
    /// `self` with every unset field taken from `other`.
    fn or(self, other: RunConfig) -> RunConfig {
        RunConfig {
            provider: ProviderSpec {
                kind: self.provider.kind.or(other.provider.kind),
                base_url: self.provider.base_url.or(other.provider.base_url),
                model: self.provider.model.or(other.provider.model),
                api_key_env: self.provider.api_key_env.or(other.provider.api_key_env),
                script: self.provider.script.or(other.provider.script),
                max_retries: self.provider.max_retries.or(other.provider.max_retries),
                read_timeout_ms: self
                    .provider
                    .read_timeout_ms
                    .or(other.provider.read_timeout_ms),
                retry_base_ms: self.provider.retry_base_ms.or(other.provider.retry_base_ms),
            },
            max_steps: self.max_steps.or(other.max_steps),
            result_bytes: self.result_bytes.or(other.result_bytes),
            record: self.record.or(other.record),
        }
    }

    /// Where the settings are read from, the workspace's file first; either may be missing.
    /// Both are host files no call may change.
    pub fn files(workspace: &Path) -> Vec<PathBuf> {
        let user = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .map(|c| c.join("reasonix/reasonix.yaml"));
        std::iter::once(workspace.join("reasonix.yaml"))
            .chain(user)
            .collect()
    }

    /// The workspace's file over the user's, either may be missing. An unreadable or invalid
    /// file is an error naming it (and its line).
    pub fn load(workspace: &Path) -> Result<RunConfig, String> {
        let mut config = RunConfig::default();
        for path in RunConfig::files(workspace) {
            if !path.exists() {
                continue;
            }
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let file: RunConfig = yaml_serde::from_str(&text).map_err(|e| {
                let at = e
                    .location()
                    .map(|l| format!(":{}:{}", l.line(), l.column()))
                    .unwrap_or_default();
                format!("{}{at}: {e}", path.display())
            })?;
            config = config.or(file);
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_file_wins_field_by_field() {
        let ws = RunConfig {
            provider: ProviderSpec {
                model: Some("m1".into()),
                ..ProviderSpec::default()
            },
            ..RunConfig::default()
        };
        let user = RunConfig {
            provider: ProviderSpec {
                model: Some("m2".into()),
                base_url: Some("u".into()),
                max_retries: Some(5),
                ..ProviderSpec::default()
            },
            max_steps: Some(3),
            ..RunConfig::default()
        };
        let merged = ws.or(user);
        assert_eq!(merged.provider.model.as_deref(), Some("m1"));
        assert_eq!(merged.provider.base_url.as_deref(), Some("u"));
        assert_eq!(merged.provider.max_retries, Some(5));
        assert_eq!(merged.max_steps, Some(3));
    }

    #[test]
    fn a_misspelt_key_is_an_error_with_its_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("reasonix.yaml"), "max_step: 3\n").unwrap();
        let e = RunConfig::load(dir.path()).unwrap_err();
        assert!(
            e.contains("reasonix.yaml:1:") && e.contains("max_step"),
            "{e}"
        );
    }

    #[test]
    fn retry_settings_are_read_from_the_provider_section() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("reasonix.yaml"),
            "provider:\n  max_retries: 5\n  read_timeout_ms: 1500\n  retry_base_ms: 20\n",
        )
        .unwrap();
        let c = RunConfig::load(dir.path()).unwrap();
        assert_eq!(c.provider.max_retries, Some(5));
        assert_eq!(c.provider.read_timeout_ms, Some(1500));
        assert_eq!(c.provider.retry_base_ms, Some(20));
        std::fs::write(
            dir.path().join("reasonix.yaml"),
            "provider:\n  max_retries: -1\n",
        )
        .unwrap();
        let e = RunConfig::load(dir.path()).unwrap_err();
        assert!(e.contains("reasonix.yaml:2:"), "{e}");
    }
}
