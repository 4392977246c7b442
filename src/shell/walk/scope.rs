//! What the script assigns, found in one pass over the tree before the walk: the variables it
//! may bind to static words ([`Scope::bindable`]), whether it sets `HOME`, and whether `set -a`
//! exports every assignment.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::builtins::{self, ASSIGNING};
use super::text;

/// The pre-pass's findings.
#[derive(Debug, Default)]
pub(super) struct Scope {
    /// Assigned exactly once in the whole script (a standalone assignment or a `for`), never
    /// touched by a builtin that assigns, nor used as a bare word (arithmetic), and `IFS` left
    /// alone: only these may be bound to the words assigned.
    pub bindable: HashSet<String>,
    /// `HOME` is set other than for one command: a later `~` follows it.
    pub sets_home: bool,
    /// `set -a` or `set -o allexport`: assignments are exported.
    pub allexport: bool,
}

/// Runs the pre-pass over the whole tree.
pub(super) fn scope(root: Node, src: &str) -> Scope {
    let mut out = Scope::default();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut poisoned: HashSet<String> = HashSet::new();
    let mut assigned: HashSet<String> = HashSet::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "variable_assignment" | "for_statement" => {
                let field = if node.kind() == "for_statement" {
                    "variable"
                } else {
                    "name"
                };
                if let Some(name) = node.child_by_field_name(field) {
                    let name = builtins::base(text(name, src)).to_owned();
                    *counts.entry(name.clone()).or_default() += 1;
                    if node.kind() == "variable_assignment"
                        && node.parent().is_some_and(|p| p.kind() == "command")
                    {
                        // A prefix assignment (`X=1 cmd`) does not bind for the rest of the
                        // script, nor change the shell's own `HOME`.
                        poisoned.insert(name);
                    } else {
                        assigned.insert(name);
                    }
                }
            }
            "word" => {
                poisoned.insert(text(node, src).to_owned());
            }
            "variable_name" => {
                let parent = node.parent().map(|p| p.kind()).unwrap_or("");
                if !matches!(
                    parent,
                    "variable_assignment" | "simple_expansion" | "expansion" | "for_statement"
                ) {
                    poisoned.insert(text(node, src).to_owned());
                }
            }
            "command" | "declaration_command" | "unset_command" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| text(n, src))
                    .unwrap_or_else(|| node.child(0).map(|c| text(c, src)).unwrap_or(""));
                if ASSIGNING.contains(&name) || node.kind() != "command" {
                    let mut cursor = node.walk();
                    for child in node.children(&mut cursor) {
                        let t = text(child, src);
                        poisoned.insert(builtins::base(t).to_owned());
                    }
                }
                if node.kind() == "command" {
                    let mut cursor = node.walk();
                    let args: Vec<&str> = node
                        .children_by_field_name("argument", &mut cursor)
                        .map(|a| text(a, src))
                        .collect();
                    for (_, filled) in builtins::filled(name, &args) {
                        assigned.insert(builtins::base(&filled).to_owned());
                    }
                    if name == "set" && sets_allexport(&args) {
                        out.allexport = true;
                    }
                }
            }
            _ => {}
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    out.bindable = counts
        .into_iter()
        .filter(|(name, n)| *n == 1 && !poisoned.contains(name))
        .map(|(name, _)| name)
        .collect();
    if assigned.contains("IFS") {
        // Words are no longer split as bash splits them by default: no value is known.
        out.bindable.clear();
    }
    out.sets_home = assigned.contains("HOME");
    out
}

/// `set -a`, `set -euao pipefail`, `set -o allexport`.
fn sets_allexport(args: &[&str]) -> bool {
    let mut previous = "";
    for w in args {
        let cluster = w.starts_with('-') && !w.starts_with("--") && w[1..].contains('a');
        let option = previous.starts_with('-') && previous.ends_with('o');
        if cluster || (option && *w == "allexport") {
            return true;
        }
        previous = w;
    }
    false
}
