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
    let mut worst: Option<Verdict> = None;
    let mut judge = |text: Result<&str, String>, line: Option<usize>, out: &mut dyn Write| {
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
        worst = worst.max(Some(admission.verdict));
        match args.format {
            Format::Json => {
                serde_json::to_writer(
                    &mut *out,
                    &Line {
                        line,
                        admission: &admission,
                    },
                )?;
                writeln!(out)
            }
            Format::Text => render::admission(out, &admission, line),
        }
    };
    let written = match &args.call {
        Some(call) => judge(Ok(call), None, &mut out).and_then(|()| out.flush()),
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
                &mut judge,
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

/// Judges one call (or says why a line is not one) and writes its verdict.
type Judge<'a> =
    dyn FnMut(Result<&str, String>, Option<usize>, &mut dyn Write) -> std::io::Result<()> + 'a;

/// Judges each line of a JSONL stream on its own: a line that is not UTF-8 is an `invalid`
/// verdict like any other bad line, a UTF-8 byte order mark before the first line is ignored, a
/// blank line is skipped. Output is flushed whenever no complete line is waiting, so a program
/// that sends one call at a time gets each verdict at once.
fn stream(
    input: BufReader<impl Read>,
    out: &mut dyn Write,
    judge: &mut Judge<'_>,
) -> std::io::Result<()> {
    let mut input = input;
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        if !input.buffer().contains(&b'\n') {
            out.flush()?;
        }
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            return out.flush();
        }
        n += 1;
        let mut bytes = buf.as_slice();
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
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => judge(Ok(text), Some(n), out)?,
            Err(e) => judge(
                Err(format!(
                    "line {n} is not UTF-8 (an invalid byte at offset {}); each line must be one call as UTF-8 JSON",
                    e.valid_up_to()
                )),
                Some(n),
                out,
            )?,
        }
    }
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
