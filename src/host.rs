//! The host's own files: the execution record and its folder `.reasonix/`, the record's state
//! folder beside it (`<record>.d/`, where the rewind store keeps what file tools replaced), the
//! run's settings (`reasonix.yaml`) and every policy and data file in force. No call may change them, whatever
//! the policy says — otherwise a model could rewrite its own record, or the settings and policies
//! of the next run. The gate's confine stage refuses (stage `sandbox`):
//!
//! 1. a write, move or delete of a host file or of anything below a host folder;
//! 2. a write, move or delete of any folder that holds one (moving `policies/` away, writing a
//!    new policy there and moving it back is refused at the first step);
//! 3. a bash command that is not read-only and names a host file, or a folder that holds one —
//!    except the workspace itself: a command such as `git add .` names it without meaning the
//!    host's files, and the jail, not the analysis, keeps a whole-workspace command away from
//!    them.
//!
//! Every entry point builds its gate through the same [`crate::gate::GateBuilder`], which cannot
//! build without a [`HostFiles`]: `reasonix check` answers exactly what `reasonix run` would.

use std::path::{Path, PathBuf};

use crate::sandbox::resolve::resolve;

/// The folder of Reasonix's own state in a workspace.
pub const STATE_FOLDER: &str = ".reasonix";
/// The record a run writes when none is configured, relative to the workspace.
pub const DEFAULT_RECORD: &str = ".reasonix/record.jsonl";
/// The run's settings file in a workspace.
pub const SETTINGS_FILE: &str = "reasonix.yaml";
/// What names a record's state folder: the record's own name with this added.
pub const STATE_SUFFIX: &str = ".d";

/// The state folder of the record at `record`: `<record>.d` beside it (`record.jsonl.d`). Each
/// record has its own, so the state of two records never mixes, and it is a host file wherever
/// the record lives.
pub fn state_folder(record: &Path) -> PathBuf {
    let mut name = record.as_os_str().to_owned();
    name.push(STATE_SUFFIX);
    PathBuf::from(name)
}

/// The workspace's MCP servers (`.mcp.json`): a call that could change it could add a server.
pub const MCP_FILE: &str = ".mcp.json";

/// The host's own files of one workspace, as given (absolute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFiles {
    record: PathBuf,
    state: PathBuf,
    files: Vec<PathBuf>,
}

impl HostFiles {
    /// The files every workspace has: its `reasonix.yaml`, its `.reasonix/` folder, and the
    /// record at `.reasonix/record.jsonl` with its state folder.
    pub fn for_workspace(workspace: &Path) -> HostFiles {
        let record = workspace.join(DEFAULT_RECORD);
        HostFiles {
            state: state_folder(&record),
            record,
            files: vec![
                workspace.join(SETTINGS_FILE),
                workspace.join(STATE_FOLDER),
                workspace.join(MCP_FILE),
            ],
        }
    }

    /// The record goes to `record` (absolute) instead of the default; its state folder moves
    /// with it.
    pub fn with_record(mut self, record: PathBuf) -> HostFiles {
        self.state = state_folder(&record);
        self.record = record;
        self
    }

    /// More files (absolute): the policy and data files in force, other settings files.
    pub fn with_files(mut self, files: impl IntoIterator<Item = PathBuf>) -> HostFiles {
        for f in files {
            if !self.files.contains(&f) {
                self.files.push(f);
            }
        }
        self
    }

    /// Where the execution record goes.
    pub fn record(&self) -> &Path {
        &self.record
    }

    /// The record's state folder ([`state_folder`]).
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// Every protected file and folder, the record and its state folder included.
    pub fn all(&self) -> impl Iterator<Item = &Path> {
        [self.record.as_path(), self.state.as_path()]
            .into_iter()
            .chain(self.files.iter().map(PathBuf::as_path))
    }

    /// Resolves every file (`~`, `..`, symlinks) for a workspace, so they compare with the
    /// resolved forms of a call's paths. A file that cannot be resolved is kept as given.
    pub(crate) fn resolve(&self, workspace: &Path, home: Option<&Path>) -> Protected {
        let mut paths: Vec<PathBuf> = Vec::new();
        for p in self.all() {
            let resolved = p
                .to_str()
                .and_then(|written| resolve(written, workspace, home).ok())
                .map_or_else(|| p.to_path_buf(), |r| r.resolved);
            for form in [p.to_path_buf(), resolved] {
                if !paths.contains(&form) {
                    paths.push(form);
                }
            }
        }
        Protected {
            paths,
            workspace: workspace.to_path_buf(),
        }
    }
}

/// The host's files, resolved for one gate.
#[derive(Clone, Debug)]
pub(crate) struct Protected {
    paths: Vec<PathBuf>,
    workspace: PathBuf,
}

/// How a call reaches a path: what the host-file check must refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// A file tool writes, moves or deletes it.
    Changes,
    /// A bash command that may change things names it.
    Names,
}

impl Protected {
    /// Why changing `form` would touch the host's files, if it would.
    pub fn conflict(&self, form: &Path, reach: Reach) -> Option<String> {
        for p in &self.paths {
            if form.starts_with(p) {
                return Some(format!(
                    "{} is the host's own file (the execution record, the run's settings or a policy); no call may change it",
                    form.display()
                ));
            }
            let exempt = reach == Reach::Names && form == self.workspace;
            if p.starts_with(form) && !exempt {
                return Some(format!(
                    "{} holds the host's own file {}; no call may move, remove or change it",
                    form.display(),
                    p.display()
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protected() -> Protected {
        let ws = Path::new("/ws");
        HostFiles::for_workspace(ws)
            .with_files([PathBuf::from("/ws/policies/p.yaml")])
            .resolve(ws, None)
    }

    #[test]
    fn host_files_and_what_lies_below_them_are_refused() {
        let p = protected();
        for form in [
            "/ws/reasonix.yaml",
            "/ws/.reasonix",
            "/ws/.reasonix/record.jsonl",
            "/ws/.reasonix/new",
            "/ws/.reasonix/record.jsonl.d/blobs/x",
            "/ws/policies/p.yaml",
        ] {
            assert!(
                p.conflict(Path::new(form), Reach::Changes).is_some(),
                "{form}"
            );
            assert!(
                p.conflict(Path::new(form), Reach::Names).is_some(),
                "{form}"
            );
        }
    }

    #[test]
    fn folders_that_hold_host_files_are_refused() {
        let p = protected();
        let why = p
            .conflict(Path::new("/ws/policies"), Reach::Changes)
            .unwrap();
        assert!(
            why.contains("holds the host's own file /ws/policies/p.yaml"),
            "{why}"
        );
        assert!(
            p.conflict(Path::new("/ws/policies"), Reach::Names)
                .is_some()
        );
        assert!(p.conflict(Path::new("/"), Reach::Changes).is_some());
    }

    #[test]
    fn the_workspace_itself_may_be_named_by_a_command_but_not_changed_by_a_tool() {
        let p = protected();
        assert!(p.conflict(Path::new("/ws"), Reach::Names).is_none());
        assert!(p.conflict(Path::new("/ws"), Reach::Changes).is_some());
    }

    #[test]
    fn a_record_elsewhere_keeps_its_state_folder_protected() {
        let ws = Path::new("/ws");
        let host = HostFiles::for_workspace(ws).with_record(PathBuf::from("/logs/run.jsonl"));
        assert_eq!(host.state(), Path::new("/logs/run.jsonl.d"));
        let p = host.resolve(ws, None);
        for form in [
            "/logs/run.jsonl",
            "/logs/run.jsonl.d",
            "/logs/run.jsonl.d/blobs/ab",
        ] {
            assert!(
                p.conflict(Path::new(form), Reach::Changes).is_some(),
                "{form}"
            );
        }
        assert!(
            p.conflict(Path::new("/logs/run.jsonl.old"), Reach::Changes)
                .is_none()
        );
    }

    #[test]
    fn other_files_and_look_alike_names_pass() {
        let p = protected();
        for form in [
            "/ws/src/main.rs",
            "/ws/policies-old/p.yaml",
            "/ws/reasonix.yaml.bak",
            "/ws/.reasonixrc",
            "/ws/policies/other.yaml",
        ] {
            assert!(
                p.conflict(Path::new(form), Reach::Changes).is_none(),
                "{form}"
            );
        }
    }
}
