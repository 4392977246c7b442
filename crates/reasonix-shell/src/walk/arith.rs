//! Arithmetic: the places bash evaluates text as arithmetic, and whether that text may run
//! code there.
//!
//! Bash expands an array subscript — `$(...)` included — wherever it evaluates arithmetic, and
//! it evaluates a variable's value as arithmetic in turn. So `x='a[$(id)]'; (( x ))` runs `id`,
//! as do `[[ $x -eq 1 ]]`, `let "$x"`, `declare -i n=$x`, `arr[$x]=1`, `${arr[$x]}`,
//! `${s:$x}`, `printf -v "$x" …`, `read "$x"`, `[ -v "$x" ]`, `declare -n r=$x` and `${!x}`,
//! though no `$(...)` is written where the walk finds commands. The contexts (from bash's
//! manual and tried one by one under bash 5.2): `(( ))`, `$(( ))`, `$[ ]`, `for (( ))`, `let`,
//! the integer operators of `[[ ]]` (`-eq -ne -lt -le -gt -ge`; not `[`/`test`, which refuse
//! text that is not a number), subscripts of indexed arrays in expansions and assignments
//! (`arr[k]=`, `arr=([k]=v)`), substring offsets and lengths, the value of a variable declared
//! `-i`, and every operand that names a variable (`declare`/`typeset`/`local`/`export`/
//! `readonly`, `printf -v`, `read`, `mapfile`, `getopts`, `test -v`, `[ -v`, `[[ -v`,
//! `unset`, namerefs, indirect expansion). Prompt expansion (`${x@P}`) runs the substitutions
//! stored in `x` outright.
//!
//! A text there is safe when bash cannot find code in it: a number, a name, operators, and
//! subscripts of the same, with no `$` or backtick left after quote removal, and every name a
//! variable that cannot hold code ([`Scope::is_tainted`](super::scope::Scope::is_tainted): one
//! the script leaves to the environment, or assigns only such safe text). Anything else is
//! dynamic code: the hazard `dynamic_code`, which no prefix rule or fallback allows.

use crate::parse::KindName;
use tree_sitter::Node;

use super::{Walker, text};
use crate::Hazard;
use crate::word::{self, Piece, Word};

/// The operators of `[[ ]]` that compare integers, evaluating both sides as arithmetic.
const INTEGER_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

const ARITHMETIC: &str = "bash evaluates it as arithmetic or as a variable's name, where an array subscript runs any `$(...)` it holds";
const PROMPT: &str = "prompt expansion runs the command substitutions the value holds";

/// Special parameters that always hold a number or flags.
const NUMERIC_SPECIALS: &[&str] = &["#", "?", "$", "!", "-"];

/// Whether text that reaches arithmetic after quote removal is safe: no `$` or backtick, and
/// every name in it a variable that cannot hold code.
pub(super) fn text_is_safe(text: &str, tainted: &dyn Fn(&str) -> bool) -> bool {
    if text.contains(['$', '`']) {
        return false;
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_digit() {
            // A number, in any base: `10`, `0x1f`, `2#1010`, `64#a_@`.
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || b"_#@".contains(&bytes[i]))
            {
                i += 1;
            }
        } else if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            if tainted(&text[start..i]) {
                return false;
            }
        } else {
            i += 1;
        }
    }
    true
}

/// Whether a word or value node, once bash has expanded it, is safe to evaluate as
/// arithmetic.
pub(super) fn value_is_safe(node: Node, src: &str, tainted: &dyn Fn(&str) -> bool) -> bool {
    let raw = text(node, src);
    match node.kind_name() {
        "number" | "arithmetic_expansion" => true,
        "word" => text_is_safe(&word::unquote(raw), tainted),
        "variable_name" => !tainted(raw),
        "raw_string" => text_is_safe(raw.trim_matches('\''), tainted),
        "ansi_c_string" => text_is_safe(&word::decode_ansi_c(raw), tainted),
        "string_content" => text_is_safe(&word::decode_double(raw), tainted),
        "string" | "translated_string" | "concatenation" | "array" | "brace_expression" => {
            let mut cursor = node.walk();
            let safe = node
                .named_children(&mut cursor)
                .all(|c| value_is_safe(c, src, tainted));
            safe && (node.kind_name() != "brace_expression" || text_is_safe(raw, tainted))
        }
        "simple_expansion" | "expansion" => expansion_is_safe(node, src, tainted),
        _ => false,
    }
}

/// Whether what an expansion gives is safe: a variable that cannot hold code, a number (`$#`,
/// `${#x}`), or a default that is itself safe (`${n:-0}`).
fn expansion_is_safe(node: Node, src: &str, tainted: &dyn Fn(&str) -> bool) -> bool {
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    let inner: Vec<&Node> = children
        .iter()
        .filter(|c| !matches!(c.kind_name(), "$" | "${" | "}"))
        .collect();
    match inner.as_slice() {
        [name] if matches!(name.kind_name(), "variable_name" | "special_variable_name") => {
            let name = text(**name, src);
            NUMERIC_SPECIALS.contains(&name) || !tainted(name)
        }
        [length, ..] if length.kind_name() == "#" => true,
        [subscript] if subscript.kind_name() == "subscript" => {
            expression_is_safe(**subscript, src, tainted)
        }
        [name, operator, rest @ ..]
            if matches!(name.kind_name(), "variable_name" | "special_variable_name")
                && matches!(operator.kind_name(), ":-" | "-" | ":=" | "=" | ":?" | "?") =>
        {
            let name = text(**name, src);
            (NUMERIC_SPECIALS.contains(&name) || !tainted(name))
                && rest.iter().all(|r| value_is_safe(**r, src, tainted))
        }
        _ => false,
    }
}

/// Whether an arithmetic expression node (inside `(( ))`, `$(( ))`, `for (( ))`, a
/// subscript) runs nothing.
pub(super) fn expression_is_safe(node: Node, src: &str, tainted: &dyn Fn(&str) -> bool) -> bool {
    match node.kind_name() {
        "number" | "arithmetic_expansion" => true,
        "variable_name" => !tainted(text(node, src)),
        "word" => text_is_safe(&word::unquote(text(node, src)), tainted),
        "simple_expansion" | "expansion" => expansion_is_safe(node, src, tainted),
        "string" | "raw_string" | "concatenation" => value_is_safe(node, src, tainted),
        "subscript" => {
            let name = node
                .child_by_field_name("name")
                .map(|n| text(n, src))
                .unwrap_or("");
            !tainted(name)
                && node
                    .child_by_field_name("index")
                    .is_none_or(|i| expression_is_safe(i, src, tainted))
        }
        "variable_assignment" => {
            node.child_by_field_name("name")
                .is_none_or(|n| expression_is_safe(n, src, tainted))
                && node
                    .child_by_field_name("value")
                    .is_none_or(|v| expression_is_safe(v, src, tainted))
        }
        "binary_expression"
        | "unary_expression"
        | "ternary_expression"
        | "postfix_expression"
        | "parenthesized_expression" => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .all(|c| expression_is_safe(c, src, tainted))
        }
        _ => false,
    }
}

/// The text of a node that holds no expansion, after quote removal.
fn static_text(node: Node, src: &str) -> Option<String> {
    let raw = text(node, src);
    Some(match node.kind_name() {
        "word" | "number" | "variable_name" => word::unquote(raw),
        "raw_string" => raw.trim_matches('\'').to_owned(),
        "ansi_c_string" => word::decode_ansi_c(raw),
        "string_content" => word::decode_double(raw),
        "string" | "translated_string" | "concatenation" => {
            let mut cursor = node.walk();
            let mut out = String::new();
            for child in node.named_children(&mut cursor) {
                out.push_str(&static_text(child, src)?);
            }
            out
        }
        _ => return None,
    })
}

/// Whether an operand that names a variable (`read NAME`, `declare NAME=v`, `[ -v NAME ]`)
/// is safe: bash evaluates only the subscript of the name as arithmetic. An operand that is
/// not static is checked whole.
pub(super) fn name_is_safe(node: Node, src: &str, tainted: &dyn Fn(&str) -> bool) -> bool {
    let Some(name) = static_text(node, src) else {
        return value_is_safe(node, src, tainted);
    };
    let name = name.split('=').next().unwrap_or(&name);
    match (name.find('['), name.rfind(']')) {
        (Some(open), Some(close)) if open < close => text_is_safe(&name[open + 1..close], tainted),
        _ => !name.contains(['$', '`']),
    }
}

/// Whether the subscript of an assignment's target (`arr[k]=`) is safe: only `k` is
/// evaluated.
fn target_is_safe(subscript: Node, src: &str, tainted: &dyn Fn(&str) -> bool) -> bool {
    subscript
        .child_by_field_name("index")
        .is_none_or(|i| expression_is_safe(i, src, tainted))
}

/// Whether an expansion, by its source text, gives text safe for arithmetic: a variable that
/// cannot hold code, a number (`$#`, `${#x}`, `$((…))`).
fn source_is_safe(source: &str, tainted: &dyn Fn(&str) -> bool) -> bool {
    let Some(rest) = source.strip_prefix('$') else {
        return false;
    };
    if rest.starts_with("((") || rest.starts_with('[') {
        return true;
    }
    let name = match rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Some(inner) if inner.starts_with('#') => return true,
        Some(inner) => inner,
        None => rest,
    };
    let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    NUMERIC_SPECIALS.contains(&name) || (plain && !tainted(name))
}

/// [`value_is_safe`] for a word of argv (a wrapper's inner command has no nodes).
pub(super) fn word_is_safe(word: &Word, tainted: &dyn Fn(&str) -> bool) -> bool {
    if word.pieces.is_empty() {
        return text_is_safe(&word.text, tainted);
    }
    word.pieces.iter().all(|piece| match piece {
        Piece::Unquoted(raw) => text_is_safe(&word::unquote(raw), tainted),
        Piece::Quoted(text) => text_is_safe(text, tainted),
        Piece::Expansion(e) => source_is_safe(&e.source, tainted),
    })
}

/// [`name_is_safe`] for a word of argv.
fn word_names_safely(word: &Word, tainted: &dyn Fn(&str) -> bool) -> bool {
    let name = word.text.split('=').next().unwrap_or(&word.text);
    if !word.is_static() {
        return word_is_safe(word, tainted);
    }
    match (name.find('['), name.rfind(']')) {
        (Some(open), Some(close)) if open < close => text_is_safe(&name[open + 1..close], tainted),
        _ => !name.contains(['$', '`']),
    }
}

impl Walker<'_> {
    /// Whether `name` may hold code ([`Scope::is_tainted`](super::scope::Scope::is_tainted)).
    fn tainted(&self, name: &str) -> bool {
        self.scope.is_tainted(name)
    }

    fn dynamic_code(&mut self, what: &str, command: Option<usize>) {
        self.code(what, ARITHMETIC, command);
    }

    /// Records the hazard `dynamic_code`: `what` may run code, for the reason `why`.
    pub(super) fn code(&mut self, what: &str, why: &str, command: Option<usize>) {
        self.out.hazards.push(Hazard {
            id: "dynamic_code",
            command,
            detail: format!("`{what}`: {why}"),
        });
    }

    /// A variable declared `-i` that takes text from input or text that is not safe: bash
    /// evaluates it as arithmetic on assignment.
    pub(super) fn integers(&mut self) {
        let mut found: Vec<String> = self
            .scope
            .integers
            .iter()
            .filter(|n| self.scope.tainted.contains(*n))
            .cloned()
            .collect();
        found.sort();
        for name in found {
            self.dynamic_code(&format!("declare -i {name}"), None);
        }
        for what in self.scope.reference_code.clone() {
            self.dynamic_code(&what, None);
        }
    }

    /// Checks the expressions below an arithmetic node (`(( ))`, `$(( ))`, `for (( ))`).
    pub(super) fn arithmetic(&mut self, node: Node) -> bool {
        let tainted = |n: &str| self.tainted(n);
        let mut cursor = node.walk();
        let safe = node
            .named_children(&mut cursor)
            .filter(|c| c.kind_name() != "do_group" && c.kind_name() != "comment")
            .all(|c| expression_is_safe(c, self.src, &tainted));
        if !safe {
            let what = self.text(node).to_owned();
            self.dynamic_code(&what, None);
        }
        safe
    }

    /// Checks the integer comparisons of a `[[ ]]` and the `-v` tests of `[[ ]]` and `[ ]`
    /// (`[` compares integers without evaluating arithmetic).
    pub(super) fn test_expression(&mut self, node: Node) {
        let double = node.child(0).is_some_and(|c| c.kind_name() == "[[");
        let mut unsafe_operands = Vec::new();
        let tainted = |n: &str| self.tainted(n);
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind_name() {
                "binary_expression" | "unary_expression" => {
                    let operator = n
                        .child_by_field_name("operator")
                        .map(|o| text(o, self.src))
                        .unwrap_or("");
                    let mut cursor = n.walk();
                    let operands: Vec<Node> = n
                        .named_children(&mut cursor)
                        .filter(|c| c.kind_name() != "test_operator")
                        .collect();
                    if double && INTEGER_TESTS.contains(&operator) {
                        for o in &operands {
                            if !value_is_safe(*o, self.src, &tainted) {
                                unsafe_operands.push(*o);
                            }
                        }
                    } else if operator == "-v" {
                        for o in &operands {
                            if !name_is_safe(*o, self.src, &tainted) {
                                unsafe_operands.push(*o);
                            }
                        }
                    } else {
                        stack.extend(operands);
                    }
                }
                "parenthesized_expression" | "test_command" => {
                    let mut cursor = n.walk();
                    stack.extend(n.named_children(&mut cursor));
                }
                // In `[ … ]` an unquoted word decided at run time splits into words of its
                // own, which may be `-v NAME` (`X='x -a -v a[$(cmd)]'; [ -n $X ]`): bash then
                // evaluates NAME's subscript, and a `$(…)` there runs. `[[ … ]]` does not split.
                _ if !double && unquoted_run_time(n) => unsafe_operands.push(n),
                _ => {}
            }
        }
        for o in unsafe_operands {
            let what = self.text(o).to_owned();
            self.dynamic_code(&what, None);
        }
    }

    /// Checks what an expansion evaluates as arithmetic (a subscript, a substring's offset and
    /// length, an indirect name) and prompt expansion (`${x@P}`). Returns whether it is safe.
    pub(super) fn expansion_code(&mut self, node: Node) -> bool {
        if node.kind_name() != "expansion" {
            return true;
        }
        let tainted = |n: &str| self.tainted(n);
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        let mut safe = true;
        let mut prompt = false;
        let mut substring = false;
        for (i, child) in children.iter().enumerate() {
            match child.kind_name() {
                "subscript" => {
                    let name = child
                        .child_by_field_name("name")
                        .map(|n| text(n, self.src))
                        .unwrap_or("");
                    let index = child.child_by_field_name("index");
                    let list = index.is_some_and(|i| matches!(text(i, self.src), "@" | "*"));
                    if !self.scope.associative.contains(name)
                        && !list
                        && index.is_some_and(|i| !expression_is_safe(i, self.src, &tainted))
                    {
                        safe = false;
                    }
                }
                ":" => substring = true,
                "@" if children
                    .get(i + 1)
                    .is_some_and(|n| text(*n, self.src) == "P") =>
                {
                    prompt = true;
                }
                "!" if i == 1 => {
                    // `${!x}`: the variable named by `x`'s value, which may be `a[$(cmd)]`.
                    // `${!x[@]}`, `${!prefix*}` list names and keys.
                    let rest: Vec<&str> = children[i + 1..]
                        .iter()
                        .map(|c| text(*c, self.src))
                        .collect();
                    if let [name, "}"] = rest.as_slice()
                        && tainted(name)
                    {
                        safe = false;
                    }
                }
                _ if substring
                    && child.is_named()
                    && !expression_is_safe(*child, self.src, &tainted) =>
                {
                    safe = false;
                }
                _ => {}
            }
        }
        let what = self.text(node).to_owned();
        if !safe {
            self.dynamic_code(&what, None);
        }
        if prompt {
            self.code(&what, PROMPT, None);
        }
        safe && !prompt
    }

    /// Checks the operands of a builtin that evaluate as arithmetic or name a variable (`let`,
    /// `test -v`, `unset`, `read`, `mapfile`, `printf -v`, `getopts`, and `declare` and its kin
    /// when a wrapper runs them: `command declare …`), on the words of the command at `index`,
    /// so that a builtin reached through `command` or `builtin` is checked as well.
    pub(super) fn builtin_operands(&mut self, index: usize, declaration: bool) {
        const CHECKED: &[&str] = &[
            "let", "test", "[", "unset", "declare", "typeset", "local", "export", "readonly",
        ];
        let command = &self.out.commands[index];
        let Some(name) = command
            .trusted_name()
            .filter(|n| CHECKED.contains(n) || super::builtins::FILLING.contains(n))
        else {
            return;
        };
        let words = &command.words[1..];
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        let flags: String = texts
            .iter()
            .filter(|t| t.starts_with('-') && **t != "--")
            .map(|t| &t[1..])
            .collect();
        // (operand, evaluated whole as arithmetic)
        let checked: Vec<(&Word, bool)> = match name {
            "let" => words.iter().map(|w| (w, true)).collect(),
            "test" | "[" => texts
                .iter()
                .enumerate()
                .filter(|(_, t)| **t == "-v")
                .filter_map(|(i, _)| words.get(i + 1).map(|w| (w, false)))
                .collect(),
            "unset" => words
                .iter()
                .filter(|w| !w.text.starts_with('-'))
                .map(|w| (w, false))
                .collect(),
            // A declaration the walk read from the tree is checked on its nodes.
            "declare" | "typeset" | "local" | "export" | "readonly" if declaration => Vec::new(),
            "declare" | "typeset" | "local" | "export" | "readonly" => {
                let whole = flags.contains(['i', 'n']);
                words
                    .iter()
                    .filter(|w| !w.text.starts_with(['-', '+']))
                    .map(|w| (w, whole))
                    .collect()
            }
            _ => super::builtins::filled(name, &texts)
                .into_iter()
                .filter_map(|(at, _)| at.and_then(|at| words.get(at)).map(|w| (w, false)))
                .collect(),
        };
        let tainted = |n: &str| self.tainted(n);
        let unsafe_operands: Vec<String> = checked
            .into_iter()
            .filter(|(w, arithmetic)| {
                if *arithmetic {
                    !word_is_safe(w, &tainted)
                } else {
                    !word_names_safely(w, &tainted)
                }
            })
            .map(|(w, _)| w.text.clone())
            .collect();
        for what in unsafe_operands {
            self.dynamic_code(&what, Some(index));
        }
    }

    /// Checks the operands of a declaration (`declare`, `local`, `export`…): names with
    /// subscripts, values of `-i` variables, targets of `-n` references.
    pub(super) fn declaration_operands(&mut self, index: usize, node: Node) {
        let mut cursor = node.walk();
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        let flags: String = children
            .iter()
            .map(|c| text(*c, self.src))
            .filter(|t| t.starts_with(['-', '+']))
            .collect();
        let integer = flags.contains('i');
        let reference = flags.contains('n');
        let mut names = Vec::new();
        let mut values = Vec::new();
        for child in children {
            if text(child, self.src).starts_with(['-', '+']) {
                continue;
            }
            if child.kind_name() != "variable_assignment" {
                names.push(child);
                continue;
            }
            let name = child.child_by_field_name("name");
            let base = name
                .map(|n| match n.kind_name() {
                    "subscript" => n
                        .child_by_field_name("name")
                        .map(|b| text(b, self.src))
                        .unwrap_or(""),
                    _ => text(n, self.src),
                })
                .unwrap_or("");
            if let Some(n) = name.filter(|n| n.kind_name() == "subscript")
                && !self.scope.associative.contains(base)
            {
                names.push(n);
            }
            if let Some(value) = child.child_by_field_name("value") {
                if reference {
                    names.push(value);
                } else if integer || self.scope.integers.contains(base) {
                    values.push(value);
                }
            }
        }
        self.check_operands(index, &names, false);
        self.check_operands(index, &values, true);
    }

    /// Checks operands that name variables, or (`arithmetic`) that bash evaluates whole.
    fn check_operands(&mut self, index: usize, operands: &[Node], arithmetic: bool) {
        let tainted = |n: &str| self.tainted(n);
        let unsafe_operands: Vec<String> = operands
            .iter()
            .filter(|o| match o.kind_name() {
                "subscript" => !target_is_safe(**o, self.src, &tainted),
                _ if arithmetic => !value_is_safe(**o, self.src, &tainted),
                _ => !name_is_safe(**o, self.src, &tainted),
            })
            .map(|o| text(*o, self.src).to_owned())
            .collect();
        for what in unsafe_operands {
            self.dynamic_code(&what, Some(index));
        }
    }

    /// Checks an assignment's name (`arr[k]=`) and, for a variable declared `-i`, its value.
    pub(super) fn assignment_code(&mut self, node: Node) {
        let tainted = |n: &str| self.tainted(n);
        let mut unsafe_parts = Vec::new();
        let name = node.child_by_field_name("name");
        let base = name.map(|n| match n.kind_name() {
            "subscript" => n
                .child_by_field_name("name")
                .map(|b| text(b, self.src))
                .unwrap_or(""),
            _ => text(n, self.src),
        });
        let associative = base.is_some_and(|b| self.scope.associative.contains(b));
        if let Some(n) = name
            && n.kind_name() == "subscript"
            && !associative
            && !target_is_safe(n, self.src, &tainted)
        {
            unsafe_parts.push(n);
        }
        if let Some(value) = node.child_by_field_name("value") {
            if base.is_some_and(|b| self.scope.integers.contains(b))
                && !value_is_safe(value, self.src, &tainted)
            {
                unsafe_parts.push(value);
            }
            if value.kind_name() == "array" && !associative {
                // `arr=([k]=v)`: `k` is a subscript.
                let mut cursor = value.walk();
                for element in value.named_children(&mut cursor) {
                    if let Some(key) = array_key(element, self.src)
                        && !key.iter().all(|k| value_is_safe(*k, self.src, &tainted))
                    {
                        unsafe_parts.push(element);
                    }
                }
            }
        }
        for part in unsafe_parts {
            let what = self.text(part).to_owned();
            self.dynamic_code(&what, None);
        }
    }
}

/// The key nodes of an array element written `[k]=v`: the parts between `[` and `]=`.
fn array_key<'t>(element: Node<'t>, src: &str) -> Option<Vec<Node<'t>>> {
    if element.kind_name() != "concatenation" || !text(element, src).starts_with('[') {
        return None;
    }
    let mut cursor = element.walk();
    let parts: Vec<Node> = element.named_children(&mut cursor).collect();
    let mut key = Vec::new();
    for part in parts.into_iter().skip(1) {
        if text(part, src).starts_with(']') {
            return Some(key);
        }
        key.push(part);
    }
    None
}

/// Whether `node` (an operand of a test) holds an expansion outside double quotes, which bash
/// splits into words when the test runs.
fn unquoted_run_time(node: Node) -> bool {
    match node.kind_name() {
        "simple_expansion" | "expansion" | "command_substitution" | "arithmetic_expansion" => true,
        "concatenation" => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor).any(unquoted_run_time)
        }
        _ => false,
    }
}
