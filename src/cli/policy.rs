//! `reasonix policy test`, `policy check` and `policy show-default`: policies tested, checked and
//! read like code.
//!
//! `policy test [PATH]...` runs every Rego rule named `test_*` (as `opa test` does: `true`
//! passes, anything else fails) in the modules found under the paths — `*_test.rego` test
//! modules included — and every YAML case file (`*.cases.yaml`) through the full gate, against
//! the policies in the case file's own folder — the Rego votes of a case made by the bytecode VM
//! and by the interpreter alike, a difference failing the case (the `test_*` rules run on the
//! interpreter, the gate on the VM: the cases hold the two to one answer). Each failure names its Rego test or case with
//! what was expected and what came; the counts of Rego tests and of cases are given apart; exit
//! 1 when anything failed. `--format json` writes one JSON document for CI instead.
//!
//! `policy check PATH...` loads the policies, reports every problem with file and line (exit 2),
//! and otherwise lists the rules and Rego packages it found, with a warning on stderr for each
//! rule that can never fire (`--deny-warnings`: exit 1 when there is one).
//!
//! `policy import --from claude|codex FILE` reads another agent's rules ([`super::import`]).
//!
//! `policy show-default` prints the embedded default policy.
//!
//! Every listing stops quietly when its reader goes away (`| head`), keeping its exit status.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anstyle::{AnsiColor, Style};
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use reasonix::policy::rego::TestOutcome;
use reasonix::policy::{DEFAULT_POLICY, ToolFacts, is_case_file, is_test_module};
use reasonix::{Effect, GateMode, PolicySet, Posture, Registry, Stage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::out::Stdout;

#[derive(Subcommand)]
pub enum PolicyCommand {
    /// Run Rego `test_*` rules and `*.cases.yaml` files.
    Test(TestArgs),
    /// Load policies, report problems with file and line, warn about rules that can never
    /// fire, list the rules found.
    Check(PolicyCheckArgs),
    /// Import another agent's permission rules as a YAML policy, with cases from each rule's
    /// examples. Exit 1 when some rules could not be expressed (each is listed).
    Import(super::import::ImportArgs),
    /// Print the embedded default policy (what applies without --policy; `builtin:default`
    /// names it beside one's own).
    ShowDefault,
}

#[derive(Args)]
pub struct TestArgs {
    /// Policy files or folders (default: the current folder).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
    /// Output: `text` for people, `json` for CI (one document with every result and the counts).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Args)]
pub struct PolicyCheckArgs {
    /// Policy files or folders; `builtin:default` is the embedded default.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
    /// A JSON or YAML document mounted under `data.` for Rego; repeat for several.
    #[arg(long = "data", value_name = "FILE")]
    data: Vec<PathBuf>,
    /// Exit 1 when there is any warning.
    #[arg(long)]
    deny_warnings: bool,
}

pub fn run(command: PolicyCommand) -> anyhow::Result<ExitCode> {
    match command {
        PolicyCommand::Test(args) => test(args),
        PolicyCommand::Check(args) => check(args),
        PolicyCommand::Import(args) => super::import::run(args),
        PolicyCommand::ShowDefault => {
            let mut out = Stdout::plain();
            out.write_all(DEFAULT_POLICY.as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Effects every call of a builtin tool has, for the warnings of `policy check` (an ask on
/// `exec` overrides every bash allow). `builtin_effects_hold_for_every_tool` checks each row
/// against the tool itself.
const ALWAYS: &[(&str, &[Effect])] = &[
    ("bash", &[Effect::Exec]),
    ("read_file", &[Effect::Read]),
    ("list_dir", &[Effect::Read]),
    ("glob", &[Effect::Read]),
    ("grep", &[Effect::Read]),
    ("write_file", &[Effect::Write]),
    ("edit_file", &[Effect::Write]),
    ("move_file", &[Effect::Write, Effect::Delete]),
    ("delete_file", &[Effect::Delete]),
    // The proxy has none of its own: a call of it is judged as the tool it names.
    ("use_capability", &[]),
    // Each connection a jailed process asks the egress proxy for.
    ("network_connect", &[Effect::Network]),
];

/// What the warnings know of the tools calls can name: the builtin ones, with `submit_plan`,
/// which plan mode offers (it touches nothing: no effect).
fn tool_facts() -> Vec<ToolFacts> {
    let plan_mode: Vec<String> = reasonix::tool::builtin::plan_mode()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    Registry::with_builtins()
        .names()
        .map(str::to_owned)
        .chain(plan_mode)
        .map(|name| ToolFacts {
            effects: ALWAYS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, e)| e.iter().copied().collect())
                .unwrap_or_default(),
            shell: name == "bash",
            name,
        })
        .collect()
}

fn check(args: PolicyCheckArgs) -> anyhow::Result<ExitCode> {
    let set =
        PolicySet::load_with(&args.paths, &args.data, false).context("the policy does not load")?;
    let mut out = Stdout::text();
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
        match rego.vm_refused() {
            None => writeln!(
                out,
                "{label}engine{label:#}  the votes run on the bytecode VM"
            )?,
            Some(why) => writeln!(
                out,
                "{label}engine{label:#}  the votes run on the interpreter: the bytecode VM cannot compile them ({})",
                reasonix::text::visible(why)
            )?,
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
    out.flush()?;
    let warnings = set.warnings(&tool_facts());
    let mut err = anstream::stderr();
    let style = Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()));
    for w in &warnings {
        let _ = writeln!(
            err,
            "{style}warning{style:#}: {}",
            reasonix::text::visible(&w.to_string())
        );
    }
    if warnings.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let n = warnings.len();
    let plural = if n == 1 { "" } else { "s" };
    if args.deny_warnings {
        let _ = writeln!(
            err,
            "{n} warning{plural}, denied by --deny-warnings: fix the rules, or drop the flag"
        );
        Ok(ExitCode::from(1))
    } else {
        let _ = writeln!(
            err,
            "{n} warning{plural}: the policies load, but the rules named cannot do what they seem to say"
        );
        Ok(ExitCode::SUCCESS)
    }
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
    /// The mode (default: normal), as `check --mode` takes it.
    mode: Option<GateMode>,
    /// Files to create in the temporary workspace: path → content.
    #[serde(default)]
    files: std::collections::BTreeMap<String, String>,
    /// The verdict expected.
    expect: Expect,
    /// The stage expected to settle it (default: any).
    stage: Option<String>,
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

/// The result of one Rego test or case.
#[derive(Serialize)]
struct Ran {
    /// `rego` or `case`.
    kind: &'static str,
    /// The file it is in.
    file: String,
    /// `data.<package>.<rule>` for a Rego test; the case's name, or `#N`, for a case.
    name: String,
    /// Whether it passed.
    passed: bool,
    /// What it should give: `true` for a Rego test, a verdict for a case.
    expected: String,
    /// What it gave: a value (`undefined`), `error: …`, or a verdict.
    got: String,
    /// For a case, the verdict's reasons.
    reasons: Vec<String>,
}

/// Passed and failed, of one kind.
#[derive(Default, Serialize)]
struct Count {
    passed: usize,
    failed: usize,
}

impl Count {
    fn add(&mut self, passed: bool) {
        if passed {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
    }
}

/// What `policy test --format json` writes.
#[derive(Serialize)]
struct Report<'a> {
    /// True when nothing failed and something ran.
    ok: bool,
    rego_tests: &'a Count,
    cases: &'a Count,
    results: &'a [Ran],
}

fn test(args: TestArgs) -> anyhow::Result<ExitCode> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let mut results = Vec::new();

    // Rego tests, in every module under the paths.
    let has_rego = paths
        .iter()
        .any(|p| has_files(p, &|f| f.extension().is_some_and(|e| e == "rego")));
    if has_rego {
        // A case file named on its own is run below, not loaded as a policy.
        let policy_paths: Vec<PathBuf> =
            paths.iter().filter(|p| !is_case_file(p)).cloned().collect();
        let set = PolicySet::load_with(&policy_paths, &args.data, true)
            .context("the policies do not load; no test ran")?;
        if let Some(rego) = set.rego() {
            for (package, rule, file, outcome) in rego.run_tests() {
                let (passed, got) = match outcome {
                    TestOutcome::Pass => (true, "true".to_owned()),
                    TestOutcome::Fail(got) => (false, got),
                    TestOutcome::Error(e) => (false, format!("error: {e}")),
                };
                results.push(Ran {
                    kind: "rego",
                    file,
                    name: format!("data.{package}.{rule}"),
                    passed,
                    expected: "true".into(),
                    got,
                    reasons: Vec::new(),
                });
            }
        }
    }

    // Case files, each against the policies of its own folder; a file named twice (a folder
    // and a file in it) runs once.
    let mut case_files = Vec::new();
    for p in &paths {
        collect(p, &mut case_files, &|f| is_case_file(f))?;
    }
    let mut seen = BTreeSet::new();
    case_files.retain(|f| seen.insert(f.canonicalize().unwrap_or_else(|_| f.clone())));
    case_files.sort();
    for file in &case_files {
        run_case_file(file, &args.data, &mut results)?;
    }

    let mut rego = Count::default();
    let mut cases = Count::default();
    for r in &results {
        match r.kind {
            "rego" => rego.add(r.passed),
            _ => cases.add(r.passed),
        }
    }
    let failed = rego.failed + cases.failed;
    let ran = results.len();
    let code = if failed > 0 || ran == 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };

    if args.format == Format::Json {
        let mut out = Stdout::plain();
        serde_json::to_writer(
            &mut out,
            &Report {
                ok: failed == 0 && ran > 0,
                rego_tests: &rego,
                cases: &cases,
                results: &results,
            },
        )?;
        writeln!(out)?;
        out.flush()?;
        return Ok(code);
    }

    let mut out = Stdout::text();
    let fail = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
    let pass = Style::new().bold().fg_color(Some(AnsiColor::Green.into()));
    let dim = Style::new().dimmed();
    for r in results.iter().filter(|r| !r.passed) {
        let what = if r.kind == "rego" {
            "Rego test"
        } else {
            "case"
        };
        writeln!(
            out,
            "{fail}FAIL{fail:#} {what} {} {dim}({}){dim:#}: expected {}, got {}",
            reasonix::text::visible(&r.name),
            r.file,
            r.expected,
            reasonix::text::visible(&r.got)
        )?;
        for reason in &r.reasons {
            writeln!(out, "     {}", reasonix::text::visible(reason))?;
        }
    }
    let summary = format!(
        "Rego tests: {} passed, {} failed; cases: {} passed, {} failed",
        rego.passed, rego.failed, cases.passed, cases.failed
    );
    if failed > 0 {
        writeln!(out, "{fail}FAILED{fail:#} {summary}")?;
    } else if ran == 0 {
        writeln!(
            out,
            "no Rego test rules and no *.cases.yaml files under the paths given"
        )?;
    } else {
        writeln!(out, "{pass}ok{pass:#} {summary}")?;
    }
    out.flush()?;
    Ok(code)
}

/// Runs one case file, adding a result per case.
fn run_case_file(file: &Path, data: &[PathBuf], results: &mut Vec<Ran>) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let cases: Vec<Case> = yaml_serde::from_str(&text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        anyhow::anyhow!(
            "{}{at}: {e} (a cases file is a YAML list, one `- name: …` per case with `call:` as \
             `check` takes it and `expect: allow|ask|deny|invalid`; optional: `files:`, \
             `posture:`, `mode:`, `stage:`; see docs/first-policy.md)",
            file.display()
        )
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
    let mut set = PolicySet::load_with(&policies, data, false)
        .with_context(|| format!("the policies for {} do not load", file.display()))?;
    // The cases test what the bytecode VM answers; the interpreter answers each too, and a
    // difference fails the case whatever the verdict.
    let engines = set.cross_check_engines();
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
        let built = super::gate(super::GateSpec {
            workspace: workspace.path(),
            policies: super::Policies::Loaded {
                set: &set,
                files: &policies,
                data,
                live: None,
            },
            fleet: &super::FleetArgs::default(),
            record: None,
            posture: case.posture.unwrap_or_default(),
            mode: case.mode.unwrap_or_default(),
            explain: false,
            dry_run: false,
        })
        .with_context(|| format!("{} {name}", file.display()))?;
        let admission = built
            .gate
            .admit_text(&case.call.to_string())
            .into_admission();
        let stage: Stage = admission.stage;
        let (expected, got) = match &case.stage {
            Some(want) => (
                format!("{} at stage {want}", case.expect.as_str()),
                format!("{} at stage {}", admission.verdict.as_str(), stage.as_str()),
            ),
            None => (
                case.expect.as_str().to_owned(),
                admission.verdict.as_str().to_owned(),
            ),
        };
        let differences = engines.as_ref().map(|l| l.take()).unwrap_or_default();
        let passed = got == expected && differences.is_empty();
        let got = match differences.is_empty() {
            true => got,
            false => format!("{got}, but {}", differences.join("; ")),
        };
        results.push(Ran {
            kind: "case",
            file: file.display().to_string(),
            name,
            passed,
            expected,
            got,
            reasons: admission.reasons,
        });
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use reasonix::{Gate, HostFiles};
    use serde_json::json;

    /// Each row of [`ALWAYS`] holds for its tool: a call of it, judged by the real gate, has
    /// at least those effects.
    #[test]
    fn builtin_effects_hold_for_every_tool() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::write(ws.join("a"), "x").unwrap();
        let policy = PolicySet::embedded_default();
        let gate = Gate::builder(Registry::with_builtins(), &policy, &ws)
            .host_files(HostFiles::for_workspace(&ws))
            .build()
            .unwrap();
        let calls = [
            json!({"name": "bash", "arguments": {"command": "true"}}),
            json!({"name": "read_file", "arguments": {"path": "a"}}),
            json!({"name": "list_dir", "arguments": {"path": "."}}),
            json!({"name": "glob", "arguments": {"pattern": "*"}}),
            json!({"name": "grep", "arguments": {"pattern": "x"}}),
            json!({"name": "write_file", "arguments": {"path": "b", "content": ""}}),
            json!({"name": "edit_file", "arguments": {"path": "a", "old_string": "x", "new_string": "y"}}),
            json!({"name": "move_file", "arguments": {"source_path": "a", "destination_path": "c"}}),
            json!({"name": "delete_file", "arguments": {"path": "a"}}),
            json!({"name": "use_capability", "arguments": {"capability": "list_dir", "arguments": {"path": "."}}}),
            json!({"name": "network_connect", "arguments": {"host": "github.com", "port": 443}}),
        ];
        assert_eq!(calls.len(), ALWAYS.len());
        assert_eq!(Registry::with_builtins().names().count(), ALWAYS.len());
        for (call, (name, effects)) in calls.iter().zip(ALWAYS) {
            assert_eq!(call["name"], *name);
            let a = gate.admit_text(&call.to_string()).into_admission();
            for e in *effects {
                assert!(a.effects.contains(e), "{name}: {:?}", a.effects);
            }
        }
    }
}
