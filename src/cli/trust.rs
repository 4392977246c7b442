//! `reasonix trust`: the user trusts a project's files, by exact content
//! ([`reasonix::settings::trust`]). Until then a project's `reasonix.yaml`, `.mcp.json` and the
//! policy files they name count only for what narrows the gate; trusted, they count whole, and
//! any later change to a file makes it untrusted again.
//!
//! Without FILE it trusts every project file of the workspace — its `reasonix.yaml`, its
//! `.mcp.json`, and each policy and data file its `reasonix.yaml` names — and first prints what
//! each asks for that only the user may allow, so that what is trusted is seen.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use reasonix::settings::trust::Store;

#[derive(Args)]
pub struct TrustArgs {
    /// The workspace whose files to trust (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The files to trust; without any, every project file of the workspace (its reasonix.yaml,
    /// its .mcp.json, and the policy and data files its reasonix.yaml names).
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
}

pub fn run(args: TrustArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace.as_deref())?;
    let settings = super::settled(&workspace)?;
    let files: Vec<PathBuf> = if args.files.is_empty() {
        settings.project_files()
    } else {
        let mut files = Vec::new();
        for f in &args.files {
            let f = super::absolute(f)?;
            if !f.is_file() {
                anyhow::bail!("{} is not a file; name a file to trust", f.display());
            }
            files.push(f);
        }
        files
    };
    if files.is_empty() {
        super::note(&format!(
            "{} has no project file (reasonix.yaml, .mcp.json) to trust",
            settings.workspace().display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    // What each file asks for that only the user may allow: said before it is trusted.
    let mut left_out = settings.left_out().to_vec();
    match super::choose(&settings, &[], &[], &super::FleetArgs::default(), "") {
        Ok(chosen) => left_out.extend(chosen.left_out),
        Err(e) => super::warn(&format!("the policies do not load as they are: {e:#}")),
    }
    let store = Store::open_default()?;
    let trusted = store
        .trust(&files)
        .with_context(|| "cannot record the trust".to_owned())?;
    let mut out = super::out::Stdout::plain();
    for (path, sha256) in &trusted {
        let asks: Vec<String> = left_out
            .iter()
            .filter(|l| l.file.canonicalize().is_ok_and(|f| &f == path))
            .map(|l| l.field.clone())
            .collect();
        writeln!(
            out,
            "trusted {} (sha256 {}){}",
            reasonix::text::visible(&path.display().to_string()),
            &sha256[..16],
            if asks.is_empty() {
                String::new()
            } else {
                format!("; it may now: {}", asks.join(", "))
            }
        )?;
    }
    writeln!(
        out,
        "recorded in {}; any change to a file makes it untrusted again",
        reasonix::text::visible(&store.path().display().to_string())
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
