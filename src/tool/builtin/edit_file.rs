//! `edit_file {path, old_string, new_string, replace_all?}`: replaces text in a file.
//!
//! `old_string` must occur exactly once unless `replace_all` is set, so an edit never lands in
//! the wrong place. Line endings are kept: in a CRLF file, the `\n` in `old_string` and
//! `new_string` stand for `\r\n`. The write is atomic and keeps the file's permission bits.

use std::io::Read;

use serde_json::{Value, json};

use super::{object_schema, path_property, shown};
use crate::tool::{
    Arguments, Classification, ClassifyError, Effect, Invocation, Output, PathRequest, PathRole,
    Tool, ToolError,
};

/// Largest file edited.
const MAX_BYTES: u64 = 16 * 1024 * 1024;

pub(super) struct EditFile;

impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }
    fn description(&self) -> &str {
        "Replace old_string with new_string in a file. old_string must occur exactly once \
         (include surrounding lines to make it unique) unless replace_all is true."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "path": path_property("The file to edit."),
                "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence."},
            }),
            &["path", "old_string", "new_string"],
        )
    }
    fn read_only(&self) -> bool {
        false
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let path = args.required_str("path")?;
        if args.str("old_string") == args.str("new_string") {
            return Err(ClassifyError(
                "old_string and new_string are the same; the edit would change nothing".into(),
            ));
        }
        Ok(Classification::changes(
            &[Effect::Write],
            vec![PathRequest::write(path, PathRole::Target)],
        ))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let path = call.writable(0)?;
        let name = path.absolute();
        let args = call.arguments();
        let mut bytes = Vec::new();
        path.open_read()
            .map_err(|e| ToolError::io("open", &name, e))?
            .take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::io("read", &name, e))?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(ToolError::Refused(format!(
                "{} is larger than {MAX_BYTES} bytes; edit_file does not edit it",
                shown(path)
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| {
            ToolError::Refused(format!(
                "{} is not UTF-8 text; edit_file does not edit it",
                shown(path)
            ))
        })?;
        let (old, new) = line_endings(
            &text,
            args.str("old_string").unwrap_or_default(),
            args.str("new_string").unwrap_or_default(),
        );
        let count = text.matches(old.as_str()).count();
        let replace_all = args.bool("replace_all").unwrap_or(false);
        match count {
            0 => {
                return Err(ToolError::Refused(format!(
                    "old_string was not found in {}; read the file and copy the text exactly",
                    shown(path)
                )));
            }
            1 => {}
            n if !replace_all => {
                return Err(ToolError::Refused(format!(
                    "old_string occurs {n} times in {}; include more surrounding text to make it unique, or set replace_all",
                    shown(path)
                )));
            }
            _ => {}
        }
        let edited = text.replace(old.as_str(), &new);
        // Under the lease, across processes too, nothing else that leases writes this file
        // meanwhile; a writer that does not lease would make this edit lose its change, so the
        // file must still be the one read (issue 28, item 8).
        use sha2::Digest;
        let read = sha2::Sha256::digest(text.as_bytes());
        let mut now = Vec::new();
        path.open_read()
            .map_err(|e| ToolError::io("open", &name, e))?
            .take(MAX_BYTES + 1)
            .read_to_end(&mut now)
            .map_err(|e| ToolError::io("read", &name, e))?;
        if sha2::Sha256::digest(&now) != read {
            return Err(ToolError::Refused(format!(
                "{} changed while this edit was being made (something else wrote it); nothing was written: read it again and redo the edit",
                shown(path)
            )));
        }
        path.write_atomic(edited.as_bytes())
            .map_err(|e| ToolError::io("write", &name, e))?;
        Ok(Output::text(format!(
            "replaced {count} occurrence{} in {}",
            if count == 1 { "" } else { "s" },
            shown(path)
        )))
    }
}

/// In a file whose lines end in CRLF, bare `\n` in the edit strings become `\r\n`.
fn line_endings(text: &str, old: &str, new: &str) -> (String, String) {
    let crlf = text.contains("\r\n") && !text.replace("\r\n", "").contains('\n');
    if crlf && !old.contains('\r') {
        let to_crlf = |s: &str| s.replace('\n', "\r\n");
        (to_crlf(old), to_crlf(new))
    } else {
        (old.to_owned(), new.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::line_endings;

    #[test]
    fn crlf_files_get_crlf_edits() {
        let (old, new) = line_endings("a\r\nb\r\n", "a\nb", "x\ny");
        assert_eq!((old.as_str(), new.as_str()), ("a\r\nb", "x\r\ny"));
    }

    #[test]
    fn lf_and_mixed_files_are_left_alone() {
        let (old, _) = line_endings("a\nb\n", "a\nb", "c");
        assert_eq!(old, "a\nb");
        let (old, _) = line_endings("a\r\nb\nc", "a\nb", "c");
        assert_eq!(old, "a\nb");
    }
}
