//! `write_file {path, content}`: replaces a file's content atomically, creating it and its
//! folders when missing. An existing file keeps its permission bits.

use serde_json::{Value, json};

use super::{object_schema, path_property, shown};
use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, Invocation, Output, PathRequest, PathRole,
    Tool, ToolError,
};

pub(super) struct WriteFile;

impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Write a file, replacing its content. Creates the file and missing folders. \
         The write is atomic: readers see the old content or the new, never half."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "path": path_property("The file to write, relative to the workspace or absolute."),
                "content": {"type": "string", "description": "The complete new content."},
            }),
            &["path", "content"],
        )
    }
    fn read_only(&self) -> bool {
        false
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let path = args.required_str("path")?;
        Ok(Classification::changes(
            &[Effect::Write],
            vec![PathRequest::write(path, PathRole::Target)],
        ))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let path = call.writable(0)?;
        let content = call.arguments().str("content").unwrap_or_default();
        path.write_atomic(content.as_bytes())
            .map_err(|e| ToolError::io("write", &path.absolute(), e))?;
        Ok(Output::text(format!(
            "wrote {} bytes to {}",
            content.len(),
            shown(path)
        )))
    }
}
