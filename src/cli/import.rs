//! `reasonix policy import --from claude|codex FILE [-o POLICY.yaml]`: another agent's permission
//! rules as a Reasonix YAML policy ([`reasonix::import`]).
//!
//! The policy goes to stdout, or to `-o POLICY.yaml` with its cases beside it in
//! `POLICY.cases.yaml`, so `reasonix policy test DIR` checks the import. Each rule that could not
//! be expressed is listed on stderr (and at the end of the policy); the exit status is then 1,
//! else 0; 2 when the file cannot be read at all.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

#[derive(Args)]
pub struct ImportArgs {
    /// Whose rules: `claude` (a settings.json's `permissions`) or `codex` (a `.rules` file of
    /// `prefix_rule(...)` calls).
    #[arg(long, value_enum)]
    from: From,
    /// The file to import.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Write the policy here (a `.yaml` file) and its cases beside it (`NAME.cases.yaml`);
    /// without it the policy goes to stdout and no case file is written.
    #[arg(short, long, value_name = "POLICY")]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum From {
    Claude,
    Codex,
}

pub fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let origin = args.file.display().to_string();
    let imported = match args.from {
        From::Claude => {
            let settings: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("{origin} is not JSON"))?;
            reasonix::claude::settings::import(&settings, &origin)
                .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?
        }
        From::Codex => {
            reasonix::codex::import(&text, &origin).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?
        }
    };
    let policy = imported.policy_yaml()?;
    // What was written must load as a policy: an import never hands over a file that fails.
    reasonix::PolicySet::from_texts(&[("imported.yaml", &policy)], &[], &[])
        .map_err(|e| anyhow::anyhow!("the imported policy does not load (a bug): {e}"))?;
    match &args.output {
        Some(out) => {
            let cases = cases_path(out)?;
            std::fs::write(out, &policy)
                .with_context(|| format!("cannot write {}", out.display()))?;
            std::fs::write(&cases, imported.cases_yaml()?)
                .with_context(|| format!("cannot write {}", cases.display()))?;
            super::note(&format!(
                "{} rules imported into {}, {} cases in {}",
                imported.rules.len(),
                out.display(),
                imported.case_count(),
                cases.display()
            ));
        }
        None => {
            let mut stdout = super::out::Stdout::plain();
            stdout.write_all(policy.as_bytes())?;
            stdout.flush()?;
            super::note(&format!(
                "{} rules imported; -o POLICY.yaml also writes their {} cases beside it",
                imported.rules.len(),
                imported.case_count()
            ));
        }
    }
    if imported.left_out.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for (source, why) in &imported.left_out {
        super::warn(&format!("not imported: {source}: {why}"));
    }
    super::warn(&format!(
        "{} rules could not be expressed and were left out (listed above and at the end of the policy)",
        imported.left_out.len()
    ));
    Ok(ExitCode::from(1))
}

/// `NAME.yaml` → `NAME.cases.yaml`, beside it.
fn cases_path(out: &Path) -> anyhow::Result<PathBuf> {
    let name = out
        .file_name()
        .and_then(|n| n.to_str())
        .context("-o needs a file name")?;
    if reasonix::policy::is_case_file(out) {
        anyhow::bail!("-o names a case file ({name}); name the policy, e.g. imported.yaml");
    }
    let stem = name
        .strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .with_context(|| format!("-o {name}: a policy file ends in .yaml"))?;
    Ok(out.with_file_name(format!("{stem}.cases.yaml")))
}
