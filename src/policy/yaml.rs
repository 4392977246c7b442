//! The YAML policy format (docs/DESIGN.md), read with `yaml_serde`, the maintained serde_yaml fork.
//!
//! Everything a rule says is checked while it is read, so an error carries the file, line and
//! column `yaml_serde` reports: unknown keys (a misspelt `path:` would otherwise widen a deny
//! rule to every call), empty lists, bad globs, unknown decisions or effects, a version other
//! than 1. One bad rule fails the whole load: a gate never runs on half a policy.

use std::fmt;

use serde::Deserialize;

use super::Decision;
use super::commands::{ExactSpec, PatternSpec};
use crate::vocab::Effect;

/// One policy file as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PolicyFile {
    #[allow(dead_code)] // Checked while reading; kept to document the format.
    pub version: Version,
    #[serde(default)]
    pub defaults: DefaultsSpec,
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    #[serde(default)]
    pub sandbox: Option<crate::sandbox::jail::config::SandboxSpec>,
    /// What MCP tools do, declared (`policy::mcp`).
    #[serde(default)]
    pub mcp: Option<super::mcp::McpSpec>,
}

impl PolicyFile {
    /// A file that says nothing (`version: 1` alone).
    pub(crate) fn empty() -> PolicyFile {
        PolicyFile {
            version: Version,
            defaults: DefaultsSpec::default(),
            rules: Vec::new(),
            sandbox: None,
            mcp: None,
        }
    }
}

/// `version: 1`, the only version there is.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(try_from = "u64")]
pub(crate) struct Version;

impl TryFrom<u64> for Version {
    type Error = String;
    fn try_from(v: u64) -> Result<Version, String> {
        if v == 1 {
            Ok(Version)
        } else {
            Err(format!(
                "unsupported policy version {v}; this Reasonix reads version: 1"
            ))
        }
    }
}

/// The `defaults:` section; unset fields take the merged or built-in value.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DefaultsSpec {
    pub read_only: Option<Decision>,
    pub writer: Option<Decision>,
    pub unattended: Option<Unattended>,
}

/// What `ask` becomes when no person can answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unattended {
    /// Run it anyway (only for trusted, throwaway environments).
    Allow,
    /// Block it.
    Deny,
}

/// One rule as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleSpec {
    pub id: Option<RuleId>,
    pub decision: Decision,
    #[serde(default, deserialize_with = "non_empty")]
    pub tools: Option<Vec<Glob>>,
    #[serde(default, deserialize_with = "non_empty")]
    pub paths: Option<Vec<PathGlob>>,
    #[serde(default, deserialize_with = "non_empty")]
    pub effects: Option<Vec<Effect>>,
    #[serde(default, deserialize_with = "non_empty")]
    pub commands: Option<Vec<PatternSpec>>,
    #[serde(default, deserialize_with = "non_empty")]
    pub exact: Option<Vec<ExactSpec>>,
    /// Globs on the names of the variables a call sets in the environment of a process it
    /// starts (an MCP server's `env`).
    #[serde(default, deserialize_with = "non_empty")]
    pub env: Option<Vec<Glob>>,
    pub except: Option<ExceptSpec>,
    pub reason: Option<String>,
}

/// A rule's `except:`: the calls it does not apply to. Its conditions must all hold, matched
/// the way that keeps the gate closed: the except of a deny or ask rule must *cover* the call,
/// as an allow rule does (every path, every simple command), for the rule to step aside; the
/// except of an allow rule withdraws the allow when it *matches* any part, as a deny rule does.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "ExceptWritten")]
pub(crate) struct ExceptSpec {
    pub tools: Option<Vec<Glob>>,
    pub paths: Option<Vec<PathGlob>>,
    pub commands: Option<Vec<PatternSpec>>,
}

/// `except:` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExceptWritten {
    #[serde(default, deserialize_with = "non_empty")]
    tools: Option<Vec<Glob>>,
    #[serde(default, deserialize_with = "non_empty")]
    paths: Option<Vec<PathGlob>>,
    #[serde(default, deserialize_with = "non_empty")]
    commands: Option<Vec<PatternSpec>>,
}

impl TryFrom<ExceptWritten> for ExceptSpec {
    type Error = String;
    fn try_from(w: ExceptWritten) -> Result<ExceptSpec, String> {
        if w.tools.is_none() && w.paths.is_none() && w.commands.is_none() {
            return Err(
                "an empty except would exempt every call; give it tools, paths or commands, or remove it"
                    .into(),
            );
        }
        Ok(ExceptSpec {
            tools: w.tools,
            paths: w.paths,
            commands: w.commands,
        })
    }
}

/// A rule id: letters, digits, `-`, `_`, `.`, `/`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct RuleId(pub String);

impl TryFrom<String> for RuleId {
    type Error = String;
    fn try_from(s: String) -> Result<RuleId, String> {
        let ok = !s.is_empty()
            && s.len() <= 128
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'));
        if ok {
            Ok(RuleId(s))
        } else {
            Err(format!(
                "rule id {s:?} is not allowed; use 1 to 128 of a-z A-Z 0-9 - _ . /"
            ))
        }
    }
}

/// A glob on a tool name.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct Glob(pub String);

impl TryFrom<String> for Glob {
    type Error = String;
    fn try_from(s: String) -> Result<Glob, String> {
        globset::Glob::new(&s).map_err(|e| format!("bad glob {s:?}: {e}"))?;
        Ok(Glob(s))
    }
}

/// A glob on a path: absolute (`/etc/**`), in the home folder (`~/.ssh/**`), anchored at the
/// workspace when it holds a `/` (`src/*.rs`), or matched at any depth when it does not
/// (`*.pem`, `.env`), as in `.gitignore`. A trailing `/` means everything below.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct PathGlob(pub String);

impl TryFrom<String> for PathGlob {
    type Error = String;
    fn try_from(s: String) -> Result<PathGlob, String> {
        if s.is_empty() {
            return Err("an empty path glob matches nothing; remove it".into());
        }
        if s.starts_with('~') && s != "~" && !s.starts_with("~/") {
            return Err(format!(
                "path glob {s:?}: only `~` and `~/...` are expanded; write the other user's home as an absolute path"
            ));
        }
        super::pattern::path_glob(&s).map_err(|e| format!("bad path glob {s:?}: {e}"))?;
        Ok(PathGlob(s))
    }
}

/// `Option<Vec<T>>` that refuses `[]`: an empty list would match nothing (or, worse, be read as
/// "no condition"), and neither is what anybody means by writing it.
fn non_empty<'de, D, T>(de: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let items = Vec::<T>::deserialize(de)?;
    if items.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty list matches nothing; remove the key to match everything",
        ));
    }
    Ok(Some(items))
}

/// Parses one policy file's text.
pub(crate) fn parse(text: &str) -> Result<PolicyFile, SyntaxError> {
    if text.trim().is_empty() {
        return Err(SyntaxError {
            line: None,
            column: None,
            message: "the file is empty; a policy starts with `version: 1`".into(),
        });
    }
    yaml_serde::from_str(text).map_err(|e| {
        let location = e.location();
        SyntaxError {
            line: location.as_ref().map(|l| l.line()),
            column: location.as_ref().map(|l| l.column()),
            message: strip_location(&e.to_string()),
        }
    })
}

/// A parse error with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// `yaml_serde` appends " at line L column C"; the location is reported separately.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> SyntaxError {
        parse(text).unwrap_err()
    }

    #[test]
    fn the_documented_example_parses() {
        let text = r#"
version: 1
defaults:
  read_only: allow
  writer: ask
  unattended: deny
rules:
  - id: no-secrets
    decision: deny
    tools: ["*"]
    paths: ["**/.env", "~/.ssh/**"]
    reason: secrets stay out of reach
  - decision: ask
    effects: [network]
"#;
        let file = parse(text).unwrap();
        assert_eq!(file.rules.len(), 2);
        assert_eq!(file.defaults.unattended, Some(Unattended::Deny));
    }

    #[test]
    fn a_misspelt_key_is_an_error_with_its_line() {
        let e = err("version: 1\nrules:\n  - decision: deny\n    path: [\"**/.env\"]\n");
        assert_eq!(e.line, Some(4), "{e:?}");
        assert!(e.message.contains("unknown field `path`"), "{e:?}");
    }

    #[test]
    fn a_bad_glob_is_an_error_with_its_line() {
        let e = err("version: 1\nrules:\n  - decision: deny\n    paths:\n      - \"a/{b\"\n");
        assert_eq!(e.line, Some(5), "{e:?}");
        assert!(e.message.contains("bad path glob"), "{e:?}");
    }

    #[test]
    fn other_mistakes_are_errors() {
        let cases = [
            ("version: 2\n", "unsupported policy version 2"),
            ("rules: []\n", "missing field `version`"),
            (
                "version: 1\nrules:\n  - decision: maybe\n",
                "unknown variant `maybe`",
            ),
            (
                "version: 1\nrules:\n  - decision: deny\n    effects: [teleport]\n",
                "unknown variant `teleport`",
            ),
            (
                "version: 1\nrules:\n  - decision: deny\n    tools: []\n",
                "empty list",
            ),
            (
                "version: 1\nrules:\n  - decision: deny\n    paths: [\"~bob/x\"]\n",
                "only `~`",
            ),
            (
                "version: 1\nrules:\n  - id: \"has space\"\n    decision: deny\n",
                "rule id",
            ),
            (
                "version: 1\ndefaults:\n  unattended: ask\n",
                "unknown variant `ask`",
            ),
            (
                "version: 1\ndefaults:\n  writers: ask\n",
                "unknown field `writers`",
            ),
            ("   \n", "the file is empty"),
            (
                "version: 1\nrules: [\n  - decision: deny\n",
                "did not find expected",
            ),
            (
                "version: 1\nrules:\n  - decision: deny\n    reason: [a]\n",
                "expected a string",
            ),
            (
                "version: 1\nrules:\n  - decision: deny\n    except: {}\n",
                "an empty except",
            ),
            (
                "version: 1\nrules:\n  - decision: deny\n    except: {effects: [read]}\n",
                "unknown field `effects`",
            ),
            (
                "version: 1\nrules:\n  - decision: deny\n    except: {paths: []}\n",
                "empty list",
            ),
        ];
        for (text, needle) in cases {
            let e = err(text);
            assert!(e.message.contains(needle), "{text:?}: {e:?}");
        }
    }
}
