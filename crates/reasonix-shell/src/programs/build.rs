//! Option specs of the build tools and package managers: `make`, `cargo`, `npm`, `pnpm`,
//! `yarn`. Each obeys the folder it runs in — a makefile, a manifest and its build scripts, a
//! package's lifecycle scripts, configuration files — and the options that name another folder
//! or file carry [`Role::Folder`] or [`Role::Config`]; the options that choose what runs are
//! hazards ([`TOOL_CONFIG`]).
//!
//! GNU make abbreviates its long options (`make --ev=…` is `--eval`, `--dir=` is
//! `--directory`, `--makef=` is `--makefile`, run on this machine; `--e=` is ambiguous); npm's
//! option parser expands prefixes too (`--script-sh=` is `--script-shell`, with a warning);
//! cargo's clap parser does not (`--manifest-pa` is refused).

use super::interpreters::{INLINE, LOADS};
use super::spec::{Opt, Risk, Role, Spec, Syntax};

/// Options that choose the configuration a tool runs programs with.
pub const TOOL_CONFIG: Risk = Risk {
    id: "tool_config",
    why: "this option sets the configuration, shell or runner the tool runs programs with",
};

/// npm's options, accepted before and after its subcommand.
#[rustfmt::skip]
const NPM_OPTIONS: &[Opt] = &[
    Opt::value(&["--prefix", "-C"]).role(Role::Folder), Opt::value(&["--userconfig"]).risk(&TOOL_CONFIG),
    Opt::value(&["--globalconfig"]).risk(&TOOL_CONFIG), Opt::value(&["--script-shell"]).risk(&TOOL_CONFIG),
    Opt::value(&["--node-options"]).risk(&TOOL_CONFIG), Opt::value(&["--shell"]).risk(&TOOL_CONFIG),
    Opt::value(&["--editor"]).risk(&TOOL_CONFIG), Opt::value(&["--browser"]).risk(&TOOL_CONFIG),
    Opt::value(&["-c", "--call"]).role(Role::Script).risk(&INLINE), Opt::value(&["-p", "--package"]),
    Opt::value(&["-w", "--workspace"]), Opt::value(&["--registry"]), Opt::value(&["--cache"]), Opt::value(&["--tag"]),
    Opt::value(&["--otp"]), Opt::value(&["--loglevel"]), Opt::value(&["--include"]), Opt::value(&["--omit"]),
    Opt::value(&["--before"]), Opt::value(&["--scope"]), Opt::value(&["--access"]), Opt::value(&["--install-strategy"]),
    Opt::flag(&["-g", "--global"]), Opt::flag(&["-D", "--save-dev"]), Opt::flag(&["-E", "--save-exact"]),
    Opt::flag(&["-y", "--yes"]), Opt::flag(&["--ignore-scripts"]), Opt::flag(&["-ws", "--workspaces"]),
    Opt::flag(&["-s", "--silent"]), Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-d", "--loglevel-info"]),
    Opt::flag(&["-f", "--force"]), Opt::flag(&["--if-present"]), Opt::flag(&["--dry-run"]), Opt::flag(&["--json"]),
];

/// A package manager's subcommand that runs what its operands name.
const fn npm_sub(names: &'static [&'static str]) -> Spec {
    Spec::new(names, NPM, &[]).inheriting()
}

/// npm's syntax: its options anywhere, abbreviated, `--no-` negated.
const NPM: Syntax = Syntax::PARSE_OPTIONS;

/// A runner subcommand: options end at the first operand, the command it runs.
const fn npm_runner(names: &'static [&'static str]) -> Spec {
    Spec::new(
        names,
        Syntax {
            permute: false,
            ..NPM
        },
        &[],
    )
    .inheriting()
}

/// cargo's options, accepted before and after its subcommand.
#[rustfmt::skip]
const CARGO_OPTIONS: &[Opt] = &[
    Opt::value(&["--config"]).risk(&TOOL_CONFIG), Opt::value(&["-Z"]).risk(&TOOL_CONFIG),
    Opt::value(&["-C"]).role(Role::Folder), Opt::value(&["--manifest-path"]).role(Role::Config),
    Opt::value(&["--lockfile-path"]), Opt::value(&["--color"]), Opt::value(&["--explain"]),
    Opt::value(&["-p", "--package"]), Opt::value(&["-j", "--jobs"]), Opt::value(&["-F", "--features"]),
    Opt::value(&["--target"]), Opt::value(&["--target-dir"]).role(Role::Writes), Opt::value(&["--bin"]),
    Opt::value(&["--example"]), Opt::value(&["--test"]), Opt::value(&["--bench"]), Opt::value(&["--profile"]),
    Opt::value(&["--message-format"]), Opt::value(&["--exclude"]), Opt::optional(&["--timings"]),
    Opt::value(&["--root"]), Opt::value(&["--git"]), Opt::value(&["--path"]), Opt::value(&["--registry"]),
    Opt::value(&["--index"]), Opt::value(&["--branch"]), Opt::value(&["--rev"]), Opt::value(&["--vers", "--version"]),
    Opt::flag(&["--locked"]), Opt::flag(&["--offline"]), Opt::flag(&["--frozen"]), Opt::flag(&["-v", "--verbose"]),
    Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-r", "--release"]), Opt::flag(&["--workspace", "--all"]),
    Opt::flag(&["--all-targets"]), Opt::flag(&["--all-features"]), Opt::flag(&["--no-default-features"]),
    Opt::flag(&["--lib"]), Opt::flag(&["--bins"]), Opt::flag(&["--examples"]), Opt::flag(&["--tests"]),
    Opt::flag(&["--benches"]), Opt::flag(&["--doc"]), Opt::flag(&["--no-run"]), Opt::flag(&["--no-fail-fast"]),
    Opt::flag(&["--list"]), Opt::flag(&["-h", "--help"]), Opt::flag(&["-V"]),
];

const fn cargo_sub(names: &'static [&'static str]) -> Spec {
    Spec::new(names, CARGO, &[]).inheriting()
}

/// clap: exact names, options anywhere; `+toolchain` first.
const CARGO: Syntax = Syntax {
    plus: true,
    ..Syntax::EXACT
};

/// The build tool specs.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["make", "gmake"], Syntax::GNU, &[
        Opt::value(&["-E", "--eval"]).risk(&INLINE), Opt::value(&["-C", "--directory"]).role(Role::Folder),
        Opt::value(&["-f", "--file", "--makefile"]).role(Role::Config), Opt::value(&["-I", "--include-dir"]),
        Opt::value(&["-o", "--old-file", "--assume-old"]), Opt::value(&["-W", "--what-if", "--new-file", "--assume-new"]),
        Opt::optional(&["--debug"]), Opt::optional(&["-j", "--jobs"]), Opt::optional(&["-l", "--load-average", "--max-load"]),
        Opt::optional(&["-O", "--output-sync"]), Opt::optional(&["--shuffle"]), Opt::equals(&["--jobserver-style"]),
        Opt::flag(&["-b", "-m"]), Opt::flag(&["-B", "--always-make"]), Opt::flag(&["-d"]), Opt::flag(&["-e", "--environment-overrides"]),
        Opt::flag(&["-h", "--help"]), Opt::flag(&["-i", "--ignore-errors"]), Opt::flag(&["-k", "--keep-going"]),
        Opt::flag(&["-L", "--check-symlink-times"]), Opt::flag(&["-n", "--just-print", "--dry-run", "--recon"]),
        Opt::flag(&["-p", "--print-data-base"]), Opt::flag(&["-q", "--question"]), Opt::flag(&["-r", "--no-builtin-rules"]),
        Opt::flag(&["-R", "--no-builtin-variables"]), Opt::flag(&["-s", "--silent", "--quiet"]), Opt::flag(&["--no-silent"]),
        Opt::flag(&["-S", "--no-keep-going", "--stop"]), Opt::flag(&["-t", "--touch"]), Opt::flag(&["--trace"]),
        Opt::flag(&["-v", "--version"]), Opt::flag(&["-w", "--print-directory"]), Opt::flag(&["--no-print-directory"]),
        Opt::flag(&["--warn-undefined-variables"]),
    ]),
    Spec::new(&["cargo"], CARGO, CARGO_OPTIONS).subcommands(&[
        cargo_sub(&["build", "b"]), cargo_sub(&["check", "c"]), cargo_sub(&["test", "t"]), cargo_sub(&["run", "r"]),
        cargo_sub(&["bench"]), cargo_sub(&["doc", "d"]), cargo_sub(&["clippy"]), cargo_sub(&["fmt"]), cargo_sub(&["clean"]),
        cargo_sub(&["install"]), cargo_sub(&["publish"]), cargo_sub(&["add"]), cargo_sub(&["remove"]),
        cargo_sub(&["update"]), cargo_sub(&["fetch"]), cargo_sub(&["tree"]), cargo_sub(&["metadata"]),
        cargo_sub(&["package"]), cargo_sub(&["new"]), cargo_sub(&["init"]), cargo_sub(&["search"]), cargo_sub(&["vendor"]),
        cargo_sub(&["fix"]), cargo_sub(&["rustc"]), cargo_sub(&["rustdoc"]), cargo_sub(&["generate-lockfile"]),
        cargo_sub(&["locate-project"]), cargo_sub(&["pkgid"]), cargo_sub(&["version"]),
    ]),
    Spec::new(&["npm"], NPM, NPM_OPTIONS).subcommands(&[
        npm_sub(&["run", "run-script", "rum", "urn"]), npm_sub(&["test", "t", "tst"]), npm_sub(&["start"]),
        npm_sub(&["stop"]), npm_sub(&["restart"]), npm_runner(&["exec", "x"]), npm_runner(&["explore"]),
        npm_sub(&["install", "i", "in", "add", "isntall", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal"]),
        npm_sub(&["ci", "clean-install", "install-clean", "isntall-clean"]), npm_sub(&["uninstall", "un", "remove", "rm", "r"]),
        npm_sub(&["update", "up", "upgrade"]), npm_sub(&["init", "create", "innit"]), npm_sub(&["rebuild", "rb"]),
        npm_sub(&["publish"]), npm_sub(&["pack"]), npm_sub(&["audit"]), npm_sub(&["ls", "list"]),
        npm_sub(&["view", "info", "show", "v"]), npm_sub(&["config", "c"]), npm_sub(&["help"]),
    ]),
    Spec::new(&["pnpm"], NPM, &[
        Opt::value(&["-C", "--dir"]).role(Role::Folder), Opt::value(&["-F", "--filter"]), Opt::value(&["--reporter"]),
        Opt::value(&["--loglevel"]), Opt::value(&["--workspace-concurrency"]), Opt::flag(&["-w", "--workspace-root"]),
        Opt::flag(&["-r", "--recursive"]), Opt::flag(&["-c", "--shell-mode"]).role(Role::Script).risk(&INLINE),
        Opt::value(&["--script-shell"]).risk(&TOOL_CONFIG), Opt::value(&["--node-options"]).risk(&TOOL_CONFIG),
        Opt::flag(&["--if-present"]), Opt::flag(&["--parallel"]), Opt::flag(&["-s", "--silent"]),
    ]).subcommands(&[
        npm_runner(&["exec"]), npm_runner(&["dlx"]), npm_runner(&["create"]), npm_sub(&["run", "run-script"]),
        npm_sub(&["test", "t", "tst"]), npm_sub(&["start"]), npm_sub(&["install", "i", "add"]), npm_sub(&["update", "up"]),
        npm_sub(&["remove", "rm"]), npm_sub(&["list", "ls"]), npm_sub(&["build"]),
    ]),
    Spec::new(&["yarn"], NPM, &[
        Opt::value(&["--cwd"]).role(Role::Folder), Opt::value(&["--modules-folder"]), Opt::value(&["--registry"]),
        Opt::flag(&["-s", "--silent"]), Opt::flag(&["--frozen-lockfile", "--immutable"]),
    ]).subcommands(&[
        npm_runner(&["dlx"]), npm_runner(&["exec"]), npm_sub(&["run"]), npm_runner(&["node"]), npm_runner(&["create"]),
        npm_sub(&["test"]), npm_sub(&["install"]), npm_sub(&["add"]), npm_sub(&["remove"]), npm_sub(&["workspace"]),
    ]),
    // Project tools that read their configuration (and code: conftest.py, eslint.config.js,
    // a Gemfile, a Rakefile…) from the folder or the file an option names.
    Spec::new(&["tox"], Syntax::EXACT, &[
        Opt::value(&["-c", "--conf"]).role(Role::Config), Opt::value(&["-e"]), Opt::value(&["--workdir"]).role(Role::Folder),
        Opt::value(&["--root"]).role(Role::Folder), Opt::value(&["-x", "--override"]).risk(&TOOL_CONFIG),
    ]),
    Spec::new(&["nox"], Syntax::EXACT, &[
        Opt::value(&["-f", "--noxfile"]).role(Role::Config), Opt::value(&["-s", "--session", "--sessions"]),
        Opt::value(&["--envdir"]),
    ]),
    Spec::new(&["pre-commit"], Syntax::EXACT, &[Opt::value(&["-c", "--config"]).role(Role::Config)]),
    Spec::new(&["mvn", "mvnw"], Syntax::EXACT, &[
        Opt::value(&["-f", "--file"]).role(Role::Config), Opt::value(&["-s", "--settings"]).role(Role::Config),
        Opt::value(&["-gs", "--global-settings"]).role(Role::Config), Opt::value(&["-pl", "--projects"]),
        Opt::value(&["-P", "--activate-profiles"]), Opt::value(&["-T", "--threads"]),
    ]),
    Spec::new(&["gradle", "gradlew"], Syntax::EXACT, &[
        Opt::value(&["-p", "--project-dir"]).role(Role::Folder), Opt::value(&["-b", "--build-file"]).role(Role::Config),
        Opt::value(&["-c", "--settings-file"]).role(Role::Config), Opt::value(&["-I", "--init-script"]).risk(&LOADS),
        Opt::value(&["-g", "--gradle-user-home"]).role(Role::Config), Opt::value(&["-x", "--exclude-task"]),
    ]),
    Spec::new(&["rake"], Syntax::GNU, &[
        Opt::value(&["-f", "--rakefile"]).role(Role::Config), Opt::value(&["-C", "--directory"]).role(Role::Folder),
        Opt::value(&["-e", "--execute"]).risk(&INLINE), Opt::value(&["-p", "--execute-print"]).risk(&INLINE),
        Opt::value(&["-E", "--execute-continue"]).risk(&INLINE), Opt::value(&["-r", "--require"]).risk(&LOADS),
        Opt::value(&["-I", "--libdir"]), Opt::value(&["-R", "--rakelibdir"]).risk(&LOADS),
    ]),
    Spec::new(&["bundle"], Syntax::EXACT, &[Opt::value(&["--gemfile"]).role(Role::Config)])
        .subcommands(&[Spec::new(&["exec"], Syntax::EXACT_STOP, &[Opt::value(&["--gemfile"]).role(Role::Config)])]),
    Spec::new(&["composer"], Syntax::EXACT, &[Opt::value(&["-d", "--working-dir"]).role(Role::Folder)]),
    Spec::new(&["cmake"], Syntax::EXACT, &[
        Opt::value(&["-S"]).role(Role::Folder), Opt::value(&["-B"]), Opt::value(&["-C"]).risk(&LOADS),
        Opt::value(&["-P"]).risk(&LOADS), Opt::value(&["-G"]), Opt::value(&["-D"]), Opt::value(&["-U"]),
        Opt::value(&["-T"]), Opt::value(&["-A"]), Opt::value(&["--build"]), Opt::value(&["--install"]),
        Opt::value(&["--preset"]), Opt::value(&["--toolchain"]).risk(&LOADS),
    ]),
    Spec::new(&["terraform", "tofu"], Syntax { clusters: false, ..Syntax::EXACT_STOP }, &[
        Opt::value(&["-chdir"]).role(Role::Folder),
    ]),
    Spec::new(&["docker-compose"], Syntax::EXACT, &[
        Opt::value(&["-f", "--file"]).role(Role::Config), Opt::value(&["--project-directory"]).role(Role::Folder),
        Opt::value(&["-p", "--project-name"]), Opt::value(&["--env-file"]).risk(&LOADS), Opt::value(&["--profile"]),
    ]),
    Spec::new(&["pytest", "py.test"], Syntax::EXACT, &[
        Opt::value(&["--rootdir"]).role(Role::Folder), Opt::value(&["-c", "--config-file"]).role(Role::Config),
        Opt::value(&["--confcutdir"]).role(Role::Folder), Opt::value(&["-p"]).risk(&LOADS),
        Opt::value(&["-k"]), Opt::value(&["-m"]), Opt::value(&["-o", "--override-ini"]).risk(&TOOL_CONFIG),
        Opt::value(&["--basetemp"]), Opt::value(&["--junitxml", "--junit-xml"]), Opt::value(&["-n", "--numprocesses"]),
        Opt::value(&["--maxfail"]), Opt::value(&["--tb"]), Opt::value(&["-W", "--pythonwarnings"]),
        Opt::value(&["--cov"]), Opt::value(&["--cov-report"]), Opt::value(&["--durations"]), Opt::value(&["--deselect"]),
        Opt::value(&["--ignore"]), Opt::value(&["--log-level"]),
    ]),
    Spec::new(&["jest", "vitest"], Syntax::EXACT, &[
        Opt::value(&["-c", "--config"]).role(Role::Config), Opt::value(&["--rootDir", "--root", "-r"]).role(Role::Folder),
        Opt::value(&["--setupFiles", "--setupFilesAfterEnv", "--globalSetup", "--testEnvironment", "--reporters"]).risk(&LOADS),
        Opt::value(&["-t", "--testNamePattern"]), Opt::value(&["--testPathPattern"]), Opt::value(&["--coverageDirectory"]),
    ]),
    Spec::new(&["eslint"], Syntax::EXACT, &[
        Opt::value(&["-c", "--config"]).role(Role::Config), Opt::value(&["--rulesdir"]).risk(&LOADS),
        Opt::value(&["--plugin"]).risk(&LOADS), Opt::value(&["--resolve-plugins-relative-to"]).role(Role::Folder),
        Opt::value(&["-f", "--format"]), Opt::value(&["-o", "--output-file"]).role(Role::Writes),
        Opt::value(&["--ext"]), Opt::value(&["--ignore-path"]), Opt::value(&["--max-warnings"]), Opt::flag(&["--fix"]).role(Role::Writes),
    ]),
    Spec::new(&["prettier"], Syntax::EXACT, &[
        Opt::value(&["--config"]).role(Role::Config), Opt::value(&["--plugin"]).risk(&LOADS),
        Opt::value(&["--ignore-path"]), Opt::value(&["--log-level"]), Opt::flag(&["-w", "--write"]).role(Role::Writes),
    ]),
    Spec::new(&["tsc"], Syntax::EXACT, &[
        Opt::value(&["-p", "--project"]).role(Role::Config), Opt::value(&["--outDir"]), Opt::value(&["--target"]),
        Opt::value(&["--module"]), Opt::value(&["--lib"]), Opt::value(&["--plugins"]).risk(&LOADS),
    ]),
];
