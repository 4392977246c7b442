//! `reasonix report`: a run's execution record, or a decision log, shown to a person
//! ([`reasonix::report`]): `-o report.html` writes one self-contained HTML page (no network, no
//! external script or font) a reviewer opens from a CI artifact; `--summary` prints the header
//! and counts as text for a terminal or a CI log. Both may be given.
//!
//! Exit status: 0 written, 2 a usage error or a file that cannot be read or written.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use reasonix::report::{Record, decision_log, html};

use super::note;

#[derive(Args)]
pub struct ReportArgs {
    /// The execution record (default: .reasonix/record.jsonl in the current folder).
    #[arg(value_name = "RECORD", conflicts_with = "decision_log")]
    record: Option<PathBuf>,
    /// Report on this decision log (many runs) instead: the rules that fire most, asks by
    /// tool, denies over time.
    #[arg(long, value_name = "FILE")]
    decision_log: Option<PathBuf>,
    /// Write the HTML page here.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the header and counts as text.
    #[arg(long)]
    summary: bool,
}

/// Runs `reasonix report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if args.output.is_none() && !args.summary {
        bail!("say where the page goes with -o FILE, or ask for --summary (text on stdout)");
    }
    let (page, summary) = match &args.decision_log {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the decision log {}", path.display()))?;
            let log = decision_log::DecisionLog::parse(&text);
            (
                args.output.is_some().then(|| decision_log::page(&log)),
                log.summary(),
            )
        }
        None => {
            let path = args
                .record
                .clone()
                .unwrap_or_else(|| PathBuf::from(".reasonix/record.jsonl"));
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read the execution record {}", path.display()))?;
            let mut record = Record::parse(&text);
            // The content store beside the record: what a changed file held before and after
            // its call, for the page's diffs.
            record.store = Some(reasonix::rewind::Store::beside(&path));
            (
                args.output.is_some().then(|| html::page(&record)),
                record.summary(),
            )
        }
    };
    if let (Some(out), Some(page)) = (&args.output, page) {
        std::fs::write(out, page).with_context(|| format!("cannot write {}", out.display()))?;
        note(&format!("report written to {}", out.display()));
    }
    if args.summary {
        let mut stdout = super::out::Stdout::plain();
        stdout.write_all(summary.as_bytes())?;
        stdout.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}
