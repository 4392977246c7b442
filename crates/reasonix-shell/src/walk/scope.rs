//! What the script assigns, found in one pass over the tree before the walk: the variables it
//! may bind to static words ([`Scope::bindable`]), the ones that may hold text bash would run
//! as code when it evaluates them as arithmetic ([`Scope::is_tainted`]), those declared
//! integer or associative, whether it sets `HOME`, and whether `set -a` exports every
//! assignment.

use crate::parse::{Census, KindName};
use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::arith;
use super::builtins::{self, ASSIGNING};
use super::text;

/// Variables bash or its builtins fill with text the script does not fix: a line read, a
/// match, a command line, a folder or function name, the last argument.
const FILLED: &[&str] = &[
    "REPLY",
    "BASH_REMATCH",
    "MAPFILE",
    "OPTARG",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_COMMAND",
    "BASH_EXECUTION_STRING",
    "BASH_SOURCE",
    "FUNCNAME",
    "DIRSTACK",
    "PWD",
    "OLDPWD",
    "COMP_LINE",
    "COMP_WORDS",
    "READLINE_LINE",
    "_",
];

/// The pre-pass's findings.
#[derive(Debug, Default)]
pub(super) struct Scope {
    /// Assigned exactly once in the whole script (a standalone assignment or a `for`), never
    /// touched by a builtin that assigns, nor used as a bare word (arithmetic), and `IFS` left
    /// alone: only these may be bound to the words assigned.
    pub bindable: HashSet<String>,
    /// Assigned text that is not safe for arithmetic, or text from input (see
    /// [`Scope::is_tainted`]).
    pub tainted: HashSet<String>,
    /// Declared `-i`: every value assigned to them is evaluated as arithmetic.
    pub integers: HashSet<String>,
    /// Declared `-A`: their subscripts are strings, not arithmetic.
    pub associative: HashSet<String>,
    /// Declared `-n`: name references, whose value is the name of another variable.
    pub references: HashSet<String>,
    /// Values given to a name reference that are not a safe name (`r='a[$(cmd)]'`, a value read
    /// from input): bash runs the subscript when it follows the reference.
    pub reference_code: Vec<String>,
    /// The names the name references may stand for (`declare -n r=IFS`, `r=HOME` after a bare
    /// `declare -n r`): each is treated as assigned at run time.
    pub reference_targets: Vec<String>,
    /// Declared `-l`, `-u` or `-c`: the values assigned are converted, so never bound.
    pub transformed: HashSet<String>,
    /// Arrays: assigned `(...)` or by subscript, declared `-a`/`-A`, filled by `read -a` or
    /// `mapfile`. A declaration's value made at run time is parsed again for them.
    pub arrays: HashSet<String>,
    /// `POSIXLY_CORRECT` is set for the shell itself: it enters POSIX mode.
    pub posix: bool,
    /// `HOME` is set other than for one command: a later `~` follows it.
    pub sets_home: bool,
    /// `set -a` or `set -o allexport`: assignments are exported.
    pub allexport: bool,
    /// The byte range of every token, and of every node whose text tree-sitter keeps whole
    /// (strings, heredoc bodies, comments): what the tree covers of the script.
    pub leaves: Vec<(usize, usize)>,
    /// How deep the syntax tree goes: the most nodes from the root to a leaf, the root not
    /// counted. The walk recurses along it, so it is bounded before the walk
    /// ([`MAX_NESTING`](crate::MAX_NESTING)).
    pub deepest: usize,
}

/// Nodes whose text tree-sitter keeps whole.
const WHOLE: &[&str] = &[
    "raw_string",
    "ansi_c_string",
    "string_content",
    "heredoc_body",
    "heredoc_content",
    "comment",
];

/// A shell variable name.
fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Scope {
    /// Whether `name` may hold code for arithmetic: a positional parameter (a function's or
    /// `bash -c`'s arguments), a variable bash fills from outside the script, or one the script
    /// assigns text that is not safe ([`arith::value_is_safe`]). A variable the script leaves
    /// alone holds what the host's environment gave it.
    pub fn is_tainted(&self, name: &str) -> bool {
        name.starts_with(|c: char| c.is_ascii_digit())
            || matches!(name, "@" | "*")
            || FILLED.contains(&name)
            || self.tainted.contains(name)
    }
}

/// Where a variable's value comes from.
enum Source<'t> {
    /// A value as written (`x=VALUE`, `for x in VALUE`, `${x:=VALUE}`).
    Value(Node<'t>),
    /// Text from outside the script (`read`, `mapfile`, `printf -v`, `for x` over "$@", a name
    /// reference).
    Input,
}

/// Runs the pre-pass over the whole tree.
pub(super) fn scope(root: Node, src: &str, census: &mut Census) -> Scope {
    let mut out = Scope::default();
    let mut sources: Vec<(String, Source)> = Vec::new();
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut poisoned: HashSet<String> = HashSet::new();
    let mut assigned: HashSet<String> = HashSet::new();
    // One depth-first pass with one cursor, the kind of each node's parent at hand.
    let mut cursor = root.walk();
    let mut parents: Vec<&str> = Vec::new();
    'walk: loop {
        let node = cursor.node();
        census.note(node);
        let parent = parents.last().copied().unwrap_or("");
        if node.child_count() == 0 || WHOLE.contains(&node.kind_name()) {
            out.leaves.push((node.start_byte(), node.end_byte()));
        }
        match node.kind_name() {
            "variable_assignment" | "for_statement" => {
                let field = if node.kind_name() == "for_statement" {
                    "variable"
                } else {
                    "name"
                };
                if let Some(name) = node.child_by_field_name(field) {
                    let name = builtins::base(text(name, src)).to_owned();
                    *counts.entry(name.clone()).or_default() += 1;
                    let mut cursor = node.walk();
                    let values: Vec<Node> =
                        node.children_by_field_name("value", &mut cursor).collect();
                    if values.is_empty() && node.kind_name() == "for_statement" {
                        sources.push((name.clone(), Source::Input));
                    }
                    for value in values {
                        sources.push((name.clone(), Source::Value(value)));
                    }
                    if node.kind_name() == "variable_assignment"
                        && (node
                            .child_by_field_name("value")
                            .is_some_and(|v| v.kind_name() == "array")
                            || node
                                .child_by_field_name("name")
                                .is_some_and(|n| n.kind_name() == "subscript"))
                    {
                        out.arrays.insert(name.clone());
                    }
                    if name == "POSIXLY_CORRECT" && parent != "command" {
                        out.posix = true;
                    }
                    if node.kind_name() == "variable_assignment" && parent == "command" {
                        // A prefix assignment (`X=1 cmd`) does not bind for the rest of the
                        // script, nor change the shell's own `HOME`.
                        poisoned.insert(name);
                    } else {
                        assigned.insert(name);
                    }
                }
            }
            "word" => {
                let t = text(node, src);
                if is_name(t) {
                    poisoned.insert(t.to_owned());
                }
            }
            "expansion" => assigning_expansion(node, src, &mut sources),
            "variable_name"
                if !(matches!(
                    parent,
                    "variable_assignment" | "simple_expansion" | "expansion" | "for_statement"
                ) || (parent == "subscript"
                    && parents.len() >= 2
                    && parents[parents.len() - 2] == "expansion")) =>
            {
                poisoned.insert(text(node, src).to_owned());
            }
            "command" | "declaration_command" | "unset_command" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| text(n, src))
                    .unwrap_or_else(|| node.child(0).map(|c| text(c, src)).unwrap_or(""));
                if node.kind_name() == "declaration_command" {
                    declared(node, src, &mut out);
                }
                let binds =
                    node.kind_name() == "declaration_command" && binds_like_assignment(node, src);
                if (ASSIGNING.contains(&name) || node.kind_name() != "command") && !binds {
                    let mut cursor = node.walk();
                    for child in node.children(&mut cursor) {
                        let t = text(child, src);
                        poisoned.insert(builtins::base(t).to_owned());
                        if builtins::base(t) == "POSIXLY_CORRECT" {
                            out.posix = true;
                        }
                    }
                }
                if node.kind_name() == "command"
                    && matches!(
                        name,
                        "read" | "mapfile" | "readarray" | "printf" | "getopts" | "set" | "wait"
                    )
                {
                    let mut cursor = node.walk();
                    let args: Vec<&str> = node
                        .children_by_field_name("argument", &mut cursor)
                        .map(|a| text(a, src))
                        .collect();
                    for (_, filled) in builtins::filled(name, &args) {
                        let base = builtins::base(&filled).to_owned();
                        if !matches!(name, "printf" | "getopts" | "wait") {
                            out.arrays.insert(base.clone());
                        }
                        assigned.insert(base.clone());
                        sources.push((base, Source::Input));
                    }
                    if name == "set" && sets_allexport(&args) {
                        out.allexport = true;
                    }
                }
            }
            _ => {}
        }
        if cursor.goto_first_child() {
            parents.push(node.kind_name());
            out.deepest = out.deepest.max(parents.len());
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
            parents.pop();
        }
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
    // Taint spreads through assignments until nothing changes (`y=$x` holds what `x` holds).
    loop {
        let mut changed = false;
        for (name, source) in &sources {
            if out.tainted.contains(name) {
                continue;
            }
            let tainted = match source {
                Source::Input => true,
                Source::Value(value) => {
                    !arith::value_is_safe(*value, src, &|n: &str| out.is_tainted(n))
                }
            };
            if tainted {
                out.tainted.insert(name.clone());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // A name reference follows whatever name it is given, subscript and all.
    for (name, source) in &sources {
        if !out.references.contains(name) {
            continue;
        }
        let what = match source {
            Source::Input => Some(name.clone()),
            Source::Value(value) => {
                (!arith::name_is_safe(*value, src, &|n: &str| out.is_tainted(n)))
                    .then(|| text(*value, src).to_owned())
            }
        };
        out.reference_code.extend(what);
        // Each static name it is given is a variable the script may set through it.
        if let Source::Value(value) = source {
            let t = text(*value, src);
            let t = t.trim_matches(|c| c == '\'' || c == '"');
            if is_name(builtins::base(t)) {
                out.reference_targets.push(builtins::base(t).to_owned());
            }
        }
    }
    for target in &out.reference_targets {
        out.bindable.remove(target);
        if target == "IFS" {
            out.bindable.clear();
        }
        if target == "HOME" {
            out.sets_home = true;
        }
    }
    for name in &out.transformed {
        out.bindable.remove(name);
    }
    out
}

/// Whether a declaration binds its assignments as a standalone assignment does: `declare`,
/// `typeset` or `readonly` outside any function (where they would be local), with no
/// attribute but `-a`, `-r` or `-g`, every flag written plainly.
fn binds_like_assignment(node: Node, src: &str) -> bool {
    let keyword = node.child(0).map(|c| text(c, src)).unwrap_or("");
    if !matches!(keyword, "declare" | "typeset" | "readonly") {
        return false;
    }
    let mut at = node.parent();
    while let Some(n) = at {
        if n.kind_name() == "function_definition" {
            return false;
        }
        at = n.parent();
    }
    let mut cursor = node.walk();
    node.named_children(&mut cursor)
        .all(|c| match c.kind_name() {
            "variable_assignment" => true,
            "word" => {
                let t = text(c, src);
                t.starts_with('-') && t[1..].chars().all(|f| matches!(f, 'a' | 'r' | 'g'))
            }
            _ => false,
        })
}

/// `${x:=v}` and `${x=v}` assign `v` to `x`.
fn assigning_expansion<'t>(node: Node<'t>, src: &str, sources: &mut Vec<(String, Source<'t>)>) {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    let Some(at) = children
        .iter()
        .position(|c| matches!(c.kind_name(), ":=" | "="))
    else {
        return;
    };
    let Some(name) = children[..at]
        .iter()
        .find(|c| c.kind_name() == "variable_name")
        .map(|n| text(*n, src).to_owned())
    else {
        return;
    };
    let values: Vec<Node> = children[at + 1..]
        .iter()
        .filter(|c| c.is_named())
        .copied()
        .collect();
    if values.is_empty() {
        sources.push((name.clone(), Source::Input));
    }
    for value in values {
        sources.push((name.clone(), Source::Value(value)));
    }
}

/// `declare -i`, `-A` and `-n` (and `local`, `typeset`…): integer and associative variables,
/// and name references, which read a variable named by their value.
fn declared(node: Node, src: &str, out: &mut Scope) {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.named_children(&mut cursor).collect();
    let flags: String = children
        .iter()
        .map(|c| text(*c, src))
        .filter(|t| t.starts_with('-'))
        .collect();
    for child in children {
        let target = match child.kind_name() {
            "variable_assignment" => child
                .child_by_field_name("name")
                .map(|n| builtins::base(text(n, src)).to_owned()),
            "variable_name" | "word" => Some(builtins::base(text(child, src)).to_owned()),
            _ => None,
        };
        let Some(target) = target.filter(|t| !t.starts_with(['-', '+'])) else {
            continue;
        };
        if flags.contains('i') {
            out.integers.insert(target.clone());
        }
        if flags.contains(['l', 'u', 'c']) {
            out.transformed.insert(target.clone());
        }
        if flags.contains(['a', 'A']) {
            out.arrays.insert(target.clone());
        }
        if flags.contains('A') {
            out.associative.insert(target.clone());
        }
        if flags.contains('n') {
            out.references.insert(target);
        }
    }
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
