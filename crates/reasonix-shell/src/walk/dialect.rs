//! `sh` is not bash: on Debian and Ubuntu `/bin/sh` is dash, elsewhere it is bash in POSIX
//! mode. A script given to `sh -c`, `dash -c`, `sh` on stdin, `watch` (which runs `sh -c`),
//! `find -exec sh -c` or `xargs sh -c` is walked as bash, then held to the constructs both
//! shells read alike: a construct only bash reads (`$'...'`, `[[`, `<<<`, `&>`, brace
//! expansion, arrays, `${x/a/b}`…) splits into other commands under dash (`$'...'` is `$`
//! then a quoted string; `ls &> f .env` runs `ls` in the background, then `.env`), so the
//! script is not understood. And in POSIX mode an assignment before a special builtin stays
//! set (`HOME=/x :` changes `HOME`), which the walk does not follow.

use crate::Feature;
use crate::parse::KindName;
use tree_sitter::Node;

/// Node kinds only bash reads.
const BASH_ONLY_KINDS: &[&str] = &[
    "ansi_c_string",
    "translated_string",
    "process_substitution",
    "herestring_redirect",
    "c_style_for_statement",
    "brace_expression",
    "array",
    "extglob_pattern",
    "subscript",
];

/// Tokens only bash reads.
const BASH_ONLY_TOKENS: &[&str] = &[
    "[[", "]]", "((", "&>", "&>>", "|&", "<<<", ";&", ";;&", "function", "select", "coproc", "=~",
];

/// The operators of `${...}` that POSIX shells read.
const POSIX_EXPANSION: &[&str] = &[
    "${", "}", ":-", "-", ":=", "=", ":?", "?", ":+", "+", "#", "##", "%", "%%",
];

/// POSIX special builtins: an assignment before one stays set in POSIX mode.
const SPECIAL_BUILTINS: &[&str] = &[
    ":", ".", "break", "continue", "eval", "exec", "exit", "export", "readonly", "return", "set",
    "shift", "times", "trap", "unset",
];

/// What a POSIX shell would read otherwise than bash in the tree under `root`.
pub(super) fn differences(root: Node, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor = root.walk();
    'walk: loop {
        let node = cursor.node();
        let kind = node.kind_name();
        let text = || src.get(node.byte_range()).unwrap_or("").to_owned();
        if node.is_named() {
            if BASH_ONLY_KINDS.contains(&kind) {
                out.push(format!("{:?} ({kind})", text()));
            } else if kind == "expansion" {
                let mut c = node.walk();
                for child in node.children(&mut c) {
                    if !child.is_named() && !POSIX_EXPANSION.contains(&child.kind_name()) {
                        out.push(format!("{:?}", text()));
                        break;
                    }
                }
            }
        } else if BASH_ONLY_TOKENS.contains(&kind) {
            out.push(format!("`{kind}`"));
        } else if kind == "$"
            && node
                .next_sibling()
                .is_some_and(|n| n.kind_name() == "string" && n.start_byte() == node.end_byte())
        {
            // `$"..."`: a translated string to bash, `$` then a string to dash.
            out.push("`$\"...\"`".into());
        }
        if out.len() > 3 {
            break;
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out
}

impl super::Walker<'_> {
    /// Holds a script run by `sh` to what bash and dash read alike (see the module doc).
    pub(super) fn posix_reading(&mut self, root: Node) {
        let mut found = differences(root, self.src);
        if self.out.features.contains(&Feature::BraceExpansion) {
            found.push("brace expansion".into());
        }
        for c in &self.out.commands {
            if !c.assignments.is_empty()
                && c.parent.is_none()
                && SPECIAL_BUILTINS.contains(&c.name())
            {
                found.push(format!(
                    "an assignment before the special builtin `{}`, which stays set",
                    c.name()
                ));
            }
        }
        for f in found {
            self.problem(format!("`sh` (dash) reads this otherwise than bash: {f}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Analysis;

    #[test]
    fn each_bash_only_construct_is_not_understood_under_sh() {
        for script in [
            "echo $'a'",
            "echo $\"a\"",
            "cat <(ls)",
            "cat <<< x",
            "for ((i=0;i<2;i++)); do :; done",
            "echo {a,b}",
            "a=(1 2)",
            "echo ${a[1]}",
            "[[ -f x ]]",
            "ls &> /dev/null",
            "ls |& cat",
            "function f { :; }",
            "echo ${x/a/b}",
            "echo ${x:1:2}",
            "echo ${!x}",
            "echo ${x^^}",
            "HOME=/etc :",
        ] {
            let a = Analysis::of(&format!("sh -c {}", shell_quote(script)));
            assert!(!a.analysed, "sh -c {script:?}: {:?}", a.commands);
            let a = Analysis::of(&format!("bash -c {}", shell_quote(script)));
            assert!(
                a.analysed || script.starts_with("HOME"),
                "bash -c {script:?}: {:?}",
                a.problems
            );
        }
        for script in [
            "echo a; ls -la | wc -l",
            "x=${y:-z}; echo ${#x} ${x%%.*} ${x#a}",
            "if [ -f x ]; then cat x; fi",
            "for f in a b; do echo \"$f\"; done",
            "cat <<EOF\nhi\nEOF",
            "echo $((1 + 2)) $(date) `id`",
            "f() { echo x; }; f",
            "LANG=C ls",
        ] {
            let a = Analysis::of(&format!("sh -c {}", shell_quote(script)));
            assert!(a.analysed, "sh -c {script:?}: {:?}", a.problems);
        }
    }

    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
