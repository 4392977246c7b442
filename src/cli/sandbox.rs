//! `reasonix sandbox probe` and `reasonix sandbox exec`: what this machine can enforce, and any
//! command run in the very jail the bash tool uses.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use reasonix::HostFiles;
use reasonix::effects;
use reasonix::sandbox::Roots;
use reasonix::sandbox::jail::{self, Capture, JailPlan, NetRule, Writes, danger};
use serde_json::json;

/// How `sandbox exec --observe` writes its change list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ObserveFormat {
    /// Lines on stderr, after the command's own output.
    Text,
    /// One JSON document on stdout, after the command's own output.
    Json,
}

/// `sandbox exec --observe`'s exit status when the command's changes were refused and
/// discarded (the command itself ran).
pub const DISCARDED: u8 = 125;

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
    /// Run on an overlay of the workspace and write roots, as a bash writer does: afterwards
    /// each change is judged by the policy as the file tool that would make it, then all land
    /// or none (an ask becomes `defaults.unattended`; exit 125 when the changes were refused).
    /// The change list goes to stderr, or to stdout as one JSON document with `--format json`.
    #[arg(long, conflicts_with = "read_only")]
    observe: bool,
    /// Run with the workspace and write roots read-only, as a bash call admitted as read-only
    /// does (a write gets EROFS); what a rule protects from reading is covered.
    #[arg(long)]
    read_only: bool,
    /// With `--observe`: how the change list is written.
    #[arg(long, value_enum, default_value = "text", requires = "observe")]
    format: ObserveFormat,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// The plan a bash call would run under: the same configuration, and the same host files bound
/// read-only (the workspace's record and settings, and the policy files given). What the
/// project's untrusted files asked for is left out of it: `acts` (`sandbox exec`) then refuses
/// to run anything (exit 2), and `probe` says what it left out on stderr.
fn plan(args: &PlanArgs, acts: bool) -> anyhow::Result<JailPlan> {
    planned(args, acts).map(|p| p.jail)
}

/// A plan, with the policy and the roots it was made for.
struct Planned {
    jail: JailPlan,
    set: reasonix::PolicySet,
    roots: Roots,
}

impl Planned {
    /// What the policy protects from reading (for `bash`): what every run covers, as in a bash
    /// call's jail.
    fn protected(&self) -> anyhow::Result<reasonix::policy::PathFilter> {
        let compiled = self
            .set
            .compile(&self.roots)
            .context("cannot compile the policy")?;
        Ok(std::sync::Arc::new(compiled)
            .withholding("bash", &[reasonix::vocab::Effect::Read].into()))
    }
}

/// [`plan`], with the policy and the roots.
fn planned(args: &PlanArgs, acts: bool) -> anyhow::Result<Planned> {
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
    Ok(Planned {
        jail: JailPlan::new(&config, ws, roots.home()).with_host_files(host.all()),
        set: chosen.set,
        roots,
    })
}

pub fn run(command: SandboxCommand) -> anyhow::Result<ExitCode> {
    match command {
        SandboxCommand::Probe(args) => {
            // The diagnostic tries every part, whatever answer is kept (and keeps what it finds).
            jail::try_afresh();
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
        SandboxCommand::Exec(args) if args.observe || args.read_only => observe(&args),
        SandboxCommand::Exec(args) => {
            let planned = planned(&args.plan, true)?;
            let plan = &planned.jail;
            // Taken only for a command that will run.
            let _lease = match plan.refusal() {
                None => Some(workspace_lease(&args)?),
                Some(_) => None,
            };
            let timeout = args.timeout_ms.map(Duration::from_millis);
            // The user's own command, typed at a terminal: no gate judges it, the jail applies,
            // with what the policy protects from reading covered, as in a bash call's jail.
            let shape = planned.protected()?.shape(plan, Writes::Direct);
            match danger::exec_unjudged_shaped(
                plan,
                &args.command,
                timeout,
                Capture::Inherit,
                &shape,
            ) {
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

/// The workspace held exclusively while a command runs and its changes land, as a bash writer
/// of a run holds it: across processes too, so that a `reasonix run` or `mcp serve` on the same
/// workspace never edits a file under it (issue 28, item 8).
fn workspace_lease(args: &ExecArgs) -> anyhow::Result<reasonix::lease::Lease> {
    let workspace = super::workspace(args.plan.workspace.as_deref())?;
    let leases = super::leases(&workspace);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    Ok(runtime.block_on(leases.acquire(reasonix::lease::Need::Workspace))?)
}

/// `sandbox exec --observe` (or `--read-only`): the command on an overlay, its changes judged
/// by the policy (the gate every entry point builds, under the unattended posture: nobody is
/// asked mid-command), then landed all or none — or on a read-only workspace; either way what a
/// rule protects from reading is covered, as for a bash call.
fn observe(args: &ExecArgs) -> anyhow::Result<ExitCode> {
    let plan = plan(&args.plan, true)?;
    let _lease = match plan.refusal() {
        None => Some(workspace_lease(args)?),
        Some(_) => None,
    };
    let workspace = super::workspace(args.plan.workspace.as_deref())?;
    let fleet = super::FleetArgs::default();
    let built = super::gate(super::GateSpec {
        workspace: &workspace,
        policies: super::Policies::Named {
            policies: &args.plan.policies,
            data: &[],
            refused: "",
        },
        fleet: &fleet,
        record: None,
        posture: reasonix::Posture::Unattended,
        mode: reasonix::gate::GateMode::Normal,
        explain: false,
        dry_run: false,
    })?;
    let gate = built.gate;
    let timeout = args.timeout_ms.map(Duration::from_millis);
    let writes = if args.read_only {
        Writes::None
    } else {
        Writes::Observed
    };
    let shape = gate.command_shape(&plan, writes);
    // The user's own command: no gate admitted it; its changes are judged before they land.
    let result =
        match danger::exec_unjudged_shaped(&plan, &args.command, timeout, Capture::Inherit, &shape)
        {
            Ok(r) => r,
            Err(e) => {
                eprintln!("reasonix: {e}");
                return Ok(ExitCode::from(126));
            }
        };
    if let Some(line) = result.not_enforced_line() {
        eprintln!("reasonix: {line}");
    }
    let exit = result.exit.code().clamp(0, 255) as u8;
    if args.read_only {
        return Ok(ExitCode::from(exit));
    }
    let Some(upper) = result.observed else {
        // Written in place (best_effort without an overlay, or the jail off): said, not judged.
        report(args.format, exit, None, None)?;
        return Ok(ExitCode::from(exit));
    };
    let observed = effects::observe(upper, gate.command_changes(&args.command).as_ref());
    let changes: Vec<serde_json::Value> = observed
        .judged
        .iter()
        .map(|j| {
            json!({
                "path": j.change.path.display().to_string(),
                "change": j.change.verb(),
                "before": j.change.before,
                "after": j.change.after,
                "verdict": j.verdict,
                "rules": j.rules,
                "reasons": j.reasons,
            })
        })
        .collect();
    let settled = effects::settle(observed, &mut |_| false, &mut |_| {});
    report(args.format, exit, Some(&settled), Some(changes))?;
    Ok(ExitCode::from(if settled.landed {
        exit
    } else {
        DISCARDED
    }))
}

/// The change list of `sandbox exec --observe`.
fn report(
    format: ObserveFormat,
    exit: u8,
    settled: Option<&effects::Settled>,
    changes: Option<Vec<serde_json::Value>>,
) -> anyhow::Result<()> {
    match format {
        ObserveFormat::Text => {
            match settled {
                Some(s) => {
                    for line in &s.lines {
                        eprintln!("reasonix: {line}");
                    }
                }
                None => eprintln!("reasonix: effects not observed: written in place"),
            }
            Ok(())
        }
        ObserveFormat::Json => {
            let out = json!({
                "exit_code": exit,
                "observed": settled.is_some(),
                "landed": settled.map(|s| s.landed),
                "why": settled.and_then(|s| s.why.clone()),
                "changes": changes.unwrap_or_default(),
                "passthrough": settled.map(|s| s.passed.clone()).unwrap_or_default(),
            });
            let mut stdout = super::out::Stdout::plain();
            serde_json::to_writer(&mut stdout, &out)?;
            writeln!(stdout)?;
            stdout.flush()?;
            Ok(())
        }
    }
}
