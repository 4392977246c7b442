//! Redirections: what each `<`, `>`, `>>`, `<>`, `>&`, heredoc and herestring does, the
//! [`Redirect`] records, the redirection features and hazards (`/dev/tcp`, a target decided at
//! run time), and what a command reads on stdin from a heredoc or herestring (a shell wrapper
//! may run it as a script).

use crate::parse::KindName;
use tree_sitter::Node;

use super::{Walker, fields};
use crate::word::Word;
use crate::{Feature, Redirect, RedirectKind, hazards};

/// Why the target of `>&` may run code.
const TWICE: &str = "bash expands the target of `>&` a second time when it is no descriptor, running the command substitutions its text holds";

impl Walker<'_> {
    /// One redirection node; `command` is the simple command it applies to, if any.
    pub(super) fn redirect(&mut self, node: Node, command: Option<usize>) {
        if let Some(fd) = node.child_by_field_name("descriptor")
            && !is_descriptor(self.text(fd))
            && command.is_none()
        {
            // `{ ls; } -x>&1`: the word `-x`, then `>&1`, to bash, where no command takes it
            // (a simple command's words take it: `Walker::redirect_arguments`).
            self.problem(format!(
                "tree-sitter took {:?} for a file descriptor; bash reads a word of the command",
                self.text(fd)
            ));
        }
        match node.kind_name() {
            "heredoc_redirect" => self.heredoc(node, command),
            "herestring_redirect" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                let mut body = Word::default();
                for child in children {
                    if child.kind_name() != "file_descriptor" {
                        body.push(self.word(child));
                    }
                }
                self.out.redirects.push(Redirect {
                    op: "<<<".into(),
                    fd: None,
                    target: None,
                    is_static: body.is_static(),
                    kind: RedirectKind::Herestring,
                    command,
                });
                if let Some(c) = command {
                    self.stdin.insert(c, body);
                }
            }
            _ => self.file_redirect(node, command),
        }
    }

    fn file_redirect(&mut self, node: Node, command: Option<usize>) {
        let fd = node
            .child_by_field_name("descriptor")
            .map(|d| self.text(d))
            .filter(|d| is_descriptor(d))
            .map(str::to_owned);
        let mut op = String::new();
        let mut target = Word::default();
        let mut has_target = false;
        // A descriptor closed (`>&-`, `>& -x`) has no target: its words are the command's.
        let closing = closes(node, self.src) != Close::No;
        let mut end = None;
        for (field, child) in fields(node) {
            if field == Some("destination") {
                if end == Some(child.start_byte()) {
                    // `> {\*P`: one word to bash, two to tree-sitter.
                    self.problem(format!(
                        "tree-sitter split the word at {:?} in two",
                        self.text(child)
                    ));
                }
                end = Some(child.end_byte());
            }
            match field {
                // Only the first destination is the target: later words are arguments of the
                // command (`extra_words`).
                Some("destination") if has_target || closing => {}
                Some("destination") => {
                    target.push(self.word(child));
                    has_target = true;
                }
                Some("descriptor") => {}
                _ if !child.is_named() => op.push_str(self.text(child)),
                _ => self.visit(child),
            }
        }
        let text = target.text.clone();
        // A number, `-`, or a number and `-` (`3>&1-` moves the descriptor).
        let descriptor = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        let duplicate = matches!(op.as_str(), ">&" | "<&" | ">&-" | "<&-")
            && target.is_static()
            && (text.is_empty()
                || text == "-"
                || descriptor(&text)
                || text.strip_suffix('-').is_some_and(descriptor));
        // `>& WORD` and `1>& WORD` with a WORD that is no descriptor: bash expands the text it
        // got a second time (under bash 5.2, `>& '$(id)x'` runs `id` and writes `x`, `>& "'a'"`
        // writes `a`, `>& '~/k'` writes `$HOME/k`), so code in it runs and the file is not its
        // text.
        let twice = has_target
            && !duplicate
            && !closing
            && op == ">&"
            && fd.as_deref().is_none_or(|f| f == "1");
        if twice && (!target.is_static() || text.contains(['$', '`'])) {
            self.code(&format!("{op} {text}"), TWICE, command);
        }
        let is_static =
            target.is_static() && !(twice && text.contains(['$', '`', '\'', '"', '\\', '~', '{']));
        let kind = if duplicate || !has_target {
            RedirectKind::Duplicate
        } else if is_static && is_device(&text) {
            RedirectKind::Device
        } else if is_static && (text.starts_with("/dev/tcp/") || text.starts_with("/dev/udp/")) {
            self.out.features.insert(Feature::NetworkRedirect);
            self.out
                .hazards
                .push(hazards::network_redirect(&op, &text, command));
            RedirectKind::Network
        } else {
            match op.as_str() {
                "<" => RedirectKind::Read,
                ">>" | "&>>" => RedirectKind::Append,
                "<>" => RedirectKind::ReadWrite,
                _ => RedirectKind::Write,
            }
        };
        match kind {
            RedirectKind::Read => {
                self.out.features.insert(Feature::RedirectRead);
            }
            RedirectKind::Write | RedirectKind::Append | RedirectKind::ReadWrite => {
                self.out.features.insert(Feature::RedirectWrite);
            }
            _ => {}
        }
        if !is_static && kind != RedirectKind::Duplicate {
            self.out
                .hazards
                .push(hazards::dynamic_redirect(&op, &text, command));
        }
        self.out.redirects.push(Redirect {
            op,
            fd,
            target: has_target.then_some(text),
            is_static,
            kind,
            command,
        });
    }

    fn heredoc(&mut self, node: Node, command: Option<usize>) {
        let mut quoted = false;
        let mut delimiter = String::new();
        let mut body = Word::default();
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for (i, child) in children.into_iter().enumerate() {
            match child.kind_name() {
                "heredoc_start" => {
                    let raw = self.text(child);
                    quoted = raw.contains(['\'', '"', '\\']);
                    // Quote removal, as bash does to the delimiter word.
                    delimiter = raw.chars().filter(|c| !matches!(c, '\'' | '"')).collect();
                    delimiter = crate::word::unquote(&delimiter);
                }
                "heredoc_end" if self.text(child).trim_start_matches('\t') != delimiter => {
                    // `<<- $P$` left open: bash reads the body to the end of the script;
                    // tree-sitter ended it at other text.
                    self.problem(format!(
                        "tree-sitter ended the here-document at {:?}, not at its delimiter {delimiter:?}",
                        self.text(child)
                    ));
                }
                "heredoc_body" => {
                    body = Word::fixed(self.text(child));
                    if !quoted {
                        let mut c = child.walk();
                        let parts: Vec<Node> = child.named_children(&mut c).collect();
                        let mut run = child.start_byte();
                        for part in parts {
                            if part.kind_name() != "heredoc_content" {
                                // The text between what tree-sitter read as expansions.
                                if let Some(text) = self.src.get(run..part.start_byte()) {
                                    self.missed(text);
                                }
                                run = part.end_byte();
                                if self.text(part).contains("\\\n") {
                                    // `$(r\<newline>m x)`: bash joins the lines of an
                                    // unquoted body first; tree-sitter reads two words.
                                    self.problem(format!(
                                        "a backslash-newline inside {:?} of a here-document",
                                        self.text(part)
                                    ));
                                }
                                let w = self.word(part);
                                body.dynamic.extend(w.dynamic);
                            }
                        }
                        if let Some(text) = self.src.get(run..child.end_byte()) {
                            self.missed(text);
                        }
                    }
                }
                "heredoc_end" | "<<" | "<<-" => {}
                // `cat <<EOF file`: `file` is an argument of the command (`extra_words`).
                _ if node.field_name_for_child(i as u32) == Some("argument") => {}
                _ if child.is_named() => self.visit(child),
                _ => {}
            }
        }
        self.out.redirects.push(Redirect {
            op: "<<".into(),
            fd: None,
            target: None,
            is_static: body.is_static(),
            kind: RedirectKind::Heredoc,
            command,
        });
        if let Some(c) = command {
            self.stdin.insert(c, body);
        }
    }
}

/// Whether a redirection closes its descriptor, and how it was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Close {
    /// It does not (or not in a way that changes its words).
    No,
    /// `>&-`, `<&-` as one operator: every word after it is the command's.
    Operator,
    /// `>&` or `<&`, then a word that starts with `-`: bash reads that `-` alone (`>& -x` closes
    /// the descriptor, and `x` is a word of the command); tree-sitter takes `-x` for the target.
    Dash,
}

/// How `node` closes a descriptor, read from its operator and its first destination.
pub(super) fn closes(node: Node, src: &str) -> Close {
    // Every closing form has a `&` (`>&-`, `<&-`, `>& -x`): without one, no need to read the
    // redirection's parts (most redirections: `2>/dev/null`, `>> log`).
    if node.kind_name() != "file_redirect"
        || !src.get(node.byte_range()).is_some_and(|t| t.contains('&'))
    {
        return Close::No;
    }
    let mut op = None;
    for (field, child) in fields(node) {
        match field {
            Some("destination") => {
                let text = src.get(child.byte_range()).unwrap_or("");
                return match op {
                    Some(">&-" | "<&-") => Close::Operator,
                    Some(">&" | "<&") if text.starts_with('-') => Close::Dash,
                    _ => Close::No,
                };
            }
            Some("descriptor") => {}
            _ if !child.is_named() => op = Some(child.kind_name()),
            _ => {}
        }
    }
    Close::No
}

/// The words tree-sitter files under a redirection that are not its target: in `cmd <in a b`,
/// `a` and `b`; in `cmd <<EOF file`, `file`; in `cmd >&- a`, `a`. Bash gives them to the
/// command as arguments. (In `cmd >& -a b`, `b`: what follows the `-` of `-a` is an argument
/// too, which the walk reads itself.)
pub(super) fn extra_words<'t>(node: Node<'t>, src: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut target = closes(node, src) == Close::Operator;
    for (field, child) in fields(node) {
        match (node.kind_name(), field) {
            ("file_redirect", Some("destination")) if !target => target = true,
            ("file_redirect", Some("destination")) | ("heredoc_redirect", Some("argument")) => {
                out.push(child)
            }
            _ => {}
        }
    }
    out
}

/// A descriptor bash reads before a redirection: digits, or `{NAME}` (a variable that gets a
/// new descriptor).
pub(super) fn is_descriptor(text: &str) -> bool {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let named = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .is_some_and(super::words::is_name);
    digits || named
}

/// Device files that are harmless to redirect to or from, or to name as a program's output
/// (`curl -o /dev/null`, `sort -o /dev/stdout`): no file changes.
pub(crate) fn is_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/stdin"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/zero"
            | "/dev/tty"
            | "/dev/random"
            | "/dev/urandom"
            | "/dev/full"
    ) || path
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}
