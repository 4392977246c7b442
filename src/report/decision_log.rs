//! The page of a decision log (`reasonix report --decision-log FILE`): many runs' decisions in
//! OPA's shape ([`crate::decisions`]), summed up — decisions by verdict, the rules that fire
//! most, asks by tool, denies over time — and the latest decisions in a table.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::escape;
use super::html::{head, nonce};

/// One decision, as the report reads it.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// RFC 3339, as logged.
    pub timestamp: String,
    /// The tool.
    pub tool: String,
    /// `allow`, `ask`, `deny`, `invalid`.
    pub verdict: String,
    /// The stage that settled it.
    pub stage: String,
    /// The rules that decided it (every rule that matched when none is marked).
    pub rules: Vec<String>,
    /// How the call ended, when it is known.
    pub outcome: Option<String>,
}

/// A decision log, read for a report.
#[derive(Debug, Default)]
pub struct DecisionLog {
    /// The decisions, in file order.
    pub decisions: Vec<Decision>,
    /// Lines that were not JSON objects, skipped.
    pub unreadable: usize,
}

impl DecisionLog {
    /// Reads a decision log's text.
    pub fn parse(text: &str) -> DecisionLog {
        let mut log = DecisionLog::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(line) else {
                log.unreadable += 1;
                continue;
            };
            let rules: Vec<(String, bool)> = v["rules"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|r| Some((r["id"].as_str()?.to_owned(), r["decisive"] == true)))
                        .collect()
                })
                .unwrap_or_default();
            let decisive: Vec<String> = rules
                .iter()
                .filter(|(_, d)| *d)
                .map(|(id, _)| id.clone())
                .collect();
            log.decisions.push(Decision {
                timestamp: v["timestamp"].as_str().unwrap_or("").to_owned(),
                tool: v["result"]["tool"].as_str().unwrap_or("").to_owned(),
                verdict: v["result"]["verdict"].as_str().unwrap_or("").to_owned(),
                stage: v["stage"].as_str().unwrap_or("").to_owned(),
                rules: if decisive.is_empty() {
                    rules.into_iter().map(|(id, _)| id).collect()
                } else {
                    decisive
                },
                outcome: v["outcome"].as_str().map(str::to_owned),
            });
        }
        log
    }

    /// Decisions by verdict.
    pub fn by_verdict(&self) -> BTreeMap<&str, usize> {
        let mut m = BTreeMap::new();
        for d in &self.decisions {
            *m.entry(d.verdict.as_str()).or_default() += 1;
        }
        m
    }

    /// The rules that fire most: id, times it decided, and how (verdict → count), most first.
    pub fn top_rules(&self) -> Vec<(&str, usize, BTreeMap<&str, usize>)> {
        let mut m: BTreeMap<&str, (usize, BTreeMap<&str, usize>)> = BTreeMap::new();
        for d in &self.decisions {
            for r in &d.rules {
                let e = m.entry(r.as_str()).or_default();
                e.0 += 1;
                *e.1.entry(d.verdict.as_str()).or_default() += 1;
            }
        }
        let mut v: Vec<_> = m.into_iter().map(|(k, (n, by))| (k, n, by)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    /// Asks by tool, most first.
    pub fn asks_by_tool(&self) -> Vec<(&str, usize)> {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for d in self.decisions.iter().filter(|d| d.verdict == "ask") {
            *m.entry(d.tool.as_str()).or_default() += 1;
        }
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    /// Denies over time: the timestamp's hour (`2026-12-03T05`) → denies in it, in order.
    pub fn denies_by_hour(&self) -> Vec<(String, usize)> {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for d in self.decisions.iter().filter(|d| d.verdict == "deny") {
            let hour: String = d.timestamp.chars().take(13).collect();
            *m.entry(hour).or_default() += 1;
        }
        m.into_iter().collect()
    }

    /// Counts as text, for a terminal or a CI log.
    pub fn summary(&self) -> String {
        let mut out = format!("{} decisions:", self.decisions.len());
        let verdicts: Vec<String> = self
            .by_verdict()
            .iter()
            .map(|(v, n)| format!("{n} {}", crate::text::visible(v)))
            .collect();
        out.push_str(&format!(" {}\n", verdicts.join(", ")));
        out.push_str("rules that fire most:\n");
        for (id, n, _) in self.top_rules().iter().take(10) {
            out.push_str(&format!("  {n:>6}  {}\n", crate::text::visible(id)));
        }
        out.push_str("asks by tool:\n");
        for (tool, n) in self.asks_by_tool().iter().take(10) {
            out.push_str(&format!("  {n:>6}  {}\n", crate::text::visible(tool)));
        }
        if self.unreadable > 0 {
            out.push_str(&format!("{} unreadable line(s) skipped\n", self.unreadable));
        }
        out
    }
}

/// How many of the latest decisions the page lists one by one.
const LATEST: usize = 500;

fn bars(out: &mut String, class: &str, rows: &[(String, usize)]) {
    let max = rows.iter().map(|(_, n)| *n).max().unwrap_or(1).max(1);
    let _ = write!(out, "<table class=\"{class} chart\">");
    for (label, n) in rows {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td class=\"n\">{n}</td><td class=\"barcell\"><span class=\"hbar\" style=\"width:{:.1}%\"></span></td></tr>",
            escape(label),
            *n as f64 * 100.0 / max as f64
        );
    }
    out.push_str("</table>");
}

/// The page of a decision log.
pub fn page(log: &DecisionLog) -> String {
    let nonce = nonce();
    let mut out = head("Reasonix decision log report", &nonce);
    let _ = writeln!(
        out,
        "<style nonce=\"{nonce}\">.chart td {{ padding: 2px 8px; }} .n {{ text-align: right; }} \
         .barcell {{ width: 60%; }} .hbar {{ display: inline-block; height: 10px; background: #1565c0; border-radius: 2px; }} \
         .denies .hbar {{ background: var(--fail); }} .asks .hbar {{ background: var(--block); }} \
         .panel {{ background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 12px 0; }} \
         table.latest {{ border-collapse: collapse; width: 100%; font-size: 12.5px; }} \
         table.latest td, table.latest th {{ border-bottom: 1px solid var(--line); padding: 2px 6px; text-align: left; }}</style>"
    );
    out.push_str("<body>\n<main>\n<h1>Reasonix decision log report</h1>\n<section class=\"panel\"><ul class=\"counts\">");
    let _ = write!(
        out,
        "<li class=\"count all\"><b>{}</b> decisions</li>",
        log.decisions.len()
    );
    for (v, n) in log.by_verdict() {
        let _ = write!(
            out,
            "<li class=\"count v-{0}\" data-verdict=\"{0}\"><b>{n}</b> {0}</li>",
            escape(v)
        );
    }
    out.push_str("</ul>");
    if log.unreadable > 0 {
        let _ = write!(
            out,
            "<p class=\"warn\">{} line(s) could not be read and are not counted.</p>",
            log.unreadable
        );
    }
    out.push_str("</section>\n<section class=\"panel\" id=\"rules\"><h3>Rules that fire most</h3>");
    let rules: Vec<(String, usize)> = log
        .top_rules()
        .into_iter()
        .map(|(id, n, by)| {
            let how: Vec<String> = by.iter().map(|(v, n)| format!("{n} {v}")).collect();
            (format!("{id} ({})", how.join(", ")), n)
        })
        .collect();
    bars(&mut out, "rules", &rules);
    out.push_str("</section>\n<section class=\"panel\" id=\"asks\"><h3>Asks by tool</h3>");
    let asks: Vec<(String, usize)> = log
        .asks_by_tool()
        .into_iter()
        .map(|(t, n)| (t.to_owned(), n))
        .collect();
    bars(&mut out, "asks", &asks);
    out.push_str("</section>\n<section class=\"panel\" id=\"denies\"><h3>Denies over time (by hour, UTC)</h3>");
    bars(&mut out, "denies", &log.denies_by_hour());
    let _ = write!(
        out,
        "</section>\n<section class=\"panel\" id=\"latest\"><h3>Latest decisions ({} of {})</h3>\
         <table class=\"latest\"><tr><th>time</th><th>tool</th><th>verdict</th><th>stage</th><th>rules</th><th>outcome</th></tr>",
        log.decisions.len().min(LATEST),
        log.decisions.len()
    );
    for d in log.decisions.iter().rev().take(LATEST) {
        let _ = write!(
            out,
            "<tr class=\"decision\"><td>{}</td><td>{}</td><td class=\"v-{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&d.timestamp),
            escape(&d.tool),
            escape(&d.verdict),
            escape(&d.verdict),
            escape(&d.stage),
            escape(&d.rules.join(", ")),
            escape(d.outcome.as_deref().unwrap_or("—")),
        );
    }
    out.push_str("</table></section>\n</main>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_asks_and_denies_are_counted() {
        let text = [
            r#"{"timestamp":"2026-12-01T10:00:00Z","result":{"tool":"bash","verdict":"deny"},"stage":"policy","rules":[{"id":"no-net","decisive":true},{"id":"ok","decisive":false}],"outcome":"blocked"}"#,
            r#"{"timestamp":"2026-12-01T10:30:00Z","result":{"tool":"bash","verdict":"ask"},"stage":"policy","rules":[{"id":"ask-bash","decisive":true}]}"#,
            r#"{"timestamp":"2026-12-01T11:00:00Z","result":{"tool":"<b>x</b>","verdict":"deny"},"stage":"policy","rules":[{"id":"no-net","decisive":true}]}"#,
            "not json",
        ]
        .join("\n");
        let log = DecisionLog::parse(&text);
        assert_eq!(log.unreadable, 1);
        assert_eq!(log.top_rules()[0].0, "no-net");
        assert_eq!(log.top_rules()[0].1, 2);
        assert_eq!(log.asks_by_tool(), [("bash", 1)]);
        assert_eq!(
            log.denies_by_hour(),
            [
                ("2026-12-01T10".to_owned(), 1),
                ("2026-12-01T11".to_owned(), 1)
            ]
        );
        let page = page(&log);
        assert!(page.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert!(!page.contains("<b>x</b>"));
    }
}
