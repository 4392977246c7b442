//! Settings: where they come from, and what a repository's files may decide. This is the one
//! loader every entry point uses (`check`, `run`, `hook claude`, `mcp serve`, `sandbox`,
//! `rewind`, `config`); it runs before any gate is built, and what it decides is what the gate
//! is built from.
//!
//! # Layers
//!
//! Four layers, each with a name and a trust level, as git (system, global, local), Claude Code
//! (managed, user, project) and Codex (trusted projects) have them:
//!
//! 1. **managed** — `/etc/reasonix/reasonix.yaml`, the machine's administrator. Its policies
//!    vote in every gate, beside whatever the other layers choose; nothing removes them. Its
//!    other fields are the base every other layer may override.
//! 2. **user** — `$XDG_CONFIG_HOME/reasonix/reasonix.yaml` (else `~/.config/reasonix/`).
//!    Trusted: the user wrote it.
//! 3. **project** — the workspace's `reasonix.yaml`, its `.mcp.json`, and the policy and data
//!    files they name. Written by whoever wrote the repository, so **not trusted** until the user
//!    trusts each file's exact content (`reasonix trust`, [`trust`]). Untrusted, a project file
//!    may only **narrow**: deny and ask rules, stricter defaults, lower limits, an output path
//!    inside the workspace no other layer sets. Every field that widens the gate or reaches
//!    beyond the workspace is left out and named ([`Settings::left_out`]); the field table
//!    ([`fields::FIELDS`]) says which is which, and the policy layer (`policy::narrow`) what is
//!    left of a policy file. Trusted, a project file is honoured whole and wins over the user's
//!    file field by field, as today.
//! 4. **flags** — the command line, applied by each command over what this loader gives.
//!
//! A field is replaced whole by a higher layer that sets it (`mcp_servers.NAME` per server).
//! Paths a file reads (policies, data, a provider script, a bundle and its key) are relative to
//! the file's own folder; paths Reasonix writes (the record, decision logs, caches) are relative
//! to the workspace.
//!
//! # The threat
//!
//! Cloning a repository and running Reasonix in it must not let the repository choose what the
//! user's machine does: send an environment variable to a URL of its choosing (`token_env`,
//! `api_key_env`), write a host file outside the workspace (`record:`, `decision_logs.file:`),
//! start a process (hooks, MCP servers), or widen a decision (its own allow-everything policy).

pub mod fields;
pub mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::agent::config::RunConfig;
use crate::mcp::ServerSpec;
use crate::policy::{BUILTIN_DEFAULT, Named, Trust, Trusted};
use fields::Rule;

/// The managed layer's folder.
pub const MANAGED_DIR: &str = "/etc/reasonix";
/// In a debug build (the tests'), this variable names another managed folder; a release build
/// reads only [`MANAGED_DIR`].
pub const MANAGED_VARIABLE: &str = "REASONIX_MANAGED_DIR";
/// The settings file's name in every layer's folder.
pub const SETTINGS_FILE: &str = crate::host::SETTINGS_FILE;

/// A layer of settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// The built-in value.
    Default,
    /// `/etc/reasonix/`: the administrator's.
    Managed,
    /// `$XDG_CONFIG_HOME/reasonix/`: the user's.
    User,
    /// The workspace's files: the repository's.
    Project,
    /// The command line.
    Flags,
}

impl Layer {
    /// The layer's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Default => "default",
            Layer::Managed => "managed",
            Layer::User => "user",
            Layer::Project => "project",
            Layer::Flags => "flags",
        }
    }
}

/// Why the settings could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The workspace does not exist.
    #[error("the workspace {path} does not exist")]
    Workspace {
        /// The workspace as given.
        path: String,
        /// Why it cannot be used.
        source: std::io::Error,
    },
    /// The workspace is not a folder.
    #[error("the workspace {0} is not a folder")]
    NotAFolder(String),
    /// A settings file cannot be read or is not valid (file, line and column in the text).
    #[error("{0}")]
    File(String),
    /// The trust store cannot be read.
    #[error(transparent)]
    Trust(#[from] trust::TrustError),
}

/// One settings file a layer reads.
#[derive(Clone, Debug, Serialize)]
pub struct SettingsFile {
    /// Its layer.
    pub layer: Layer,
    /// Where it is.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// For a project file that exists: whether the user trusts its exact content.
    pub trusted: Option<bool>,
    /// The sha256 of its content, when it exists.
    pub sha256: Option<String>,
}

/// One effective value and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct Origin {
    /// The dotted field name.
    pub field: String,
    /// Its value.
    pub value: Json,
    /// The layer that set it.
    pub layer: Layer,
    /// The file that set it (`None` for a built-in value).
    pub file: Option<PathBuf>,
}

/// A field of a project file nobody trusts that was left out, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// The file.
    pub file: PathBuf,
    /// The field (or the part of a policy file).
    pub field: String,
    /// Why it needs the user's trust.
    pub why: String,
}

/// Policy and data files of one layer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Lists {
    /// Policy files and folders (absolute, or `builtin:default`).
    pub policies: Vec<PathBuf>,
    /// Data documents (absolute).
    pub data: Vec<PathBuf>,
}

/// Where the policies in force come from (see [`Settings::policy_sources`]).
#[derive(Clone, Debug, Default)]
pub struct PolicyPlan {
    /// The managed layer's: they always vote.
    pub managed: Lists,
    /// The list that replaces the embedded default: the highest trusted layer that sets
    /// `policies:` (the user's, or a trusted project's), and its layer.
    pub policies: Option<(Layer, Vec<PathBuf>)>,
    /// The same for `data:`.
    pub data: Option<(Layer, Vec<PathBuf>)>,
    /// An untrusted project's lists: added, each file for its narrowing part unless trusted.
    pub added: Lists,
}

/// The policies a gate loads, with who vouches for each file.
pub struct Sources<'a> {
    /// Policy files and folders.
    pub policies: Vec<Named<'a>>,
    /// Data documents.
    pub data: Vec<Named<'a>>,
    /// Whether the command line named them (`--policy`/`--data`).
    pub from_flags: bool,
    /// Whether a layer's `policies:` replaced the embedded default.
    pub from_settings: bool,
}

/// How the project's own files are trusted: per file, by exact content; a file outside the
/// workspace is read only when the project's `reasonix.yaml` that names it is trusted.
#[derive(Clone, Debug)]
pub struct ProjectTrust {
    workspace: PathBuf,
    store: trust::Store,
    settings_trusted: bool,
}

impl ProjectTrust {
    /// Whether the user trusts the project's `reasonix.yaml` as it is now.
    pub fn settings_trusted(&self) -> bool {
        self.settings_trusted
    }

    fn inside(&self, path: &Path) -> bool {
        path.canonicalize()
            .is_ok_and(|p| p.starts_with(&self.workspace))
    }
}

impl Trust for ProjectTrust {
    fn readable(&self, path: &Path) -> Result<(), String> {
        if !path.metadata().is_ok_and(|m| m.is_file()) {
            return Err("it is not a regular file".into());
        }
        if self.settings_trusted || self.inside(path) {
            Ok(())
        } else {
            Err(format!(
                "it lies outside the workspace, and {} that names it is not trusted",
                SETTINGS_FILE
            ))
        }
    }

    fn trusted(&self, path: &Path, text: &str) -> bool {
        if self.inside(path) {
            self.store.trusts(path, text.as_bytes())
        } else {
            self.settings_trusted
        }
    }
}

/// The settings of one workspace, every layer read and merged.
#[derive(Clone, Debug)]
pub struct Settings {
    workspace: PathBuf,
    /// The merged settings (flags not applied).
    pub config: RunConfig,
    origins: Vec<Origin>,
    files: Vec<SettingsFile>,
    left_out: Vec<LeftOut>,
    plan: PolicyPlan,
    mcp_json: Option<(PathBuf, BTreeMap<String, ServerSpec>)>,
    project: ProjectTrust,
    store: PathBuf,
}

/// One layer's file, read and checked.
struct Read {
    layer: Layer,
    path: PathBuf,
    bytes: Vec<u8>,
    value: Map<String, Json>,
}

/// The managed layer's folder.
pub fn managed_dir() -> PathBuf {
    #[cfg(debug_assertions)]
    if let Some(dir) = std::env::var_os(MANAGED_VARIABLE).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    PathBuf::from(MANAGED_DIR)
}

/// The user layer's folder: `$XDG_CONFIG_HOME/reasonix`, else `~/.config/reasonix`.
pub fn user_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|c| c.join("reasonix"))
}

/// Reads one layer's `reasonix.yaml` (`None` when it does not exist): checked as the settings
/// format (unknown keys are errors with their line), with `record: PATH` written as `{path}` and
/// the paths it reads made absolute from its folder.
fn read(layer: Layer, path: PathBuf, workspace: &Path) -> Result<Option<Read>, SettingsError> {
    let Some(bytes) = read_own(layer, &path, workspace)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| SettingsError::File(format!("{}: not UTF-8: {e}", path.display())))?;
    RunConfig::parse(&path, text).map_err(SettingsError::File)?;
    let value: Json = yaml_serde::from_str(text)
        .map_err(|e| SettingsError::File(format!("{}: {e}", path.display())))?;
    let mut value = match value {
        Json::Object(m) => m,
        _ => Map::new(),
    };
    if let Some(Json::String(p)) = value.get("record").cloned() {
        value.insert("record".into(), serde_json::json!({ "path": p }));
    }
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let absolute = |v: &mut Json| {
        if let Json::String(s) = v
            && s != BUILTIN_DEFAULT
        {
            *s = dir.join(&*s).display().to_string();
        }
    };
    for list in ["policies", "data"] {
        if let Some(Json::Array(items)) = value.get_mut(list) {
            items.iter_mut().for_each(absolute);
        }
    }
    if let Some(v) = value.get_mut("provider").and_then(|p| p.get_mut("script")) {
        absolute(v);
    }
    if let Some(bundle) = value.get_mut("bundle") {
        if let Some(v) = bundle.get_mut("path") {
            absolute(v);
        }
        if let Some(v) = bundle
            .get_mut("verification")
            .and_then(|b| b.get_mut("key"))
        {
            absolute(v);
        }
    }
    Ok(Some(Read {
        layer,
        path,
        bytes,
        value,
    }))
}

/// A settings file's bytes (`None`: it does not exist). A project's file must be a regular file
/// of the workspace: one that resolves outside it (a symlink to `~/.aws/credentials`) is not
/// read at all — its text could reach an error message, and from there the model — nor is a
/// FIFO or a device, which would hang or never end.
fn read_own(layer: Layer, path: &Path, workspace: &Path) -> Result<Option<Vec<u8>>, SettingsError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(SettingsError::File(format!("{}: {e}", path.display()))),
    };
    if meta.is_dir() {
        return Err(SettingsError::File(format!(
            "{}: Is a directory; a settings file is a file",
            path.display()
        )));
    }
    if !meta.is_file() {
        return Err(SettingsError::File(format!(
            "{}: not a regular file; a settings file is a file",
            path.display()
        )));
    }
    if layer == Layer::Project
        && let Ok(real) = path.canonicalize()
        && !real.starts_with(workspace)
    {
        return Err(SettingsError::File(format!(
            "{} resolves outside the workspace (to {}), and a repository's settings must be its own files, so it was not read; copy what you want into it, or into your user settings",
            path.display(),
            crate::text::visible(&real.display().to_string())
        )));
    }
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SettingsError::File(format!("{}: {e}", path.display()))),
    }
}

/// The fields of a settings object, each taken whole where the table says (a server, a
/// section without rows below it): `(dotted name, value)`.
fn units(value: &Map<String, Json>) -> Vec<(String, Json)> {
    fn walk(prefix: &str, value: &Json, out: &mut Vec<(String, Json)>) {
        match value {
            Json::Object(m) if fields::holds_rows(prefix) => {
                for (k, v) in m {
                    walk(&format!("{prefix}.{k}"), v, out);
                }
            }
            _ => out.push((prefix.to_owned(), value.clone())),
        }
    }
    let mut out = Vec::new();
    for (k, v) in value {
        walk(k, v, &mut out);
    }
    out
}

/// Puts `value` at the dotted `name` of `root`.
fn put(root: &mut Map<String, Json>, name: &str, value: Json) {
    let mut parts = name.split('.').peekable();
    let mut node = root;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            node.insert(part.to_owned(), value);
            return;
        }
        let next = node
            .entry(part.to_owned())
            .or_insert_with(|| Json::Object(Map::new()));
        if !next.is_object() {
            *next = Json::Object(Map::new());
        }
        let Json::Object(m) = next else {
            return;
        };
        node = m;
    }
}

/// `path` (relative to the workspace, or absolute) when it lies inside the workspace with every
/// symlink on the way followed, and not in its `.git` (whose hooks and config git runs and
/// reads): where an untrusted project file, or the built-in default, may have Reasonix write.
pub fn confined_output(workspace: &Path, path: &Path) -> Result<PathBuf, String> {
    let text = path.to_str().ok_or("the path is not UTF-8")?;
    let r = crate::sandbox::resolve::resolve(text, workspace, None).map_err(|e| e.to_string())?;
    let git = workspace.join(".git");
    for p in [&r.lexical, &r.resolved] {
        if !p.starts_with(workspace) || p == workspace {
            return Err(format!(
                "{} lies outside the workspace{}",
                path.display(),
                if r.symlinks.is_empty() {
                    String::new()
                } else {
                    format!(" (through the symlink {})", r.symlinks[0].display())
                }
            ));
        }
        if p.starts_with(&git) {
            return Err(format!(
                "{} lies in .git, whose hooks and configuration git runs and reads",
                path.display()
            ));
        }
    }
    Ok(r.resolved)
}

/// A number of a JSON value, for the bounds of [`Rule::Lower`] and [`Rule::Higher`].
fn number(v: Option<&Json>) -> Option<u64> {
    match v? {
        Json::Number(n) => n.as_u64(),
        Json::String(s) => s.parse().ok(),
        _ => None,
    }
}

impl Settings {
    /// Reads and merges every layer for `workspace` (see the module doc). A file that does not
    /// parse is an error naming it and its line; a project field nobody trusts is not an error
    /// but left out ([`Settings::left_out`]) — each command decides whether it may go on.
    pub fn load(workspace: &Path) -> Result<Settings, SettingsError> {
        let given = workspace;
        let workspace = workspace
            .canonicalize()
            .map_err(|source| SettingsError::Workspace {
                path: given.display().to_string(),
                source,
            })?;
        if !workspace.is_dir() {
            return Err(SettingsError::NotAFolder(given.display().to_string()));
        }
        let store_path = trust::state_folder().map(|s| s.join(trust::TRUST_FILE));
        // Without a state folder nothing can be trusted: every project file is read untrusted.
        let store = match &store_path {
            Ok(path) => trust::Store::open(path)?,
            Err(_) => trust::Store::default(),
        };
        let managed_path = managed_dir().join(SETTINGS_FILE);
        let user_path = user_dir().map(|d| d.join(SETTINGS_FILE));
        let project_path = workspace.join(SETTINGS_FILE);
        let mcp_path = workspace.join(crate::host::MCP_FILE);

        let mut files = Vec::new();
        let mut layers = Vec::new();
        for (layer, path) in [
            (Layer::Managed, Some(managed_path)),
            (Layer::User, user_path),
            (Layer::Project, Some(project_path.clone())),
        ] {
            let Some(path) = path else { continue };
            let read = read(layer, path.clone(), &workspace)?;
            let trusted = match (&read, layer) {
                (Some(r), Layer::Project) => Some(store.trusts(&r.path, &r.bytes)),
                _ => None,
            };
            files.push(SettingsFile {
                layer,
                path,
                exists: read.is_some(),
                trusted,
                sha256: read.as_ref().map(|r| crate::record::sha256(&r.bytes)),
            });
            layers.extend(read.map(|r| (r, trusted.unwrap_or(true))));
        }
        let settings_trusted = files
            .iter()
            .find(|f| f.layer == Layer::Project)
            .and_then(|f| f.trusted)
            .unwrap_or(false);
        let project = ProjectTrust {
            workspace: workspace.clone(),
            store: store.clone(),
            settings_trusted,
        };

        let mut merged: BTreeMap<String, (Json, Layer, PathBuf)> = BTreeMap::new();
        let mut left_out = Vec::new();
        let mut plan = PolicyPlan::default();
        let mut lists: Vec<Origin> = Vec::new();
        for (read, trusted) in &layers {
            for (name, value) in units(&read.value) {
                let row = fields::row(&name);
                let rule = row.map_or(Rule::Trust, |r| r.rule);
                let why = row.map_or("a field this Reasonix does not know", |r| r.why);
                let paths = || -> Vec<PathBuf> {
                    value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Json::as_str)
                        .map(PathBuf::from)
                        .collect()
                };
                if rule == Rule::Policies {
                    let list = paths();
                    let shown = match (read.layer, trusted, name.as_str()) {
                        (Layer::Managed, _, "policies") => {
                            plan.managed.policies = list;
                            format!("{name} (managed: always in force)")
                        }
                        (Layer::Managed, _, _) => {
                            plan.managed.data = list;
                            format!("{name} (managed: always in force)")
                        }
                        (Layer::Project, false, "policies") => {
                            plan.added.policies = list;
                            format!(
                                "{name} (added: untrusted files count for their narrowing part)"
                            )
                        }
                        (Layer::Project, false, _) => {
                            plan.added.data = list;
                            format!("{name} (added: read only by untrusted Rego modules)")
                        }
                        (layer, _, "policies") => {
                            plan.policies = Some((layer, list));
                            name.clone()
                        }
                        (layer, _, _) => {
                            plan.data = Some((layer, list));
                            name.clone()
                        }
                    };
                    lists.push(Origin {
                        field: shown,
                        value: value.clone(),
                        layer: read.layer,
                        file: Some(read.path.clone()),
                    });
                    continue;
                }
                if *trusted {
                    merged.insert(name, (value, read.layer, read.path.clone()));
                    continue;
                }
                let refuse = |why: String| LeftOut {
                    file: read.path.clone(),
                    field: name.clone(),
                    why,
                };
                let in_force = merged
                    .get(&name)
                    .map(|(v, _, _)| v.clone())
                    .or_else(|| row.and_then(|r| r.default).map(|d| Json::String(d.into())));
                let kept = match rule {
                    Rule::Trust | Rule::Policies => Err(why.to_owned()),
                    Rule::Lower | Rule::Higher => {
                        match (number(Some(&value)), number(in_force.as_ref())) {
                            (Some(v), Some(f)) if (rule == Rule::Lower) == (v <= f) => Ok(()),
                            (Some(_), None) => Ok(()),
                            (_, f) => Err(format!(
                                "{} than the value in force ({}): {why}",
                                if rule == Rule::Lower {
                                    "higher"
                                } else {
                                    "lower"
                                },
                                f.map_or("none".into(), |f| f.to_string())
                            )),
                        }
                    }
                    Rule::Output => match (merged.get(&name), value.as_str()) {
                        (Some((_, layer, _)), _) => Err(format!(
                            "set by the {} settings, which a project file nobody trusts cannot move",
                            layer.as_str()
                        )),
                        (None, Some(p)) => confined_output(&workspace, Path::new(p))
                            .map_err(|e| format!("{e}: {why}"))
                            .and_then(|real| {
                                // Reasonix's own folder: elsewhere in the workspace Reasonix
                                // would append to a file of the repository's choosing (a CI
                                // workflow, a makefile) that policy protects from a write.
                                if real.starts_with(workspace.join(crate::host::STATE_FOLDER)) {
                                    Ok(())
                                } else {
                                    Err(format!(
                                        "{p} lies outside the workspace's {}/ folder, where a project file nobody trusts may put what Reasonix writes: {why}",
                                        crate::host::STATE_FOLDER
                                    ))
                                }
                            }),
                        (None, None) => Err(why.to_owned()),
                    },
                };
                match kept {
                    Ok(()) => {
                        merged.insert(name, (value, read.layer, read.path.clone()));
                    }
                    Err(why) => left_out.push(refuse(why)),
                }
            }
        }

        // `.mcp.json`: every server starts a program or reaches a URL.
        let mut mcp_json = None;
        match read_own(Layer::Project, &mcp_path, &workspace)? {
            Some(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let origin = mcp_path.display().to_string();
                let servers = crate::mcp::config::parse_mcp_json(&origin, &text)
                    .map_err(SettingsError::File)?;
                let trusted = store.trusts(&mcp_path, &bytes);
                files.push(SettingsFile {
                    layer: Layer::Project,
                    path: mcp_path.clone(),
                    exists: true,
                    trusted: Some(trusted),
                    sha256: Some(crate::record::sha256(&bytes)),
                });
                if trusted {
                    mcp_json = Some((mcp_path.clone(), servers));
                } else {
                    for name in servers.keys() {
                        left_out.push(LeftOut {
                            file: mcp_path.clone(),
                            field: format!("mcpServers.{name}"),
                            why: fields::row("mcpServers.x").map_or("", |r| r.why).to_owned(),
                        });
                    }
                }
            }
            None => files.push(SettingsFile {
                layer: Layer::Project,
                path: mcp_path.clone(),
                exists: false,
                trusted: None,
                sha256: None,
            }),
        }

        let mut root = Map::new();
        let mut origins = Vec::new();
        for (name, (value, layer, file)) in &merged {
            put(&mut root, name, value.clone());
            origins.push(Origin {
                field: name.clone(),
                value: value.clone(),
                layer: *layer,
                file: Some(file.clone()),
            });
        }
        let mut listed = Vec::new();
        if plan.policies.is_some() {
            listed.push("policies");
        }
        if plan.data.is_some() {
            listed.push("data");
        }
        origins.extend(lists);
        for row in fields::FIELDS {
            if let Some(default) = row.default
                && !row.name.contains('*')
                && !merged.contains_key(row.name)
                && !listed.contains(&row.name)
            {
                origins.push(Origin {
                    field: row.name.to_owned(),
                    value: Json::String(default.to_owned()),
                    layer: Layer::Default,
                    file: None,
                });
            }
        }
        origins.sort_by(|a, b| a.field.cmp(&b.field));
        let config: RunConfig = serde_json::from_value(Json::Object(root))
            .map_err(|e| SettingsError::File(format!("the merged settings are not valid: {e}")))?;
        // An untrusted project's lists: each entry outside the workspace is left out unread by
        // the policy loader (`ProjectTrust::readable`).
        Ok(Settings {
            workspace,
            config,
            origins,
            files,
            left_out,
            plan,
            mcp_json,
            project,
            store: store_path.unwrap_or_default(),
        })
    }

    /// The workspace, canonical.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Every effective value with its layer and file, by field name (built-in values
    /// included, policies and data as each layer wrote them).
    pub fn origins(&self) -> &[Origin] {
        &self.origins
    }

    /// The layer a field's effective value came from ([`Layer::Default`] when no file sets
    /// it).
    pub fn layer_of(&self, field: &str) -> Layer {
        self.origins
            .iter()
            .find(|o| o.field == field)
            .map_or(Layer::Default, |o| o.layer)
    }

    /// The settings files of every layer, read or not, with the project files' trust.
    pub fn files(&self) -> &[SettingsFile] {
        &self.files
    }

    /// The fields of untrusted project files that were left out, and why.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// Where the policies come from.
    pub fn plan(&self) -> &PolicyPlan {
        &self.plan
    }

    /// The servers of `.mcp.json`, when it exists and is trusted.
    pub fn mcp_json(&self) -> Option<(&Path, &BTreeMap<String, ServerSpec>)> {
        self.mcp_json.as_ref().map(|(p, s)| (p.as_path(), s))
    }

    /// How the project's policy and data files are trusted.
    pub fn project_trust(&self) -> &ProjectTrust {
        &self.project
    }

    /// The trust store's path (empty when there is no state folder).
    pub fn trust_store(&self) -> &Path {
        &self.store
    }

    /// The settings files of every layer and the trust store: host files no call may change.
    pub fn host_files(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.files.iter().map(|f| f.path.clone()).collect();
        if !self.store.as_os_str().is_empty() {
            out.push(self.store.clone());
        }
        out
    }

    /// The project's own files as `reasonix trust` trusts them all: its `reasonix.yaml`, its
    /// `.mcp.json`, and every policy and data file its `reasonix.yaml` names (folders walked
    /// as the loader walks them), those that exist.
    pub fn project_files(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .files
            .iter()
            .filter(|f| f.layer == Layer::Project && f.exists)
            .map(|f| f.path.clone())
            .collect();
        let project_lists = [
            &self.plan.added.policies,
            &self.plan.added.data,
            self.plan
                .policies
                .as_ref()
                .filter(|(l, _)| *l == Layer::Project)
                .map(|(_, p)| p)
                .unwrap_or(&Vec::new()),
            self.plan
                .data
                .as_ref()
                .filter(|(l, _)| *l == Layer::Project)
                .map(|(_, p)| p)
                .unwrap_or(&Vec::new()),
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>();
        for p in project_lists {
            if p.as_os_str() == BUILTIN_DEFAULT {
                continue;
            }
            for f in crate::policy::policy_files_of(&p) {
                if !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        out
    }

    /// The policy and data files a gate loads, with who vouches for each: the managed layer's
    /// always; then `--policy`/`--data` when given, else the highest trusted layer's lists
    /// (else the embedded default) and an untrusted project's lists (narrowing part only).
    pub fn policy_sources<'a>(&'a self, policies: &[PathBuf], data: &[PathBuf]) -> Sources<'a> {
        let trusted = |p: &PathBuf| Named::trusted(p.clone());
        let by_layer = |layer: Layer, p: &PathBuf| -> Named<'a> {
            match layer {
                Layer::Project => Named {
                    path: p.clone(),
                    trust: &self.project as &dyn Trust,
                },
                _ => Named {
                    path: p.clone(),
                    trust: &Trusted,
                },
            }
        };
        let project = |p: &PathBuf| by_layer(Layer::Project, p);
        let mut out = Sources {
            policies: self.plan.managed.policies.iter().map(trusted).collect(),
            data: self.plan.managed.data.iter().map(trusted).collect(),
            from_flags: !policies.is_empty(),
            from_settings: false,
        };
        if !policies.is_empty() {
            out.policies.extend(policies.iter().map(trusted));
        } else {
            match &self.plan.policies {
                Some((layer, list)) => {
                    out.from_settings = true;
                    out.policies
                        .extend(list.iter().map(|p| by_layer(*layer, p)));
                }
                None => out
                    .policies
                    .push(Named::trusted(PathBuf::from(BUILTIN_DEFAULT))),
            }
            out.policies
                .extend(self.plan.added.policies.iter().map(project));
        }
        if !data.is_empty() {
            out.data.extend(data.iter().map(trusted));
        } else {
            if let Some((layer, list)) = &self.plan.data {
                out.data.extend(list.iter().map(|p| by_layer(*layer, p)));
            }
            out.data.extend(self.plan.added.data.iter().map(project));
        }
        out
    }
}

/// The one message that names every field left out of untrusted project files, and the command
/// that trusts them; `None` when nothing was left out. One line per file; what the repository
/// wrote in it (file names, fields) is made visible ([`crate::text::visible`]), so the lines are
/// Reasonix's own.
pub fn untrusted_message(workspace: &Path, left_out: &[LeftOut]) -> Option<String> {
    if left_out.is_empty() {
        return None;
    }
    let visible = |s: &str| crate::text::visible(s).into_owned();
    let mut by_file: BTreeMap<&Path, Vec<String>> = BTreeMap::new();
    for l in left_out {
        by_file.entry(l.file.as_path()).or_default().push(format!(
            "{} ({})",
            visible(&l.field),
            visible(&l.why)
        ));
    }
    let mut text = String::from(
        "the project's files ask for what only you may allow, and you have not trusted their exact content:",
    );
    for (file, fields) in by_file {
        text.push_str(&format!(
            "\n  {}: {}",
            visible(&file.display().to_string()),
            fields.join("; ")
        ));
    }
    text.push_str(&format!(
        "\nReview them, then run `reasonix trust --workspace {}` (or `reasonix trust FILE`); until then only what narrows the gate counts",
        crate::text::visible(&workspace.display().to_string())
    ));
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_path_stays_inside_the_workspace_with_every_symlink_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("logs")).unwrap();
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::os::unix::fs::symlink(root.join("home"), ws.join("out")).unwrap();
        std::os::unix::fs::symlink("../../home/.bashrc", ws.join("logs/r.jsonl")).unwrap();
        for (path, ok) in [
            ("logs/record.jsonl", true),
            (".reasonix/record.jsonl", true),
            ("out/record.jsonl", false),
            ("logs/r.jsonl", false),
            ("../x.jsonl", false),
            ("/etc/profile", false),
            (".git/hooks/pre-commit", false),
            ("~/.bashrc", false),
        ] {
            assert_eq!(
                confined_output(&ws, Path::new(path)).is_ok(),
                ok,
                "{path}: {:?}",
                confined_output(&ws, Path::new(path))
            );
        }
    }

    #[test]
    fn fields_are_taken_whole_where_the_table_says_and_put_back_by_name() {
        let value: Json = serde_json::json!({
            "provider": {"model": "m", "base_url": "u"},
            "mcp_servers": {"a": {"command": "x", "args": ["1"]}},
            "bundle": {"url": "https://b"},
            "max_steps": 3
        });
        let Json::Object(map) = value else {
            unreachable!()
        };
        let mut names: Vec<String> = units(&map).into_iter().map(|(n, _)| n).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "bundle",
                "max_steps",
                "mcp_servers.a",
                "provider.base_url",
                "provider.model"
            ]
        );
        let mut root = Map::new();
        for (name, value) in units(&map) {
            put(&mut root, &name, value);
        }
        assert_eq!(Json::Object(root), Json::Object(map));
    }

    #[test]
    fn the_untrusted_message_names_each_field_per_file_and_the_command() {
        let left = [
            LeftOut {
                file: "/w/reasonix.yaml".into(),
                field: "hooks.pre_tool".into(),
                why: "starts programs".into(),
            },
            LeftOut {
                file: "/w/reasonix.yaml".into(),
                field: "record.path\u{1b}[2J".into(),
                why: "w".into(),
            },
        ];
        let m = untrusted_message(Path::new("/w"), &left).unwrap();
        assert!(
            m.contains(
                "/w/reasonix.yaml: hooks.pre_tool (starts programs); record.path\\x1b[2J (w)"
            ),
            "{m}"
        );
        assert!(m.contains("reasonix trust --workspace /w"), "{m}");
        assert!(untrusted_message(Path::new("/w"), &[]).is_none());
    }
}
