//! Where a Claude Code tool call happens: the **project root** Reasonix judges it in (its
//! workspace, with that workspace's settings), and the folder Claude's shell is in now, from
//! which a relative path or a bare command is read. The step before `parse` for the hook.
//!
//! The root is found as Claude Code finds its project, never from the shell's folder: the
//! `CLAUDE_PROJECT_DIR` Claude Code gives its hooks, else the nearest folder at or above `cwd`
//! that holds a `reasonix.yaml` or a `.git`, else `cwd` itself. A `cd data` in Claude's shell
//! does not make `data/` the workspace (where no `reasonix.yaml` is found, and a deny on
//! `data/customers.csv` would not be seen as one).
//!
//! The folder Claude's shell is in still decides what a relative path or a command means, so
//! the calls are made to say it: a relative `file_path` or `path` is taken from `cwd`, a search
//! without a path searches `cwd` (as Claude's Grep and Glob do), and a Bash command run from a
//! folder below the root is judged as `cd 'data' && COMMAND`, which the shell analysis follows
//! like any `cd` (a folder outside the root as its absolute path, which the analysis treats as a
//! foreign folder).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The variable Claude Code sets for its hooks: the project's root folder.
pub const PROJECT_DIR: &str = "CLAUDE_PROJECT_DIR";

/// The project root for a hook called with `cwd` (absolute), given `CLAUDE_PROJECT_DIR`.
pub fn root(project_dir: Option<&std::ffi::OsStr>, cwd: &Path) -> PathBuf {
    if let Some(dir) = project_dir.filter(|d| !d.is_empty()).map(PathBuf::from)
        && dir.is_absolute()
        && dir.is_dir()
    {
        return dir;
    }
    for dir in cwd.ancestors() {
        if dir.join(crate::host::SETTINGS_FILE).exists() || dir.join(".git").exists() {
            return dir.to_path_buf();
        }
    }
    cwd.to_path_buf()
}

/// `call`'s arguments (a Reasonix call mapped from a Claude tool) made to say where Claude's
/// shell is: see the module doc. `tool` is the Reasonix tool.
pub fn anchor(tool: &str, arguments: &mut Map<String, Value>, cwd: &Path, root: &Path) {
    match tool {
        "bash" => {
            if cwd == root {
                return;
            }
            let Some(Value::String(command)) = arguments.get("command") else {
                return;
            };
            let folder = match cwd.strip_prefix(root) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => cwd.to_path_buf(),
            };
            let quoted = shlex::try_quote(&folder.to_string_lossy())
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| format!("'{}'", folder.display()));
            let anchored = format!("cd {quoted} && {command}");
            arguments.insert("command".into(), Value::String(anchored));
        }
        "grep" | "glob" => {
            let path = match arguments.get("path").and_then(Value::as_str) {
                Some(p) => cwd.join(p),
                // An absolute glob pattern names its own folder.
                None if tool == "glob"
                    && arguments
                        .get("pattern")
                        .and_then(Value::as_str)
                        .is_some_and(|p| p.starts_with('/')) =>
                {
                    return;
                }
                None => cwd.to_path_buf(),
            };
            arguments.insert("path".into(), Value::String(path.display().to_string()));
        }
        _ => {
            if let Some(Value::String(p)) = arguments.get("path")
                && Path::new(p).is_relative()
            {
                let path = cwd.join(p).display().to_string();
                arguments.insert("path".into(), Value::String(path));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_root_is_claude_project_dir_else_the_nearest_settings_or_git_above_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join("data/deep")).unwrap();
        std::fs::write(project.join("reasonix.yaml"), "").unwrap();
        let cwd = project.join("data/deep");
        // Claude's own word wins.
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        assert_eq!(root(Some(other.as_os_str()), &cwd), other);
        // Without it, the nearest reasonix.yaml above the shell's folder, not the folder.
        assert_eq!(root(None, &cwd), project);
        assert_eq!(root(Some("".as_ref()), &cwd), project);
        assert_eq!(root(Some("relative".as_ref()), &cwd), project);
        // A .git marks a root too.
        let repo = dir.path().join("r");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        assert_eq!(root(None, &repo.join("src")), repo);
    }

    fn anchored(tool: &str, args: Value, cwd: &str) -> Value {
        let mut map = args.as_object().unwrap().clone();
        anchor(tool, &mut map, Path::new(cwd), Path::new("/p"));
        Value::Object(map)
    }

    #[test]
    fn a_call_from_a_folder_below_the_root_says_where_it_is() {
        assert_eq!(
            anchored("bash", json!({"command": "cat customers.csv"}), "/p/data"),
            json!({"command": "cd data && cat customers.csv"})
        );
        assert_eq!(
            anchored("bash", json!({"command": "ls"}), "/p/my data"),
            json!({"command": "cd 'my data' && ls"})
        );
        assert_eq!(
            anchored("bash", json!({"command": "ls"}), "/elsewhere"),
            json!({"command": "cd /elsewhere && ls"})
        );
        assert_eq!(
            anchored("bash", json!({"command": "ls"}), "/p"),
            json!({"command": "ls"}),
            "at the root nothing changes"
        );
        assert_eq!(
            anchored("grep", json!({"pattern": "x"}), "/p/data"),
            json!({"pattern": "x", "path": "/p/data"})
        );
        assert_eq!(
            anchored("glob", json!({"pattern": "*", "path": "sub"}), "/p/data"),
            json!({"pattern": "*", "path": "/p/data/sub"})
        );
        assert_eq!(
            anchored("glob", json!({"pattern": "/p/src/**/*.rs"}), "/p/data"),
            json!({"pattern": "/p/src/**/*.rs"}),
            "an absolute pattern names its own folder"
        );
        assert_eq!(
            anchored("read_file", json!({"path": "customers.csv"}), "/p/data"),
            json!({"path": "/p/data/customers.csv"})
        );
        assert_eq!(
            anchored("read_file", json!({"path": "/abs"}), "/p/data"),
            json!({"path": "/abs"})
        );
    }
}
