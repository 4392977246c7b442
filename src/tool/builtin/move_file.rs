//! `move_file {source_path, destination_path}`: renames a file or folder within the roots.
//! It never replaces an existing destination (`RENAME_NOREPLACE`).

use serde_json::{Value, json};

use super::{object_schema, path_property, shown};
use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, Invocation, Output, PathRequest, PathRole,
    Tool, ToolError,
};

pub(super) struct MoveFile;

impl Tool for MoveFile {
    fn name(&self) -> &str {
        "move_file"
    }
    fn description(&self) -> &str {
        "Move or rename a file or folder. Creates the destination's missing folders; \
         refuses to replace an existing destination."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "source_path": path_property("What to move."),
                "destination_path": path_property("Where to put it; must not exist yet."),
            }),
            &["source_path", "destination_path"],
        )
    }
    fn read_only(&self) -> bool {
        false
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let source = args.required_str("source_path")?;
        let destination = args.required_str("destination_path")?;
        Ok(Classification::changes(
            &[Effect::Write, Effect::Delete],
            vec![
                PathRequest::write(source, PathRole::Source),
                PathRequest::write(destination, PathRole::Destination),
            ],
        ))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let source = call.writable(0)?;
        let destination = call.writable(1)?;
        source
            .rename_to(destination)
            .map_err(|e| ToolError::io("move", &source.absolute(), e))?;
        Ok(Output::text(format!(
            "moved {} to {}",
            shown(source),
            shown(destination)
        )))
    }
}
