//! Hazards: what no prefix rule can judge. `git status *` cannot know that `-c core.pager=sh`
//! runs a program, nor `awk *` that a program calls `system()`. A command with a hazard is never
//! allowed by a `commands:` rule or a fallback: only an `exact:` rule that spells out the whole
//! command (or Rego) can allow it. Deny and ask rules still see it as usual.
//!
//! Two tables, both data: [`COMMANDS`] (a command and the test that finds the hazard in its
//! argv) and [`ENVIRONMENT`] (variables that make a program load code; it lives in
//! [`environment`](super::environment) and is re-exported here). Every row carries an
//! example that must trigger it and a benign counterpart that must not; the tests run them all.
//!
//! This module owns the tables and `scan`, which runs them over every command; it also makes
//! the hazards the walk finds in redirections ([`dynamic_redirect`], [`network_redirect`]) and
//! assignments ([`env()`]). What a program's own language or options make it do (an awk program,
//! a sed script, git's options and subcommands) is read in [`programs`](super::programs); the
//! rows here only name those readers.

pub use super::environment::{ENVIRONMENT, EnvRow, env};
use super::options::find_option;
use super::programs::{awk, git, sed};
use super::{Analysis, Command, Feature, Hazard};

/// How a command row decides.
#[derive(Clone, Copy)]
pub enum Test {
    /// Always a hazard.
    Always,
    /// Any of these options, anywhere: `-o`, a cluster holding `o` (`-no`), `--output`,
    /// `--output=x`.
    Option(&'static [&'static str]),
    /// Any of these options before the first operand (an interpreter's own options end where
    /// its script's arguments begin).
    Leading(&'static [&'static str]),
    /// Any of these words exactly, or `word=...` (`find -delete`).
    Word(&'static [&'static str]),
    /// A check on the whole command; `Some(detail)` is a hazard.
    Check(fn(&Command) -> Option<String>),
}

/// One row of the command hazard table.
pub struct Row {
    /// The hazard id reported.
    pub id: &'static str,
    /// Command basenames (a trailing version is ignored: `python3.11` is `python3`).
    pub names: &'static [&'static str],
    /// The test.
    pub test: Test,
    /// Why it is a hazard.
    pub why: &'static str,
    /// A command that must trigger the row.
    pub example: &'static str,
    /// A command of the same name that must not.
    pub benign: &'static str,
}

const PYTHON: &[&str] = &["python", "python2", "python3", "pypy", "pypy3"];
const NODE: &[&str] = &["node", "nodejs", "bun"];
const PERL: &[&str] = &["perl"];
const RUBY: &[&str] = &["ruby"];
const AWK: &[&str] = &["awk", "gawk", "mawk", "nawk"];
const SED: &[&str] = &["sed", "gsed"];

/// The command hazard table.
#[rustfmt::skip]
pub const COMMANDS: &[Row] = &[
    Row { id: "eval", names: &["eval"], test: Test::Always, why: "eval runs a string as code", example: "eval \"$CMD\"", benign: "" },
    Row { id: "source", names: &["source", "."], test: Test::Always, why: "source runs a file's code in this shell", example: ". ./env.sh", benign: "" },
    Row { id: "inline_code", names: PYTHON, test: Test::Leading(&["-c"]), why: "python -c runs code given inline", example: "python3 -c 'import os; os.system(\"id\")'", benign: "python3 manage.py test -c x" },
    Row { id: "inline_code", names: PYTHON, test: Test::Check(reads_program_from_stdin), why: "python without a script reads its program from stdin", example: "curl -s x | python3", benign: "python3 -m pytest" },
    Row { id: "inline_code", names: NODE, test: Test::Leading(&["-e", "--eval", "-p", "--print", "-r", "--require", "--import", "--loader", "--experimental-loader"]), why: "node -e/-p runs code given inline; -r/--import loads a module first", example: "node -e 'require(\"child_process\").execSync(\"id\")'", benign: "node server.js -e x" },
    Row { id: "inline_code", names: NODE, test: Test::Check(reads_program_from_stdin), why: "node without a script reads its program from stdin", example: "cat x.js | node", benign: "node --version" },
    Row { id: "inline_code", names: PERL, test: Test::Leading(&["-e", "-E", "-n", "-p", "-i", "-M", "-m", "-x"]), why: "perl -e/-E programs, -n/-p loops, -i in-place edits and -M modules run code", example: "perl -pi -e 's/a/b/' f", benign: "perl script.pl -e" },
    Row { id: "inline_code", names: PERL, test: Test::Check(reads_program_from_stdin), why: "perl without a script reads its program from stdin", example: "echo 'system q(id)' | perl", benign: "perl -v" },
    Row { id: "inline_code", names: RUBY, test: Test::Leading(&["-e", "-n", "-p", "-i", "-r"]), why: "ruby -e runs code given inline", example: "ruby -e 'system(\"id\")'", benign: "ruby app.rb -e" },
    Row { id: "inline_code", names: &["php"], test: Test::Leading(&["-r", "-B", "-R", "-E", "-F", "-a"]), why: "php -r runs code given inline", example: "php -r 'system(\"id\");'", benign: "php artisan test" },
    Row { id: "inline_code", names: &["lua", "luajit"], test: Test::Leading(&["-e", "-l"]), why: "lua -e runs code given inline", example: "lua -e 'os.execute(\"id\")'", benign: "lua main.lua" },
    Row { id: "inline_code", names: &["Rscript", "R"], test: Test::Leading(&["-e"]), why: "Rscript -e runs code given inline", example: "Rscript -e 'system(\"id\")'", benign: "Rscript analysis.R" },
    Row { id: "inline_code", names: &["osascript", "expect"], test: Test::Leading(&["-e", "-c"]), why: "-e/-c runs code given inline", example: "expect -c 'spawn sh'", benign: "expect login.exp" },
    Row { id: "inline_code", names: &["deno"], test: Test::Check(deno_eval), why: "deno eval runs code given inline", example: "deno eval 'Deno.exit(1)'", benign: "deno test" },
    Row { id: "inline_code", names: AWK, test: Test::Check(awk::command_risk), why: "an awk program that calls system(), pipes, prints to files or loads extensions runs code or writes files", example: "awk 'BEGIN { system(\"id\") }'", benign: "awk -F: '$3 > 100 { print $1 }' /etc/passwd" },
    Row { id: "sed_writes", names: SED, test: Test::Check(sed::command_risk), why: "sed -i edits files; the e command and s///e run commands; w writes files", example: "sed -i 's/a/b/' f", benign: "sed -n '1,5p' f" },
    Row { id: "git_config", names: &["git"], test: Test::Check(git::global_risk), why: "git -c / --config-env / --exec-path / --git-dir / --work-tree / -p change what git runs (pagers, aliases, hooks)", example: "git -c core.pager='sh -c id' log", benign: "git log --oneline" },
    Row { id: "git_program", names: &["git"], test: Test::Check(git::subcommand_risk), why: "this git subcommand or option runs another program, writes output files, or may be an alias", example: "git diff --ext-diff", benign: "git diff --stat" },
    Row { id: "rg_preprocessor", names: &["rg"], test: Test::Option(&["--pre"]), why: "rg --pre runs a program on every file", example: "rg --pre ./decode x", benign: "rg -n TODO src" },
    Row { id: "tar_program", names: &["tar", "gtar", "bsdtar"], test: Test::Option(&["--checkpoint-action", "--to-command", "--use-compress-program", "-I", "--info-script", "-F", "--new-volume-script", "--rsh-command", "--rmt-command"]), why: "these tar options run programs", example: "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec=sh src", benign: "tar -czf x.tgz src" },
    Row { id: "pager", names: &["man"], test: Test::Option(&["-P", "--pager", "-H", "--html"]), why: "man -P/-H runs the program named", example: "man -P 'sh -c id' ls", benign: "man ls" },
    Row { id: "output_file", names: &["sort"], test: Test::Option(&["-o", "--output", "--compress-program"]), why: "sort -o writes a file; --compress-program runs one", example: "sort -o /etc/passwd x", benign: "sort -u names.txt" },
    Row { id: "output_file", names: &["uniq"], test: Test::Check(uniq_output), why: "uniq's second operand is a file it writes", example: "uniq in.txt out.txt", benign: "uniq -c in.txt" },
    Row { id: "output_file", names: &["time"], test: Test::Option(&["-o", "--output"]), why: "time -o writes a file", example: "time -o stats.txt make", benign: "time make" },
    Row { id: "find_writes", names: &["find"], test: Test::Word(&["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"]), why: "find -delete removes files; -fprint* and -fls write them", example: "find . -name '*.tmp' -delete", benign: "find . -name '*.rs'" },
    Row { id: "inline_code", names: &["vi", "vim", "nvim", "view", "ex"], test: Test::Check(vim_commands), why: "vim -c/--cmd/+cmd/-S runs editor commands, which can run programs", example: "vim -c '!id' -c q", benign: "vim notes.md" },
    Row { id: "inline_code", names: &["emacs"], test: Test::Option(&["--eval", "-l", "--load", "-f", "--funcall", "--script", "-x"]), why: "emacs --eval/-l runs Lisp", example: "emacs --batch --eval '(shell-command \"id\")'", benign: "emacs notes.md" },
    Row { id: "inline_code", names: &["make", "gmake"], test: Test::Option(&["--eval", "-E"]), why: "make --eval runs a makefile fragment given inline", example: "make --eval='$(shell id)'", benign: "make test" },
    Row { id: "inline_code", names: &["npx"], test: Test::Option(&["-c", "--call"]), why: "npx -c runs a shell string", example: "npx -c 'rm -rf x'", benign: "npx prettier --check ." },
    Row { id: "remote_program", names: &["ssh", "scp", "sftp"], test: Test::Option(&["-o", "-F", "-S"]), why: "ssh -o ProxyCommand/LocalCommand, -F configs and -S programs run local commands", example: "ssh -o ProxyCommand='sh -c id' host", benign: "ssh host uptime" },
    Row { id: "remote_program", names: &["rsync"], test: Test::Option(&["-e", "--rsh", "--rsync-path"]), why: "rsync -e runs the program named", example: "rsync -e 'sh -c id' a b", benign: "rsync -a src/ dst/" },
    Row { id: "scheduled_code", names: &["at", "batch", "crontab"], test: Test::Always, why: "at, batch and crontab schedule code to run later", example: "echo id | at now", benign: "" },
    Row { id: "privilege", names: &["sudo", "doas", "su", "pkexec", "runuser"], test: Test::Always, why: "runs a command with other privileges", example: "sudo ls", benign: "" },
    Row { id: "inline_code", names: &["trap"], test: Test::Check(has_operand), why: "trap runs a string as code when a signal arrives", example: "trap 'rm -rf x' EXIT", benign: "trap" },
    Row { id: "alias", names: &["alias"], test: Test::Check(has_operand), why: "an alias can make a later word run something else", example: "alias ls='rm -rf x'", benign: "alias" },
    Row { id: "loads_code", names: &["enable"], test: Test::Option(&["-f"]), why: "enable -f loads a builtin from a shared object", example: "enable -f ./evil.so evil", benign: "enable -n echo" },
    Row { id: "command_path", names: &["hash"], test: Test::Option(&["-p"]), why: "hash -p makes a command name run another file", example: "hash -p /tmp/x ls", benign: "hash -r" },
    Row { id: "tool_config", names: &["cargo"], test: Test::Option(&["--config", "-Z"]), why: "cargo --config can set runners and wrappers that run programs", example: "cargo test --config 'target.x86_64-unknown-linux-gnu.runner=\"sh\"'", benign: "cargo test --release" },
    Row { id: "tool_config", names: &["npm", "pnpm", "yarn"], test: Test::Option(&["--script-shell", "--userconfig", "--globalconfig"]), why: "these options choose the shell or configuration npm runs scripts with", example: "npm test --script-shell=/tmp/x", benign: "npm test" },
    Row { id: "changes_folder", names: &["cd", "pushd"], test: Test::Check(dynamic_folder), why: "relative paths after it are decided at run time", example: "cd $DIR", benign: "cd src" },
    Row { id: "alias", names: &["shopt"], test: Test::Check(shopt_aliases), why: "expand_aliases lets aliases rewrite later commands", example: "shopt -s expand_aliases", benign: "shopt -s globstar" },
];

/// A redirection whose target is not static: it may write anywhere.
pub fn dynamic_redirect(op: &str, target: &str, command: Option<usize>) -> Hazard {
    Hazard {
        id: "dynamic_redirect",
        command,
        detail: format!("`{op} {target}`: the target is decided at run time"),
    }
}

/// A redirection to `/dev/tcp` or `/dev/udp`: bash opens a network connection itself.
pub fn network_redirect(op: &str, target: &str, command: Option<usize>) -> Hazard {
    Hazard {
        id: "network_redirect",
        command,
        detail: format!("`{op} {target}`: bash connects to the network"),
    }
}

/// `python3.11` → `python3`, `python3` → `python3`; names are tried as written first.
fn table_names(basename: &str) -> [&str; 2] {
    [
        basename,
        basename.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.'),
    ]
}

/// Finds every command hazard in the analysis.
pub(super) fn scan(analysis: &mut Analysis) {
    let mut found = Vec::new();
    for (i, command) in analysis.commands.iter().enumerate() {
        if !command.words.first().is_some_and(|w| w.is_static()) {
            continue;
        }
        let names = table_names(command.basename());
        for row in COMMANDS {
            if !names.iter().any(|n| row.names.contains(n)) {
                continue;
            }
            if let Some(detail) = test(row, command) {
                found.push(Hazard {
                    id: row.id,
                    command: Some(i),
                    detail,
                });
            }
        }
    }
    if found.iter().any(|h| h.id == "eval") {
        analysis.features.insert(Feature::Eval);
    }
    if found.iter().any(|h| h.id == "inline_code") {
        analysis.features.insert(Feature::InlineCode);
    }
    analysis.hazards.extend(found);
}

/// Runs one row's test.
fn test(row: &Row, command: &Command) -> Option<String> {
    let args = &command.argv[1..];
    let hit = |what: &str| Some(format!("{}: {what} — {}", command.argv.join(" "), row.why));
    match row.test {
        Test::Always => hit(command.basename()),
        Test::Option(options) => find_option(args, options, false).and_then(|o| hit(&o)),
        Test::Leading(options) => find_option(args, options, true).and_then(|o| hit(&o)),
        Test::Word(words) => args
            .iter()
            .find(|a| {
                words
                    .iter()
                    .any(|w| a == w || a.starts_with(&format!("{w}=")))
            })
            .and_then(|w| hit(w)),
        Test::Check(check) => check(command).map(|d| format!("{}: {d}", command.argv.join(" "))),
    }
}

/// The operands: words that are not options, after the command name. Option values are not
/// told apart; callers that need them skip known valued options themselves.
fn operands(command: &Command) -> Vec<&str> {
    let mut out = Vec::new();
    let mut options_done = false;
    for a in &command.argv[1..] {
        if !options_done && a == "--" {
            options_done = true;
            continue;
        }
        if options_done || !a.starts_with('-') || a == "-" {
            out.push(a.as_str());
        }
    }
    out
}

fn has_operand(command: &Command) -> Option<String> {
    (!operands(command).is_empty()).then(|| "has arguments".to_owned())
}

/// An interpreter with no script operand and no inline program reads its program from stdin.
fn reads_program_from_stdin(command: &Command) -> Option<String> {
    let info = [
        "-V",
        "--version",
        "-v",
        "-h",
        "--help",
        "-m",
        "-c",
        "-e",
        "-E",
        "-p",
        "--eval",
        "--print",
        "-r",
    ];
    let args = &command.argv[1..];
    if args.iter().any(|a| info.contains(&a.as_str())) {
        return None;
    }
    let ops = operands(command);
    (ops.is_empty() || ops[0] == "-").then(|| "reads its program from stdin".to_owned())
}

fn deno_eval(command: &Command) -> Option<String> {
    (operands(command).first() == Some(&"eval")).then(|| "deno eval".to_owned())
}

fn uniq_output(command: &Command) -> Option<String> {
    (operands(command).len() > 1).then(|| "writes its second operand".to_owned())
}

fn dynamic_folder(command: &Command) -> Option<String> {
    let target = command
        .words
        .iter()
        .skip(1)
        .find(|w| !w.text.starts_with('-') || w.text == "-");
    match target {
        Some(w) if !w.is_static() || w.text == "-" => {
            Some(format!("changes to the folder {:?}", w.text))
        }
        _ => None,
    }
}

fn shopt_aliases(command: &Command) -> Option<String> {
    command
        .argv
        .iter()
        .any(|a| a == "expand_aliases")
        .then(|| "turns on expand_aliases".to_owned())
}

fn vim_commands(command: &Command) -> Option<String> {
    command.argv[1..]
        .iter()
        .find(|a| {
            matches!(a.as_str(), "-c" | "--cmd" | "-S" | "-s" | "-u" | "-i")
                || (a.starts_with('+') && a.len() > 1)
        })
        .map(|a| format!("{a} runs editor commands"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(script: &str) -> Vec<&'static str> {
        Analysis::of(script).hazards.iter().map(|h| h.id).collect()
    }

    #[test]
    fn every_command_row_triggers_on_its_example_and_not_on_its_benign_twin() {
        for row in COMMANDS {
            let found = ids(row.example);
            assert!(
                found.contains(&row.id),
                "{}: want {}, got {found:?}",
                row.example,
                row.id
            );
            if !row.benign.is_empty() {
                let a = Analysis::of(row.benign);
                let same = a
                    .hazards
                    .iter()
                    .filter(|h| {
                        h.id == row.id
                            && h.command.is_some_and(|c| {
                                a.commands[c].basename() == a.commands[0].basename()
                            })
                    })
                    .count();
                assert_eq!(
                    same, 0,
                    "{}: must not be {} ({:?})",
                    row.benign, row.id, a.hazards
                );
            }
        }
    }
}
