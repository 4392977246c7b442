//! Read-only classification and effects. A bash call is read-only when it was understood, has no
//! hazard, writes no file through a redirection, and every command in it is a known reader used
//! with read-only options ([`READERS`]). A read-only call takes the `read_only` fallback; any other
//! takes the `writer` one.
//!
//! A reader that reads files it does not name — `grep -r`, `rg`, a reader fed by `xargs` or
//! `find -exec` — is recorded in [`Analysis::unnamed_reads`]: deny rules cannot see those files,
//! so the policy stage does not let such a call fall back to allow while a path rule protects
//! anything (see `policy`).
//!
//! Effects come from [`EFFECTS`]: every bash call may `exec`; readers `read`; the table adds
//! `write`, `delete` and `network` for the commands known to have them.

use super::options::find_option;
use super::{Analysis, Command, Dynamic, RedirectKind};
use crate::vocab::Effect;

/// How a reader stays read-only.
#[derive(Clone, Copy)]
pub enum Rule {
    /// Always read-only.
    Plain,
    /// Read-only unless one of these options is present.
    Unless(&'static [&'static str]),
    /// Read-only when the check says so.
    Check(fn(&Command) -> bool),
}

/// One row of the reader table.
pub struct Reader {
    /// Command basenames.
    pub names: &'static [&'static str],
    /// How it stays read-only.
    pub rule: Rule,
    /// Options that make it read whole folders (`grep -r`); `&["*"]` means it always may.
    pub recursive: &'static [&'static str],
    /// A use that is read-only.
    pub example: &'static str,
    /// A use that is not (empty when every use is).
    pub writer: &'static str,
}

/// Known readers.
#[rustfmt::skip]
pub const READERS: &[Reader] = &[
    Reader { names: &["ls", "dir", "vdir"], rule: Rule::Plain, recursive: &[], example: "ls -la src", writer: "" },
    Reader { names: &["cat", "tac", "nl", "head", "tail", "wc", "more", "less"], rule: Rule::Plain, recursive: &[], example: "head -n 20 README.md", writer: "" },
    Reader { names: &["grep", "egrep", "fgrep", "zgrep"], rule: Rule::Plain, recursive: &["-r", "-R", "--recursive", "--dereference-recursive", "--directories=recurse"], example: "grep -c 'rm -rf' notes.md", writer: "" },
    Reader { names: &["rg", "ag", "ack"], rule: Rule::Plain, recursive: &["*"], example: "rg -n TODO src", writer: "" },
    Reader { names: &["find"], rule: Rule::Check(find_reads), recursive: &[], example: "find . -name '*.rs' -type f", writer: "find . -name x -delete" },
    Reader { names: &["tree", "du", "df", "stat", "file", "realpath", "readlink", "basename", "dirname", "pwd"], rule: Rule::Plain, recursive: &[], example: "du -sh target", writer: "" },
    Reader { names: &["sort"], rule: Rule::Unless(&["-o", "--output"]), recursive: &[], example: "sort -u names.txt", writer: "sort -o out.txt names.txt" },
    Reader { names: &["uniq"], rule: Rule::Check(at_most_one_operand), recursive: &[], example: "uniq -c names.txt", writer: "uniq a.txt b.txt" },
    Reader { names: &["sed"], rule: Rule::Check(sed_reads), recursive: &[], example: "sed -n '1,20p' f.txt", writer: "sed -i 's/a/b/' f.txt" },
    Reader { names: &["awk", "gawk", "mawk", "nawk"], rule: Rule::Check(awk_reads), recursive: &[], example: "awk '{ print $1 }' f.txt", writer: "awk '{ print > \"o\" }' f.txt" },
    Reader { names: &["cut", "tr", "paste", "join", "comm", "column", "fold", "fmt", "expand", "unexpand", "rev", "strings", "od", "hexdump", "base64", "base32", "numfmt"], rule: Rule::Plain, recursive: &[], example: "cut -d: -f1 f.txt", writer: "" },
    Reader { names: &["xxd"], rule: Rule::Check(at_most_one_operand), recursive: &[], example: "xxd f.bin", writer: "xxd -r dump.txt out.bin" },
    Reader { names: &["diff", "cmp"], rule: Rule::Plain, recursive: &["-r", "--recursive"], example: "diff -u a.txt b.txt", writer: "" },
    Reader { names: &["md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum"], rule: Rule::Plain, recursive: &[], example: "sha256sum Cargo.lock", writer: "" },
    Reader { names: &["jq"], rule: Rule::Plain, recursive: &[], example: "jq .name package.json", writer: "" },
    Reader { names: &["yq"], rule: Rule::Unless(&["-i", "--inplace"]), recursive: &[], example: "yq .a x.yaml", writer: "yq -i '.a = 1' x.yaml" },
    Reader { names: &["echo", "printf", "true", "false", ":", "test", "[", "seq", "sleep", "expr", "yes"], rule: Rule::Plain, recursive: &[], example: "echo 'a;b'", writer: "" },
    Reader { names: &["date"], rule: Rule::Unless(&["-s", "--set"]), recursive: &[], example: "date -u", writer: "date -s 2020-01-01" },
    Reader { names: &["hostname"], rule: Rule::Check(no_operand), recursive: &[], example: "hostname -f", writer: "hostname evil" },
    Reader { names: &["whoami", "id", "groups", "uname", "uptime", "nproc", "free", "locale", "getconf", "tty", "printenv", "arch", "ps"], rule: Rule::Plain, recursive: &[], example: "uname -a", writer: "" },
    Reader { names: &["which", "type", "command", "whereis", "help", "man", "info", "apropos", "whatis"], rule: Rule::Plain, recursive: &[], example: "command -v cargo", writer: "" },
    Reader { names: &["cd", "pushd", "popd", "dirs", "set", "shift", "break", "continue", "return", "exit", "wait", "local", "declare", "typeset", "export", "readonly", "unset"], rule: Rule::Plain, recursive: &[], example: "cd src", writer: "" },
    Reader { names: &["git"], rule: Rule::Check(git_reads), recursive: &[], example: "git diff --stat", writer: "git commit -m x" },
    Reader { names: &["env"], rule: Rule::Check(no_operand), recursive: &[], example: "env", writer: "" },
];

/// One row of the effects table.
pub struct Effects {
    /// Command basenames.
    pub names: &'static [&'static str],
    /// What they do beyond running.
    pub effects: &'static [Effect],
}

/// Commands with known effects beyond `exec` (readers add `read` on their own).
#[rustfmt::skip]
pub const EFFECTS: &[Effects] = &[
    Effects { names: &["rm", "rmdir", "unlink", "shred"], effects: &[Effect::Delete] },
    Effects { names: &["mv"], effects: &[Effect::Write, Effect::Delete] },
    Effects { names: &["cp", "install", "touch", "mkdir", "ln", "tee", "dd", "truncate", "chmod", "chown", "chgrp", "patch", "mkfifo", "mknod"], effects: &[Effect::Write] },
    Effects { names: &["tar", "zip", "unzip", "gzip", "gunzip", "bzip2", "xz", "zstd"], effects: &[Effect::Read, Effect::Write] },
    Effects { names: &["curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "ping", "dig", "nslookup", "host", "http", "https", "aria2c"], effects: &[Effect::Network] },
    Effects { names: &["npm", "pnpm", "yarn", "pip", "pip3", "pipx", "uv", "cargo", "go", "gem", "bundle", "composer", "apt", "apt-get", "brew"], effects: &[Effect::Write, Effect::Network] },
];

/// Git subcommands that reach the network.
const GIT_NETWORK: &[&str] = &[
    "clone",
    "fetch",
    "pull",
    "push",
    "ls-remote",
    "submodule",
    "remote",
];

/// Git subcommands that only read, and any restriction on their arguments.
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "annotate",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "rev-list",
    "describe",
    "shortlog",
    "cat-file",
    "grep",
    "whatchanged",
    "merge-base",
    "name-rev",
    "count-objects",
    "for-each-ref",
    "show-ref",
    "show-branch",
    "var",
    "help",
    "version",
    "check-ignore",
    "check-attr",
    "diff-tree",
    "diff-files",
    "diff-index",
    "range-diff",
    "cherry",
    "verify-commit",
    "verify-tag",
];

fn the_reader(command: &Command) -> Option<&'static Reader> {
    let name = command.trusted_name()?;
    READERS.iter().find(|r| r.names.contains(&name))
}

/// Whether one command is a reader used read-only.
pub fn reads_only(command: &Command) -> bool {
    let Some(reader) = the_reader(command) else {
        return false;
    };
    match reader.rule {
        Rule::Plain => true,
        Rule::Unless(options) => find_option(&command.argv[1..], options, false).is_none(),
        Rule::Check(check) => check(command),
    }
}

/// Whether one reader reads files it does not name.
fn reads_unnamed(command: &Command) -> bool {
    let recursive = the_reader(command).is_some_and(|r| {
        r.recursive == ["*"] || find_option(&command.argv[1..], r.recursive, false).is_some()
    });
    recursive
        || command
            .words
            .iter()
            .any(|w| w.dynamic.contains(&Dynamic::Input) || w.dynamic.contains(&Dynamic::Found))
}

/// Sets `read_only`, `unnamed_reads` and `effects`.
pub(super) fn classify(analysis: &mut Analysis) {
    let mut effects = std::collections::BTreeSet::from([Effect::Exec]);
    let mut read_only = analysis.analysed && analysis.hazards.is_empty();
    for r in &analysis.redirects {
        match r.kind {
            RedirectKind::Read => {
                effects.insert(Effect::Read);
            }
            RedirectKind::Write | RedirectKind::Append | RedirectKind::ReadWrite => {
                effects.insert(Effect::Write);
                read_only = false;
            }
            RedirectKind::Network => {
                effects.insert(Effect::Network);
                read_only = false;
            }
            _ => {}
        }
        // A heredoc or herestring body is data on stdin; only a shell would run it, and that is
        // the shell's hazard.
        if !r.is_static && !matches!(r.kind, RedirectKind::Heredoc | RedirectKind::Herestring) {
            read_only = false;
        }
    }
    let mut unnamed = Vec::new();
    for c in &analysis.commands {
        for row in EFFECTS {
            if row.names.contains(&c.basename()) {
                effects.extend(row.effects.iter().copied());
            }
        }
        if c.basename() == "git" && git_subcommand(c).is_some_and(|s| GIT_NETWORK.contains(&s)) {
            effects.insert(Effect::Network);
        }
        if c.wrapper {
            continue;
        }
        if reads_only(c) {
            effects.insert(Effect::Read);
            if c.words
                .iter()
                .any(|w| !w.depends_on_static() && !w.dynamic.contains(&Dynamic::Input))
            {
                // A reader of something decided at run time (`cat $F`): not known to be harmless.
                read_only = false;
            }
            if reads_unnamed(c) {
                unnamed.push(c.argv.join(" "));
            }
        } else {
            read_only = false;
        }
    }
    if !read_only {
        unnamed.clear();
    }
    analysis.read_only = read_only;
    analysis.unnamed_reads = unnamed;
    analysis.effects = effects;
}

fn operands(command: &Command) -> usize {
    command.argv[1..]
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .count()
}

fn at_most_one_operand(command: &Command) -> bool {
    operands(command) <= 1 && find_option(&command.argv[1..], &["-r", "--revert"], false).is_none()
}

fn no_operand(command: &Command) -> bool {
    operands(command) == 0
}

fn find_reads(command: &Command) -> bool {
    !command.argv[1..].iter().any(|a| {
        matches!(
            a.as_str(),
            // -exec and friends run inner commands, which are judged on their own.
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls"
        )
    })
}

fn sed_reads(command: &Command) -> bool {
    let args = &command.argv[1..];
    !args.iter().any(|a| {
        a == "-i"
            || a.starts_with("--in-place")
            || (a.starts_with('-') && !a.starts_with("--") && a.len() > 2 && a[1..].contains('i'))
    })
}

fn awk_reads(_: &Command) -> bool {
    // What an awk program does is the hazard table's job; a hazard already makes the call
    // not read-only.
    true
}

/// The git subcommand, after global options.
fn git_subcommand(command: &Command) -> Option<&str> {
    let args = &command.argv[1..];
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        i += if matches!(
            args[i].as_str(),
            "-C" | "-c" | "--namespace" | "--config-env"
        ) {
            2
        } else {
            1
        };
    }
    args.get(i).map(String::as_str)
}

fn git_reads(command: &Command) -> bool {
    let Some(sub) = git_subcommand(command) else {
        // `git`, `git --version`: prints and exits.
        return true;
    };
    let at = command.argv.iter().position(|a| a == sub).unwrap_or(0);
    let rest = &command.argv[at + 1..];
    let positional = rest.iter().filter(|a| !a.starts_with('-')).count();
    match sub {
        s if GIT_READERS.contains(&s) => true,
        "branch" | "tag" => {
            find_option(
                rest,
                &[
                    "-d",
                    "-D",
                    "-m",
                    "-M",
                    "-c",
                    "-C",
                    "-f",
                    "-u",
                    "--delete",
                    "--move",
                    "--copy",
                    "--force",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                    "-a",
                    "-s",
                    "--sign",
                    "--annotate",
                ],
                false,
            )
            .is_none()
                && (positional == 0 || rest.iter().any(|a| a == "-l" || a == "--list"))
                || (sub == "branch"
                    && find_option(
                        rest,
                        &[
                            "-a",
                            "--all",
                            "-r",
                            "--remotes",
                            "--show-current",
                            "-v",
                            "-vv",
                        ],
                        false,
                    )
                    .is_some()
                    && positional == 0)
        }
        "remote" => {
            rest.is_empty()
                || rest.iter().all(|a| a == "-v" || a == "--verbose")
                || matches!(rest.first().map(String::as_str), Some("get-url" | "show"))
        }
        "stash" => matches!(rest.first().map(String::as_str), Some("list" | "show")),
        "config" => {
            find_option(
                rest,
                &[
                    "--get",
                    "--get-all",
                    "--get-regexp",
                    "--list",
                    "-l",
                    "--get-urlmatch",
                ],
                false,
            )
            .is_some()
                && find_option(
                    rest,
                    &[
                        "--add",
                        "--unset",
                        "--unset-all",
                        "--replace-all",
                        "--edit",
                        "-e",
                        "--rename-section",
                        "--remove-section",
                    ],
                    false,
                )
                .is_none()
        }
        "worktree" | "notes" => rest.first().is_some_and(|a| a == "list"),
        "reflog" => rest.is_empty() || rest.first().is_some_and(|a| a == "show"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reader_row_reads_its_example_and_writes_with_its_writer() {
        for row in READERS {
            let a = Analysis::of(row.example);
            assert!(
                a.read_only,
                "{} must be read-only: {:?} {:?}",
                row.example, a.problems, a.hazards
            );
            assert!(
                row.names.contains(&a.commands[0].basename()),
                "{}",
                row.example
            );
            if !row.writer.is_empty() {
                let a = Analysis::of(row.writer);
                assert!(!a.read_only, "{} must not be read-only", row.writer);
            }
        }
    }

    #[test]
    fn every_effects_row_adds_its_effects() {
        for row in EFFECTS {
            for name in row.names {
                let a = Analysis::of(&format!("{name} x"));
                for e in row.effects {
                    assert!(
                        a.effects.contains(e),
                        "{name}: {e} missing from {:?}",
                        a.effects
                    );
                }
                assert!(a.effects.contains(&Effect::Exec));
            }
        }
    }

    #[test]
    fn git_readers_and_writers_are_told_apart() {
        for reader in [
            "git status",
            "git log --oneline -5",
            "git diff --stat",
            "git show HEAD",
            "git branch",
            "git branch -a",
            "git tag -l",
            "git remote -v",
            "git stash list",
            "git config --get user.name",
            "git --version",
        ] {
            assert!(Analysis::of(reader).read_only, "{reader}");
        }
        for writer in [
            "git commit -m x",
            "git branch new",
            "git branch -D old",
            "git tag v1",
            "git push",
            "git stash",
            "git config user.name x",
            "git checkout main",
            "git reset --hard",
            "git remote add o u",
        ] {
            assert!(!Analysis::of(writer).read_only, "{writer}");
        }
        assert!(
            Analysis::of("git push origin main")
                .effects
                .contains(&Effect::Network)
        );
    }

    #[test]
    fn recursive_and_fed_readers_read_unnamed_files() {
        for script in [
            "grep -r TODO src",
            "rg TODO",
            "ls | xargs cat",
            "find . -name '*.rs' -exec cat {} +",
            "diff -r a b",
        ] {
            let a = Analysis::of(script);
            assert!(!a.unnamed_reads.is_empty(), "{script}: {a:?}");
        }
        for script in ["grep TODO notes.md", "cat a.txt", "ls -R"] {
            assert!(Analysis::of(script).unnamed_reads.is_empty(), "{script}");
        }
    }
}
