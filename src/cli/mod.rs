//! The command line. Each command lives in its own module; this one parses arguments, maps
//! errors to exit status 2 and prints them the way a user can act on.
//!
//! Exit status of `check` (DESIGN.md): 0 all allow, 10 some ask, 20 some deny, 30 some invalid,
//! 2 usage or configuration error; of `run`: 0 finished, 3 max steps, 4 provider failed. clap's
//! own usage errors exit 2 as well.

mod check;
mod policy;
mod render;
mod run;
mod sandbox;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use reasonix::agent::config::RunConfig;
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry};

/// Exit status for a usage or configuration error.
pub const EXIT_CONFIG: u8 = 2;

#[derive(Parser)]
#[command(
    name = "reasonix",
    version,
    about = "A policy-as-code permission and sandbox gateway for LLM agent tool calls",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Dry-run proposed tool calls through the gate and print each verdict.
    Check(check::CheckArgs),
    /// Run the agent on a prompt: the model proposes calls, the gate judges them, the jail runs
    /// them, and the execution record says what happened.
    Run(run::RunArgs),
    /// Test and check policies.
    Policy {
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
    /// Inspect and use the OS jail.
    Sandbox {
        #[command(subcommand)]
        command: sandbox::SandboxCommand,
    },
}

/// Runs the command line.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Run(args) => run::run(args),
        Command::Policy { command } => policy::run(command),
        Command::Sandbox { command } => sandbox::run(command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let mut stderr = anstream::stderr();
            let style = anstyle::Style::new()
                .bold()
                .fg_color(Some(anstyle::AnsiColor::Red.into()));
            let _ = std::io::Write::write_fmt(
                &mut stderr,
                format_args!("{style}error{style:#}: {e:#}\n"),
            );
            ExitCode::from(EXIT_CONFIG)
        }
    }
}

/// `--workspace`, or the current folder.
fn workspace(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(w) => Ok(w.to_path_buf()),
        None => std::env::current_dir().context("cannot read the current folder"),
    }
}

/// The `--policy` and `--data` files, or the embedded default policy when none is given.
/// `refused` says what a policy that does not load stops.
fn policy(policies: &[PathBuf], data: &[PathBuf], refused: &str) -> anyhow::Result<PolicySet> {
    if policies.is_empty() && data.is_empty() {
        return Ok(PolicySet::embedded_default());
    }
    PolicySet::load_with(policies, data, false)
        .with_context(|| format!("the policy does not load{refused}"))
}

/// What every entry point needs to build its gate.
struct GateSpec<'a> {
    /// The workspace, as given.
    workspace: &'a Path,
    /// The policies in force.
    policy: &'a PolicySet,
    /// The `--policy` paths (host files).
    policies: &'a [PathBuf],
    /// The `--data` paths (host files).
    data: &'a [PathBuf],
    /// `--record`, if given.
    record: Option<&'a Path>,
    /// Who answers asks.
    posture: Posture,
    /// `--explain`.
    explain: bool,
}

/// The one way the command line builds a gate, for `check`, `run` and `policy test` alike: the
/// workspace's settings (`reasonix.yaml`) name the record, and the record, the settings and the
/// policy and data files are the host's own files no call may change. So a dry run protects
/// exactly what a live run protects. Returns the gate with its settings.
fn gate(spec: GateSpec<'_>) -> anyhow::Result<(Gate, RunConfig)> {
    let workspace = spec
        .workspace
        .canonicalize()
        .with_context(|| format!("the workspace {} does not exist", spec.workspace.display()))?;
    let settings = RunConfig::load(&workspace).map_err(anyhow::Error::msg)?;
    let record = match (spec.record, &settings.record) {
        (Some(r), _) => Some(absolute(r)?),
        (None, Some(r)) => Some(workspace.join(r)),
        (None, None) => None,
    };
    let mut host = HostFiles::for_workspace(&workspace);
    if let Some(record) = record {
        host = host.with_record(record);
    }
    let mut files = RunConfig::files(&workspace);
    for p in spec.policies.iter().chain(spec.data) {
        files.push(absolute(p)?);
    }
    let gate = Gate::builder(Registry::with_builtins(), spec.policy, &workspace)
        .posture(spec.posture)
        .explain(spec.explain)
        .host_files(host.with_files(files))
        .build()
        .context("cannot set up the gate")?;
    Ok((gate, settings))
}

/// `p` made absolute from the current folder.
fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}
