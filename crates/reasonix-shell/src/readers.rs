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

use super::programs::{
    self,
    spec::{self, Parsed, Role},
};
use super::{Analysis, Command, Dynamic, RedirectKind};
use crate::vocab::Effect;
use std::collections::HashMap;
use std::sync::OnceLock;

/// How a reader stays read-only.
#[derive(Clone, Copy)]
pub enum Rule {
    /// Always read-only.
    Plain,
    /// Read-only unless its option spec finds an option that writes ([`Role::Writes`]); the
    /// options that run programs are hazards, which make no call read-only.
    Options,
    /// Read-only when the check says so.
    Check(fn(&Command, &Parsed) -> bool),
}

/// Whether a reader reads folders it does not name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Recursion {
    /// Never.
    Never,
    /// With an option its spec marks [`Role::Recursive`] (`grep -r`, `--directories=recurse`).
    Options,
    /// Always (`rg`).
    Always,
    /// With a recursive option, and every operand that is a folder (`diff DIR1 DIR2` reads
    /// the files beneath both): its operands are [`Analysis::folder_reads`], which the policy
    /// stage judges as unnamed reads when they resolve to folders.
    Folders,
}

/// One row of the reader table.
pub struct Reader {
    /// Command basenames.
    pub names: &'static [&'static str],
    /// How it stays read-only.
    pub rule: Rule,
    /// Whether it reads whole folders.
    pub recursive: Recursion,
    /// A use that is read-only.
    pub example: &'static str,
    /// A use that is not (empty when every use is).
    pub writer: &'static str,
}

use Recursion::{Always, Never};

/// Known readers, each checked against its manual: an option or operand that writes, runs a
/// program or starts an editor or browser makes the use a writer (or a hazard).
#[rustfmt::skip]
pub const READERS: &[Reader] = &[
    Reader { names: &["ls", "dir", "vdir"], rule: Rule::Plain, recursive: Never, example: "ls -la src", writer: "" },
    Reader { names: &["cat", "tac", "nl", "head", "tail", "wc"], rule: Rule::Plain, recursive: Never, example: "head -n 20 README.md", writer: "" },
    Reader { names: &["less", "more"], rule: Rule::Options, recursive: Never, example: "less README.md", writer: "less -o log.txt README.md" },
    Reader { names: &["grep", "egrep", "fgrep", "zgrep"], rule: Rule::Options, recursive: Recursion::Options, example: "grep -c 'rm -rf' notes.md", writer: "" },
    Reader { names: &["rg", "ag", "ack"], rule: Rule::Options, recursive: Always, example: "rg -n TODO src", writer: "" },
    Reader { names: &["find"], rule: Rule::Check(find_reads), recursive: Never, example: "find . -name '*.rs' -type f", writer: "find . -name x -delete" },
    Reader { names: &["tree", "du", "df", "stat", "file", "realpath", "readlink", "basename", "dirname", "pwd"], rule: Rule::Options, recursive: Never, example: "du -sh target", writer: "file -C -m magic" },
    Reader { names: &["sort"], rule: Rule::Options, recursive: Never, example: "sort -u names.txt", writer: "sort -o out.txt names.txt" },
    Reader { names: &["uniq"], rule: Rule::Check(at_most_one_operand), recursive: Never, example: "uniq -c names.txt", writer: "uniq a.txt b.txt" },
    Reader { names: &["sed", "gsed"], rule: Rule::Options, recursive: Never, example: "sed -n '1,20p' f.txt", writer: "sed --in-pl=.bak 's/a/b/' f.txt" },
    Reader { names: &["awk", "gawk", "mawk", "nawk"], rule: Rule::Options, recursive: Never, example: "awk '{ print $1 }' f.txt", writer: "awk '{ print > \"o\" }' f.txt" },
    Reader { names: &["cut", "tr", "paste", "join", "comm", "column", "fold", "fmt", "expand", "unexpand", "rev", "strings", "od", "hexdump", "base64", "base32", "numfmt"], rule: Rule::Plain, recursive: Never, example: "cut -d: -f1 f.txt", writer: "" },
    Reader { names: &["xxd"], rule: Rule::Check(at_most_one_operand), recursive: Never, example: "xxd f.bin", writer: "xxd -r dump.txt out.bin" },
    Reader { names: &["diff"], rule: Rule::Options, recursive: Recursion::Folders, example: "diff -u a.txt b.txt", writer: "" },
    Reader { names: &["cmp"], rule: Rule::Options, recursive: Never, example: "cmp a.bin b.bin", writer: "" },
    Reader { names: &["md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum"], rule: Rule::Plain, recursive: Never, example: "sha256sum Cargo.lock", writer: "" },
    Reader { names: &["jq"], rule: Rule::Plain, recursive: Never, example: "jq .name package.json", writer: "" },
    Reader { names: &["yq"], rule: Rule::Options, recursive: Never, example: "yq .a x.yaml", writer: "yq -i '.a = 1' x.yaml" },
    Reader { names: &["echo", "printf", "true", "false", ":", "test", "[", "seq", "sleep", "expr", "yes"], rule: Rule::Plain, recursive: Never, example: "echo 'a;b'", writer: "" },
    Reader { names: &["date"], rule: Rule::Options, recursive: Never, example: "date -u", writer: "date --se 2020-01-01" },
    Reader { names: &["hostname"], rule: Rule::Check(no_operand), recursive: Never, example: "hostname -f", writer: "hostname evil" },
    Reader { names: &["whoami", "id", "groups", "uname", "uptime", "nproc", "free", "locale", "getconf", "tty", "printenv", "arch", "ps"], rule: Rule::Plain, recursive: Never, example: "uname -a", writer: "" },
    Reader { names: &["which", "type", "command", "whereis", "help", "man", "info", "apropos", "whatis"], rule: Rule::Options, recursive: Never, example: "command -v cargo", writer: "info -o out.txt ls" },
    Reader { names: &["cd", "pushd", "popd", "dirs", "set", "shift", "break", "continue", "return", "exit", "wait", "local", "declare", "typeset", "export", "readonly", "unset", "shopt", "read", "mapfile", "readarray", "getopts"], rule: Rule::Plain, recursive: Never, example: "cd src", writer: "" },
    Reader { names: &["tar", "gtar"], rule: Rule::Check(tar_lists), recursive: Never, example: "tar -tvf a.tar", writer: "tar -xf a.tar" },
    Reader { names: &["git"], rule: Rule::Check(git_reads), recursive: Never, example: "git diff --stat", writer: "git hash-object -w f.txt" },
    Reader { names: &["env"], rule: Rule::Check(no_operand), recursive: Never, example: "env", writer: "" },
];

/// Readers that open no file their operands name and take no option that names a variable, so
/// an operand decided at run time cannot make them read or run anything (`echo "$(date -u
/// +%F)"`, `seq 1 "$n"`): what a substitution in it runs is a command of its own, judged as
/// such. Every name is a [`READERS`] row; each is tested.
///
/// Not here, on purpose: `printf`, `test` and `[`. A word decided at run time may split into
/// `-v NAME` (`printf -v`, `test -v`), and bash evaluates an array subscript in NAME — a
/// `$(…)` there runs (`X='-v a[$(cmd)] x'; printf $X`), and `printf -v PATH …` changes how
/// every later command is found.
pub const NO_FILE_OPERANDS: &[&str] =
    &[":", "echo", "expr", "false", "seq", "sleep", "true", "yes"];

/// Whether the command is one of [`NO_FILE_OPERANDS`], by a name bash runs as written.
pub fn opens_no_operand(command: &Command) -> bool {
    command
        .trusted_name()
        .is_some_and(|n| NO_FILE_OPERANDS.binary_search(&n).is_ok())
}

/// One row of the effects table.
pub struct Effects {
    /// Command basenames.
    pub names: &'static [&'static str],
    /// What they do beyond running.
    pub effects: &'static [Effect],
}

/// Commands with known effects beyond `exec` (readers add `read` on their own). A runner that
/// fetches a package to run it reaches the network.
#[rustfmt::skip]
pub const EFFECTS: &[Effects] = &[
    Effects { names: &["rm", "rmdir", "unlink", "shred"], effects: &[Effect::Delete] },
    Effects { names: &["mv"], effects: &[Effect::Write, Effect::Delete] },
    Effects { names: &["cp", "install", "touch", "mkdir", "ln", "tee", "dd", "truncate", "chmod", "chown", "chgrp", "patch", "mkfifo", "mknod"], effects: &[Effect::Write] },
    Effects { names: &["tar", "zip", "unzip", "gzip", "gunzip", "bzip2", "xz", "zstd"], effects: &[Effect::Read, Effect::Write] },
    Effects { names: &["curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "ping", "dig", "nslookup", "host", "http", "https", "aria2c"], effects: &[Effect::Network] },
    Effects { names: &["npm", "pnpm", "yarn", "pip", "pip3", "pipx", "uv", "cargo", "go", "gem", "bundle", "composer", "apt", "apt-get", "brew"], effects: &[Effect::Write, Effect::Network] },
    Effects { names: &["npx", "pnpx", "bunx", "bun", "uvx", "pkgx", "corepack", "nix", "nix-shell", "devbox", "mise", "rtx", "asdf", "poetry", "pdm", "hatch", "conda", "mamba", "micromamba", "pixi", "rye", "deno", "dotenvx", "doppler", "op", "aws-vault"], effects: &[Effect::Write, Effect::Network] },
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
    "archive",
    "send-email",
    "request-pull",
];

/// Git subcommands that only read (their options that write or run programs are in git's
/// spec). Left out on purpose: `mktree`, `mktag`, `commit-tree`, `write-tree`, `update-ref`,
/// `unpack-objects` (they write objects or refs), `ls-remote` and `remote show` (they reach the
/// remote, running ssh as configured), `bisect view` (starts gitk), `difftool` and kin.
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
    "check-mailmap",
    "check-ref-format",
    "diff-tree",
    "diff-files",
    "diff-index",
    "range-diff",
    "cherry",
    "verify-commit",
    "verify-tag",
    "hash-object",
    "get-tar-commit-id",
];

/// The effects [`EFFECTS`] gives a command name (an index built once).
fn effects_of(name: &str) -> &'static [Effect] {
    static INDEX: OnceLock<HashMap<&'static str, Vec<Effect>>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index: HashMap<&'static str, Vec<Effect>> = HashMap::new();
        for row in EFFECTS {
            for name in row.names {
                index.entry(*name).or_default().extend(row.effects);
            }
        }
        index
    });
    index.get(name).map(Vec::as_slice).unwrap_or(&[])
}

/// Whether the reader table has a row for the command's name.
pub(super) fn known(command: &Command) -> bool {
    the_reader(command).is_some()
}

fn the_reader(command: &Command) -> Option<&'static Reader> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Reader>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = HashMap::new();
        for r in READERS {
            for name in r.names {
                index.entry(*name).or_insert(r);
            }
        }
        index
    });
    index.get(command.trusted_name()?).copied()
}

/// The command's argv as its option spec reads it.
fn parse(command: &Command) -> Parsed<'_> {
    let spec = programs::spec_for(command.basename()).unwrap_or(&spec::GENERIC);
    spec::parse(spec, &command.words[1..])
}

/// Whether one command is a reader used read-only.
pub fn reads_only(command: &Command) -> bool {
    reads_only_as(command, &parse(command))
}

fn reads_only_as(command: &Command, parsed: &Parsed) -> bool {
    let Some(reader) = the_reader(command) else {
        return false;
    };
    if parsed.with_role(Role::Writes).next().is_some() {
        return false;
    }
    match reader.rule {
        Rule::Plain | Rule::Options => true,
        Rule::Check(check) => check(command, parsed),
    }
}

/// Whether one reader reads files it does not name.
fn reads_unnamed(command: &Command, parsed: &Parsed) -> bool {
    let recursive = the_reader(command).is_some_and(|r| match r.recursive {
        Never => false,
        Always => true,
        Recursion::Options | Recursion::Folders => parsed.options.iter().any(|f| match f.role() {
            Role::Recursive(None) => true,
            Role::Recursive(Some(word)) => f
                .value
                .is_some_and(|v| !v.is_empty() && word.starts_with(v)),
            _ => false,
        }),
    });
    // What `xargs` or `find -exec` feeds a reader is read as files, unless the reader opens no
    // file its operands name (`xargs echo`, `find … -exec echo {} +`).
    recursive
        || (!opens_no_operand(command)
            && command.words.iter().any(|w| {
                w.dynamic.contains(&Dynamic::Input) || w.dynamic.contains(&Dynamic::Found)
            }))
}

/// The operands of a reader that reads a folder operand whole ([`Recursion::Folders`]), as
/// bash expands them.
fn folder_operands<'a>(command: &'a Command, parsed: &Parsed) -> Vec<&'a str> {
    if !the_reader(command).is_some_and(|r| r.recursive == Recursion::Folders) {
        return Vec::new();
    }
    parsed
        .operands
        .iter()
        .flat_map(|&i| command.words[i + 1].expanded_texts())
        .filter(|t| !t.is_empty() && *t != "-")
        .collect()
}

/// Sets `read_only`, `unnamed_reads`, `folder_reads` and `effects`. `commands` are the
/// analysis' commands (taken out of it while it is changed), `specs` each one's argv as its
/// option spec reads it.
pub(super) fn classify(analysis: &mut Analysis, commands: &[Command], specs: &[Parsed]) {
    let mut effects = std::collections::BTreeSet::from([Effect::Exec]);
    let mut read_only = analysis.analysed && analysis.hazards.is_empty();
    // The same, for the programs alone (redirections set aside).
    let mut programs_read_only = read_only;
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
    let mut folders: Vec<String> = Vec::new();
    for (c, parsed) in commands.iter().zip(specs) {
        let reads_only = !c.wrapper && reads_only_as(c, parsed);
        if !reads_only {
            // A reader used read-only has only its read (`tar -t` lists, it writes nothing).
            effects.extend(effects_of(c.basename()).iter().copied());
        }
        if c.basename() == "git"
            && parsed
                .subcommand(0)
                .is_some_and(|s| GIT_NETWORK.contains(&s))
        {
            effects.insert(Effect::Network);
        }
        if c.wrapper {
            continue;
        }
        if reads_only {
            effects.insert(Effect::Read);
            if !opens_no_operand(c)
                && c.words
                    .iter()
                    .any(|w| !w.depends_on_static() && !w.dynamic.contains(&Dynamic::Input))
            {
                // A reader of something decided at run time (`cat $F`): not known to be harmless.
                read_only = false;
                programs_read_only = false;
            }
            if reads_unnamed(c, parsed) {
                unnamed.push(c.argv.join(" "));
            }
            folders.extend(folder_operands(c, parsed).into_iter().map(str::to_owned));
        } else {
            read_only = false;
            programs_read_only = false;
        }
    }
    if !read_only {
        unnamed.clear();
        folders.clear();
    }
    analysis.read_only = read_only;
    analysis.programs_read_only = programs_read_only;
    analysis.unnamed_reads = unnamed;
    analysis.folder_reads = folders;
    analysis.effects = effects;
}

/// `tar -t`: lists an archive, and writes nothing unless an option says so (those are the
/// spec's writes and hazards).
fn tar_lists(_: &Command, parsed: &Parsed) -> bool {
    parsed.has("-t") && !parsed.has_any(&["-A", "-c", "-d", "--delete", "-r", "-u", "-x"])
}

fn at_most_one_operand(_: &Command, parsed: &Parsed) -> bool {
    parsed.operands.len() <= 1
}

fn no_operand(_: &Command, parsed: &Parsed) -> bool {
    parsed.operands.is_empty()
}

fn find_reads(command: &Command, _: &Parsed) -> bool {
    !command.argv[1..].iter().any(|a| {
        matches!(
            a.as_str(),
            // -exec and friends run inner commands, which are judged on their own.
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls"
        )
    })
}

/// Whether a git command only reads: a subcommand of [`GIT_READERS`], or a listing use of one
/// that also writes (`git branch -a`, `git tag -l`, `git stash list`, `git config --get`).
fn git_reads(_: &Command, parsed: &Parsed) -> bool {
    let Some(sub) = parsed.subcommand(0) else {
        // `git`, `git --version`: prints and exits (a name git does not know is a hazard).
        return parsed.operands.is_empty();
    };
    let then = parsed.subcommand(1);
    let positional = parsed.operands.len();
    match sub {
        s if GIT_READERS.contains(&s) => true,
        "branch" => {
            positional == 0
                || parsed.has_any(&[
                    "-l",
                    "-a",
                    "-r",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                    "--show-current",
                ])
        }
        "tag" => {
            positional == 0
                || parsed.has_any(&[
                    "-l",
                    "-n",
                    "--contains",
                    "--no-contains",
                    "--merged",
                    "--no-merged",
                    "--points-at",
                    "-v",
                ])
        }
        "remote" => match then {
            None => positional == 0,
            Some("get-url") => true,
            Some("show") => parsed.has("-n"),
            Some(_) => false,
        },
        "stash" => matches!(then, Some("list" | "show")),
        "config" => match then {
            Some("get" | "list") => true,
            Some(_) => false,
            None => {
                parsed.has_any(&[
                    "--get",
                    "--get-all",
                    "--get-regexp",
                    "-l",
                    "--get-urlmatch",
                    "--get-color",
                    "--get-colorbool",
                ]) || positional == 1
            }
        },
        "worktree" => then == Some("list"),
        "notes" => matches!(then, Some("list" | "show")),
        "reflog" => matches!(then, None | Some("show" | "list" | "exists")),
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
    fn readers_that_open_no_operand_stay_read_only_with_operands_decided_at_run_time() {
        assert!(NO_FILE_OPERANDS.windows(2).all(|w| w[0] < w[1]));
        for name in NO_FILE_OPERANDS {
            let script = format!("{name} \"$(date -u +%F)\" = \"$x\" ]");
            let a = Analysis::of(&script);
            assert!(a.read_only, "{script}: {:?}", a.hazards);
            assert!(READERS.iter().any(|r| r.names.contains(name)), "{name}");
        }
        // Nor do the builtins whose run-time words may become `-v NAME`.
        for script in ["printf $X", "test $X", "[ $X ]", "printf '%s' \"$x\" $y"] {
            assert!(!Analysis::of(script).read_only, "{script}");
        }
        // A reader that opens its operands does not.
        for script in [
            "cat \"$(date -u +%F)\"",
            "head \"$x\"",
            "echo \"$(cat $f)\"",
        ] {
            assert!(!Analysis::of(script).read_only, "{script}");
        }
    }

    #[test]
    fn tar_lists_read_only_and_writes_otherwise() {
        for script in [
            "tar -tf a.tar",
            "tar -tvf a.tar src/a.rs",
            "tar --list -f a.tar",
        ] {
            let a = Analysis::of(script);
            assert!(
                a.read_only && !a.effects.contains(&Effect::Write),
                "{script}"
            );
        }
        for script in [
            "tar -xf a.tar",
            "tar -cf a.tar src",
            "tar -tf a.tar -g snap",
            "tar -t --delete -f a.tar x",
            "tar -tf a.tar --to-command=sh",
        ] {
            assert!(!Analysis::of(script).read_only, "{script}");
        }
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

    #[test]
    fn a_reader_that_opens_no_operand_fed_by_xargs_or_find_reads_nothing_unnamed() {
        // Each row of NO_FILE_OPERANDS, fed by xargs and by find -exec: read-only, nothing read
        // that the call does not name.
        for name in NO_FILE_OPERANDS {
            for script in [
                format!("ls src | xargs -n1 {name}"),
                format!("find . -name '*.rs' -exec {name} {{}} +"),
            ] {
                let a = Analysis::of(&script);
                assert!(a.read_only, "{script}: {:?}", a.hazards);
                assert!(
                    a.unnamed_reads.is_empty(),
                    "{script}: {:?}",
                    a.unnamed_reads
                );
            }
        }
        // A reader that opens its operands, fed the same way, still reads files it does not
        // name; and a program of the workspace's own called `echo` is not trusted to open none.
        for script in [
            "ls src | xargs -n1 cat",
            "find . -exec head {} +",
            "ls | xargs ./echo",
        ] {
            let a = Analysis::of(script);
            assert!(
                !a.unnamed_reads.is_empty() || !a.read_only,
                "{script}: {a:?}"
            );
        }
    }
}
