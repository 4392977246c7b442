//! The environment: variables that change what a program does when they are set before it,
//! through `env`, with `export`, or alone. `git status *` cannot know that `GIT_PAGER` names a
//! program git will run, nor `tar *` that `TAR_OPTIONS` adds `--to-command`; such an assignment
//! is a hazard, allowed only by an `exact:` rule (or Rego), like the command hazards of
//! [`hazards`](super::hazards), which re-exports this table.
//!
//! The table is strict. Programs read far more of their environment than any list of known
//! dangers can hold (git alone reads dozens of `GIT_*` variables, make turns every variable
//! into a make variable), so what is allowed is listed instead: [`INERT`] holds the variables
//! known to change nothing but output format, locale or verbosity, and [`INERT_VALUES`] the
//! values that make a program variable run nothing (`GIT_PAGER=cat`). Any other variable in a
//! program's environment is a hazard; [`ENVIRONMENT`] names the known dangers, to say why.
//!
//! Where the assignment stands decides which test applies:
//!
//! - in a program's environment ([`env()`], [`env_value`]): before a command (`X=1 cmd`), through
//!   `env`, exported (`export`, `declare -x`, `local -x`, `typeset -x`, any assignment after
//!   `set -a`): strict;
//! - a shell variable ([`shell_variable`]): a standalone `X=1`, a `for` variable, a `read`,
//!   `mapfile`, `printf -v` or `getopts` target, `declare`/`local` without `-x`. Bash exports
//!   such a variable only when it came from the environment, where names are upper-case by
//!   convention; an upper-case name that is not inert is therefore a hazard, and so is any name
//!   of the [`ENVIRONMENT`] table (`npm_config_*` and the `*_proxy` family are read in lower
//!   case too). A lower-case name is the script's own (`f`, `dir`, `count`).
//!
//! Every row of [`ENVIRONMENT`] is tested before a command, with `env`, with `export` and alone.

use super::Hazard;

/// One row of the environment table: a variable (or a prefix ending in `*`) that makes a
/// program load or run code, or read its configuration from elsewhere. A name written with
/// lower-case letters matches in any case (`npm_config_*` is `NPM_CONFIG_*` too).
pub struct EnvRow {
    /// The name, or a prefix followed by `*`.
    pub name: &'static str,
    /// What it does.
    pub why: &'static str,
}

/// Environment variables known to change what a program runs or reads.
#[rustfmt::skip]
pub const ENVIRONMENT: &[EnvRow] = &[
    EnvRow { name: "LD_*", why: "the dynamic loader preloads or searches libraries" },
    EnvRow { name: "DYLD_*", why: "the dynamic loader preloads or searches libraries" },
    EnvRow { name: "GCONV_PATH", why: "glibc loads conversion modules from it" },
    EnvRow { name: "LOCPATH", why: "glibc loads locale data from it" },
    EnvRow { name: "PATH", why: "decides which program a command name runs" },
    EnvRow { name: "BASH_ENV", why: "bash runs this file before a script" },
    EnvRow { name: "ENV", why: "sh runs this file at start" },
    EnvRow { name: "BASH_FUNC_*", why: "an exported function: a child bash runs it in place of the program named" },
    EnvRow { name: "BASH_LOADABLES_PATH", why: "bash loads builtins from it" },
    EnvRow { name: "PROMPT_COMMAND", why: "bash runs it before each prompt" },
    EnvRow { name: "PS0", why: "expanded (and its substitutions run) by an interactive shell" },
    EnvRow { name: "PS1", why: "expanded (and its substitutions run) by an interactive shell" },
    EnvRow { name: "PS4", why: "expanded (and its substitutions run) on every traced line" },
    EnvRow { name: "SHELLOPTS", why: "turns on shell options in child shells" },
    EnvRow { name: "BASHOPTS", why: "turns on shell options in child shells" },
    EnvRow { name: "IFS", why: "changes how later words are split" },
    EnvRow { name: "GLOBIGNORE", why: "changes which files a glob finds" },
    EnvRow { name: "CDPATH", why: "makes cd go to another folder than the one named" },
    EnvRow { name: "HOME", why: "changes what `~` means, and where programs read their dotfiles (git config, .npmrc, .ssh)" },
    EnvRow { name: "XDG_CONFIG_HOME", why: "programs read their configuration (git, pip, npm) from it" },
    EnvRow { name: "SHELL", why: "programs run it as the shell for commands they start" },
    EnvRow { name: "GIT_CONFIG*", why: "adds git configuration (pagers, aliases, hooks)" },
    EnvRow { name: "GIT_EXTERNAL_DIFF", why: "git runs it as the diff program" },
    EnvRow { name: "GIT_PAGER", why: "git runs it as the pager" },
    EnvRow { name: "GIT_EDITOR", why: "git runs it as the editor" },
    EnvRow { name: "GIT_SEQUENCE_EDITOR", why: "git runs it during a rebase" },
    EnvRow { name: "GIT_SSH", why: "git runs it to reach a remote" },
    EnvRow { name: "GIT_SSH_COMMAND", why: "git runs it to reach a remote" },
    EnvRow { name: "GIT_PROXY_COMMAND", why: "git runs it to reach a remote" },
    EnvRow { name: "GIT_ASKPASS", why: "git runs it to ask for a password" },
    EnvRow { name: "GIT_EXEC_PATH", why: "git runs its subcommands from there" },
    EnvRow { name: "GIT_DIR", why: "points git at another repository, with its config and hooks" },
    EnvRow { name: "GIT_WORK_TREE", why: "points git at another work tree" },
    EnvRow { name: "GIT_*", why: "git reads it as configuration" },
    EnvRow { name: "SSH_ASKPASS", why: "ssh runs it to ask for a password" },
    EnvRow { name: "SUDO_ASKPASS", why: "sudo runs it to ask for a password" },
    EnvRow { name: "PAGER", why: "programs run it as the pager" },
    EnvRow { name: "MANPAGER", why: "man runs it as the pager" },
    EnvRow { name: "MANOPT", why: "man takes options (-P pager, -H browser) from it" },
    EnvRow { name: "SYSTEMD_PAGER", why: "systemd tools run it as the pager" },
    EnvRow { name: "LESSOPEN", why: "less runs it on every file" },
    EnvRow { name: "LESSCLOSE", why: "less runs it on every file" },
    EnvRow { name: "LESS", why: "less takes options and start-up commands from it" },
    EnvRow { name: "LESSKEY*", why: "less reads key bindings (which can run commands) from it" },
    EnvRow { name: "EDITOR", why: "programs run it as the editor" },
    EnvRow { name: "VISUAL", why: "programs run it as the editor" },
    EnvRow { name: "BROWSER", why: "programs run it to open links" },
    EnvRow { name: "TAR_OPTIONS", why: "tar takes options (--to-command, --use-compress-program) from it" },
    EnvRow { name: "MAKEFLAGS", why: "make takes options (--eval) from it" },
    EnvRow { name: "GNUMAKEFLAGS", why: "make takes options (--eval) from it" },
    EnvRow { name: "MFLAGS", why: "make takes options from it" },
    EnvRow { name: "MAKEFILES", why: "make reads these makefiles first" },
    EnvRow { name: "RIPGREP_CONFIG_PATH", why: "rg takes options (--pre) from this file" },
    EnvRow { name: "GREP_OPTIONS", why: "old greps take options from it" },
    EnvRow { name: "NODE_OPTIONS", why: "node loads modules (--require) from it" },
    EnvRow { name: "NODE_PATH", why: "node resolves modules from it" },
    EnvRow { name: "PYTHONPATH", why: "python imports modules from it" },
    EnvRow { name: "PYTHONSTARTUP", why: "python runs this file at start" },
    EnvRow { name: "PYTHONHOME", why: "python loads its library from it" },
    EnvRow { name: "PYTHONWARNINGS", why: "python imports the warning categories it names" },
    EnvRow { name: "PYTHONBREAKPOINT", why: "python calls the function it names" },
    EnvRow { name: "PERL5LIB", why: "perl loads modules from it" },
    EnvRow { name: "PERL5OPT", why: "perl takes options (-M modules) from it" },
    EnvRow { name: "PERLLIB", why: "perl loads modules from it" },
    EnvRow { name: "PERL5DB", why: "perl runs it as the debugger" },
    EnvRow { name: "RUBYOPT", why: "ruby takes options (-r requires) from it" },
    EnvRow { name: "RUBYLIB", why: "ruby loads libraries from it" },
    EnvRow { name: "JAVA_TOOL_OPTIONS", why: "the JVM takes options (agents) from it" },
    EnvRow { name: "_JAVA_OPTIONS", why: "the JVM takes options (agents) from it" },
    EnvRow { name: "JDK_JAVA_OPTIONS", why: "the JVM takes options (agents) from it" },
    EnvRow { name: "CLASSPATH", why: "java loads classes from it" },
    EnvRow { name: "npm_config_*", why: "npm takes configuration (scripts, shells) from it" },
    EnvRow { name: "yarn_*", why: "yarn takes configuration from it" },
    EnvRow { name: "pnpm_*", why: "pnpm takes configuration from it" },
    EnvRow { name: "PIP_*", why: "pip takes configuration (index, build options) from it" },
    EnvRow { name: "RUSTC_WRAPPER", why: "cargo runs the compiler through it" },
    EnvRow { name: "RUSTC", why: "cargo runs it as the compiler" },
    EnvRow { name: "RUSTDOC", why: "cargo runs it as rustdoc" },
    EnvRow { name: "RUSTFLAGS", why: "rustc takes options (a linker to run) from it" },
    EnvRow { name: "CARGO_*", why: "cargo takes configuration (wrappers, runners, linkers) from it" },
    EnvRow { name: "GOFLAGS", why: "go takes options (-toolexec) from it" },
    EnvRow { name: "CC", why: "builds run it as the C compiler" },
    EnvRow { name: "CXX", why: "builds run it as the C++ compiler" },
    EnvRow { name: "http_proxy", why: "network traffic goes through it" },
    EnvRow { name: "https_proxy", why: "network traffic goes through it" },
    EnvRow { name: "all_proxy", why: "network traffic goes through it" },
];

/// Variables known to change nothing but a program's output, locale, timing or verbosity.
/// Only these may be set before a command that a prefix rule allows. A trailing `*` is a
/// prefix.
#[rustfmt::skip]
pub const INERT: &[&str] = &[
    "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR",
    "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM", "CI", "DEBIAN_FRONTEND", "SOURCE_DATE_EPOCH",
    "POSIXLY_CORRECT", "TIMEFORMAT",
    "RUST_BACKTRACE", "RUST_LIB_BACKTRACE", "RUST_LOG", "RUST_TEST_THREADS", "RUST_TEST_NOCAPTURE",
    "RUST_MIN_STACK", "CARGO_TERM_*", "CARGO_INCREMENTAL", "CARGO_BUILD_JOBS",
    "NODE_ENV", "NODE_NO_WARNINGS",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONHASHSEED",
    "PYTHONUTF8", "PYTHONFAULTHANDLER",
    "GOOS", "GOARCH", "CGO_ENABLED", "GOMAXPROCS",
    "GIT_OPTIONAL_LOCKS", "GIT_TERMINAL_PROMPT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    "GIT_MERGE_AUTOEDIT", "GIT_FLUSH",
    // Variables the shell's own builtins fill; no program reads them.
    "REPLY", "OPTARG", "OPTIND", "MAPFILE",
];

/// Builtins that run no program and read no variable a prefix assignment could turn into one:
/// `IFS= read -r line` only changes how `read` splits its line.
pub const BUILTINS_WITHOUT_PROGRAMS: &[&str] = &[
    "read",
    "mapfile",
    "readarray",
    "echo",
    "printf",
    "test",
    "[",
    "true",
    "false",
    ":",
];

/// Variables that name a program to run, and the values that make it run nothing but a reader
/// (`GIT_PAGER=cat`, `GIT_EDITOR=true`, an empty pager).
#[rustfmt::skip]
pub const INERT_VALUES: &[(&[&str], &[&str])] = &[
    (&["PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER"], &["", "cat"]),
    (&["EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR"], &["true", ":"]),
];

/// Whether `name` matches a table entry (`*` ends a prefix).
fn matches(entry: &str, name: &str, any_case: bool) -> bool {
    let eq = |a: &str, b: &str| {
        if any_case {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    match entry.strip_suffix('*') {
        Some(prefix) => name
            .get(..prefix.len())
            .is_some_and(|head| eq(head, prefix)),
        None => eq(entry, name),
    }
}

/// The row of [`ENVIRONMENT`] for `name`, if any.
fn known(name: &str) -> Option<&'static EnvRow> {
    ENVIRONMENT.iter().find(|row| {
        let any_case = row.name.bytes().any(|b| b.is_ascii_lowercase());
        matches(row.name, name, any_case)
    })
}

/// Whether `name` is in [`INERT`].
pub fn is_inert(name: &str) -> bool {
    INERT.iter().any(|entry| matches(entry, name, false))
}

fn hazard(name: &str, command: Option<usize>, why: &str) -> Vec<Hazard> {
    vec![Hazard {
        id: "environment",
        command,
        detail: format!("setting {name}: {why}"),
    }]
}

/// Hazards from putting `name` in a program's environment (before a command, through `env`,
/// exported): anything not known to be inert.
pub fn env(name: &str, command: Option<usize>) -> Vec<Hazard> {
    env_value(name, None, command)
}

/// [`env()`], knowing the static value (`None` when it is not static): a program variable set to
/// a value of [`INERT_VALUES`] runs nothing.
pub fn env_value(name: &str, value: Option<&str>, command: Option<usize>) -> Vec<Hazard> {
    if is_inert(name) {
        return Vec::new();
    }
    if let Some(value) = value
        && INERT_VALUES
            .iter()
            .any(|(names, values)| names.contains(&name) && values.contains(&value))
    {
        return Vec::new();
    }
    match known(name) {
        Some(row) => hazard(name, command, row.why),
        None => hazard(
            name,
            command,
            "a variable not known to be inert: programs may read it as configuration or as a program to run",
        ),
    }
}

/// Hazards from setting the shell variable `name` (standalone, `for`, `read`…): a name of the
/// [`ENVIRONMENT`] table, or an upper-case name (one the environment may hold, and so export)
/// that is not inert.
pub fn shell_variable(name: &str, value: Option<&str>, command: Option<usize>) -> Vec<Hazard> {
    let environment_like = !name.bytes().any(|b| b.is_ascii_lowercase());
    if known(name).is_some() || environment_like {
        env_value(name, value, command)
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Analysis;

    fn ids(script: &str) -> Vec<&'static str> {
        Analysis::of(script).hazards.iter().map(|h| h.id).collect()
    }

    #[test]
    fn every_environment_row_triggers_before_a_command_with_env_and_with_export() {
        for row in ENVIRONMENT {
            let name = row.name.replace('*', "X");
            for script in [
                format!("{name}=/tmp/x ls"),
                format!("env {name}=/tmp/x ls"),
                format!("export {name}=/tmp/x; ls"),
                format!("{name}=/tmp/x; ls"),
                format!("declare -x {name}=/tmp/x; ls"),
            ] {
                assert!(ids(&script).contains(&"environment"), "{script}");
            }
        }
    }

    #[test]
    fn only_inert_variables_may_be_set_before_a_command() {
        for script in [
            "LANG=C sort x",
            "LC_ALL=C sort x",
            "TZ=UTC date",
            "RUST_BACKTRACE=1 cargo test",
            "CI=true npm test",
            "GIT_PAGER=cat git log",
            "GIT_EDITOR=true git rebase --continue",
            "PAGER= man ls",
            "export LANG=C; sort x",
        ] {
            assert!(ids(script).is_empty(), "{script}: {:?}", ids(script));
        }
        for script in [
            "FOO=1 ls",
            "TAR_OPTIONS=--to-command=sh tar xf a.tar",
            "V=1 make",
            "GIT_PAGER=less git log",
            "GIT_CONFIG_COUNT=1 git log",
            "export FOO",
            "export FOO=1; ls",
            "env 'BASH_FUNC_ls%%=() { id; }' bash -c ls",
        ] {
            assert!(ids(script).contains(&"environment"), "{script}");
        }
    }

    #[test]
    fn shell_variables_are_hazards_when_the_environment_may_hold_them() {
        for script in [
            "f=src; ls $f",
            "for f in *.rs; do wc -l $f; done",
            "read -r line",
            "count=3",
        ] {
            assert!(ids(script).is_empty(), "{script}: {:?}", ids(script));
        }
        for script in [
            "TAR_OPTIONS=x; tar xf a.tar",
            "npm_config_script_shell=/tmp/x; npm test",
            "NPM_Config_Script_Shell=/tmp/x; npm test",
            "for PAGER in 'sh -c id'; do man ls; done",
            "read -r GIT_PAGER",
            "printf -v EDITOR %s vi",
            "set -a; f=1; ls",
            "HOME=/tmp; git log",
        ] {
            assert!(ids(script).contains(&"environment"), "{script}");
        }
    }

    #[test]
    fn lower_case_rows_match_in_any_case_and_upper_case_rows_exactly() {
        assert!(known("NPM_CONFIG_SCRIPT_SHELL").is_some());
        assert!(known("Npm_Config_x").is_some());
        assert!(known("HTTPS_PROXY").is_some());
        assert!(known("path").is_none());
        assert!(known("home").is_none());
    }
}
