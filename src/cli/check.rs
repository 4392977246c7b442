//! `reasonix check`: the gate's dry run. Same gate as a live run, stopped before execution.
//!
//! With a CALL argument it judges that one call; without, it reads JSONL from stdin and writes
//! one verdict per call, in order. A blank line is skipped; a malformed line gets an `invalid`
//! verdict and the run goes on.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use reasonix::{Posture, Verdict};

use super::render;

#[derive(Args)]
pub struct CheckArgs {
    /// A YAML policy file or a folder of them; repeat to merge several. Without any, the
    /// embedded default policy is used.
    #[arg(long = "policy", value_name = "PATH")]
    policies: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego policies; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
    /// The workspace the call runs in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Who answers an `ask`: interactive, unattended or strict.
    #[arg(long, default_value = "interactive", value_parser = parse_posture)]
    posture: Posture,
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

fn parse_posture(s: &str) -> Result<Posture, String> {
    s.parse()
}

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let policy = super::policy(&args.policies, &args.data, "; nothing was checked")?;
    let workspace = super::workspace(args.workspace.as_deref())?;
    let (gate, _) = super::gate(super::GateSpec {
        workspace: &workspace,
        policy: &policy,
        policies: &args.policies,
        data: &args.data,
        record: None,
        posture: args.posture,
        explain: args.explain,
    })?;

    let mut worst: Option<Verdict> = None;
    let stdout = anstream::stdout();
    let mut out = stdout.lock();
    let mut judge = |text: &str, out: &mut dyn Write| -> anyhow::Result<()> {
        let judgement = gate.admit_text(text);
        let admission = judgement.admission();
        worst = worst.max(Some(admission.verdict));
        match args.format {
            Format::Json => {
                serde_json::to_writer(&mut *out, admission)?;
                writeln!(out)?;
            }
            Format::Text => render::admission(out, admission)?,
        }
        out.flush()?;
        Ok(())
    };
    match &args.call {
        Some(call) => judge(call, &mut out)?,
        None => {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let line = line.context("cannot read stdin")?;
                if line.trim().is_empty() {
                    continue;
                }
                judge(&line, &mut out)?;
            }
        }
    }
    Ok(ExitCode::from(exit_status(worst)))
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
