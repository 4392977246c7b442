//! `reasonix hook claude`: the gate as Claude Code's `PreToolUse` hook.
//!
//! It reads the hook's JSON from stdin, maps Claude's tool to Reasonix calls
//! ([`reasonix::claude::hook`]) in the project's root as Claude Code has it
//! ([`reasonix::claude::project`]: `CLAUDE_PROJECT_DIR`, else the nearest `reasonix.yaml` or
//! `.git` above `cwd` — never the shell's folder), judges them with the gate every entry point
//! builds (dry run: the settings' policies or `--policy`, the host's own files protected, the
//! pre-tool hooks run), narrows what relied on how Reasonix's own tools run
//! ([`reasonix::claude::unjailed`]), appends one `claude_hook` line per judged call to the
//! record, and prints Claude's hook output with exit 0.
//!
//! Claude Code's contract for a command hook: exit 0 with JSON on stdout is read as the
//! decision; exit 2 blocks the tool and shows stderr to the model. So anything that goes wrong
//! inside — input that is not the hook's JSON, a workspace that does not exist, a policy that
//! does not load, a record that cannot be written, even a panic — exits 2 with the reason on
//! stderr: the tool is blocked, never let through by a hook that failed.
//!
//! `--print-settings` prints the `settings.json` snippet that installs the hook.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use reasonix::claude::hook::{self, HookInput, HookOutput, Mapped, Permission};
use reasonix::claude::tools::Observed;
use reasonix::claude::{project, unjailed};
use reasonix::record::{ARGUMENTS_BOUND, AdmissionRecord, HookRecord, Recorder, now_ms, sha256};
use reasonix::text::{Keep, shorten};
use reasonix::{Admission, Posture, Registry};

use super::PostureArg;

#[derive(Subcommand)]
pub enum HookCommand {
    /// Claude Code's PreToolUse hook: reads the hook JSON on stdin, prints its decision.
    Claude(ClaudeArgs),
}

#[derive(Args)]
pub struct ClaudeArgs {
    /// A YAML or Rego policy file or folder; repeat to merge several. Without any, `policies:`
    /// of reasonix.yaml in Claude's cwd, else the embedded default.
    #[arg(long = "policy", value_name = "PATH")]
    policies: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego policies; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
    /// Who answers an `ask`: `interactive` passes it to Claude Code, which asks its user;
    /// `unattended` turns it into the policy's `defaults.unattended`.
    #[arg(long, value_enum, default_value_t = PostureArg::Interactive)]
    posture: PostureArg,
    /// The record the decisions are appended to (default: .reasonix/record.jsonl in Claude's
    /// cwd, or `record:` of reasonix.yaml).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Print the settings.json snippet that installs this hook (with the flags given), and exit.
    #[arg(long)]
    print_settings: bool,
    /// Answer an allowed (or asked) `Bash` call with its command rewritten to run inside
    /// Reasonix's jail (`reasonix sandbox exec --observe` with these policies): Claude's own
    /// shell then runs it read-only or on an overlay whose changes the policy judges, with
    /// what a rule protects from reading covered. Its output passes through; its exit status
    /// is the command's, 125 when its changes were refused (nothing of them landed), 126 when
    /// the jail refused to run it.
    #[arg(long)]
    jail: bool,
}

pub fn run(command: HookCommand) -> anyhow::Result<ExitCode> {
    match command {
        HookCommand::Claude(args) => claude(args),
    }
}

fn claude(args: ClaudeArgs) -> anyhow::Result<ExitCode> {
    if args.print_settings {
        return print_settings(&args);
    }
    // A panic is an internal error like any other: Claude must see exit 2, not 101.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "reasonix hook claude: internal error, the tool is blocked: {info}"
        );
        std::process::exit(2);
    }));
    // Every error exits 2 (the command line's status for an error) and says the tool is
    // blocked, so that the model reading stderr knows what became of its call.
    answer(&args).context("the tool is blocked")
}

/// Fault injection for the test of a panic (`tests/it/claude_hook.rs`): in a debug build only,
/// `REASONIX_HOOK_PANIC=1` panics halfway, after the record is opened and before anything is
/// judged. A release build has no such switch. No input reaches a panic by design, and one
/// that would is a bug to fix, so the test needs a trigger of its own.
fn injected_panic() {
    #[cfg(debug_assertions)]
    if std::env::var_os("REASONIX_HOOK_PANIC").is_some_and(|v| v == "1") {
        panic!("REASONIX_HOOK_PANIC=1 (fault injection, debug builds only)");
    }
}

/// Judges the call of the hook input on stdin and prints Claude's answer.
fn answer(args: &ClaudeArgs) -> anyhow::Result<ExitCode> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the hook input on stdin")?;
    let input: HookInput = serde_json::from_str(&text)
        .context("the input is not Claude Code's PreToolUse hook JSON")?;
    if input.hook_event_name != "PreToolUse" {
        anyhow::bail!(
            "this hook answers PreToolUse, and was called for {:?}; install it under PreToolUse (reasonix hook claude --print-settings)",
            input.hook_event_name
        );
    }
    let cwd = PathBuf::from(&input.cwd);
    if !cwd.is_absolute() || !cwd.is_dir() {
        anyhow::bail!(
            "the hook input's cwd {:?} does not exist or is not an absolute folder",
            input.cwd
        );
    }
    // The project as Claude Code has it, never the shell's folder (issue 26).
    let root = project::root(std::env::var_os(project::PROJECT_DIR).as_deref(), &cwd);
    let built = super::gate(super::GateSpec {
        fleet: &super::FleetArgs::default(),
        workspace: &root,
        policies: super::Policies::Named {
            policies: &args.policies,
            data: &args.data,
            refused: "",
        },
        record: args.record.as_deref(),
        posture: Posture::from(args.posture),
        mode: reasonix::GateMode::Normal,
        explain: false,
        dry_run: true,
    })?;
    // What the project's untrusted files asked for is left out: the call is judged with the
    // narrowing part, and the answer and stderr say so.
    let untrusted = built.untrusted();
    if let Some(message) = &untrusted {
        super::warn_lines(message);
    }
    // OpenTelemetry export, when configured: a trace per hook call, rooted in its `hook` span,
    // with the gate's `call` span and its stages under it for each call judged. Ended (what
    // waits sent, at most a few seconds) when this function returns, after the span closes.
    let _export = super::Export::start(built.config())?;
    let hook_span = tracing::info_span!(
        parent: None,
        "hook",
        "reasonix.hook" = "claude",
        "reasonix.run_id" = %reasonix::text::visible(&format!("claude-{}", input.session_id)),
        "reasonix.posture" = ?Posture::from(args.posture),
        "reasonix.claude_tool" = %reasonix::text::visible(&input.tool_name),
        "gen_ai.tool.call.id" = %reasonix::text::visible(input.tool_use_id.as_deref().unwrap_or("")),
        "reasonix.decision" = tracing::field::Empty,
    );
    let _entered = hook_span.enter();
    let _in_hook = reasonix::telemetry::parent(reasonix::telemetry::context_of(&hook_span));
    let mapped = hook::map(&input.tool_name, &input.tool_input);
    let mut registry = Registry::with_builtins();
    if input.tool_name.starts_with("mcp__") {
        registry
            .add_mcp(std::sync::Arc::new(Observed::new(&input.tool_name)))
            .with_context(|| format!("cannot judge the MCP tool {:?}", input.tool_name))?;
    }
    let gate = built
        .gate
        .with_registry(registry)
        .context("cannot set up the gate")?;
    let record = gate.host_files().record().to_path_buf();
    let recorder = Recorder::open_waiting(&record, super::signing(built.config()))
        .with_context(|| format!("cannot open the execution record {}", record.display()))?;
    let run_id = format!("claude-{}", input.session_id);
    injected_panic();

    let (output, judged) = match mapped {
        Mapped::Calls(calls) => {
            let judged: Vec<(String, String, Admission)> = calls
                .into_iter()
                .map(|mut call| {
                    let mut arguments = call.parse_arguments().unwrap_or_default();
                    project::anchor(&call.name, &mut arguments, &cwd, gate.roots().workspace());
                    call.arguments = reasonix::call::RawArguments::Object(arguments.clone());
                    let began = std::time::Instant::now();
                    // The gate's last stage runs the pre-tool hooks.
                    let admission = gate.admit(&call).into_admission();
                    // With --jail, Claude runs Bash in Reasonix's jail: only what it does not
                    // jail is narrowed.
                    let admission = unjailed::correct(&gate, &arguments, admission, args.jail);
                    if reasonix::telemetry::on() {
                        judged_for_telemetry(&admission, began.elapsed());
                    }
                    (
                        call.name.clone(),
                        serde_json::Value::Object(arguments).to_string(),
                        admission,
                    )
                })
                .collect();
            let admissions: Vec<Admission> = judged.iter().map(|(_, _, a)| a.clone()).collect();
            (hook::answer(&admissions), judged)
        }
        Mapped::Unmapped(why) => (
            HookOutput::new(Permission::Ask, format!("reasonix: {why}")),
            Vec::new(),
        ),
    };
    let mut output = output;
    if untrusted.is_some() {
        output.specific.reason.push_str(
            "; reasonix: the project's files are not trusted, so only what narrows the gate counted (`reasonix config` in the project says what was left out, `reasonix trust` trusts them)",
        );
    }
    if args.jail && input.tool_name == "Bash" && output.specific.decision != Permission::Deny {
        // The jail's workspace is the project root; the command runs from Claude's folder in it.
        let mut anchored = input.tool_input.as_object().cloned().unwrap_or_default();
        project::anchor("bash", &mut anchored, &cwd, &root);
        output.specific.updated_input = Some(jailed_bash(
            args,
            &root,
            &serde_json::Value::Object(anchored),
        )?);
        output.specific.reason.push_str(
            "; reasonix: the command runs inside Reasonix's jail (hook claude --jail), its changes judged before they land",
        );
    }
    let decision = match output.specific.decision {
        Permission::Allow => "allow",
        Permission::Ask => "ask",
        Permission::Deny => "deny",
    };
    hook_span.record("reasonix.decision", decision);
    let line = |tool: Option<String>, arguments: Option<&str>, a: Option<&Admission>| HookRecord {
        run_id: run_id.clone(),
        time_ms: now_ms(),
        event: "claude_hook",
        tool_use_id: input.tool_use_id.clone(),
        claude_tool: input.tool_name.clone(),
        permission_mode: input.permission_mode.clone(),
        tool,
        arguments: arguments.map(|s| shorten(s, ARGUMENTS_BOUND, Keep::Head).into_owned()),
        arguments_sha256: arguments.map(|s| sha256(s.as_bytes())),
        admission: a.map(AdmissionRecord::of),
        decision,
        reason: output.specific.reason.clone(),
    };
    if judged.is_empty() {
        recorder
            .append_end(&line(None, None, None))
            .context("cannot write the execution record")?;
    }
    for (i, (tool, arguments, a)) in judged.iter().enumerate() {
        let line = line(Some(tool.clone()), Some(arguments), Some(a));
        if i + 1 == judged.len() {
            recorder.append_end(&line)
        } else {
            recorder.append(&line)
        }
        .context("cannot write the execution record")?;
    }
    let mut stdout = super::out::Stdout::plain();
    serde_json::to_writer(&mut stdout, &output)?;
    writeln!(stdout)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// OpenTelemetry's metrics of one call the hook judged: `reasonix.calls` (nothing runs here, so
/// the outcome is `invalid`, `blocked` or none, as `check` says it) and the admission's
/// latency; an ask the posture (or a pre-tool hook) settled is an ask answered. An ask passed
/// on to Claude Code is answered by Claude's user, out of Reasonix's sight: not counted.
fn judged_for_telemetry(a: &Admission, took: std::time::Duration) {
    let outcome = match a.verdict {
        reasonix::Verdict::Invalid => Some("invalid"),
        reasonix::Verdict::Deny => Some("blocked"),
        _ => None,
    };
    reasonix::telemetry::call_judged(
        a.tool.as_deref().unwrap_or(""),
        a.verdict.as_str(),
        outcome,
        took,
    );
    if let Some(by) = a.ask_settled_by {
        reasonix::telemetry::ask_answered(a.verdict.as_str(), by);
    }
}

/// `Bash`'s input with its command rewritten to run in Reasonix's jail: `reasonix sandbox exec
/// --observe` over the same workspace and policies, running `bash -c COMMAND` — read-only
/// where the analysis vouches the command changes nothing, else on an overlay whose changes
/// are judged before they land. Every other field of the input is kept; a `timeout` (ms)
/// becomes the jail's wall clock as well.
fn jailed_bash(
    args: &ClaudeArgs,
    workspace: &std::path::Path,
    input: &serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let command = input
        .get("command")
        .and_then(serde_json::Value::as_str)
        .context("the Bash call has no command to run in the jail")?;
    let exe = std::env::current_exe().context("cannot name this reasonix for the jail")?;
    let mut words = vec![
        exe.display().to_string(),
        "sandbox".into(),
        "exec".into(),
        "--workspace".into(),
        workspace.display().to_string(),
    ];
    for p in &args.policies {
        words.push("--policy".into());
        words.push(super::absolute(p)?.display().to_string());
    }
    if let Some(ms) = input.get("timeout").and_then(serde_json::Value::as_u64) {
        words.push("--timeout-ms".into());
        words.push(ms.to_string());
    }
    let read_only = reasonix::shell::Analysis::of(command).read_only;
    if !read_only {
        words.push("--observe".into());
    } else {
        words.push("--read-only".into());
    }
    words.extend(["--".into(), "bash".into(), "-c".into(), command.to_owned()]);
    let rewritten = shlex::try_join(words.iter().map(String::as_str))
        .map_err(|e| anyhow::anyhow!("the command cannot be quoted for Claude's shell: {e}"))?;
    let mut updated = input.clone();
    if let Some(object) = updated.as_object_mut() {
        object.insert("command".into(), serde_json::Value::String(rewritten));
    }
    Ok(updated)
}

/// The settings.json snippet: every tool (`matcher: "*"`) goes through the hook.
fn print_settings(args: &ClaudeArgs) -> anyhow::Result<ExitCode> {
    let mut words = vec!["reasonix".to_owned(), "hook".into(), "claude".into()];
    for p in &args.policies {
        words.push("--policy".into());
        words.push(p.display().to_string());
    }
    for d in &args.data {
        words.push("--data".into());
        words.push(d.display().to_string());
    }
    if matches!(args.posture, PostureArg::Unattended | PostureArg::Strict) {
        words.push("--posture".into());
        words.push(
            match args.posture {
                PostureArg::Unattended => "unattended",
                _ => "strict",
            }
            .into(),
        );
    }
    if let Some(r) = &args.record {
        words.push("--record".into());
        words.push(r.display().to_string());
    }
    if args.jail {
        words.push("--jail".into());
    }
    let command = shlex::try_join(words.iter().map(String::as_str))
        .map_err(|e| anyhow::anyhow!("a flag cannot be quoted for a shell: {e}"))?;
    let settings = serde_json::json!({
        "hooks": {
            "PreToolUse": [{
                "matcher": "*",
                "hooks": [{"type": "command", "command": command, "timeout": 60}]
            }]
        }
    });
    let mut stdout = super::out::Stdout::plain();
    serde_json::to_writer_pretty(&mut stdout, &settings)?;
    writeln!(stdout)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
