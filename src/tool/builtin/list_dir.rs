//! `list_dir {path}`: the entries of one folder, sorted; folders end in `/`, symlinks show
//! their target (which is not followed).

use std::os::unix::ffi::OsStrExt;

use nix::dir::{Dir, Type};
use nix::sys::stat::SFlag;
use serde_json::{Value, json};

use super::{object_schema, path_property, shown};
use crate::tool::{
    Arguments, Classification, ClassifyError, Invocation, Output, PathRequest, PathRole, Tool,
    ToolError,
};

/// Most entries listed.
const MAX_ENTRIES: usize = 2000;

pub(super) struct ListDir;

impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }
    fn description(&self) -> &str {
        "List a folder's entries. Folders end in '/', symlinks show 'name -> target'."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({"path": path_property("The folder to list; \".\" is the workspace.")}),
            &["path"],
        )
    }
    fn read_only(&self) -> bool {
        true
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let path = args.required_str("path")?;
        Ok(Classification::reads(vec![PathRequest::read(
            path,
            PathRole::Target,
        )]))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let path = call.path(0)?;
        let name = path.absolute();
        let io = |e: nix::Error| {
            ToolError::io("list", &name, std::io::Error::from_raw_os_error(e as i32))
        };
        let fd = path
            .open_dir()
            .map_err(|e| ToolError::io("open", &name, e))?;
        let mut dir = Dir::from_fd(fd).map_err(io)?;
        let mut entries: Vec<(Vec<u8>, Option<Type>)> = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(io)?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            entries.push((bytes.to_vec(), entry.file_type()));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let total = entries.len();
        let mut out = String::new();
        for (bytes, kind) in entries.into_iter().take(MAX_ENTRIES) {
            let os = std::ffi::OsStr::from_bytes(&bytes);
            let kind = match kind {
                Some(k) => Some(k),
                None => nix::sys::stat::fstatat(&dir, os, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                    .ok()
                    .map(
                        |st| match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
                            SFlag::S_IFDIR => Type::Directory,
                            SFlag::S_IFLNK => Type::Symlink,
                            _ => Type::File,
                        },
                    ),
            };
            out.push_str(&String::from_utf8_lossy(&bytes));
            match kind {
                Some(Type::Directory) => out.push('/'),
                Some(Type::Symlink) => {
                    let target = nix::fcntl::readlinkat(&dir, os)
                        .map(|t| t.to_string_lossy().into_owned())
                        .unwrap_or_else(|_| "?".into());
                    out.push_str(" -> ");
                    out.push_str(&target);
                }
                _ => {}
            }
            out.push('\n');
        }
        if total == 0 {
            out.push_str(&format!("{} is empty\n", shown(path)));
        } else if total > MAX_ENTRIES {
            out.push_str(&format!("[{MAX_ENTRIES} of {total} entries shown]\n"));
        }
        Ok(Output::text(out))
    }
}
