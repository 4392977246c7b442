//! Text output for people: one coloured line with the verdict and why, then the rules, the
//! resolved paths and the effects. Colour goes away on a pipe or with `NO_COLOR` (anstream).

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};
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

/// Writes one admission.
pub fn admission(out: &mut dyn Write, a: &Admission) -> io::Result<()> {
    let vs = verdict_style(a.verdict);
    let dim = Style::new().dimmed();
    let label = Style::new().bold();
    let tool = a.tool.as_deref().unwrap_or("(unreadable call)");
    let first = a.reasons.first().map(String::as_str).unwrap_or("");
    write!(
        out,
        "{vs}{:<7}{vs:#} {label}{tool}{label:#}",
        a.verdict.as_str().to_uppercase()
    )?;
    if let Some(id) = &a.id {
        write!(out, " {dim}[{id}]{dim:#}")?;
    }
    writeln!(out, " {dim}stage {}{dim:#} — {first}", stage_name(a))?;
    for reason in a.reasons.iter().skip(1) {
        writeln!(out, "  {label}also{label:#}    {reason}")?;
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
            rule.decision, rule.id, rule.source
        )?;
    }
    for p in &a.paths {
        let resolved = p.path.as_deref().unwrap_or("(unresolved)");
        let mut notes = Vec::new();
        if p.written != resolved {
            notes.push(format!("written {:?}", p.written));
        }
        for link in &p.symlinks {
            notes.push(format!("via symlink {link}"));
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
            "  {label}path{label:#}    {} {} {resolved}{notes}",
            serde_name(&p.role),
            serde_name(&p.access)
        )?;
    }
    if !a.effects.is_empty() {
        let effects: Vec<&str> = a.effects.iter().map(|e| e.as_str()).collect();
        writeln!(out, "  {label}effects{label:#} {}", effects.join(", "))?;
    }
    if let Some(bash) = &a.bash {
        if bash.get("analysed").and_then(|v| v.as_bool()) == Some(false) {
            writeln!(
                out,
                "  {label}bash{label:#}    not analysed: no allow rule can cover it"
            )?;
        }
    }
    Ok(())
}

fn stage_name(a: &Admission) -> String {
    serde_name(&a.stage)
}

/// The serde name of a unit enum value (`"target"` for `PathRole::Target`).
fn serde_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}
