//! Option specs of the archivers: the options that make `tar` run a program, whatever way
//! tar accepts them — `-I PROG`, `-IPROG`, `--use-compress-p=PROG`, an old-style cluster
//! without a dash whose values follow in order (`tar cIf PROG out.tar src`), and every
//! unambiguous prefix of `--checkpoint-action`, `--to-command`, `--info-script`… (all run on
//! this machine: GNU tar 1.34).

use super::spec::{Opt, Risk, Role, Spec, Syntax};

/// A tar option that runs a program.
pub const TAR_PROGRAM: Risk = Risk {
    id: "tar_program",
    why: "this tar option runs a program",
};
/// A zip option that runs a program.
pub const ZIP_PROGRAM: Risk = Risk {
    id: "tar_program",
    why: "zip -TT/--unzip-command runs the program named to test the archive",
};

const TAR: Syntax = Syntax {
    old_letters: true,
    ..Syntax::GNU
};

/// The archiver specs.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["tar", "gtar"], TAR, &[
        Opt::value(&["-I", "--use-compress-program"]).risk(&TAR_PROGRAM), Opt::value(&["--to-command"]).risk(&TAR_PROGRAM),
        Opt::value(&["--checkpoint-action"]).risk(&TAR_PROGRAM), Opt::value(&["-F", "--info-script", "--new-volume-script"]).risk(&TAR_PROGRAM),
        Opt::value(&["--rsh-command"]).risk(&TAR_PROGRAM), Opt::value(&["--rmt-command"]).risk(&TAR_PROGRAM),
        Opt::value(&["-f", "--file"]), Opt::value(&["-C", "--directory"]).role(Role::Folder), Opt::value(&["-T", "--files-from"]),
        Opt::value(&["-X", "--exclude-from"]), Opt::value(&["-g", "--listed-incremental"]).role(Role::Writes).risk(&super::files::OUTPUT_FILE), Opt::value(&["-b", "--blocking-factor"]),
        Opt::value(&["-H", "--format"]), Opt::value(&["-K", "--starting-file"]), Opt::value(&["-L", "--tape-length"]),
        Opt::value(&["-N", "--newer", "--after-date"]), Opt::value(&["-V", "--label"]), Opt::value(&["--add-file"]),
        Opt::value(&["--exclude"]), Opt::value(&["--exclude-ignore"]), Opt::value(&["--exclude-ignore-recursive"]),
        Opt::value(&["--exclude-tag"]), Opt::value(&["--exclude-tag-all"]), Opt::value(&["--exclude-tag-under"]),
        Opt::value(&["--group"]), Opt::value(&["--group-map"]), Opt::value(&["--hole-detection"]),
        Opt::value(&["--index-file"]).role(Role::Writes).risk(&super::files::OUTPUT_FILE), Opt::value(&["--level"]), Opt::value(&["--mode"]), Opt::value(&["--mtime"]),
        Opt::value(&["--newer-mtime"]), Opt::value(&["--owner"]), Opt::value(&["--owner-map"]), Opt::value(&["--pax-option"]),
        Opt::value(&["--quote-chars"]), Opt::value(&["--no-quote-chars"]), Opt::value(&["--quoting-style"]),
        Opt::value(&["--record-size"]), Opt::value(&["--sort"]), Opt::value(&["--sparse-version"]),
        Opt::value(&["--strip-components"]), Opt::value(&["--suffix"]), Opt::value(&["--transform", "--xform"]),
        Opt::value(&["--volno-file"]), Opt::value(&["--warning"]), Opt::value(&["--xattrs-exclude"]), Opt::value(&["--xattrs-include"]),
        Opt::optional(&["--atime-preserve"]), Opt::optional(&["--backup"]), Opt::optional(&["--checkpoint"]),
        Opt::optional(&["--occurrence"]), Opt::optional(&["--one-top-level"]), Opt::optional(&["--totals"]),
        Opt::flag(&["-A", "--catenate", "--concatenate"]), Opt::flag(&["-c", "--create"]), Opt::flag(&["-d", "--diff", "--compare"]),
        Opt::flag(&["--delete"]), Opt::flag(&["-r", "--append"]), Opt::flag(&["-t", "--list"]), Opt::flag(&["--test-label"]),
        Opt::flag(&["-u", "--update"]), Opt::flag(&["-x", "--extract", "--get"]), Opt::flag(&["-G", "--incremental"]),
        Opt::flag(&["-n", "--seek"]), Opt::flag(&["--no-seek"]), Opt::flag(&["-S", "--sparse"]), Opt::flag(&["-k", "--keep-old-files"]),
        Opt::flag(&["--keep-newer-files"]), Opt::flag(&["--keep-directory-symlink"]), Opt::flag(&["--no-overwrite-dir"]),
        Opt::flag(&["--overwrite"]), Opt::flag(&["--overwrite-dir"]), Opt::flag(&["--recursive-unlink"]), Opt::flag(&["--remove-files"]),
        Opt::flag(&["--skip-old-files"]), Opt::flag(&["-U", "--unlink-first"]), Opt::flag(&["-W", "--verify"]),
        Opt::flag(&["--ignore-command-error"]), Opt::flag(&["--no-ignore-command-error"]), Opt::flag(&["-O", "--to-stdout"]),
        Opt::flag(&["--clamp-mtime"]), Opt::flag(&["--delay-directory-restore"]), Opt::flag(&["--no-delay-directory-restore"]),
        Opt::flag(&["-m", "--touch"]), Opt::flag(&["--no-same-owner"]), Opt::flag(&["--no-same-permissions"]),
        Opt::flag(&["--numeric-owner"]), Opt::flag(&["-p", "--preserve-permissions", "--same-permissions"]),
        Opt::flag(&["--same-owner"]), Opt::flag(&["-s", "--preserve-order", "--same-order"]), Opt::flag(&["--acls"]),
        Opt::flag(&["--no-acls"]), Opt::flag(&["--selinux"]), Opt::flag(&["--no-selinux"]), Opt::flag(&["--xattrs"]),
        Opt::flag(&["--no-xattrs"]), Opt::flag(&["--force-local"]), Opt::flag(&["-M", "--multi-volume"]),
        Opt::flag(&["-B", "--read-full-records"]), Opt::flag(&["-i", "--ignore-zeros"]), Opt::flag(&["--old-archive", "--portability"]),
        Opt::flag(&["--posix"]), Opt::flag(&["-a", "--auto-compress"]), Opt::flag(&["--no-auto-compress"]),
        Opt::flag(&["-j", "--bzip2"]), Opt::flag(&["-J", "--xz"]), Opt::flag(&["--lzip"]), Opt::flag(&["--lzma"]),
        Opt::flag(&["--lzop"]), Opt::flag(&["-z", "--gzip", "--gunzip", "--ungzip"]), Opt::flag(&["-Z", "--compress", "--uncompress"]),
        Opt::flag(&["--zstd"]), Opt::flag(&["--anchored"]), Opt::flag(&["--no-anchored"]), Opt::flag(&["--exclude-backups"]),
        Opt::flag(&["--exclude-caches"]), Opt::flag(&["--exclude-caches-all"]), Opt::flag(&["--exclude-caches-under"]),
        Opt::flag(&["--exclude-vcs"]), Opt::flag(&["--exclude-vcs-ignores"]), Opt::flag(&["--ignore-case"]),
        Opt::flag(&["--no-ignore-case"]), Opt::flag(&["--no-null"]), Opt::flag(&["--null"]), Opt::flag(&["--no-recursion"]),
        Opt::flag(&["--recursion"]), Opt::flag(&["--no-unquote"]), Opt::flag(&["--unquote"]), Opt::flag(&["--no-verbatim-files-from"]),
        Opt::flag(&["--verbatim-files-from"]), Opt::flag(&["--no-wildcards"]), Opt::flag(&["--wildcards"]),
        Opt::flag(&["--no-wildcards-match-slash"]), Opt::flag(&["--wildcards-match-slash"]), Opt::flag(&["-h", "--dereference"]),
        Opt::flag(&["--hard-dereference"]), Opt::flag(&["-P", "--absolute-names"]), Opt::flag(&["--one-file-system"]),
        Opt::flag(&["-l", "--check-links"]), Opt::flag(&["--full-time"]), Opt::flag(&["--utc"]), Opt::flag(&["-v", "--verbose"]),
        Opt::flag(&["-R", "--block-number"]), Opt::flag(&["-w", "--interactive", "--confirmation"]), Opt::flag(&["--restrict"]),
        Opt::flag(&["--show-defaults"]), Opt::flag(&["--show-omitted-dirs"]), Opt::flag(&["--show-snapshot-field-ranges"]),
        Opt::flag(&["--show-stored-names"]), Opt::flag(&["--show-transformed-names"]), Opt::flag(&["--check-device"]),
        Opt::flag(&["--no-check-device"]), Opt::flag(&["--ignore-failed-read"]), Opt::flag(&["--help", "-?"]),
        Opt::flag(&["--usage"]), Opt::flag(&["--version"]),
    ]),
    // bsdtar: no abbreviations, but the same program-running options.
    Spec::new(&["bsdtar"], Syntax { old_letters: true, ..Syntax::EXACT }, &[
        Opt::value(&["--use-compress-program"]).risk(&TAR_PROGRAM), Opt::value(&["-f", "--file"]),
        Opt::value(&["-C", "--cd", "--directory"]).role(Role::Folder), Opt::value(&["-T", "--files-from"]),
        Opt::value(&["-X", "--exclude-from"]), Opt::value(&["-s"]), Opt::value(&["--options"]), Opt::value(&["--format"]),
    ]),
    // zip's own parser: `-TT cmd` (two letters) and `--unzip-command` run the tester.
    Spec::new(&["zip"], Syntax { clusters: false, ..Syntax::EXACT }, &[
        Opt::value(&["-TT", "--unzip-command"]).risk(&ZIP_PROGRAM), Opt::value(&["-b", "--temp-path"]),
        Opt::value(&["-n", "--suffixes"]), Opt::value(&["-x", "--exclude"]), Opt::value(&["-i", "--include"]),
        Opt::value(&["-t", "--from-date"]), Opt::value(&["-tt", "--before-date"]), Opt::value(&["-O", "--output-file"]),
        Opt::value(&["-P", "--password"]), Opt::value(&["-s", "--split-size"]), Opt::value(&["-Z", "--compression-method"]),
    ]),
];
