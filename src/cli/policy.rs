//! `reasonix policy test` and `reasonix policy check`: policies tested and checked like code.
//!
//! `policy test [PATH]...` runs every Rego rule named `test_*` (as `opa test` does: `true`
//! passes, anything else fails) in the modules found under the paths — `*_test.rego` test
//! modules included — and every YAML case file (`*.cases.yaml`) through the full gate, against
//! the policies in the case file's own folder. Each failure is printed with what was expected
//! and what came; the run ends with the counts, and exits 1 when anything failed.
//!
//! `policy check PATH...` loads the policies, reports every problem with file and line (exit 2),
//! and otherwise lists the rules and Rego packages it found.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anstyle::{AnsiColor, Style};
use anyhow::Context;
use clap::{Args, Subcommand};
use reasonix::policy::rego::TestOutcome;
use reasonix::policy::{is_case_file, is_test_module};
use reasonix::{PolicySet, Posture};
use serde::Deserialize;
use serde_json::Value;

#[derive(Subcommand)]
pub enum PolicyCommand {
    /// Run Rego `test_*` rules and `*.cases.yaml` files.
    Test(TestArgs),
    /// Load policies, report problems with file and line, list the rules found.
    Check(PolicyCheckArgs),
}

#[derive(Args)]
pub struct TestArgs {
    /// Policy files or folders (default: the current folder).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
}

#[derive(Args)]
pub struct PolicyCheckArgs {
    /// Policy files or folders.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
}

pub fn run(command: PolicyCommand) -> anyhow::Result<ExitCode> {
    match command {
        PolicyCommand::Test(args) => test(args),
        PolicyCommand::Check(args) => check(args),
    }
}

fn check(args: PolicyCheckArgs) -> anyhow::Result<ExitCode> {
    let set =
        PolicySet::load_with(&args.paths, &args.data, false).context("the policy does not load")?;
    let mut out = anstream::stdout();
    let label = Style::new().bold();
    for (source, id, decision) in set.yaml_rules() {
        writeln!(
            out,
            "{label}rule{label:#}    {:<5} {id}  {source}",
            decision.as_str()
        )?;
    }
    if let Some(rego) = set.rego() {
        for p in rego.packages() {
            let sets: Vec<&str> = p.sets.iter().map(|d| d.as_str()).collect();
            writeln!(
                out,
                "{label}rego{label:#}    data.{}  votes: {}  {}",
                p.name,
                if sets.is_empty() {
                    "none".into()
                } else {
                    sets.join(", ")
                },
                p.files.join(", ")
            )?;
        }
    }
    let defaults = set.defaults();
    writeln!(
        out,
        "{label}defaults{label:#} read_only: {}, writer: {}, unattended: {}",
        defaults.read_only,
        defaults.writer,
        serde_json::to_value(defaults.unattended)?
            .as_str()
            .unwrap_or("")
    )?;
    Ok(ExitCode::SUCCESS)
}

/// One case of a `*.cases.yaml` file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// A name for the report (default: its index).
    name: Option<String>,
    /// The call, as `reasonix check` takes it.
    call: Value,
    /// The posture (default: interactive).
    posture: Option<Posture>,
    /// Files to create in the temporary workspace: path → content.
    #[serde(default)]
    files: std::collections::BTreeMap<String, String>,
    /// The verdict expected.
    expect: Expect,
}

#[derive(Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Expect {
    Allow,
    Ask,
    Deny,
    Invalid,
}

impl Expect {
    fn as_str(self) -> &'static str {
        match self {
            Expect::Allow => "allow",
            Expect::Ask => "ask",
            Expect::Deny => "deny",
            Expect::Invalid => "invalid",
        }
    }
}

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
}

fn test(args: TestArgs) -> anyhow::Result<ExitCode> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let mut out = anstream::stdout();
    let fail = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
    let pass = Style::new().bold().fg_color(Some(AnsiColor::Green.into()));
    let mut tally = Tally::default();

    // Rego tests, in every module under the paths.
    let has_rego = paths
        .iter()
        .any(|p| has_files(p, &|f| f.extension().is_some_and(|e| e == "rego")));
    let mut rego_tests = 0;
    if has_rego {
        let set = PolicySet::load_with(&paths, &args.data, true)
            .context("the policies do not load; no test ran")?;
        if let Some(rego) = set.rego() {
            for (package, rule, file, outcome) in rego.run_tests() {
                rego_tests += 1;
                match outcome {
                    TestOutcome::Pass => tally.passed += 1,
                    TestOutcome::Fail(got) => {
                        tally.failed += 1;
                        writeln!(
                            out,
                            "{fail}FAIL{fail:#} data.{package}.{rule} ({file}): expected true, got {got}"
                        )?;
                    }
                    TestOutcome::Error(e) => {
                        tally.failed += 1;
                        writeln!(
                            out,
                            "{fail}FAIL{fail:#} data.{package}.{rule} ({file}): error: {e}"
                        )?;
                    }
                }
            }
        }
    }

    // Case files, each against the policies of its own folder.
    let mut case_files = Vec::new();
    for p in &paths {
        collect(p, &mut case_files, &|f| is_case_file(f))?;
    }
    case_files.sort();
    let mut cases_run = 0;
    for file in &case_files {
        cases_run += run_case_file(file, &args.data, &mut out, &mut tally)?;
    }

    let summary = format!(
        "{} Rego tests, {} cases: {} passed, {} failed",
        rego_tests, cases_run, tally.passed, tally.failed
    );
    if tally.failed > 0 {
        writeln!(out, "{fail}FAILED{fail:#} {summary}")?;
        Ok(ExitCode::from(1))
    } else if rego_tests + cases_run == 0 {
        writeln!(
            out,
            "no Rego test rules and no *.cases.yaml files under the paths given"
        )?;
        Ok(ExitCode::from(1))
    } else {
        writeln!(out, "{pass}ok{pass:#} {summary}")?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Runs one case file; returns how many cases it held.
fn run_case_file(
    file: &Path,
    data: &[PathBuf],
    out: &mut dyn Write,
    tally: &mut Tally,
) -> anyhow::Result<usize> {
    let fail = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let cases: Vec<Case> = yaml_serde::from_str(&text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        anyhow::anyhow!("{}{at}: {e}", file.display())
    })?;
    let folder = file.parent().unwrap_or(Path::new("."));
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let mut policies: Vec<PathBuf> = std::fs::read_dir(folder)
        .with_context(|| format!("cannot list {}", folder.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && !is_case_file(p)
                && !is_test_module(p)
                && p.extension()
                    .is_some_and(|e| e == "yaml" || e == "yml" || e == "rego")
        })
        .collect();
    policies.sort();
    if policies.is_empty() {
        anyhow::bail!("{}: no policy files beside it to test", file.display());
    }
    let set = PolicySet::load_with(&policies, data, false)
        .with_context(|| format!("the policies for {} do not load", file.display()))?;
    for (i, case) in cases.iter().enumerate() {
        let name = case.name.clone().unwrap_or_else(|| format!("#{}", i + 1));
        let workspace = tempfile::tempdir().context("cannot make a temporary workspace")?;
        for (path, content) in &case.files {
            let target = workspace.path().join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&target, content)?;
        }
        let (gate, _) = super::gate(super::GateSpec {
            workspace: workspace.path(),
            policy: &set,
            policies: &policies,
            data,
            record: None,
            posture: case.posture.unwrap_or_default(),
            explain: false,
        })
        .with_context(|| format!("{} {name}", file.display()))?;
        let admission = gate.admit_text(&case.call.to_string()).into_admission();
        if admission.verdict.as_str() == case.expect.as_str() {
            tally.passed += 1;
        } else {
            tally.failed += 1;
            writeln!(
                out,
                "{fail}FAIL{fail:#} {} {name}: expected {}, got {} — {}",
                file.display(),
                case.expect.as_str(),
                admission.verdict,
                admission.reasons.join(" | ")
            )?;
        }
    }
    Ok(cases.len())
}

fn has_files(path: &Path, wanted: &dyn Fn(&Path) -> bool) -> bool {
    let mut found = Vec::new();
    collect(path, &mut found, wanted).is_ok() && !found.is_empty()
}

/// Every file under `path` (or `path` itself) that `wanted` accepts.
fn collect(
    path: &Path,
    found: &mut Vec<PathBuf>,
    wanted: &dyn Fn(&Path) -> bool,
) -> anyhow::Result<()> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.is_file() {
        if wanted(path) {
            found.push(path.to_path_buf());
        }
        return Ok(());
    }
    for entry in
        std::fs::read_dir(path).with_context(|| format!("cannot list {}", path.display()))?
    {
        let p = entry?.path();
        if p.is_dir() {
            collect(&p, found, wanted)?;
        } else if wanted(&p) {
            found.push(p);
        }
    }
    Ok(())
}
