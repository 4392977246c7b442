//! Git's options and subcommands, as git itself parses them ([`SPEC`]): its own options before
//! the subcommand (exact names, no clusters, `-c`/`-C` with their value in the next word), then
//! the subcommand's. Subcommands built on parse-options accept any unambiguous prefix of a long
//! option and `--no-` negations (`git status --porc`, `git grep --open-files-in-p=…`, `git
//! fetch --upload-p=…`, `git rebase --exe=…`, all run on this machine); those built on the
//! revision parser (`log`, `show`, `diff`, `format-patch`…) take long names exactly (`git diff
//! --outp=x` is refused).
//!
//! What git runs is decided by the options that raise [`CONFIG`] (configuration, repository and
//! pager from the command line) and [`PROGRAM`] (other programs, output files), by the
//! subcommands that run other programs, and by names that are not git's own: a subcommand the
//! spec does not know may be an alias, which can run anything ([`subcommand_risk`]).

use super::files::UNNAMED_INPUT;
use super::spec::{Opt, Parsed, Risk, Role, Spec, Syntax};
use crate::Command;

/// Options that change the configuration, repository or pager git runs with.
pub const CONFIG: Risk = Risk {
    id: "git_config",
    why: "git -c / --config-env / --exec-path / --git-dir / --work-tree / -p change what git runs (pagers, aliases, hooks)",
};
/// Options and subcommands that run another program or write a file.
pub const PROGRAM: Risk = Risk {
    id: "git_program",
    why: "this git subcommand or option runs another program or writes a file",
};

const EXACT: Syntax = Syntax {
    clusters: false,
    ..Syntax::EXACT_STOP
};
const PO: Syntax = Syntax::PARSE_OPTIONS;
const REV: Syntax = Syntax::EXACT;

/// The revision and diff options shared by `log`, `show`, `diff`, `whatchanged`,
/// `format-patch`, `diff-tree` and their kin (exact names).
#[rustfmt::skip]
const REVISIONS: &[Opt] = &[
    Opt::value(&["--output"]).role(Role::Writes).risk(&PROGRAM), Opt::flag(&["--ext-diff"]).risk(&PROGRAM),
    Opt::flag(&["--no-ext-diff"]), Opt::flag(&["--textconv"]), Opt::flag(&["--no-textconv"]),
    Opt::value(&["-n", "--max-count"]), Opt::value(&["--skip"]), Opt::value(&["--since", "--after", "--since-as-filter"]),
    Opt::value(&["--until", "--before"]), Opt::value(&["--author"]), Opt::value(&["--committer"]),
    Opt::value(&["--grep"]), Opt::value(&["--grep-reflog"]), Opt::value(&["-L"]), Opt::value(&["-S"]), Opt::value(&["-G"]),
    Opt::value(&["-O"]), Opt::value(&["-U", "--unified"]), Opt::value(&["-l"]), Opt::value(&["--find-object"]),
    Opt::optional(&["-M", "--find-renames"]), Opt::optional(&["-C", "--find-copies"]), Opt::optional(&["-B", "--break-rewrites"]),
    Opt::optional(&["--pretty"]), Opt::equals(&["--format"]), Opt::equals(&["--date"]), Opt::optional(&["--abbrev"]),
    Opt::optional(&["--color"]), Opt::optional(&["--stat"]), Opt::optional(&["--dirstat", "-X"]), Opt::optional(&["--relative"]),
    Opt::equals(&["--src-prefix"]), Opt::equals(&["--dst-prefix"]), Opt::equals(&["--line-prefix"]),
    Opt::equals(&["--diff-filter"]), Opt::optional(&["--word-diff"]), Opt::equals(&["--word-diff-regex"]),
    Opt::optional(&["--color-words"]), Opt::optional(&["--submodule"]), Opt::optional(&["--ignore-submodules"]),
    Opt::equals(&["--encoding"]), Opt::optional(&["--decorate"]), Opt::equals(&["--decorate-refs"]),
    Opt::equals(&["--decorate-refs-exclude"]), Opt::optional(&["--notes"]), Opt::equals(&["--exclude"]),
    Opt::optional(&["--branches"]), Opt::optional(&["--tags"]), Opt::optional(&["--remotes"]), Opt::equals(&["--glob"]),
    Opt::equals(&["--anchored"]), Opt::equals(&["--diff-algorithm"]), Opt::equals(&["--inter-hunk-context"]),
    Opt::equals(&["--stat-width"]), Opt::equals(&["--stat-count"]), Opt::equals(&["--stat-name-width"]),
    Opt::equals(&["--stat-graph-width"]), Opt::optional(&["--cumulative"]), Opt::equals(&["-I", "--ignore-matching-lines"]),
    Opt::equals(&["--min-parents"]), Opt::equals(&["--max-parents"]), Opt::optional(&["--show-linear-break"]),
    Opt::equals(&["--rotate-to"]), Opt::equals(&["--skip-to"]), Opt::equals(&["--orderfile"]),
    Opt::flag(&["-p", "-u", "--patch"]), Opt::flag(&["-s", "--no-patch"]), Opt::flag(&["-z"]), Opt::flag(&["-R"]),
    Opt::flag(&["-a", "--text"]), Opt::flag(&["-b", "--ignore-space-change"]), Opt::flag(&["-w", "--ignore-all-space"]),
    Opt::flag(&["-W", "--function-context"]), Opt::flag(&["-D", "--irreversible-delete"]), Opt::flag(&["-g", "--walk-reflogs"]),
    Opt::flag(&["-i", "--regexp-ignore-case"]), Opt::flag(&["-E", "--extended-regexp"]), Opt::flag(&["-F", "--fixed-strings"]),
    Opt::flag(&["-P", "--perl-regexp"]), Opt::flag(&["-m"]), Opt::flag(&["-c"]), Opt::flag(&["-t"]), Opt::flag(&["-r"]),
    Opt::flag(&["--oneline"]), Opt::flag(&["--graph"]), Opt::flag(&["--all"]), Opt::flag(&["--name-only"]),
    Opt::flag(&["--name-status"]), Opt::flag(&["--shortstat"]), Opt::flag(&["--numstat"]), Opt::flag(&["--summary"]),
    Opt::flag(&["--cached", "--staged"]), Opt::flag(&["--no-index"]).risk(&UNNAMED_INPUT), Opt::flag(&["--follow"]), Opt::flag(&["--reverse"]),
    Opt::flag(&["--merges"]), Opt::flag(&["--no-merges"]), Opt::flag(&["--first-parent"]), Opt::flag(&["--quiet"]),
    Opt::flag(&["--exit-code"]), Opt::flag(&["--check"]), Opt::flag(&["--raw"]), Opt::flag(&["--full-index"]),
    Opt::flag(&["--binary"]), Opt::flag(&["--no-color"]), Opt::flag(&["--no-renames"]), Opt::flag(&["--show-signature"]),
];

/// `format-patch` writes patch files; `-o` names where.
#[rustfmt::skip]
const FORMAT_PATCH: &[Opt] = &[
    Opt::value(&["-o", "--output-directory"]), Opt::value(&["--output"]).role(Role::Writes).risk(&PROGRAM),
    Opt::flag(&["--ext-diff"]).risk(&PROGRAM), Opt::value(&["--subject-prefix"]), Opt::value(&["-v", "--reroll-count"]),
    Opt::value(&["--to"]), Opt::value(&["--cc"]), Opt::value(&["--in-reply-to"]), Opt::optional(&["--cover-letter"]),
    Opt::value(&["--signature-file"]), Opt::value(&["--base"]), Opt::value(&["--interdiff"]), Opt::value(&["--range-diff"]),
    Opt::optional(&["--thread"]), Opt::optional(&["--attach"]), Opt::optional(&["--inline"]), Opt::value(&["-n", "--max-count"]),
    Opt::flag(&["--stdout"]), Opt::flag(&["-s", "--signoff"]), Opt::flag(&["-k", "--keep-subject"]),
];

#[rustfmt::skip]
const GREP: &[Opt] = &[
    Opt::optional(&["-O", "--open-files-in-pager"]).risk(&PROGRAM), Opt::value(&["-e"]), Opt::value(&["-f"]),
    Opt::value(&["-A", "--after-context"]), Opt::value(&["-B", "--before-context"]), Opt::value(&["-C", "--context"]),
    Opt::value(&["-m", "--max-count"]), Opt::value(&["--threads"]), Opt::value(&["--max-depth"]), Opt::optional(&["--color"]),
    Opt::flag(&["--cached"]), Opt::flag(&["--untracked"]), Opt::flag(&["--no-index"]).risk(&UNNAMED_INPUT), Opt::flag(&["--no-exclude-standard"]),
    Opt::flag(&["--exclude-standard"]), Opt::flag(&["--recurse-submodules"]), Opt::flag(&["-a", "--text"]),
    Opt::flag(&["--textconv"]), Opt::flag(&["-i", "--ignore-case"]), Opt::flag(&["-I"]), Opt::flag(&["-w", "--word-regexp"]),
    Opt::flag(&["-v", "--invert-match"]), Opt::flag(&["-h"]), Opt::flag(&["-H"]), Opt::flag(&["--full-name"]),
    Opt::flag(&["-E", "--extended-regexp"]), Opt::flag(&["-G", "--basic-regexp"]), Opt::flag(&["-F", "--fixed-strings"]),
    Opt::flag(&["-P", "--perl-regexp"]), Opt::flag(&["-n", "--line-number"]), Opt::flag(&["--column"]),
    Opt::flag(&["-l", "--files-with-matches", "--name-only"]), Opt::flag(&["-L", "--files-without-match"]),
    Opt::flag(&["-z", "--null"]), Opt::flag(&["-o", "--only-matching"]), Opt::flag(&["-c", "--count"]),
    Opt::flag(&["-p", "--show-function"]), Opt::flag(&["-W", "--function-context"]), Opt::flag(&["--and"]),
    Opt::flag(&["--or"]), Opt::flag(&["--not"]), Opt::flag(&["-q", "--quiet"]), Opt::flag(&["--all-match"]),
    Opt::flag(&["--break"]), Opt::flag(&["--heading"]),
];

/// `fetch`, `pull` and `ls-remote`: the program run on the other side.
#[rustfmt::skip]
const FETCH: &[Opt] = &[
    Opt::value(&["--upload-pack"]).risk(&PROGRAM), Opt::value(&["--exec"]).risk(&PROGRAM),
    Opt::value(&["--depth"]), Opt::value(&["--shallow-since"]), Opt::value(&["--shallow-exclude"]),
    Opt::value(&["--deepen"]), Opt::value(&["--refmap"]), Opt::value(&["-o", "--server-option"]),
    Opt::value(&["-j", "--jobs"]), Opt::value(&["--negotiation-tip"]), Opt::value(&["--filter"]),
    Opt::optional(&["--recurse-submodules"]), Opt::value(&["-s", "--strategy"]), Opt::value(&["-X", "--strategy-option"]),
    Opt::optional(&["-r", "--rebase"]), Opt::optional(&["--sort"]), Opt::flag(&["-u", "--update-head-ok"]),
    Opt::flag(&["-f", "--force"]), Opt::flag(&["--all"]), Opt::flag(&["-t", "--tags"]), Opt::flag(&["-n", "--dry-run"]),
    Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-v", "--verbose"]), Opt::flag(&["-p", "--prune"]),
    Opt::flag(&["--heads", "-b", "--branches"]), Opt::flag(&["--refs"]), Opt::flag(&["--get-url"]), Opt::flag(&["--symref"]),
];

/// `clone`: the program run on the other side, and the configuration and hooks it starts with.
#[rustfmt::skip]
const CLONE: &[Opt] = &[
    Opt::value(&["-u", "--upload-pack"]).risk(&PROGRAM), Opt::value(&["--template"]).risk(&PROGRAM),
    Opt::value(&["-c", "--config"]).risk(&CONFIG), Opt::value(&["--separate-git-dir"]), Opt::value(&["-b", "--branch"]),
    Opt::value(&["-o", "--origin"]), Opt::value(&["--depth"]), Opt::value(&["--shallow-since"]),
    Opt::value(&["--shallow-exclude"]), Opt::value(&["--reference", "--reference-if-able"]), Opt::value(&["-j", "--jobs"]),
    Opt::value(&["--filter"]), Opt::optional(&["--recurse-submodules"]), Opt::value(&["--server-option"]),
    Opt::value(&["--bundle-uri"]), Opt::flag(&["--bare"]), Opt::flag(&["--mirror"]), Opt::flag(&["-n", "--no-checkout"]),
    Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-v", "--verbose"]), Opt::flag(&["-l", "--local"]),
    Opt::flag(&["-s", "--shared"]), Opt::flag(&["--single-branch"]),
];

/// `push`: the program run on the other side.
#[rustfmt::skip]
const PUSH: &[Opt] = &[
    Opt::value(&["--receive-pack", "--exec"]).risk(&PROGRAM), Opt::value(&["-o", "--push-option"]),
    Opt::value(&["--repo"]), Opt::optional(&["--force-with-lease"]), Opt::optional(&["--signed"]),
    Opt::equals(&["--recurse-submodules"]), Opt::flag(&["-f", "--force"]), Opt::flag(&["-d", "--delete"]),
    Opt::flag(&["-u", "--set-upstream"]), Opt::flag(&["--all", "--branches"]), Opt::flag(&["--tags"]),
    Opt::flag(&["--mirror"]), Opt::flag(&["-n", "--dry-run"]), Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-v", "--verbose"]),
    Opt::flag(&["--atomic"]), Opt::flag(&["--follow-tags"]), Opt::flag(&["--prune"]), Opt::flag(&["--no-verify"]),
    Opt::flag(&["--porcelain"]), Opt::flag(&["--force-if-includes"]),
];

#[rustfmt::skip]
const ARCHIVE: &[Opt] = &[
    Opt::value(&["--exec"]).risk(&PROGRAM), Opt::value(&["--remote"]), Opt::value(&["-o", "--output"]).role(Role::Writes),
    Opt::value(&["--format"]), Opt::value(&["--prefix"]), Opt::value(&["--add-file"]), Opt::value(&["--add-virtual-file"]),
    Opt::flag(&["-l", "--list"]), Opt::flag(&["-v", "--verbose"]), Opt::flag(&["--worktree-attributes"]),
];

#[rustfmt::skip]
const BRANCH: &[Opt] = &[
    Opt::flag(&["-d", "--delete"]).role(Role::Writes), Opt::flag(&["-D"]).role(Role::Writes),
    Opt::flag(&["-m", "--move"]).role(Role::Writes), Opt::flag(&["-M"]).role(Role::Writes),
    Opt::flag(&["-c", "--copy"]).role(Role::Writes), Opt::flag(&["-C"]).role(Role::Writes),
    Opt::flag(&["-f", "--force"]).role(Role::Writes), Opt::value(&["-u", "--set-upstream-to"]).role(Role::Writes),
    Opt::flag(&["--unset-upstream"]).role(Role::Writes), Opt::flag(&["--edit-description"]).role(Role::Writes).risk(&PROGRAM),
    Opt::optional(&["-t", "--track"]).role(Role::Writes), Opt::flag(&["--create-reflog"]).role(Role::Writes),
    Opt::flag(&["-l", "--list"]), Opt::flag(&["-a", "--all"]), Opt::flag(&["-r", "--remotes"]),
    Opt::flag(&["-v", "-vv", "--verbose"]), Opt::flag(&["--show-current"]), Opt::value(&["--contains"]),
    Opt::value(&["--no-contains"]), Opt::value(&["--merged"]), Opt::value(&["--no-merged"]), Opt::value(&["--points-at"]),
    Opt::value(&["--format"]), Opt::value(&["--sort"]), Opt::optional(&["--column"]), Opt::optional(&["--abbrev"]),
    Opt::optional(&["--color"]), Opt::flag(&["-i", "--ignore-case"]), Opt::flag(&["-q", "--quiet"]),
];

#[rustfmt::skip]
const TAG: &[Opt] = &[
    Opt::flag(&["-a", "--annotate"]).role(Role::Writes), Opt::flag(&["-s", "--sign"]).role(Role::Writes),
    Opt::value(&["-u", "--local-user"]).role(Role::Writes), Opt::flag(&["-f", "--force"]).role(Role::Writes),
    Opt::flag(&["-d", "--delete"]).role(Role::Writes), Opt::value(&["-m", "--message"]).role(Role::Writes),
    Opt::value(&["-F", "--file"]).role(Role::Writes), Opt::flag(&["-e", "--edit"]).role(Role::Writes).risk(&PROGRAM),
    Opt::flag(&["-l", "--list"]), Opt::takes_digits(&["-n"]), Opt::value(&["--contains"]), Opt::value(&["--no-contains"]),
    Opt::value(&["--merged"]), Opt::value(&["--no-merged"]), Opt::value(&["--points-at"]), Opt::value(&["--sort"]),
    Opt::value(&["--format"]), Opt::optional(&["--column"]), Opt::optional(&["--color"]), Opt::flag(&["-i", "--ignore-case"]),
    Opt::flag(&["-v", "--verify"]),
];

#[rustfmt::skip]
const CONFIG_OPTS: &[Opt] = &[
    Opt::value(&["-f", "--file"]).role(Role::Config), Opt::value(&["--blob"]), Opt::flag(&["--global"]),
    Opt::flag(&["--system"]), Opt::flag(&["--local"]), Opt::flag(&["--worktree"]), Opt::flag(&["-l", "--list"]),
    Opt::flag(&["--get"]), Opt::flag(&["--get-all"]), Opt::flag(&["--get-regexp"]), Opt::flag(&["--get-urlmatch"]),
    Opt::flag(&["--get-color"]), Opt::flag(&["--get-colorbool"]), Opt::flag(&["--add"]).role(Role::Writes),
    Opt::flag(&["--unset"]).role(Role::Writes), Opt::flag(&["--unset-all"]).role(Role::Writes),
    Opt::flag(&["--replace-all"]).role(Role::Writes), Opt::flag(&["--rename-section"]).role(Role::Writes),
    Opt::flag(&["--remove-section"]).role(Role::Writes), Opt::flag(&["-e", "--edit"]).role(Role::Writes).risk(&PROGRAM),
    Opt::value(&["-t", "--type"]), Opt::value(&["--default"]), Opt::value(&["--comment"]), Opt::flag(&["-z", "--null"]),
    Opt::flag(&["--name-only"]), Opt::flag(&["--show-origin"]), Opt::flag(&["--show-scope"]), Opt::flag(&["--includes"]),
    Opt::flag(&["--all"]), Opt::flag(&["--fixed-value"]), Opt::value(&["--value"]), Opt::value(&["--url"]),
];

const NONE: &[Opt] = &[];

/// A subcommand with no option the analysis needs.
const fn plain(names: &'static [&'static str]) -> Spec {
    Spec::new(names, PO, NONE)
}

/// A subcommand that runs other programs.
const fn runs(names: &'static [&'static str]) -> Spec {
    Spec::new(names, PO, NONE).risky(&PROGRAM)
}

/// Git's subcommands (porcelain and plumbing). Anything else may be an alias.
#[rustfmt::skip]
const SUBCOMMANDS: &[Spec] = &[
    Spec::new(&["status"], PO, &[
        Opt::optional(&["--porcelain"]), Opt::optional(&["-u", "--untracked-files"]), Opt::optional(&["--ignored"]),
        Opt::optional(&["--ignore-submodules"]), Opt::optional(&["--column"]), Opt::optional(&["-M", "--find-renames"]),
        Opt::flag(&["-s", "--short"]), Opt::flag(&["-b", "--branch"]), Opt::flag(&["--show-stash"]), Opt::flag(&["-z"]),
        Opt::flag(&["-v", "--verbose"]), Opt::flag(&["--long"]), Opt::flag(&["--ahead-behind"]), Opt::flag(&["--renames"]),
    ]),
    Spec::new(&["log"], REV, REVISIONS), Spec::new(&["show"], REV, REVISIONS), Spec::new(&["diff"], REV, REVISIONS),
    Spec::new(&["whatchanged"], REV, REVISIONS), Spec::new(&["diff-tree"], REV, REVISIONS),
    Spec::new(&["diff-files"], REV, REVISIONS), Spec::new(&["diff-index"], REV, REVISIONS),
    Spec::new(&["rev-list"], REV, REVISIONS), Spec::new(&["shortlog"], REV, REVISIONS),
    Spec::new(&["range-diff"], REV, REVISIONS), Spec::new(&["cherry"], REV, REVISIONS),
    Spec::new(&["format-patch"], REV, FORMAT_PATCH),
    Spec::new(&["grep"], PO, GREP),
    Spec::new(&["rebase"], PO, &[
        Opt::value(&["-x", "--exec"]).risk(&PROGRAM), Opt::value(&["--onto"]), Opt::value(&["-s", "--strategy"]),
        Opt::value(&["-X", "--strategy-option"]), Opt::equals(&["--empty"]), Opt::optional(&["-r", "--rebase-merges"]),
        Opt::optional(&["-S", "--gpg-sign"]), Opt::value(&["-C"]), Opt::value(&["--whitespace"]),
        Opt::flag(&["-i", "--interactive"]).risk(&PROGRAM), Opt::flag(&["--root"]), Opt::flag(&["--continue"]),
        Opt::flag(&["--abort"]), Opt::flag(&["--skip"]), Opt::flag(&["--autosquash"]), Opt::flag(&["--autostash"]),
    ]),
    Spec::new(&["fetch", "pull", "ls-remote"], PO, FETCH), Spec::new(&["clone"], PO, CLONE),
    Spec::new(&["push"], PO, PUSH),
    Spec::new(&["archive"], PO, ARCHIVE),
    Spec::new(&["submodule"], PO, &[Opt::flag(&["--quiet"]), Opt::flag(&["--cached"])]).subcommands(&[
        runs(&["foreach"]), plain(&["status"]), plain(&["summary"]), plain(&["update"]), plain(&["init"]),
        plain(&["add"]), plain(&["deinit"]), plain(&["sync"]), plain(&["absorbgitdirs"]), plain(&["set-branch"]),
        plain(&["set-url"]),
    ]),
    Spec::new(&["bisect"], PO, NONE).subcommands(&[
        runs(&["run"]), runs(&["visualize", "view"]), plain(&["start"]), plain(&["bad", "new"]), plain(&["good", "old"]),
        plain(&["skip"]), plain(&["reset"]), plain(&["log"]), plain(&["replay"]), plain(&["terms"]),
    ]),
    Spec::new(&["config"], PO, CONFIG_OPTS).subcommands(&[
        Spec::new(&["get"], PO, CONFIG_OPTS), Spec::new(&["list"], PO, CONFIG_OPTS),
        Spec::new(&["set"], PO, CONFIG_OPTS), Spec::new(&["unset"], PO, CONFIG_OPTS),
        Spec::new(&["rename-section"], PO, CONFIG_OPTS), Spec::new(&["remove-section"], PO, CONFIG_OPTS),
        Spec::new(&["edit"], PO, CONFIG_OPTS).risky(&PROGRAM),
    ]),
    Spec::new(&["branch"], PO, BRANCH),
    Spec::new(&["tag"], PO, TAG),
    Spec::new(&["help"], PO, &[
        Opt::flag(&["-w", "--web"]).risk(&PROGRAM), Opt::flag(&["-i", "--info"]).risk(&PROGRAM),
        Opt::flag(&["-m", "--man"]), Opt::flag(&["-a", "--all"]), Opt::flag(&["-g", "--guides"]),
        Opt::flag(&["-c", "--config"]), Opt::flag(&["--user-interfaces"]), Opt::flag(&["--developer-interfaces"]),
        Opt::flag(&["--verbose"]), Opt::flag(&["--external-commands"]), Opt::flag(&["--aliases"]),
    ]),
    Spec::new(&["hash-object"], PO, &[
        Opt::flag(&["-w"]).role(Role::Writes), Opt::value(&["-t"]), Opt::flag(&["--stdin"]), Opt::flag(&["--stdin-paths"]),
        Opt::value(&["--path"]), Opt::flag(&["--no-filters"]), Opt::flag(&["--literally"]),
    ]),
    Spec::new(&["remote"], PO, &[Opt::flag(&["-v", "--verbose"])]).subcommands(&[
        Spec::new(&["show"], PO, &[Opt::flag(&["-n"])]), plain(&["get-url"]), plain(&["add"]), plain(&["rename"]),
        plain(&["remove", "rm"]), plain(&["set-head"]), plain(&["set-branches"]), plain(&["set-url"]), plain(&["prune"]),
        plain(&["update"]),
    ]),
    Spec::new(&["stash"], PO, NONE).subcommands(&[
        plain(&["list"]), plain(&["show"]), plain(&["push"]), plain(&["save"]), plain(&["pop"]), plain(&["apply"]),
        plain(&["drop"]), plain(&["clear"]), plain(&["branch"]), plain(&["create"]), plain(&["store"]),
    ]),
    Spec::new(&["reflog"], PO, NONE).subcommands(&[
        plain(&["show"]), plain(&["list"]), plain(&["exists"]), plain(&["expire"]), plain(&["delete"]),
    ]),
    Spec::new(&["worktree"], PO, NONE).subcommands(&[
        plain(&["list"]), plain(&["add"]), plain(&["lock"]), plain(&["move"]), plain(&["prune"]), plain(&["remove"]),
        plain(&["repair"]), plain(&["unlock"]),
    ]),
    Spec::new(&["notes"], PO, &[Opt::value(&["--ref"])]).subcommands(&[
        plain(&["list"]), plain(&["show"]), plain(&["add"]), plain(&["copy"]), plain(&["append"]), runs(&["edit"]),
        plain(&["merge"]), plain(&["remove"]), plain(&["prune"]), plain(&["get-ref"]),
    ]),
    Spec::new(&["blame", "annotate"], PO, &[
        Opt::value(&["-L"]), Opt::value(&["-S"]), Opt::value(&["--contents"]), Opt::value(&["--date"]),
        Opt::optional(&["-C"]), Opt::optional(&["-M"]), Opt::value(&["--ignore-rev"]), Opt::value(&["--ignore-revs-file"]),
        Opt::optional(&["--abbrev"]), Opt::flag(&["-p", "--porcelain"]), Opt::flag(&["-e", "--show-email"]),
    ]),
    Spec::new(&["cat-file"], PO, &[
        // Requests (`REV:PATH`) read from stdin, or every object in the repository.
        Opt::optional(&["--batch"]).risk(&UNNAMED_INPUT), Opt::optional(&["--batch-check"]).risk(&UNNAMED_INPUT),
        Opt::optional(&["--batch-command"]).risk(&UNNAMED_INPUT), Opt::flag(&["--batch-all-objects"]).risk(&UNNAMED_INPUT),
        Opt::value(&["--path"]), Opt::flag(&["-p"]), Opt::flag(&["-t"]), Opt::flag(&["-s"]), Opt::flag(&["-e"]),
        Opt::flag(&["--textconv"]), Opt::flag(&["--filters"]),
    ]),
    Spec::new(&["commit"], PO, &[
        Opt::value(&["-m", "--message"]), Opt::value(&["-F", "--file"]), Opt::value(&["-C", "--reuse-message"]),
        Opt::value(&["-c", "--reedit-message"]), Opt::value(&["--fixup"]), Opt::value(&["--squash"]),
        Opt::value(&["--author"]), Opt::value(&["--date"]), Opt::value(&["-t", "--template"]), Opt::value(&["--cleanup"]),
        Opt::value(&["--trailer"]), Opt::optional(&["-S", "--gpg-sign"]), Opt::optional(&["-u", "--untracked-files"]),
        Opt::value(&["--pathspec-from-file"]), Opt::flag(&["-a", "--all"]), Opt::flag(&["--amend"]),
        Opt::flag(&["-n", "--no-verify"]), Opt::flag(&["-s", "--signoff"]), Opt::flag(&["-v", "--verbose"]),
        Opt::flag(&["-q", "--quiet"]), Opt::flag(&["--dry-run"]), Opt::flag(&["--allow-empty"]),
        Opt::flag(&["--allow-empty-message"]), Opt::flag(&["-e", "--edit"]), Opt::flag(&["--no-edit"]),
    ]),
    Spec::new(&["checkout", "switch", "restore", "reset", "merge", "cherry-pick", "revert", "add", "rm", "mv",
                "clean", "init", "am", "apply"], PO, &[
        Opt::flag(&["-f", "--force"]), Opt::flag(&["-d"]), Opt::value(&["-b"]), Opt::value(&["-B"]), Opt::value(&["-c", "--create"]),
        Opt::value(&["-C", "--force-create"]), Opt::value(&["-m", "--message"]), Opt::value(&["-s", "--strategy"]),
        Opt::value(&["-X", "--strategy-option"]), Opt::value(&["--source", "-S"]), Opt::value(&["--template"]).risk(&PROGRAM),
        Opt::value(&["--separate-git-dir"]), Opt::value(&["--pathspec-from-file"]), Opt::flag(&["--hard"]),
        Opt::flag(&["-a", "--all"]), Opt::flag(&["-n", "--dry-run"]), Opt::flag(&["-x"]), Opt::flag(&["-p", "--patch"]),
    ]),
    Spec::new(&["ls-files"], PO, &[
        Opt::value(&["-x", "--exclude"]), Opt::value(&["-X", "--exclude-from"]), Opt::value(&["--exclude-per-directory"]),
        Opt::value(&["--with-tree"]), Opt::optional(&["--abbrev"]), Opt::value(&["--format"]),
    ]),
    Spec::new(&["for-each-ref"], PO, &[
        Opt::value(&["--format"]), Opt::value(&["--sort"]), Opt::value(&["--count"]), Opt::value(&["--points-at"]),
        Opt::value(&["--merged"]), Opt::value(&["--no-merged"]), Opt::value(&["--contains"]), Opt::value(&["--no-contains"]),
        Opt::value(&["--exclude"]),
    ]),
    Spec::new(&["ls-tree"], PO, &[Opt::value(&["--format"]), Opt::optional(&["--abbrev"])]),
    Spec::new(&["rev-parse"], REV, &[Opt::value(&["--git-path"]), Opt::value(&["--default"]), Opt::value(&["--prefix"])]),
    Spec::new(&["describe"], PO, &[
        Opt::value(&["--match"]), Opt::value(&["--exclude"]), Opt::value(&["--candidates"]), Opt::optional(&["--dirty"]),
        Opt::optional(&["--broken"]), Opt::optional(&["--abbrev"]),
    ]),
    runs(&["difftool"]), runs(&["mergetool"]), runs(&["filter-branch"]), runs(&["instaweb"]), runs(&["send-email"]),
    runs(&["web--browse"]), runs(&["citool"]), runs(&["gui"]),
    plain(&["bundle"]), plain(&["check-attr"]), plain(&["check-ignore"]), plain(&["check-mailmap"]),
    plain(&["check-ref-format"]), plain(&["commit-graph"]), plain(&["commit-tree"]), plain(&["count-objects"]),
    plain(&["credential"]), plain(&["fsck"]), plain(&["gc"]), plain(&["maintenance"]), plain(&["merge-base"]),
    plain(&["merge-file"]), plain(&["mktree"]), plain(&["mktag"]), plain(&["name-rev"]), plain(&["prune"]),
    plain(&["read-tree"]), plain(&["repack"]), plain(&["replace"]), plain(&["request-pull"]), plain(&["show-branch"]),
    plain(&["show-ref"]), plain(&["sparse-checkout"]), plain(&["symbolic-ref"]), plain(&["update-index"]),
    plain(&["update-ref"]), plain(&["var"]), plain(&["verify-commit"]), plain(&["verify-pack"]), plain(&["verify-tag"]),
    plain(&["version"]), plain(&["write-tree"]), plain(&["unpack-objects"]), plain(&["pack-objects"]),
    plain(&["index-pack"]), plain(&["unpack-file"]), plain(&["checkout-index"]), plain(&["update-server-info"]),
    plain(&["pack-refs"]), plain(&["prune-packed"]), plain(&["rerere"]), plain(&["fast-import"]), plain(&["fast-export"]),
    plain(&["interpret-trailers"]), plain(&["mailinfo"]), plain(&["mailsplit"]), plain(&["stripspace"]),
    plain(&["patch-id"]), plain(&["get-tar-commit-id"]), plain(&["column"]), plain(&["hook"]).risky(&PROGRAM),
];

/// Git, from its own options to its subcommands'.
#[rustfmt::skip]
pub const SPEC: Spec = Spec::new(&["git"], EXACT, &[
    Opt::value(&["-C"]).role(Role::Folder), Opt::value(&["-c"]).risk(&CONFIG), Opt::value(&["--config-env"]).risk(&CONFIG),
    Opt::optional(&["--exec-path"]).risk_with_value(&CONFIG), Opt::value(&["--git-dir"]).role(Role::Config).risk(&CONFIG),
    Opt::value(&["--work-tree"]).role(Role::Folder).risk(&CONFIG), Opt::flag(&["-p", "--paginate"]).risk(&CONFIG),
    Opt::flag(&["-P", "--no-pager"]), Opt::value(&["--namespace"]), Opt::value(&["--super-prefix"]),
    Opt::value(&["--attr-source"]), Opt::equals(&["--list-cmds"]), Opt::flag(&["--bare"]),
    Opt::flag(&["--no-replace-objects"]), Opt::flag(&["--no-lazy-fetch"]), Opt::flag(&["--literal-pathspecs"]),
    Opt::flag(&["--glob-pathspecs"]), Opt::flag(&["--noglob-pathspecs"]), Opt::flag(&["--icase-pathspecs"]),
    Opt::flag(&["--no-optional-locks"]), Opt::flag(&["--no-advice"]), Opt::flag(&["--html-path"]),
    Opt::flag(&["--man-path"]), Opt::flag(&["--info-path"]), Opt::flag(&["-v", "--version"]), Opt::flag(&["-h", "--help"]),
]).subcommands(SUBCOMMANDS);

/// The subcommand word is not one of git's own: it may be an alias from a configuration the
/// repository controls, and an alias can run anything.
pub fn subcommand_risk(command: &Command, parsed: &Parsed) -> Option<String> {
    if parsed.specs.len() > 1 {
        return None;
    }
    let &at = parsed.operands.first()?;
    let sub = &command.argv[at + 1];
    Some(format!(
        "`{sub}` is not a git command: it may be an alias, which can run anything"
    ))
}
