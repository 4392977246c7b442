//! What a bash command line does, before it runs: every program it runs, every path it reads or
//! writes, its effects, and the hazards no prefix rule can judge — or, when it cannot be sure,
//! that it does not understand the script.
//!
//! This is the shell analysis of Reasonix, a permission and sandbox gateway for LLM agents' tool
//! calls, as a crate of its own: a gateway that decides whether an agent's `bash` call may
//! run can judge these facts instead of matching the command line's prefix. It decides nothing
//! itself (no policy, no verdict) and runs nothing (the script is parsed, never executed).
//!
//! # Example: one command line
//!
//! A pipeline behind `&&`, a redirection, a wrapper and a nested shell with inline code:
//!
//! ```
//! use reasonix_shell::{Analysis, Effect, PathRequest, PathRole};
//!
//! let a = Analysis::of(
//!     r#"cat notes.md | sort -u > sorted.txt && timeout 10 sh -c 'python3 -c "print(1)"'"#,
//! );
//! // Understood: tree-sitter-bash parsed it and the walk knew every construct in it.
//! assert!(a.analysed && a.problems.is_empty());
//!
//! // What it runs: every simple command, wrappers seen through. `timeout` and `sh -c` only run
//! // the command inside them, so a rule need not cover them (`needs_cover`), only `python3`.
//! let runs: Vec<&str> = (0..a.commands.len())
//!     .filter(|&i| a.needs_cover(i))
//!     .map(|i| a.commands[i].name())
//!     .collect();
//! assert_eq!(runs, ["cat", "sort", "python3"]);
//! let python = &a.commands[4];
//! assert_eq!(python.argv, ["python3", "-c", "print(1)"]);
//! assert_eq!(python.context, ["list", "sh -c"]);
//!
//! // What it reads and writes: a redirection's target is a path the call changes; every other
//! // word that may name a file is an argument it may read (`notes.md`, but also `print(1)`: the
//! // text alone cannot tell), for rules such as "nothing touches `**/.env`".
//! let paths = a.path_requests();
//! assert!(paths.contains(&PathRequest::write("sorted.txt", PathRole::Redirect)));
//! assert!(paths.contains(&PathRequest::read("notes.md", PathRole::Argument)));
//!
//! // Its effects, and whether nothing in it can change anything.
//! assert_eq!(a.effects, [Effect::Read, Effect::Write, Effect::Exec].into());
//! assert!(!a.read_only);
//!
//! // A hazard: code given on the command line, which no rule on `python3`'s words can judge.
//! let hazard = &a.hazards[0];
//! assert_eq!(hazard.id, "inline_code");
//! assert_eq!(hazard.command, Some(4));
//! ```
//!
//! A prefix rule such as `git status*` matches `git status; rm -rf ~`; the analysis sees two
//! commands, and that the second deletes:
//!
//! ```
//! # use reasonix_shell::{Analysis, Effect};
//! let a = Analysis::of("git status; rm -rf ~");
//! let names: Vec<&str> = a.commands.iter().map(|c| c.name()).collect();
//! assert_eq!(names, ["git", "rm"]);
//! assert!(a.effects.contains(&Effect::Delete));
//! ```
//!
//! What it does not understand it says so, and a gateway should never allow such a call:
//!
//! ```
//! # use reasonix_shell::Analysis;
//! let a = Analysis::of("if then fi");
//! assert!(!a.analysed);
//! assert_eq!(a.problems[0], "the script does not parse as bash");
//! ```
//!
//! # The public interface
//!
//! - [`Analysis::of`] and what it returns: [`Analysis`], with its [`Command`]s (argv after quote
//!   removal, each [`Word`] and what makes it [`Dynamic`]), [`Redirect`]s, [`Feature`]s,
//!   [`Hazard`]s, problems, effects ([`Effect`]) and [`Analysis::path_requests`]
//!   ([`PathRequest`], [`PathRole`], [`Access`]). All of it serializes to JSON (serde): that is
//!   the `bash` field of Reasonix's policy input.
//! - [`Normalized`]: a command's options in canonical spelling, as Reasonix's `commands:` rules
//!   match them (`rm --recur --forc` is `rm -rf`).
//! - The tables, public so they can be listed, audited and tested, each row with its example:
//!   [`hazards`], [`readers`] (read-only programs and each program's effects), [`wrappers`],
//!   [`environment`] (variables that change what a program does), [`programs`] (one option spec
//!   per program and the matcher that reads an argv against it). Their row types follow the
//!   tables; code that builds on them ties itself to this version.
//! - [`word`]: words after quote removal and bash's quoting decoders.
//!
//! The walk over the tree and tree-sitter's types stay private: no tree-sitter node appears in
//! the interface, so the grammar can move on without breaking it.
//!
//! # What the analysis yields
//!
//! The script is parsed with tree-sitter-bash (no hand-written tokenizer) and walked once. The
//! walk yields:
//!
//! - every **simple command** anywhere — top level, `&& || ; &` lists, pipelines, subshells,
//!   `{ }` groups, if/for/while/until/case bodies, function bodies, `$(...)`, backticks,
//!   `<(...)`, `>(...)`, arithmetic and `[[ ]]` subscripts, heredoc bodies — with its argv after
//!   quote removal, which words are dynamic and why, its leading `NAME=value` assignments and its
//!   context; the inner commands of wrappers (`timeout`, `env`, `xargs`, `sudo`, `find -exec`,
//!   `bash -c`, …) are simple commands too ([`wrappers`]);
//! - every **redirection** with operator, fd and target;
//! - a **feature** set, from the node kinds of the tree (`parse`; the same as the query in
//!   `grammars/bash/features.scm` of this crate, which the tests hold the table to);
//! - the **hazards** no prefix rule can judge ([`hazards`]);
//! - whether the whole call is **read-only** ([`readers`]) and its **effects**.
//!
//! # What it refuses to understand
//!
//! A parse error, a node kind the walk does not know, a command name that is not static, a
//! reserved word in command position, nesting of `bash -c` deeper than [`MAX_DEPTH`], a syntax
//! tree deeper than [`MAX_NESTING`], a script over [`MAX_SCRIPT`] bytes, a word whose expansion
//! gives more than 1024 words, text that tree-sitter left out of the tree, a word it split in two
//! or joined across blanks, a reserved word or assignment it read where bash reads a plain word
//! (`{}`, `[a]`, `!{x`, `1=x`), a here-document it ended before its delimiter, `time` before an
//! option other than `-p`: each is recorded in [`Analysis::problems`], and a call with problems
//! is never allowed (in Reasonix, the policy stage asks, or denies under `strict`).
//!
//! Two bash behaviours tree-sitter does not model are handled before the walk: a
//! backslash-newline glued inside a word (`r\<newline>m`) is a line continuation that bash
//! removes *before* splitting words, while tree-sitter treats it as a separator (such
//! continuations are removed and the script parsed again); and a carriage return is a word
//! character to bash, a blank to tree-sitter (the parser sees `x` in its place) (`parse`).
//!
//! # Layout (for maintainers)
//!
//! This file holds the types of the analysis and runs its stages. Each module below imports
//! only modules listed before it (and these types), so no two import each other:
//!
//! - [`word`]: words after quote removal, and the quoting decoders;
//! - `parse`: tree-sitter, the node kinds that mark features and commands, line continuations;
//! - [`programs`]: one option spec per foreign program and the one matcher that reads an argv
//!   against it (`programs::spec`), the paths hidden in other syntax (`programs::paths`), and
//!   what awk programs, sed scripts and git's options make a program do;
//! - `options`: options as `commands:` rules see them, from the matcher's output;
//! - [`environment`]: the variables that change what a program does;
//! - [`hazards`]: the hazard tables and the scan that runs them;
//! - [`readers`]: the read-only table and the effects;
//! - [`wrappers`]: the wrapper table, and what a wrapper runs;
//! - `walk`: the walk over the tree, which records what [`wrappers`] unwraps; inside it, the
//!   pre-pass over what the script assigns (`scope`), bash's expansions of static text
//!   (`expand`) and the places bash evaluates arithmetic (`arith`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod environment;
pub mod hazards;
mod options;
mod parse;
pub mod programs;
pub mod readers;
pub mod vocab;
mod walk;
pub mod word;
pub mod wrappers;

use std::collections::BTreeSet;

use serde::Serialize;

pub use options::Normalized;
pub use vocab::{Access, Effect, PathRequest, PathRole};
pub use word::{Dynamic, Word};

/// Deepest nesting of `bash -c`, `env -S`, `watch` scripts analysed.
pub const MAX_DEPTH: usize = 4;
/// Largest script analysed, in bytes.
pub const MAX_SCRIPT: usize = 64 * 1024;
/// Deepest syntax tree walked, in nodes from the root, counting the scripts it is nested in
/// (`bash -c`): a script nested deeper (`$(echo $(echo …))` or `((((…))))` some hundred
/// levels down) is not analysed. The walk recurses along the tree, and an unbounded one
/// overflowed the stack, which aborts the process: for `reasonix hook claude` that is an exit
/// status Claude Code reads as "go ahead" rather than "blocked". 200 levels is far beyond any
/// script written by hand (ten nested `$(…)` are about 40), and is walked within the 2 MiB
/// stack of a tokio worker in a debug build
/// (`deep_nesting_is_refused_and_the_deepest_analysed_fits_a_worker_stack`).
pub const MAX_NESTING: usize = 200;

/// A construct the script uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Feature {
    /// More than one statement, or `&&` / `||`.
    Chain,
    /// A pipeline.
    Pipe,
    /// `$(...)` or backticks.
    Substitution,
    /// `<(...)` or `>(...)`.
    ProcessSubstitution,
    /// A redirection that writes a file.
    RedirectWrite,
    /// A redirection that reads a file.
    RedirectRead,
    /// A heredoc.
    Heredoc,
    /// A herestring.
    Herestring,
    /// `&`.
    Background,
    /// `( ... )`.
    Subshell,
    /// `{ ...; }`.
    Group,
    /// A function definition.
    FunctionDef,
    /// `eval`.
    Eval,
    /// A command name that is not static.
    DynamicCommand,
    /// An interpreter given code inline (`python -c`, `bash -c`, `awk` programs…).
    InlineCode,
    /// tree-sitter could not parse the script.
    ParseError,
    /// if / case.
    Conditional,
    /// for / while / until / select.
    Loop,
    /// `!`.
    Negation,
    /// `NAME=value`, standalone or before a command.
    Assignment,
    /// A wrapper that runs another command (`timeout`, `env`, `xargs`…).
    Wrapper,
    /// A shell run inside the script (`bash -c`, `sh <<EOF`).
    NestedShell,
    /// `/dev/tcp` or `/dev/udp`.
    NetworkRedirect,
    /// A variable expansion.
    Variable,
    /// An unquoted glob.
    Glob,
    /// Brace expansion.
    BraceExpansion,
    /// A leading `~`.
    Tilde,
    /// `$((...))`.
    Arithmetic,
    /// `[[ ... ]]` or `[ ... ]`.
    Test,
    /// A comment.
    Comment,
}

/// A `NAME=value` assignment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Assignment {
    /// The variable.
    pub name: String,
    /// The value after quote removal.
    pub value: String,
    /// Whether the value is static.
    #[serde(rename = "static")]
    pub is_static: bool,
}

/// A word of a command that is not static, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DynamicWord {
    /// Its index in argv.
    pub word: usize,
    /// Why it is dynamic.
    pub kinds: Vec<Dynamic>,
}

/// One simple command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Command {
    /// argv after quote removal; dynamic parts keep their source text.
    pub argv: Vec<String>,
    /// The words that are not static.
    pub dynamic: Vec<DynamicWord>,
    /// Leading `NAME=value` assignments (or `env NAME=value`).
    pub assignments: Vec<Assignment>,
    /// The constructs around it, outermost first (`pipeline`, `substitution`, `bash -c`…).
    pub context: Vec<String>,
    /// For an inner command: the index of the command that runs it.
    pub parent: Option<usize>,
    /// True for a wrapper that only runs another command recorded here: rules need not cover
    /// it, only what it runs.
    pub wrapper: bool,
    /// The words, with what makes each dynamic.
    #[serde(skip)]
    pub words: Vec<Word>,
}

impl Command {
    /// The command name as written (after quote removal), or "" when there is none.
    pub fn name(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or("")
    }

    /// The name without its folder: `/bin/rm` is `rm`.
    pub fn basename(&self) -> &str {
        let name = self.name();
        // A byte search: the tables ask for it all the time, and `rsplit` sets up a searcher
        // for a name of a few bytes (a twentieth of an analysis).
        match name.bytes().rposition(|b| b == b'/') {
            Some(at) => &name[at + 1..],
            None => name,
        }
    }

    /// The basename when the name is one the system resolves (a bare name looked up in
    /// `PATH`, or a file in a system folder such as `/usr/bin`); `None` for `./git` or
    /// `/tmp/x/git`, which run whatever file is there. Tables that trust a command to behave
    /// as its name says (readers, transparent wrappers) use this.
    pub fn trusted_name(&self) -> Option<&str> {
        const SYSTEM: &[&str] = &[
            "/bin",
            "/usr/bin",
            "/usr/local/bin",
            "/sbin",
            "/usr/sbin",
            "/usr/local/sbin",
        ];
        let name = self.name();
        let split = name
            .bytes()
            .rposition(|b| b == b'/')
            .map(|at| (&name[..at], &name[at + 1..]));
        match split {
            None => Some(name),
            Some((dir, base)) if SYSTEM.contains(&dir) => Some(base),
            Some(_) => None,
        }
    }

    /// True when every word is static.
    pub fn is_static(&self) -> bool {
        self.words.iter().all(Word::is_static)
    }
}

/// What a redirection does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectKind {
    /// `<`: reads the target.
    Read,
    /// `>`, `>|`, `&>`, `>&file`: replaces the target.
    Write,
    /// `>>`, `&>>`: appends to the target.
    Append,
    /// `<>`: opens the target for reading and writing.
    ReadWrite,
    /// `2>&1`, `<&0`, `>&-`: duplicates or closes a descriptor; no file.
    Duplicate,
    /// A harmless device: `/dev/null`, `/dev/stderr`, `/dev/fd/N`…
    Device,
    /// `/dev/tcp/...` or `/dev/udp/...`: a network connection.
    Network,
    /// `<<`: a heredoc.
    Heredoc,
    /// `<<<`: a herestring.
    Herestring,
}

/// One redirection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Redirect {
    /// The operator as written.
    pub op: String,
    /// The descriptor before it, if written.
    pub fd: Option<String>,
    /// The target after quote removal (`null` for heredocs).
    pub target: Option<String>,
    /// Whether the target is static.
    #[serde(rename = "static")]
    pub is_static: bool,
    /// What it does.
    pub kind: RedirectKind,
    /// The command it applies to, when it applies to one simple command.
    pub command: Option<usize>,
}

impl Redirect {
    /// True when the redirection writes its target.
    pub fn writes(&self) -> bool {
        matches!(
            self.kind,
            RedirectKind::Write | RedirectKind::Append | RedirectKind::ReadWrite
        )
    }
}

/// A construct that no prefix rule can judge: allowed only by an `exact` rule (or Rego).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hazard {
    /// The hazard table's id (`inline_code`, `eval`, `git_config`…).
    pub id: &'static str,
    /// The command it is in, if any.
    pub command: Option<usize>,
    /// What was found, in words.
    pub detail: String,
}

/// Everything the analysis found in one script.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Analysis {
    /// False when [`problems`](Self::problems) is not empty: the script is not understood.
    pub analysed: bool,
    /// Every simple command, in source order; inner commands follow their wrapper.
    pub commands: Vec<Command>,
    /// Every redirection.
    pub redirects: Vec<Redirect>,
    /// The constructs used.
    pub features: BTreeSet<Feature>,
    /// Hazards found.
    pub hazards: Vec<Hazard>,
    /// Why the script is not understood (empty when it is).
    pub problems: Vec<String>,
    /// Whether nothing in it can change anything.
    pub read_only: bool,
    /// Whether every program it runs only reads: what it writes, if anything, it writes through
    /// its redirections, to the paths they name. A writer whose programs only read writes
    /// nothing the analysis did not predict (issue 25: what else its run changes is judged on
    /// its own, never waved through as the command's).
    #[serde(skip)]
    pub programs_read_only: bool,
    /// Folders whose files a read-only command reads without naming them (`grep -r x src`,
    /// `find . -exec cat {} +`), or `.` when unknown.
    pub unnamed_reads: Vec<String>,
    /// Operands a read-only command reads whole when they are folders (`diff DIR1 DIR2` reads
    /// every file beneath both). The text cannot tell a folder from a file; the policy stage,
    /// which resolves them, judges one that is a folder as an unnamed read.
    #[serde(skip)]
    pub folder_reads: Vec<String>,
    /// Paths programs read that hide inside other syntax: git's `REV:PATH`, an attached
    /// `-fFILE`, a path an option such as `-C DIR` moves (`programs::paths`). Judged by path
    /// rules like any argument.
    pub hidden_paths: Vec<String>,
    /// Folders (or instruction files, `make -f F`) that a program obeying its folder runs in
    /// or reads: `git -C D`, `make -C D`, `npm --prefix D`, `env --chdir=D git`, `cd D && git`.
    /// Judged as paths the call acts on, resolved and confined like any other: a symbolic
    /// link to a folder outside the workspace is not the workspace. (Policies see them among
    /// the call's paths.)
    #[serde(skip)]
    pub run_folders: Vec<String>,
    /// Files and folders programs write through their options (`sort -o F`, `tar -cf F`,
    /// `tar -x -C D`), judged as paths the call changes. (Policies see them among the call's
    /// paths.)
    #[serde(skip)]
    pub written_paths: Vec<String>,
    /// What the script may do.
    pub effects: BTreeSet<Effect>,
}

impl Analysis {
    /// Analyses one bash script.
    pub fn of(script: &str) -> Analysis {
        let mut analysis = walk::analyse(script, 0, MAX_NESTING, &[], false);
        analysis.finish();
        analysis
    }

    /// Settles the derived fields once the walk is done.
    fn finish(&mut self) {
        // Each command's argv is read against its option spec once, for the hazards and the
        // reader classification both; the commands stay out of the analysis meanwhile.
        let commands = std::mem::take(&mut self.commands);
        let specs = hazards::parse_all(&commands);
        hazards::scan(self, &commands, &specs);
        self.analysed = self.problems.is_empty();
        readers::classify(self, &commands, &specs);
        drop(specs);
        self.commands = commands;
    }

    /// True when the command at `index` must be covered by an allow rule: every command but a
    /// transparent wrapper.
    pub fn needs_cover(&self, index: usize) -> bool {
        !self.commands[index].wrapper
    }

    /// The paths the script touches: redirection targets (confined, judged by path rules), and
    /// every other word that may name a file (`argument`: seen by deny and ask rules only).
    pub fn path_requests(&self) -> Vec<PathRequest> {
        let mut out: Vec<PathRequest> = Vec::new();
        let bases = self.folders();
        let mut push = |request: PathRequest| {
            // A relative path after `cd dir` may be meant from there: it is judged from every
            // folder the script changes to as well.
            let relative = !request.written.starts_with(['/', '~']);
            let mut all = vec![request.clone()];
            if relative {
                for base in &bases {
                    all.push(PathRequest {
                        written: format!("{}/{}", base.trim_end_matches('/'), request.written),
                        ..request.clone()
                    });
                }
            }
            for r in all {
                if !out
                    .iter()
                    .any(|p| p.written == r.written && p.role == r.role)
                {
                    out.push(r);
                }
            }
        };
        for r in &self.redirects {
            let Some(target) = &r.target else { continue };
            if !r.is_static {
                continue;
            }
            match r.kind {
                RedirectKind::Read => push(PathRequest::read(target, PathRole::Redirect)),
                RedirectKind::Write | RedirectKind::Append | RedirectKind::ReadWrite => {
                    push(PathRequest::write(target, PathRole::Redirect))
                }
                _ => {}
            }
        }
        for path in &self.written_paths {
            if !path.is_empty() && !path.contains('\0') {
                push(PathRequest::write(path, PathRole::Target));
            }
        }
        for folder in &self.run_folders {
            if !folder.is_empty() && !folder.contains('\0') {
                push(PathRequest::read(folder, PathRole::Target));
            }
        }
        for hidden in &self.hidden_paths {
            if !hidden.is_empty() && !hidden.contains('\0') {
                push(PathRequest::read(hidden, PathRole::Argument));
            }
        }
        for c in &self.commands {
            for word in c.words.iter().skip(1) {
                if !word.depends_on_static() || word.dynamic.contains(&Dynamic::Found) {
                    continue;
                }
                // What bash makes of the word (braces are already separate words of argv):
                // tilde expansion, bound variables substituted, their values split.
                let candidates: Vec<&Word> = if word.values.is_empty() {
                    vec![word]
                } else {
                    word.values.iter().collect()
                };
                for w in candidates {
                    if !w.depends_on_static() || w.dynamic.contains(&Dynamic::Found) {
                        continue;
                    }
                    // Each text, and whether a `~` that starts it is bash's to expand.
                    let tilde = w.dynamic.contains(&Dynamic::Tilde);
                    let mut texts = Vec::new();
                    match w.text.split_once('=') {
                        Some((flag, value)) if flag.starts_with("--") => texts.push((value, tilde)),
                        _ if w.text.starts_with('-') => continue,
                        // `NAME=value` (an argument that looks like an assignment, where bash
                        // expands a `~` after the `=`, or `dd if=FILE`): the value too.
                        Some((name, value)) if is_name(name) => {
                            texts.push((w.text.as_str(), tilde));
                            texts.push((value, true));
                        }
                        _ => texts.push((w.text.as_str(), tilde)),
                    }
                    for (text, tilde) in texts {
                        if text.is_empty() || text.contains('\0') {
                            continue;
                        }
                        let pattern = w.dynamic.contains(&Dynamic::Glob);
                        if text.starts_with('~') && !tilde {
                            // A `~` bash did not expand (`"~/x"`, `--file=~/x`) names a folder
                            // `~`, unless the program expands it itself: judged both ways.
                            let mut request =
                                PathRequest::read(format!("./{text}"), PathRole::Argument);
                            request.pattern = pattern;
                            push(request);
                        }
                        let mut request = PathRequest::read(text, PathRole::Argument);
                        request.pattern = pattern;
                        push(request);
                    }
                }
            }
        }
        out
    }

    /// The folders the script changes to with `cd` or `pushd` (static targets; each alone and
    /// joined in order).
    fn folders(&self) -> Vec<String> {
        let mut alone = Vec::new();
        let mut joined = String::new();
        let mut out = Vec::new();
        for c in &self.commands {
            if !matches!(c.trusted_name(), Some("cd" | "pushd")) {
                continue;
            }
            let Some(dir) = c.words.iter().skip(1).find(|w| !w.text.starts_with('-')) else {
                continue;
            };
            if !dir.is_static() {
                continue;
            }
            alone.push(dir.text.clone());
            joined = if dir.text.starts_with('/') || joined.is_empty() {
                dir.text.clone()
            } else {
                format!("{joined}/{}", dir.text)
            };
            out.push(joined.clone());
        }
        for dir in alone {
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
        out
    }
}

/// A shell variable name: a letter or `_`, then letters, digits and `_`.
fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests;

/// The README's example, run with the doctests so it cannot drift from the crate.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
