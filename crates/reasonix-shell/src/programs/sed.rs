//! Sed, read for what its scripts do (GNU sed syntax). The scripts are found where sed finds
//! them: the values of `-e`/`--expression` (`-es/a/b/`, `--expr=…`), or else the first operand.
//! Each is parsed command by command; `e`, `w`/`W`, `r`/`R` (a file the deny rules cannot
//! see), `s///e` and `s///w` are hazards, and so is a script this parser cannot follow: what is
//! not understood is never "no risk". `-i` (`--in-place`, `--in-pl=.bak`, `-ni`) and `-f`
//! (`-fFILE`, `--file=`) are hazards of their own ([`SPEC`]). The hazard table's `sed_writes`
//! row calls [`command_risk`].

use super::spec::{Opt, Parsed, Risk, Role, Spec, Syntax};
use crate::Command;

/// `sed -i`.
pub const IN_PLACE: Risk = Risk {
    id: "sed_writes",
    why: "sed -i edits files in place",
};
/// `sed -f`.
pub const SCRIPT_FILE: Risk = Risk {
    id: "sed_writes",
    why: "the sed script comes from a file the analysis cannot read",
};

/// GNU sed's options.
#[rustfmt::skip]
pub const SPEC: Spec = Spec::new(&["sed", "gsed"], Syntax::GNU, &[
    Opt::optional(&["-i", "--in-place"]).role(Role::Writes).risk(&IN_PLACE),
    Opt::value(&["-e", "--expression"]).role(Role::Program),
    Opt::value(&["-f", "--file"]).role(Role::ProgramFile).risk(&SCRIPT_FILE),
    Opt::value(&["-l", "--line-length"]),
    Opt::flag(&["-n", "--quiet", "--silent"]), Opt::flag(&["--debug"]), Opt::flag(&["--follow-symlinks"]),
    Opt::flag(&["--posix"]), Opt::flag(&["-E", "-r", "--regexp-extended"]), Opt::flag(&["-s", "--separate"]),
    Opt::flag(&["--sandbox"]), Opt::flag(&["-u", "--unbuffered"]), Opt::flag(&["-z", "--null-data"]),
    Opt::flag(&["--help"]), Opt::flag(&["--version"]),
]);

/// The sed scripts (the `-e` values, or the first operand) run commands, write or read files
/// they name, or cannot be parsed; or the script is not static.
pub fn command_risk(command: &Command, parsed: &Parsed) -> Option<String> {
    let words = &command.words[1..];
    let mut scripts: Vec<(&str, bool)> = parsed
        .with_role(Role::Program)
        .filter_map(|f| {
            let fixed = f.value_at.is_none_or(|i| words[i].is_static());
            f.value.map(|v| (v, fixed))
        })
        .collect();
    if scripts.is_empty() && parsed.with_role(Role::ProgramFile).next().is_none() {
        let &at = parsed.operands.first()?;
        scripts.push((words[at].text.as_str(), words[at].is_static()));
    }
    for (script, fixed) in scripts {
        if !fixed {
            return Some("the sed script is not static".into());
        }
        if let Some(risk) = script_risk(script) {
            return Some(risk);
        }
    }
    None
}

/// What in a sed script runs commands, writes or reads files, or is not understood (GNU sed
/// syntax).
pub fn script_risk(script: &str) -> Option<String> {
    match Script::new(script).risk() {
        Ok(risk) => risk,
        Err(()) => Some("the sed script cannot be parsed: not understood".into()),
    }
}

/// A parse of one script.
struct Script {
    s: Vec<char>,
    i: usize,
}

impl Script {
    fn new(script: &str) -> Script {
        Script {
            s: script.chars().collect(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    /// Reads a field delimited by `delim`, from just after the opening delimiter; stops after
    /// the closing one.
    fn field(&mut self, delim: char) -> Result<(), ()> {
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == '\\' {
                self.i += 1;
            } else if c == delim {
                return Ok(());
            } else if c == '\n' && delim != '\n' {
                return Err(());
            }
        }
        Err(())
    }

    /// Skips to the end of the line.
    fn line(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.i += 1;
        }
    }

    /// Text of `a`, `i`, `c`: the rest of the line, and further lines while one ends in `\`.
    fn text(&mut self) {
        loop {
            let start = self.i;
            self.line();
            // `\\` at the end of a line is an escaped backslash: the text ends there.
            let backslashes = self.s[start..self.i]
                .iter()
                .rev()
                .take_while(|c| **c == '\\')
                .count();
            let continued = backslashes % 2 == 1;
            if !continued || self.peek().is_none() {
                return;
            }
            self.i += 1;
        }
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(|c| c == ' ' || c == '\t') {
            self.i += 1;
        }
    }

    /// An address: a line number, `$`, `first~step`, `/re/` or `\cREc` with its flags.
    fn address(&mut self) -> Result<bool, ()> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '~') {
                    self.i += 1;
                }
            }
            Some('$') => self.i += 1,
            Some('/') => {
                self.i += 1;
                self.field('/')?;
                self.regex_flags();
            }
            Some('\\') => {
                let delim = *self.s.get(self.i + 1).ok_or(())?;
                self.i += 2;
                self.field(delim)?;
                self.regex_flags();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn regex_flags(&mut self) {
        while self.peek().is_some_and(|c| c == 'I' || c == 'M') {
            self.i += 1;
        }
    }

    /// The risk of the whole script; `Err` when it cannot be parsed.
    fn risk(&mut self) -> Result<Option<String>, ()> {
        loop {
            while self.peek().is_some_and(|c| c.is_whitespace() || c == ';') {
                self.i += 1;
            }
            let Some(_) = self.peek() else {
                return Ok(None);
            };
            if self.address()? {
                self.skip_blanks();
                if self.peek() == Some(',') {
                    self.i += 1;
                    self.skip_blanks();
                    if matches!(self.peek(), Some('+' | '~')) {
                        self.i += 1;
                    }
                    if !self.address()? {
                        return Err(());
                    }
                }
            }
            self.skip_blanks();
            while self.peek() == Some('!') {
                self.i += 1;
                self.skip_blanks();
            }
            let cmd = self.peek().ok_or(())?;
            self.i += 1;
            match cmd {
                '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'x' | 'n' | 'N' | 'p'
                | 'P' | 'z' | 'F' => {}
                '#' => self.line(),
                'q' | 'Q' | 'l' | 'L' => {
                    self.skip_blanks();
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                }
                // GNU sed ends a label, and `v`'s version, at a blank or `;`: what follows on
                // the line is the next command (`:x e id`, `v 4.2 w f`). Other seds read the
                // rest of the line as the label, which runs nothing; the GNU reading is kept.
                ':' | 'b' | 't' | 'T' | 'v' => {
                    self.skip_blanks();
                    while self.peek().is_some_and(|c| !c.is_whitespace() && c != ';') {
                        self.i += 1;
                    }
                }
                'a' | 'i' | 'c' => self.text(),
                'e' => return Ok(Some("the e command runs a shell command".into())),
                'w' | 'W' => return Ok(Some("the w command writes a file".into())),
                'r' | 'R' => {
                    return Ok(Some(
                        "the r command reads a file the path rules cannot see".into(),
                    ));
                }
                's' | 'y' => {
                    let delim = self.peek().ok_or(())?;
                    if delim == '\\' || delim == '\n' {
                        return Err(());
                    }
                    self.i += 1;
                    self.field(delim)?;
                    self.field(delim)?;
                    if cmd == 's' {
                        while let Some(c) = self.peek() {
                            match c {
                                ';' | '\n' | '}' | ' ' | '\t' => break,
                                'e' => {
                                    return Ok(Some(
                                        "the s///e flag runs the result as a command".into(),
                                    ));
                                }
                                'w' => return Ok(Some("the s///w flag writes a file".into())),
                                'g' | 'p' | 'i' | 'I' | 'm' | 'M' => self.i += 1,
                                c if c.is_ascii_digit() => self.i += 1,
                                _ => return Err(()),
                            }
                        }
                    }
                }
                _ => return Err(()),
            }
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
            "0~3d",
            "/x/,+2d",
            "/re/I s/a/b/2",
            "# a comment\ns/a/b/",
            "1i\\\nheader line\\\nsecond",
            "$a footer",
            "\\%path%d",
            "v 4.2",
            ":a;N;$!ba;s/\\n/ /g",
            "1a foo\\\ne id",
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
            "r .env",
            ":x e id",
            ":x\ne id",
            "v 4.2 w out",
            "bx; e id",
            "1a foo\\\\\ne id",
            "1R /etc/shadow",
            "k",
            "s/a/b",
            "s/a/b/q",
            "/unterminated",
            "1,",
        ] {
            assert!(script_risk(risky).is_some(), "{risky}");
        }
    }
}
