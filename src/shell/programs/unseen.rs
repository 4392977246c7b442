//! The checks behind the hazard rows for what a program reads, writes or runs without the
//! command line naming it (issue 27, classes 5 and 6): a list of files fed on stdin or read
//! from a file (`--files0-from`), patterns or requests on stdin (`grep -f -`, `git cat-file
//! --batch`), folders compared whole (`diff -N DIR .`), files a man page's `.so` requests
//! name, a log or state file a wrapper's own option writes (`strace -o`, `valgrind
//! --log-file`, `fakeroot -s`, `script FILE`), and files edited in place (`yq --in-place`).
//!
//! They read the argv words directly, and match every abbreviation a GNU parser would take
//! (`--files0` is `--files0-from`): a word that may be the option is taken to be it.

use super::spec::Parsed;
use crate::shell::Command;

/// Whether `word` (before any `=`) is `long` or an abbreviation of it at least `min` bytes
/// long (`--fi` for `--files0-from`).
fn abbreviates(word: &str, long: &str, min: usize) -> bool {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    name.len() >= min && long.starts_with(name)
}

/// The value of a short option `-X` written `-X VALUE`, `-XVALUE`, or in a cluster of flags.
fn short_values(args: &[String], letter: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = args[i].as_str();
        i += 1;
        if w == "--" {
            break;
        }
        if w.starts_with("--") || !w.starts_with('-') || w.len() < 2 {
            continue;
        }
        if let Some(at) = w[1..].find(letter) {
            let rest = &w[1 + at + 1..];
            if rest.is_empty() {
                if let Some(v) = args.get(i) {
                    out.push(v.as_str());
                    i += 1;
                }
            } else {
                out.push(rest);
            }
        }
    }
    out
}

/// The values of a long option, `--name=V` or `--name V`, abbreviations included.
fn long_values<'a>(args: &'a [String], long: &str, min: usize) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = args[i].as_str();
        i += 1;
        if w == "--" {
            break;
        }
        if !w.starts_with("--") || !abbreviates(w, long, min) {
            continue;
        }
        match w.split_once('=') {
            Some((_, v)) => out.push(v),
            None => {
                if let Some(v) = args.get(i) {
                    out.push(v.as_str());
                    i += 1;
                }
            }
        }
    }
    out
}

fn args(command: &Command) -> &[String] {
    &command.argv[1..]
}

/// `wc`, `du`, `sort --files0-from=F`: reads the names of the files to read from F (or stdin).
pub fn files0_from(command: &Command, _: &Parsed) -> Option<String> {
    args(command)
        .iter()
        .take_while(|a| *a != "--")
        .find(|a| a.starts_with("--") && abbreviates(a, "--files0-from", 4))
        .map(|a| format!("{a} reads the names of the files it reads from a list"))
}

/// `grep -f -`, `rg --file=-`: the patterns come from stdin.
pub fn patterns_from_stdin(command: &Command, _: &Parsed) -> Option<String> {
    let a = args(command);
    short_values(a, 'f')
        .into_iter()
        .chain(long_values(a, "--file", 4))
        .any(|v| v == "-")
        .then(|| "-f - reads its patterns from stdin".to_owned())
}

/// `diff -N DIR .`, `diff --from-file`: folders compared whole, files the command line does not
/// name.
pub fn diff_folders(command: &Command, _: &Parsed) -> Option<String> {
    let a = args(command);
    let option = a.iter().take_while(|w| *w != "--").find(|w| {
        (w.starts_with('-') && !w.starts_with("--") && w.contains('N'))
            || [
                "--new-file",
                "--unidirectional-new-file",
                "--from-file",
                "--to-file",
            ]
            .iter()
            .any(|l| w.starts_with("--") && abbreviates(w, l, 5))
    });
    let folder = a
        .iter()
        .filter(|w| !w.starts_with('-'))
        .find(|w| matches!(w.as_str(), "." | "..") || w.ends_with('/') || w.ends_with("/."));
    option
        .or(folder)
        .map(|w| format!("{w}: compares folders whole, reading files it does not name"))
}

/// `man -l FILE`: a local page's `.so` requests read other files.
pub fn man_local(command: &Command, _: &Parsed) -> Option<String> {
    args(command)
        .iter()
        .take_while(|a| *a != "--")
        .find(|a| {
            (a.starts_with('-') && !a.starts_with("--") && a.contains('l'))
                || (a.starts_with("--") && abbreviates(a, "--local-file", 4))
        })
        .map(|a| format!("{a}: a local page's .so requests read files it does not name"))
}

/// `git grep --no-index`, `git diff --no-index`, `git cat-file --batch`: files outside what git
/// tracks, or `REV:PATH` requests read from stdin.
pub fn git_unseen(command: &Command, parsed: &Parsed) -> Option<String> {
    let sub = parsed.subcommand(0)?;
    let a = args(command);
    let found = match sub {
        "grep" | "diff" => a
            .iter()
            .find(|w| w.starts_with("--") && abbreviates(w, "--no-index", 6)),
        "cat-file" => a
            .iter()
            .find(|w| w.starts_with("--batch") || w.starts_with("--batch-")),
        _ => None,
    }?;
    Some(format!(
        "git {sub} {found} reads files or objects the command line does not name"
    ))
}

/// python `yq --in-place` (argparse takes any unambiguous prefix) and go `yq --inplace`.
pub fn yq_in_place(command: &Command, _: &Parsed) -> Option<String> {
    args(command)
        .iter()
        .take_while(|a| *a != "--")
        .find(|a| {
            a.starts_with("--")
                && (abbreviates(a, "--in-place", 5) || abbreviates(a, "--inplace", 5))
        })
        .map(|a| format!("{a} edits files in place"))
}

/// `script [FILE]`: writes a typescript, to `typescript` when no file is named.
pub fn script_log(command: &Command, parsed: &Parsed) -> Option<String> {
    let file = parsed
        .operands
        .first()
        .map_or("typescript", |&i| command.argv[i + 1].as_str());
    let log = ["-I", "-O", "-B", "-T"]
        .iter()
        .find_map(|o| parsed.get(o).and_then(|f| f.value));
    match log {
        Some(l) if l != "/dev/null" => Some(format!("writes the log file {l:?}")),
        _ if file == "/dev/null" => None,
        _ => Some(format!("writes the typescript {file:?}")),
    }
}

/// `strace -o FILE`, `-o '|CMD'`, `-E VAR=VALUE`; `ltrace -o FILE`.
pub fn tracer_output(command: &Command, _: &Parsed) -> Option<String> {
    let a = args(command);
    let outputs: Vec<&str> = short_values(a, 'o')
        .into_iter()
        .chain(long_values(a, "--output", 5))
        .collect();
    if let Some(o) = outputs.iter().find(|o| o.starts_with(['|', '!'])) {
        return Some(format!("-o {o} runs a command"));
    }
    if let Some(o) = outputs.first() {
        return Some(format!("-o writes {o:?}"));
    }
    short_values(a, 'E')
        .into_iter()
        .chain(long_values(a, "--env", 5))
        .next()
        .map(|e| format!("-E {e} sets the traced program's environment"))
}

/// `valgrind --log-file=F`, `--xml-file=F`, `--log-socket=H`, `--vgdb-prefix`.
pub fn valgrind_output(command: &Command, _: &Parsed) -> Option<String> {
    args(command)
        .iter()
        .take_while(|a| a.starts_with('-'))
        .find(|a| {
            [
                "--log-file",
                "--xml-file",
                "--log-socket",
                "--xml-socket",
                "--vgdb-prefix",
            ]
            .iter()
            .any(|l| abbreviates(a, l, 5))
        })
        .map(|a| format!("{a} writes or sends its log where it names"))
}

/// `fakeroot -s FILE` saves its state, `-i FILE` loads it, `-l LIB` / `--faked BIN` load code.
pub fn fakeroot_files(command: &Command, _: &Parsed) -> Option<String> {
    args(command)
        .iter()
        .take_while(|a| *a != "--" && a.starts_with('-'))
        .find(|a| {
            matches!(a.as_str(), "-s" | "-i" | "-l" | "-b")
                || ["--lib", "--faked"].iter().any(|l| abbreviates(a, l, 4))
        })
        .map(|a| format!("{a} names a file it writes, reads or loads as code"))
}

/// `tar -x -P`: absolute names (and `--transform`) write wherever the archive says.
pub fn tar_absolute(_: &Command, parsed: &Parsed) -> Option<String> {
    (parsed.has("-x") && parsed.has("-P"))
        .then(|| "-x with -P writes to the absolute paths the archive holds".to_owned())
}

/// The files or folders a command writes through its options, static values only: each
/// option with the role [`Role::Writes`] (`sort -o F`, `tar -g F`), the archive `tar` creates
/// or updates (`-cf F`), and the folder it extracts into (`-x -C D`). They are judged as
/// paths the call changes, resolved and confined (a `-f` that is a symbolic link to a file
/// outside the workspace writes there). A device (`-o /dev/null`) is left to the option's
/// hazard, as before.
pub fn written_paths(command: &Command, parsed: &Parsed) -> Vec<String> {
    use super::spec::Role;
    let words = &command.words[1..];
    let fixed = |f: &super::spec::Found| f.value_at.is_none_or(|at| words[at].is_static());
    let mut out: Vec<String> = parsed
        .options
        .iter()
        .filter(|f| f.role() == Role::Writes && fixed(f))
        .filter_map(|f| f.value)
        .filter(|v| !v.is_empty() && *v != "-" && !crate::shell::walk::is_device(v))
        .map(str::to_owned)
        .collect();
    if matches!(command.basename(), "tar" | "gtar") {
        let creates = parsed.has_any(&["-c", "-r", "-u", "-A", "--delete"]);
        if creates && let Some(f) = parsed.get("-f").filter(|f| fixed(f)) {
            out.extend(
                f.value
                    .filter(|v| *v != "-" && !v.starts_with("/dev/"))
                    .map(str::to_owned),
            );
        }
        if parsed.has("-x")
            && let Some(folder) = parsed.get("-C").filter(|f| fixed(f)).and_then(|f| f.value)
        {
            out.push(folder.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations_and_values_are_read_as_gnu_does() {
        assert!(abbreviates("--files0=x", "--files0-from", 4));
        assert!(!abbreviates("--f", "--files0-from", 4));
        let a: Vec<String> = ["-nf-", "x", "--file", "-"].map(String::from).to_vec();
        assert_eq!(short_values(&a, 'f'), ["-"]);
        assert_eq!(long_values(&a, "--file", 4), ["-"]);
    }
}
