//! `grep {pattern, path?, glob?}`: lines matching a regular expression, searched with
//! ripgrep's own crates (`grep-regex`, `grep-searcher`) over the shared walk.
//!
//! Each file is opened beneath its root (no symlink followed), so a file swapped for a link
//! after admission is not read. Binary files are skipped; `glob` filters file names the way
//! `rg -g` does.

use grep_regex::RegexMatcher;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};

use super::search_walk::walk;
use super::{cut, object_schema, path_property};
use crate::sandbox::ConfinedPath;
use crate::tool::{
    Arguments, Classification, ClassifyError, Invocation, Output, PathRequest, PathRole, Tool,
    ToolError,
};

/// Most matching lines returned.
const MAX_MATCHES: usize = 500;
/// A matching line longer than this is cut.
const MAX_LINE: usize = 500;

pub(super) struct Grep;

impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }
    fn description(&self) -> &str {
        "Search file contents for a regular expression (Rust regex syntax). Returns \
         'path:line:text'. `path` is a file or folder (default: the workspace); `glob` \
         filters file names, e.g. '*.rs'."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({
                "pattern": {"type": "string", "minLength": 1, "description": "The regular expression."},
                "path": path_property("The file or folder to search; default: the workspace."),
                "glob": {"type": "string", "minLength": 1, "description": "Only files whose names match, e.g. '*.rs'."},
            }),
            &["pattern"],
        )
    }
    fn read_only(&self) -> bool {
        true
    }
    fn classify(&self, args: &Arguments) -> Result<Classification, ClassifyError> {
        let pattern = args.required_str("pattern")?;
        RegexMatcher::new_line_matcher(pattern)
            .map_err(|e| ClassifyError(format!("bad regular expression: {e}")))?;
        if let Some(glob) = args.str("glob") {
            globset::Glob::new(glob).map_err(|e| ClassifyError(format!("bad glob: {e}")))?;
        }
        let path = args.str("path").unwrap_or(".");
        Ok(Classification::reads(vec![PathRequest::read(
            path,
            PathRole::Target,
        )]))
    }
    fn execute(&self, call: &Invocation) -> Result<Output, ToolError> {
        let base = call.path(0)?;
        let args = call.arguments();
        let pattern = args.str("pattern").unwrap_or_default();
        let matcher = RegexMatcher::new_line_matcher(pattern)
            .map_err(|e| ToolError::Refused(format!("bad regular expression: {e}")))?;
        let mut hits = Hits::default();
        let is_file = base
            .stat()
            .map(|st| {
                st.st_mode & nix::sys::stat::SFlag::S_IFMT.bits()
                    == nix::sys::stat::SFlag::S_IFREG.bits()
            })
            .unwrap_or(false);
        let mut skipped = super::search_walk::Skipped::default();
        if is_file {
            if search(&matcher, base, &mut hits).is_err() {
                return Err(ToolError::io(
                    "read",
                    &base.absolute(),
                    std::io::Error::last_os_error(),
                ));
            }
        } else {
            let overrides = match args.str("glob") {
                Some(glob) => {
                    let mut builder = OverrideBuilder::new(base.absolute());
                    builder
                        .add(glob)
                        .map_err(|e| ToolError::Refused(format!("bad glob: {e}")))?;
                    Some(
                        builder
                            .build()
                            .map_err(|e| ToolError::Refused(format!("bad glob: {e}")))?,
                    )
                }
                None => None,
            };
            skipped = walk(base, overrides, call.withheld(), |entry| {
                if entry.is_file && search(&matcher, &entry.path, &mut hits).is_err() {
                    hits.unreadable += 1;
                }
                hits.lines.len() < MAX_MATCHES
            });
        }
        skipped.unreadable += hits.unreadable;
        let mut out = hits.lines.join("\n");
        if hits.lines.is_empty() {
            out = format!("no lines match {pattern:?} in {}", base.shown());
        } else if hits.lines.len() >= MAX_MATCHES {
            out.push_str(&format!(
                "\n[stopped after {MAX_MATCHES} matching lines; narrow the search]"
            ));
        }
        out.push_str(&skipped.notes());
        Ok(Output::text(out))
    }
}

#[derive(Default)]
struct Hits {
    lines: Vec<String>,
    unreadable: usize,
}

/// Searches one file, opened beneath its root.
fn search(matcher: &RegexMatcher, path: &ConfinedPath, hits: &mut Hits) -> std::io::Result<()> {
    let file = path.open_read()?;
    let shown = path.shown();
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    searcher.search_file(
        matcher,
        &file,
        Lossy(|line_number, line| {
            let line = line.trim_end_matches(['\n', '\r']);
            let text = format!("{shown}:{line_number}:{}", cut(line, MAX_LINE));
            hits.lines.push(text);
            Ok(hits.lines.len() < MAX_MATCHES)
        }),
    )
}
