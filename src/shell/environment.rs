//! The environment: variables that change what a program does when they are set before it,
//! through `env`, with `export`, or alone. `git status *` cannot know that `GIT_PAGER` names a
//! program git will run; such an assignment is a hazard, allowed only by an `exact:` rule (or
//! Rego), like the command hazards of [`hazards`](super::hazards), which re-exports this table.
//!
//! The table is data ([`ENVIRONMENT`]); every row is tested before a command, with `env`, with
//! `export` and alone.

use super::Hazard;

/// One row of the environment table: a variable (or a prefix ending in `*`) that makes a
/// program load or run code.
pub struct EnvRow {
    /// The name, or a prefix followed by `*`.
    pub name: &'static str,
    /// What it does.
    pub why: &'static str,
}

/// Environment variables that load code.
#[rustfmt::skip]
pub const ENVIRONMENT: &[EnvRow] = &[
    EnvRow { name: "LD_*", why: "the dynamic loader preloads or searches libraries" },
    EnvRow { name: "DYLD_*", why: "the dynamic loader preloads or searches libraries" },
    EnvRow { name: "GCONV_PATH", why: "glibc loads conversion modules from it" },
    EnvRow { name: "PATH", why: "decides which program a command name runs" },
    EnvRow { name: "BASH_ENV", why: "bash runs this file before a script" },
    EnvRow { name: "ENV", why: "sh runs this file at start" },
    EnvRow { name: "PROMPT_COMMAND", why: "bash runs it before each prompt" },
    EnvRow { name: "PS4", why: "expanded (and its substitutions run) on every traced line" },
    EnvRow { name: "SHELLOPTS", why: "turns on shell options in child shells" },
    EnvRow { name: "BASHOPTS", why: "turns on shell options in child shells" },
    EnvRow { name: "IFS", why: "changes how later words are split" },
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
    EnvRow { name: "SSH_ASKPASS", why: "ssh runs it to ask for a password" },
    EnvRow { name: "PAGER", why: "programs run it as the pager" },
    EnvRow { name: "MANPAGER", why: "man runs it as the pager" },
    EnvRow { name: "LESSOPEN", why: "less runs it on every file" },
    EnvRow { name: "LESSCLOSE", why: "less runs it on every file" },
    EnvRow { name: "EDITOR", why: "programs run it as the editor" },
    EnvRow { name: "VISUAL", why: "programs run it as the editor" },
    EnvRow { name: "BROWSER", why: "programs run it to open links" },
    EnvRow { name: "NODE_OPTIONS", why: "node loads modules (--require) from it" },
    EnvRow { name: "NODE_PATH", why: "node resolves modules from it" },
    EnvRow { name: "PYTHONPATH", why: "python imports modules from it" },
    EnvRow { name: "PYTHONSTARTUP", why: "python runs this file at start" },
    EnvRow { name: "PYTHONHOME", why: "python loads its library from it" },
    EnvRow { name: "PERL5LIB", why: "perl loads modules from it" },
    EnvRow { name: "PERL5OPT", why: "perl takes options (-M modules) from it" },
    EnvRow { name: "PERLLIB", why: "perl loads modules from it" },
    EnvRow { name: "RUBYOPT", why: "ruby takes options (-r requires) from it" },
    EnvRow { name: "RUBYLIB", why: "ruby loads libraries from it" },
    EnvRow { name: "JAVA_TOOL_OPTIONS", why: "the JVM takes options (agents) from it" },
    EnvRow { name: "_JAVA_OPTIONS", why: "the JVM takes options (agents) from it" },
    EnvRow { name: "JDK_JAVA_OPTIONS", why: "the JVM takes options (agents) from it" },
    EnvRow { name: "npm_config_*", why: "npm takes configuration (scripts, shells) from it" },
    EnvRow { name: "NPM_CONFIG_*", why: "npm takes configuration (scripts, shells) from it" },
    EnvRow { name: "RUSTC_WRAPPER", why: "cargo runs the compiler through it" },
    EnvRow { name: "RUSTC", why: "cargo runs it as the compiler" },
    EnvRow { name: "RUSTDOC", why: "cargo runs it as rustdoc" },
    EnvRow { name: "CARGO_BUILD_*", why: "cargo takes wrappers and runners from it" },
    EnvRow { name: "CARGO_TARGET_*", why: "cargo takes runners and linkers from it" },
    EnvRow { name: "MAKEFLAGS", why: "make takes options (--eval) from it" },
    EnvRow { name: "CC", why: "builds run it as the C compiler" },
    EnvRow { name: "CXX", why: "builds run it as the C++ compiler" },
];

/// Hazards from assigning `name` (standalone, before a command, via `env` or `export`).
pub fn env(name: &str, command: Option<usize>) -> Vec<Hazard> {
    ENVIRONMENT
        .iter()
        .filter(|row| match row.name.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == row.name,
        })
        .take(1)
        .map(|row| Hazard {
            id: "environment",
            command,
            detail: format!("setting {name}: {}", row.why),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::Analysis;

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
            ] {
                assert!(ids(&script).contains(&"environment"), "{script}");
            }
        }
        assert!(ids("FOO=1 ls").is_empty());
        assert!(ids("LANG=C sort x").is_empty());
    }
}
