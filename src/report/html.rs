//! The page of an execution record: one self-contained HTML file (inline CSS and a small inline
//! script; nothing fetched, no font, no image) that a reviewer opens from a CI artifact.
//!
//! - a header per run: task, model, posture, policy revision, duration, calls by outcome;
//! - a timeline of every call, coloured by outcome, with provider retries and answered asks;
//! - per call (`#call-ID` links to it): the arguments, the verdict, the stage and the rules that
//!   decided with their reasons, hazards, the jail plan, the result, and the changes observed;
//! - filters by outcome, tool and rule, also set from the address: `report.html?outcome=blocked`
//!   or `report.html#outcome=blocked&tool=bash` (a filtered view is a link that can be shared).

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::Value;

use super::{Call, Record, Run, escape, seconds};
use crate::rewind::Store;

/// The largest kept content a diff is made from, in bytes (the store keeps a file's content
/// after a call up to [`crate::rewind::MAX_AFTER_KEPT_BYTES`]).
pub const MAX_DIFF_SOURCE_BYTES: u64 = 256 * 1024;
/// The most of one file's diff the page shows, in bytes; the rest is cut and counted.
pub const MAX_DIFF_SHOWN_BYTES: usize = 16 * 1024;

/// The page's style sheet.
const CSS: &str = include_str!("page.css");
/// The page's script: filters and `#call-ID` links.
const JS: &str = include_str!("page.js");

/// The page's `<head>`, with a Content-Security-Policy that lets nothing be fetched and only
/// the page's own style and script (by nonce) apply.
pub(super) fn head(title: &str, nonce: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'nonce-{nonce}'; style-src-attr 'unsafe-inline'; script-src 'nonce-{nonce}'; \
         img-src data:; form-action 'none'; base-uri 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style nonce=\"{nonce}\">\n{CSS}</style>\n</head>\n",
        escape(title)
    )
}

/// A fresh nonce for the page's own style and script.
pub(super) fn nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The page of `record`.
pub fn page(record: &Record) -> String {
    let nonce = nonce();
    let title = match record.runs.first().and_then(|r| r.task.as_deref()) {
        Some(task) => format!(
            "Reasonix report: {}",
            crate::text::shorten(task, 80, crate::text::Keep::Head)
        ),
        None => "Reasonix report".to_owned(),
    };
    let mut out = head(&title, &nonce);
    out.push_str("<body>\n<main>\n<h1>Reasonix run report</h1>\n");
    // Anchors: `call-ID` when the id is unique in the record, else `call-RUN-ID`.
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    for c in record.calls() {
        *seen.entry(c.call_id.as_str()).or_default() += 1;
    }
    let anchor = |run: &Run, c: &Call| -> String {
        if seen.get(c.call_id.as_str()) == Some(&1) {
            format!("call-{}", c.call_id)
        } else {
            format!("call-{}-{}", run.run_id, c.call_id)
        }
    };
    for run in &record.runs {
        header(&mut out, run);
    }
    if record.unreadable > 0 {
        let _ = writeln!(
            out,
            "<p class=\"warn\">{} line(s) of the record could not be read and are not shown.</p>",
            record.unreadable
        );
    }
    filters(&mut out, record);
    for run in &record.runs {
        timeline(&mut out, run, &anchor);
    }
    let total = record.calls().count();
    let _ = writeln!(
        out,
        "<p id=\"shown\" aria-live=\"polite\">{total} of {total} calls shown</p>\n<section id=\"calls\">"
    );
    for run in &record.runs {
        for c in &run.calls {
            call(&mut out, run, c, &anchor(run, c), record.store.as_ref());
        }
    }
    out.push_str("</section>\n</main>\n");
    let _ = write!(
        out,
        "<script nonce=\"{nonce}\">\n{JS}</script>\n</body>\n</html>\n"
    );
    out
}

fn header(out: &mut String, run: &Run) {
    let field = |v: &Option<String>| match v {
        Some(v) if !v.is_empty() => escape(v),
        _ => "<span class=\"none\">—</span>".to_owned(),
    };
    let _ = write!(
        out,
        "<section class=\"run\" data-run=\"{}\">\n<dl class=\"header\">\n\
         <dt>task</dt><dd class=\"task\">{}</dd>\n<dt>model</dt><dd>{}</dd>\n\
         <dt>posture</dt><dd>{}</dd>\n<dt>policy revision</dt><dd>{}</dd>\n\
         <dt>duration</dt><dd>{}</dd>\n<dt>ended</dt><dd>{}</dd>\n<dt>run</dt><dd><code>{}</code></dd>\n</dl>\n",
        escape(&run.run_id),
        field(&run.task),
        field(&run.model),
        field(&run.posture),
        field(&run.policy_revision),
        run.duration_ms().map_or("—".into(), seconds),
        field(&run.end),
        escape(&run.run_id),
    );
    out.push_str("<ul class=\"counts\">\n");
    let _ = writeln!(
        out,
        "<li class=\"count all\"><b>{}</b> calls</li>",
        run.calls.len()
    );
    for (outcome, n) in run.counts() {
        let _ = writeln!(
            out,
            "<li class=\"count o-{outcome}\" data-outcome=\"{outcome}\"><b>{n}</b> {outcome}</li>"
        );
    }
    let _ = writeln!(
        out,
        "<li class=\"count\"><b>{}</b> provider retries</li>\n<li class=\"count\"><b>{}</b> asks answered</li>",
        run.retries.len(),
        run.approvals()
    );
    out.push_str("</ul>\n");
    if !run.notes.is_empty() {
        out.push_str("<ul class=\"notes\">\n");
        for (_, note) in &run.notes {
            let _ = writeln!(out, "<li>{}</li>", escape(note));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

fn filters(out: &mut String, record: &Record) {
    let outcomes: BTreeSet<&str> = record.calls().map(|c| c.outcome.as_str()).collect();
    let tools: BTreeSet<&str> = record.calls().map(|c| c.tool.as_str()).collect();
    let rules: BTreeSet<&str> = record.calls().flat_map(|c| c.deciding_rules()).collect();
    out.push_str("<form id=\"filters\" class=\"filters\">\n");
    for (name, label, values) in [
        ("outcome", "Outcome", outcomes),
        ("tool", "Tool", tools),
        ("rule", "Rule", rules),
    ] {
        let _ = write!(
            out,
            "<label>{label} <select name=\"{name}\" id=\"f-{name}\"><option value=\"\">any</option>"
        );
        for v in values {
            let v = escape(v);
            let _ = write!(out, "<option value=\"{v}\">{v}</option>");
        }
        out.push_str("</select></label>\n");
    }
    out.push_str("<button type=\"reset\" id=\"f-clear\">show all</button>\n</form>\n");
}

fn timeline(out: &mut String, run: &Run, anchor: &dyn Fn(&Run, &Call) -> String) {
    let times = run
        .calls
        .iter()
        .flat_map(|c| [c.time_ms, c.started_ms.unwrap_or(c.time_ms) + c.duration_ms])
        .chain(run.retries.iter().map(|(t, _)| *t))
        .chain(run.started_ms)
        .chain(run.ended_ms)
        .filter(|t| *t > 0);
    let (start, end) = times.fold((u128::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if start > end {
        return;
    }
    let span = (end - start).max(1) as f64;
    let pct = |t: u128| (t.saturating_sub(start)) as f64 * 100.0 / span;
    let lanes = run.calls.len().max(1);
    let _ = writeln!(
        out,
        "<figure class=\"timeline\"><figcaption>Timeline of run <code>{}</code> ({}): one row per \
         call, from when it was judged to when it ended; ⟳ a provider retry, ✓/✗ an answered ask</figcaption>\n\
         <div class=\"lanes\" style=\"height:{}px\">",
        escape(&run.run_id),
        seconds(end - start),
        lanes * 14 + 16
    );
    for (i, c) in run.calls.iter().enumerate() {
        let from = c.time_ms.max(start);
        let to = c.started_ms.unwrap_or(c.time_ms) + c.duration_ms;
        let left = pct(from);
        let width = (pct(to.max(from)) - left).max(0.6);
        let mark = match c.approval.as_deref() {
            Some("deny") => "✗",
            Some(_) => "✓",
            None => "",
        };
        let _ = writeln!(
            out,
            "<a class=\"bar o-{}\" data-call=\"{}\" href=\"#{}\" style=\"left:{left:.2}%;width:{width:.2}%;top:{}px\" \
             title=\"{} {} — {}\">{mark}</a>",
            escape(&c.outcome),
            escape(&anchor(run, c)),
            escape(&anchor(run, c)),
            i * 14,
            escape(&c.call_id),
            escape(&c.tool),
            escape(&c.outcome),
        );
    }
    for (t, what) in &run.retries {
        let _ = writeln!(
            out,
            "<span class=\"retry\" style=\"left:{:.2}%\" title=\"{}\">⟳</span>",
            pct(*t),
            escape(what)
        );
    }
    out.push_str("</div></figure>\n");
}

fn call(out: &mut String, run: &Run, c: &Call, anchor: &str, store: Option<&Store>) {
    let rules: Vec<String> = c.deciding_rules().iter().map(|r| escape(r)).collect();
    let _ = writeln!(
        out,
        "<article class=\"call o-{}\" id=\"{}\" data-outcome=\"{}\" data-tool=\"{}\" data-rules=\"|{}|\" data-run=\"{}\">",
        escape(&c.outcome),
        escape(anchor),
        escape(&c.outcome),
        escape(&c.tool),
        rules.join("|"),
        escape(&run.run_id),
    );
    let approval = match (&c.approval, &c.approver) {
        (Some(a), Some(by)) => format!(
            " <span class=\"approval\">ask answered: {} (by {})</span>",
            escape(a),
            escape(by)
        ),
        (Some(a), None) => format!(
            " <span class=\"approval\">ask answered: {}</span>",
            escape(a)
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "<h2><a class=\"link\" href=\"#{}\">#</a> <code class=\"id\">{}</code> <span class=\"tool\">{}</span> \
         <span class=\"badge o-{}\">{}</span> <span class=\"verdict v-{}\">verdict {}</span> \
         <span class=\"stage\">at stage {}</span>{approval}</h2>",
        escape(anchor),
        escape(&c.call_id),
        escape(&c.tool),
        escape(&c.outcome),
        escape(&c.outcome),
        escape(&c.verdict),
        escape(&c.verdict),
        escape(&c.stage),
    );
    out.push_str("<div class=\"body\">\n");
    // Arguments.
    out.push_str("<section><h3>Arguments</h3>");
    match &c.arguments {
        Some(args) => {
            let pretty = serde_json::from_str::<Value>(args)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| args.clone());
            let _ = write!(out, "<pre class=\"args\">{}</pre>", escape(&pretty));
        }
        None => out.push_str("<p class=\"none\">not kept (record.arguments: digest)</p>"),
    }
    out.push_str("</section>\n");
    // Decision.
    out.push_str("<section><h3>Decision</h3>");
    if !c.reasons.is_empty() {
        out.push_str("<ul class=\"reasons\">");
        for r in &c.reasons {
            let _ = write!(out, "<li>{}</li>", escape(r));
        }
        out.push_str("</ul>");
    }
    if !c.rules.is_empty() {
        out.push_str("<table class=\"rules\"><tr><th>rule</th><th>decision</th><th>decided</th><th>from</th></tr>");
        for r in &c.rules {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td class=\"v-{}\">{}</td><td>{}</td><td>{}</td></tr>",
                escape(&r.id),
                escape(&r.decision),
                escape(&r.decision),
                if r.decisive { "yes" } else { "overridden" },
                escape(&r.source)
            );
        }
        out.push_str("</table>");
    }
    if !c.hazards.is_empty() {
        out.push_str("<ul class=\"hazards\">");
        for (id, detail) in &c.hazards {
            let _ = write!(
                out,
                "<li>hazard <code>{}</code>: {}</li>",
                escape(id),
                escape(detail)
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n");
    // The jail.
    if let Some(plan) = &c.sandbox {
        out.push_str("<section class=\"jail\"><h3>Jail</h3><dl class=\"plan\">");
        let shown = |v: &Value| -> Option<String> {
            match v {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                Value::Array(a) if a.is_empty() => Some("none".into()),
                Value::Array(a) => Some(
                    a.iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                Value::Object(m) => Some(
                    m.iter()
                        .map(|(k, v)| format!("{k} {v}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                other => Some(other.to_string()),
            }
        };
        let main = [
            "mode",
            "run",
            "refusal",
            "backend",
            "write_roots",
            "network",
            "not_enforced",
        ];
        for k in main {
            if let Some(v) = plan.get(k).and_then(shown) {
                let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
            }
        }
        out.push_str("</dl><details><summary>what was enforced, read roots, limits</summary><dl class=\"plan\">");
        if let Some(map) = plan.as_object() {
            for (k, v) in map.iter().filter(|(k, _)| !main.contains(&k.as_str())) {
                if let Some(v) = shown(v) {
                    let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
                }
            }
        }
        out.push_str("</dl></details></section>\n");
    }
    // Result.
    out.push_str("<section><h3>Result</h3><p>");
    let mut facts = Vec::new();
    if let Some(code) = c.exit_code {
        facts.push(format!("exit status {code}"));
    }
    if c.started_ms.is_some() {
        facts.push(format!("ran {} ms", c.duration_ms));
    } else {
        facts.push("did not run".into());
    }
    facts.push(format!("{} bytes of result", c.result_bytes));
    out.push_str(&escape(&facts.join(" · ")));
    out.push_str("</p>");
    if let Some(f) = &c.failure {
        let _ = write!(out, "<p class=\"failure\">{}</p>", escape(f));
    }
    if let Some(x) = &c.result_excerpt {
        let _ = write!(out, "<pre class=\"result\">{}</pre>", escape(x));
    }
    out.push_str("</section>\n");
    // Changes.
    let diff = changes(c, store);
    if !diff.is_empty() {
        let _ = writeln!(
            out,
            "<section><h3>Changes</h3><pre class=\"diff\">{diff}</pre></section>"
        );
    }
    if !c.network.is_empty() {
        out.push_str("<section><h3>Network</h3><ul class=\"network\">");
        for n in &c.network {
            let _ = write!(
                out,
                "<li>{} {}:{} — {} ({}), {} bytes up, {} down</li>",
                escape(n["method"].as_str().unwrap_or("")),
                escape(n["host"].as_str().unwrap_or("")),
                n["port"].as_u64().unwrap_or(0),
                escape(n["verdict"].as_str().unwrap_or("")),
                escape(n["outcome"].as_str().unwrap_or("")),
                n["bytes_up"].as_u64().unwrap_or(0),
                n["bytes_down"].as_u64().unwrap_or(0),
            );
        }
        out.push_str("</ul></section>\n");
    }
    out.push_str("</div>\n</article>\n");
}

/// What a call changed, as lines of a diff (already escaped): each observed file with its
/// digests before and after and, where the content store holds what it was before and after
/// the call, a unified diff of the two ([`file_diff`]) or why there is none; each refused
/// change; an edit's old and new text as a unified diff when no file diff was shown.
fn changes(c: &Call, store: Option<&Store>) -> String {
    let mut out = String::new();
    let mut diffed = false;
    let short = |d: Option<&str>| d.map(|d| d.chars().take(12).collect::<String>());
    let line = |out: &mut String, class: &str, text: String| {
        let _ = writeln!(out, "<span class=\"{class}\">{}</span>", escape(&text));
    };
    for r in &c.receipts {
        let path = r["path"].as_str().unwrap_or("");
        match r["kind"].as_str() {
            Some("file") => {
                let before = short(r["before_sha256"].as_str());
                let after = short(r["after_sha256"].as_str());
                match (before, after) {
                    (None, Some(a)) => line(
                        &mut out,
                        "add",
                        format!(
                            "+ {path}  (created, sha256 {a}…, {} bytes)",
                            r["bytes"].as_u64().unwrap_or(0)
                        ),
                    ),
                    (Some(b), None) => line(
                        &mut out,
                        "del",
                        format!("- {path}  (removed, was sha256 {b}…)"),
                    ),
                    (Some(b), Some(a)) => line(
                        &mut out,
                        "mod",
                        format!(
                            "~ {path}  (sha256 {b}… → {a}…, {} bytes)",
                            r["bytes"].as_u64().unwrap_or(0)
                        ),
                    ),
                    (None, None) => line(&mut out, "mod", format!("~ {path}")),
                }
                diffed |= file_diff(
                    &mut out,
                    store,
                    path,
                    r["before_sha256"].as_str(),
                    r["after_sha256"].as_str(),
                );
            }
            Some("refused_change") => line(
                &mut out,
                "refused",
                format!(
                    "! {path}  ({} refused: {})",
                    r["change"].as_str().unwrap_or(""),
                    r["reasons"]
                        .as_array()
                        .map(|a| a
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("; "))
                        .unwrap_or_default()
                ),
            ),
            Some("passthrough") => line(
                &mut out,
                "note",
                format!(
                    "? {path}  ({} files changed in place, not observed)",
                    r["files"].as_u64().unwrap_or(0)
                ),
            ),
            Some("process") => {
                if let Some(note) = r["note"].as_str().filter(|n| !n.is_empty()) {
                    line(&mut out, "note", format!("# {note}"));
                }
            }
            _ => {}
        }
    }
    // An edit's own text, as a diff of what it replaced, when it ran and no file diff was shown.
    if c.tool == "edit_file"
        && !diffed
        && c.started_ms.is_some()
        && let Some(args) = c
            .arguments
            .as_deref()
            .and_then(|a| serde_json::from_str::<Value>(a).ok())
        && let (Some(old), Some(new)) = (args["old_string"].as_str(), args["new_string"].as_str())
    {
        let path = args["path"].as_str().unwrap_or("");
        let diff = similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        for l in diff.lines() {
            let class = match l.as_bytes().first() {
                Some(b'+') => "add",
                Some(b'-') => "del",
                Some(b'@') => "hunk",
                _ => "ctx",
            };
            line(&mut out, class, l.to_owned());
        }
    }
    out
}

/// Why a kept content cannot be diffed.
enum Unkept {
    /// The store does not hold it.
    Missing,
    /// Larger than [`MAX_DIFF_SOURCE_BYTES`].
    TooLarge,
    /// The copy's sha256 is not the digest that names it (damaged or forged).
    Mismatch,
}

/// The content the store keeps under `sha256`, checked against it.
fn kept(store: &Store, sha256: &str) -> Result<Vec<u8>, Unkept> {
    if !crate::rewind::is_sha256(sha256) {
        return Err(Unkept::Missing);
    }
    let path = store.blob(sha256);
    let size = std::fs::symlink_metadata(&path)
        .ok()
        .filter(|m| m.is_file())
        .ok_or(Unkept::Missing)?
        .len();
    if size > MAX_DIFF_SOURCE_BYTES {
        return Err(Unkept::TooLarge);
    }
    let bytes = std::fs::read(&path).map_err(|_| Unkept::Missing)?;
    if crate::record::sha256(&bytes) == sha256 {
        Ok(bytes)
    } else {
        Err(Unkept::Mismatch)
    }
}

/// Adds the unified diff of a changed file (`before`/`after`: its sha256s, `None` where it did
/// not exist) to `out`, escaped and cut at [`MAX_DIFF_SHOWN_BYTES`], when the store holds both
/// contents; else a line that says why there is no diff. A binary file (a NUL byte, or not
/// UTF-8) is named as such. Returns whether a diff was shown.
fn file_diff(
    out: &mut String,
    store: Option<&Store>,
    path: &str,
    before: Option<&str>,
    after: Option<&str>,
) -> bool {
    let note = |out: &mut String, text: String| {
        let _ = writeln!(out, "<span class=\"note\">{}</span>", escape(&text));
    };
    let Some(store) = store else {
        note(
            out,
            "  # no diff: only digests (the record's content store was not given)".into(),
        );
        return false;
    };
    let content = |sha: Option<&str>, when: &str| -> Result<Vec<u8>, String> {
        match sha {
            None => Ok(Vec::new()),
            Some(sha) => kept(store, sha).map_err(|why| match why {
                Unkept::Missing => format!(
                    "its content {when} the call is not in the content store (only what file tools and observed commands changed is kept, after a call the first {} files up to {} KiB each)",
                    crate::rewind::MAX_AFTER_KEPT_FILES,
                    crate::rewind::MAX_AFTER_KEPT_BYTES / 1024
                ),
                Unkept::TooLarge => format!(
                    "its content {when} the call is over {} KiB",
                    MAX_DIFF_SOURCE_BYTES / 1024
                ),
                Unkept::Mismatch => format!(
                    "the copy of its content {when} the call does not match its sha256"
                ),
            }),
        }
    };
    let (old, new) = match (content(before, "before"), content(after, "after")) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(why), _) | (_, Err(why)) => {
            note(out, format!("  # no diff: {why}"));
            return false;
        }
    };
    let text = |b: &[u8]| {
        (!b.contains(&0))
            .then(|| std::str::from_utf8(b).ok().map(str::to_owned))
            .flatten()
    };
    let (Some(old), Some(new)) = (text(&old), text(&new)) else {
        note(out, "  # binary file: no text diff".into());
        return false;
    };
    let diff = similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .header(
            &format!("a/{}", path.trim_start_matches('/')),
            &format!("b/{}", path.trim_start_matches('/')),
        )
        .to_string();
    let mut shown = 0usize;
    let mut lines = diff.lines();
    for l in lines.by_ref() {
        if shown + l.len() > MAX_DIFF_SHOWN_BYTES {
            let rest = 1 + lines.count();
            note(
                out,
                format!(
                    "  # … {rest} more line(s) of this diff not shown (over {} KiB)",
                    MAX_DIFF_SHOWN_BYTES / 1024
                ),
            );
            return true;
        }
        shown += l.len() + 1;
        let class = match l.as_bytes().first() {
            Some(b'+') => "add",
            Some(b'-') => "del",
            Some(b'@') => "hunk",
            _ => "ctx",
        };
        let _ = writeln!(out, "<span class=\"{class}\">{}</span>", escape(l));
    }
    true
}
