//! Option specs of the shell builtins whose options change what later commands run: `enable
//! -f` loads a builtin from a shared object, `hash -p` makes a name run another file.

use super::spec::{Opt, Risk, Spec, Syntax};

/// `enable -f`.
pub const LOADS_BUILTIN: Risk = Risk {
    id: "loads_code",
    why: "enable -f loads a builtin from a shared object",
};
/// `hash -p`.
pub const COMMAND_PATH: Risk = Risk {
    id: "command_path",
    why: "hash -p makes a command name run another file",
};

/// The builtin specs (bash's own option parser: no long options).
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    Spec::new(&["enable"], Syntax::EXACT_STOP, &[
        Opt::value(&["-f"]).risk(&LOADS_BUILTIN), Opt::flag(&["-a"]), Opt::flag(&["-d"]), Opt::flag(&["-n"]),
        Opt::flag(&["-p"]), Opt::flag(&["-s"]),
    ]),
    Spec::new(&["hash"], Syntax::EXACT_STOP, &[
        Opt::value(&["-p"]).risk(&COMMAND_PATH), Opt::flag(&["-r"]), Opt::flag(&["-d"]), Opt::flag(&["-l"]), Opt::flag(&["-t"]),
    ]),
];
