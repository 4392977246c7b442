//! `reasonix mcp serve`: the gated tools over MCP stdio ([`reasonix::agent::serve`]).
//!
//! The workspace's builtin tools, and the tools of the MCP servers it configures (each connect
//! judged first, as in `run`), are offered to whichever MCP client started this process; each
//! `tools/call` goes through the gate, runs in the jail and is recorded as in `run`.
//!
//! Who answers an ask: no terminal is ours (stdin and stdout are the client's), so by default
//! the client's user, through MCP elicitation, when the client declares it, and otherwise the
//! `unattended` posture (an ask becomes `defaults.unattended`). A `--posture` given on the
//! command line is followed whatever the client offers: `unattended` for a run nobody may
//! widen from the client's side (CI), `strict` to run only what an allow rule covers. Logs and
//! notes go to stderr; stdout carries only MCP messages.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use reasonix::agent::serve::{Asks, Gated, NoModel, Quiet};
use reasonix::agent::{Always, Answer, Session};
use reasonix::record::{EventRecord, Recorder, now_ms};
use reasonix::{GateMode, Posture};

#[derive(Subcommand)]
pub enum McpCommand {
    /// Serve the gated tools over MCP stdio: every tools/call is judged, jailed and recorded.
    Serve(ServeArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// A YAML or Rego policy file or folder; repeat to merge several. Without any, `policies:`
    /// of reasonix.yaml, else the embedded default.
    #[arg(long = "policy", value_name = "PATH")]
    policies: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego policies; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
    /// The workspace the tools work in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Who answers an ask. Without this flag: the client's user through MCP elicitation when
    /// the client declares it, else nobody (unattended). Given, it is followed whatever the
    /// client offers: nobody (`unattended`: an ask becomes `defaults.unattended`), or only what
    /// an allow rule covers runs (`strict`).
    #[arg(long, value_enum)]
    posture: Option<ServePosture>,
    /// How long the client's user has to answer one ask put to them through elicitation, in
    /// seconds; no answer in time blocks the call.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, conflicts_with = "posture",
          value_parser = clap::value_parser!(u64).range(1..))]
    elicitation_timeout: u64,
    /// The JSONL execution record (default: .reasonix/record.jsonl in the workspace).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Leave the workspace's MCP servers out: only the builtin tools are served.
    #[arg(long)]
    no_mcp: bool,
}

/// The postures a server without a terminal can take.
#[derive(Clone, Copy, ValueEnum)]
enum ServePosture {
    Unattended,
    Strict,
}

/// The largest result a client is sent, as `run` bounds a model's (reasonix.yaml
/// `result_bytes` overrides it).
const DEFAULT_RESULT_BYTES: usize = 16 * 1024;

pub fn run(command: McpCommand) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Serve(args) => serve(args),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace.as_deref())?;
    // The gate is built under the posture that answers when nobody can be asked: connects to
    // the workspace's MCP servers are judged before any client is there, and a client without
    // elicitation is served under it.
    let (posture, asks) = match args.posture {
        None => (
            Posture::Unattended,
            Asks::ClientOrPosture {
                timeout: std::time::Duration::from_secs(args.elicitation_timeout),
            },
        ),
        Some(p) => {
            let posture = match p {
                ServePosture::Unattended => Posture::Unattended,
                ServePosture::Strict => Posture::Strict,
            };
            let why = format!(
                "reasonix mcp serve was started with --posture {}, which no client can widen",
                posture.as_str()
            );
            (posture, Asks::Posture { why })
        }
    };
    let built = super::gate(super::GateSpec {
        fleet: &super::FleetArgs::default(),
        workspace: &workspace,
        policies: super::Policies::Named {
            policies: &args.policies,
            data: &args.data,
            refused: "; nothing is served",
        },
        record: args.record.as_deref(),
        posture,
        mode: GateMode::Normal,
        explain: false,
        dry_run: false,
    })?;
    built.refuse_untrusted(args.no_mcp)?;
    if let Some(notice) = built.chosen.default_notice() {
        super::warn(&notice);
    }
    let (gate, settings) = (built.gate, built.settings);
    let config = &settings.config;
    let record = gate.host_files().record().to_path_buf();
    let recorder = Arc::new(
        Recorder::open(&record, super::signing(config))
            .with_context(|| format!("cannot open the execution record {}", record.display()))?,
    );
    // Nobody answers: a connect that needs a person stays unstarted (the posture has turned
    // every ask into the policy's answer before an approver would be asked).
    let approver = Arc::new(Always(Answer::Deny));
    let (registry, connected) = super::session_tools(
        &gate,
        &settings,
        args.no_mcp,
        approver.as_ref(),
        reasonix::sandbox::jail::Writes::Direct,
    )?;
    let tools = registry.schemas();
    let gate = gate
        .with_registry(registry)
        .context("cannot set up the gate")?;
    let workspace = gate.roots().workspace().to_path_buf();
    let session = Session::new(
        Arc::new(gate),
        Arc::new(NoModel),
        approver,
        Arc::clone(&recorder),
        super::leases(&workspace),
        Arc::new(Quiet),
        1,
        config.result_bytes.unwrap_or(DEFAULT_RESULT_BYTES),
    )
    .record_arguments(config.record.arguments.unwrap_or_default());
    let run_id = session.run_id().to_owned();
    let event = |event: &'static str, detail: String| EventRecord {
        run_id: run_id.clone(),
        time_ms: now_ms(),
        event,
        detail,
    };
    recorder
        .append(&event(
            "run_started",
            format!(
                "reasonix mcp serve: {} tools over MCP stdio; {}",
                tools.len(),
                match &asks {
                    Asks::ClientOrPosture { .. } => format!(
                        "an ask goes to the client's user through elicitation if the client \
                         declares it, else follows the {} posture",
                        posture.as_str()
                    ),
                    Asks::Posture { .. } => format!("posture {} (--posture)", posture.as_str()),
                }
            ),
        ))
        .context("cannot write the execution record")?;
    let mut session = session;
    if let Some((servers, names, unavailable)) = connected {
        for name in &names {
            let none = Vec::new();
            let listed = unavailable.get(name).unwrap_or(&none);
            if let Some(line) = servers.record(name, &run_id, listed) {
                recorder
                    .append(&line)
                    .context("cannot write the execution record")?;
            }
        }
        // A server that dies is restarted by the next call to one of its tools (its connect
        // judged again, an ask denied as every ask here is).
        session = session.servers(servers);
    }
    super::note(&format!(
        "serving {} gated tools over MCP stdio in {}; record: {}",
        tools.len(),
        workspace.display(),
        record.display()
    ));
    // OpenTelemetry export, when configured (before the async runtime: the exporter's HTTP
    // client is a blocking one): the served session is one trace, its `run` span the root,
    // each client's call an `execute_tool` span under it, as in `reasonix run`.
    let export = super::Export::start(config)?;
    session.begin_trace("mcp serve");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(Gated::new(session, tools, asks).serve_stdio());
    // The session (and its span) is gone with the service; the runtime's tasks with it. Then
    // what waits is sent, the root span first.
    drop(runtime);
    drop(export);
    let how = match &served {
        Ok(()) => "the client went away".to_owned(),
        Err(e) => e.clone(),
    };
    recorder
        .append_end(&event("run_ended", how))
        .context("cannot write the execution record")?;
    let _ = std::io::stderr().flush();
    served.map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}
