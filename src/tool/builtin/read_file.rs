//! `read_file {path, offset?, limit?}`: the text of a file, or a window of its lines.

use std::io::Read;

use serde_json::{Value, json};

use super::{object_schema, path_property, shown};
use crate::tool::{
    Arguments, Classification, ClassifyError, Invocation, Output, PathRequest, PathRole, Tool,
    ToolError,
};

/// Largest file read whole; larger ones must be read in windows.
const MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Lines returned when no `limit` is given.
const DEFAULT_LIMIT: u64 = 2000;
/// A line longer than this is cut.
const MAX_LINE: usize = 2000;

pub(super) struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file. `offset` is the first line to return (1-based), `limit` how many lines; \
         by default the first 2000 lines."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "path": path_property("The file to read, relative to the workspace or absolute."),
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return, 1-based."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to return."},
            }),
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
        let file = path
            .open_read()
            .map_err(|e| ToolError::io("open", &name, e))?;
        let size = file
            .metadata()
            .map_err(|e| ToolError::io("stat", &name, e))?
            .len();
        let mut bytes = Vec::new();
        file.take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::io("read", &name, e))?;
        if bytes.len() as u64 > MAX_BYTES {
            bytes.truncate(MAX_BYTES as usize);
        }
        if bytes[..bytes.len().min(8192)].contains(&0) {
            return Ok(Output::text(format!(
                "{} is a binary file ({size} bytes); not shown",
                shown(path)
            )));
        }
        let text = String::from_utf8_lossy(&bytes);
        let offset = call.arguments().u64("offset").unwrap_or(1).max(1);
        let limit = call.arguments().u64("limit").unwrap_or(DEFAULT_LIMIT);
        let mut out = String::new();
        let mut shown_lines = 0u64;
        let mut total = 0u64;
        for (i, line) in text.lines().enumerate() {
            total += 1;
            let n = i as u64 + 1;
            if n < offset || shown_lines >= limit {
                continue;
            }
            shown_lines += 1;
            out.push_str(&super::cut(line, MAX_LINE));
            out.push('\n');
        }
        let last = offset + shown_lines;
        if last <= total || size > MAX_BYTES {
            out.push_str(&format!(
                "[showing lines {offset}-{} of {total}{}; use offset and limit for more]\n",
                last.saturating_sub(1),
                if size > MAX_BYTES {
                    format!(" in the first {MAX_BYTES} of {size} bytes")
                } else {
                    String::new()
                }
            ));
        }
        Ok(Output::text(out))
    }
}
