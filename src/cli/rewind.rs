//! `reasonix rewind`: undo what the file tools of earlier runs changed, as their execution record
//! tells it ([`reasonix::rewind`]).
//!
//! `--to CALL_ID` undoes that call and every later one; `--last N` the last N changes not yet
//! undone; `--list` shows what can be undone. Newest first, each path goes back to how it was
//! before its call — unless it changed since (someone edited it), which is left alone and named
//! unless `--force`. Shell commands in the range are listed as not restorable: their effects
//! were never observed. Each rewind is a `rewind` line of the record (a `--dry-run` writes
//! nothing). The record is locked meanwhile: a run still writing it makes the rewind refuse.
//!
//! A rewind runs outside any jail, so it writes only where the gate would let a file tool write
//! at all ([`reasonix::Gate::changeable`]): beneath the workspace and the `write_roots` of the
//! policies in force (`--policy`, else those `reasonix.yaml` names, else the embedded default),
//! never a host file. A path the record names elsewhere is listed as not restorable.
//!
//! A call noted in the store and missing from the record (its run stopped between running it
//! and recording it) is a point like any other; what it left is unknown, so its files go back
//! only with `--force`.
//!
//! Exit status: 0 every change in range restored (or the list shown), 1 some file was left
//! alone or could not be restored (a shell command whose effects were never observed
//! included), 2 a usage or configuration error (no such record or call), or a record that does
//! not verify (issue 28: see [`reasonix::seal`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anstyle::{AnsiColor, Style};
use anyhow::{Context, bail};
use clap::Args;
use reasonix::record::{Recorder, RewindRecord, RewoundFile, now_ms, run_id};
use reasonix::rewind::{Ledger, Store, Target, rewind};
use reasonix::text::visible;
use reasonix::{GateMode, Posture};

use super::note;

#[derive(Args)]
pub struct RewindArgs {
    /// The execution record (default: the one reasonix.yaml names, else .reasonix/record.jsonl
    /// in the workspace).
    #[arg(long, value_name = "PATH")]
    record: Option<PathBuf>,
    /// The workspace whose record it is (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The policies whose `write_roots` a rewind may write beneath, besides the workspace, and
    /// whose files it never writes (as `run` takes them; default: those reasonix.yaml names,
    /// else the embedded default).
    #[arg(long = "policy", value_name = "PATH")]
    policies: Vec<PathBuf>,
    /// Data files of the policies (as `run` takes them).
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
    /// Undo this call and every later one: each file goes back to how it was just before it.
    #[arg(
        long,
        value_name = "CALL_ID",
        conflicts_with_all = ["last", "list"],
        required_unless_present_any = ["last", "list"]
    )]
    to: Option<String>,
    /// With --to: the run the call belongs to (default: the latest run that has that call id).
    #[arg(long, value_name = "RUN_ID", requires = "to")]
    run: Option<String>,
    /// Undo the last N changes not yet undone (a change: one call of a file tool).
    #[arg(long, value_name = "N", value_parser = at_least_one, conflicts_with = "list")]
    last: Option<usize>,
    /// Overwrite files that changed since their call (by default they are left alone).
    #[arg(long, conflicts_with = "list")]
    force: bool,
    /// Say what would be done; change nothing and record nothing.
    #[arg(long, conflicts_with = "list")]
    dry_run: bool,
    /// List the points the record can go back to: call id, tool, paths.
    #[arg(long)]
    list: bool,
    /// Rewind a record none of whose lines is signed although a record key exists (one
    /// written without the key, or forged): by default it is refused.
    #[arg(long)]
    unsigned: bool,
}

/// Whether a rewind may act on a record (issue 28): it refuses one that does not verify — a
/// line changed, removed, moved, inserted, or appended without the key — and an unsigned one
/// while a key exists, unless `--unsigned`. A record whose last writer never closed it (killed,
/// crashed, or its tail cut) is taken with a warning: nothing after its last line claims to be
/// part of it, so what is missing can only be a point rewind does not see.
fn trusted(text: &str, key: Option<&reasonix::seal::Key>, unsigned: bool) -> anyhow::Result<()> {
    let report = reasonix::seal::verify(text.as_bytes(), key);
    match &report.failure {
        Some(f) if f.incomplete => super::warn(&format!(
            "the record is incomplete at {f}; what its lines say is rewound, and a call after them is found only by its note"
        )),
        Some(f) => bail!(
            "the execution record does not verify at {f} (`reasonix record verify` says more); a rewind trusts only a record that does"
        ),
        None => {}
    }
    if key.is_some() && report.signed == 0 && report.unchecked == 0 && !unsigned {
        bail!(
            "no line of the record is signed, though a record key exists: it was written without the key, or forged (--unsigned rewinds it all the same)"
        );
    }
    if report.signed == 0 && report.unchecked == 0 {
        super::warn("the record is unsigned: its chain was checked, its authorship cannot be");
    } else if report.unchecked > 0 {
        super::warn("the record's signatures were not checked: no record key here");
    }
    Ok(())
}

/// `--last`: undoing nothing is not a rewind.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

pub fn run(args: RewindArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace.as_deref())?;
    // The gate a run would build: its roots and host files bound what a rewind may write.
    let built = super::gate(super::GateSpec {
        workspace: &workspace,
        policies: super::Policies::Named {
            policies: &args.policies,
            data: &args.data,
            refused: "; nothing was rewound",
        },
        fleet: &super::FleetArgs::default(),
        record: args.record.as_deref(),
        posture: Posture::Unattended,
        mode: GateMode::Normal,
        explain: false,
        dry_run: false,
    })?;
    // The key the record is checked with, taken before this rewind's own line could make one.
    let key = super::record::key(None, built.config().record.key_env.as_deref())?;
    let signing = (!args.list && !args.dry_run).then(|| super::signing(built.config()));
    let gate = built.gate;
    let workspace = gate.roots().workspace().to_path_buf();
    let record = gate.host_files().record().to_path_buf();
    if !record.is_file() {
        bail!("there is no execution record at {}", record.display());
    }
    let store = Store::beside(&record);
    // The record is locked while files go back, so no run writes it meanwhile; a dry run and a
    // listing only read it.
    let recorder = match signing {
        None => None,
        Some(signing) => Some(
            Recorder::open(&record, signing)
                .with_context(|| format!("cannot rewind with the record {}", record.display()))?,
        ),
    };
    let text = std::fs::read_to_string(&record)
        .with_context(|| format!("cannot read {}", record.display()))?;
    trusted(&text, key.as_ref(), args.unsigned)
        .with_context(|| format!("{}: nothing was rewound", record.display()))?;
    let interrupted = store.interrupted()?;
    let ledger = Ledger::parse(&text)
        .with_context(|| format!("{}", record.display()))?
        .with_interrupted(interrupted);
    if !ledger.damaged().is_empty() {
        super::warn(&format!(
            "lines {} of {} are not whole JSON (a run stopped while writing them) and were skipped; \
             a call such a line held is found by its note, if the run noted one",
            ledger
                .damaged()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            record.display()
        ));
    }
    let mut out = anstream::stdout().lock();

    if args.list {
        let points = ledger.points();
        if points.is_empty() {
            note(&format!("nothing to rewind in {}", record.display()));
        }
        for p in points {
            let paths: Vec<String> = ledger
                .pending(p)
                .iter()
                .map(|f| shown(&f.path, &workspace))
                .collect();
            writeln!(
                out,
                "{} {:<14} {:<12} {}{}",
                visible(&p.run_id),
                visible(&p.call_id),
                visible(&p.tool),
                paths.join(", "),
                if p.recorded {
                    ""
                } else {
                    " (not in the record: its run stopped before recording it; --force restores it)"
                }
            )?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }

    let target = match (&args.to, args.last) {
        (Some(call), _) => Target::To {
            call: call.clone(),
            run: args.run.clone(),
        },
        (None, Some(n)) => Target::Last(n),
        // clap requires one of --to, --last or --list.
        (None, None) => bail!("say how far back: --to CALL_ID or --last N"),
    };
    let bounds = |p: &Path, restore: reasonix::rewind::Restore<'_>| gate.restorable(p, restore);
    let report = rewind(&ledger, &store, &target, args.force, args.dry_run, &bounds)
        .with_context(|| format!("cannot rewind {}", record.display()))?;
    if let (Some((run, call)), true) = (&report.to, report.runs_with_call > 1) {
        note(&format!(
            "call {call} is in {} runs of this record; the latest, {run}, was taken (--run chooses another)",
            report.runs_with_call
        ));
    }

    let (restored, left) = if args.dry_run {
        ("would restore", "would leave")
    } else {
        ("restored", "left")
    };
    let lines = [
        (restored, AnsiColor::Green, &report.restored),
        (left, AnsiColor::Yellow, &report.left),
        ("not restorable", AnsiColor::Red, &report.not_restorable),
    ];
    for (label, color, files) in lines {
        let style = Style::new().bold().fg_color(Some(color.into()));
        for f in files {
            writeln!(out, "{style}{label}{style:#} {}", line(f, &workspace))?;
        }
    }
    out.flush()?;

    if let Some(recorder) = &recorder {
        let (to_run, to_call) = report.to.clone().unzip();
        recorder
            .append_end(&RewindRecord {
                run_id: run_id(),
                time_ms: now_ms(),
                event: "rewind",
                to_run,
                to_call,
                last: args.last,
                force: args.force,
                restored: report.restored.clone(),
                left: report.left.clone(),
                not_restorable: report.not_restorable.clone(),
            })
            .with_context(|| format!("cannot record the rewind in {}", record.display()))?;
    }
    let summary = format!(
        "{} {} path{}, {} left alone, {} not restorable{}; record: {}",
        if args.dry_run {
            "would restore"
        } else {
            "restored"
        },
        report.restored.len(),
        if report.restored.len() == 1 { "" } else { "s" },
        report.left.len(),
        report.not_restorable.len(),
        if args.dry_run {
            " (dry run: nothing changed, nothing recorded)"
        } else {
            ""
        },
        record.display()
    );
    note(&summary);
    Ok(
        if report.left.is_empty() && report.not_restorable.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        },
    )
}

/// One line of the account: the path (or command), the call, and what was done or why not.
fn line(f: &RewoundFile, workspace: &Path) -> String {
    let what = match (&f.path, f.tool.as_str()) {
        (Some(command), "bash") => format!("`{}`", visible(command)),
        (Some(path), _) => shown(path, workspace),
        (None, _) => "(arguments not recorded)".into(),
    };
    format!(
        "{what} ({} {}) — {}",
        visible(&f.tool),
        visible(&f.call_id),
        visible(&f.detail)
    )
}

/// A path relative to the workspace when it lies in it, made visible.
fn shown(path: &str, workspace: &Path) -> String {
    let p = Path::new(path);
    let rel = p.strip_prefix(workspace).unwrap_or(p);
    visible(&rel.display().to_string()).into_owned()
}
