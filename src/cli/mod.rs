//! The command line. Each command lives in its own module; this one parses arguments, sets up
//! the logs, maps errors to exit status 2 and prints them the way a user can act on.
//!
//! Settings come from one loader, [`reasonix::settings`], for every command: `settled` here.
//!
//! Exit status of `check` (docs/DESIGN.md): 0 all allow, 10 some ask, 20 some deny, 30 some invalid,
//! 2 usage or configuration error; of `run`: 0 finished (a goal met, an unreviewed plan handed
//! in), 3 max steps, 4 provider failed, 5 a goal not met when the turns ran out, 6 the gate
//! blocked the goal's check; of `rewind`: 0 every change in range restored, 1 some file left
//! alone. clap's own usage errors exit 2 as well.
//!
//! Logs (`tracing`) go to stderr only, never into the verdicts or JSON on stdout: warnings by
//! default, `-v` info, `-vv` debug (a span per call with each stage's duration), `-vvv` trace,
//! `-q` none; without `-v`/`-q`, `RUST_LOG` says what to log when it is set.

mod check;
mod config;
mod deferred;
mod hook;
mod import;
mod mcp;
mod out;
mod policy;
mod record;
mod render;
mod report;
mod rewind;
mod run;
mod sandbox;
mod trust;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{ArgAction, CommandFactory, Parser, Subcommand, ValueEnum};
use deferred::Deferred;
use reasonix::agent::config::RunConfig;
use reasonix::policy::BUILTIN_DEFAULT;
use reasonix::settings::Settings;
use reasonix::{Gate, GateMode, HostFiles, PolicySet, Posture, Registry};

/// Exit status for a usage or configuration error.
pub const EXIT_CONFIG: u8 = 2;

/// `--version` in one line: the version, the commit and the build profile. `--version` itself
/// prints more (see [`long_version`]).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("REASONIX_COMMIT"),
    ", ",
    env!("REASONIX_PROFILE"),
    " build)"
);

#[derive(Parser)]
#[command(
    name = "reasonix",
    version = VERSION,
    about = "A policy-as-code permission and sandbox gateway for LLM agent tool calls",
    propagate_version = true
)]
struct Cli {
    /// More logs on stderr: -v info, -vv debug (each call's stages and their durations), -vvv
    /// trace. Without -v or -q, RUST_LOG says what to log (default: warnings).
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    /// No logs on stderr, not even warnings (errors and notes about the run still show).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant (`run`'s flags) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Dry-run proposed tool calls through the gate and print each verdict.
    Check(Deferred<check::CheckArgs>),
    /// Run the agent on a prompt: the model proposes calls, the gate judges them, the jail runs
    /// them, and the execution record says what happened.
    Run(Deferred<run::RunArgs>),
    /// Undo what the file tools of earlier runs changed, as their execution record tells it;
    /// or list the points a record can go back to.
    Rewind(Deferred<rewind::RewindArgs>),
    /// Check an execution record: its hash chain and signatures, naming the first line that
    /// fails (`reasonix record verify R.jsonl`).
    Record {
        #[command(subcommand)]
        command: Deferred<record::RecordCommand>,
    },
    /// Show a run's execution record (or a decision log) to a person: one self-contained HTML
    /// page (`-o report.html`) or the header and counts as text (`--summary`).
    Report(Deferred<report::ReportArgs>),
    /// Test, check and show policies.
    Policy {
        #[command(subcommand)]
        command: Deferred<policy::PolicyCommand>,
    },
    /// Another agent's hook, answered by the gate: `reasonix hook claude` is Claude Code's
    /// PreToolUse hook (`--print-settings` prints the settings.json that installs it).
    Hook {
        #[command(subcommand)]
        command: Deferred<hook::HookCommand>,
    },
    /// Serve the gated tools to MCP clients: `reasonix mcp serve`.
    Mcp {
        #[command(subcommand)]
        command: Deferred<mcp::McpCommand>,
    },
    /// Trust a project's files (reasonix.yaml, .mcp.json, the policies they name) by their
    /// exact content: until then they count only for what narrows the gate.
    Trust(Deferred<trust::TrustArgs>),
    /// Show every effective setting and the layer it came from (managed, user, project,
    /// default), the project files' trust, and what was left out of untrusted files.
    Config(Deferred<config::ConfigArgs>),
    /// Inspect and use the OS jail.
    Sandbox {
        #[command(subcommand)]
        command: Deferred<sandbox::SandboxCommand>,
    },
    /// Print a completion script for a shell, e.g. `reasonix completions bash >
    /// ~/.local/share/bash-completion/completions/reasonix`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// The shells completions are written for.
#[derive(Clone, Copy, ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// The posture, as the command line names it.
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum PostureArg {
    /// A person at the terminal answers each ask.
    #[default]
    Interactive,
    /// Nobody answers: an ask becomes the policy's `defaults.unattended` (an ask about what
    /// the analysis could not judge becomes deny).
    Unattended,
    /// Only a call an allow rule covers runs; every other call is denied.
    Strict,
}

/// The mode, as the command line names it.
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum GateModeArg {
    /// Calls may act, as the policy and the posture decide.
    #[default]
    Normal,
    /// Only read-only calls run: every other call is blocked at stage `plan`.
    Plan,
}

impl From<GateModeArg> for GateMode {
    fn from(m: GateModeArg) -> GateMode {
        match m {
            GateModeArg::Normal => GateMode::Normal,
            GateModeArg::Plan => GateMode::Plan,
        }
    }
}

impl From<PostureArg> for Posture {
    fn from(p: PostureArg) -> Posture {
        match p {
            PostureArg::Interactive => Posture::Interactive,
            PostureArg::Unattended => Posture::Unattended,
            PostureArg::Strict => Posture::Strict,
        }
    }
}

/// Runs the command line.
pub fn main() -> ExitCode {
    // The jail probe's answer is kept beside the trust store, for the next process (issue 30);
    // `--version`, which says what the jail enforces here, takes it too.
    if let Ok(state) = reasonix::settings::trust::state_folder() {
        reasonix::sandbox::jail::keep_answers_in(state);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {
            let mut stdout = out::Stdout::plain();
            let _ = stdout.write_all(long_version().as_bytes());
            return ExitCode::SUCCESS;
        }
        // Help goes to stdout and exits 0; a usage error goes to stderr and exits 2.
        Err(e) => e.exit(),
    };
    logs(cli.verbose, cli.quiet);
    let result = match cli.command {
        Command::Check(Deferred(args)) => check::run(args),
        Command::Run(Deferred(args)) => run::run(args),
        Command::Rewind(Deferred(args)) => rewind::run(args),
        Command::Report(Deferred(args)) => report::run(args),
        Command::Policy {
            command: Deferred(command),
        } => policy::run(command),
        Command::Record {
            command: Deferred(command),
        } => record::run(command),
        Command::Hook {
            command: Deferred(command),
        } => hook::run(command),
        Command::Mcp {
            command: Deferred(command),
        } => mcp::run(command),
        Command::Sandbox {
            command: Deferred(command),
        } => sandbox::run(command),
        Command::Trust(Deferred(args)) => trust::run(args),
        Command::Config(Deferred(args)) => config::run(args),
        Command::Completions { shell } => completions(shell),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let mut stderr = anstream::stderr();
            let style = anstyle::Style::new()
                .bold()
                .fg_color(Some(anstyle::AnsiColor::Red.into()));
            let _ = writeln!(stderr, "{style}error{style:#}: {}", chain(&e));
            ExitCode::from(EXIT_CONFIG)
        }
    }
}

/// An error and its causes on one line, each said once: a cause whose text the message before
/// it already holds (`cannot read x: No such file or directory (os error 2)` over the same
/// `io::Error`) is not repeated.
fn chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// The tracing subscriber: stderr, no colour unless stderr is a terminal and `NO_COLOR` is
/// unset. `-v`/`-q` win over `RUST_LOG`. Beside it, an empty slot that [`telemetry`] fills with
/// the OpenTelemetry layer once the settings are read (the stderr filter does not apply to it).
fn logs(verbose: u8, quiet: bool) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = match (quiet, verbose) {
        (true, _) => EnvFilter::new("off"),
        (false, 0) => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        (false, 1) => EnvFilter::new("warn,reasonix=info"),
        (false, 2) => EnvFilter::new("warn,reasonix=debug"),
        (false, _) => EnvFilter::new("trace"),
    };
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    // OpenTelemetry's bridge: the crate's spans only, and only while export is on (off, its
    // callsites are disabled for it, so they cost nothing).
    let otel = reasonix::telemetry::bridge();
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_target(false)
        .with_filter(filter);
    // Only fails when a subscriber is already set, which nothing else here does.
    let _ = tracing_subscriber::registry()
        .with(otel)
        .with(stderr)
        .try_init();
}

/// Starts OpenTelemetry export when the `OTEL_*` variables or the settings' `otel:` section
/// configure it, and puts its layer into the subscriber: the crate's spans (not its log events)
/// become OTel spans. `None` when nothing configures it.
pub fn telemetry(config: &RunConfig) -> anyhow::Result<Option<reasonix::telemetry::Telemetry>> {
    let Some(t) = reasonix::telemetry::Telemetry::start(config.otel.as_ref())
        .map_err(anyhow::Error::msg)
        .context("OpenTelemetry export (otel: in reasonix.yaml, OTEL_* variables)")?
    else {
        return Ok(None);
    };
    t.install();
    Ok(Some(t))
}

/// OpenTelemetry export while it lives ([`telemetry`]): ended by [`telemetry_end`] when dropped,
/// so that an early return ends it too. Declare it before the spans it exports, so that they
/// close first.
pub struct Export(pub Option<reasonix::telemetry::Telemetry>);

impl Export {
    /// Starts export as [`telemetry`] does.
    pub fn start(config: &RunConfig) -> anyhow::Result<Export> {
        telemetry(config).map(Export)
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        telemetry_end(self.0.take());
    }
}

/// Ends OpenTelemetry export: sends what waits, and says on stderr how many spans were dropped
/// (the queue was full, or the collector did not take them).
pub fn telemetry_end(t: Option<reasonix::telemetry::Telemetry>) {
    let Some(t) = t else { return };
    let sent = t.shutdown();
    if sent.dropped > 0 {
        warn(&format!(
            "OpenTelemetry: {} span(s) dropped ({} sent): the queue was full or the collector did not take them",
            sent.dropped, sent.exported
        ));
    } else {
        tracing::info!(spans = sent.exported, "OpenTelemetry export done");
    }
}

/// What `--version` prints: the version, the commit, the build profile, and what the jail can
/// enforce on this machine.
fn long_version() -> String {
    let caps = reasonix::sandbox::jail::capabilities();
    let mut jail = Vec::new();
    match caps.landlock_abi {
        Some(abi) => {
            let mut what = vec!["filesystem"];
            if caps.landlock_net {
                what.push("TCP ports");
            }
            if caps.landlock_scope {
                what.push("signal and socket scoping");
            }
            jail.push(format!("Landlock ABI {abi} ({})", what.join(", ")));
        }
        None => jail.push("no Landlock".to_owned()),
    }
    jail.push(
        if caps.seccomp {
            "seccomp"
        } else {
            "no seccomp"
        }
        .to_owned(),
    );
    jail.push(match &caps.cgroup_pids {
        Some(_) => "a pids cgroup".to_owned(),
        None => "no pids cgroup (RLIMIT_NPROC only)".to_owned(),
    });
    format!(
        "reasonix {}\ncommit: {}\nprofile: {}\njail here: {} (kernel {}; `reasonix sandbox probe` says more)\n",
        env!("CARGO_PKG_VERSION"),
        env!("REASONIX_COMMIT"),
        env!("REASONIX_PROFILE"),
        jail.join(", "),
        caps.kernel
    )
}

/// `reasonix completions SHELL`.
fn completions(shell: Shell) -> anyhow::Result<ExitCode> {
    let mut cmd = deferred::everything_defined(Cli::command);
    let mut script = Vec::new();
    // Generated into memory first: clap_complete panics on a write error, and a closed pipe is
    // not one worth a panic.
    match shell {
        Shell::Bash => clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut cmd,
            "reasonix",
            &mut script,
        ),
        Shell::Zsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "reasonix", &mut script)
        }
        Shell::Fish => clap_complete::generate(
            clap_complete::Shell::Fish,
            &mut cmd,
            "reasonix",
            &mut script,
        ),
    }
    let mut stdout = out::Stdout::plain();
    stdout.write_all(&script)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `--workspace`, or the current folder.
fn workspace(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    match flag {
        Some(w) => Ok(w.to_path_buf()),
        None => std::env::current_dir().context("cannot read the current folder"),
    }
}

/// Where the policy comes from when a fleet shares one, and where each decision is logged; for
/// `check` and `run`. The same settings live in `reasonix.yaml` (`bundle:`, `decision_logs:`);
/// a flag wins.
#[derive(clap::Args, Clone, Default)]
pub struct FleetArgs {
    /// An OPA bundle — a .tar.gz or a folder in OPA's bundle layout — as the whole policy: its
    /// Rego modules, its data files, and Reasonix YAML rules under reasonix/rules/.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["policies", "data", "bundle_url"])]
    pub bundle: Option<PathBuf>,
    /// Download the policy bundle from an OPA-compatible bundle server (polled during a run;
    /// `bundle:` in reasonix.yaml sets the interval, the last good copy and the signing key).
    #[arg(long, value_name = "URL", conflicts_with_all = ["policies", "data"])]
    pub bundle_url: Option<String>,
    /// Append each decision, in OPA's decision-log shape, as a JSON line to FILE
    /// (`decision_logs:` in reasonix.yaml also sends them to a collector).
    #[arg(long, value_name = "FILE")]
    pub decision_log: Option<PathBuf>,
}

impl FleetArgs {
    /// The bundle to load: the flags', else `bundle:` of the settings unless `--policy` or
    /// `--data` replace it, or a higher layer's `policies:`/`data:` does.
    fn bundle_spec(
        &self,
        settings: &Settings,
        policy_flags: bool,
    ) -> anyhow::Result<Option<reasonix::bundle::BundleSpec>> {
        let config = &settings.config;
        let mut spec = config.bundle.clone().unwrap_or_default();
        if let Some(path) = &self.bundle {
            spec.path = Some(absolute(path)?);
            spec.url = None;
        } else if let Some(url) = &self.bundle_url {
            spec.url = Some(url.clone());
            spec.path = None;
        } else if policy_flags || config.bundle.is_none() {
            return Ok(None);
        } else {
            let bundle = settings.layer_of("bundle");
            let plan = settings.plan();
            let lists = [
                plan.policies.as_ref().map(|(l, _)| *l),
                plan.data.as_ref().map(|(l, _)| *l),
            ];
            if lists.iter().flatten().any(|l| *l == bundle) {
                anyhow::bail!(
                    "the {} settings file names both a bundle (bundle:) and policies:/data:; a bundle is the whole policy, keep one",
                    bundle.as_str()
                );
            }
            if lists.iter().flatten().any(|l| *l > bundle) {
                return Ok(None);
            }
        }
        if !settings.plan().managed.policies.is_empty() {
            anyhow::bail!(
                "the managed settings name policies, which vote in every gate, and a bundle is the whole policy; a bundle beside managed policies is not supported yet"
            );
        }
        Ok(Some(spec))
    }
}

/// Where the policies in force came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `--policy` (or `--data`) on the command line.
    Flags,
    /// `policies:` (or `data:`) in `reasonix.yaml`.
    Settings,
    /// Nothing named any: the embedded default.
    Default,
    /// A set the caller loaded itself (the policies beside a case file).
    Given,
    /// An OPA bundle (`--bundle`, `--bundle-url`, `bundle:` in `reasonix.yaml`).
    Bundle,
}

/// The policies in force and the files they came from.
pub struct Chosen {
    /// The loaded policies.
    pub set: PolicySet,
    /// What was left out of the policy files nobody trusts.
    pub left_out: Vec<reasonix::settings::LeftOut>,
    /// The policy and data files, absolute: host files no call may change.
    pub files: Vec<PathBuf>,
    /// Where the choice came from.
    pub origin: Origin,
    /// The bundle the gates judge with, newest first, when the policy is one.
    pub live: Option<std::sync::Arc<reasonix::bundle::live::LiveBundle>>,
}

impl Chosen {
    /// The line a person reading text output needs when the embedded default is not in force:
    /// its rules do not vote, and `.env` may be readable.
    pub fn default_notice(&self) -> Option<String> {
        if self.set.includes_default() {
            return None;
        }
        let rules: Vec<String> = PolicySet::embedded_default()
            .yaml_rules()
            .into_iter()
            .map(|(_, id, _)| id)
            .collect();
        let (named, how) = match self.origin {
            Origin::Flags => (
                "--policy replaces it",
                format!("add --policy {BUILTIN_DEFAULT} to keep it"),
            ),
            Origin::Settings => (
                "the policies: of reasonix.yaml replace it",
                format!("add {BUILTIN_DEFAULT} to that list to keep it"),
            ),
            Origin::Default | Origin::Given | Origin::Bundle => return None,
        };
        Some(format!(
            "the embedded default policy ({}) is not in force: {named}; {how}",
            rules.join(", ")
        ))
    }
}

/// The policies in force with these settings ([`Settings::policy_sources`]): the managed
/// layer's always; `--policy` and `--data` as given, else the highest trusted layer's
/// `policies:` and `data:` (each list on its own), else the embedded default; and an untrusted
/// project's lists, each file counting for its narrowing part unless the user trusts it.
/// `builtin:default` in a list stands for the embedded default. `refused` says what a policy
/// that does not load stops.
fn choose(
    settings: &Settings,
    policies: &[PathBuf],
    data: &[PathBuf],
    fleet: &FleetArgs,
    refused: &str,
) -> anyhow::Result<Chosen> {
    let workspace = settings.workspace();
    if let Some(spec) = fleet.bundle_spec(settings, !policies.is_empty() || !data.is_empty())? {
        return bundle(workspace, &spec, refused);
    }
    let sources = settings.policy_sources(policies, data);
    let only_default = sources.policies.len() == 1
        && sources.policies[0].path.as_os_str() == BUILTIN_DEFAULT
        && sources.data.is_empty();
    if only_default {
        return Ok(Chosen {
            set: PolicySet::embedded_default(),
            left_out: Vec::new(),
            files: Vec::new(),
            origin: Origin::Default,
            live: None,
        });
    }
    let set = PolicySet::load_named(&sources.policies, &sources.data, false)
        .with_context(|| format!("the policy does not load{refused}"))?;
    let mut files = Vec::new();
    for p in sources.policies.iter().chain(&sources.data) {
        if p.path.as_os_str() != BUILTIN_DEFAULT {
            files.push(absolute(&p.path)?);
        }
    }
    tracing::info!(
        sources = ?set.source_names().collect::<Vec<_>>(),
        "policies loaded"
    );
    let left_out = set
        .left_out()
        .iter()
        .map(|l| reasonix::settings::LeftOut {
            file: PathBuf::from(&l.file),
            field: l.part.clone(),
            why: l.why.clone(),
        })
        .collect();
    Ok(Chosen {
        set,
        left_out,
        files,
        origin: if sources.from_flags {
            Origin::Flags
        } else if sources.from_settings {
            Origin::Settings
        } else {
            Origin::Default
        },
        live: None,
    })
}

/// The policy of an OPA bundle: loaded (downloaded, for a server, and then polled), with the
/// bundle, its last good copy and its key among the host's files no call may change.
fn bundle(
    workspace: &Path,
    spec: &reasonix::bundle::BundleSpec,
    refused: &str,
) -> anyhow::Result<Chosen> {
    if let Some(cache) = &spec.cache {
        workspace_output(workspace, &workspace.join(cache)).map_err(|why| {
            anyhow::anyhow!(
                "the bundle's last good copy cannot go where the workspace puts it: {why}"
            )
        })?;
    }
    let started = reasonix::bundle::start(spec, workspace)
        .with_context(|| format!("the policy bundle does not load{refused}"))?;
    let (bundle, _) = started.live.current();
    if let Some(reasonix::bundle::fetch::Origin::Cache(why)) = &started.origin {
        warn(&format!(
            "{why}; judging with the last good copy of the bundle (revision {:?})",
            bundle.revision
        ));
    }
    tracing::info!(revision = %bundle.revision, verified = bundle.verified, "policy bundle loaded");
    let mut files = Vec::new();
    let named = [
        spec.path.as_deref(),
        spec.cache.as_deref(),
        spec.verification.as_ref().map(|v| v.key.as_path()),
    ];
    for p in named.into_iter().flatten() {
        files.push(workspace.join(p));
    }
    Ok(Chosen {
        set: bundle.set.clone(),
        left_out: Vec::new(),
        files,
        origin: Origin::Bundle,
        live: Some(started.live),
    })
}

/// The workspace's settings, every layer read ([`Settings::load`]: the one loader).
fn settled(workspace: &Path) -> anyhow::Result<Settings> {
    Settings::load(workspace).map_err(anyhow::Error::new)
}

/// Which policies a gate judges with.
#[derive(Clone, Copy)]
enum Policies<'a> {
    /// `--policy` and `--data` as given (see [`choose`]); `refused` says what a policy that
    /// does not load stops.
    Named {
        policies: &'a [PathBuf],
        data: &'a [PathBuf],
        refused: &'a str,
    },
    /// A set already loaded, from these files (the policies beside a case file, or the policy
    /// of a gate already built, with its bundle).
    Loaded {
        set: &'a PolicySet,
        files: &'a [PathBuf],
        data: &'a [PathBuf],
        live: Option<&'a std::sync::Arc<reasonix::bundle::live::LiveBundle>>,
    },
}

/// What every entry point needs to build its gate.
#[derive(Clone, Copy)]
struct GateSpec<'a> {
    /// The workspace, as given.
    workspace: &'a Path,
    /// The policies.
    policies: Policies<'a>,
    /// `--bundle`, `--bundle-url`, `--decision-log`.
    fleet: &'a FleetArgs,
    /// `--record`, if given.
    record: Option<&'a Path>,
    /// Who answers asks.
    posture: Posture,
    /// Whether changes may begin (`--plan`, `check --mode`).
    mode: GateMode,
    /// `--explain`.
    explain: bool,
    /// A dry run (`check`): the jail is planned, not built ([`reasonix::GateBuilder::dry_run`]).
    dry_run: bool,
}

/// A gate (with the settings' hooks as its last stage), its settings, and which policies it
/// judges with.
struct Built {
    gate: Gate,
    settings: Settings,
    /// The policies it judges with.
    chosen: Chosen,
}

impl Built {
    /// The merged settings (flags not applied).
    fn config(&self) -> &RunConfig {
        &self.settings.config
    }

    /// What was left out of the project's files because the user does not trust them: their
    /// settings' fields and their policies' widening parts.
    fn left_out(&self) -> Vec<reasonix::settings::LeftOut> {
        let mut all = self.settings.left_out().to_vec();
        all.extend(self.chosen.left_out.iter().cloned());
        all
    }

    /// The one message naming everything left out, and the command that trusts it.
    fn untrusted(&self) -> Option<String> {
        reasonix::settings::untrusted_message(self.settings.workspace(), &self.left_out())
    }

    /// For a command that acts (`run`, `mcp serve`): an error (exit 2) when anything was left
    /// out, since running without what the project asked for is not what anybody asked for.
    /// With `no_mcp` (`--no-mcp`), MCP servers left out do not count: none would start anyway.
    fn refuse_untrusted(&self, no_mcp: bool) -> anyhow::Result<()> {
        let left_out: Vec<_> = self
            .left_out()
            .into_iter()
            .filter(|l| {
                !(no_mcp
                    && (l.field.starts_with("mcpServers.") || l.field.starts_with("mcp_servers.")))
            })
            .collect();
        match reasonix::settings::untrusted_message(self.settings.workspace(), &left_out) {
            Some(message) => Err(anyhow::anyhow!(
                "{message}{}; nothing ran",
                if no_mcp {
                    ""
                } else {
                    " (--no-mcp leaves MCP servers out)"
                }
            )),
            None => Ok(()),
        }
    }
}

/// The one way the command line builds a gate, for `check`, `run` and `policy test` alike: the
/// workspace's settings (`reasonix.yaml`) name the record and may name the policies, and the
/// record, the settings and the policy and data files are the host's own files no call may
/// change. So a dry run protects exactly what a live run protects.
fn gate(spec: GateSpec<'_>) -> anyhow::Result<Built> {
    let settings = settled(spec.workspace)?;
    let workspace = settings.workspace().to_path_buf();
    let record = record_path(&settings, spec.record)?;
    let chosen = match spec.policies {
        Policies::Named {
            policies,
            data,
            refused,
        } => choose(&settings, policies, data, spec.fleet, refused)?,
        Policies::Loaded {
            set,
            files,
            data,
            live,
        } => {
            let mut all = Vec::new();
            for p in files.iter().chain(data) {
                all.push(absolute(p)?);
            }
            Chosen {
                set: set.clone(),
                left_out: set
                    .left_out()
                    .iter()
                    .map(|l| reasonix::settings::LeftOut {
                        file: PathBuf::from(&l.file),
                        field: l.part.clone(),
                        why: l.why.clone(),
                    })
                    .collect(),
                files: all,
                origin: if live.is_some() {
                    Origin::Bundle
                } else {
                    Origin::Given
                },
                live: live.cloned(),
            }
        }
    };
    let host = HostFiles::for_workspace(&workspace).with_record(record);
    let mut files = settings.host_files();
    files.extend(chosen.files.iter().cloned());
    let decision_log = spec
        .fleet
        .decision_log
        .as_deref()
        .map(absolute)
        .transpose()?;
    let logs = settings.config.decision_logs.clone().unwrap_or_default();
    let log_files = logs.files(&workspace, decision_log.as_deref());
    for f in &log_files {
        workspace_output(&workspace, f).map_err(|why| {
            anyhow::anyhow!(
                "the decision log cannot go where the workspace puts it: {why}; a repository must not choose where Reasonix writes on this machine"
            )
        })?;
    }
    let inputs = !log_files.is_empty();
    files.extend(log_files);
    let hooks = match &settings.config.hooks {
        Some(spec) => Some(std::sync::Arc::new(
            reasonix::hooks::Hooks::new(spec)
                .map_err(anyhow::Error::msg)
                .context("reasonix.yaml hooks")?,
        )),
        None => None,
    }
    .filter(|h| !h.is_empty());
    let gate = Gate::builder(Registry::with_builtins(), &chosen.set, &workspace)
        .posture(spec.posture)
        .mode(spec.mode)
        .explain(spec.explain)
        .inputs(inputs)
        .dry_run(spec.dry_run)
        .bundle(chosen.live.clone())
        .hooks(hooks)
        .host_files(host.with_files(files))
        .build()
        .context("cannot set up the gate")?;
    Ok(Built {
        gate,
        settings,
        chosen,
    })
}

/// The decision log the settings and `--decision-log` name, for a gate built by [`gate`];
/// `None` when neither names one.
fn decision_log(
    built: &Built,
    fleet: &FleetArgs,
) -> anyhow::Result<Option<std::sync::Arc<reasonix::decisions::DecisionLog>>> {
    let file = fleet.decision_log.as_deref().map(absolute).transpose()?;
    let spec = built.config().decision_logs.clone().unwrap_or_default();
    let bundle = built.gate.bundle().map(|(name, _)| name);
    reasonix::decisions::DecisionLog::open(
        &spec,
        file.as_deref(),
        built.gate.roots().workspace(),
        bundle,
    )
    .map_err(anyhow::Error::msg)
    .context("reasonix.yaml decision_logs")
    .map(|log| log.map(std::sync::Arc::new))
}

/// The record `--record` names (absolute), else the one the settings name (relative to the
/// workspace), else `.reasonix/record.jsonl` in the workspace. A record inside the workspace
/// (and its state folder) must stay inside it with every symlink followed: the workspace's
/// symlinks are the repository's, and a repository never chooses where Reasonix writes on the
/// host. A record the user put outside the workspace (their settings, a trusted project file,
/// `--record`) is theirs.
fn record_path(settings: &Settings, flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    let workspace = settings.workspace();
    let path = match (flag, &settings.config.record.path) {
        (Some(r), _) => absolute(r)?,
        (None, Some(p)) => workspace.join(p),
        (None, None) => workspace.join(reasonix::host::DEFAULT_RECORD),
    };
    for p in [path.clone(), reasonix::host::state_folder(&path)] {
        workspace_output(workspace, &p).map_err(|why| {
            anyhow::anyhow!(
                "the execution record cannot go where the workspace puts it: {why}; a repository must not choose where Reasonix writes on this machine (remove the link, or give --record)"
            )
        })?;
    }
    Ok(path)
}

/// `path` (absolute), a file Reasonix writes: when it lies inside the workspace as written, it
/// must stay there with every symlink followed, and out of `.git`
/// ([`reasonix::settings::confined_output`]); outside, it is where the user put it.
fn workspace_output(workspace: &Path, path: &Path) -> Result<(), String> {
    if path.starts_with(workspace) {
        reasonix::settings::confined_output(workspace, path).map(drop)
    } else {
        Ok(())
    }
}

/// `p` made absolute from the current folder.
fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}

/// The MCP servers of a workspace (`.mcp.json`, `mcp_servers:` of reasonix.yaml), ready to be
/// connected through `gate`'s connect calls.
fn mcp_servers(
    gate: &Gate,
    settings: &Settings,
    writes: reasonix::sandbox::jail::Writes,
) -> anyhow::Result<reasonix::agent::servers::Servers> {
    let configured = reasonix::mcp::servers(
        settings.mcp_json(),
        &settings.config.mcp_servers.clone().unwrap_or_default(),
    )
    .map_err(anyhow::Error::msg)
    .context("the MCP servers are not configured right (--no-mcp leaves them out)")?;
    let mut servers = reasonix::agent::servers::Servers::new(configured, gate)
        .context("cannot offer the MCP servers' connect calls")?;
    servers.set_writes(writes);
    Ok(servers)
}

/// The MCP servers a session started: the servers, their names in order, and each server's
/// tools that are unavailable with why.
type Started = (
    reasonix::agent::servers::Servers,
    Vec<String>,
    std::collections::BTreeMap<String, Vec<(String, String)>>,
);

/// The tools a session offers. With `--no-mcp`, the builtins alone (MCP tools withdrawn, saying
/// why). Otherwise each configured server is connected — its connect judged by `gate` first, an
/// `ask` put to `approver` — and said on stderr, and the builtins come with the tools of those
/// that started (`run` and `mcp serve` alike).
fn session_tools(
    gate: &Gate,
    settings: &Settings,
    no_mcp: bool,
    approver: &dyn reasonix::agent::Approver,
    writes: reasonix::sandbox::jail::Writes,
) -> anyhow::Result<(reasonix::Registry, Option<Started>)> {
    if no_mcp {
        let mut registry = reasonix::Registry::with_builtins();
        registry.withdraw("mcp__", "MCP servers are left out (--no-mcp)");
        return Ok((registry, None));
    }
    let mut servers = mcp_servers(gate, settings, writes)?;
    let names: Vec<String> = servers.names().map(str::to_owned).collect();
    for name in &names {
        let connected =
            servers.connect(name, &mut |admission| Some(approver.ask(admission).into()));
        match &connected.result {
            Ok(c) => note(&format!("MCP server {name}: {} tools", c.tools().len())),
            Err(e) => warn(&format!("MCP server {name} contributes no tools: {e}")),
        }
    }
    let (registry, unavailable) = servers.registry();
    unavailable_notes(&unavailable);
    Ok((registry, Some((servers, names, unavailable))))
}

/// One line on stderr per MCP tool a server offered that is unavailable.
fn unavailable_notes(unavailable: &std::collections::BTreeMap<String, Vec<(String, String)>>) {
    for (tool, why) in unavailable.values().flatten() {
        warn(&format!("MCP tool {tool} is unavailable: {why}"));
    }
}

/// A note on stderr for a person: dimmed, prefixed with `reasonix:`.
pub fn note(text: &str) {
    let dim = anstyle::Style::new().dimmed();
    let _ = writeln!(
        anstream::stderr(),
        "{dim}reasonix: {}{dim:#}",
        reasonix::text::visible(text)
    );
}

/// A warning of several lines, each already made visible by whoever built it (control
/// characters other than the line breaks escaped).
pub fn warn_lines(text: &str) {
    let style = anstyle::Style::new()
        .bold()
        .fg_color(Some(anstyle::AnsiColor::Yellow.into()));
    let _ = writeln!(
        anstream::stderr(),
        "{style}reasonix{style:#}: {}",
        reasonix::text::visible_lines(text)
    );
}

/// The lease manager of `workspace`, across processes (`.reasonix/leases/`): a call whose lease
/// cannot be taken there is refused, never run on a lease of this process only.
pub(crate) fn leases(workspace: &Path) -> std::sync::Arc<reasonix::lease::Leases> {
    reasonix::lease::Leases::for_workspace(workspace)
}

/// The default record key: `record.key` in the user's state folder, beside the trust store.
pub(crate) fn default_key_file() -> Option<PathBuf> {
    reasonix::settings::trust::state_folder()
        .ok()
        .map(|s| s.join(reasonix::seal::KEY_FILE))
}

/// How the record's lines are signed under these settings (`record.key_env`, else the key file
/// in the user's state folder); said on stderr when they will not be.
pub(crate) fn signing(config: &RunConfig) -> reasonix::seal::Signing {
    let signing =
        reasonix::seal::Signing::resolve(config.record.key_env.as_deref(), default_key_file());
    if let reasonix::seal::Signing::Unsigned(why) = &signing {
        warn(why);
    }
    signing
}

/// A warning on stderr for a person: `reasonix` in bold yellow.
pub fn warn(text: &str) {
    let style = anstyle::Style::new()
        .bold()
        .fg_color(Some(anstyle::AnsiColor::Yellow.into()));
    let _ = writeln!(
        anstream::stderr(),
        "{style}reasonix{style:#}: {}",
        reasonix::text::visible(text)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's path below `cmd` (`["sandbox", "exec"]`), `help`'s own tree included.
    fn paths(cmd: &clap::Command, at: &[String], into: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            let mut path = at.to_vec();
            path.push(sub.get_name().to_owned());
            into.push(path.clone());
            paths(sub, &path, into);
        }
    }

    /// What clap says to `args`: its error or help text, or that they parsed.
    fn said(cmd: clap::Command, args: &[String]) -> String {
        match cmd.try_get_matches_from(std::iter::once("reasonix".to_owned()).chain(args.to_vec()))
        {
            Ok(_) => "parsed".to_owned(),
            Err(e) => format!("{:?}: {}", e.kind(), e.render()),
        }
    }

    #[test]
    fn the_command_line_is_the_same_with_its_subcommands_deferred() {
        let mut whole = deferred::everything_defined(Cli::command);
        whole.clone().debug_assert();
        whole.build();
        let mut all = vec![Vec::new()];
        paths(&whole, &[], &mut all);
        // Every command is there: the top level, its twelve and `help`, their subcommands.
        assert!(all.len() > 40, "{all:?}");
        assert!(all.contains(&vec!["sandbox".into(), "exec".into()]));
        assert!(all.contains(&vec!["help".into(), "sandbox".into(), "exec".into()]));
        for path in &all {
            for tail in [
                &["--help"][..],
                &["-h"],
                &["--no-such-flag"],
                &[],
                &["-v", "--help"],
            ] {
                let args: Vec<String> = path
                    .iter()
                    .cloned()
                    .chain(tail.iter().map(|s| s.to_string()))
                    .collect();
                assert_eq!(
                    said(Cli::command(), &args),
                    said(deferred::everything_defined(Cli::command), &args),
                    "reasonix {}",
                    args.join(" ")
                );
            }
        }
        // Deferred: a subcommand's flags are not defined until it is built.
        let lazy = Cli::command();
        let check = lazy.find_subcommand("check").unwrap();
        assert_eq!(check.get_arguments().count(), 0);
        assert!(
            whole
                .find_subcommand("check")
                .unwrap()
                .get_arguments()
                .any(|a| a.get_id() == "posture")
        );
    }
}
