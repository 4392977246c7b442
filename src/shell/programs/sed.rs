//! Sed scripts, read for what they do (GNU sed syntax): the scripts are found in sed's argv
//! (`-e`, `--expression`, or the first operand), and each is parsed command by command for
//! `e`, `w`/`W`, `s///e` and `s///w`; `-i` and `-f` are hazards of their own. The hazard
//! table's `sed_writes` row calls [`command_risk`].

use crate::shell::Command;

/// The sed scripts (`-e`, `--expression`, or the first operand) edit in place, read a script
/// file, or use the `e`/`w`/`W` commands or the `s///e`/`s///w` flags.
pub fn command_risk(command: &Command) -> Option<String> {
    let args = &command.argv[1..];
    let mut scripts: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut first_operand = None;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "-i"
            || a.starts_with("--in-place")
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].contains('i')
                && !a.starts_with("-e"))
        {
            return Some("-i edits files in place".into());
        }
        if matches!(a, "-f" | "--file") || a.starts_with("--file=") {
            return Some("the script comes from a file".into());
        }
        if matches!(a, "-e" | "--expression") {
            if let Some(s) = args.get(i + 1) {
                scripts.push(s);
            }
            i += 2;
            continue;
        }
        if let Some(s) = a.strip_prefix("--expression=") {
            scripts.push(s);
        } else if let Some(s) = a.strip_prefix("-e").filter(|s| !s.is_empty()) {
            scripts.push(s);
        } else if !a.starts_with('-') && first_operand.is_none() {
            first_operand = Some(i);
        } else if matches!(a, "-l" | "--line-length") {
            i += 1;
        }
        i += 1;
    }
    if scripts.is_empty() {
        let at = first_operand?;
        if !command.words.get(at + 1).is_some_and(|w| w.is_static()) {
            return Some("the sed script is not static".into());
        }
        scripts.push(&args[at]);
    }
    scripts.into_iter().find_map(script_risk)
}

/// What in a sed script runs commands or writes files (GNU sed syntax).
pub fn script_risk(script: &str) -> Option<String> {
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < s.len() && (s[*i].is_whitespace() || s[*i] == ';') {
            *i += 1;
        }
    };
    // Reads a delimited field starting after the delimiter; returns the index after its end.
    let field = |mut i: usize, delim: char| -> Option<usize> {
        while i < s.len() {
            if s[i] == '\\' {
                i += 2;
                continue;
            }
            if s[i] == delim {
                return Some(i + 1);
            }
            i += 1;
        }
        None
    };
    let to_line_end = |mut i: usize| {
        while i < s.len() && s[i] != '\n' {
            i += 1;
        }
        i
    };
    loop {
        skip_ws(&mut i);
        if i >= s.len() {
            return None;
        }
        // Addresses: numbers, `$`, `/re/`, `\cREc`, with `,`, `~`, `!`, `+`.
        loop {
            match s.get(i) {
                Some(c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '~' | '!' | '+' | ' ') => {
                    i += 1
                }
                Some('/') => i = field(i + 1, '/')?,
                Some('\\') if i + 1 < s.len() => {
                    let d = s[i + 1];
                    i = field(i + 2, d)?;
                }
                _ => break,
            }
            // A regex address may carry I or M flags.
            while matches!(s.get(i), Some('I' | 'M'))
                && !matches!(s.get(i + 1), Some(c) if c.is_alphabetic())
            {
                i += 1;
            }
        }
        let &cmd = s.get(i)?;
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'x' | 'n' | 'N' | 'p' | 'P'
            | 'z' | 'F' => {}
            'q' | 'Q' | 'l' | 'L' => {
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' => {
                while i < s.len() && s[i] != ';' && s[i] != '\n' {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' | 'r' | 'R' => i = to_line_end(i),
            'e' => return Some("the e command runs a shell command".into()),
            'w' | 'W' => return Some("the w command writes a file".into()),
            's' | 'y' => {
                let delim = *s.get(i)?;
                let after_pattern = field(i + 1, delim)?;
                i = field(after_pattern, delim)?;
                if cmd == 's' {
                    while i < s.len() && !matches!(s[i], ';' | '\n' | '}') {
                        match s[i] {
                            'e' => {
                                return Some("the s///e flag runs the result as a command".into());
                            }
                            'w' => return Some("the s///w flag writes a file".into()),
                            _ => i += 1,
                        }
                    }
                }
            }
            other => return Some(format!("unknown sed command {other:?}: not understood")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts_are_read_for_what_they_do() {
        for benign in [
            "s/a/b/g",
            "1,5p",
            "/re/d",
            "s|a/b|c|",
            "$!N;P;D",
            "y/abc/xyz/",
            "/start/,/end/{s/x/y/;p}",
            "s/e/w/",
            "3q",
            ":a;N;ba",
        ] {
            assert!(
                script_risk(benign).is_none(),
                "{benign}: {:?}",
                script_risk(benign)
            );
        }
        for risky in [
            "s/a/b/e",
            "s/a/b/w out",
            "1e id",
            "w out",
            "/x/W out",
            "s/a/b/gw out",
            "k",
        ] {
            assert!(script_risk(risky).is_some(), "{risky}");
        }
    }
}
