//! `delete_file {path}`: removes one file (never a folder).

use serde_json::{Value, json};

use super::{object_schema, path_property, shown};
use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, Invocation, Output, PathRequest, PathRole,
    Tool, ToolError,
};

pub(super) struct DeleteFile;

impl Tool for DeleteFile {
    fn name(&self) -> &str {
        "delete_file"
    }
    fn description(&self) -> &str {
        "Delete one file. Folders are not deleted."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({"path": path_property("The file to delete, relative to the workspace or absolute.")}),
            &["path"],
        )
    }
    fn read_only(&self) -> bool {
        false
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let path = args.required_str("path")?;
        Ok(Classification::changes(
            &[Effect::Delete],
            vec![PathRequest::write(path, PathRole::Target)],
        ))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let path = call.writable(0)?;
        path.remove_file()
            .map_err(|e| ToolError::io("delete", &path.absolute(), e))?;
        Ok(Output::text(format!("deleted {}", shown(path))))
    }
}
