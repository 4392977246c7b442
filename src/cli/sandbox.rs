//! `reasonix sandbox probe` and `reasonix sandbox exec`: what this machine can enforce, and any
//! command run in the very jail the bash tool uses.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use reasonix::HostFiles;
use reasonix::sandbox::Roots;
use reasonix::sandbox::jail::{self, Capture, NetRule, Plan, danger};
use serde_json::json;

#[derive(Subcommand)]
pub enum SandboxCommand {
    /// Print, as JSON, what this machine can enforce and what the configuration will enforce.
    Probe(PlanArgs),
    /// Run a command in the jail the bash tool uses; exit with its status (124 on timeout).
    Exec(ExecArgs),
}

#[derive(Args)]
pub struct PlanArgs {
    /// The workspace (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// A policy file or folder whose `sandbox:` sections configure the jail; repeat to merge
    /// (`builtin:default` is the embedded default). Without any, `policies:` of reasonix.yaml.
    #[arg(long = "policy", value_name = "PATH")]
    policies: Vec<PathBuf>,
    /// Also allow TCP connections to HOST:PORT (Landlock enforces the port only).
    #[arg(long = "allow-net", value_name = "HOST:PORT")]
    allow_net: Vec<String>,
}

#[derive(Args)]
pub struct ExecArgs {
    #[command(flatten)]
    plan: PlanArgs,
    /// Wall-clock limit in milliseconds (at most the configured one).
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// The plan a bash call would run under: the same configuration, and the same host files bound
/// read-only (the workspace's record and settings, and the policy files given). What the
/// project's untrusted files asked for is left out of it: `acts` (`sandbox exec`) then refuses
/// to run anything (exit 2), and `probe` says what it left out on stderr.
fn plan(args: &PlanArgs, acts: bool) -> anyhow::Result<Plan> {
    let workspace = super::workspace(args.workspace.as_deref())?;
    let settings = super::settled(&workspace)?;
    let canonical = settings.workspace().to_path_buf();
    let chosen = super::choose(
        &settings,
        &args.policies,
        &[],
        &super::FleetArgs::default(),
        "",
    )?;
    let mut left_out = settings.left_out().to_vec();
    left_out.extend(chosen.left_out.iter().cloned());
    if let Some(message) = reasonix::settings::untrusted_message(&canonical, &left_out) {
        if acts {
            anyhow::bail!("{message}; nothing ran");
        }
        super::warn_lines(&message);
    }
    let mut config = chosen.set.jail();
    for rule in &args.allow_net {
        let rule = NetRule::try_from(rule.clone()).map_err(anyhow::Error::msg)?;
        if !config.network.contains(&rule) {
            config.network.push(rule);
        }
    }
    let roots = Roots::new(&canonical).context("cannot use the workspace")?;
    let ws = roots.workspace();
    let host = HostFiles::for_workspace(ws).with_record(super::record_path(&settings, None)?);
    let mut files = settings.host_files();
    files.extend(chosen.files.iter().cloned());
    let host = host.with_files(files);
    Ok(Plan::new(&config, ws, roots.home()).with_host_files(host.all()))
}

pub fn run(command: SandboxCommand) -> anyhow::Result<ExitCode> {
    match command {
        SandboxCommand::Probe(args) => {
            let plan = plan(&args, false)?;
            let out = json!({
                "machine": jail::capabilities(),
                "plan": plan.view(),
            });
            let mut stdout = super::out::Stdout::plain();
            serde_json::to_writer_pretty(&mut stdout, &out)?;
            writeln!(stdout)?;
            stdout.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        SandboxCommand::Exec(args) => {
            let plan = plan(&args.plan, true)?;
            let timeout = args.timeout_ms.map(Duration::from_millis);
            // The user's own command, typed at a terminal: no gate judges it, the jail applies.
            match danger::exec_unjudged(&plan, &args.command, timeout, Capture::Inherit) {
                Ok(result) => {
                    // Each connection through the egress proxy, as the record would have it.
                    for connection in &result.connections {
                        if let Ok(line) = serde_json::to_string(connection) {
                            eprintln!("reasonix: {line}");
                        }
                    }
                    if let Some(line) = result.not_enforced_line() {
                        eprintln!("reasonix: {line}");
                    }
                    if result.exit == jail::Exit::TimedOut {
                        eprintln!(
                            "reasonix: timed out after {} ms; the process group was killed",
                            result.duration.as_millis()
                        );
                    }
                    Ok(ExitCode::from(result.exit.code().clamp(0, 255) as u8))
                }
                Err(e) => {
                    eprintln!("reasonix: {e}");
                    Ok(ExitCode::from(126))
                }
            }
        }
    }
}
