//! Awk programs, read for what they do: the program is found in awk's argv (the first operand
//! unless `-f` names a file), and its code, string literals aside, is searched for `system()`,
//! pipes, prints to files and extensions. The hazard table's awk row calls [`command_risk`].

use crate::shell::Command;

/// The awk program (first operand unless `-f`) calls system(), pipes, prints to a file, or
/// loads an extension; or the program is not visible (`-f`, dynamic).
pub fn command_risk(command: &Command) -> Option<String> {
    let args = &command.argv[1..];
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if matches!(
            a,
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec"
        ) || a.starts_with("--file=")
            || a.starts_with("--load=")
            || a.starts_with("--include=")
        {
            return Some(format!(
                "{a}: the program comes from a file or loads an extension"
            ));
        }
        i += if matches!(a, "-F" | "-v" | "--assign" | "--field-separator") {
            2
        } else {
            1
        };
    }
    let index = i + 1;
    let program = command.words.get(index)?;
    if !program.is_static() {
        return Some("the awk program is not static".into());
    }
    program_risk(&program.text)
}

/// What in an awk program runs code or writes files. String literals are ignored.
pub fn program_risk(program: &str) -> Option<String> {
    let mut code = String::with_capacity(program.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in program.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
                code.push('"');
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        code.push(c);
    }
    let compact: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    if compact.contains("system(") || compact.contains("system (") {
        return Some("calls system()".into());
    }
    if compact.contains("@load") {
        return Some("loads an extension".into());
    }
    if compact.replace("||", "").contains('|') {
        return Some("pipes to or from a command".into());
    }
    for statement in code.split([';', '{', '}', '\n']) {
        let s = statement.trim_start();
        if (s.starts_with("print") || s.starts_with("printf")) && s.contains('>') {
            return Some("prints to a file".into());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awk_programs_are_read_for_what_they_do() {
        assert!(program_risk("{ print $1 }").is_none());
        assert!(program_risk("$3 > 100 { print $1 }").is_none());
        assert!(program_risk("{ print \"a > b\" }").is_none());
        assert!(program_risk("a || b { print }").is_none());
        assert!(program_risk("{ print > \"out\" }").is_some());
        assert!(program_risk("{ printf \"%s\", $0 >> \"out\" }").is_some());
        assert!(program_risk("{ print | \"sh\" }").is_some());
        assert!(program_risk("BEGIN { \"id\" | getline x }").is_some());
        assert!(program_risk("BEGIN{system (\"id\")}").is_some());
        assert!(program_risk("@load \"x\"").is_some());
    }
}
