//! Option specs of the programs that reach other machines: `ssh`, `scp`, `sftp`, `rsync`,
//! `curl`. Their hazards are the options that run a local program (`ssh -o ProxyCommand=…`,
//! a configuration file, `scp -S PROG`, `rsync -e PROG`); the rest are listed so that values
//! are not read as operands.

use super::spec::{Opt, Risk, Role, Spec, Syntax};

/// An option that runs a local program or reads a configuration that may.
pub const REMOTE_PROGRAM: Risk = Risk {
    id: "remote_program",
    why: "this option runs a local program (ProxyCommand, LocalCommand, a shell, a configuration that names one)",
};

/// OpenSSH: no long options; ssh reads options again after the host (`ssh host -o X=y cmd`),
/// so options count anywhere.
const OPENSSH: Syntax = Syntax::EXACT;

/// The remote tool specs.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["ssh"], OPENSSH, &[
        Opt::value(&["-o"]).risk(&REMOTE_PROGRAM), Opt::value(&["-F"]).risk(&REMOTE_PROGRAM),
        Opt::value(&["-S"]).risk(&REMOTE_PROGRAM), Opt::value(&["-b"]), Opt::value(&["-c"]), Opt::value(&["-D"]),
        Opt::value(&["-E"]), Opt::value(&["-e"]), Opt::value(&["-I"]), Opt::value(&["-i"]), Opt::value(&["-J"]),
        Opt::value(&["-L"]), Opt::value(&["-l"]), Opt::value(&["-m"]), Opt::value(&["-O"]), Opt::value(&["-p"]),
        Opt::value(&["-Q"]), Opt::value(&["-R"]), Opt::value(&["-W"]), Opt::value(&["-w"]), Opt::value(&["-B"]),
        Opt::value(&["-P"]),
    ]),
    Spec::new(&["scp"], OPENSSH, &[
        Opt::value(&["-o"]).risk(&REMOTE_PROGRAM), Opt::value(&["-F"]).risk(&REMOTE_PROGRAM),
        Opt::value(&["-S"]).risk(&REMOTE_PROGRAM), Opt::value(&["-c"]), Opt::value(&["-D"]), Opt::value(&["-i"]),
        Opt::value(&["-J"]), Opt::value(&["-l"]), Opt::value(&["-P"]), Opt::value(&["-X"]),
    ]),
    Spec::new(&["sftp"], OPENSSH, &[
        Opt::value(&["-o"]).risk(&REMOTE_PROGRAM), Opt::value(&["-F"]).risk(&REMOTE_PROGRAM),
        Opt::value(&["-S"]).risk(&REMOTE_PROGRAM), Opt::value(&["-D"]).risk(&REMOTE_PROGRAM),
        Opt::value(&["-b"]).risk(&REMOTE_PROGRAM), Opt::value(&["-B"]), Opt::value(&["-c"]), Opt::value(&["-i"]),
        Opt::value(&["-J"]), Opt::value(&["-l"]), Opt::value(&["-P"]), Opt::value(&["-R"]), Opt::value(&["-s"]),
        Opt::value(&["-X"]),
    ]),
    Spec::new(&["rsync"], Syntax::EXACT, &[
        Opt::value(&["-e", "--rsh"]).risk(&REMOTE_PROGRAM), Opt::value(&["--rsync-path"]).risk(&REMOTE_PROGRAM),
        Opt::value(&["--exclude"]), Opt::value(&["--include"]), Opt::value(&["--exclude-from"]), Opt::value(&["--include-from"]),
        Opt::value(&["--files-from"]), Opt::value(&["-f", "--filter"]), Opt::value(&["--log-file"]).role(Role::Writes),
        Opt::value(&["--password-file"]), Opt::value(&["--port"]), Opt::value(&["-T", "--temp-dir"]), Opt::value(&["--partial-dir"]),
        Opt::value(&["--backup-dir"]), Opt::value(&["--suffix"]), Opt::value(&["--chmod"]), Opt::value(&["--chown"]),
        Opt::value(&["--usermap"]), Opt::value(&["--groupmap"]), Opt::value(&["--timeout"]), Opt::value(&["--contimeout"]),
        Opt::value(&["--bwlimit"]), Opt::value(&["--compare-dest"]), Opt::value(&["--copy-dest"]), Opt::value(&["--link-dest"]),
        Opt::value(&["-B", "--block-size"]), Opt::value(&["--max-size"]), Opt::value(&["--min-size"]), Opt::value(&["--max-delete"]),
        Opt::value(&["--modify-window"]), Opt::value(&["--out-format"]), Opt::value(&["--log-file-format"]), Opt::value(&["--info"]),
        Opt::value(&["--debug"]), Opt::value(&["--sockopts"]), Opt::value(&["--checksum-choice", "--cc"]),
        Opt::value(&["--compress-choice", "--zc"]), Opt::value(&["--compress-level", "--zl"]), Opt::value(&["--skip-compress"]),
        Opt::value(&["--iconv"]), Opt::value(&["-M", "--remote-option"]).risk(&REMOTE_PROGRAM),
        Opt::value(&["--write-batch"]).role(Role::Writes), Opt::value(&["--only-write-batch"]).role(Role::Writes),
        Opt::value(&["--read-batch"]), Opt::value(&["--config"]), Opt::value(&["--address"]),
    ]),
    Spec::new(&["curl"], Syntax::GNU, &[
        Opt::value(&["-o", "--output"]).role(Role::Writes), Opt::value(&["--output-dir"]), Opt::value(&["-d", "--data"]),
        Opt::value(&["--data-binary"]), Opt::value(&["--data-raw"]), Opt::value(&["--data-urlencode"]),
        Opt::value(&["--data-ascii"]), Opt::value(&["--json"]), Opt::value(&["--variable"]),
        Opt::value(&["-K", "--config"]).risk(&REMOTE_PROGRAM), Opt::value(&["-H", "--header"]), Opt::value(&["-X", "--request"]),
        Opt::value(&["-u", "--user"]), Opt::value(&["-x", "--proxy"]), Opt::value(&["-A", "--user-agent"]),
        Opt::value(&["-e", "--referer"]), Opt::value(&["-b", "--cookie"]), Opt::value(&["-c", "--cookie-jar"]).role(Role::Writes),
        Opt::value(&["-T", "--upload-file"]), Opt::value(&["-F", "--form"]), Opt::value(&["-w", "--write-out"]),
        Opt::value(&["-m", "--max-time"]), Opt::value(&["--connect-timeout"]), Opt::value(&["-r", "--range"]),
        Opt::value(&["-D", "--dump-header"]).role(Role::Writes), Opt::value(&["--trace"]).role(Role::Writes),
        Opt::value(&["--trace-ascii"]).role(Role::Writes), Opt::value(&["--stderr"]).role(Role::Writes),
        Opt::value(&["--cacert"]), Opt::value(&["--cert", "-E"]), Opt::value(&["--key"]), Opt::value(&["--resolve"]),
        Opt::value(&["--retry"]), Opt::value(&["-Y", "--speed-limit"]), Opt::value(&["-y", "--speed-time"]),
        Opt::flag(&["-O", "--remote-name"]).role(Role::Writes), Opt::flag(&["-L", "--location"]), Opt::flag(&["-s", "--silent"]),
        Opt::flag(&["-S", "--show-error"]), Opt::flag(&["-f", "--fail"]), Opt::flag(&["-k", "--insecure"]),
        Opt::flag(&["-v", "--verbose"]), Opt::flag(&["-I", "--head"]), Opt::flag(&["-i", "--include"]),
        Opt::flag(&["-G", "--get"]), Opt::flag(&["-J", "--remote-header-name"]), Opt::flag(&["-#", "--progress-bar"]),
    ]),
];
