//! Option specs of the file and text tools (GNU coreutils and their neighbours): which options
//! take a value, which write a file or run a program, which read whole folders.
//!
//! All of them parse with GNU `getopt_long`: long options abbreviate (`sort --outp=F` is
//! `--output=F`, run on this machine) and options may follow operands. Flags are listed where
//! deny rules name them (`rm -rf` ≡ `rm --recursive --force`); valued options are listed so
//! that their values are not taken for operands.

use super::spec::{Opt, Risk, Role, Spec, Syntax};

/// An option that writes a file it names.
pub const OUTPUT_FILE: Risk = Risk {
    id: "output_file",
    why: "this option writes a file it names",
};
/// An option that runs a program it names.
pub const RUNS_PROGRAM: Risk = Risk {
    id: "runs_program",
    why: "this option runs a program it names",
};
/// `man -P`/`-H`: a pager or browser.
pub const PAGER: Risk = Risk {
    id: "pager",
    why: "man -P/-H runs the program named",
};
/// `man -l FILE`: a local page, whose `.so` requests read other files.
pub const MAN_LOCAL: Risk = Risk {
    id: "unnamed_input",
    why: "a local page's .so requests read files the command line does not name",
};
/// `rg --pre`.
pub const PREPROCESSOR: Risk = Risk {
    id: "rg_preprocessor",
    why: "rg --pre runs a program on every file",
};
/// An option that makes a program read files or input its command line does not name: a list
/// of file names (`--files0-from`), folders compared whole (`diff -N`), requests on stdin.
pub const UNNAMED_INPUT: Risk = Risk {
    id: "unnamed_input",
    why: "this option makes the program read files or input its command line does not name",
};
/// An option that edits files in place.
pub const IN_PLACE: Risk = Risk {
    id: "in_place",
    why: "this option edits files in place",
};

const GNU: Syntax = Syntax::GNU;

/// The file and text tool specs.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["rm"], GNU, &[
        Opt::flag(&["-r", "-R", "--recursive"]), Opt::flag(&["-f", "--force"]), Opt::flag(&["-d", "--dir"]),
        Opt::flag(&["-i"]), Opt::flag(&["-I"]), Opt::optional(&["--interactive"]), Opt::flag(&["-v", "--verbose"]),
        Opt::flag(&["--one-file-system"]), Opt::flag(&["--no-preserve-root"]), Opt::optional(&["--preserve-root"]),
    ]),
    Spec::new(&["cp"], GNU, &[
        Opt::flag(&["-r", "-R", "--recursive"]), Opt::flag(&["-f", "--force"]), Opt::flag(&["-a", "--archive"]),
        Opt::optional(&["--backup"]), Opt::flag(&["-i", "--interactive"]), Opt::flag(&["-l", "--link"]),
        Opt::flag(&["-L", "--dereference"]), Opt::flag(&["-n", "--no-clobber"]), Opt::flag(&["-P", "--no-dereference"]),
        Opt::optional(&["--preserve"]), Opt::value(&["--no-preserve"]), Opt::optional(&["--reflink"]),
        Opt::value(&["--sparse"]), Opt::flag(&["-s", "--symbolic-link"]), Opt::value(&["-S", "--suffix"]),
        Opt::value(&["-t", "--target-directory"]), Opt::flag(&["-T", "--no-target-directory"]),
        Opt::optional(&["-u", "--update"]), Opt::flag(&["-v", "--verbose"]), Opt::flag(&["-x", "--one-file-system"]),
        Opt::optional(&["--context"]),
    ]),
    Spec::new(&["mv"], GNU, &[
        Opt::flag(&["-f", "--force"]), Opt::optional(&["--backup"]), Opt::flag(&["-i", "--interactive"]),
        Opt::flag(&["-n", "--no-clobber"]), Opt::value(&["-S", "--suffix"]), Opt::value(&["-t", "--target-directory"]),
        Opt::flag(&["-T", "--no-target-directory"]), Opt::optional(&["-u", "--update"]), Opt::flag(&["-v", "--verbose"]),
    ]),
    Spec::new(&["ln"], GNU, &[
        Opt::flag(&["-s", "--symbolic"]), Opt::flag(&["-f", "--force"]), Opt::optional(&["--backup"]),
        Opt::flag(&["-i", "--interactive"]), Opt::flag(&["-L", "--logical"]), Opt::flag(&["-n", "--no-dereference"]),
        Opt::flag(&["-P", "--physical"]), Opt::flag(&["-r", "--relative"]), Opt::value(&["-S", "--suffix"]),
        Opt::value(&["-t", "--target-directory"]), Opt::flag(&["-T", "--no-target-directory"]), Opt::flag(&["-v", "--verbose"]),
    ]),
    Spec::new(&["mkdir"], GNU, &[
        Opt::flag(&["-p", "--parents"]), Opt::value(&["-m", "--mode"]), Opt::flag(&["-v", "--verbose"]),
        Opt::optional(&["--context"]),
    ]),
    Spec::new(&["chmod", "chown", "chgrp"], GNU, &[
        Opt::flag(&["-R", "--recursive"]), Opt::flag(&["-c", "--changes"]), Opt::flag(&["-f", "--silent", "--quiet"]),
        Opt::flag(&["-v", "--verbose"]), Opt::value(&["--reference"]), Opt::value(&["--from"]),
        Opt::flag(&["--no-preserve-root"]), Opt::flag(&["--preserve-root"]),
    ]),
    // `kill -9`, `kill -KILL` and `kill -SIGKILL` are one signal; kill reads whole words.
    Spec::new(&["kill"], Syntax { clusters: false, ..Syntax::EXACT }, &[
        Opt::flag(&["-9", "-KILL", "-SIGKILL"]), Opt::value(&["-s"]), Opt::value(&["-n"]), Opt::flag(&["-l", "-L"]),
    ]),
    Spec::new(&["sort"], GNU, &[
        Opt::value(&["-o", "--output"]).role(Role::Writes).risk(&OUTPUT_FILE),
        Opt::value(&["--compress-program"]).risk(&RUNS_PROGRAM),
        Opt::value(&["-k", "--key"]), Opt::value(&["-t", "--field-separator"]), Opt::value(&["-S", "--buffer-size"]),
        Opt::value(&["-T", "--temporary-directory"]), Opt::value(&["--files0-from"]).risk(&UNNAMED_INPUT), Opt::value(&["--parallel"]),
        Opt::value(&["--batch-size"]), Opt::value(&["--random-source"]), Opt::value(&["--sort"]),
        Opt::optional(&["-c", "--check"]), Opt::flag(&["-C"]), Opt::flag(&["-b", "--ignore-leading-blanks"]),
        Opt::flag(&["-d", "--dictionary-order"]), Opt::flag(&["-f", "--ignore-case"]), Opt::flag(&["-g", "--general-numeric-sort"]),
        Opt::flag(&["-i", "--ignore-nonprinting"]), Opt::flag(&["-M", "--month-sort"]), Opt::flag(&["-h", "--human-numeric-sort"]),
        Opt::flag(&["-n", "--numeric-sort"]), Opt::flag(&["-R", "--random-sort"]), Opt::flag(&["-r", "--reverse"]),
        Opt::flag(&["-V", "--version-sort"]), Opt::flag(&["--debug"]), Opt::flag(&["-m", "--merge"]),
        Opt::flag(&["-s", "--stable"]), Opt::flag(&["-u", "--unique"]), Opt::flag(&["-z", "--zero-terminated"]),
        Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["wc"], GNU, &[
        Opt::value(&["--files0-from"]).risk(&UNNAMED_INPUT), Opt::flag(&["-c", "--bytes"]), Opt::flag(&["-m", "--chars"]),
        Opt::flag(&["-l", "--lines"]), Opt::flag(&["-L", "--max-line-length"]), Opt::flag(&["-w", "--words"]),
        Opt::equals(&["--total"]), Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["du"], GNU, &[
        Opt::value(&["--files0-from"]).risk(&UNNAMED_INPUT), Opt::flag(&["-0", "--null"]), Opt::flag(&["-a", "--all"]),
        Opt::flag(&["--apparent-size"]), Opt::value(&["-B", "--block-size"]), Opt::flag(&["-b", "--bytes"]),
        Opt::flag(&["-c", "--total"]), Opt::flag(&["-D", "--dereference-args", "-H"]), Opt::value(&["-d", "--max-depth"]),
        Opt::flag(&["-h", "--human-readable"]), Opt::flag(&["--inodes"]), Opt::flag(&["-k"]), Opt::flag(&["-L", "--dereference"]),
        Opt::flag(&["-l", "--count-links"]), Opt::flag(&["-m"]), Opt::flag(&["-P", "--no-dereference"]),
        Opt::flag(&["-S", "--separate-dirs"]), Opt::flag(&["--si"]), Opt::flag(&["-s", "--summarize"]),
        Opt::value(&["-t", "--threshold"]), Opt::optional(&["--time"]), Opt::value(&["--time-style"]),
        Opt::value(&["-X", "--exclude-from"]), Opt::value(&["--exclude"]), Opt::flag(&["-x", "--one-file-system"]),
        Opt::flag(&["--help"]), Opt::flag(&["--version"]),
    ]),
    Spec::new(&["uniq"], GNU, &[
        Opt::flag(&["-c", "--count"]), Opt::flag(&["-d", "--repeated"]), Opt::optional(&["--all-repeated"]),
        Opt::flag(&["-D"]), Opt::value(&["-f", "--skip-fields"]), Opt::optional(&["--group"]),
        Opt::flag(&["-i", "--ignore-case"]), Opt::value(&["-s", "--skip-chars"]), Opt::flag(&["-u", "--unique"]),
        Opt::flag(&["-z", "--zero-terminated"]), Opt::value(&["-w", "--check-chars"]),
    ]),
    Spec::new(&["grep", "egrep", "fgrep", "zgrep"], GNU, &[
        Opt::flag(&["-r", "--recursive"]).role(Role::Recursive(None)),
        Opt::flag(&["-R", "--dereference-recursive"]).role(Role::Recursive(None)),
        Opt::value(&["-d", "--directories"]).role(Role::Recursive(Some("recurse"))),
        Opt::value(&["-e", "--regexp"]), Opt::value(&["-f", "--file"]), Opt::value(&["-m", "--max-count"]),
        Opt::value(&["--label"]), Opt::value(&["--binary-files"]), Opt::value(&["-D", "--devices"]),
        Opt::value(&["--include"]), Opt::value(&["--exclude"]), Opt::value(&["--exclude-from"]),
        Opt::value(&["--exclude-dir"]), Opt::value(&["-B", "--before-context"]), Opt::value(&["-A", "--after-context"]),
        Opt::value(&["-C", "--context"]), Opt::value(&["--group-separator"]), Opt::optional(&["--color", "--colour"]),
        Opt::flag(&["-E", "--extended-regexp"]), Opt::flag(&["-F", "--fixed-strings"]), Opt::flag(&["-G", "--basic-regexp"]),
        Opt::flag(&["-P", "--perl-regexp"]), Opt::flag(&["-i", "--ignore-case"]), Opt::flag(&["--no-ignore-case"]),
        Opt::flag(&["-w", "--word-regexp"]), Opt::flag(&["-x", "--line-regexp"]), Opt::flag(&["-z", "--null-data"]),
        Opt::flag(&["-s", "--no-messages"]), Opt::flag(&["-v", "--invert-match"]), Opt::flag(&["-V", "--version"]),
        Opt::flag(&["-b", "--byte-offset"]), Opt::flag(&["-n", "--line-number"]), Opt::flag(&["--line-buffered"]),
        Opt::flag(&["-H", "--with-filename"]), Opt::flag(&["-h", "--no-filename"]), Opt::flag(&["-o", "--only-matching"]),
        Opt::flag(&["-q", "--quiet", "--silent"]), Opt::flag(&["-a", "--text"]), Opt::flag(&["-I"]),
        Opt::flag(&["-L", "--files-without-match"]), Opt::flag(&["-l", "--files-with-matches"]), Opt::flag(&["-c", "--count"]),
        Opt::flag(&["-T", "--initial-tab"]), Opt::flag(&["-Z", "--null"]), Opt::flag(&["-U", "--binary"]),
        Opt::flag(&["--no-group-separator"]), Opt::flag(&["--help"]),
    ]),
    // ripgrep parses with its own lexopt-based parser: exact long names.
    Spec::new(&["rg"], Syntax::EXACT, &[
        Opt::value(&["--pre"]).risk(&PREPROCESSOR), Opt::value(&["--pre-glob"]), Opt::value(&["-e", "--regexp"]),
        Opt::value(&["-f", "--file"]), Opt::value(&["-g", "--glob"]), Opt::value(&["--iglob"]), Opt::value(&["-t", "--type"]),
        Opt::value(&["-T", "--type-not"]), Opt::value(&["--type-add"]), Opt::value(&["-m", "--max-count"]),
        Opt::value(&["-A", "--after-context"]), Opt::value(&["-B", "--before-context"]), Opt::value(&["-C", "--context"]),
        Opt::value(&["-r", "--replace"]), Opt::value(&["-j", "--threads"]), Opt::value(&["-M", "--max-columns"]),
        Opt::value(&["-d", "--max-depth"]), Opt::value(&["--ignore-file"]), Opt::value(&["-E", "--encoding"]),
        Opt::value(&["--color"]), Opt::value(&["--colors"]), Opt::value(&["--sort"]), Opt::value(&["--sortr"]),
        Opt::value(&["--path-separator"]), Opt::value(&["--context-separator"]), Opt::value(&["--max-filesize"]),
    ]),
    Spec::new(&["diff"], GNU, &[
        Opt::flag(&["-r", "--recursive"]).role(Role::Recursive(None)),
        Opt::value(&["-C"]), Opt::optional(&["--context"]), Opt::value(&["-U"]), Opt::optional(&["--unified"]),
        Opt::value(&["-W", "--width"]), Opt::value(&["-F", "--show-function-line"]), Opt::value(&["--tabsize"]),
        Opt::value(&["-x", "--exclude"]), Opt::value(&["-X", "--exclude-from"]), Opt::value(&["-S", "--starting-file"]),
        Opt::value(&["-I", "--ignore-matching-lines"]),
        // Folders compared whole, files one side lacks read too, one file against each operand.
        Opt::flag(&["-N", "--new-file"]).risk(&UNNAMED_INPUT), Opt::flag(&["--unidirectional-new-file"]).risk(&UNNAMED_INPUT),
        Opt::value(&["--from-file"]).risk(&UNNAMED_INPUT), Opt::value(&["--to-file"]).risk(&UNNAMED_INPUT),
        Opt::value(&["--label"]), Opt::optional(&["--color"]), Opt::value(&["--palette"]),
        Opt::value(&["--line-format"]), Opt::value(&["--old-line-format"]), Opt::value(&["--new-line-format"]),
        Opt::value(&["--unchanged-line-format"]), Opt::value(&["--old-group-format"]), Opt::value(&["--new-group-format"]),
        Opt::value(&["--changed-group-format"]), Opt::value(&["--unchanged-group-format"]), Opt::value(&["--horizon-lines"]),
    ]),
    Spec::new(&["date"], GNU, &[
        Opt::value(&["-s", "--set"]).role(Role::Writes), Opt::value(&["-d", "--date"]), Opt::value(&["-f", "--file"]),
        Opt::optional(&["-I", "--iso-8601"]), Opt::value(&["--rfc-3339"]), Opt::value(&["-r", "--reference"]),
        Opt::flag(&["-R", "--rfc-email"]), Opt::flag(&["-u", "--utc", "--universal"]), Opt::flag(&["--debug"]),
    ]),
    Spec::new(&["head", "tail"], GNU, &[
        Opt::value(&["-c", "--bytes"]), Opt::value(&["-n", "--lines"]), Opt::optional(&["-f", "--follow"]),
        Opt::flag(&["-F"]), Opt::value(&["--max-unchanged-stats"]), Opt::value(&["--pid"]),
        Opt::value(&["-s", "--sleep-interval"]), Opt::flag(&["-q", "--quiet", "--silent"]), Opt::flag(&["-v", "--verbose"]),
        Opt::flag(&["-z", "--zero-terminated"]),
    ]),
    // man-db's man: `-P`/`--pager` and `-H`/`--html` run the program named.
    Spec::new(&["man"], GNU, &[
        Opt::value(&["-P", "--pager"]).risk(&PAGER), Opt::optional(&["-H", "--html"]).risk(&PAGER),
        Opt::optional(&["-X", "--gxditview"]).risk(&PAGER), Opt::value(&["-C", "--config-file"]).risk(&PAGER),
        Opt::value(&["-M", "--manpath"]), Opt::value(&["-S", "-s", "--sections"]), Opt::value(&["-m", "--systems"]),
        Opt::value(&["-L", "--locale"]), Opt::value(&["-E", "--encoding"]), Opt::value(&["-R", "--recode"]),
        Opt::value(&["-p", "--preprocessor"]).risk(&PAGER), Opt::optional(&["-T", "--troff-device"]),
        Opt::value(&["-r", "--prompt"]), Opt::value(&["-e", "--extension"]),
        Opt::flag(&["-a", "--all"]), Opt::flag(&["-f", "--whatis"]), Opt::flag(&["-k", "--apropos"]),
        Opt::flag(&["-K", "--global-apropos"]), Opt::flag(&["-l", "--local-file"]).risk(&MAN_LOCAL), Opt::flag(&["-w", "--where", "--path", "--location"]),
        Opt::flag(&["-t", "--troff"]), Opt::flag(&["-Z", "--ditroff"]),
    ]),
    // less reads its long options with its own abbreviation rules; `-o`/`-O` keep a log file.
    Spec::new(&["less", "more"], GNU, &[
        Opt::value(&["-o", "--log-file"]).role(Role::Writes).risk(&OUTPUT_FILE),
        Opt::value(&["-O", "--LOG-FILE"]).role(Role::Writes).risk(&OUTPUT_FILE),
        Opt::value(&["-b", "--buffers"]), Opt::value(&["-h", "--max-back-scroll"]), Opt::value(&["-j", "--jump-target"]),
        // A lesskey file can set LESSOPEN and other variables that make less run programs.
        Opt::value(&["-k", "--lesskey-file"]).risk(&RUNS_PROGRAM), Opt::value(&["--lesskey-src"]).risk(&RUNS_PROGRAM),
        Opt::value(&["--lesskey-content"]).risk(&RUNS_PROGRAM), Opt::value(&["-p", "--pattern"]), Opt::value(&["-P", "--prompt"]),
        Opt::value(&["-t", "--tag"]), Opt::value(&["-T", "--tag-file"]), Opt::value(&["-x", "--tabs"]),
        Opt::value(&["-y", "--max-forw-scroll"]), Opt::value(&["-z", "--window"]), Opt::value(&["-#", "--shift"]),
    ]),
    // Two programs answer to `yq`: python's (argparse takes any unambiguous prefix of a long
    // option: `--in-pl`) and go's (`--inplace`); the spec reads both, abbreviations included.
    Spec::new(&["yq"], GNU, &[
        Opt::flag(&["-i", "--inplace", "--in-place"]).role(Role::Writes).risk(&IN_PLACE),
        Opt::value(&["--from-file"]), Opt::value(&["-o", "--output-format"]), Opt::value(&["-p", "--input-format"]),
        Opt::value(&["--indent", "-I"]), Opt::value(&["--expression"]), Opt::value(&["--split-exp", "-s"]).role(Role::Writes).risk(&OUTPUT_FILE),
    ]),
    Spec::new(&["xxd"], Syntax::EXACT, &[
        Opt::flag(&["-r", "-revert"]).role(Role::Writes), Opt::value(&["-c", "-cols"]), Opt::value(&["-g", "-groupsize"]),
        Opt::value(&["-l", "-len"]), Opt::value(&["-o", "-offset"]), Opt::value(&["-s", "-seek"]), Opt::value(&["-n", "-name"]),
    ]),
    Spec::new(&["tree"], Syntax::EXACT, &[
        Opt::value(&["-o"]).role(Role::Writes).risk(&OUTPUT_FILE), Opt::value(&["-L"]), Opt::value(&["-P"]),
        // `-R` runs tree again in each folder with `-o 00Tree.html`.
        Opt::flag(&["-R"]).role(Role::Writes).risk(&OUTPUT_FILE),
        Opt::value(&["-I"]), Opt::value(&["--filelimit"]), Opt::value(&["--timefmt"]), Opt::value(&["-H"]),
        Opt::value(&["-T"]), Opt::value(&["--charset"]), Opt::value(&["--sort"]), Opt::value(&["--fromfile"]),
    ]),
    // `file -C` compiles a magic file into `magic.mgc`.
    Spec::new(&["file"], GNU, &[
        Opt::flag(&["-C", "--compile"]).role(Role::Writes), Opt::value(&["-m", "--magic-file"]),
        Opt::value(&["-f", "--files-from"]), Opt::value(&["-F", "--separator"]), Opt::value(&["-P", "--parameter"]),
        Opt::value(&["-e", "--exclude"]), Opt::value(&["--exclude-quiet"]),
    ]),
    Spec::new(&["info"], GNU, &[
        Opt::value(&["-o", "--output"]).role(Role::Writes).risk(&OUTPUT_FILE), Opt::value(&["-d", "--directory"]),
        Opt::value(&["-f", "--file"]), Opt::value(&["-n", "--node"]), Opt::value(&["--dribble"]).role(Role::Writes).risk(&OUTPUT_FILE),
        Opt::value(&["--restore"]), Opt::value(&["--init-file"]).risk(&RUNS_PROGRAM),
    ]),
    Spec::new(&["hostname"], GNU, &[
        Opt::value(&["-F", "--file"]).role(Role::Writes), Opt::flag(&["-a", "--alias"]), Opt::flag(&["-d", "--domain"]),
        Opt::flag(&["-f", "--fqdn", "--long"]), Opt::flag(&["-i", "--ip-address"]), Opt::flag(&["-I", "--all-ip-addresses"]),
        Opt::flag(&["-s", "--short"]), Opt::flag(&["-y", "--yp", "--nis"]), Opt::flag(&["-b", "--boot"]).role(Role::Writes),
    ]),
];
