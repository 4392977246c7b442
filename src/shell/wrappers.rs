//! Wrappers: commands that run another command. Their inner command is a simple command that
//! rules must cover, exactly like one written at the top level.
//!
//! The table is data: each row names the wrappers, how to find the inner command (which options
//! take a value, how many plain words come first), and an example with the inner argv it must
//! yield (the test `every_wrapper_row_finds_its_example_inner_command` runs every row).
//!
//! [`unwrap`] only reads: it takes one command (and what it reads on stdin) and returns what it
//! unwrapped ([`Unwrapped`]): whether it is transparent, the inner argv or script it runs, and
//! the hazards and features it shows. The walk records all of it, reading each inner command's
//! own wrappers in turn and analysing each script one level deeper; this module knows nothing
//! of the walk.
//!
//! A *transparent* wrapper only changes how its inner command runs (time limit, priority,
//! environment); an allow rule need not cover it, only what it runs. `sudo` and `doas` are not
//! transparent, and the hazard table flags them besides.

use super::hazards;
use super::word::{Dynamic, Word};
use super::{Assignment, Command, Feature, Hazard};

/// What a wrapper unwrapped, for the walk to record. The default is "not a wrapper": nothing
/// runs inside it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unwrapped {
    /// Whether allow rules need not cover the wrapper itself (its [`Command::wrapper`]).
    pub transparent: bool,
    /// What it runs, in order.
    pub inner: Vec<Inner>,
    /// Hazards of the wrapper command itself, with no command set: the walk attaches them to
    /// the wrapper's index.
    pub hazards: Vec<Hazard>,
    /// Features it shows besides [`Feature::Wrapper`] and [`Feature::NestedShell`], which the
    /// walk adds for each inner command and script.
    pub features: Vec<Feature>,
}

/// One thing a wrapper runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inner {
    /// An argv run as a simple command (`timeout 5 make`: `make`), with the assignments it
    /// runs with (`env A=1 make`).
    Command {
        /// Its words.
        words: Vec<Word>,
        /// `NAME=value` given to it by the wrapper.
        assignments: Vec<Assignment>,
        /// The context it runs in (`timeout`, `xargs`, `find -exec`…).
        how: String,
    },
    /// A script analysed as bash (`bash -c`, `env -S`, `watch`, a heredoc on a shell's stdin).
    Script {
        /// The script.
        text: String,
        /// The context it runs in (`bash -c`, `sh <<stdin`…).
        how: String,
    },
}

impl Unwrapped {
    /// Records an inner argv.
    fn command(&mut self, words: Vec<Word>, assignments: Vec<Assignment>, how: &str) {
        self.inner.push(Inner::Command {
            words,
            assignments,
            how: how.to_owned(),
        });
    }

    /// Records a script to analyse.
    fn script(&mut self, text: String, how: &str) {
        self.inner.push(Inner::Script {
            text,
            how: how.to_owned(),
        });
    }

    /// Records a hazard of the wrapper itself.
    fn hazard(&mut self, id: &'static str, detail: String) {
        self.hazards.push(Hazard {
            id,
            command: None,
            detail,
        });
    }
}

/// How a wrapper's inner command is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Options, then `leading` plain words, then the inner argv.
    Exec,
    /// `env`: options, `NAME=value` words (assignments of the inner command), then the inner
    /// argv; `-S STRING` is a script.
    Env,
    /// `xargs`: options, then the inner argv, which gets words from stdin.
    Xargs,
    /// `find`: each `-exec`/`-execdir`/`-ok`/`-okdir` clause up to `;` or `+` is an inner
    /// command; `{}` stands for a found path.
    Find,
    /// `bash -c SCRIPT` and friends: the script is analysed; without `-c` and without a script
    /// file, a heredoc or herestring on stdin is.
    Shell,
    /// `watch`: the words are joined into a script, unless `-x` runs them as argv.
    Watch,
    /// `flock`: options, a lock file, then the inner argv, or `-c SCRIPT`.
    Flock,
}

/// One row of the wrapper table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// Command names (basenames).
    pub names: &'static [&'static str],
    /// How to find the inner command.
    pub kind: Kind,
    /// Options that take the next word as their value (or `-nVALUE`, `--name=VALUE`).
    pub valued: &'static [&'static str],
    /// Plain words before the inner command (`timeout DURATION`).
    pub leading: usize,
    /// Options after which nothing runs (`command -v`).
    pub no_inner: &'static [&'static str],
    /// Whether allow rules need not cover the wrapper itself.
    pub transparent: bool,
    /// An example and the inner argv it must yield.
    pub example: &'static str,
    /// The inner argv of the example, words joined by spaces.
    pub inner: &'static str,
}

/// The wrappers Reasonix sees through.
#[rustfmt::skip]
pub const TABLE: &[Row] = &[
    Row { names: &["timeout"], kind: Kind::Exec, valued: &["-s", "--signal", "-k", "--kill-after"], leading: 1, no_inner: &[], transparent: true, example: "timeout -s KILL 60 npm test", inner: "npm test" },
    Row { names: &["nice"], kind: Kind::Exec, valued: &["-n", "--adjustment"], leading: 0, no_inner: &[], transparent: true, example: "nice -n 10 make", inner: "make" },
    Row { names: &["nohup"], kind: Kind::Exec, valued: &[], leading: 0, no_inner: &[], transparent: true, example: "nohup ./serve.sh", inner: "./serve.sh" },
    Row { names: &["stdbuf"], kind: Kind::Exec, valued: &["-i", "-o", "-e", "--input", "--output", "--error"], leading: 0, no_inner: &[], transparent: true, example: "stdbuf -o L grep x f", inner: "grep x f" },
    Row { names: &["env"], kind: Kind::Env, valued: &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"], leading: 0, no_inner: &[], transparent: true, example: "env -i FOO=1 rm -rf x", inner: "rm -rf x" },
    Row { names: &["command"], kind: Kind::Exec, valued: &[], leading: 0, no_inner: &["-v", "-V"], transparent: true, example: "command rm x", inner: "rm x" },
    Row { names: &["builtin"], kind: Kind::Exec, valued: &[], leading: 0, no_inner: &[], transparent: true, example: "builtin echo hi", inner: "echo hi" },
    Row { names: &["exec"], kind: Kind::Exec, valued: &["-a"], leading: 0, no_inner: &[], transparent: true, example: "exec -a name rm x", inner: "rm x" },
    Row { names: &["time"], kind: Kind::Exec, valued: &["-f", "--format", "-o", "--output"], leading: 0, no_inner: &[], transparent: true, example: "time -p cargo build", inner: "cargo build" },
    Row { names: &["xargs"], kind: Kind::Xargs, valued: &["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter", "--max-args", "--max-lines", "--max-procs", "--max-chars", "--eof", "--replace"], leading: 0, no_inner: &[], transparent: true, example: "xargs -n 1 rm -f", inner: "rm -f {input}" },
    Row { names: &["setsid"], kind: Kind::Exec, valued: &[], leading: 0, no_inner: &[], transparent: true, example: "setsid -f ./daemon", inner: "./daemon" },
    Row { names: &["watch"], kind: Kind::Watch, valued: &["-n", "--interval", "-q", "--equexit", "--differences"], leading: 0, no_inner: &[], transparent: true, example: "watch -n 5 'ls | wc -l'", inner: "ls" },
    Row { names: &["sudo"], kind: Kind::Exec, valued: &["-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user"], leading: 0, no_inner: &["-l", "--list", "-v", "--validate", "-k", "-K", "-V", "-e", "--edit"], transparent: false, example: "sudo -u root rm -rf /var/x", inner: "rm -rf /var/x" },
    Row { names: &["doas"], kind: Kind::Exec, valued: &["-u", "-C"], leading: 0, no_inner: &[], transparent: false, example: "doas -u root reboot", inner: "reboot" },
    Row { names: &["ionice"], kind: Kind::Exec, valued: &["-c", "--class", "-n", "--classdata"], leading: 0, no_inner: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"], transparent: true, example: "ionice -c 3 tar czf a.tgz src", inner: "tar czf a.tgz src" },
    Row { names: &["flock"], kind: Kind::Flock, valued: &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"], leading: 1, no_inner: &[], transparent: false, example: "flock /tmp/lock -c 'rm -rf build'", inner: "rm -rf build" },
    Row { names: &["chrt"], kind: Kind::Exec, valued: &["-T", "-P", "-D"], leading: 1, no_inner: &["-p", "--pid"], transparent: true, example: "chrt -f 10 ./rt", inner: "./rt" },
    Row { names: &["taskset"], kind: Kind::Exec, valued: &[], leading: 1, no_inner: &["-p", "--pid"], transparent: true, example: "taskset -c 0 make", inner: "make" },
    Row { names: &["busybox", "toybox"], kind: Kind::Exec, valued: &[], leading: 0, no_inner: &[], transparent: true, example: "busybox rm -rf x", inner: "rm -rf x" },
    Row { names: &["find"], kind: Kind::Find, valued: &[], leading: 0, no_inner: &[], transparent: false, example: "find . -name '*.o' -exec rm {} +", inner: "rm {}" },
    Row { names: &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"], kind: Kind::Shell, valued: &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"], leading: 0, no_inner: &[], transparent: true, example: "bash -lc 'rm -rf x'", inner: "rm -rf x" },
];

/// The row for a command basename.
pub fn row(name: &str) -> Option<&'static Row> {
    TABLE.iter().find(|r| r.names.contains(&name))
}

/// Skips options from `start`; returns the index of the first word after them, or `None` when
/// an option says nothing runs.
fn skip_options(words: &[Word], start: usize, row: &Row) -> Option<usize> {
    let mut i = start;
    while i < words.len() {
        let w = words[i].text.as_str();
        if w == "--" {
            return Some(i + 1);
        }
        if !w.starts_with('-') || w == "-" || !words[i].is_static() {
            break;
        }
        if row.no_inner.contains(&w) {
            return None;
        }
        if row.valued.contains(&w) {
            i += 2;
            continue;
        }
        if w.starts_with("--") {
            i += 1;
            continue;
        }
        // A cluster of short options: `-n5` carries its value; `-lc` is two flags.
        let first = w.get(..2).unwrap_or(w);
        if row
            .no_inner
            .iter()
            .any(|o| o.len() == 2 && w[1..].contains(&o[1..]))
        {
            return None;
        }
        i += if row.valued.contains(&first) && w.len() == 2 {
            2
        } else {
            1
        };
    }
    Some(i)
}

/// Reads `command` as a wrapper, if it is one: what it runs, given what it reads on `stdin`
/// (from a heredoc or herestring).
pub fn unwrap(command: &Command, stdin: Option<&Word>) -> Unwrapped {
    let mut out = Unwrapped::default();
    let Some(row) = row(command.basename()) else {
        return out;
    };
    if !command.words.first().is_some_and(Word::is_static) {
        return out;
    }
    let words = command.words.as_slice();
    let name = command.basename();
    // A wrapper reached by a path of its own (`./timeout`) may be anything: its inner command is
    // still found (deny rules see it), but the wrapper itself is not transparent.
    let row = &Row {
        transparent: row.transparent && command.trusted_name().is_some(),
        ..*row
    };
    match row.kind {
        Kind::Exec => {
            let Some(start) = skip_options(words, 1, row) else {
                return out;
            };
            let start = start + row.leading;
            if start < words.len() {
                out.transparent = row.transparent;
                out.command(words[start..].to_vec(), Vec::new(), name);
            }
        }
        Kind::Env => env(&mut out, words, row),
        Kind::Xargs => {
            let Some(start) = skip_options(words, 1, row) else {
                return out;
            };
            let replace = option_value(words, &["-I", "--replace", "-i"]);
            let mut inner: Vec<Word> = if start < words.len() {
                words[start..].to_vec()
            } else {
                vec![Word::fixed("echo")]
            };
            match replace {
                Some(token) => {
                    for w in inner.iter_mut().skip(1) {
                        if w.text.contains(&token) {
                            w.dynamic.insert(Dynamic::Input);
                        }
                    }
                }
                None => inner.push(Word::with("{input}", Dynamic::Input)),
            }
            out.transparent = row.transparent;
            out.command(inner, Vec::new(), "xargs");
        }
        Kind::Find => {
            let mut i = 1;
            while i < words.len() {
                let w = words[i].text.as_str();
                if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let clause = w;
                    let start = i + 1;
                    let mut end = start;
                    while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+") {
                        end += 1;
                    }
                    let inner: Vec<Word> = words[start..end]
                        .iter()
                        .map(|w| {
                            let mut w = w.clone();
                            if w.text.contains("{}") {
                                w.dynamic.insert(Dynamic::Found);
                            }
                            w
                        })
                        .collect();
                    if !inner.is_empty() {
                        out.command(inner, Vec::new(), &format!("find {clause}"));
                    }
                    i = end + 1;
                } else {
                    i += 1;
                }
            }
        }
        Kind::Shell => shell(&mut out, words, row, name, stdin),
        Kind::Watch => {
            let Some(start) = skip_options(words, 1, row) else {
                return out;
            };
            if start >= words.len() {
                return out;
            }
            out.transparent = row.transparent;
            let exec = words[1..start]
                .iter()
                .any(|w| w.text == "-x" || w.text == "--exec");
            if exec {
                out.command(words[start..].to_vec(), Vec::new(), "watch -x");
            } else {
                script(&mut out, &words[start..], "watch");
            }
        }
        Kind::Flock => {
            if let Some(at) = words
                .iter()
                .position(|w| w.text == "-c" || w.text == "--command")
            {
                out.transparent = row.transparent;
                script(
                    &mut out,
                    words.get(at + 1..at + 2).unwrap_or(&[]),
                    "flock -c",
                );
                return out;
            }
            let Some(start) = skip_options(words, 1, row) else {
                return out;
            };
            let start = start + row.leading;
            if start < words.len() {
                out.transparent = row.transparent;
                out.command(words[start..].to_vec(), Vec::new(), "flock");
            }
        }
    }
    out
}

/// The value of the first of `options` present (`-I X`, `-IX`, `--replace=X`).
fn option_value(words: &[Word], options: &[&str]) -> Option<String> {
    for (i, w) in words.iter().enumerate() {
        for o in options {
            if w.text == *o {
                return words.get(i + 1).map(|v| v.text.clone());
            }
            if let Some(v) = w.text.strip_prefix(&format!("{o}=")) {
                return Some(v.to_owned());
            }
            if o.len() == 2
                && !o.starts_with("--")
                && let Some(v) = w.text.strip_prefix(o)
                && !v.is_empty()
                && !w.text.starts_with("--")
            {
                return Some(v.to_owned());
            }
        }
    }
    None
}

/// Words run as a script: static ones joined by spaces; a dynamic one is a hazard.
fn script(out: &mut Unwrapped, words: &[Word], how: &str) {
    if words.is_empty() {
        return;
    }
    if let Some(w) = words.iter().find(|w| !w.is_static()) {
        let detail = format!("`{how}` runs a script that is not static: {:?}", w.text);
        out.hazard("dynamic_script", detail);
        out.features.push(Feature::InlineCode);
        return;
    }
    let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    out.script(text.join(" "), how);
}

/// `env [OPTIONS] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn env(out: &mut Unwrapped, words: &[Word], row: &Row) {
    if let Some(s) = option_value(words, &["-S", "--split-string"]) {
        out.transparent = row.transparent;
        let at = words
            .iter()
            .position(|w| w.text.starts_with("-S") || w.text.starts_with("--split-string"))
            .unwrap_or(0);
        let static_string = words[at..].iter().take(2).all(Word::is_static);
        if static_string {
            out.script(s, "env -S");
        } else {
            script(out, &words[at + 1..at + 2.min(words.len() - at)], "env -S");
        }
        return;
    }
    let Some(mut i) = skip_options(words, 1, row) else {
        return;
    };
    let mut assignments = Vec::new();
    while i < words.len() {
        let w = &words[i];
        match w.text.split_once('=') {
            Some((name, value))
                if !name.is_empty() && !name.contains('/') && !name.starts_with('-') =>
            {
                assignments.push(Assignment {
                    name: name.to_owned(),
                    value: value.to_owned(),
                    is_static: w.is_static(),
                });
                i += 1;
            }
            _ => break,
        }
    }
    for a in &assignments {
        out.hazards.extend(hazards::env(&a.name, None));
    }
    if i < words.len() {
        out.transparent = row.transparent;
        out.command(words[i..].to_vec(), assignments, "env");
    }
}

/// `bash [OPTIONS] -c SCRIPT [NAME [ARG]...]`, `bash FILE`, or `bash` reading `stdin`.
fn shell(out: &mut Unwrapped, words: &[Word], row: &Row, name: &str, stdin: Option<&Word>) {
    let mut i = 1;
    let mut inline = false;
    let mut from_stdin = false;
    while i < words.len() {
        let w = words[i].text.as_str();
        if w == "--" || w == "-" {
            i += 1;
            if w == "-" {
                from_stdin = true;
            }
            break;
        }
        if !(w.starts_with('-') || w.starts_with('+')) || !words[i].is_static() {
            break;
        }
        if row.valued.contains(&w) {
            i += 2;
            continue;
        }
        if !w.starts_with("--") {
            inline |= w[1..].contains('c');
            from_stdin |= w[1..].contains('s');
        }
        i += 1;
    }
    if inline {
        out.transparent = row.transparent;
        out.features.push(Feature::InlineCode);
        script(
            out,
            words.get(i..i + 1).unwrap_or(&[]),
            &format!("{name} -c"),
        );
        return;
    }
    if i < words.len() && !from_stdin {
        // `bash script.sh`: a script file, run like any program.
        return;
    }
    match stdin {
        Some(body) if body.is_static() => {
            out.transparent = row.transparent;
            out.script(body.text.clone(), &format!("{name} <<stdin"));
        }
        _ => {
            let detail = format!("`{name}` runs whatever script arrives on its stdin");
            out.hazard("stdin_script", detail);
            out.features.push(Feature::InlineCode);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::Analysis;

    #[test]
    fn every_wrapper_row_finds_its_example_inner_command() {
        for row in TABLE {
            let a = Analysis::of(row.example);
            let found: Vec<String> = a
                .commands
                .iter()
                .filter(|c| c.parent == Some(0))
                .map(|c| c.argv.join(" "))
                .collect();
            assert!(
                found.iter().any(|f| f == row.inner),
                "{}: want inner {:?}, got {found:?} ({:?})",
                row.example,
                row.inner,
                a.problems
            );
            assert_eq!(a.commands[0].wrapper, row.transparent, "{}", row.example);
            assert!(
                row.names.contains(&a.commands[0].basename()),
                "{}",
                row.example
            );
        }
    }

    #[test]
    fn a_shell_runs_the_script_on_its_stdin_only_when_that_script_is_static() {
        let a = Analysis::of("bash");
        let shell = &a.commands[0];
        let unwrapped = unwrap(shell, Some(&Word::fixed("rm -rf x")));
        assert!(unwrapped.transparent);
        assert_eq!(
            unwrapped.inner,
            [Inner::Script {
                text: "rm -rf x".into(),
                how: "bash <<stdin".into()
            }]
        );
        let unwrapped = unwrap(shell, Some(&Word::with("$X", Dynamic::Variable)));
        assert!(!unwrapped.transparent && unwrapped.inner.is_empty());
        let ids: Vec<&str> = unwrapped.hazards.iter().map(|h| h.id).collect();
        assert_eq!(ids, ["stdin_script"]);
        assert_eq!(unwrapped.features, [Feature::InlineCode]);
    }

    #[test]
    fn a_command_that_is_not_a_wrapper_unwraps_to_nothing() {
        let a = Analysis::of("ls -la");
        assert_eq!(unwrap(&a.commands[0], None), Unwrapped::default());
    }

    #[test]
    fn non_ascii_options_do_not_break_the_option_reader() {
        // Found by tests/fuzz_bash.rs: a byte slice inside a multi-byte character.
        for script in ["timeout -¥p x", "nice -é", "env -ü rm x", "bash -ç 'x'"] {
            let _ = Analysis::of(script);
        }
    }

    #[test]
    fn options_that_run_nothing_leave_no_inner_command() {
        for script in ["command -v rm", "sudo -l", "ionice -p 42"] {
            let a = Analysis::of(script);
            assert_eq!(a.commands.len(), 1, "{script}: {:?}", a.commands);
            assert!(!a.commands[0].wrapper);
        }
    }
}
