//! What of the input document the loaded modules can read, so that a call converts only that
//! (issue 12: converting the whole document was a large part of what Rego added to a call).
//!
//! Built when the policies load from every reference to `input` in every module (helpers and
//! imports included; `analysis.rs` gathers them from the syntax trees), as a tree of field
//! names: `input.bash.commands[_].argv` reads `bash.commands`, all of it (the path stops at the
//! first part that is not a string literal); `input.session.workspace` reads that one field of
//! `session`. A reference to `input` itself — `walk(input)`, `json.marshal(input)`,
//! `input[k]`, `some k, v in input`, `with input as …`, `import input` — reads the whole
//! document, and so does the same at any depth for its part (`object.keys(input.bash)` reads
//! all of `bash`).
//!
//! A field left out is one no module names, and nothing in Rego reaches a field of `input`
//! without naming it or the object above it: the evaluation cannot tell the difference.
//! `tool` is always converted (the tool index reads it to choose the packages a call
//! evaluates). Tests: `a_policy_gets_the_parts_it_reads` and
//! `dynamic_access_gets_the_whole_document` (`value.rs`), and every Rego test and policy case.

use std::collections::BTreeMap;

/// A tree of the fields read below one value: `None` when all of it may be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads(Option<BTreeMap<String, Reads>>);

/// All of a value, for a conversion that keeps everything.
pub static ALL: Reads = Reads(None);

impl Reads {
    /// The fields these paths below `input` read (an empty path: the whole document), with
    /// `tool` always.
    pub fn of<'p>(paths: impl IntoIterator<Item = &'p [String]>) -> Reads {
        let mut reads = Reads(Some(BTreeMap::new()));
        reads.add(&["tool".to_owned()]);
        for path in paths {
            reads.add(path);
        }
        reads
    }

    /// Notes one path as read, all of what lies below it.
    fn add(&mut self, path: &[String]) {
        let mut node = self;
        for name in path {
            let Some(fields) = &mut node.0 else {
                return;
            };
            node = fields
                .entry(name.clone())
                .or_insert_with(|| Reads(Some(BTreeMap::new())));
        }
        node.0 = None;
    }

    /// What is read below the field `name` of this value; `None` when nothing is.
    pub fn field(&self, name: &str) -> Option<&Reads> {
        match &self.0 {
            None => Some(self),
            Some(fields) => fields.get(name),
        }
    }

    /// Whether all of the value is read.
    #[cfg(test)]
    pub fn is_all(&self) -> bool {
        self.0.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('.')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn of(paths: &[&str]) -> Reads {
        let paths: Vec<Vec<String>> = paths.iter().map(|p| path(p)).collect();
        Reads::of(paths.iter().map(Vec::as_slice))
    }

    #[test]
    fn a_path_reads_its_field_and_all_below_it() {
        let r = of(&["bash.commands", "session.workspace"]);
        assert!(!r.is_all());
        assert!(r.field("tool").unwrap().is_all(), "tool is always read");
        let bash = r.field("bash").unwrap();
        assert!(!bash.is_all());
        assert!(bash.field("commands").unwrap().is_all());
        assert!(bash.field("features").is_none());
        assert!(r.field("session").unwrap().field("roots").is_none());
        assert!(r.field("paths").is_none());
    }

    #[test]
    fn a_shorter_path_covers_a_longer_one_in_either_order() {
        for paths in [["bash", "bash.commands"], ["bash.commands", "bash"]] {
            let r = of(&paths);
            assert!(r.field("bash").unwrap().is_all(), "{paths:?}");
        }
    }

    #[test]
    fn the_document_itself_reads_everything() {
        for paths in [&[""][..], &["bash.commands", ""], &["", "paths"]] {
            let r = of(paths);
            assert!(r.is_all(), "{paths:?}");
            assert!(r.field("anything").unwrap().is_all());
        }
        assert!(ALL.field("x").unwrap().is_all());
    }
}
