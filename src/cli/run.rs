//! `reasonix run`: the agent loop on a prompt, with a model behind an OpenAI-compatible API or a
//! scripted session.
//!
//! The model's text streams to stdout; each call's outcome is one line on stderr; the execution
//! record goes to `--record` (default `.reasonix/record.jsonl` in the workspace).
//!
//! An attempt at an answer that failed before it was whole (a cut stream, a malformed chunk, a
//! stall, a 429 or 5xx…) is retried (`--max-retries`, `--read-timeout-ms`); a line on stderr says
//! so, and marks as discarded whatever text of it was already shown.
//!
//! `--plan` starts in plan mode: every call that is not read-only is blocked at stage `plan`
//! until a plan handed in with `submit_plan` is approved — by the person at the terminal, or by
//! the run itself with `--approve-plan`; unattended without it, the run ends with the plan printed
//! on stdout. `--goal TEXT --verify CMD` checks the goal with CMD (a bash call through the gate)
//! whenever the model stops, and goes on until it passes or the turns run out.
//!
//! Exit status: 0 the model finished (with `--goal`: the goal is met; with `--plan` unattended:
//! the plan was handed in and printed), 3 it hit `--max-steps`, 4 the provider failed
//! (recorded), 5 the goal was not met when `--max-steps` ran out, 6 the gate (or a person)
//! blocked the goal's check, 2 a usage or configuration error (nothing ran) or the record could
//! not be written (the run stopped rather than go on unrecorded).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use anyhow::{Context, bail};
use clap::Args;
use reasonix::agent::config::RunConfig;
use reasonix::agent::openai::{
    DEEPSEEK_KEY, DEEPSEEK_MODEL, DEEPSEEK_URL, DEFAULT_READ_TIMEOUT, OpenAiConfig, OpenAiProvider,
};
use reasonix::agent::provider::{
    DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BASE, FailedAttempt, RetryPolicy,
};
use reasonix::agent::script::ScriptProvider;
use reasonix::agent::session::CallEnd;
use reasonix::agent::{
    Answer, Approver, Decided, End, Goal, PlanAnswer, PlanReviewer, Provider, Session,
    SessionError, Terminal,
};
use reasonix::gate::Judgement;
use reasonix::record::{
    Approval, EvidenceRecord, Outcome, PlanDecision, PlanRecord, Recorder, Reviewer,
};
use reasonix::text::{Keep, shorten, visible, visible_lines};
use reasonix::{Admission, GateMode, Posture};

use super::{note, render, warn};

/// Exit status when the model hit `--max-steps`.
const EXIT_MAX_STEPS: u8 = 3;
/// Exit status when the provider failed.
const EXIT_PROVIDER: u8 = 4;
/// Exit status when the turns ran out and the goal's check never passed.
const EXIT_GOAL_NOT_MET: u8 = 5;
/// Exit status when the gate (or a person) blocked the goal's check.
const EXIT_VERIFY_BLOCKED: u8 = 6;

const DEFAULT_MAX_STEPS: usize = 30;
const DEFAULT_RESULT_BYTES: usize = 16 * 1024;

#[derive(Args)]
pub struct RunArgs {
    /// `deepseek` (the default), `openai` (any OpenAI-compatible API; see --base-url) or
    /// `script:FILE` (replay a JSON list of assistant turns, no network).
    #[arg(long, value_name = "P")]
    provider: Option<String>,
    /// The model (default: deepseek-chat for deepseek).
    #[arg(long)]
    model: Option<String>,
    /// The API's base URL (default: https://api.deepseek.com for deepseek).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The environment variable holding the API key (default: DEEPSEEK_API_KEY, or
    /// OPENAI_API_KEY for openai).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// The workspace the agent works in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// A YAML or Rego policy file or a folder of them; repeat to merge several.
    /// `builtin:default` is the embedded default policy, which any --policy otherwise replaces.
    /// Without any, `policies:` of reasonix.yaml, else the embedded default.
    #[arg(long = "policy", value_name = "PATH")]
    policies: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego policies; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
    #[command(flatten)]
    fleet: super::FleetArgs,
    /// Nobody answers: every `ask` resolves by the policy's `defaults.unattended`. Implied when
    /// stdin is not a terminal.
    #[arg(long)]
    unattended: bool,
    /// Only a call an allow rule covers may run: every ask, and every fallback allow, is denied.
    #[arg(long, conflicts_with = "unattended")]
    strict: bool,
    /// Most model turns, at least 1 (default 30).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    max_steps: Option<usize>,
    /// What the model sees of one result, in bytes; the rest is cut from the middle (default 16384).
    #[arg(long, value_name = "BYTES")]
    result_bytes: Option<usize>,
    /// The JSONL execution record, appended to (default: .reasonix/record.jsonl in the workspace).
    #[arg(long, value_name = "PATH")]
    record: Option<PathBuf>,
    /// Retries of an attempt at an answer that failed before it was whole: a cut stream, a
    /// dropped connection, a malformed chunk, a stall, 408/409/429/5xx (default 3).
    #[arg(long, value_name = "N")]
    max_retries: Option<u32>,
    /// The longest wait for the next bytes of an answer, its head and then each chunk, before
    /// the attempt counts as stalled (default 300000: five minutes).
    #[arg(long, value_name = "MS")]
    read_timeout_ms: Option<u64>,
    /// Start in plan mode: only read-only calls run, every other call is blocked at stage
    /// `plan` until the plan the model hands in (`submit_plan`) is approved. A person at the
    /// terminal approves or rejects it; unattended, the run ends with the plan on stdout.
    #[arg(long)]
    plan: bool,
    /// With --plan: the run approves its own plan and goes on (recorded as such).
    #[arg(long, requires = "plan")]
    approve_plan: bool,
    /// A goal, in words: when the model stops, --verify checks it, and the run goes on until
    /// it is met or --max-steps runs out (exit 5).
    #[arg(long, value_name = "TEXT", requires = "verify")]
    goal: Option<String>,
    /// The bash command that checks --goal (exit 0: met). It runs through the gate and the
    /// jail like any call; a check the gate blocks ends the run (exit 6).
    #[arg(long, value_name = "CMD", requires = "goal")]
    verify: Option<String>,
    /// Leave the MCP servers of .mcp.json and reasonix.yaml out: none is started.
    #[arg(long)]
    no_mcp: bool,
    /// What to ask the agent.
    #[arg(value_name = "PROMPT")]
    prompt: String,
}

/// `--max-steps`: a run of 0 turns would end before the model answered.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => {
            Err("must be at least 1: a run of 0 turns would end before the model answered".into())
        }
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace.as_deref())?;
    let interactive = std::io::stdin().is_terminal() && !args.unattended && !args.strict;
    let posture = if args.strict {
        Posture::Strict
    } else if interactive {
        Posture::Interactive
    } else {
        Posture::Unattended
    };
    if posture == Posture::Unattended && !args.unattended {
        note("stdin is not a terminal: running unattended (asks resolve by defaults.unattended)");
    }

    let spec = super::GateSpec {
        workspace: &workspace,
        policies: super::Policies::Named {
            policies: &args.policies,
            data: &args.data,
            refused: "; nothing ran",
        },
        fleet: &args.fleet,
        record: args.record.as_deref(),
        posture,
        mode: GateMode::Normal,
        explain: false,
        dry_run: false,
    };
    let built = super::gate(spec)?;
    built.refuse_untrusted(args.no_mcp)?;
    if let Some(notice) = built.chosen.default_notice() {
        warn(&notice);
    }
    let decisions = super::decision_log(&built, &args.fleet)?;
    let (gate, settings, chosen) = (built.gate, built.settings, built.chosen);
    let config = &settings.config;
    let record = gate.host_files().record().to_path_buf();
    let goal = match (&args.goal, &args.verify) {
        (Some(text), Some(verify)) => {
            precheck(&gate, verify)?;
            Some(Goal {
                text: text.clone(),
                verify: verify.clone(),
            })
        }
        _ => None,
    };
    let provider = provider(&args, config)?;
    let recorder = Arc::new(
        Recorder::open(&record, super::signing(config))
            .with_context(|| format!("cannot open the execution record {}", record.display()))?,
    );
    let approver: Arc<dyn Approver> = Arc::new(Prompt);
    // The MCP servers connect before the run starts: the model needs their tools' schemas.
    // Each connect is a call the gate judges first (the normal gate: in plan mode too, a server
    // must start for its read-only tools to be offered); the record gets one line per server.
    let (registry, connected_servers) = super::session_tools(
        &gate,
        &settings,
        args.no_mcp,
        approver.as_ref(),
        // Plan mode: servers start read-only until a plan is approved (issue 25).
        if args.plan {
            reasonix::sandbox::jail::Writes::None
        } else {
            reasonix::sandbox::jail::Writes::Direct
        },
    )?;
    let gate = gate
        .with_registry(registry.clone())
        .context("cannot set up the gate")?;
    // Plan mode: the session starts with a plan-mode gate built by the same function from the
    // same specification and with the same tools, and goes on with the normal one once a plan
    // is approved.
    let (gate, after_plan) = if args.plan {
        // The same policy (the same bundle, not a second download).
        let planning = super::gate(super::GateSpec {
            mode: GateMode::Plan,
            policies: super::Policies::Loaded {
                set: &chosen.set,
                files: &chosen.files,
                data: &[],
                live: chosen.live.as_ref(),
            },
            ..spec
        })?;
        let planning = planning
            .gate
            .with_registry(registry)
            .context("cannot set up the plan-mode gate")?;
        (planning, Some(Arc::new(gate)))
    } else {
        (gate, None)
    };
    let leases = super::leases(gate.roots().workspace());
    let terminal = Arc::new(Screen::default());
    let mut session = Session::new(
        Arc::new(gate),
        provider,
        approver,
        Arc::clone(&recorder),
        leases,
        terminal.clone(),
        args.max_steps
            .or(config.max_steps)
            .unwrap_or(DEFAULT_MAX_STEPS),
        args.result_bytes
            .or(config.result_bytes)
            .unwrap_or(DEFAULT_RESULT_BYTES),
    )
    .record_arguments(config.record.arguments.unwrap_or_default());
    if let Some((servers, names, unavailable)) = connected_servers {
        for name in &names {
            let none = Vec::new();
            let tools = unavailable.get(name).unwrap_or(&none);
            if let Some(line) = servers.record(name, session.run_id(), tools) {
                recorder
                    .append(&line)
                    .context("cannot write the execution record")?;
            }
        }
        // A server that dies is restarted by the next call to one of its tools, its connect
        // judged again by the same gate and approver.
        session = session.servers(servers);
    }
    if let Some(then) = after_plan {
        let reviewer: Arc<dyn PlanReviewer> = if args.approve_plan {
            Arc::new(Decided(PlanAnswer::SelfApprove))
        } else if posture == Posture::Interactive {
            Arc::new(PlanPrompt)
        } else {
            Arc::new(Decided(PlanAnswer::End))
        };
        session = session.plan(reviewer, then)?;
    }
    if let Some(goal) = goal {
        session = session.goal(goal);
    }
    if let Some(log) = &decisions {
        session = session.decisions(Arc::clone(log));
    }

    // Before the async runtime: the exporter's HTTP client is a blocking one.
    let telemetry = super::telemetry(config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let ended = runtime.block_on(session.run(&args.prompt));
    if let Some(log) = &decisions {
        // What the collector could not take now stays buffered for the next run.
        log.close();
    }
    super::telemetry_end(telemetry);
    terminal.finish_line();
    let summary = terminal.summary();
    let where_ = format!("record: {}", record.display());
    match ended {
        Ok(End::Finished) if session.mode() == GateMode::Plan => {
            note(&format!(
                "finished in plan mode without an approved plan (none was handed in, or none was approved); no change was admitted; {summary}; {where_}"
            ));
            Ok(ExitCode::SUCCESS)
        }
        Ok(End::Finished) => {
            note(&format!("finished; {summary}; {where_}"));
            Ok(ExitCode::SUCCESS)
        }
        Ok(End::MaxSteps) => {
            warn(&format!(
                "stopped after --max-steps turns with the model still working; {summary}; {where_}"
            ));
            Ok(ExitCode::from(EXIT_MAX_STEPS))
        }
        Ok(End::GoalMet { rounds }) => {
            note(&format!(
                "the goal is met (check {rounds} passed); {summary}; {where_}"
            ));
            Ok(ExitCode::SUCCESS)
        }
        Ok(End::GoalNotMet { rounds }) => {
            warn(&format!(
                "the goal is not met: --max-steps ran out after {rounds} check{} that did not pass; {summary}; {where_}",
                if rounds == 1 { "" } else { "s" }
            ));
            Ok(ExitCode::from(EXIT_GOAL_NOT_MET))
        }
        Ok(End::VerifyBlocked { reason }) => {
            warn(&format!("the run ends: {reason}; {summary}; {where_}"));
            Ok(ExitCode::from(EXIT_VERIFY_BLOCKED))
        }
        Ok(End::PlanSubmitted { plan }) => {
            let mut out = anstream::stdout().lock();
            let _ = out.write_all(visible_lines(&plan).as_bytes());
            if !plan.ends_with('\n') {
                let _ = writeln!(out);
            }
            let _ = out.flush();
            note(&format!(
                "the plan above was handed in and nobody can review it here, so the run ends with it; no change was admitted (--approve-plan lets a run approve its own plan); {summary}; {where_}"
            ));
            Ok(ExitCode::SUCCESS)
        }
        Err(SessionError::Provider(e)) => {
            warn(&format!("the provider failed: {e}; {summary}; {where_}"));
            Ok(ExitCode::from(EXIT_PROVIDER))
        }
        Err(e) => Err(e).context("the run stopped"),
    }
}

/// The provider from the flags over `reasonix.yaml`.
fn provider(args: &RunArgs, config: &RunConfig) -> anyhow::Result<Arc<dyn Provider>> {
    let spec = &config.provider;
    let (kind, script) = match args.provider.as_deref() {
        Some(p) => match p.split_once(':') {
            Some(("script", file)) => ("script".to_owned(), Some(PathBuf::from(file))),
            _ => (p.to_owned(), None),
        },
        None => (
            spec.kind.clone().unwrap_or_else(|| "deepseek".into()),
            // Made absolute by the settings loader, from the folder of the file that names it.
            spec.script.clone(),
        ),
    };
    match kind.as_str() {
        "script" => {
            let Some(file) = script else {
                bail!(
                    "a script provider needs its file: --provider script:FILE, or provider.script in reasonix.yaml"
                );
            };
            Ok(Arc::new(ScriptProvider::load(&file)?))
        }
        "deepseek" | "openai" => {
            let deepseek = kind == "deepseek";
            let base_url = args.base_url.clone().or(spec.base_url.clone());
            let model = args.model.clone().or(spec.model.clone());
            let key_env = args.api_key_env.clone().or(spec.api_key_env.clone());
            let (base_url, model, key_env) = if deepseek {
                (
                    base_url.unwrap_or_else(|| DEEPSEEK_URL.into()),
                    model.unwrap_or_else(|| DEEPSEEK_MODEL.into()),
                    key_env.unwrap_or_else(|| DEEPSEEK_KEY.into()),
                )
            } else {
                let Some(model) = model else {
                    bail!("--provider openai needs --model (or provider.model in reasonix.yaml)");
                };
                (
                    base_url.unwrap_or_else(|| "https://api.openai.com/v1".into()),
                    model,
                    key_env.unwrap_or_else(|| "OPENAI_API_KEY".into()),
                )
            };
            let read_timeout = match args.read_timeout_ms.or(spec.read_timeout_ms) {
                Some(0) => bail!("the read timeout must be at least 1 ms"),
                Some(ms) => Duration::from_millis(ms),
                None => DEFAULT_READ_TIMEOUT,
            };
            let retry = RetryPolicy {
                max_retries: args
                    .max_retries
                    .or(spec.max_retries)
                    .unwrap_or(DEFAULT_MAX_RETRIES),
                base: spec
                    .retry_base_ms
                    .map_or(DEFAULT_RETRY_BASE, Duration::from_millis),
                ..RetryPolicy::default()
            };
            let provider = OpenAiProvider::new(OpenAiConfig {
                base_url,
                model,
                key_env,
                retry,
                read_timeout,
                ..OpenAiConfig::default()
            })?;
            Ok(Arc::new(provider))
        }
        other => bail!("unknown provider {other:?}; use deepseek, openai or script:FILE"),
    }
}

/// Judges the goal's check before anything runs: a command the gate refuses outright would end
/// the run at its first check, after the model's work, so it is a configuration error now.
/// (An ask is left for the run: a person answers it then.)
fn precheck(gate: &reasonix::Gate, verify: &str) -> anyhow::Result<()> {
    let call = serde_json::json!({
        "id": "verify",
        "name": "bash",
        "arguments": {"command": verify},
    });
    if let Judgement::Refused(a) = gate.admit_text(&call.to_string()) {
        bail!(
            "the gate refuses the --verify command ({} at stage {}): {}; nothing ran",
            a.verdict,
            a.stage.as_str(),
            a.reasons.first().map_or("", String::as_str)
        );
    }
    Ok(())
}

/// The person at the terminal reviews a plan.
struct PlanPrompt;

impl PlanReviewer for PlanPrompt {
    /// Shows the plan on stderr and asks; reads the answer from stdin. A rejection asks for one
    /// line of feedback for the model. End of input means nobody is there to review: the run
    /// ends with the plan.
    fn review(&self, plan: &str) -> PlanAnswer {
        let mut err = anstream::stderr().lock();
        let label = Style::new().bold();
        let dim = Style::new().dimmed();
        let _ = writeln!(err);
        let _ = writeln!(err, "{label}The model hands in its plan:{label:#}");
        for line in plan.lines() {
            let _ = writeln!(err, "{dim}│{dim:#} {}", visible(line));
        }
        let read = || {
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(line.trim().to_owned()),
            }
        };
        loop {
            let _ = write!(
                err,
                "{label}Approve the plan?{label:#} [a]pprove (changes may run), [r]eject with feedback: "
            );
            let _ = err.flush();
            let Some(answer) = read() else {
                return PlanAnswer::End;
            };
            match answer.to_lowercase().as_str() {
                "a" | "approve" | "y" | "yes" => return PlanAnswer::Approve,
                "r" | "reject" | "n" | "no" => {
                    let _ = write!(err, "Feedback for the model (one line): ");
                    let _ = err.flush();
                    return PlanAnswer::Reject(read().unwrap_or_default());
                }
                _ => continue,
            }
        }
    }
}

/// The person at the terminal.
struct Prompt;

impl Approver for Prompt {
    /// Shows the analysis and asks on stderr; reads the answer from stdin. Anything but an
    /// explicit yes is a deny, and so is end of input.
    fn ask(&self, admission: &Admission) -> Answer {
        let mut err = anstream::stderr().lock();
        let label = Style::new().bold();
        let _ = writeln!(err);
        let _ = render::admission(&mut err, admission, None);
        loop {
            let _ = write!(
                err,
                "{label}Run it?{label:#} [o]nce, [s]ession (this exact call again without asking), [d]eny: "
            );
            let _ = err.flush();
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(0) | Err(_) => return Answer::Deny,
                Ok(_) => {}
            }
            match line.trim().to_lowercase().as_str() {
                "o" | "once" | "y" | "yes" => return Answer::Once,
                "s" | "session" => return Answer::Session,
                "d" | "deny" | "n" | "no" => return Answer::Deny,
                _ => continue,
            }
        }
    }
}

/// Streams text to stdout and one line per call to stderr.
#[derive(Default)]
struct Screen {
    counts: Mutex<[usize; 4]>,
    mid_line: Mutex<bool>,
}

impl Screen {
    fn finish_line(&self) {
        let mut mid = self.mid_line.lock().unwrap_or_else(|p| p.into_inner());
        if *mid {
            let _ = writeln!(anstream::stdout());
            *mid = false;
        }
    }

    fn summary(&self) -> String {
        let c = *self.counts.lock().unwrap_or_else(|p| p.into_inner());
        format!(
            "{} calls: {} succeeded, {} failed, {} blocked, {} invalid",
            c.iter().sum::<usize>(),
            c[3],
            c[2],
            c[1],
            c[0]
        )
    }
}

impl Terminal for Screen {
    fn text(&self, delta: &str) {
        let mut out = anstream::stdout().lock();
        let _ = out.write_all(visible_lines(delta).as_bytes());
        let _ = out.flush();
        *self.mid_line.lock().unwrap_or_else(|p| p.into_inner()) = !delta.ends_with('\n');
    }

    fn reasoning(&self, delta: &str) {
        let dim = Style::new().dimmed();
        let mut err = anstream::stderr().lock();
        let _ = write!(err, "{dim}{}{dim:#}", visible_lines(delta));
        let _ = err.flush();
    }

    fn attempt_failed(&self, failed: &FailedAttempt, text: &str, reasoning: &str) {
        self.finish_line();
        let shown = match (text.is_empty(), reasoning.is_empty()) {
            (true, true) => String::new(),
            (false, true) => " The text shown above from it is discarded.".into(),
            (true, false) => " The reasoning shown above from it is discarded.".into(),
            (false, false) => " The text and reasoning shown above from it are discarded.".into(),
        };
        let next = match failed.wait {
            Some(wait) => format!(
                " Asking again in {:.1} s (attempt {}).",
                wait.as_secs_f64(),
                failed.attempt + 1
            ),
            None => " No retry left.".into(),
        };
        // The marker stands out when text of the attempt is on screen above it.
        let label = if shown.is_empty() {
            "[attempt failed]"
        } else {
            "[discarded]"
        };
        let style = Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()));
        let _ = writeln!(
            anstream::stderr(),
            "{style}{label}{style:#} {}.{shown}{next}",
            visible(&failed.to_string())
        );
    }

    fn plan_reviewed(&self, plan: &PlanRecord) {
        self.finish_line();
        let style = Style::new().bold().fg_color(Some(AnsiColor::Cyan.into()));
        let dim = Style::new().dimmed();
        let what = match (plan.decision, plan.by) {
            (PlanDecision::Approved, Some(Reviewer::ApprovePlan)) => {
                "approved by the run itself (--approve-plan); normal mode from here".to_owned()
            }
            (PlanDecision::Approved, _) => "approved; normal mode from here".to_owned(),
            (PlanDecision::Rejected, _) => match plan.feedback.as_deref() {
                Some(f) if !f.trim().is_empty() => {
                    format!("rejected — {}", visible(&shorten(f, 200, Keep::Head)))
                }
                _ => "rejected".to_owned(),
            },
            (PlanDecision::Unreviewed, _) => {
                "handed in; nobody can review it here, so the run ends with it".to_owned()
            }
        };
        let _ = writeln!(
            anstream::stderr(),
            "{style}{:<9}{style:#} {what} {dim}[{}] {} bytes{dim:#}",
            "plan",
            visible(&plan.call_id),
            plan.plan_bytes
        );
    }

    fn verified(&self, evidence: &EvidenceRecord) {
        self.finish_line();
        let (color, what) = if evidence.met {
            (AnsiColor::Green, "met".to_owned())
        } else {
            let how = match (evidence.outcome, evidence.exit_code) {
                (Outcome::Blocked | Outcome::Invalid, _) => "the check did not run".to_owned(),
                (_, Some(code)) => format!("the check exited {code}"),
                (_, None) => "the check did not finish".to_owned(),
            };
            (AnsiColor::Yellow, format!("not met — {how}"))
        };
        let style = Style::new().bold().fg_color(Some(color.into()));
        let _ = writeln!(
            anstream::stderr(),
            "{style}{:<9}{style:#} {what} (check {})",
            "goal",
            evidence.round
        );
    }

    fn call_ended(&self, ended: &CallEnd<'_>) {
        let (admission, record) = (ended.admission, ended.record);
        self.finish_line();
        let slot = match record.outcome {
            Outcome::Invalid => 0,
            Outcome::Blocked => 1,
            Outcome::Failed => 2,
            Outcome::Succeeded => 3,
        };
        self.counts.lock().unwrap_or_else(|p| p.into_inner())[slot] += 1;
        let color = match record.outcome {
            Outcome::Succeeded => AnsiColor::Green,
            Outcome::Failed => AnsiColor::Red,
            Outcome::Blocked => AnsiColor::Yellow,
            Outcome::Invalid => AnsiColor::Magenta,
        };
        let style = Style::new().bold().fg_color(Some(color.into()));
        let dim = Style::new().dimmed();
        let why = match record.outcome {
            Outcome::Blocked if record.approval == Some(Approval::Deny) => {
                " — a person said no; nothing ran".to_owned()
            }
            Outcome::Blocked | Outcome::Invalid => admission
                .reasons
                .first()
                .map(|r| {
                    let (r, _) = render::split_schema(r);
                    format!(" — {}", shorten(&visible(r), 200, Keep::Head))
                })
                .unwrap_or_default(),
            Outcome::Failed => record
                .failure
                .as_deref()
                .map(|f| format!(" — {}", shorten(&visible(f), 200, Keep::Head)))
                .unwrap_or_default(),
            Outcome::Succeeded => String::new(),
        };
        let label = if record.approval == Some(Approval::Deny) {
            "declined"
        } else {
            record.outcome.as_str()
        };
        let touched = touched(admission, &record.tool, ended.arguments);
        let touched = if touched.is_empty() {
            String::new()
        } else {
            format!(" {touched}")
        };
        let _ = writeln!(
            anstream::stderr(),
            "{style}{label:<9}{style:#} {}{touched} {dim}[{}] {} {} ms{dim:#}{why}",
            visible(&record.tool),
            visible(&record.call_id),
            admission.verdict,
            record.duration_ms,
        );
    }
}

/// What a call touched, in one line for the person watching: a bash command's first line, the
/// paths a file tool names (`a → b` for a move), or, when there are none (an invalid call),
/// the arguments as written; each cut to [`TOUCHED_BYTES`] and made visible.
fn touched(admission: &Admission, tool: &str, arguments: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(arguments).ok();
    if (admission.bash.is_some() || tool == "bash")
        && let Some(command) = parsed
            .as_ref()
            .and_then(|a| a.get("command"))
            .and_then(|c| c.as_str())
    {
        let mut lines = command.lines();
        let first = lines.next().unwrap_or("");
        let more = if lines.next().is_some() { " …" } else { "" };
        return format!(
            "`{}{more}`",
            visible(&shorten(first, TOUCHED_BYTES, Keep::Head))
        );
    }
    let named: Vec<&str> = admission
        .paths
        .iter()
        .filter(|p| !matches!(p.role, reasonix::tool::PathRole::Argument))
        .map(|p| p.written.as_str())
        .collect();
    if !named.is_empty() {
        let sep = if tool == "move_file" { " → " } else { ", " };
        return visible(&shorten(&named.join(sep), TOUCHED_BYTES, Keep::Head)).into_owned();
    }
    let written = match parsed {
        Some(value) => value.to_string(),
        None => arguments.to_owned(),
    };
    visible(&shorten(&written, TOUCHED_BYTES, Keep::Head)).into_owned()
}

/// The most bytes of a command or of paths a call line shows.
const TOUCHED_BYTES: usize = 80;
