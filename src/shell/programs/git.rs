//! Git's own options and subcommands, read for what they make git run: global options that
//! change which programs, config or repository git uses (`-c`, `--exec-path`, `--git-dir`…),
//! subcommands that run other programs or write files, and names that are not git's own (an
//! alias can run anything). The hazard table's `git_config` and `git_program` rows call these.

use crate::shell::Command;
use crate::shell::options::find_option;

/// Git's options before the subcommand.
pub fn global_risk(command: &Command) -> Option<String> {
    let args = &command.argv[1..];
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if !a.starts_with('-') {
            return None;
        }
        let risky = [
            "-c",
            "--config-env",
            "--exec-path",
            "--git-dir",
            "--work-tree",
            "-p",
            "--paginate",
        ];
        if let Some(r) = risky
            .iter()
            .find(|r| a == **r || a.starts_with(&format!("{r}=")))
        {
            return Some(format!("git {r} changes what git runs"));
        }
        i += if matches!(a, "-C" | "--namespace" | "--super-prefix") {
            2
        } else {
            1
        };
    }
    None
}

/// Git subcommands and options that run programs, write output files, or are not git's own
/// (and so may be aliases from a config the repository controls).
pub fn subcommand_risk(command: &Command) -> Option<String> {
    let args = &command.argv[1..];
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        i += if matches!(
            args[i].as_str(),
            "-C" | "-c" | "--namespace" | "--config-env" | "--super-prefix"
        ) {
            2
        } else {
            1
        };
    }
    let sub = args.get(i)?.as_str();
    let rest = &args[i + 1..];
    if !COMMANDS.contains(&sub) {
        return Some(format!(
            "`{sub}` is not a git command: it may be an alias, which can run anything"
        ));
    }
    if matches!(
        sub,
        "difftool" | "mergetool" | "filter-branch" | "instaweb" | "send-email"
    ) {
        return Some(format!("git {sub} runs other programs"));
    }
    if sub == "submodule" && rest.iter().any(|a| a == "foreach") {
        return Some("git submodule foreach runs a command in every submodule".into());
    }
    if sub == "bisect" && rest.first().is_some_and(|a| a == "run") {
        return Some("git bisect run runs a command".into());
    }
    let mut options: Vec<&str> = vec!["--output", "--ext-diff", "--open-files-in-pager"];
    match sub {
        "rebase" => options.extend(["-x", "--exec"]),
        "grep" => options.push("-O"),
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" => {
            options.extend(["-u", "--upload-pack", "--exec"])
        }
        "push" => options.extend(["--receive-pack", "--exec"]),
        _ => {}
    }
    find_option(rest, &options, false)
        .map(|o| format!("git {sub} {o} runs a program or writes a file"))
}

/// Git's own commands (porcelain and plumbing). Anything else may be an alias.
pub const COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "cherry",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "filter-branch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "init",
    "instaweb",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "mergetool",
    "mktree",
    "mv",
    "name-rev",
    "notes",
    "prune",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "request-pull",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-email",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];
