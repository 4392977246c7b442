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
    // An invalid call's reason carries the tool's whole schema for the model; a person gets
    // its shape on a line of its own.
    let (first, schema) = split_schema(a.reasons.first().map(String::as_str).unwrap_or(""));
    let first = visible(first);
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
    if let Some(schema) = schema {
        writeln!(
            out,
            "  {label}schema{label:#}  {tool} {}",
            visible(&shape(&schema))
        )?;
    }
    for reason in a.reasons.iter().skip(1) {
        let (reason, _) = split_schema(reason);
        writeln!(out, "  {label}also{label:#}    {}", visible(reason))?;
    }
    if let Some(revision) = &a.policy_revision {
        writeln!(
            out,
            "  {label}bundle{label:#}  revision {}",
            visible(&format!("{revision:?}"))
        )?;
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
        if let Some(run) = plan.run {
            let how = match run {
                "read_only" => "read-only: the workspace and write roots are read-only to it",
                "observed" => "observed: on an overlay, each change judged before it lands",
                _ => "in place: its effects are not observed",
            };
            writeln!(out, "  {label}runs{label:#} {how}")?;
        }
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

/// A reason and the JSON schema it ends with (`… The schema is {…}` or `… The schema of TOOL is
/// {…}`, as the validate stage writes it), apart; the reason alone when it holds no schema.
pub fn split_schema(reason: &str) -> (&str, Option<serde_json::Value>) {
    let Some(at) = reason.rfind(". The schema ") else {
        return (reason, None);
    };
    let rest = &reason[at..];
    let Some(brace) = rest.find(" is {").map(|i| i + 4) else {
        return (reason, None);
    };
    match serde_json::from_str::<serde_json::Value>(&rest[brace..]) {
        Ok(schema) => (&reason[..at], Some(schema)),
        Err(_) => (reason, None),
    }
}

/// The shape of a JSON schema in one line: `{path: string, offset?: integer ≥1}` — the
/// required properties first, then the optional ones with `?`, each with its type and bounds.
fn shape(schema: &serde_json::Value) -> String {
    use serde_json::Value;
    let kind = |s: &Value| -> String {
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            return values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" | ");
        }
        let mut t = match s.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" | "),
            _ => "any".to_owned(),
        };
        if t == "object" && s.get("properties").is_some() {
            t = shape(s);
        } else if t == "array"
            && let Some(items) = s.get("items")
        {
            t = format!("[{}]", shape(items));
        }
        for (key, sign) in [
            ("minimum", "≥"),
            ("maximum", "≤"),
            ("minLength", "length ≥"),
        ] {
            if let Some(n) = s.get(key) {
                t.push_str(&format!(" {sign}{n}"));
            }
        }
        t
    };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return kind(schema);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    for (name, s) in properties
        .iter()
        .filter(|(n, _)| required.contains(&n.as_str()))
    {
        fields.push(format!("{name}: {}", kind(s)));
    }
    for (name, s) in properties
        .iter()
        .filter(|(n, _)| !required.contains(&n.as_str()))
    {
        fields.push(format!("{name}?: {}", kind(s)));
    }
    format!("{{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_is_shown_as_its_shape() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "offset": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]}
            },
            "required": ["path"]
        });
        assert_eq!(
            shape(&schema),
            r#"{path: string length ≥1, mode?: "a" | "b", offset?: integer ≥1}"#
        );
        let reason = format!("bad /path. The schema is {schema}");
        let (text, found) = split_schema(&reason);
        assert_eq!(text, "bad /path");
        assert_eq!(found, Some(schema));
        assert_eq!(split_schema("no schema here").0, "no schema here");
    }
}
