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

use super::PostureArg;
use super::render;

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
    /// The workspace the call runs in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Who answers an `ask`.
    #[arg(long, value_enum, default_value_t = PostureArg::Interactive)]
    posture: PostureArg,
    /// Output: `text` for people, `json` for scripts (one JSON object per call and line).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also print the policy input document each call produces (Rego's `input`); in JSON
    /// output it is the verdict's `input` field.
    #[arg(long)]
    explain: bool,
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
    let built = super::gate(super::GateSpec {
        workspace: &workspace,
        policies: super::Policies::Named {
            policies: &args.policies,
            data: &args.data,
            refused: "; nothing was checked",
        },
        record: None,
        posture,
        explain: args.explain,
    })?;
    if args.format == Format::Text
        && let Some(notice) = built.chosen.default_notice()
    {
        super::warn(&notice);
    }
    let gate = built.gate;

    let stdout = std::io::stdout().lock();
    // JSON has no escapes to strip and goes straight to a buffer; text keeps its colour on a
    // terminal and loses it on a pipe.
    let mut out: Box<dyn Write> = match args.format {
        Format::Json => Box::new(BufWriter::new(stdout)),
        Format::Text => Box::new(BufWriter::new(anstream::AutoStream::auto(stdout))),
    };
    let format = args.format;
    // One call judged and its verdict rendered, on whichever thread: the gate is immutable
    // and every call is judged on its own.
    let judge = |text: Result<&str, String>, line: Option<usize>| -> std::io::Result<Judged> {
        let admission = match text {
            Ok(text) => {
                let mut a = gate.admit_text(text).into_admission();
                if let (Some(n), Verdict::Invalid) = (line, a.verdict) {
                    a.reasons = a.reasons.iter().map(|r| on_line(r, n, text)).collect();
                }
                a
            }
            Err(why) => Admission::unreadable(why, posture),
        };
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
        })
    };
    let mut worst: Option<Verdict> = None;
    let written = match &args.call {
        Some(call) => judge(Ok(call), None).and_then(|j| {
            worst = Some(j.verdict);
            out.write_all(&j.bytes)?;
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
            stream(
                BufReader::with_capacity(64 * 1024, stdin),
                &mut out,
                &judge,
                &mut worst,
            )
        }
    };
    match written {
        Ok(()) => {}
        // The reader went away (`check … | head -1`): stop quietly.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => return Err(e).context("cannot write the verdicts"),
    }
    Ok(ExitCode::from(exit_status(worst)))
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
}

/// Judges one call (or says why a line is not one) and renders its verdict.
type Judge<'a> = dyn Fn(Result<&str, String>, Option<usize>) -> std::io::Result<Judged> + Sync + 'a;

/// At most this many waiting lines are judged together.
const BATCH: usize = 256;
/// A batch smaller than this is judged on the reading thread alone.
const PARALLEL_FROM: usize = 16;

/// Judges each line of a JSONL stream on its own: a line that is not UTF-8 is an `invalid`
/// verdict like any other bad line, a UTF-8 byte order mark before the first line is ignored, a
/// blank line is skipped. Output is flushed whenever no complete line is waiting, so a program
/// that sends one call at a time gets each verdict at once.
///
/// The lines already waiting in the buffer (up to [`BATCH`]) are judged together, spread over
/// the machine's cores when there are enough of them, and their verdicts written in input order;
/// a line that arrives alone is judged and answered alone.
fn stream(
    input: BufReader<impl Read>,
    out: &mut dyn Write,
    judge: &Judge<'_>,
    worst: &mut Option<Verdict>,
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
        for judged in judge_all(&batch, judge, threads)? {
            *worst = (*worst).max(Some(judged.verdict));
            out.write_all(&judged.bytes)?;
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

/// Judges a batch of lines, in order: on this thread alone when it is small, else dealt out
/// in turn to `threads` threads (bash calls cost several file calls; dealing in turn evens the
/// load).
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
    let share = |k: usize| -> std::io::Result<Vec<Judged>> {
        batch.iter().skip(k).step_by(threads).map(one).collect()
    };
    let shares: Vec<std::io::Result<Vec<Judged>>> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads)
            .map(|k| scope.spawn(move || share(k)))
            .collect();
        let mut shares = vec![share(0)];
        for handle in others {
            // A panic in a judge is a bug; carried on as it would be on one thread.
            shares.push(
                handle
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            );
        }
        shares
    });
    let mut shares = shares
        .into_iter()
        .map(|s| s.map(Vec::into_iter))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut all = Vec::with_capacity(batch.len());
    for i in 0..batch.len() {
        if let Some(judged) = shares[i % threads].next() {
            all.push(judged);
        }
    }
    Ok(all)
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
