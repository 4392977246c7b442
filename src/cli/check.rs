//! `reasonix check`: the gate's dry run. Same gate as a live run, stopped before execution.
//!
//! With a CALL argument it judges that one call; without, it reads JSONL from stdin and writes
//! one verdict per call, in order, each with the line it answers. A blank line is skipped; a
//! malformed line — not JSON, not UTF-8, not a call — gets an `invalid` verdict and the run goes
//! on. When the reader of the output goes away (`| head -1`), it stops quietly.

use std::io::{BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use reasonix::{Admission, Posture, Verdict};
use serde::Serialize;

use super::render;
use super::{GateModeArg, PostureArg};

#[derive(Args)]
pub struct CheckArgs {
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
    /// The workspace the call runs in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Who answers an `ask`.
    #[arg(long, value_enum, default_value_t = PostureArg::Interactive)]
    posture: PostureArg,
    /// Judge as a run in this mode would: in `plan` mode every call that is not read-only is
    /// blocked at stage `plan`, and `submit_plan` exists.
    #[arg(long, value_enum, default_value_t = GateModeArg::Normal)]
    mode: GateModeArg,
    /// Output: `text` for people, `json` for scripts (one JSON object per call and line).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also print the policy input document each call produces (Rego's `input`); in JSON
    /// output it is the verdict's `input` field.
    #[arg(long)]
    explain: bool,
    /// Leave MCP servers out: no server is started, and a call to an MCP tool is invalid.
    /// Without it, a server starts (after its `mcp_connect__NAME` call is judged and allowed)
    /// only when a call names one of its tools.
    #[arg(long)]
    no_mcp: bool,
    /// Leave the pre-tool hooks of reasonix.yaml out (each verdict a hook would have judged
    /// says so). Without it, check runs them as a live run would, and shows their decision.
    #[arg(long)]
    no_hooks: bool,
    /// The call, as JSON: {"name": ..., "arguments": {...}}. Without it, JSONL is read from stdin.
    #[arg(value_name = "CALL")]
    call: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace.as_deref())?;
    let posture = Posture::from(args.posture);
    let spec = super::GateSpec {
        workspace: &workspace,
        policies: super::Policies::Named {
            policies: &args.policies,
            data: &args.data,
            refused: "; nothing was checked",
        },
        fleet: &args.fleet,
        record: None,
        posture,
        mode: args.mode.into(),
        explain: args.explain,
        dry_run: true,
    };
    let built = super::gate(spec)?;
    let decisions = super::decision_log(&built, &args.fleet)?;
    let telemetry = super::telemetry(built.config())?;
    // The batch's span: the root of its trace when OpenTelemetry export is on.
    let batch = tracing::info_span!(
        parent: None,
        "check",
        "reasonix.posture" = ?posture,
        "reasonix.calls" = tracing::field::Empty,
    );
    let entered = batch.enter();
    // The gate's spans on this thread (and the judging threads) belong to the batch.
    let in_batch = reasonix::telemetry::parent(reasonix::telemetry::context_of(&batch));
    if args.format == Format::Text
        && let Some(notice) = built.chosen.default_notice()
    {
        super::warn(&notice);
    }
    // What the project's files asked for that needs the user's trust is left out: check judges
    // with the narrowing part, and says so on stderr (text and JSON output alike).
    if let Some(message) = built.untrusted() {
        super::warn_lines(&format!(
            "{message}. These calls are judged without what was left out"
        ));
    }
    let mut servers = if args.no_mcp {
        None
    } else {
        Some(connect_servers(spec, &built)?)
    };
    let mut gate = if args.no_mcp {
        let mut registry = reasonix::Registry::with_builtins();
        registry.withdraw("mcp__", "MCP servers are left out (--no-mcp)");
        built
            .gate
            .with_registry(registry)
            .context("cannot set up the gate")?
    } else {
        built.gate
    };
    // `--no-hooks`: judged without the pre-tool hooks, each verdict a hook would have judged
    // saying so.
    if args.no_hooks {
        gate = gate.leaving_out_hooks();
    }

    let stdout = std::io::stdout().lock();
    // JSON has no escapes to strip and goes straight to a buffer; text keeps its colour on a
    // terminal and loses it on a pipe. A bash call's verdict is over a kilobyte: the buffer
    // holds a batch's worth, so a stream costs one write per batch rather than per few lines.
    let mut out: Box<dyn Write> = match args.format {
        Format::Json => Box::new(BufWriter::with_capacity(OUT_BUFFER, stdout)),
        Format::Text => Box::new(BufWriter::with_capacity(
            OUT_BUFFER,
            anstream::AutoStream::auto(stdout),
        )),
    };
    let format = args.format;
    // One call judged by `gate` and its verdict rendered. An MCP server's connect is judged as
    // `run` judges it: by the connect gate, whose hooks stage passes connects by.
    let judge_with = |gate: &reasonix::Gate,
                      text: Result<&str, String>,
                      line: Option<usize>|
     -> std::io::Result<Judged> {
        let began = reasonix::telemetry::on().then(std::time::Instant::now);
        let mut admission = match text {
            Ok(text) => {
                // The gate's last stage runs the pre-tool hooks (not on a connect).
                let mut a = gate.admit_text(text).into_admission();
                if let (Some(n), Verdict::Invalid) = (line, a.verdict) {
                    a.reasons = a.reasons.iter().map(|r| on_line(r, n, text)).collect();
                }
                a
            }
            Err(why) => {
                let mut a = Admission::unreadable(why, posture);
                a.policy_revision = gate.policy_revision();
                a
            }
        };
        if let Some(began) = began {
            reasonix::telemetry::call_judged(
                admission.tool.as_deref().unwrap_or(""),
                admission.verdict.as_str(),
                match admission.verdict {
                    Verdict::Invalid => Some("invalid"),
                    Verdict::Deny => Some("blocked"),
                    _ => None,
                },
                began.elapsed(),
            );
        }
        // Logged as judged, input and all; logged when written, so in input order.
        let logged = decisions.as_ref().map(|_| {
            let logged = admission.clone();
            if !args.explain {
                admission.input = None;
            }
            logged
        });
        let mut bytes = Vec::with_capacity(1024);
        match format {
            Format::Json => {
                serde_json::to_writer(
                    &mut bytes,
                    &Line {
                        line,
                        admission: &admission,
                    },
                )?;
                bytes.push(b'\n');
            }
            Format::Text => render::admission(&mut bytes, &admission, line)?,
        }
        Ok(Judged {
            verdict: admission.verdict,
            bytes,
            logged,
        })
    };
    // Calls are judged one after another, in input order, when judging one may change how the
    // next is judged (a call to a configured MCP server starts it, and its tools join the gate)
    // or runs a program of the user's (a pre-tool hook); otherwise each call is judged on its
    // own, on any thread: the gate is immutable (a newer bundle is swapped in between calls).
    // Decisions are logged as verdicts are written, in input order either way.
    let in_order = servers.as_ref().is_some_and(|s| s.names().next().is_some())
        || (gate.hooks().is_some() && !args.no_hooks);
    let log = decisions.as_deref();
    let explaining = args.explain || decisions.is_some();
    let mut one_by_one = |text: Result<&str, String>, line: Option<usize>| {
        if let (Some(servers), Ok(text)) = (servers.as_mut(), &text) {
            if let Some(connecting) = connect_gate(servers, text, explaining) {
                return judge_with(&connecting, Ok(text), line);
            }
            start_named_server(servers, &mut gate, text);
        }
        judge_with(&gate, text, line)
    };
    let mut worst: Option<Verdict> = None;
    let written = match &args.call {
        Some(call) => one_by_one(Ok(call), None).and_then(|j| {
            worst = Some(j.verdict);
            out.write_all(&j.bytes)?;
            if let (Some(log), Some(a)) = (log, &j.logged) {
                log.decide(a, None);
            }
            out.flush()
        }),
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                eprintln!(
                    "reasonix check: reading calls from stdin, one JSON object per line (JSONL); end with Ctrl-D, or pass a CALL argument"
                );
            }
            // A buffer of our own, larger than stdin's, so that no line waits unseen in stdin's
            // buffer while this one looks empty.
            let input = BufReader::with_capacity(64 * 1024, stdin);
            if in_order {
                stream(
                    input,
                    &mut out,
                    Judging::InOrder(&mut one_by_one),
                    &mut worst,
                    log,
                )
            } else {
                let gate = &gate;
                let each =
                    |text: Result<&str, String>, line: Option<usize>| judge_with(gate, text, line);
                stream(input, &mut out, Judging::Apart(&each), &mut worst, log)
            }
        }
    };
    if let Some(log) = &decisions {
        log.close();
    }
    drop(in_batch);
    drop(entered);
    drop(batch);
    super::telemetry_end(telemetry);
    match written {
        Ok(()) => {}
        // The reader went away (`check … | head -1`): stop quietly.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => return Err(e).context("cannot write the verdicts"),
    }
    Ok(ExitCode::from(exit_status(worst)))
}

/// The workspace's MCP servers, connected as `run` connects them: each connect call judged by a
/// normal-mode gate (in `--mode plan` too: a server must start for its read-only tools to be
/// offered) whose jail plan is built, not a dry run's — a connect `check` admits really starts
/// the server, in the jail. That gate is built only when some server is configured.
fn connect_servers(
    spec: super::GateSpec<'_>,
    built: &super::Built,
) -> anyhow::Result<reasonix::agent::servers::Servers> {
    let configured = reasonix::mcp::servers(
        built.settings.mcp_json(),
        &built.config().mcp_servers.clone().unwrap_or_default(),
    )
    .map_err(anyhow::Error::msg)
    .context("the MCP servers are not configured right (--no-mcp leaves them out)")?;
    if configured.is_empty() {
        return super::mcp_servers(
            &built.gate,
            &built.settings,
            reasonix::sandbox::jail::Writes::Direct,
        );
    }
    let connecting = super::gate(super::GateSpec {
        mode: reasonix::GateMode::Normal,
        explain: false,
        dry_run: false,
        ..spec
    })?;
    super::mcp_servers(
        &connecting.gate,
        &connecting.settings,
        reasonix::sandbox::jail::Writes::Direct,
    )
}

/// The gate that judges `text` when it is the connect call of a configured MCP server
/// (`mcp_connect__NAME`): the gate `run` judges that connect with, attaching the policy input
/// when `explain`. Judging it starts nothing; a call to one of the server's tools does.
fn connect_gate(
    servers: &reasonix::agent::servers::Servers,
    text: &str,
    explain: bool,
) -> Option<reasonix::Gate> {
    let call = reasonix::Call::parse(text).ok()?;
    let name = call.name.strip_prefix("mcp_connect__")?;
    servers
        .has(name)
        .then(|| servers.connect_gate().with_explain(explain))
}

/// Starts the MCP server a call names, if it is configured and not tried yet: its connect call
/// is judged by the same gate, and only an allowed one starts it (a dry run asks nobody, so a
/// connect that needs a person stays unstarted, and the call says why). Then the gate is
/// rebuilt with the server's tools.
fn start_named_server(
    servers: &mut reasonix::agent::servers::Servers,
    gate: &mut reasonix::Gate,
    text: &str,
) {
    let Ok(call) = reasonix::Call::parse(text) else {
        return;
    };
    let Some(name) = reasonix::mcp::server_reached(&call) else {
        return;
    };
    let name = name.as_str();
    if !servers.has(name) || servers.tried(name) {
        return;
    }
    let connected = servers.connect(name, &mut |_| None);
    let a = &connected.admission;
    let how = match &connected.result {
        Ok(c) => format!("started, {} tools", c.tools().len()),
        Err(e) => format!("not started: {e}"),
    };
    super::note(&format!(
        "{}: {} at stage {}; {how}",
        reasonix::mcp::connect_name(name),
        a.verdict,
        a.stage.as_str()
    ));
    let (registry, unavailable) = servers.registry();
    super::unavailable_notes(&unavailable);
    match gate.with_registry(registry) {
        Ok(with) => *gate = with,
        Err(e) => super::warn(&format!("the MCP tools are left out: {e}")),
    }
}

/// One verdict as a JSON line: the admission, with the line of the input it answers (`null`
/// for a CALL argument).
#[derive(Serialize)]
struct Line<'a> {
    line: Option<usize>,
    #[serde(flatten)]
    admission: &'a Admission,
}

/// A call judged: its verdict, and the output that says it.
struct Judged {
    verdict: Verdict,
    bytes: Vec<u8>,
    /// The admission as judged, for the decision log (when one is on).
    logged: Option<Admission>,
}

/// Judges one call (or says why a line is not one) and renders its verdict.
type Judge<'a> = dyn Fn(Result<&str, String>, Option<usize>) -> std::io::Result<Judged> + Sync + 'a;

/// The same, for calls that must be judged one after another.
type JudgeInOrder<'a> =
    dyn FnMut(Result<&str, String>, Option<usize>) -> std::io::Result<Judged> + 'a;

/// How the calls of a stream are judged.
enum Judging<'a, 'b> {
    /// Each on its own: the lines waiting together may be judged on several threads.
    Apart(&'a Judge<'b>),
    /// One after another, in input order, on this thread.
    InOrder(&'a mut JudgeInOrder<'b>),
}

/// The output buffer, in bytes.
const OUT_BUFFER: usize = 256 * 1024;

/// At most this many waiting lines are judged together.
const BATCH: usize = 256;
/// A batch smaller than this is judged on the reading thread alone.
const PARALLEL_FROM: usize = 16;

/// Judges each line of a JSONL stream on its own: a line that is not UTF-8 is an `invalid`
/// verdict like any other bad line, a UTF-8 byte order mark before the first line is ignored, a
/// blank line is skipped. Output is flushed whenever no complete line is waiting, so a program
/// that sends one call at a time gets each verdict at once.
///
/// The lines already waiting in the buffer (up to [`BATCH`]) are judged together — spread over
/// the machine's cores when there are enough of them and the calls may be judged apart — and
/// their verdicts written in input order; a line that arrives alone is judged and answered alone.
fn stream(
    input: BufReader<impl Read>,
    out: &mut dyn Write,
    mut judging: Judging<'_, '_>,
    worst: &mut Option<Verdict>,
    log: Option<&reasonix::decisions::DecisionLog>,
) -> std::io::Result<()> {
    let mut input = input;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let mut buf = Vec::new();
    let mut n = 0;
    let mut batch: Vec<(usize, Result<String, String>)> = Vec::with_capacity(BATCH);
    loop {
        // The first line of a batch may wait for input; the rest are already here.
        batch.clear();
        let mut eof = false;
        while batch.len() < BATCH && (batch.is_empty() || input.buffer().contains(&b'\n')) {
            buf.clear();
            if input.read_until(b'\n', &mut buf)? == 0 {
                eof = true;
                break;
            }
            n += 1;
            if let Some(item) = item(n, &buf) {
                batch.push((n, item));
            }
        }
        let judged = match &mut judging {
            Judging::Apart(judge) => judge_all(&batch, *judge, threads)?,
            Judging::InOrder(judge) => batch
                .iter()
                .map(|(n, item)| judge(item.as_deref().map_err(Clone::clone), Some(*n)))
                .collect::<std::io::Result<Vec<_>>>()?,
        };
        for judged in judged {
            *worst = (*worst).max(Some(judged.verdict));
            out.write_all(&judged.bytes)?;
            if let (Some(log), Some(a)) = (log, &judged.logged) {
                log.decide(a, None);
            }
        }
        if eof {
            return out.flush();
        }
        if !input.buffer().contains(&b'\n') {
            out.flush()?;
        }
    }
}

/// One line of the stream as a call's text, or why it is not one; `None` for a blank line.
fn item(n: usize, line: &[u8]) -> Option<Result<String, String>> {
    let mut bytes = line;
    if n == 1 {
        bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    }
    while let Some(rest) = bytes
        .strip_suffix(b"\n")
        .or_else(|| bytes.strip_suffix(b"\r"))
    {
        bytes = rest;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) if text.trim().is_empty() => None,
        Ok(text) => Some(Ok(text.to_owned())),
        Err(e) => Some(Err(format!(
            "line {n} is not UTF-8 (an invalid byte at offset {}); each line must be one call as UTF-8 JSON",
            e.valid_up_to()
        ))),
    }
}

/// Judges a batch of lines, in order: on this thread alone when it is small, else on `threads`
/// threads that each take the next line not yet taken (a bash call costs several file calls, so
/// a fixed share per thread would leave one waiting for the other).
fn judge_all(
    batch: &[(usize, Result<String, String>)],
    judge: &Judge<'_>,
    threads: usize,
) -> std::io::Result<Vec<Judged>> {
    let one = |(n, item): &(usize, Result<String, String>)| {
        judge(item.as_deref().map_err(Clone::clone), Some(*n))
    };
    if threads < 2 || batch.len() < PARALLEL_FROM {
        return batch.iter().map(one).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Each thread's calls belong to the batch's span (its trace, when export is on).
    let parent = tracing::Span::current();
    let otel_parent = reasonix::telemetry::context_of(&parent);
    let work = || {
        let _in_batch = parent.enter();
        let _otel = reasonix::telemetry::parent(otel_parent.clone());
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(line) = batch.get(i) else {
                return done;
            };
            done.push((i, one(line)));
        }
    };
    let mut results: Vec<Option<std::io::Result<Judged>>> = Vec::new();
    results.resize_with(batch.len(), || None);
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for handle in others {
            // A panic in a judge is a bug; carried on as it would be on one thread.
            all.extend(
                handle
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            );
        }
        for (i, judged) in all {
            results[i] = Some(judged);
        }
    });
    // Every index was taken exactly once; the first error in input order wins.
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(std::io::Error::other("a line was not judged"))))
        .collect()
}

/// A parse error of one stream line, placed on that line of the stream (serde_json counts from
/// the start of the line), with a hint when the line looks like the start of a pretty-printed
/// call.
fn on_line(reason: &str, n: usize, text: &str) -> String {
    let mut r = reason.replace(" at line 1 column ", &format!(" at line {n} column "));
    let t = text.trim();
    if reason.starts_with("the call is not valid JSON")
        && (t == "{" || t.starts_with('{') && r.contains("EOF while parsing"))
    {
        r.push_str("; one call per line: a pretty-printed call spans several lines, write each call on a single line (e.g. `jq -c`)");
    }
    r
}

/// 0 all allow, 10 some ask, 20 some deny, 30 some invalid. Nothing checked is 0.
fn exit_status(worst: Option<Verdict>) -> u8 {
    match worst {
        None | Some(Verdict::Allow) => 0,
        Some(Verdict::Ask) => 10,
        Some(Verdict::Deny) => 20,
        Some(Verdict::Invalid) => 30,
    }
}
