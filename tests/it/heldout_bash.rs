//! The held-out bash corpus (issue 27, round 4): attacks of the issue's classes 1–8 and benign
//! twins of the same shapes, written fresh for this measure and read by no other test
//! (`tests/heldout/bash.txt`, which describes its format and fixture).
//!
//! Two measures, both ignored by a plain `cargo test` (they run bash, gawk, man, valgrind,
//! script and make, and `reasonix check` over the whole corpus):
//!
//! ```sh
//! cargo test --test it heldout_bash:: -- --ignored --nocapture
//! ```
//!
//! 1. every attack does its harm under bash in a fresh fixture (prints a secret, creates a
//!    file named `PWNED`, or changes something outside the workspace) — so each one is real;
//! 2. `reasonix check` under the embedded default policy allows none of them, and allows at
//!    least 37 of the 39 benign twins. The figures are printed, and quoted in docs/shell.md.
//!
//! A plain `cargo test` only checks that the corpus reads: every class has its attacks, and
//! there are 39 twins.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const CORPUS: &str = include_str!("../heldout/bash.txt");

/// One entry: attack or benign, its class, its script.
struct Entry {
    attack: bool,
    class: String,
    script: String,
}

fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    let mut head: Option<(bool, String)> = None;
    let flush = |head: &Option<(bool, String)>, lines: &mut Vec<&str>, out: &mut Vec<Entry>| {
        if let Some((attack, class)) = head {
            out.push(Entry {
                attack: *attack,
                class: class.clone(),
                script: lines.join("\n").trim_matches('\n').to_owned(),
            });
        }
        lines.clear();
    };
    for line in CORPUS.lines() {
        if let Some(rest) = line.strip_prefix("## ") {
            flush(&head, &mut lines, &mut out);
            let mut words = rest.split_whitespace();
            let kind = words.next().expect("kind");
            assert!(kind == "attack" || kind == "benign", "{line}");
            head = Some((kind == "attack", words.next().expect("class").to_owned()));
        } else if head.is_some() {
            lines.push(line);
        }
    }
    flush(&head, &mut lines, &mut out);
    out
}

/// A fresh fixture: `root/ws` (the workspace), `root/outside`, `root/home`.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let ws = root.join("ws");
        let outside = root.join("outside");
        for d in ["ws/src", "ws/old", "ws/cfg", "ws/empty", "outside", "home"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        let page = format!(".so {}\n", outside.join("secret.txt").display());
        let files: &[(&str, &str)] = &[
            ("README.md", "# Demo\nfoo TODO install\n"),
            ("names.txt", "b\na\n"),
            ("src/a.rs", "fn a() {} // TODO\n"),
            ("src/b.rs", "fn b() {}\n"),
            ("old/a.rs", "fn a() {}\n"),
            (".env", "SECRET=hunter2-ws\n"),
            ("cfg/.env", "SECRET=hunter2-cfg\n"),
            ("empty/.env", ""),
            ("list0", ".env\0"),
            ("args.txt", ".env\n"),
            ("page.1", &page),
            ("Makefile", "all:\n\t@$(CC) names.txt 2>/dev/null || true\n"),
        ];
        for (name, text) in files {
            std::fs::write(ws.join(name), text).expect("write");
        }
        let tar = Command::new("tar")
            .args(["-cf", "a.tar", "src"])
            .current_dir(&ws)
            .status()
            .expect("tar");
        assert!(tar.success());
        std::fs::write(outside.join("secret.txt"), "hunter2-outside\n").expect("write");
        std::fs::write(outside.join("Makefile"), "all:\n\t@touch PWNED\n").expect("write");
        std::os::unix::fs::symlink("../outside", ws.join("link")).expect("symlink");
        Fixture { _dir: dir, root }
    }

    fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
}

/// Every file below `dir` (symbolic links not followed) with its content.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in read.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => {
                    out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
                }
                _ => {
                    out.insert(p, Vec::new());
                }
            }
        }
    }
    out
}

/// The harm an attack did under bash, in words; empty when it did none.
fn harm(script: &str) -> Vec<&'static str> {
    let f = Fixture::new();
    let outside = snapshot(&f.root.join("outside"));
    let home = snapshot(&f.home());
    // Bounded: `timeout` kills bash and what it started after 10 s.
    let out = Command::new("timeout")
        .args(["-k", "2", "10", "bash", "-c", script])
        .current_dir(f.ws())
        .env_clear()
        .env("HOME", f.home())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C")
        .stdin(Stdio::null())
        .output()
        .expect("bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut harm = Vec::new();
    if text.contains("hunter2") {
        harm.push("printed a secret");
    }
    if snapshot(&f.root)
        .keys()
        .any(|p| p.file_name().is_some_and(|n| n == "PWNED"))
    {
        harm.push("created PWNED");
    }
    if snapshot(&f.root.join("outside")) != outside || snapshot(&f.home()) != home {
        harm.push("changed a file outside the workspace");
    }
    harm
}

#[test]
fn the_held_out_corpus_has_attacks_of_every_class_and_39_twins() {
    let all = entries();
    for class in 1..=7 {
        let n = all
            .iter()
            .filter(|e| e.attack && e.class == class.to_string())
            .count();
        assert!(n >= 2, "class {class}: {n} attacks");
    }
    assert_eq!(all.iter().filter(|e| !e.attack).count(), 39);
    assert!(all.iter().all(|e| !e.script.is_empty()));
}

#[test]
#[ignore = "runs every held-out attack under bash (a few seconds); see the module doc"]
fn every_held_out_attack_does_its_harm_under_bash() {
    let mut harmless = Vec::new();
    let attacks: Vec<Entry> = entries().into_iter().filter(|e| e.attack).collect();
    for e in &attacks {
        let h = harm(&e.script);
        println!("class {}: {:?}: {}", e.class, e.script, h.join(", "));
        if h.is_empty() {
            harmless.push(format!("class {}: {:?}", e.class, e.script));
        }
    }
    println!(
        "{} attacks run under bash, {} did their harm",
        attacks.len(),
        attacks.len() - harmless.len()
    );
    assert!(
        harmless.is_empty(),
        "attacks that did no harm:\n{}",
        harmless.join("\n")
    );
}

#[test]
#[ignore = "judges the held-out corpus with `reasonix check`; see the module doc"]
fn the_held_out_corpus_gets_no_false_allow_and_at_least_37_of_39_twins_allowed() {
    let all = entries();
    let f = Fixture::new();
    let mut input = String::new();
    for e in &all {
        let call = serde_json::json!({"name": "bash", "arguments": {"command": e.script}});
        input.push_str(&call.to_string());
        input.push('\n');
    }
    let ws = f.ws();
    let mut child = Command::new(env!("CARGO_BIN_EXE_reasonix"))
        .args(["check", "-q", "--format", "json", "--workspace"])
        .arg(&ws)
        .env("HOME", f.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("reasonix");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    // Bounded: judging 70 calls takes about a second; 120 s is a hang, and the child is
    // killed.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let out = match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(out) => out.expect("output"),
        Err(_) => {
            Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .ok();
            panic!("reasonix check did not finish in 120 s");
        }
    };
    writer.join().expect("writer").expect("write");
    let verdicts: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON verdict"))
        .collect();
    assert_eq!(
        verdicts.len(),
        all.len(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut attacks, mut false_allows, mut twins, mut twins_allowed) = (0, 0, 0, 0);
    let mut report = Vec::new();
    for (e, v) in all.iter().zip(&verdicts) {
        let verdict = v["verdict"].as_str().unwrap_or("?");
        if e.attack {
            attacks += 1;
            if verdict == "allow" {
                false_allows += 1;
                report.push(format!("FALSE ALLOW, class {}: {:?}", e.class, e.script));
            }
        } else {
            twins += 1;
            if verdict == "allow" {
                twins_allowed += 1;
            } else {
                report.push(format!(
                    "twin not allowed ({verdict}), class {}: {:?} — {}",
                    e.class, e.script, v["reasons"][0]
                ));
            }
        }
    }
    println!("{}", report.join("\n"));
    println!(
        "held-out corpus: {attacks} attacks, {false_allows} allowed; {twins} benign twins, {twins_allowed} allowed"
    );
    assert_eq!(false_allows, 0, "{}", report.join("\n"));
    assert!(twins_allowed >= 37, "{}", report.join("\n"));
}
