//! Option specs of the environment and package runners: programs that run another command, or
//! fetch a package and run it (`npx`, `uvx`, `uv run`, `pipx run`, `poetry run`, `nix develop
//! -c`, `mise exec`, `direnv exec`, `dotenv`, …). The wrapper table
//! ([`wrappers`](crate::wrappers)) reads the command each one runs from these specs; the
//! specs say which options take a value (so the command is found where the runner finds it),
//! which option holds a script ([`Role::Script`]) or starts the command ([`Role::Command`]),
//! and which folder the runner obeys ([`Role::Folder`]).
//!
//! A runner's own options end at the command it runs (or at `--`).

use super::build::TOOL_CONFIG;
use super::interpreters::{INLINE, LOADS};
use super::spec::{Opt, Role, Spec, Syntax};

const STOP: Syntax = Syntax::EXACT_STOP;
const GNU_STOP: Syntax = Syntax::GNU_STOP;

/// The package-index options uv's run commands share.
#[rustfmt::skip]
const UV_RUN: &[Opt] = &[
    Opt::value(&["--with"]), Opt::value(&["--with-editable"]), Opt::value(&["--with-requirements"]),
    Opt::value(&["--from"]), Opt::value(&["--extra"]), Opt::value(&["--env-file"]).risk(&LOADS),
    Opt::value(&["-p", "--python"]), Opt::value(&["--package"]), Opt::value(&["--group"]), Opt::value(&["--only-group"]),
    Opt::value(&["--no-group"]), Opt::value(&["--index"]), Opt::value(&["--default-index"]), Opt::value(&["-i", "--index-url"]),
    Opt::value(&["--extra-index-url"]), Opt::value(&["-f", "--find-links"]), Opt::value(&["--index-strategy"]),
    Opt::value(&["--keyring-provider"]), Opt::value(&["--resolution"]), Opt::value(&["--prerelease"]),
    Opt::value(&["--exclude-newer"]), Opt::value(&["--link-mode"]), Opt::value(&["-C", "--config-setting"]),
    Opt::value(&["-P", "--upgrade-package"]), Opt::value(&["--reinstall-package"]), Opt::value(&["--refresh-package"]),
    Opt::value(&["--no-build-isolation-package"]), Opt::value(&["--python-preference"]), Opt::value(&["--no-binary-package"]),
    Opt::value(&["--no-build-package"]), Opt::flag(&["-m", "--module"]), Opt::flag(&["-s", "--script"]),
    Opt::flag(&["--all-extras"]), Opt::flag(&["--no-dev"]), Opt::flag(&["--frozen"]), Opt::flag(&["--locked"]),
    Opt::flag(&["--isolated"]), Opt::flag(&["--no-sync"]), Opt::flag(&["--no-project"]), Opt::flag(&["--with-editable-all"]),
];

/// uv's own options, accepted after its subcommands too.
#[rustfmt::skip]
const UV: &[Opt] = &[
    Opt::value(&["--directory"]).role(Role::Folder), Opt::value(&["--project"]).role(Role::Folder),
    Opt::value(&["--config-file"]).risk(&TOOL_CONFIG), Opt::value(&["--cache-dir"]), Opt::value(&["--color"]),
    Opt::value(&["--allow-insecure-host"]), Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-v", "--verbose"]),
    Opt::flag(&["--offline"]), Opt::flag(&["--no-config"]), Opt::flag(&["-n", "--no-cache"]), Opt::flag(&["--native-tls"]),
];

/// npm's exec options, shared by `npx`.
#[rustfmt::skip]
const NPX: &[Opt] = &[
    Opt::value(&["-c", "--call"]).role(Role::Script).risk(&INLINE), Opt::value(&["-p", "--package"]),
    Opt::value(&["--prefix", "-C"]).role(Role::Folder), Opt::value(&["--registry"]), Opt::value(&["--cache"]),
    Opt::value(&["-w", "--workspace"]), Opt::value(&["--userconfig"]).risk(&TOOL_CONFIG),
    Opt::value(&["--script-shell"]).risk(&TOOL_CONFIG), Opt::value(&["--node-options"]).risk(&TOOL_CONFIG),
    Opt::flag(&["-y", "--yes"]), Opt::flag(&["--no"]), Opt::flag(&["-q", "--quiet"]), Opt::flag(&["--ignore-existing"]),
];

const fn run(names: &'static [&'static str], options: &'static [Opt]) -> Spec {
    Spec::new(names, STOP, options).inheriting()
}

/// The runner specs.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["npx", "pnpx"], Syntax { permute: false, ..Syntax::PARSE_OPTIONS }, NPX),
    Spec::new(&["bunx"], STOP, &[Opt::flag(&["--bun"]), Opt::value(&["-p", "--package"])]),
    Spec::new(&["bun"], STOP, &[
        Opt::value(&["-e", "--eval"]).role(Role::Ends).risk(&INLINE), Opt::value(&["-p", "--print"]).role(Role::Ends).risk(&INLINE),
        Opt::value(&["-r", "--preload", "--require"]).risk(&LOADS), Opt::value(&["--cwd"]).role(Role::Folder),
        Opt::value(&["--env-file"]).risk(&LOADS), Opt::value(&["-c", "--config"]).risk(&TOOL_CONFIG),
    ]).subcommands(&[run(&["x"], &[Opt::flag(&["--bun"])]), run(&["run"], &[]), run(&["test"], &[])]),
    Spec::new(&["uvx"], STOP, UV_RUN),
    Spec::new(&["uv"], Syntax::EXACT, UV).subcommands(&[
        run(&["run"], UV_RUN),
        Spec::new(&["tool"], Syntax::EXACT, &[]).inheriting().subcommands(&[run(&["run"], UV_RUN)]),
        Spec::new(&["pip"], Syntax::EXACT, &[]).inheriting(),
    ]),
    Spec::new(&["pipx"], STOP, &[Opt::flag(&["-v", "--verbose"]), Opt::flag(&["-q", "--quiet"])]).subcommands(&[
        run(&["run"], &[
            Opt::value(&["--spec"]), Opt::value(&["--python"]), Opt::value(&["--pip-args"]), Opt::value(&["--index-url", "-i"]),
            Opt::value(&["--fetch-missing-python"]), Opt::flag(&["--no-cache"]), Opt::flag(&["--path"]), Opt::flag(&["--pypackages"]),
        ]),
    ]),
    Spec::new(&["poetry"], Syntax::EXACT, &[
        Opt::value(&["-C", "--directory"]).role(Role::Folder), Opt::value(&["-P", "--project"]).role(Role::Folder),
        Opt::flag(&["-v", "-vv", "-vvv", "--verbose"]), Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-n", "--no-interaction"]),
        Opt::flag(&["--no-plugins"]), Opt::flag(&["--no-cache"]), Opt::flag(&["--ansi"]), Opt::flag(&["--no-ansi"]),
    ]).subcommands(&[run(&["run"], &[])]),
    Spec::new(&["pdm"], Syntax::EXACT, &[
        Opt::value(&["-p", "--project"]).role(Role::Folder), Opt::flag(&["-g", "--global"]), Opt::value(&["--venv"]),
        Opt::flag(&["-v", "--verbose"]), Opt::flag(&["-q", "--quiet"]),
    ]).subcommands(&[run(&["run"], &[Opt::flag(&["-s", "--site-packages"]), Opt::flag(&["--recreate"]), Opt::flag(&["-l", "--list"]).role(Role::Quiet)])]),
    Spec::new(&["hatch"], Syntax::EXACT, &[
        Opt::value(&["-e", "--env"]), Opt::value(&["-p", "--project"]).role(Role::Folder), Opt::value(&["--data-dir"]),
        Opt::value(&["--cache-dir"]), Opt::value(&["--config"]).risk(&TOOL_CONFIG), Opt::flag(&["-v", "--verbose"]),
        Opt::flag(&["-q", "--quiet"]),
    ]).subcommands(&[run(&["run"], &[])]),
    Spec::new(&["conda", "mamba", "micromamba"], Syntax::EXACT, &[]).subcommands(&[
        run(&["run"], &[
            Opt::value(&["-n", "--name"]), Opt::value(&["-p", "--prefix"]), Opt::value(&["--cwd"]).role(Role::Folder),
            Opt::flag(&["--live-stream"]), Opt::flag(&["--no-capture-output"]), Opt::flag(&["-v", "--verbose"]),
            Opt::flag(&["--dev"]), Opt::flag(&["--debug-wrapper-scripts"]),
        ]),
    ]),
    Spec::new(&["nix-shell"], Syntax::EXACT, &[
        Opt::value(&["--run", "--command"]).role(Role::Script), Opt::value(&["-A", "--attr"]), Opt::value(&["-I", "--include"]),
        Opt::pair(&["--arg"]), Opt::pair(&["--argstr"]), Opt::value(&["-i"]), Opt::value(&["--keep", "-k"]),
        Opt::value(&["-j", "--max-jobs"]), Opt::value(&["--option"]), Opt::flag(&["-p", "--packages"]), Opt::flag(&["-E", "--expr"]),
        Opt::flag(&["--pure"]), Opt::flag(&["--impure"]),
    ]),
    Spec::new(&["nix"], Syntax::EXACT, &[Opt::pair(&["--option"]), Opt::value(&["--extra-experimental-features"])]).subcommands(&[
        Spec::new(&["develop"], Syntax::EXACT, &[
            Opt::flag(&["-c", "--command"]).role(Role::Command), Opt::pair(&["--arg"]), Opt::pair(&["--argstr"]),
            Opt::value(&["-I", "--include"]), Opt::flag(&["-i", "--ignore-environment"]), Opt::value(&["-k", "--keep"]),
            Opt::value(&["-u", "--unset"]), Opt::value(&["--profile"]), Opt::flag(&["--impure"]),
        ]).inheriting(),
        Spec::new(&["shell"], Syntax::EXACT, &[
            Opt::flag(&["-c", "--command"]).role(Role::Command), Opt::pair(&["--arg"]), Opt::pair(&["--argstr"]),
            Opt::value(&["-I", "--include"]), Opt::flag(&["-i", "--ignore-environment"]), Opt::value(&["-k", "--keep"]),
            Opt::value(&["-u", "--unset"]), Opt::flag(&["--impure"]),
        ]).inheriting(),
        run(&["run"], &[Opt::pair(&["--arg"]), Opt::pair(&["--argstr"]), Opt::value(&["-I", "--include"]), Opt::flag(&["--impure"])]),
    ]),
    Spec::new(&["mise", "rtx"], Syntax::EXACT, &[
        Opt::value(&["-C", "--cd"]).role(Role::Folder), Opt::value(&["-E", "--env"]), Opt::flag(&["-q", "--quiet"]),
        Opt::flag(&["-v", "--verbose"]), Opt::flag(&["-y", "--yes"]),
    ]).subcommands(&[
        Spec::new(&["exec", "x"], Syntax::EXACT, &[
            Opt::value(&["-c", "--command"]).role(Role::Script), Opt::value(&["-j", "--jobs"]), Opt::flag(&["--raw"]),
        ]).inheriting(),
        run(&["run", "r"], &[]),
    ]),
    Spec::new(&["asdf"], STOP, &[]).subcommands(&[run(&["exec"], &[]), run(&["env"], &[])]),
    Spec::new(&["direnv"], STOP, &[]).subcommands(&[run(&["exec"], &[])]),
    Spec::new(&["dotenv"], STOP, &[
        Opt::value(&["-e"]), Opt::value(&["-v"]), Opt::optional(&["-c"]), Opt::value(&["-p"]),
        Opt::flag(&["--debug"]), Opt::flag(&["-o"]),
    ]),
    Spec::new(&["dotenvx"], Syntax::EXACT, &[]).subcommands(&[
        run(&["run"], &[
            Opt::value(&["-f", "--env-file"]), Opt::value(&["-e", "--env"]), Opt::value(&["-fk", "--env-keys-file"]),
            Opt::flag(&["-o", "--overload"]), Opt::flag(&["--strict"]), Opt::flag(&["--quiet", "-q"]),
        ]),
    ]),
    Spec::new(&["cross-env", "cross-env-shell"], STOP, &[]),
    Spec::new(&["sops"], Syntax::EXACT, &[]).subcommands(&[
        run(&["exec-env"], &[Opt::value(&["--user"]), Opt::flag(&["--background"]), Opt::flag(&["--pristine"])]),
        run(&["exec-file"], &[Opt::value(&["--user"]), Opt::value(&["--filename"]), Opt::value(&["--output-type"]), Opt::flag(&["--no-fifo"])]),
    ]),
    Spec::new(&["chamber"], Syntax::EXACT, &[]).subcommands(&[run(&["exec"], &[Opt::flag(&["--pristine"]), Opt::flag(&["--strict"])])]),
    Spec::new(&["envchain"], STOP, &[Opt::flag(&["--set"]).role(Role::Quiet), Opt::flag(&["--list", "-l"]).role(Role::Quiet)]),
    Spec::new(&["env-cmd"], STOP, &[
        Opt::value(&["-f", "--file"]), Opt::value(&["-e", "--environments"]), Opt::value(&["-r", "--rc-file"]),
        Opt::flag(&["--fallback"]), Opt::flag(&["--no-override"]), Opt::flag(&["--silent"]), Opt::flag(&["--use-shell"]),
        Opt::flag(&["--expand-envs"]), Opt::flag(&["--verbose"]),
    ]),
    Spec::new(&["devbox"], Syntax::EXACT, &[]).subcommands(&[
        run(&["run"], &[
            Opt::value(&["-c", "--config"]).role(Role::Folder), Opt::value(&["-e", "--env"]), Opt::value(&["--env-file"]).risk(&LOADS),
            Opt::flag(&["-l", "--list"]).role(Role::Quiet), Opt::flag(&["--pure"]), Opt::flag(&["-q", "--quiet"]),
        ]),
    ]),
    Spec::new(&["op"], Syntax::EXACT, &[]).subcommands(&[
        run(&["run"], &[Opt::value(&["--env-file"]), Opt::flag(&["--no-masking"])]),
    ]),
    Spec::new(&["doppler"], Syntax::EXACT, &[]).subcommands(&[
        run(&["run"], &[
            Opt::value(&["--command"]).role(Role::Script), Opt::value(&["-p", "--project"]), Opt::value(&["-c", "--config"]),
            Opt::value(&["--mount"]), Opt::flag(&["--preserve-env"]),
        ]),
    ]),
    Spec::new(&["aws-vault"], Syntax::EXACT, &[]).subcommands(&[
        run(&["exec"], &[Opt::value(&["-d", "--duration"]), Opt::value(&["-t", "--mfa-token"]), Opt::flag(&["-n", "--no-session"])]),
    ]),
    Spec::new(&["pixi"], Syntax::EXACT, &[Opt::value(&["--manifest-path"]).role(Role::Config)]).subcommands(&[
        run(&["run"], &[Opt::value(&["-e", "--environment"])]), run(&["exec"], &[Opt::value(&["-s", "--spec"])]),
    ]),
    Spec::new(&["rye"], Syntax::EXACT, &[]).subcommands(&[run(&["run"], &[Opt::value(&["--pyproject"]).role(Role::Config)])]),
    Spec::new(&["pkgx"], Syntax { plus: true, ..STOP }, &[]),
    Spec::new(&["corepack"], STOP, &[]),
    // go's flag package: one dash or two, whole words.
    Spec::new(&["go"], Syntax::EXACT, &[]).subcommands(&[
        Spec::new(&["run"], GO, GO_BUILD), Spec::new(&["test"], Syntax { permute: true, ..GO }, GO_BUILD),
        Spec::new(&["build", "install", "vet", "generate", "get"], Syntax { permute: true, ..GO }, GO_BUILD),
    ]),
    Spec::new(&["just"], GNU_STOP, &[
        Opt::value(&["-f", "--justfile"]).role(Role::Config), Opt::value(&["-d", "--working-directory"]).role(Role::Folder),
        Opt::value(&["--shell"]).risk(&TOOL_CONFIG), Opt::value(&["--shell-arg"]).risk(&TOOL_CONFIG),
        Opt::value(&["--set"]), Opt::value(&["--dotenv-filename"]), Opt::value(&["--dotenv-path", "-E"]),
    ]),
];

const GO: Syntax = Syntax {
    clusters: false,
    ..STOP
};

#[rustfmt::skip]
const GO_BUILD: &[Opt] = &[
    Opt::value(&["-C", "--C"]).role(Role::Folder), Opt::value(&["-exec", "--exec"]).risk(&super::files::RUNS_PROGRAM),
    Opt::value(&["-toolexec", "--toolexec"]).risk(&super::files::RUNS_PROGRAM), Opt::value(&["-overlay", "--overlay"]),
    Opt::value(&["-modfile", "--modfile"]).role(Role::Config), Opt::value(&["-o", "--o"]), Opt::value(&["-p", "--p"]),
    Opt::value(&["-tags", "--tags"]), Opt::value(&["-ldflags", "--ldflags"]), Opt::value(&["-gcflags", "--gcflags"]),
    Opt::value(&["-asmflags", "--asmflags"]), Opt::value(&["-mod", "--mod"]), Opt::value(&["-run", "--run"]),
    Opt::value(&["-bench", "--bench"]), Opt::value(&["-count", "--count"]), Opt::value(&["-timeout", "--timeout"]),
    Opt::value(&["-coverprofile", "--coverprofile"]), Opt::value(&["-pkgdir", "--pkgdir"]),
    Opt::value(&["-compiler", "--compiler"]), Opt::value(&["-buildmode", "--buildmode"]),
];
