//! The `mcp:` section of a policy: what an MCP tool does, **declared by policy**, never
//! borrowed from the server's own hints. The classify stage asks it about every call of a tool
//! an MCP server offers (`mcp__SERVER__TOOL`).
//!
//! ```yaml
//! mcp:
//!   classify:
//!     - tools: ["mcp__files__read_*", "mcp__files__list_*"]
//!       effects: [read]
//!       paths: {path: target, paths: target}   # argument name -> role
//!     - tools: ["mcp__files__move_file"]
//!       effects: [write, delete]
//!       paths: {source: source, destination: destination}
//! ```
//!
//! 1. Without a matching entry, an MCP call's effects are `exec` and `network`, it is not
//!    read-only, and it touches no known path ([`McpClass::undeclared`]).
//! 2. Every matching entry, in every file, counts: effects add up and declared path arguments
//!    add up. So a second file can only add to what a call is said to do, never take away.
//! 3. A call is read-only only when its declared effects are exactly `read`.
//! 4. A declared argument must hold a string or a list of strings when present (else the call
//!    is `invalid`); each is a path with that role, read when the effects are only `read` or
//!    `exec`/`network`, written when they include `write` or `delete`.
//!
//! Roles are `target`, `source` and `destination`. A glob that cannot name an MCP tool (one not
//! starting with `mcp__` or a wildcard) is refused at load: it would declare nothing.

use std::collections::{BTreeMap, BTreeSet};

use globset::{Glob as GlobPattern, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::vocab::{Effect, PathRole};

/// The `mcp:` section as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpSpec {
    #[serde(default)]
    pub classify: Vec<ClassifySpec>,
}

/// One `mcp.classify` entry as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, try_from = "ClassifyWritten")]
pub(crate) struct ClassifySpec {
    pub tools: Vec<String>,
    pub effects: BTreeSet<Effect>,
    pub paths: BTreeMap<String, PathRole>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifyWritten {
    tools: Vec<String>,
    effects: Vec<Effect>,
    #[serde(default)]
    paths: BTreeMap<String, String>,
}

impl TryFrom<ClassifyWritten> for ClassifySpec {
    type Error = String;
    fn try_from(w: ClassifyWritten) -> Result<ClassifySpec, String> {
        if w.tools.is_empty() {
            return Err("mcp.classify: `tools` is empty; name the MCP tools (mcp__SERVER__TOOL globs) this entry declares".into());
        }
        if w.effects.is_empty() {
            return Err("mcp.classify: `effects` is empty; an MCP tool does something: list read, write, delete, exec or network".into());
        }
        for t in &w.tools {
            GlobPattern::new(t).map_err(|e| format!("mcp.classify: bad glob {t:?}: {e}"))?;
            if !(t.starts_with("mcp__") || t.starts_with('*') || t.starts_with('?')) {
                return Err(format!(
                    "mcp.classify: {t:?} can never match an MCP tool; MCP tools are named mcp__SERVER__TOOL"
                ));
            }
        }
        let mut paths = BTreeMap::new();
        for (arg, role) in w.paths {
            let role = match role.as_str() {
                "target" => PathRole::Target,
                "source" => PathRole::Source,
                "destination" => PathRole::Destination,
                other => {
                    return Err(format!(
                        "mcp.classify: argument {arg:?} has role {other:?}; a declared path is a target, a source or a destination"
                    ));
                }
            };
            paths.insert(arg, role);
        }
        Ok(ClassifySpec {
            tools: w.tools,
            effects: w.effects.into_iter().collect(),
            paths,
        })
    }
}

/// What policy declares an MCP tool does (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpClass {
    /// The declared effects.
    pub effects: BTreeSet<Effect>,
    /// Argument name → the role of the path(s) it holds.
    pub paths: BTreeMap<String, PathRole>,
    /// Whether some entry declared the tool at all.
    pub declared: bool,
}

impl McpClass {
    /// The class of a tool no entry declares: `exec` and `network`, no path.
    pub fn undeclared() -> McpClass {
        McpClass {
            effects: BTreeSet::from([Effect::Exec, Effect::Network]),
            paths: BTreeMap::new(),
            declared: false,
        }
    }

    /// Read-only only when the declared effects are exactly `read`.
    pub fn read_only(&self) -> bool {
        self.effects.len() == 1 && self.effects.contains(&Effect::Read)
    }
}

/// Every `mcp.classify` entry of a policy set, compiled into one glob set.
#[derive(Clone, Debug)]
pub struct McpClassifier {
    set: GlobSet,
    /// Per glob, the entry it belongs to.
    owner: Vec<usize>,
    entries: Vec<ClassifySpec>,
}

impl McpClassifier {
    /// Compiles the entries; the globs were checked when read.
    pub(crate) fn new(entries: Vec<ClassifySpec>) -> Result<McpClassifier, String> {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            for t in &e.tools {
                builder.add(GlobPattern::new(t).map_err(|e| e.to_string())?);
                owner.push(i);
            }
        }
        Ok(McpClassifier {
            set: builder.build().map_err(|e| e.to_string())?,
            owner,
            entries,
        })
    }

    /// A classifier with no entry: every MCP tool is undeclared.
    pub(crate) fn empty() -> McpClassifier {
        McpClassifier {
            set: GlobSet::empty(),
            owner: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// What policy declares the MCP tool `name` does.
    pub fn classify(&self, name: &str) -> McpClass {
        let mut hit = BTreeSet::new();
        for i in self.set.matches(name) {
            hit.insert(self.owner[i]);
        }
        if hit.is_empty() {
            return McpClass::undeclared();
        }
        let mut class = McpClass {
            effects: BTreeSet::new(),
            paths: BTreeMap::new(),
            declared: true,
        };
        for i in hit {
            let e = &self.entries[i];
            class.effects.extend(e.effects.iter().copied());
            for (arg, role) in &e.paths {
                // Two entries giving one argument two roles: the first keeps it. The access
                // (read or write) comes from the merged effects either way.
                class.paths.entry(arg.clone()).or_insert(*role);
            }
        }
        class
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classifier(yaml: &str) -> Result<McpClassifier, String> {
        let spec: McpSpec = yaml_serde::from_str(yaml).map_err(|e| e.to_string())?;
        McpClassifier::new(spec.classify)
    }

    #[test]
    fn an_undeclared_tool_execs_and_talks_to_the_network() {
        let c = classifier("classify: []").unwrap();
        let class = c.classify("mcp__files__read_text_file");
        assert_eq!(class, McpClass::undeclared());
        assert!(!class.read_only());
    }

    #[test]
    fn matching_entries_add_up_and_only_pure_reads_are_read_only() {
        let c = classifier(
            "classify:\n  - tools: [\"mcp__f__*\"]\n    effects: [read]\n    paths: {path: target}\n  - tools: [\"mcp__f__write_*\"]\n    effects: [write]\n",
        )
        .unwrap();
        let read = c.classify("mcp__f__read_file");
        assert!(read.read_only() && read.declared);
        let write = c.classify("mcp__f__write_file");
        assert_eq!(write.effects, BTreeSet::from([Effect::Read, Effect::Write]));
        assert!(!write.read_only());
        assert_eq!(write.paths["path"], PathRole::Target);
    }

    #[test]
    fn mistakes_in_the_section_are_errors_that_say_what_to_do() {
        for (yaml, needle) in [
            (
                "classify:\n  - tools: [bash]\n    effects: [read]\n",
                "can never match",
            ),
            (
                "classify:\n  - tools: []\n    effects: [read]\n",
                "`tools` is empty",
            ),
            (
                "classify:\n  - tools: [\"mcp__a__b\"]\n    effects: []\n",
                "`effects` is empty",
            ),
            (
                "classify:\n  - tools: [\"mcp__a__b\"]\n    effects: [read]\n    paths: {p: redirect}\n",
                "a target, a source or a destination",
            ),
            (
                "classify:\n  - tools: [\"mcp__a__b\"]\n    effects: [teleport]\n",
                "unknown variant",
            ),
            (
                "classify:\n  - tools: [\"mcp__a__b\"]\n    effect: [read]\n",
                "unknown field",
            ),
            ("clasify: []\n", "unknown field"),
            (
                "classify:\n  - tools: [\"mcp__{a\"]\n    effects: [read]\n",
                "bad glob",
            ),
        ] {
            let e = classifier(yaml).unwrap_err();
            assert!(e.contains(needle), "{yaml:?}: {e}");
        }
    }
}
