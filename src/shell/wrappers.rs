//! Wrappers: commands that run another command. Their inner command is a simple command that
//! rules must cover, exactly like one written at the top level.
//!
//! The table is data: each row names the wrappers, how to find the inner command (which options
//! take a value, how many plain words come first), and an example with the inner argv it must
//! yield (the test `every_wrapper_row_finds_its_example_inner_command` runs every row).
//!
//! A *transparent* wrapper only changes how its inner command runs (time limit, priority,
//! environment); an allow rule need not cover it, only what it runs. `sudo` and `doas` are not
//! transparent, and the hazard table flags them besides.

use super::walk::Walker;
use super::word::{Dynamic, Word};
use super::{Assignment, Feature};

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

/// Reads the command at `index` as a wrapper, if it is one, recording its inner commands.
pub(super) fn unwrap(walker: &mut Walker<'_>, index: usize) {
    let command = &walker.analysis().commands[index];
    let Some(row) = row(command.basename()) else {
        return;
    };
    if !command.words.first().is_some_and(Word::is_static) {
        return;
    }
    let words = command.words.clone();
    let name = command.basename().to_owned();
    // A wrapper reached by a path of its own (`./timeout`) may be anything: its inner command is
    // still found (deny rules see it), but the wrapper itself is not transparent.
    let row = &Row {
        transparent: row.transparent && command.trusted_name().is_some(),
        ..*row
    };
    match row.kind {
        Kind::Exec => {
            let Some(start) = skip_options(&words, 1, row) else {
                return;
            };
            let start = start + row.leading;
            if start < words.len() {
                walker.analysis().commands[index].wrapper = row.transparent;
                walker.inner(index, words[start..].to_vec(), Vec::new(), &name);
            }
        }
        Kind::Env => env(walker, index, &words, row),
        Kind::Xargs => {
            let Some(start) = skip_options(&words, 1, row) else {
                return;
            };
            let replace = option_value(&words, &["-I", "--replace", "-i"]);
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
            walker.analysis().commands[index].wrapper = row.transparent;
            walker.inner(index, inner, Vec::new(), "xargs");
        }
        Kind::Find => {
            let mut i = 1;
            while i < words.len() {
                let w = words[i].text.as_str();
                if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let clause = w.to_owned();
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
                        walker.inner(index, inner, Vec::new(), &format!("find {clause}"));
                    }
                    i = end + 1;
                } else {
                    i += 1;
                }
            }
        }
        Kind::Shell => shell(walker, index, &words, row, &name),
        Kind::Watch => {
            let Some(start) = skip_options(&words, 1, row) else {
                return;
            };
            if start >= words.len() {
                return;
            }
            walker.analysis().commands[index].wrapper = row.transparent;
            let exec = words[1..start]
                .iter()
                .any(|w| w.text == "-x" || w.text == "--exec");
            if exec {
                walker.inner(index, words[start..].to_vec(), Vec::new(), "watch -x");
            } else {
                script(walker, index, &words[start..], "watch");
            }
        }
        Kind::Flock => {
            if let Some(at) = words
                .iter()
                .position(|w| w.text == "-c" || w.text == "--command")
            {
                walker.analysis().commands[index].wrapper = row.transparent;
                script(
                    walker,
                    index,
                    words.get(at + 1..at + 2).unwrap_or(&[]),
                    "flock -c",
                );
                return;
            }
            let Some(start) = skip_options(&words, 1, row) else {
                return;
            };
            let start = start + row.leading;
            if start < words.len() {
                walker.analysis().commands[index].wrapper = row.transparent;
                walker.inner(index, words[start..].to_vec(), Vec::new(), "flock");
            }
        }
    }
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

/// Analyses words as a script: static ones joined by spaces; a dynamic one is a hazard.
fn script(walker: &mut Walker<'_>, parent: usize, words: &[Word], how: &str) {
    if words.is_empty() {
        return;
    }
    if let Some(w) = words.iter().find(|w| !w.is_static()) {
        let detail = format!("`{how}` runs a script that is not static: {:?}", w.text);
        walker.analysis().hazards.push(super::Hazard {
            id: "dynamic_script",
            command: Some(parent),
            detail,
        });
        walker.analysis().features.insert(Feature::InlineCode);
        return;
    }
    let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    walker.nested(parent, &text.join(" "), how);
}

/// `env [OPTIONS] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn env(walker: &mut Walker<'_>, index: usize, words: &[Word], row: &Row) {
    if let Some(s) = option_value(words, &["-S", "--split-string"]) {
        walker.analysis().commands[index].wrapper = row.transparent;
        let at = words
            .iter()
            .position(|w| w.text.starts_with("-S") || w.text.starts_with("--split-string"))
            .unwrap_or(0);
        let static_string = words[at..].iter().take(2).all(Word::is_static);
        if static_string {
            walker.nested(index, &s, "env -S");
        } else {
            script(
                walker,
                index,
                &words[at + 1..at + 2.min(words.len() - at)],
                "env -S",
            );
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
        let hazards = super::hazards::env(&a.name, Some(index));
        walker.analysis().hazards.extend(hazards);
    }
    if i < words.len() {
        walker.analysis().commands[index].wrapper = row.transparent;
        walker.inner(index, words[i..].to_vec(), assignments, "env");
    }
}

/// `bash [OPTIONS] -c SCRIPT [NAME [ARG]...]`, `bash FILE`, or `bash` reading stdin.
fn shell(walker: &mut Walker<'_>, index: usize, words: &[Word], row: &Row, name: &str) {
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
        walker.analysis().commands[index].wrapper = row.transparent;
        walker.analysis().features.insert(Feature::InlineCode);
        script(
            walker,
            index,
            words.get(i..i + 1).unwrap_or(&[]),
            &format!("{name} -c"),
        );
        return;
    }
    if i < words.len() && !from_stdin {
        // `bash script.sh`: a script file, run like any program.
        return;
    }
    match walker.stdin(index).cloned() {
        Some(body) if body.is_static() => {
            walker.analysis().commands[index].wrapper = row.transparent;
            walker.nested(index, &body.text, &format!("{name} <<stdin"));
        }
        _ => {
            let detail = format!("`{name}` runs whatever script arrives on its stdin");
            walker.analysis().hazards.push(super::Hazard {
                id: "stdin_script",
                command: Some(index),
                detail,
            });
            walker.analysis().features.insert(Feature::InlineCode);
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
