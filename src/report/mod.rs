//! Run reports: `reasonix report`. It reads what was already written — an execution record
//! ([`crate::record`]) or a decision log ([`crate::decisions`]) — and shows it to a person: one
//! self-contained HTML page ([`html`], [`decision_log`]) or a few lines of text
//! ([`Record::summary`]). It is no stage of the admission path; it judges nothing and changes
//! nothing, and a line it cannot read is counted, never fatal.
//!
//! Every string in a record may come from the model (arguments, tool names, paths, results,
//! reasons that quote them). The page escapes each one for HTML *and* makes terminal escapes
//! and invisible characters visible ([`crate::text::visible`]), so what a reviewer reads is what
//! the model sent; the page's own script runs under a Content-Security-Policy nonce, so markup
//! that slipped through could still run nothing, and nothing is ever fetched.
//!
//! - `html.rs`: the page of a record — header, timeline, calls, filters;
//! - `decision_log.rs`: the page of a decision log — rules that fire most, asks by tool, denies
//!   over time.

pub mod decision_log;
pub mod html;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::text::visible;

/// A record, read for a report: its runs in the order they started.
#[derive(Debug, Default)]
pub struct Record {
    /// The runs.
    pub runs: Vec<Run>,
    /// Lines that were not JSON objects (a line torn by a crash), skipped.
    pub unreadable: usize,
    /// The content store beside the record (rewind's blobs, [`crate::rewind::Store::beside`]),
    /// where the page finds what a changed file held before and after its call, to show the
    /// change as a diff; `None`: digests only.
    pub store: Option<crate::rewind::Store>,
}

/// One run of a record.
#[derive(Debug, Default)]
pub struct Run {
    /// Its id.
    pub run_id: String,
    /// The task (the prompt), when the record says.
    pub task: Option<String>,
    /// The provider: the model and where it was asked, or the script.
    pub model: Option<String>,
    /// The posture.
    pub posture: Option<String>,
    /// The policy bundle's revision, when the policy was a bundle.
    pub policy_revision: Option<String>,
    /// When it started and ended (ms since the epoch); `None` when the record has no line.
    pub started_ms: Option<u128>,
    /// When it ended.
    pub ended_ms: Option<u128>,
    /// How it ended (`finished`, `max_steps`, …), or the provider's error.
    pub end: Option<String>,
    /// Its calls, in record order (MCP connects included).
    pub calls: Vec<Call>,
    /// Failed attempts at a model's answer (provider retries): time, and the fault in words.
    pub retries: Vec<(u128, String)>,
    /// Other lines worth a mention (plans, evidence, provider errors), in words.
    pub notes: Vec<(u128, String)>,
}

/// One call of a run, as the report shows it.
#[derive(Debug, Default, Clone)]
pub struct Call {
    /// The call id (`connect-N` for an MCP connect, which has none).
    pub call_id: String,
    /// The tool as called.
    pub tool: String,
    /// The arguments as the model wrote them (`None`: the record keeps only their digest).
    pub arguments: Option<String>,
    /// `allow`, `ask`, `deny`, `invalid`.
    pub verdict: String,
    /// The stage that settled it.
    pub stage: String,
    /// The rules that matched: id, decision, whether it decided, source.
    pub rules: Vec<Rule>,
    /// Why.
    pub reasons: Vec<String>,
    /// Hazards of a bash call: id and detail.
    pub hazards: Vec<(String, String)>,
    /// Who let an ask through or refused it, and how.
    pub approval: Option<String>,
    /// Who was asked.
    pub approver: Option<String>,
    /// The jail it ran in, as recorded.
    pub sandbox: Option<Value>,
    /// `invalid`, `blocked`, `failed`, `succeeded`.
    pub outcome: String,
    /// Its exit status.
    pub exit_code: Option<i64>,
    /// Why it failed.
    pub failure: Option<String>,
    /// When it was judged, and when it began to run (ms since the epoch).
    pub time_ms: u128,
    /// When it began to run.
    pub started_ms: Option<u128>,
    /// How long it ran (ms).
    pub duration_ms: u128,
    /// The size of the whole result.
    pub result_bytes: u64,
    /// What the record keeps of the result.
    pub result_excerpt: Option<String>,
    /// What was observed of its effects (the record's receipts).
    pub receipts: Vec<Value>,
    /// A file tool's paths before and after.
    pub snapshot: Vec<Value>,
    /// Connections its processes asked the egress proxy for.
    pub network: Vec<Value>,
}

/// A rule that matched a call.
#[derive(Debug, Default, Clone)]
pub struct Rule {
    /// Its id.
    pub id: String,
    /// `allow`, `ask`, `deny`.
    pub decision: String,
    /// Whether it decided the verdict.
    pub decisive: bool,
    /// The file it came from.
    pub source: String,
}

/// The four outcomes, in the order a report lists them.
pub const OUTCOMES: [&str; 4] = ["succeeded", "failed", "blocked", "invalid"];

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn number(v: &Value, key: &str) -> Option<u128> {
    v.get(key).and_then(Value::as_u64).map(u128::from)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|s| match s {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Call {
    fn from_line(line: &Value, fallback_id: String) -> Call {
        let admission = line.get("admission").cloned().unwrap_or(Value::Null);
        let rules = admission
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| Rule {
                        id: text(r, "id").unwrap_or_default(),
                        decision: text(r, "decision").unwrap_or_default(),
                        decisive: r.get("decisive").and_then(Value::as_bool) == Some(true),
                        source: text(r, "source").unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let hazards = admission
            .get("hazards")
            .and_then(Value::as_array)
            .map(|h| {
                h.iter()
                    .map(|h| {
                        (
                            text(h, "id").unwrap_or_default(),
                            text(h, "detail").unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let arguments = match line.get("arguments") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Null) | None => None,
            Some(other) => Some(other.to_string()),
        };
        Call {
            call_id: text(line, "call_id").unwrap_or(fallback_id),
            tool: text(line, "tool").unwrap_or_default(),
            arguments,
            verdict: text(&admission, "verdict").unwrap_or_default(),
            stage: text(&admission, "stage").unwrap_or_default(),
            rules,
            reasons: strings(admission.get("reasons").unwrap_or(&Value::Null)),
            hazards,
            approval: text(line, "approval"),
            approver: text(line, "approver"),
            sandbox: line.get("sandbox").filter(|s| !s.is_null()).cloned(),
            outcome: text(line, "outcome").unwrap_or_default(),
            exit_code: line.get("exit_code").and_then(Value::as_i64),
            failure: text(line, "failure"),
            time_ms: number(line, "time_ms").unwrap_or(0),
            started_ms: number(line, "started_ms"),
            duration_ms: number(line, "duration_ms").unwrap_or(0),
            result_bytes: line
                .get("result_bytes")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            result_excerpt: text(line, "result_excerpt"),
            receipts: line
                .get("receipts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            snapshot: line
                .get("snapshot")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            network: Vec::new(),
        }
    }

    /// The ids of the rules that decided it (or every rule that matched when none is marked).
    pub fn deciding_rules(&self) -> Vec<&str> {
        let decisive: Vec<&str> = self
            .rules
            .iter()
            .filter(|r| r.decisive)
            .map(|r| r.id.as_str())
            .collect();
        if decisive.is_empty() {
            self.rules.iter().map(|r| r.id.as_str()).collect()
        } else {
            decisive
        }
    }

    /// How many changes were observed: files written, created or removed, refused changes.
    pub fn observed_changes(&self) -> usize {
        self.receipts
            .iter()
            .filter(|r| {
                matches!(
                    r.get("kind").and_then(Value::as_str),
                    Some("file" | "refused_change")
                )
            })
            .count()
    }
}

impl Run {
    fn new(run_id: &str) -> Run {
        Run {
            run_id: run_id.to_owned(),
            ..Run::default()
        }
    }

    /// How long it lasted, in ms, from its first line to its last.
    pub fn duration_ms(&self) -> Option<u128> {
        let first = self
            .started_ms
            .or_else(|| self.calls.iter().map(|c| c.time_ms).min())?;
        let last = self.ended_ms.or_else(|| {
            self.calls
                .iter()
                .map(|c| c.started_ms.unwrap_or(c.time_ms) + c.duration_ms)
                .max()
        })?;
        Some(last.saturating_sub(first))
    }

    /// Its calls counted by outcome, in [`OUTCOMES`] order.
    pub fn counts(&self) -> [(&'static str, usize); 4] {
        OUTCOMES.map(|o| (o, self.calls.iter().filter(|c| c.outcome == o).count()))
    }

    /// Asks that someone answered.
    pub fn approvals(&self) -> usize {
        self.calls.iter().filter(|c| c.approval.is_some()).count()
    }
}

impl Record {
    /// Reads a record's text: lines grouped by `run_id`, in order of first appearance.
    pub fn parse(input: &str) -> Record {
        let mut record = Record::default();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        let mut connects = 0usize;
        for line in input.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(line) else {
                record.unreadable += 1;
                continue;
            };
            let run_id = text(&value, "run_id").unwrap_or_default();
            let at = *index.entry(run_id.clone()).or_insert_with(|| {
                record.runs.push(Run::new(&run_id));
                record.runs.len() - 1
            });
            let run = &mut record.runs[at];
            if let Some(revision) = text(&value, "policy_revision") {
                run.policy_revision = Some(revision);
            }
            let time = number(&value, "time_ms").unwrap_or(0);
            match value.get("event").and_then(Value::as_str) {
                None => {
                    let n = run.calls.len() + 1;
                    run.calls.push(Call::from_line(&value, format!("call-{n}")));
                }
                Some("mcp_connect") => {
                    connects += 1;
                    run.calls
                        .push(Call::from_line(&value, format!("connect-{connects}")));
                }
                Some("network_connect") => {
                    let call = text(&value, "call_id");
                    if let Some(c) = run
                        .calls
                        .iter_mut()
                        .rev()
                        .find(|c| Some(&c.call_id) == call.as_ref())
                    {
                        c.network.push(value);
                    }
                }
                Some("run_started") => {
                    run.started_ms = Some(time);
                    let detail = text(&value, "detail").unwrap_or_default();
                    let (model, task) = match detail.split_once(" — ") {
                        Some((m, t)) => (m.to_owned(), t.to_owned()),
                        None => (String::new(), detail),
                    };
                    run.model = text(&value, "provider").or(Some(model));
                    run.task = text(&value, "task").or(Some(task));
                    run.posture = text(&value, "posture");
                }
                Some("run_ended") => {
                    run.ended_ms = Some(time);
                    run.end = text(&value, "detail");
                }
                Some("provider_error") => {
                    run.ended_ms = Some(time);
                    let detail = text(&value, "detail").unwrap_or_default();
                    run.notes.push((time, format!("provider error: {detail}")));
                    run.end = Some(format!("provider error: {detail}"));
                }
                Some("attempt_failed") => {
                    let wait = match number(&value, "wait_ms") {
                        Some(ms) => format!("; asked again after {ms} ms"),
                        None => "; gave up".to_owned(),
                    };
                    run.retries.push((
                        time,
                        format!(
                            "turn {} attempt {}: {} — {}{wait}",
                            number(&value, "step").unwrap_or(0),
                            number(&value, "attempt").unwrap_or(0),
                            text(&value, "fault").unwrap_or_default(),
                            text(&value, "detail").unwrap_or_default()
                        ),
                    ));
                }
                Some("plan") => run.notes.push((
                    time,
                    format!("plan {}", text(&value, "decision").unwrap_or_default()),
                )),
                Some("evidence") => run.notes.push((
                    time,
                    format!(
                        "goal check {}: `{}` — {}",
                        number(&value, "round").unwrap_or(0),
                        text(&value, "command").unwrap_or_default(),
                        if value.get("met").and_then(Value::as_bool) == Some(true) {
                            "met"
                        } else {
                            "not met"
                        }
                    ),
                )),
                Some(_) => {}
            }
        }
        record
    }

    /// Every call of every run.
    pub fn calls(&self) -> impl Iterator<Item = &Call> {
        self.runs.iter().flat_map(|r| r.calls.iter())
    }

    /// The header and counts as text for a terminal or a CI log (`reasonix report --summary`):
    /// one block per run. Every model-controlled string is made visible.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for run in &self.runs {
            let field = |s: &Option<String>| {
                s.as_deref()
                    .map(|s| visible(s).into_owned())
                    .unwrap_or_else(|| "—".into())
            };
            out.push_str(&format!("run {}\n", visible(&run.run_id)));
            out.push_str(&format!("  task:            {}\n", field(&run.task)));
            out.push_str(&format!("  model:           {}\n", field(&run.model)));
            out.push_str(&format!("  posture:         {}\n", field(&run.posture)));
            out.push_str(&format!(
                "  policy revision: {}\n",
                field(&run.policy_revision)
            ));
            out.push_str(&format!(
                "  duration:        {}\n",
                run.duration_ms().map_or("—".into(), seconds)
            ));
            out.push_str(&format!("  ended:           {}\n", field(&run.end)));
            let counts: Vec<String> = run
                .counts()
                .iter()
                .map(|(o, n)| format!("{n} {o}"))
                .collect();
            out.push_str(&format!(
                "  {} calls: {}\n",
                run.calls.len(),
                counts.join(", ")
            ));
            out.push_str(&format!(
                "  {} provider retries, {} asks answered\n",
                run.retries.len(),
                run.approvals()
            ));
        }
        if self.unreadable > 0 {
            out.push_str(&format!("{} unreadable line(s) skipped\n", self.unreadable));
        }
        out
    }
}

/// Milliseconds as seconds, for people: `0.42 s`, `12.3 s`, `3 min 05 s`.
pub fn seconds(ms: u128) -> String {
    if ms < 10_000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else if ms < 120_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {:02} s", ms / 60_000, (ms / 1000) % 60)
    }
}

/// `text` escaped for HTML text and attribute values, with every character a terminal would
/// interpret made visible first ([`crate::text::visible_lines`]; line breaks and tabs stay).
pub fn escape(text: &str) -> String {
    let shown = crate::text::visible_lines(text);
    let mut out = String::with_capacity(shown.len() + 8);
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_no_markup_and_no_terminal_escape() {
        let e = escape("<script>alert('x')</script>\u{1b}[2K\r\u{202e}\"&");
        assert_eq!(
            e,
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\\x1b[2K\\r\\u{202e}&quot;&amp;"
        );
        // Its legitimate twin: plain text, line breaks and tabs, stays as it is.
        assert_eq!(escape("ls -la\n\tsrc"), "ls -la\n\tsrc");
    }

    #[test]
    fn lines_are_grouped_by_run_and_torn_lines_counted() {
        let text = concat!(
            r#"{"run_id":"a","time_ms":1000,"event":"run_started","detail":"m at u — do it","provider":"m at u","task":"do it","posture":"unattended"}"#,
            "\n",
            r#"{"run_id":"a","time_ms":1100,"call_id":"c1","tool":"bash","arguments":"{}","admission":{"verdict":"deny","stage":"policy","rules":[{"id":"r1","source":"p","decision":"deny","decisive":true}],"reasons":["no"],"hazards":[{"id":"eval","detail":"eval"}]},"outcome":"blocked","duration_ms":0,"receipts":[]}"#,
            "\n",
            r#"{"run_id":"a","time_ms":1200,"event":"attempt_failed","step":1,"attempt":1,"fault":"status","detail":"429","wait_ms":10}"#,
            "\n",
            "{\"run_id\":\"b\",\n",
            r#"{"run_id":"a","time_ms":3000,"event":"run_ended","detail":"finished","policy_revision":"v7"}"#,
            "\n",
        );
        let r = Record::parse(text);
        assert_eq!(r.unreadable, 1);
        assert_eq!(r.runs.len(), 1);
        let run = &r.runs[0];
        assert_eq!(run.task.as_deref(), Some("do it"));
        assert_eq!(run.posture.as_deref(), Some("unattended"));
        assert_eq!(run.policy_revision.as_deref(), Some("v7"));
        assert_eq!(run.duration_ms(), Some(2000));
        assert_eq!(run.retries.len(), 1);
        assert_eq!(run.calls[0].deciding_rules(), ["r1"]);
        assert_eq!(run.calls[0].hazards[0].0, "eval");
        let summary = r.summary();
        assert!(
            summary.contains("1 calls: 0 succeeded, 0 failed, 1 blocked, 0 invalid"),
            "{summary}"
        );
    }
}
