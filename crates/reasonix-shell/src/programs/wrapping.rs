//! Option specs of the programs that run another command: `timeout`, `nice`, `env`, `xargs`,
//! `sudo`, the shells… (what each runs is read by [`wrappers`](crate::wrappers)).
//!
//! A wrapper's options end at its first operand (its `getopt` string starts with `+`), so the
//! inner command's options stay its own; its long options abbreviate like any `getopt_long`
//! program's (`timeout --sig KILL 5 cmd`, `env --chd=/tmp cmd`, `xargs --repl=X cmd`, all run
//! on this machine). The valued options are complete (from each program's `--help`): a valued
//! option the spec missed would make its value look like the inner command.

use super::files::OUTPUT_FILE;
use super::spec::{Opt, Risk, Role, Spec, Syntax};

const STOP: Syntax = Syntax::GNU_STOP;

/// A tracer's or wrapper's own option that writes, sends, loads or runs something besides the
/// program it wraps (`strace -o F`, `strace -o '|CMD'`, `valgrind --log-socket=H`, `fakeroot
/// -l LIB`).
pub const WRAPPER_FILES: Risk = Risk {
    id: "output_file",
    why: "this option of the wrapper writes, sends, loads or runs something of its own",
};
/// `strace -E VAR=VALUE`: the traced program's environment, which no rule sees.
pub const WRAPPER_ENV: Risk = Risk {
    id: "output_file",
    why: "this option sets the traced program's environment",
};
/// A login or interactive shell (`bash -l`, `--login`, `-i`, `--rcfile F`, `exec -l bash`):
/// before the script it runs its startup files — `/etc/profile`, `~/.profile`, `~/.bashrc` or
/// the file named — code the analysis does not see (the oracle watched `bash -lc` run `id -u`
/// from `/etc/profile`).
pub const STARTUP: Risk = Risk {
    id: "loads_code",
    why: "a login or interactive shell first runs its startup files (/etc/profile, ~/.profile, ~/.bashrc), code outside the script",
};

/// The wrapper specs.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["timeout"], STOP, &[
        Opt::value(&["-k", "--kill-after"]), Opt::value(&["-s", "--signal"]),
        Opt::flag(&["--preserve-status"]), Opt::flag(&["--foreground"]), Opt::flag(&["-v", "--verbose"]),
        Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["nice"], STOP, &[
        Opt::value(&["-n", "--adjustment"]), Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["nohup"], STOP, &[Opt::flag(&["--help"]), Opt::flag(&["--version"])]),
    Spec::new(&["stdbuf"], STOP, &[
        Opt::value(&["-i", "--input"]), Opt::value(&["-o", "--output"]), Opt::value(&["-e", "--error"]),
        Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["env"], STOP, &[
        Opt::flag(&["-i", "--ignore-environment"]), Opt::flag(&["-0", "--null"]),
        Opt::value(&["-u", "--unset"]), Opt::value(&["-C", "--chdir"]).role(Role::Folder),
        Opt::value(&["-S", "--split-string"]).role(Role::Script),
        Opt::optional(&["--block-signal"]), Opt::optional(&["--default-signal"]), Opt::optional(&["--ignore-signal"]),
        Opt::flag(&["--list-signal-handling"]), Opt::flag(&["-v", "--debug"]),
        Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["command"], Syntax::EXACT_STOP, &[
        Opt::flag(&["-p"]), Opt::flag(&["-v"]).role(Role::Quiet), Opt::flag(&["-V"]).role(Role::Quiet),
    ]),
    Spec::new(&["builtin"], Syntax::EXACT_STOP, &[]),
    Spec::new(&["exec"], Syntax::EXACT_STOP, &[Opt::flag(&["-c"]), Opt::flag(&["-l"]).risk(&STARTUP), Opt::value(&["-a"])]),
    // GNU time (`/usr/bin/time`); bash's `time` keyword takes only `-p`.
    Spec::new(&["time"], STOP, &[
        Opt::value(&["-f", "--format"]), Opt::value(&["-o", "--output"]).role(Role::Writes).risk(&super::files::OUTPUT_FILE),
        Opt::flag(&["-a", "--append"]), Opt::flag(&["-p", "--portability"]), Opt::flag(&["-q", "--quiet"]),
        Opt::flag(&["-v", "--verbose"]), Opt::flag(&["--help"]), Opt::flag(&["-V", "--version"]),
    ]),
    Spec::new(&["xargs"], STOP, &[
        Opt::flag(&["-0", "--null"]), Opt::value(&["-a", "--arg-file"]), Opt::value(&["-d", "--delimiter"]),
        Opt::value(&["-E"]), Opt::optional(&["-e", "--eof"]), Opt::value(&["-I"]), Opt::optional(&["-i", "--replace"]),
        Opt::value(&["-L", "--max-lines"]), Opt::optional(&["-l"]), Opt::value(&["-n", "--max-args"]),
        Opt::flag(&["-o", "--open-tty"]), Opt::value(&["-P", "--max-procs"]), Opt::flag(&["-p", "--interactive"]),
        Opt::value(&["--process-slot-var"]), Opt::flag(&["-r", "--no-run-if-empty"]), Opt::value(&["-s", "--max-chars"]),
        Opt::flag(&["--show-limits"]), Opt::flag(&["-t", "--verbose"]), Opt::flag(&["-x", "--exit"]),
        Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["setsid"], STOP, &[
        Opt::flag(&["-c", "--ctty"]), Opt::flag(&["-f", "--fork"]), Opt::flag(&["-w", "--wait"]),
        Opt::flag(&["-h", "--help"]), Opt::flag(&["-V", "--version"]),
    ]),
    Spec::new(&["watch"], STOP, &[
        Opt::flag(&["-b", "--beep"]), Opt::flag(&["-c", "--color"]), Opt::flag(&["-C", "--no-color"]),
        Opt::optional(&["-d", "--differences"]), Opt::flag(&["-e", "--errexit"]), Opt::flag(&["-g", "--chgexit"]),
        Opt::value(&["-q", "--equexit"]), Opt::value(&["-n", "--interval"]), Opt::flag(&["-p", "--precise"]),
        Opt::flag(&["-t", "--no-title"]), Opt::flag(&["-w", "--no-wrap"]), Opt::flag(&["-x", "--exec"]).role(Role::Exec),
        Opt::flag(&["-r", "--no-rerun"]), Opt::value(&["-s", "--shotsdir"]),
        Opt::flag(&["-h", "--help"]), Opt::flag(&["-v", "--version"]),
    ]),
    // sudo's getopt string is "+Aa:BbC:c:D:Eeg:Hh::KkLlnPp:R:r:SsT:t:U:u:Vv": `-k` with a
    // command runs it; `-K`, `-l`, `-v`, `-V`, `-e` and a bare `-h` run nothing.
    Spec::new(&["sudo"], STOP, &[
        Opt::flag(&["-A", "--askpass"]), Opt::value(&["-a", "--auth-type"]), Opt::flag(&["-B", "--bell"]),
        Opt::flag(&["-b", "--background"]), Opt::value(&["-C", "--close-from"]), Opt::value(&["-c", "--login-class"]),
        Opt::value(&["-D", "--chdir"]).role(Role::Folder), Opt::flag(&["-E", "--preserve-env"]),
        Opt::flag(&["-e", "--edit"]).role(Role::Quiet), Opt::value(&["-g", "--group"]), Opt::flag(&["-H", "--set-home"]),
        Opt::optional(&["-h"]).role(Role::Quiet), Opt::value(&["--host"]), Opt::flag(&["--help"]).role(Role::Quiet), Opt::flag(&["-K", "--remove-timestamp"]).role(Role::Quiet),
        Opt::flag(&["-k", "--reset-timestamp"]), Opt::flag(&["-l", "--list"]).role(Role::Quiet),
        Opt::flag(&["-n", "--non-interactive"]), Opt::flag(&["-P", "--preserve-groups"]), Opt::value(&["-p", "--prompt"]),
        Opt::value(&["-R", "--chroot"]), Opt::value(&["-r", "--role"]), Opt::flag(&["-S", "--stdin"]),
        Opt::flag(&["-s", "--shell"]), Opt::value(&["-T", "--command-timeout"]), Opt::value(&["-t", "--type"]),
        Opt::value(&["-U", "--other-user"]), Opt::value(&["-u", "--user"]), Opt::flag(&["-V", "--version"]).role(Role::Quiet),
        Opt::flag(&["-v", "--validate"]).role(Role::Quiet), Opt::flag(&["-L"]).role(Role::Quiet),
    ]),
    Spec::new(&["doas"], Syntax::EXACT_STOP, &[
        Opt::value(&["-u"]), Opt::value(&["-C"]).role(Role::Quiet), Opt::flag(&["-L"]).role(Role::Quiet),
        Opt::flag(&["-n"]), Opt::flag(&["-s"]),
    ]),
    Spec::new(&["ionice"], STOP, &[
        Opt::value(&["-c", "--class"]), Opt::value(&["-n", "--classdata"]), Opt::flag(&["-p", "--pid"]).role(Role::Quiet),
        Opt::flag(&["-P", "--pgid"]).role(Role::Quiet), Opt::flag(&["-u", "--uid"]).role(Role::Quiet),
        Opt::flag(&["-t", "--ignore"]), Opt::flag(&["-h", "--help"]), Opt::flag(&["-V", "--version"]),
    ]),
    // `flock [OPTIONS] FILE -c COMMAND`: `-c` counts only right after the lock file, spelled
    // exactly (flock reads it by hand); before the file it is refused.
    Spec::new(&["flock"], STOP, &[
        Opt::flag(&["-s", "--shared"]), Opt::flag(&["-x", "--exclusive"]), Opt::flag(&["-u", "--unlock"]),
        Opt::flag(&["-n", "--nonblock"]), Opt::value(&["-w", "--timeout", "--wait"]), Opt::value(&["-E", "--conflict-exit-code"]),
        Opt::flag(&["-o", "--close"]), Opt::flag(&["-F", "--no-fork"]), Opt::flag(&["--verbose"]),
        Opt::flag(&["-h", "--help"]), Opt::flag(&["-V", "--version"]),
    ]),
    Spec::new(&["chrt"], STOP, &[
        Opt::flag(&["-b", "--batch"]), Opt::flag(&["-d", "--deadline"]), Opt::flag(&["-f", "--fifo"]),
        Opt::flag(&["-i", "--idle"]), Opt::flag(&["-o", "--other"]), Opt::flag(&["-r", "--rr"]),
        Opt::flag(&["-R", "--reset-on-fork"]), Opt::value(&["-T", "--sched-runtime"]), Opt::value(&["-P", "--sched-period"]),
        Opt::value(&["-D", "--sched-deadline"]), Opt::flag(&["-a", "--all-tasks"]), Opt::flag(&["-m", "--max"]).role(Role::Quiet),
        Opt::flag(&["-p", "--pid"]).role(Role::Quiet), Opt::flag(&["-v", "--verbose"]),
        Opt::flag(&["-h", "--help"]), Opt::flag(&["-V", "--version"]),
    ]),
    Spec::new(&["taskset"], STOP, &[
        Opt::flag(&["-a", "--all-tasks"]), Opt::flag(&["-p", "--pid"]).role(Role::Quiet), Opt::flag(&["-c", "--cpu-list"]),
        Opt::flag(&["-h", "--help"]), Opt::flag(&["-V", "--version"]),
    ]),
    Spec::new(&["busybox", "toybox"], Syntax::EXACT_STOP, &[]),
    // The shells: `-c` is a flag whose script is the first operand; `-o`/`+o` and `-O`/`+O`
    // take a value; long options are exact (`bash --nor` is refused here).
    Spec::new(&["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"], SHELL, &[
        Opt::flag(&["-c"]), Opt::flag(&["-s"]), Opt::flag(&["-i"]).risk(&STARTUP), Opt::flag(&["-l", "--login"]).risk(&STARTUP),
        Opt::flag(&["-r", "--restricted"]), Opt::value(&["-o"]), Opt::value(&["+o"]), Opt::value(&["-O"]),
        Opt::value(&["+O"]), Opt::value(&["--rcfile", "--init-file"]).risk(&STARTUP), Opt::flag(&["--norc"]),
        Opt::flag(&["--noprofile"]), Opt::flag(&["--posix"]), Opt::flag(&["--verbose"]),
        Opt::flag(&["--noediting"]), Opt::flag(&["--debugger"]), Opt::flag(&["--version"]), Opt::flag(&["--help"]),
    ]),
    // More programs that run the command after their options.
    Spec::new(&["script"], STOP, &[
        Opt::value(&["-c", "--command"]).role(Role::Script), Opt::flag(&["-a", "--append"]), Opt::value(&["-E", "--echo"]),
        Opt::flag(&["-e", "--return"]), Opt::flag(&["-f", "--flush"]), Opt::value(&["-I", "--log-in"]),
        Opt::value(&["-O", "--log-out"]), Opt::value(&["-B", "--log-io"]), Opt::value(&["-T", "--log-timing"]),
        Opt::value(&["-m", "--logging-format"]), Opt::value(&["-o", "--output-limit"]), Opt::flag(&["-q", "--quiet"]),
    ]),
    // fakeroot parses with getopt(1): long options abbreviate; `-s` saves its state to a file,
    // `-i` loads one, `-l`/`--lib` loads a library, `--faked` runs a program.
    Spec::new(&["fakeroot"], STOP, &[
        Opt::value(&["-s"]).role(Role::Writes).risk(&WRAPPER_FILES), Opt::value(&["-i"]).risk(&WRAPPER_FILES),
        Opt::value(&["-l", "--lib"]).risk(&WRAPPER_FILES), Opt::value(&["--faked"]).risk(&WRAPPER_FILES),
        Opt::value(&["-b"]).risk(&WRAPPER_FILES), Opt::flag(&["-u", "--unknown-is-real"]), Opt::flag(&["-h", "--help"]),
        Opt::flag(&["-v", "--version"]),
    ]),
    Spec::new(&["unbuffer", "chronic", "catchsegv", "tsocks", "proxychains", "proxychains4", "torsocks"], Syntax::EXACT_STOP, &[
        Opt::flag(&["-p"]), Opt::flag(&["-e"]), Opt::flag(&["-v"]), Opt::value(&["-f"]), Opt::value(&["-l"]), Opt::value(&["-s"]),
        Opt::value(&["-i"]),
    ]),
    // strace and ltrace parse with getopt_long: long options abbreviate (`--output-a`), and
    // `-o '|CMD'` or `-o '!CMD'` pipes the trace to a command.
    Spec::new(&["strace"], STOP, &[
        Opt::value(&["-o", "--output"]).role(Role::Writes).risk(&WRAPPER_FILES), Opt::value(&["-e"]), Opt::value(&["-p", "--attach"]).role(Role::Quiet),
        Opt::value(&["-s", "--string-limit"]), Opt::value(&["-u", "--user"]), Opt::value(&["-E", "--env"]).risk(&WRAPPER_ENV),
        Opt::value(&["-a", "--columns"]), Opt::value(&["-b", "--detach-on"]), Opt::value(&["-I"]), Opt::value(&["-P", "--trace-path"]),
        Opt::value(&["-S", "--summary-sort-by"]), Opt::value(&["-X", "--const-print-style"]), Opt::value(&["-O"]),
    ]),
    Spec::new(&["ltrace"], STOP, &[
        Opt::value(&["-o", "--output"]).role(Role::Writes).risk(&WRAPPER_FILES), Opt::value(&["-e"]), Opt::value(&["-p"]).role(Role::Quiet),
        Opt::value(&["-s"]), Opt::value(&["-u"]), Opt::value(&["-a", "--align"]), Opt::value(&["-n", "--indent"]),
        Opt::value(&["-l", "--library"]), Opt::value(&["-x"]), Opt::value(&["-F", "--config"]),
    ]),
    // valgrind reads exact names, each value after `=` (`--log-file /x` is not its value).
    Spec::new(&["valgrind"], Syntax::EXACT_STOP, &[
        Opt::equals(&["--log-file"]).role(Role::Writes).risk(&OUTPUT_FILE), Opt::equals(&["--xml-file"]).role(Role::Writes).risk(&OUTPUT_FILE),
        Opt::equals(&["--log-socket"]).risk(&WRAPPER_FILES), Opt::equals(&["--xml-socket"]).risk(&WRAPPER_FILES),
        Opt::equals(&["--vgdb-prefix"]).risk(&WRAPPER_FILES), Opt::equals(&["--tool"]), Opt::equals(&["--log-fd"]),
    ]),
    Spec::new(&["chroot"], STOP, &[
        Opt::value(&["--groups"]), Opt::value(&["--userspec"]), Opt::flag(&["--skip-chdir"]),
    ]),
    Spec::new(&["systemd-run"], STOP, &[
        Opt::value(&["-u", "--unit"]), Opt::value(&["-p", "--property"]), Opt::value(&["-E", "--setenv"]),
        Opt::value(&["--uid"]), Opt::value(&["--gid"]), Opt::value(&["-d", "--working-directory"]).role(Role::Folder),
        Opt::value(&["--description"]), Opt::value(&["--slice"]), Opt::value(&["-M", "--machine"]), Opt::value(&["-H", "--host"]),
        Opt::value(&["--on-active", "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive", "--on-calendar"]),
        Opt::flag(&["--user"]), Opt::flag(&["--scope"]), Opt::flag(&["-t", "--pty"]), Opt::flag(&["-P", "--pipe"]),
        Opt::flag(&["-q", "--quiet"]), Opt::flag(&["-G", "--collect"]), Opt::flag(&["--wait"]),
    ]),
    Spec::new(&["firejail"], Syntax { clusters: false, ..Syntax::EXACT_STOP }, &[]),
];

/// The shells' syntax: exact names, options end at the first operand, `+` options.
const SHELL: Syntax = Syntax {
    plus: true,
    ..Syntax::EXACT_STOP
};
