//! Option specs of the interpreters: which options run code given inline or load code before
//! the script, and which take a value, so that `python3 -W ignore -c CODE`, `node --title x -e
//! CODE`, `perl -I lib -e CODE`, `ruby -I lib -e CODE` and `php -d x=1 -r CODE` are read as the
//! interpreter reads them.
//!
//! An interpreter's options end at its script (what follows belongs to the script), and its
//! long names are exact (`python3 --versi` is refused). `-c`/`-m` end python's options; perl's
//! `-l` and `-0` take only the digits that follow (`perl -le` is `-l`, `-e`), while `-i` takes
//! the whole rest (`perl -pie` edits with the suffix `e`).

use super::spec::{Opt, Risk, Role, Spec, Syntax};

/// Code given inline.
pub const INLINE: Risk = Risk {
    id: "inline_code",
    why: "the interpreter runs code given on its command line",
};
/// A module or file loaded before the program.
pub const LOADS: Risk = Risk {
    id: "inline_code",
    why: "the interpreter loads code (a module, a preload, an environment file) before the program",
};
/// Code read interactively from stdin.
pub const INTERACTIVE: Risk = Risk {
    id: "inline_code",
    why: "the interpreter reads code interactively from its stdin",
};
/// An in-place edit loop.
pub const EDITS: Risk = Risk {
    id: "inline_code",
    why: "the interpreter runs its program over files and edits them in place",
};

const STOP: Syntax = Syntax::EXACT_STOP;

/// The interpreter specs.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["python", "python2", "python3", "pypy", "pypy3"], STOP, &[
        Opt::value(&["-c"]).role(Role::Ends).risk(&INLINE), Opt::value(&["-m"]).role(Role::Ends),
        Opt::value(&["-W"]), Opt::value(&["-X"]), Opt::value(&["--check-hash-based-pycs"]),
        Opt::flag(&["-i"]).risk(&INTERACTIVE),
        Opt::flag(&["-b"]), Opt::flag(&["-B"]), Opt::flag(&["-d"]), Opt::flag(&["-E"]), Opt::flag(&["-I"]),
        Opt::flag(&["-O"]), Opt::flag(&["-P"]), Opt::flag(&["-q"]), Opt::flag(&["-s"]), Opt::flag(&["-S"]),
        Opt::flag(&["-u"]), Opt::flag(&["-v"]), Opt::flag(&["-x"]),
        Opt::flag(&["-V", "--version"]).role(Role::Quiet), Opt::flag(&["-h", "-?", "--help"]).role(Role::Quiet),
        Opt::flag(&["--help-env"]).role(Role::Quiet), Opt::flag(&["--help-xoptions"]).role(Role::Quiet),
        Opt::flag(&["--help-all"]).role(Role::Quiet),
    ]),
    // node's own options take their value after `=` or as the next word; V8's (which node
    // passes on) need `=`, so an unknown one is a flag.
    Spec::new(&["node", "nodejs"], STOP, &[
        Opt::value(&["-e", "--eval"]).role(Role::Ends).risk(&INLINE), Opt::value(&["-p", "--print"]).role(Role::Ends).risk(&INLINE),
        Opt::value(&["-r", "--require"]).risk(&LOADS), Opt::value(&["--import"]).risk(&LOADS),
        Opt::value(&["--loader", "--experimental-loader"]).risk(&LOADS), Opt::value(&["--env-file"]).risk(&LOADS),
        Opt::value(&["--env-file-if-exists"]).risk(&LOADS), Opt::flag(&["-i", "--interactive"]).risk(&INTERACTIVE),
        Opt::value(&["-C", "--conditions"]), Opt::value(&["--title"]), Opt::value(&["--input-type"]),
        Opt::value(&["--inspect-port", "--debug-port"]), Opt::optional(&["--inspect"]), Opt::optional(&["--inspect-brk"]),
        Opt::optional(&["--inspect-wait"]), Opt::value(&["--experimental-default-type"]), Opt::value(&["--icu-data-dir"]),
        Opt::value(&["--openssl-config"]), Opt::value(&["--redirect-warnings"]), Opt::value(&["--report-dir", "--report-directory"]),
        Opt::value(&["--report-filename"]), Opt::value(&["--report-signal"]), Opt::value(&["--secure-heap"]),
        Opt::value(&["--secure-heap-min"]), Opt::value(&["--snapshot-blob"]), Opt::value(&["--test-concurrency"]),
        Opt::value(&["--test-name-pattern"]), Opt::value(&["--test-reporter"]), Opt::value(&["--test-reporter-destination"]),
        Opt::value(&["--test-shard"]), Opt::value(&["--test-timeout"]), Opt::value(&["--tls-cipher-list"]),
        Opt::value(&["--tls-keylog"]), Opt::value(&["--unhandled-rejections"]), Opt::value(&["--use-largepages"]),
        Opt::value(&["--v8-pool-size"]), Opt::value(&["--watch-path"]), Opt::value(&["--disable-warning"]),
        Opt::value(&["--dns-result-order"]), Opt::value(&["--diagnostic-dir"]), Opt::value(&["--cpu-prof-dir"]),
        Opt::value(&["--heap-prof-dir"]), Opt::value(&["--max-http-header-size"]), Opt::value(&["--allow-fs-read"]),
        Opt::value(&["--allow-fs-write"]), Opt::value(&["--disable-proto"]), Opt::value(&["--trace-event-categories"]),
        Opt::flag(&["-c", "--check"]), Opt::flag(&["--test"]), Opt::flag(&["--watch"]),
        Opt::flag(&["-v", "--version"]).role(Role::Quiet), Opt::flag(&["-h", "--help"]).role(Role::Quiet),
        Opt::flag(&["--v8-options"]).role(Role::Quiet),
    ]),
    Spec::new(&["perl"], STOP, &[
        Opt::value(&["-e"]).risk(&INLINE), Opt::value(&["-E"]).risk(&INLINE),
        Opt::value(&["-M"]).risk(&LOADS), Opt::value(&["-m"]).risk(&LOADS), Opt::optional(&["-d"]).risk(&LOADS),
        Opt::optional(&["-i"]).risk(&EDITS), Opt::flag(&["-n"]).risk(&EDITS), Opt::flag(&["-p"]).risk(&EDITS),
        Opt::optional(&["-x"]).risk(&INLINE), Opt::value(&["-I"]), Opt::takes_digits(&["-l"]), Opt::takes_digits(&["-0"]),
        Opt::optional(&["-C"]), Opt::optional(&["-D"]), Opt::optional(&["-F"]), Opt::optional(&["-V"]),
        Opt::flag(&["-a"]), Opt::flag(&["-c"]), Opt::flag(&["-f"]), Opt::flag(&["-s"]), Opt::flag(&["-S"]),
        Opt::flag(&["-t"]), Opt::flag(&["-T"]), Opt::flag(&["-u"]), Opt::flag(&["-U"]), Opt::flag(&["-w"]),
        Opt::flag(&["-W"]), Opt::flag(&["-X"]),
        Opt::flag(&["-v", "--version"]).role(Role::Quiet), Opt::flag(&["-h", "--help"]).role(Role::Quiet),
    ]),
    Spec::new(&["ruby"], STOP, &[
        Opt::value(&["-e"]).risk(&INLINE), Opt::value(&["-r"]).risk(&LOADS), Opt::optional(&["-i"]).risk(&EDITS),
        Opt::flag(&["-n"]).risk(&EDITS), Opt::flag(&["-p"]).risk(&EDITS), Opt::optional(&["-x"]).risk(&INLINE),
        Opt::value(&["-I"]), Opt::value(&["-C"]).role(Role::Folder), Opt::value(&["-E", "--encoding"]),
        Opt::takes_digits(&["-0"]), Opt::optional(&["-F"]), Opt::optional(&["-W"]),
        Opt::flag(&["-a"]), Opt::flag(&["-c"]), Opt::flag(&["-d", "--debug"]), Opt::flag(&["-l"]), Opt::flag(&["-s"]),
        Opt::flag(&["-S"]), Opt::flag(&["-w"]), Opt::flag(&["--verbose"]), Opt::value(&["--external-encoding"]),
        Opt::value(&["--internal-encoding"]), Opt::value(&["--enable"]), Opt::value(&["--disable"]), Opt::value(&["--dump"]),
        Opt::flag(&["-v"]), Opt::flag(&["--version"]).role(Role::Quiet), Opt::flag(&["-h", "--help"]).role(Role::Quiet),
    ]),
    Spec::new(&["php"], STOP, &[
        Opt::value(&["-r"]).risk(&INLINE), Opt::value(&["-B"]).risk(&INLINE), Opt::value(&["-R"]).risk(&INLINE),
        Opt::value(&["-E"]).risk(&INLINE), Opt::value(&["-F"]).risk(&INLINE), Opt::flag(&["-a"]).risk(&INTERACTIVE),
        Opt::value(&["-z"]).risk(&LOADS), Opt::value(&["-c"]), Opt::value(&["-d"]), Opt::value(&["-f"]),
        Opt::value(&["-S"]), Opt::value(&["-t"]), Opt::flag(&["-n"]), Opt::flag(&["-e"]), Opt::flag(&["-H"]),
        Opt::flag(&["-i"]), Opt::flag(&["-l"]), Opt::flag(&["-m"]), Opt::flag(&["-s"]), Opt::flag(&["-w"]),
        Opt::value(&["--rf"]), Opt::value(&["--rc"]), Opt::value(&["--re"]), Opt::value(&["--rz"]), Opt::value(&["--ri"]),
        Opt::flag(&["--ini"]), Opt::flag(&["-v", "--version"]).role(Role::Quiet), Opt::flag(&["-h", "--help"]).role(Role::Quiet),
    ]),
    Spec::new(&["lua", "luajit"], STOP, &[
        Opt::value(&["-e"]).risk(&INLINE), Opt::value(&["-l"]).risk(&LOADS), Opt::flag(&["-i"]).risk(&INTERACTIVE),
        Opt::flag(&["-v"]).role(Role::Quiet), Opt::flag(&["-E"]), Opt::flag(&["-W"]),
    ]),
    Spec::new(&["Rscript", "R"], STOP, &[
        Opt::value(&["-e"]).risk(&INLINE), Opt::value(&["-f", "--file"]), Opt::value(&["--default-packages"]),
        Opt::flag(&["--vanilla"]), Opt::flag(&["--verbose"]), Opt::flag(&["--no-environ"]), Opt::flag(&["--version"]).role(Role::Quiet),
    ]),
    Spec::new(&["osascript"], STOP, &[
        Opt::value(&["-e"]).risk(&INLINE), Opt::value(&["-l"]), Opt::value(&["-s"]), Opt::flag(&["-i"]),
    ]),
    Spec::new(&["expect"], STOP, &[
        Opt::value(&["-c"]).risk(&INLINE), Opt::value(&["-f"]), Opt::value(&["-D"]), Opt::flag(&["-d"]),
        Opt::flag(&["-i"]).risk(&INTERACTIVE), Opt::flag(&["-n"]), Opt::flag(&["-N"]), Opt::flag(&["-b"]), Opt::flag(&["-v"]),
    ]),
    Spec::new(&["deno"], Syntax::EXACT, &[
        Opt::value(&["--config", "-c"]), Opt::value(&["--import-map"]), Opt::value(&["--env-file"]).risk(&LOADS),
    ]).subcommands(&[
        Spec::new(&["eval"], Syntax::EXACT, &[Opt::flag(&["-p", "--print"])]).risky(&INLINE).inheriting(),
        Spec::new(&["run"], STOP, &[
            Opt::optional(&["--allow-read", "-R"]), Opt::optional(&["--allow-write", "-W"]), Opt::optional(&["--allow-net", "-N"]),
            Opt::optional(&["--allow-env", "-E"]), Opt::optional(&["--allow-run"]), Opt::optional(&["--allow-ffi"]),
            Opt::optional(&["--allow-sys", "-S"]), Opt::flag(&["-A", "--allow-all"]),
        ]).inheriting(),
        Spec::new(&["repl"], Syntax::EXACT, &[Opt::value(&["--eval"]).risk(&INLINE), Opt::value(&["--eval-file"]).risk(&LOADS)]).risky(&INTERACTIVE).inheriting(),
    ]),
];

/// Emacs: Lisp given inline or loaded; its options take one dash or two, and no clusters.
#[rustfmt::skip]
pub const EDITORS: &[Spec] = &[
    Spec::new(&["emacs", "emacsclient"], Syntax { clusters: false, abbreviate: true, ..Syntax::EXACT }, &[
        Opt::value(&["--eval", "-eval", "--execute", "-execute"]).risk(&INLINE), Opt::value(&["-l", "--load", "-load"]).risk(&LOADS),
        Opt::value(&["-f", "--funcall", "-funcall"]).risk(&INLINE), Opt::value(&["--script", "-script"]).risk(&LOADS),
        Opt::value(&["-x"]).risk(&LOADS), Opt::value(&["-L", "--directory"]), Opt::value(&["--chdir"]).role(Role::Folder),
        Opt::value(&["-u", "--user"]).risk(&LOADS), Opt::value(&["--init-directory"]).risk(&LOADS),
        Opt::flag(&["--batch", "-batch"]), Opt::flag(&["-q", "--no-init-file"]), Opt::flag(&["-nw", "--no-window-system"]),
        Opt::flag(&["-Q", "--quick"]), Opt::flag(&["--version"]), Opt::flag(&["--help"]),
    ]),
];
