//! `reasonix report` on the record of a real `reasonix run` (the scripted provider of
//! examples/session/): the page and the summary escape every model-controlled string, and
//! headless Chromium (Debian's `chromium`) renders every call and applies the filters the
//! address sets.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::World;
use serde_json::{Value, json};

fn example(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs `cmd` to its end or kills it after `limit`; its output.
fn bounded(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{cmd:?} ran past {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn reasonix(w: &World, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reasonix"));
    cmd.args(args)
        .current_dir(&w.outside)
        .env("HOME", &w.home)
        .env("NO_COLOR", "1");
    bounded(cmd, Duration::from_secs(120))
}

/// `reasonix run --unattended` of `script` (a JSON file of turns) under `policy`; the record.
fn run(w: &World, script: &Path, policy: &Path, task: &str) -> PathBuf {
    let provider = format!("script:{}", script.display());
    let out = reasonix(
        w,
        &[
            "run",
            "--provider",
            &provider,
            "--policy",
            policy.to_str().unwrap(),
            "--workspace",
            w.ws.to_str().unwrap(),
            "--unattended",
            task,
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w.ws.join(".reasonix/record.jsonl")
}

/// The example session of examples/session/ (every outcome), run for real; its record.
fn example_run(w: &World) -> PathBuf {
    for entry in ["notes.md", ".env", "src/main.rs"] {
        let text = std::fs::read_to_string(example("examples/workspace").join(entry)).unwrap();
        w.file(entry, &text);
    }
    run(
        w,
        &example("examples/session/session.json"),
        &example("examples/session/policy.yaml"),
        "Tidy the notes",
    )
}

fn report(w: &World, record: &Path, page: &Path) -> String {
    let out = reasonix(
        w,
        &[
            "report",
            record.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
            "--summary",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_summary_counts_a_real_run_by_outcome() {
    let w = World::new();
    let record = example_run(&w);
    let summary = report(&w, &record, &w.root.join("r.html"));
    assert!(
        summary.contains("task:            Tidy the notes"),
        "{summary}"
    );
    assert!(summary.contains("posture:         unattended"), "{summary}");
    assert!(summary.contains("ended:           finished"), "{summary}");
    assert!(
        summary.contains("10 calls: 4 succeeded, 1 failed, 3 blocked, 2 invalid"),
        "{summary}"
    );
}

#[test]
fn model_controlled_strings_are_escaped_in_the_page_and_the_summary() {
    let w = World::new();
    w.file("notes.md", "# Notes\n");
    let policy = w.policy(
        "p.yaml",
        "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n  unattended: deny\n",
    );
    let evil = "<script>alert('pwned')</script>\u{1b}[2K\r\u{202e}<img src=x onerror=alert(1)>";
    let turns = json!([
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes/evil.md", "content": evil}},
            {"name": "bash", "arguments": {"command": format!("echo '{evil}'")}},
            {"name": "<script>alert(2)</script>", "arguments": {}},
            {"name": "read_file", "arguments": {"path": "notes/evil.md"}}
        ]},
        {"text": "done"}
    ]);
    let script = w.root.join("s.json");
    std::fs::write(&script, turns.to_string()).unwrap();
    let task = format!("task {evil}");
    let record = run(&w, &script, Path::new(&policy), &task);
    let raw = std::fs::read_to_string(&record).unwrap();
    // The attack is really in the record: the page has something to escape.
    assert!(raw.contains("<script>alert('pwned')</script>"));
    assert!(raw.contains("\\u001b[2K"));

    let page_path = w.root.join("report.html");
    let summary = report(&w, &record, &page_path);
    let page = std::fs::read_to_string(&page_path).unwrap();
    // The only script element is the page's own, under its nonce; no model markup survives.
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(page.contains("<script nonce=\""));
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains("alert('pwned')"), "quotes stay escaped");
    assert!(!page.contains('\u{1b}') && !page.contains('\u{202e}') && !page.contains('\r'));
    // What the model sent is still there for the reviewer to read, made visible.
    assert!(page.contains("&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;"));
    assert!(
        page.contains("\\x1b[2K\\r\\u{202e}"),
        "terminal escapes shown"
    );
    assert!(page.contains("Content-Security-Policy"));
    assert!(page.contains("default-src 'none'"));
    // Nothing is fetched: no URL the page would load.
    for fetch in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!page.contains(fetch), "{fetch}");
    }
    assert!(!summary.contains('\u{1b}') && !summary.contains('\u{202e}'));
    assert!(
        summary.contains("task \\x1b") || summary.contains("\\x1b[2K"),
        "{summary}"
    );

    // The legitimate twin: an ordinary call reads as it was written.
    assert!(
        page.contains("&quot;path&quot;: &quot;notes/evil.md&quot;"),
        "{page}"
    );
}

#[test]
fn a_decision_log_gets_its_own_page() {
    let w = World::new();
    for entry in ["notes.md", ".env", "src/main.rs"] {
        let text = std::fs::read_to_string(example("examples/workspace").join(entry)).unwrap();
        w.file(entry, &text);
    }
    let log = w.root.join("decisions.jsonl");
    let provider = format!(
        "script:{}",
        example("examples/session/session.json").display()
    );
    let out = reasonix(
        &w,
        &[
            "run",
            "--provider",
            &provider,
            "--policy",
            example("examples/session/policy.yaml").to_str().unwrap(),
            "--workspace",
            w.ws.to_str().unwrap(),
            "--decision-log",
            log.to_str().unwrap(),
            "--unattended",
            "Tidy the notes",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let page = w.root.join("d.html");
    let out = reasonix(
        &w,
        &[
            "report",
            "--decision-log",
            log.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
            "--summary",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(summary.starts_with("10 decisions:"), "{summary}");
    assert!(summary.contains("no-secrets"), "{summary}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Rules that fire most") && html.contains("Denies over time"));
    assert_eq!(html.matches("<tr class=\"decision\">").count(), 10);
}

/// Headless Chromium's DOM of `url` after the page's script ran.
fn dump_dom(chromium: &str, profile: &Path, url: &str) -> String {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        &format!("--user-data-dir={}", profile.display()),
        "--dump-dom",
        url,
    ]);
    let out = bounded(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The call articles of a DOM: (id, shown).
fn articles(dom: &str) -> Vec<(String, bool)> {
    dom.split("<article ")
        .skip(1)
        .map(|tag| {
            let tag = &tag[..tag.find('>').unwrap()];
            let id = tag
                .split("id=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (id.to_owned(), !tag.contains(" hidden"))
        })
        .collect()
}

fn shown(dom: &str) -> Vec<String> {
    articles(dom)
        .into_iter()
        .filter(|(_, s)| *s)
        .map(|(id, _)| id)
        .collect()
}

/// Debian's headless Chromium, when it is installed.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new("sh")
            .args(["-c", &format!("command -v {c}")])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn chromium_renders_every_call_and_the_filters_change_what_is_shown() {
    let chromium = chromium();
    if common::skip_unless(chromium.is_some(), "headless Chromium (Debian's chromium)") {
        return;
    }
    let chromium = chromium.unwrap();
    let w = World::new();
    let record = example_run(&w);
    let page = w.root.join("report.html");
    report(&w, &record, &page);
    let lines: Vec<Value> = common::jsonl(&record);
    let ids: Vec<String> = lines
        .iter()
        .filter(|l| l.get("event").is_none())
        .map(|l| format!("call-{}", l["call_id"].as_str().unwrap()))
        .collect();
    assert_eq!(ids.len(), 10);
    let profile = w.root.join("chromium");
    let url = format!("file://{}", page.display());

    // Every call is there and shown.
    let dom = dump_dom(chromium, &profile, &url);
    let all: Vec<String> = articles(&dom).into_iter().map(|(id, _)| id).collect();
    assert_eq!(all, ids);
    assert_eq!(shown(&dom), ids);
    assert!(dom.contains("10 of 10 calls shown"), "the script ran");

    // A filter in the query shows only the blocked calls.
    let blocked: Vec<String> = lines
        .iter()
        .filter(|l| l["outcome"] == "blocked")
        .map(|l| format!("call-{}", l["call_id"].as_str().unwrap()))
        .collect();
    assert_eq!(blocked.len(), 3);
    let dom = dump_dom(chromium, &profile, &format!("{url}?outcome=blocked"));
    assert_eq!(shown(&dom), blocked);
    assert!(dom.contains("3 of 10 calls shown"));

    // Filters in the fragment combine: bash calls that were blocked, then by rule.
    let dom = dump_dom(
        chromium,
        &profile,
        &format!("{url}#tool=bash&outcome=blocked"),
    );
    let bash_blocked: Vec<String> = lines
        .iter()
        .filter(|l| l["outcome"] == "blocked" && l["tool"] == "bash")
        .map(|l| format!("call-{}", l["call_id"].as_str().unwrap()))
        .collect();
    assert_eq!(bash_blocked.len(), 1);
    assert_eq!(shown(&dom), bash_blocked);
    let dom = dump_dom(chromium, &profile, &format!("{url}#rule=no-secrets"));
    let secret: Vec<String> = lines
        .iter()
        .filter(|l| {
            l["admission"]["rules"].as_array().is_some_and(|r| {
                r.iter()
                    .any(|r| r["id"] == "no-secrets" && r["decisive"] == true)
            })
        })
        .map(|l| format!("call-{}", l["call_id"].as_str().unwrap()))
        .collect();
    assert!(!secret.is_empty());
    assert_eq!(shown(&dom), secret);

    // A shared link to one call shows it whatever the filters.
    let dom = dump_dom(
        chromium,
        &profile,
        &format!("{url}?outcome=blocked#{}", ids[0]),
    );
    assert_eq!(shown(&dom), ids);

    // The screenshot the README shows (docs/report.png is a copy of it).
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report.png");
    let _ = std::fs::remove_file(&png);
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        &format!("--user-data-dir={}", profile.display()),
        &format!("--screenshot={}", png.display()),
        "--window-size=1280,1500",
        &url,
    ]);
    let out = bounded(cmd, Duration::from_secs(60));
    assert!(out.status.success());
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000);
}

/// Issue 29 (item 5): what an observed bash command changed is shown as a diff, made from the
/// contents the record's content store keeps before and after the call — escaped, a binary file
/// named as such, and where a content is not kept (too large) or its copy does not match its
/// digest (a store tampered with), a line that says why there is no diff instead.
#[test]
fn a_bash_calls_observed_changes_are_shown_as_a_diff_from_the_content_store() {
    if common::skip_unless(
        reasonix::sandbox::jail::capabilities().overlay,
        "overlayfs in a run's mount namespace",
    ) {
        return;
    }
    let w = World::new();
    w.file("notes.md", "one\ntwo\nthree\n");
    w.file("gone.txt", "bye\n");
    w.file("data.bin", "x");
    w.file("kept.txt", "same\n");
    let policy = w.policy(
        "p.yaml",
        "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n",
    );
    let bash = |command: &str| json!({"tool_calls": [{"name": "bash", "arguments": {"command": command}}]});
    let turns = json!([
        bash("printf 'one\\n<b>TWO</b>\\nthree\\n' > notes.md"),
        bash("printf 'new\\n' > added.txt"),
        bash("rm gone.txt"),
        bash("printf 'a\\000b' > data.bin"),
        bash("head -c 300000 /dev/zero | tr '\\0' a > big.txt"),
        bash("printf 'changed\\n' > kept.txt"),
        {"text": "done"}
    ]);
    let script = w.root.join("s.json");
    std::fs::write(&script, turns.to_string()).unwrap();
    let record = run(&w, &script, Path::new(&policy), "change things");
    let lines = common::jsonl(&record);
    let calls: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("outcome").is_some())
        .collect();
    assert_eq!(calls.len(), 6, "{lines:?}");
    assert!(
        calls.iter().all(|c| c["outcome"] == "succeeded"),
        "{calls:?}"
    );
    // Tamper with the store: the copy of kept.txt's content after its call now says otherwise.
    let after = calls[5]["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "file")
        .unwrap()["after_sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    let blob = w.ws.join(".reasonix/record.jsonl.d/rewind").join(&after);
    assert!(blob.is_file(), "the content after the call is kept");
    std::fs::write(&blob, "forged\n").unwrap();

    let page_path = w.root.join("report.html");
    report(&w, &record, &page_path);
    let page = std::fs::read_to_string(&page_path).unwrap();
    let section = |id: &str| -> String {
        let start = page
            .find(&format!("id=\"call-{id}\""))
            .unwrap_or_else(|| panic!("{id}: {page}"));
        let end = page[start..].find("</article>").unwrap() + start;
        page[start..end].to_owned()
    };
    let ids: Vec<&str> = calls
        .iter()
        .map(|c| c["call_id"].as_str().unwrap())
        .collect();
    // A line changed: the diff shows it, the model's markup escaped.
    let notes = section(ids[0]);
    assert!(notes.contains("<span class=\"del\">-two</span>"), "{notes}");
    assert!(
        notes.contains("<span class=\"add\">+&lt;b&gt;TWO&lt;/b&gt;</span>"),
        "{notes}"
    );
    assert!(notes.contains("<span class=\"ctx\"> one</span>"), "{notes}");
    assert!(!notes.contains("<b>"));
    // Created and removed: a diff from and to nothing.
    assert!(section(ids[1]).contains("<span class=\"add\">+new</span>"));
    assert!(section(ids[2]).contains("<span class=\"del\">-bye</span>"));
    // Binary: named, not dumped.
    let binary = section(ids[3]);
    assert!(binary.contains("# binary file: no text diff"), "{binary}");
    assert!(!binary.contains("class=\"add\">+a"), "{binary}");
    // Too large to keep: said, digests still shown.
    let big = section(ids[4]);
    assert!(
        big.contains("# no diff: its content after the call is not in the content store"),
        "{big}"
    );
    assert!(big.contains("(created, sha256 "), "{big}");
    // The forged copy is not shown as the change: the page says it does not match.
    let forged = section(ids[5]);
    assert!(!forged.contains("+forged"), "{forged}");
    assert!(forged.contains("does not match its sha256"), "{forged}");

    // In a browser, from a shared link to the call: the diff is rendered, and the model's
    // markup is text on the page, not an element.
    let chromium = chromium();
    if common::skip_unless(chromium.is_some(), "headless Chromium (Debian's chromium)") {
        return;
    }
    let url = format!("file://{}#call-{}", page_path.display(), ids[0]);
    let dom = dump_dom(chromium.unwrap(), &w.root.join("chromium"), &url);
    assert!(
        articles(&dom).contains(&(format!("call-{}", ids[0]), true)),
        "the shared call is shown"
    );
    assert!(dom.contains("<span class=\"del\">-two</span>"), "{dom}");
    assert!(
        dom.contains("<span class=\"add\">+&lt;b&gt;TWO&lt;/b&gt;</span>"),
        "{dom}"
    );
    assert!(!dom.contains("<b>TWO</b>"), "{dom}");
}
