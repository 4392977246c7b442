//! `reasonix record verify R.jsonl [--key FILE | --key-env VAR]`: checks an execution record's
//! hash chain and signatures ([`reasonix::seal`]) and names the first line that fails.
//!
//! Exit status: 0 the record verifies (signed and checked, or unsigned throughout — the summary
//! says which), 1 it does not (a line changed, removed, moved, added, or signed with another
//! key; or a writer never closed it: killed, crashed, or its tail cut), 2 it cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use reasonix::seal::{self, Key};

/// `reasonix record …`.
#[derive(Subcommand)]
pub enum RecordCommand {
    /// Check a record's hash chain and signatures; name the first line that fails.
    Verify(VerifyArgs),
}

/// `reasonix record verify`.
#[derive(Args)]
pub struct VerifyArgs {
    /// The record (JSONL).
    record: PathBuf,
    /// A file holding the key (default: record.key in the user's state folder, if it exists).
    #[arg(long, conflicts_with = "key_env")]
    key: Option<PathBuf>,
    /// An environment variable holding the key (as `record.key_env` names it).
    #[arg(long)]
    key_env: Option<String>,
}

/// Runs `reasonix record …`.
pub fn run(command: RecordCommand) -> anyhow::Result<ExitCode> {
    match command {
        RecordCommand::Verify(args) => verify(&args),
    }
}

/// The key to check a record with, as the flags name it, else the user's key file when there
/// is one (never made here).
pub(super) fn key(file: Option<&PathBuf>, env: Option<&str>) -> anyhow::Result<Option<Key>> {
    if let Some(file) = file {
        return Key::from_file(file)
            .map(Some)
            .with_context(|| format!("cannot read the key {}", file.display()));
    }
    if let Some(var) = env {
        let value =
            std::env::var_os(var).with_context(|| format!("the key variable {var} is not set"))?;
        return Key::new(value.as_encoded_bytes())
            .map(Some)
            .with_context(|| format!("the key variable {var} is empty"));
    }
    Ok(super::default_key_file()
        .filter(|f| f.is_file())
        .and_then(|f| Key::from_file(&f).ok()))
}

fn verify(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let key = key(args.key.as_ref(), args.key_env.as_deref())?;
    let bytes = std::fs::read(&args.record)
        .with_context(|| format!("cannot read {}", args.record.display()))?;
    let report = seal::verify(&bytes, key.as_ref());
    let mut stdout = super::out::Stdout::plain();
    use std::io::Write;
    writeln!(stdout, "{}: {}", args.record.display(), report.summary())?;
    stdout.flush()?;
    Ok(if report.verified() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
