//! `glob {pattern, path?}`: paths below a folder whose relative path matches a glob.
//!
//! The pattern's leading plain folders are part of what the call touches: `../../etc/*` and
//! `/etc/**` touch `../../etc` and `/etc`, which the sandbox then judges like any other path.
//! After the first wildcard, `..` is refused: it could climb anywhere. `*` does not cross `/`;
//! `**` does.

use globset::GlobBuilder;
use serde_json::{Value, json};

use super::search_walk::walk;
use super::{object_schema, path_property};
use crate::tool::{
    Arguments, Classification, ClassifyError, Invocation, Output, PathRequest, PathRole, Tool,
    ToolError,
};

/// Most paths returned.
const MAX_RESULTS: usize = 1000;

pub(super) struct GlobTool;

/// Splits a pattern into its leading plain folders and the rest, which starts at the first
/// component holding a wildcard (or is the last component).
pub(super) fn split(pattern: &str) -> Result<(String, String), ClassifyError> {
    let parts: Vec<&str> = pattern.split('/').collect();
    let wild = |p: &str| p.contains(['*', '?', '[', '{', '\\']);
    let first = parts
        .iter()
        .position(|p| wild(p))
        .unwrap_or(parts.len().saturating_sub(1));
    let mut literal = parts[..first].join("/");
    if literal.is_empty() && pattern.starts_with('/') {
        literal = "/".into();
    }
    let rest = parts[first..].join("/");
    if rest.is_empty() {
        return Err(ClassifyError(format!(
            "pattern {pattern:?} must end in a name or a wildcard, such as {pattern}*"
        )));
    }
    if parts[first..].contains(&"..") {
        return Err(ClassifyError(format!(
            "pattern {pattern:?} has '..' after a wildcard; put the folder in `path` instead"
        )));
    }
    Ok((literal, rest))
}

/// The folder a glob call searches, as written.
fn base(args: &Arguments) -> Result<(String, String), ClassifyError> {
    let pattern = args.required_str("pattern")?;
    let (literal, rest) = split(pattern)?;
    let base = match (args.str("path"), literal.as_str()) {
        (None, "") => ".".to_owned(),
        (None, l) => l.to_owned(),
        (Some(p), "") => p.to_owned(),
        (Some(_), l) if l.starts_with('/') => {
            return Err(ClassifyError(format!(
                "pattern {pattern:?} is absolute; leave out `path` or make the pattern relative"
            )));
        }
        (Some(p), l) => format!("{}/{l}", p.trim_end_matches('/')),
    };
    Ok((base, rest))
}

impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }
    fn description(&self) -> &str {
        "Find paths matching a glob such as 'src/**/*.rs', below `path` (default: the workspace). \
         '*' stays within a folder, '**' crosses folders. Honours .gitignore; skips .git."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "pattern": {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]*$", "description": "The glob."},
                "path": path_property("The folder to search; default: the workspace."),
            }),
            &["pattern"],
        )
    }
    fn read_only(&self) -> bool {
        true
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let (base, rest) = base(args)?;
        GlobBuilder::new(&rest)
            .literal_separator(true)
            .build()
            .map_err(|e| ClassifyError(format!("bad glob: {e}")))?;
        Ok(Classification::reads(vec![PathRequest::read(
            base,
            PathRole::Target,
        )]))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let folder = call.path(0)?;
        let (_, rest) = base(call.arguments()).map_err(|e| ToolError::Refused(e.0))?;
        let matcher = GlobBuilder::new(&rest)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::Refused(format!("bad glob: {e}")))?
            .compile_matcher();
        let mut found = Vec::new();
        let mut total = 0usize;
        let skipped = walk(folder, None, call.withheld(), |entry| {
            if matcher.is_match(&entry.rel) {
                total += 1;
                if found.len() < MAX_RESULTS {
                    let mut shown = entry.path.shown();
                    if entry.is_dir {
                        shown.push('/');
                    }
                    found.push(shown);
                }
            }
            true
        });
        let mut out = found.join("\n");
        if total == 0 {
            out = format!("no paths match {rest:?} below {}", folder.shown());
        } else if total > found.len() {
            out.push_str(&format!("\n[{} of {total} matches shown]", found.len()));
        }
        out.push_str(&skipped.notes());
        Ok(Output::text(out))
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn leading_plain_folders_are_split_off() {
        let s = |p: &str| split(p).unwrap();
        assert_eq!(s("*.rs"), ("".into(), "*.rs".into()));
        assert_eq!(s("src/**/*.rs"), ("src".into(), "**/*.rs".into()));
        assert_eq!(s("/etc/*"), ("/etc".into(), "*".into()));
        assert_eq!(s("../../etc/*"), ("../../etc".into(), "*".into()));
        assert_eq!(s("src/main.rs"), ("src".into(), "main.rs".into()));
        assert_eq!(s("/*"), ("/".into(), "*".into()));
    }

    #[test]
    fn dotdot_after_a_wildcard_is_refused() {
        assert!(split("*/../../etc/passwd").is_err());
        assert!(split("src/").is_err());
    }
}
