//! Text output for people: one coloured line with the verdict and why, then the rules, the
//! resolved paths and the effects. Colour goes away on a pipe or with `NO_COLOR` (anstream).
//!
//! Everything a model controls — the tool name, the id, argv, paths, reasons that quote them —
//! passes through [`visible`] first: a control character, an escape sequence or a
//! bidirectional override is shown as an escape, never interpreted by the terminal, so a command
//! cannot rewrite what the person approving it sees.

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};
use reasonix::text::{visible, visible_lines};
use reasonix::{Admission, Verdict};

fn verdict_style(v: Verdict) -> Style {
    let color = match v {
        Verdict::Allow => AnsiColor::Green,
        Verdict::Ask => AnsiColor::Yellow,
        Verdict::Deny => AnsiColor::Red,
        Verdict::Invalid => AnsiColor::Magenta,
    };
    Style::new().bold().fg_color(Some(color.into()))
}

/// Writes one admission; `line` is the line of the input it answers, if it came from a stream.
pub fn admission(out: &mut dyn Write, a: &Admission, line: Option<usize>) -> io::Result<()> {
    let vs = verdict_style(a.verdict);
    let dim = Style::new().dimmed();
    let label = Style::new().bold();
    let tool = visible(a.tool.as_deref().unwrap_or("(unreadable call)"));
    let first = visible(a.reasons.first().map(String::as_str).unwrap_or(""));
    write!(
        out,
        "{vs}{:<7}{vs:#} {label}{tool}{label:#}",
        a.verdict.as_str().to_uppercase()
    )?;
    if let Some(id) = &a.id {
        write!(out, " {dim}[{}]{dim:#}", visible(id))?;
    }
    if let Some(n) = line {
        write!(out, " {dim}line {n}{dim:#}")?;
    }
    writeln!(out, " {dim}stage {}{dim:#} — {first}", a.stage.as_str())?;
    for reason in a.reasons.iter().skip(1) {
        writeln!(out, "  {label}also{label:#}    {}", visible(reason))?;
    }
    for rule in &a.rules {
        let (open, close) = if rule.decisive {
            ("", "")
        } else {
            ("(overridden) ", "")
        };
        writeln!(
            out,
            "  {label}rule{label:#}    {open}{} {} {dim}{}{dim:#}{close}",
            rule.decision,
            visible(&rule.id),
            visible(&rule.source)
        )?;
    }
    for p in &a.paths {
        // A shell word that may name a file is shown only when a file by that name exists;
        // the JSON output lists every one.
        if matches!(p.role, reasonix::tool::PathRole::Argument) && !p.exists {
            continue;
        }
        let resolved = p.path.as_deref().unwrap_or("(unresolved)");
        let mut notes = Vec::new();
        if p.written != resolved {
            notes.push(format!("written {}", visible(&p.written)));
        }
        for link in &p.symlinks {
            notes.push(format!("via symlink {}", visible(link)));
        }
        if !p.inside_workspace {
            notes.push("outside the workspace".into());
        }
        if !p.exists {
            notes.push("does not exist".into());
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" {dim}({}){dim:#}", notes.join(", "))
        };
        writeln!(
            out,
            "  {label}path{label:#}    {} {} {}{notes}",
            serde_name(&p.role),
            serde_name(&p.access),
            visible(resolved)
        )?;
    }
    if !a.effects.is_empty() {
        let effects: Vec<&str> = a.effects.iter().map(|e| e.as_str()).collect();
        writeln!(out, "  {label}effects{label:#} {}", effects.join(", "))?;
    }
    if let Some(bash) = &a.bash {
        bash_lines(out, bash)?;
    }
    if let Some(plan) = &a.sandbox {
        let network = if plan.network.is_empty() {
            "no network".to_owned()
        } else {
            let rules: Vec<String> = plan.network.iter().map(|n| n.to_string()).collect();
            format!("TCP to {}", rules.join(", "))
        };
        writeln!(
            out,
            "  {label}sandbox{label:#} {} via {}; writes only to {}; {network}; {} ms",
            plan.mode.as_str(),
            if plan.backend.is_empty() {
                "nothing".to_owned()
            } else {
                plan.backend.join(", ")
            },
            plan.write_roots.join(", "),
            plan.limits.timeout_ms
        )?;
        for missing in &plan.not_enforced {
            writeln!(out, "  {dim}not enforced: {missing}{dim:#}")?;
        }
    }
    if let Some(input) = &a.input {
        let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
        writeln!(out, "  {label}input{label:#}")?;
        for line in pretty.lines() {
            writeln!(out, "    {}", visible_lines(line))?;
        }
    }
    Ok(())
}

/// The bash analysis, in a few lines: the commands, the features, hazards and problems.
fn bash_lines(out: &mut dyn Write, bash: &serde_json::Value) -> io::Result<()> {
    let label = Style::new().bold();
    let warn = Style::new().fg_color(Some(AnsiColor::Yellow.into()));
    let list = |key: &str| -> Vec<serde_json::Value> {
        bash.get(key)
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default()
    };
    let commands: Vec<String> = list("commands")
        .iter()
        .map(|c| {
            let argv: Vec<&str> = c["argv"]
                .as_array()
                .map(|a| a.iter().filter_map(|w| w.as_str()).collect())
                .unwrap_or_default();
            let text = visible(&argv.join(" ")).into_owned();
            if c.get("wrapper").and_then(|w| w.as_bool()) == Some(true) {
                format!("({text})")
            } else {
                text
            }
        })
        .collect();
    if !commands.is_empty() {
        writeln!(out, "  {label}commands{label:#} {}", commands.join(" · "))?;
    }
    let features: Vec<String> = list("features")
        .iter()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect();
    if !features.is_empty() {
        writeln!(out, "  {label}features{label:#} {}", features.join(", "))?;
    }
    for h in list("hazards") {
        writeln!(
            out,
            "  {warn}hazard{warn:#}  {} — {}",
            h["id"].as_str().unwrap_or(""),
            visible(h["detail"].as_str().unwrap_or(""))
        )?;
    }
    for p in list("problems") {
        writeln!(
            out,
            "  {warn}problem{warn:#} {}",
            visible(p.as_str().unwrap_or(""))
        )?;
    }
    Ok(())
}

/// The serde name of a unit enum value (`"target"` for `PathRole::Target`).
fn serde_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
