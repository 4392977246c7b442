//! `reasonix config`: every effective setting and the layer it came from, as `git config
//! --list --show-origin` shows it — the settings files of each layer (with the project files'
//! trust), each value with its layer and file, and what was left out of untrusted project files
//! and why. Flags given to a command win over everything shown here.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::json;

#[derive(Args)]
pub struct ConfigArgs {
    /// The workspace (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Output: `text` for people, `json` for scripts.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

pub fn run(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace(args.workspace.as_deref())?;
    let settings = super::settled(&workspace)?;
    let mut left_out = settings.left_out().to_vec();
    let mut policy_error = None;
    match super::choose(&settings, &[], &[], &super::FleetArgs::default(), "") {
        Ok(chosen) => left_out.extend(chosen.left_out),
        Err(e) => policy_error = Some(format!("{e:#}")),
    }
    let mut out = super::out::Stdout::plain();
    let shown =
        |p: &std::path::Path| reasonix::text::visible(&p.display().to_string()).into_owned();
    match args.format {
        Format::Json => {
            let doc = json!({
                "workspace": settings.workspace(),
                "trust_store": settings.trust_store(),
                "files": settings.files(),
                "values": settings.origins(),
                "left_out": left_out,
                "policy_error": policy_error,
            });
            serde_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(out, "# files")?;
            for f in settings.files() {
                let state = match (f.exists, f.trusted) {
                    (false, _) => "absent".to_owned(),
                    (true, None) => "read".to_owned(),
                    (true, Some(true)) => "trusted".to_owned(),
                    (true, Some(false)) => "NOT TRUSTED: only what narrows counts".to_owned(),
                };
                writeln!(out, "{}\t{}\t{state}", f.layer.as_str(), shown(&f.path))?;
            }
            writeln!(out, "# values (flags given to a command win over these)")?;
            for o in settings.origins() {
                let file = o.file.as_deref().map_or("-".to_owned(), shown);
                let value = match &o.value {
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                };
                writeln!(
                    out,
                    "{}\t{file}\t{}={}",
                    o.layer.as_str(),
                    o.field,
                    reasonix::text::visible(&value)
                )?;
            }
            if !left_out.is_empty() {
                writeln!(out, "# left out: the user has not trusted these files")?;
                for l in &left_out {
                    writeln!(
                        out,
                        "project\t{}\t{} ({})",
                        shown(&l.file),
                        reasonix::text::visible(&l.field),
                        l.why
                    )?;
                }
            }
        }
    }
    out.flush()?;
    if let Some(e) = &policy_error {
        super::warn(&format!("the policies do not load: {e}"));
    }
    if let Some(message) = reasonix::settings::untrusted_message(settings.workspace(), &left_out)
        && args.format == Format::Text
    {
        super::warn_lines(&message);
    }
    Ok(ExitCode::SUCCESS)
}
