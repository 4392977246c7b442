//! The jail alone, in an executable of its own: the floor of the launcher that issue 30's first
//! target asks about. It links only what a run of the jail reaches (about 2.8 MB of code, and
//! 0.16 MB of relocated pointers against the gateway's 2 MB), and does what `reasonix sandbox
//! exec` does after reading its settings: probe the machine, compute the plan (the default
//! `sandbox:` configuration, for the workspace), run the command in it, remove the plan's
//! folder. No settings, policy, trust, lease or egress proxy: it measures the jail, and it is
//! no way to run anything (`reasonix sandbox exec` is).
//!
//! `benches/bubblewrap.sh` times it as a row beside bubblewrap when `JAIL_ALONE=path` names it.
//!
//! Usage: `jail_alone [--phases] [--keep DIR] [--workspace DIR] CMD [ARGS...]` (the workspace:
//! the current folder unless given; with `--keep`, the probe's answer is kept in that folder and
//! taken from it, as the CLI keeps it in the state folder) — with `--phases`, prints on stderr the
//! microseconds of each part: the probe alone (made first, the network namespace tried, as
//! `sandbox probe` makes it; the plan reuses it, but makes its cgroups again), the plan, the
//! run (the command's own start-up and exit included) and the plan's removal.

use std::time::Instant;

use reasonix::sandbox::Roots;
use reasonix::sandbox::jail::{Capture, JailConfig, JailPlan, capabilities, danger};

fn main() {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    let phases = argv.first().is_some_and(|a| a == "--phases");
    if phases {
        argv.remove(0);
    }
    if argv.first().is_some_and(|a| a == "--keep") && argv.len() > 1 {
        reasonix::sandbox::jail::keep_answers_in(argv.remove(1).into());
        argv.remove(0);
    }
    let mut workspace = std::env::current_dir().expect("the current folder");
    if argv.first().is_some_and(|a| a == "--workspace") && argv.len() > 1 {
        workspace = argv.remove(1).into();
        argv.remove(0);
    }
    if argv.is_empty() {
        eprintln!("usage: jail_alone [--phases] [--keep DIR] [--workspace DIR] CMD [ARGS...]");
        std::process::exit(2);
    }
    let workspace = workspace.canonicalize().expect("the workspace");
    let roots = Roots::new(&workspace).expect("the workspace");
    let start = Instant::now();
    if phases {
        let _ = capabilities();
    }
    let probed = start.elapsed();
    let plan = JailPlan::new(&JailConfig::default(), roots.workspace(), roots.home());
    let planned = start.elapsed();
    let result = danger::exec_unjudged(&plan, &argv, None, Capture::Inherit);
    let ran = start.elapsed();
    drop(plan);
    let removed = start.elapsed();
    if phases {
        eprintln!(
            "probe {} us, plan {} us, run {} us, removal {} us",
            probed.as_micros(),
            (planned - probed).as_micros(),
            (ran - planned).as_micros(),
            (removed - ran).as_micros()
        );
    }
    match result {
        Ok(result) => std::process::exit(result.exit.code().clamp(0, 255)),
        Err(e) => {
            eprintln!("jail_alone: {e}");
            std::process::exit(126);
        }
    }
}
