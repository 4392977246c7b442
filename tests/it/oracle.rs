//! The execution oracle (issue 10): bash itself says what a script starts and changes, and the
//! bash analysis and the gate are held to it ([`common::oracle`] says how, and what is judged).
//!
//! Fed with every script of the analysis tables (the rows of `tests/it/bash_analysis.rs` and the
//! examples of the tables in `crates/reasonix-shell/src/`), scripts of the fuzz generator of
//! `tests/it/fuzz_bash.rs`, and the shell scripts shipped in this system's packages. A mismatch
//! fails the test unless `tests/oracle/known.txt` lists it, with its reason; every run writes
//! its report under `target/tmp/`.
//!
//! `ORACLE_FUZZ_SHORT` sets how many fuzz scripts the ordinary run analyses (2000). The long
//! run (`long_run`, ignored) takes its sizes from the environment:
//! `ORACLE_FUZZ` (fuzz scripts analysed, 200000), `ORACLE_JOBS` (workers, 2),
//! `ORACLE_TIMEOUT_MS` (per script, 1000), `ORACLE_SEED` (the fuzz seed, 1), `ORACLE_EFFECTS`
//! (fuzz scripts offered to the file-effect oracle, 5000).
//!
//! The file-effect oracle (issue 27) runs every script the analysis calls read-only with the
//! real bash and programs under `strace -f`, in a throwaway workspace, and holds what it
//! touched to the analysis: a write anywhere, a read in the workspace of a path no request
//! names, a change into a folder outside the workspace the analysis never resolved, or a
//! network connection without the network effect is a mismatch (`EFFECT_NOISE` lists the
//! programs' own harmless effects, each with its reason).
//!
//! Also here: the real `sort`, `sed`, `tar`, `git` and `make` on this machine, asked which
//! abbreviations of their long options they accept and what those lines then do.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use common::oracle::{self, Kind, Known, Request, Tally};
use common::skip_unless;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use reasonix::shell::Analysis;

/// The worker the oracle starts inside its mount namespace (a no-op otherwise).
#[test]
fn oracle_worker() {
    oracle::serve();
}

fn lacks_oracle() -> bool {
    let why = oracle::unavailable();
    skip_unless(why.is_none(), why.as_deref().unwrap_or(""))
}

fn known() -> Vec<Known> {
    oracle::known(include_str!("../oracle/known.txt"))
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Fails with the report when a mismatch is not in the known list.
fn assert_no_unknown(what: &str, tally: &Tally) {
    let known = known();
    let report = tally.write_report(what, &known);
    eprintln!("{} (report: {})", tally.summary(what), report.display());
    let listing: String = tally.unknown.iter().map(|m| m.render()).collect();
    assert!(
        tally.unknown.is_empty(),
        "{} mismatches between bash and the analysis not in tests/oracle/known.txt:\n{listing}\n(report: {})",
        tally.unknown.len(),
        report.display()
    );
}

// ---------------------------------------------------------------------------------------------
// Scripts from the sources: string literals of Rust files.

/// The Rust string literal at the start of `s` (plain or raw), and the bytes it took.
fn literal(s: &str) -> Option<(String, usize)> {
    let bytes = s.as_bytes();
    if let Some(raw) = s.strip_prefix('r') {
        let hashes = raw.bytes().take_while(|b| *b == b'#').count();
        if bytes.get(1 + hashes) != Some(&b'"') {
            return None;
        }
        let body = 2 + hashes;
        let close = format!("\"{}", "#".repeat(hashes));
        let end = s[body..].find(&close)?;
        return Some((s[body..body + end].to_owned(), body + end + close.len()));
    }
    if !s.starts_with('"') {
        return None;
    }
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, i + 1)),
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '\\' | '"' | '\'' => out.push(e),
                    'x' => {
                        let hex: String = (0..2)
                            .filter_map(|_| chars.next().map(|(_, c)| c))
                            .collect();
                        out.push(u8::from_str_radix(&hex, 16).ok()? as char);
                    }
                    'u' => {
                        let mut hex = String::new();
                        for (_, c) in chars.by_ref() {
                            match c {
                                '{' => {}
                                '}' => break,
                                c => hex.push(c),
                            }
                        }
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    '\n' => {
                        while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                            chars.next();
                        }
                    }
                    _ => return None,
                }
            }
            c => out.push(c),
        }
    }
    None
}

/// Every literal right after `marker` in `text`.
fn literals_after(text: &str, marker: &str) -> Vec<String> {
    text.match_indices(marker)
        .filter_map(|(i, _)| literal(text[i + marker.len()..].trim_start()))
        .map(|(s, _)| s)
        .collect()
}

/// All literals of a line, in order.
fn line_literals(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let rest = &line[i..];
        if (rest.starts_with('"') || rest.starts_with("r\"") || rest.starts_with("r#"))
            && let Some((s, used)) = literal(rest)
        {
            out.push(s);
            i += used;
            continue;
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    out
}

fn source(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every script of the analysis tables: the rows of `tests/it/bash_analysis.rs` (cases, verdict
/// rows and the scripts listed in its tests), the `example`, `benign` and `writer` scripts of
/// the tables under `crates/reasonix-shell/src/`, and the rows of `tests/it/bash_walk.rs` and
/// `tests/it/bash_programs.rs`. Read when the test runs, so new rows join by themselves.
fn table_scripts() -> Vec<String> {
    let mut scripts = Vec::new();
    let analysis = source("tests/it/bash_analysis.rs");
    let cases = literals_after(&analysis, "case(");
    assert!(cases.len() >= 150, "only {} case rows found", cases.len());
    scripts.extend(cases);
    let mut verdicts = 0;
    let mut in_list = false;
    for line in analysis.lines() {
        let t = line.trim_start();
        if t.starts_with("(\"") {
            // A verdict row: (policy, posture, script, verdict).
            if let Some(script) = line_literals(t).into_iter().nth(2) {
                scripts.push(script);
                verdicts += 1;
            }
        }
        if t.starts_with("for script in [") {
            in_list = true;
            continue;
        }
        if in_list {
            if t.starts_with(']') {
                in_list = false;
            } else {
                scripts.extend(line_literals(t));
            }
        }
    }
    assert!(verdicts >= 60, "only {verdicts} verdict rows found");
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/reasonix-shell/src"),
        &mut files,
    );
    files.sort();
    let mut examples = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for field in ["example:", "benign:", "writer:"] {
            for s in literals_after(&text, field) {
                if !s.is_empty() {
                    scripts.push(s);
                    examples += 1;
                }
            }
        }
    }
    // The option specs keep their examples as rows of the test files below, not in `src/`.
    assert!(examples >= 80, "only {examples} table examples found");
    let mut rows = 0;
    // A row of `tests/it/bash_walk.rs` is (class, policy or "reads", script, …); one of
    // `tests/it/bash_programs.rs` is ("script", …).
    for (rel, at) in [
        ("tests/it/bash_walk.rs", 2),
        ("tests/it/bash_programs.rs", 0),
    ] {
        for line in source(rel).lines() {
            if line.trim_start().starts_with("(\"")
                && let Some(script) = line_literals(line.trim_start()).into_iter().nth(at)
            {
                scripts.push(script);
                rows += 1;
            }
        }
    }
    assert!(rows >= 200, "only {rows} walk and program rows found");
    let mut seen = BTreeSet::new();
    scripts.retain(|s| seen.insert(s.clone()));
    scripts
}

// ---------------------------------------------------------------------------------------------
// The fuzz generator's scripts.

/// The script strategy of `tests/it/fuzz_bash.rs`, over its `TOKENS` (read from that file, so
/// tokens added there are used here too).
fn fuzz_strategy() -> impl Strategy<Value = String> {
    let text = source("tests/it/fuzz_bash.rs");
    let start = text
        .find("const TOKENS: &[&str] = &[")
        .expect("TOKENS in tests/it/fuzz_bash.rs");
    let end = start + text[start..].find("];").unwrap();
    let tokens: Vec<String> = text[start..end]
        .lines()
        .skip(1)
        .flat_map(line_literals)
        .collect();
    assert!(tokens.len() >= 50, "only {} tokens found", tokens.len());
    let token = proptest::prop_oneof![
        8 => proptest::sample::select(tokens.clone()),
        1 => "\\PC{0,4}",
        1 => "[ -~]{0,6}",
    ];
    proptest::prop_oneof![
        9 => proptest::collection::vec(token, 0..24).prop_map(|t| t.join(" ")),
        1 => proptest::collection::vec(proptest::sample::select(tokens), 0..24).prop_map(|t| t.concat()),
        1 => "\\PC{0,80}",
    ]
}

/// `count` scripts of the fuzz generator, the same ones for the same seed.
fn fuzz_scripts(count: usize, seed: u64) -> Vec<String> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = fuzz_strategy();
    (0..count)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The system's own shell scripts.

/// Shell scripts found under `roots`: those `file` calls shell scripts, and the files named as
/// shell (`*.sh`, `*.bash`, bash completions) that `file` calls plain text.
struct SystemScripts {
    by_file: Vec<PathBuf>,
    by_name: Vec<PathBuf>,
    files_seen: usize,
}

fn system_scripts(roots: &[&str]) -> SystemScripts {
    let mut seen = BTreeSet::new();
    let mut candidates = Vec::new();
    let mut files_seen = 0;
    let mut stack: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            // A link is followed to a file once: each file is taken once, by (device, inode);
            // a link to a folder is never entered.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() || !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            files_seen += 1;
            let name = path.to_string_lossy();
            if name.contains('\n') || meta.len() > 4 << 20 {
                continue;
            }
            let by_name = name.ends_with(".sh")
                || name.ends_with(".bash")
                || name.contains("/bash-completion/completions/");
            let shebang = by_name || {
                let mut head = [0u8; 2];
                std::fs::File::open(&path)
                    .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                    .is_ok()
                    && &head == b"#!"
            };
            if shebang {
                candidates.push((path, by_name));
            }
        }
    }
    candidates.sort();
    let list: String = candidates
        .iter()
        .map(|(p, _)| format!("{}\n", p.display()))
        .collect();
    let mut file = Process::new("file")
        .args(["-b", "-N", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("file");
    let mut stdin = file.stdin.take().unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, list.as_bytes()));
    let out = file.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(kinds.len(), candidates.len(), "one `file` answer per file");
    let mut scripts = SystemScripts {
        by_file: Vec::new(),
        by_name: Vec::new(),
        files_seen,
    };
    for ((path, by_name), kind) in candidates.into_iter().zip(kinds) {
        if is_shell(&kind) {
            scripts.by_file.push(path);
        } else if by_name && kind.contains("text") {
            scripts.by_name.push(path);
        }
    }
    scripts
}

/// Whether `file` calls this a script for a Bourne shell (`POSIX shell script`,
/// `Bourne-Again shell script`, `a /usr/bin/env bash script`…), not csh, zsh or fish.
fn is_shell(kind: &str) -> bool {
    const SHELLS: &[&str] = &["sh", "bash", "dash", "ash", "ksh", "mksh", "posh"];
    if kind.contains("shell script") {
        return !["C shell", "zsh", "fish", "Tenex"]
            .iter()
            .any(|x| kind.contains(x));
    }
    let Some(rest) = kind.strip_prefix("a ") else {
        return false;
    };
    let Some((interp, _)) = rest.split_once(" script") else {
        return false;
    };
    interp
        .split_whitespace()
        .filter(|w| !w.starts_with('-'))
        .any(|w| SHELLS.contains(&w.rsplit('/').next().unwrap_or(w)))
}

/// What the analysis made of the system's scripts.
struct Parsed {
    /// How many scripts were read.
    read: usize,
    /// The scripts the analysis understood.
    understood: Vec<String>,
    /// The files whose analysis panicked.
    panics: Vec<String>,
}

/// Analyses each file, catching panics.
fn parse_all(paths: &[PathBuf]) -> Parsed {
    let mut parsed = Parsed {
        read: 0,
        understood: Vec::new(),
        panics: Vec::new(),
    };
    for p in paths {
        let Ok(bytes) = std::fs::read(p) else {
            continue;
        };
        parsed.read += 1;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        match std::panic::catch_unwind(|| Analysis::of(&text).analysed) {
            Ok(true) => parsed.understood.push(text),
            Ok(false) => {}
            Err(_) => parsed.panics.push(p.display().to_string()),
        }
    }
    parsed
}

/// Every `n`-th item, so that a sample spreads over the whole list.
fn spread<T: Clone>(items: &[T], n: usize) -> Vec<T> {
    if items.len() <= n {
        return items.to_vec();
    }
    (0..n).map(|i| items[i * items.len() / n].clone()).collect()
}

// ---------------------------------------------------------------------------------------------
// The oracle's own claims.

/// What the oracle logs for each script, as `kind name args...` lines (a count when above
/// one), and the workspace changes.
fn logged(scripts: &[&str]) -> Vec<(Vec<String>, Vec<String>)> {
    let requests: Vec<Request> = scripts.iter().map(|s| Request::oracle(*s)).collect();
    let outcomes = oracle::oracle().run(&requests, Duration::from_secs(5));
    scripts
        .iter()
        .zip(outcomes)
        .map(|(script, o)| {
            assert!(o.error.is_none(), "{script}: {:?}", o.error);
            let mut lines: Vec<String> = o
                .execs
                .iter()
                .map(|e| {
                    let kind = match e.kind {
                        Kind::Exec => "exec",
                        Kind::Notfound => "notfound",
                        Kind::Builtin => "builtin",
                    };
                    let mut line = format!("{kind} {}", e.name);
                    for a in &e.args {
                        line.push(' ');
                        line.push_str(a);
                    }
                    if e.count > 1 {
                        line.push_str(&format!(" (x{})", e.count));
                    }
                    line
                })
                .collect();
            lines.sort();
            (lines, o.changes)
        })
        .collect()
}

#[test]
fn the_oracle_logs_every_program_bash_starts_however_it_is_named() {
    if lacks_oracle() {
        return;
    }
    #[rustfmt::skip]
    let cases: &[(&str, &[&str])] = &[
        ("ls -la src", &["exec /usr/bin/ls -la src"]),
        ("/bin/rm -rf x", &["exec /bin/rm -rf x"]),
        ("/usr/bin/git status", &["exec /usr/bin/git status"]),
        ("cd /usr/bin && ./cat f", &["exec ./cat f"]),
        ("./no-such-file; ../x.sh", &[]),
        ("nosuchprogram a 'b c'", &["notfound nosuchprogram a b c"]),
        ("PATH=/nowhere ls", &["notfound ls"]),
        ("eval 'cat f'", &["builtin eval cat f", "exec /usr/bin/cat f"]),
        (". ./env.sh; source ./env.sh", &["builtin . ./env.sh", "builtin source ./env.sh"]),
        ("bash -c 'head -1 f | tail -1'", &["exec /usr/bin/bash -c head -1 f | tail -1", "exec /usr/bin/head -1 f", "exec /usr/bin/tail -1"]),
        ("sh <<'EOF'\nwc -l f\nEOF", &["exec /usr/bin/sh", "exec /usr/bin/wc -l f"]),
        ("bash script.sh", &["exec /usr/bin/bash script.sh"]),
        ("echo $(whoami) `id -u` <(date)", &["exec /usr/bin/date", "exec /usr/bin/id -u", "exec /usr/bin/whoami"]),
        ("sleep 5 &", &["exec /usr/bin/sleep 5"]),
        ("exec date +%s", &["exec /usr/bin/date +%s"]),
        ("command -p cat f", &["exec /bin/cat f"]),
        ("f() { uname -a; }; f; f", &["exec /usr/bin/uname -a (x2)"]),
        ("echo hi; true; test -f f; [ -f f ]; printf x; cd src; pwd; read -r v; type ls", &[]),
        ("find . -name '*.rs' -exec rm {} +", &["exec /usr/bin/find . -name *.rs -exec rm {} +"]),
    ];
    let scripts: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let mut failures = Vec::new();
    for ((script, want), (got, _)) in cases.iter().zip(logged(&scripts)) {
        let mut want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
        want.sort();
        if got != want {
            failures.push(format!(
                "{script:?}\n    logged {got:?}\n    want   {want:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_oracle_sees_every_change_to_the_workspace_and_none_elsewhere() {
    if lacks_oracle() {
        return;
    }
    let runs = logged(&[
        "echo x > new; echo y >> f; : > a; rm -f b; mkdir d",
        "cat f; ls -la; echo hi > /dev/null; cd /tmp && echo x > y",
        // Outside the workspace, the jail refuses.
        "echo x > /etc/oracle-was-here; echo x > ../escaped",
    ]);
    assert_eq!(
        runs[0].1,
        ["~ a", "~ f", "+ new"].map(String::from),
        "rm and mkdir are stubs"
    );
    assert_eq!(runs[1].1, Vec::<String>::new());
    assert_eq!(runs[2].1, Vec::<String>::new());
    assert!(!Path::new("/etc/oracle-was-here").exists());
}

#[test]
fn the_judge_flags_what_the_analysis_did_not_report_and_writes_of_read_only_scripts() {
    if lacks_oracle() {
        return;
    }
    // A hand-made outcome stands for a bash that ran more than the script says.
    let judge = oracle::Judge::new();
    let script = "cat f";
    let analysis = Analysis::of(script);
    let exec = |name: &str, args: &[&str]| oracle::Exec {
        kind: Kind::Exec,
        name: name.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        count: 1,
    };
    let honest = oracle::Outcome {
        execs: vec![exec("/usr/bin/cat", &["f"])],
        ..Default::default()
    };
    assert!(judge.judge(script, &analysis, &honest).is_empty());
    let lying = oracle::Outcome {
        execs: vec![exec("/usr/bin/cat", &["g"]), exec("/bin/rm", &["x"])],
        changes: vec!["~ f".into()],
        ..Default::default()
    };
    let kinds: Vec<String> = judge
        .judge(script, &analysis, &lying)
        .into_iter()
        .map(|m| m.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "unreported",
            "unreported",
            "wrote_read_only",
            "allowed_ran_unallowed:benign",
            "allowed_ran_unallowed:default",
        ]
        .map(String::from),
        "`cat g` alone is allowed by both policies, `rm x` by neither"
    );
    // A dynamic word stands for any number of arguments; a static one for itself.
    let a = Analysis::of("ls $DIRS src");
    assert!(oracle::reported(&a, &exec("/usr/bin/ls", &["src"])));
    assert!(oracle::reported(
        &a,
        &exec("/usr/bin/ls", &["a", "b", "src"])
    ));
    assert!(!oracle::reported(&a, &exec("/usr/bin/ls", &["a", "b"])));
    assert!(!oracle::reported(&a, &exec("/tmp/ls", &["src"])));
}

// ---------------------------------------------------------------------------------------------
// The oracle against the analysis.

#[test]
fn every_table_script_does_what_the_analysis_says() {
    if lacks_oracle() {
        return;
    }
    let scripts = table_scripts();
    let tally = oracle::check(&scripts, &known(), Duration::from_secs(2), 1);
    assert!(tally.run >= 200, "{}", tally.summary("tables"));
    assert_no_unknown("tables", &tally);
}

/// The smallest script of each analysis bug the oracle found. Run on every test run: the
/// fixed ones agree with bash or are not understood (their rows in `tests/it/bash_walk.rs` say
/// which), one still open is listed in tests/oracle/known.txt with its reason, and a fix that
/// goes wrong another way shows as an unknown mismatch.
#[rustfmt::skip]
const FINDINGS: &[&str] = &[
    "\\ #; rm -rf src",
    "\\ # > notes.md",
    "ls\n\\rm -rf src",
    "echo `echo \\`rm -rf src\\``",
    "cat '.en'\\v",
    "cat - 2>&1",
    "ls >& -x",
    "ls a$ $ b$$",
    "ls {\\Z a}b$HOME",
    "rm -r`true`f src",
    "ls x ` ` y",
    "time -o stats.txt make",
    "bash -lc 'echo hi'",
    "ls =~ x",
    "export}x",
    "1=x ls",
    "{}",
    "[a]",
    "git \\ status",
    "ls ] }",
    "rm >build/log -rf src",
    "cat > build/log .env",
    "bash -c \"echo hi\nrm -rf src\"",
    "ls \" \"",
    ">/dev/null 2>&1 x:= .env",
    ">& -i",
    "ls >& 'a[$(id)]'",
    "ls > {\\*P in x",
    "$ sed a",
    "!{ls",
    "#\\\n-exec2>&1",
    "cat <<- $P$\nhi ${X:-$(id)}",
    ">> P{\\J }",
    "ls 2>&1 | cat 0< f",
    "ls -5>out x",
    "_=x rm -rf src",
];

#[test]
fn the_analysis_bugs_found_so_far_are_known() {
    if lacks_oracle() {
        return;
    }
    let scripts: Vec<String> = FINDINGS.iter().map(|s| s.to_string()).collect();
    let tally = oracle::check(&scripts, &known(), Duration::from_secs(2), 1);
    assert_no_unknown("findings", &tally);
    let mismatched: BTreeSet<&str> = tally
        .all
        .iter()
        .filter(|m| m.fails())
        .map(|m| m.script.as_str())
        .collect();
    eprintln!(
        "findings: {} of {} scripts still mismatch",
        mismatched.len(),
        FINDINGS.len()
    );
}

#[test]
fn fuzz_scripts_do_what_the_analysis_says() {
    if lacks_oracle() {
        return;
    }
    let scripts = fuzz_scripts(env_or("ORACLE_FUZZ_SHORT", 2000), 1);
    let tally = oracle::check(&scripts, &known(), Duration::from_secs(2), 1);
    assert!(tally.run >= 100, "{}", tally.summary("fuzz"));
    assert_no_unknown("fuzz", &tally);
}

#[test]
fn system_scripts_parse_and_a_sample_does_what_the_analysis_says() {
    if lacks_oracle() {
        return;
    }
    let found = system_scripts(&["/usr/bin", "/usr/sbin", "/etc"]);
    let mut paths = found.by_file.clone();
    paths.extend(found.by_name.iter().cloned());
    let started = Instant::now();
    let parsed = parse_all(&paths);
    assert!(
        parsed.panics.is_empty(),
        "the analysis panicked on {:?}",
        parsed.panics
    );
    assert!(
        found.by_file.len() >= 20,
        "only {} shell scripts found",
        found.by_file.len()
    );
    eprintln!(
        "system: {} files seen, {} shell scripts by `file`, {} by name, {} parsed without panic, {} understood, {:.1} s",
        found.files_seen,
        found.by_file.len(),
        found.by_name.len(),
        parsed.read,
        parsed.understood.len(),
        started.elapsed().as_secs_f64()
    );
    let sample = spread(&parsed.understood, 16);
    let tally = oracle::check(&sample, &known(), Duration::from_secs(2), 1);
    assert_no_unknown("system", &tally);
}

/// The long run: every table script, many fuzz scripts, every system shell script parsed and
/// every understood one run. `cargo test --release --test it oracle::long_run --
/// --ignored --nocapture`.
#[test]
#[ignore = "the long run: minutes; its figures are in the README"]
fn long_run() {
    if lacks_oracle() {
        return;
    }
    let started = Instant::now();
    let jobs = env_or("ORACLE_JOBS", 2);
    let timeout = Duration::from_millis(env_or("ORACLE_TIMEOUT_MS", 1000) as u64);
    let known = known();
    let mut lines = Vec::new();

    let tables = oracle::check(&table_scripts(), &known, timeout, jobs);
    lines.push(tables.summary("tables"));
    tables.write_report("long-tables", &known);

    let fuzz = fuzz_scripts(
        env_or("ORACLE_FUZZ", 200_000),
        env_or("ORACLE_SEED", 1) as u64,
    );
    let fuzz = oracle::check(&fuzz, &known, timeout, jobs);
    lines.push(fuzz.summary("fuzz"));
    fuzz.write_report("long-fuzz", &known);

    let parse_started = Instant::now();
    let found = system_scripts(&["/usr/bin", "/usr/sbin", "/usr/lib", "/usr/share", "/etc"]);
    let mut paths = found.by_file.clone();
    paths.extend(found.by_name.iter().cloned());
    let parsed = parse_all(&paths);
    lines.push(format!(
        "system: {} files seen, {} shell scripts by `file`, {} more by name, {} parsed, {} understood, {} panics {:?}, {:.1} s",
        found.files_seen,
        found.by_file.len(),
        found.by_name.len(),
        parsed.read,
        parsed.understood.len(),
        parsed.panics.len(),
        parsed.panics,
        parse_started.elapsed().as_secs_f64()
    ));
    let system = oracle::check(&parsed.understood, &known, timeout, jobs);
    lines.push(system.summary("system"));
    system.write_report("long-system", &known);

    // File effects under strace: the read-only table scripts and a share of the fuzz ones.
    let effects_started = Instant::now();
    let mut effect_scripts = table_scripts();
    effect_scripts.extend(fuzz_scripts(
        env_or("ORACLE_EFFECTS", 5_000),
        env_or("ORACLE_SEED", 1) as u64 + 1,
    ));
    let mut effect_unknown = 0;
    if let Some((run, kinds, found)) = file_effects(&effect_scripts) {
        let unknown: Vec<&String> = found
            .iter()
            .filter(|m| !EFFECT_NOISE.iter().any(|(n, _)| m.contains(n)))
            .collect();
        effect_unknown = unknown.len();
        lines.push(format!(
            "effects: {} scripts offered, {run} read-only ones traced, mismatches by kind {kinds:?}, {} not known noise {:?}, {:.1} s",
            effect_scripts.len(),
            unknown.len(),
            unknown.iter().take(10).collect::<Vec<_>>(),
            effects_started.elapsed().as_secs_f64()
        ));
    }
    let used: BTreeSet<usize> = [&tables, &fuzz, &system]
        .iter()
        .flat_map(|t| t.used.iter().copied())
        .collect();
    for (i, k) in known.iter().enumerate() {
        if !used.contains(&i) {
            lines.push(format!("known entry at line {} matched nothing", k.line));
        }
    }
    lines.push(format!("total {:.0} s", started.elapsed().as_secs_f64()));
    let summary = lines.join("\n");
    std::fs::write(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("oracle-long-run.txt"),
        &summary,
    )
    .unwrap();
    eprintln!("{summary}");
    let unknown = tables.unknown.len() + fuzz.unknown.len() + system.unknown.len() + effect_unknown;
    assert!(parsed.panics.is_empty() && unknown == 0, "{summary}");
}

// ---------------------------------------------------------------------------------------------
// The real programs.

/// `(line, exit status, workspace changes, programs started)` with the real `sort`, `sed`,
/// `tar`, `git` and `make` of this machine. `~ .git/index` is git's opportunistic index
/// refresh; `GIT_OPTIONAL_LOCKS=0` turns it off.
#[rustfmt::skip]
const ABBREVIATIONS: &[(&str, i32, &[&str], &[&str])] = &[
    // sort: any unambiguous prefix of a long option.
    ("sort --outp=out names", 0, &["+ out"], &[]),
    ("sort --o=out names", 0, &["+ out"], &[]),
    ("sort --rand names", 2, &[], &[]),
    // A stub passes its input on (`gzip` compresses nothing): sort compresses its temporary
    // files, then reads them back with `gzip -d`, once its input outgrows `-S 1K`.
    ("for i in {1..20}; do echo $i; done > big; sort --compress-prog=gzip -S 1K big > /dev/null", 0, &["+ big"], &["/usr/bin/gzip", "/usr/bin/gzip -d"]),
    ("for i in {1..5}; do echo $i; done > small; sort --compress-prog=gzip -S 1K small > /dev/null", 0, &["+ small"], &[]),
    // sed: the same.
    ("sed --in-pl=.bak s/a/z/ f", 0, &["~ f", "+ f.bak"], &[]),
    ("sed --in s/a/z/ f", 0, &["~ f"], &[]),
    ("sed --expr=1d f", 0, &[], &[]),
    ("sed -n --separ 1p f f", 0, &[], &[]),
    // tar: the same; these run a shell.
    ("tar --to-comm=cat -xf a.tar", 0, &[], &["/bin/sh -c cat", "/usr/bin/cat"]),
    ("tar -cf b.tar --checkpoint=1 --checkpoint-act=exec=id names", 0, &["+ b.tar"], &["/bin/sh -c id", "/usr/bin/id"]),
    ("tar --use-compress-prog=gzip -cf c.tar names", 0, &["+ c.tar"], &["/bin/sh -c gzip", "/usr/bin/gzip"]),
    // git: its parse-options commands take prefixes; log and diff options and git's own do not.
    ("git status --porc", 0, &["~ .git/index"], &[]),
    ("GIT_OPTIONAL_LOCKS=0 git status --porc", 0, &[], &[]),
    ("git log --onel", 128, &[], &[]),
    ("git diff --ext-d", 129, &[], &[]),
    ("git log --outp=x", 128, &[], &[]),
    ("git --no-pa log --oneline", 129, &[], &[]),
    // make: the same; a simple recipe line is started without a shell.
    ("make", 0, &[], &["/usr/bin/touch made"]),
    ("make --just-pr", 0, &[], &[]),
    ("make --dry", 0, &[], &[]),
    ("make --ev='z:;@touch y' z", 0, &[], &["/usr/bin/touch y"]),
];

#[test]
fn the_real_programs_accept_these_abbreviations_and_do_this() {
    if lacks_oracle() {
        return;
    }
    if skip_unless(
        oracle::real_unavailable().is_none(),
        &oracle::real_unavailable().unwrap_or_default(),
    ) {
        return;
    }
    let lines: Vec<&str> = ABBREVIATIONS.iter().map(|r| r.0).collect();
    let runs = oracle::real(&lines);
    let mut failures = Vec::new();
    for (run, (line, exit, wrote, ran)) in runs.iter().zip(ABBREVIATIONS) {
        let want = (*exit, wrote.to_vec(), ran.to_vec());
        let mut got_ran: Vec<&str> = run.ran.iter().map(String::as_str).collect();
        got_ran.sort();
        let mut want_ran = want.2.clone();
        want_ran.sort();
        let got_wrote: Vec<&str> = run.wrote.iter().map(String::as_str).collect();
        if (run.exit, &got_wrote, &got_ran) != (want.0, &want.1, &want_ran) {
            failures.push(format!(
                "{line}\n    got  exit {} wrote {:?} ran {:?}\n    want exit {} wrote {:?} ran {:?}\n    stderr {}",
                run.exit, got_wrote, got_ran, want.0, want.1, want_ran, run.stderr.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `(line with {} for the option, the long option, the shortest prefix the real program
/// takes)`: every prefix from that one on does exactly what the whole name does (the same
/// status, writes and programs started); every shorter one is refused.
#[rustfmt::skip]
const PREFIXES: &[(&str, &str, &str)] = &[
    ("sort {} names", "--output=out", "--o"),
    ("sort {} names", "--random-sort", "--random-sor"),
    ("sed {} s/a/z/ f", "--in-place=.bak", "--i"),
    ("sed -n {} 1p f f", "--separate", "--se"),
    ("tar {} -xf a.tar", "--to-command=cat", "--to-c"),
    ("tar -cf b.tar --checkpoint=1 {} names", "--checkpoint-action=exec=id", "--checkpoint-"),
    ("git status {}", "--porcelain", "--p"),
    ("git log {} -1", "--oneline", "--oneline"),
    ("make {} z", "--eval='z:;@touch y'", "--ev"),
    ("make {}", "--just-print", "--ju"),
];

#[test]
fn the_real_programs_take_these_prefixes_of_their_long_options() {
    if lacks_oracle() {
        return;
    }
    if skip_unless(
        oracle::real_unavailable().is_none(),
        &oracle::real_unavailable().unwrap_or_default(),
    ) {
        return;
    }
    let mut failures = Vec::new();
    for (template, option, shortest) in PREFIXES {
        let runs = oracle::prefixes(template, option);
        let whole = &runs.last().unwrap().1;
        let does = |r: &oracle::RealRun| (r.exit, r.wrote.clone(), r.ran.clone());
        assert_eq!(whole.exit, 0, "{}: {}", whole.line, whole.stderr);
        let taken: Vec<&str> = runs
            .iter()
            .filter(|(_, r)| does(r) == does(whole))
            .map(|(p, _)| p.split('=').next().unwrap())
            .collect();
        let want: Vec<&str> = runs
            .iter()
            .map(|(p, _)| p.split('=').next().unwrap())
            .filter(|p| p.len() >= shortest.len())
            .collect();
        if taken != want {
            failures.push(format!(
                "{template} {option}: taken {taken:?}, want from {shortest}\n{}",
                runs.iter()
                    .map(|(p, r)| format!(
                        "    {p}: exit {} wrote {:?} ran {:?} {}\n",
                        r.exit,
                        r.wrote,
                        r.ran,
                        r.stderr.lines().next().unwrap_or("")
                    ))
                    .collect::<String>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// File effects: what the real programs touch, under `strace -f`.

/// What one script did, from `strace -f`: the files it opened for reading (in the workspace),
/// the paths it changed anywhere (opened for writing, created, removed, renamed, chmod'ed,
/// linked), the folders it changed into, and the network connections it made.
#[derive(Debug, Default)]
struct Traced {
    reads: BTreeSet<PathBuf>,
    writes: BTreeSet<PathBuf>,
    chdirs: BTreeSet<PathBuf>,
    connects: usize,
}

/// The seed of the throwaway workspace each traced script runs in.
const EFFECT_SEED: &[(&str, &str)] = &[
    ("README.md", "# readme\n"),
    (".env", "KEY=1\n"),
    ("secrets.env", "KEY=1\n"),
    ("list.txt", "b\na\n"),
    ("names.txt", "x\n"),
    ("notes.txt", "n\n"),
    ("src/a.rs", "fn main() {}\n"),
    ("x.yaml", "a: 1\n"),
    ("keys.txt", ""),
];

/// The path a syscall names: its first quoted argument, resolved against `cwd`.
fn traced_path(line: &str, cwd: &Path) -> Option<PathBuf> {
    let start = line.find('"')? + 1;
    let end = start + line[start..].find('"')?;
    let p = Path::new(&line[start..end]);
    Some(if p.is_absolute() {
        p.to_owned()
    } else {
        cwd.join(p)
    })
}

/// Lexically normalised (`a/./b/../c` is `a/c`), without reading links.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Runs `script` with the real bash and programs under `strace -f` in `ws` (HOME and TMPDIR
/// apart), bounded by `timeout 5`; `None` when strace cannot run here.
fn trace(script: &str, ws: &Path, home: &Path, tmp: &Path) -> Option<Traced> {
    let log = tmp.join("strace.log");
    let status = Process::new("timeout")
        .args(["-s", "KILL", "5", "strace", "-f", "-qq", "-o"])
        .arg(&log)
        .args([
            "-e",
            "trace=open,openat,creat,unlink,unlinkat,rename,renameat,renameat2,mkdir,mkdirat,rmdir,chmod,fchmodat,chdir,connect,symlink,symlinkat,link,linkat,truncate",
            "bash",
            "-c",
            script,
        ])
        .current_dir(ws)
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("PAGER", "cat")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = std::fs::read_to_string(&log).ok()?;
    if text.is_empty() && !status.success() {
        return None;
    }
    let mut out = Traced::default();
    let mut cwd = ws.to_owned();
    for line in text.lines() {
        // `PID name(args) = result`; failed calls return -1.
        let Some((call, result)) = line.rsplit_once(" = ") else {
            continue;
        };
        if result.starts_with('-') && !result.contains("EINPROGRESS") {
            continue;
        }
        let call = call.split_once(' ').map_or(call, |(_, c)| c).trim_start();
        let name = call.split('(').next().unwrap_or("");
        let path = traced_path(call, &cwd).map(|p| normal(&p));
        match name {
            "open" | "openat" => {
                let Some(p) = path else { continue };
                let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC"]
                    .iter()
                    .any(|f| call.contains(f));
                if writes {
                    out.writes.insert(p);
                } else if !call.contains("O_DIRECTORY") {
                    out.reads.insert(p);
                }
            }
            "chdir" => {
                if let Some(p) = path {
                    cwd = p.clone();
                    out.chdirs.insert(p);
                }
            }
            "connect" => {
                if call.contains("AF_INET") {
                    out.connects += 1;
                }
            }
            _ => {
                if let Some(p) = path {
                    out.writes.insert(p);
                }
            }
        }
    }
    Some(out)
}

/// How the analysis' account of one read-only script differs from what it did, in words
/// (empty when they agree): a write, a read in the workspace of a path no request names, a
/// change into a folder outside the workspace the analysis never resolved, a connection.
fn effect_mismatches(a: &Analysis, t: &Traced, ws: &Path, home: &Path, tmp: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let scratch = |p: &Path| p.starts_with(tmp) || p.starts_with("/dev") || p.starts_with("/proc");
    for w in &t.writes {
        if !scratch(w) {
            out.push(format!("write {}", w.display()));
        }
    }
    let requests: Vec<PathBuf> = a
        .path_requests()
        .iter()
        .map(|r| {
            let text = r.written.as_str();
            let p = if let Some(rest) = text.strip_prefix("~/") {
                home.join(rest)
            } else if Path::new(text).is_absolute() {
                PathBuf::from(text)
            } else {
                ws.join(text)
            };
            // A pattern covers the folder it is matched in.
            let p = if r.pattern {
                let cut = text.find(['*', '?', '[']).unwrap_or(text.len());
                let dir = text[..cut].rsplit_once('/').map_or("", |(d, _)| d);
                ws.join(dir)
            } else {
                p
            };
            normal(&p)
        })
        .collect();
    if a.unnamed_reads.is_empty() {
        // A folder opened is listed (`find` with no operand opens `.`): names, not contents.
        for r in t.reads.iter().filter(|r| r.starts_with(ws) && !r.is_dir()) {
            if !requests.iter().any(|q| r.starts_with(q)) {
                out.push(format!("read {} that no request names", r.display()));
            }
        }
    }
    let folders: Vec<PathBuf> = a
        .commands
        .iter()
        .filter(|c| matches!(c.trusted_name(), Some("cd" | "pushd")))
        .filter_map(|c| c.argv.get(1))
        .map(|f| normal(&ws.join(f)))
        .chain(a.run_folders.iter().map(|f| normal(&ws.join(f))))
        .chain(a.commands.iter().flat_map(|c| {
            use reasonix::shell::programs::{self, paths, spec};
            let spec = programs::spec_for(c.basename()).unwrap_or(&spec::GENERIC);
            paths::moves(c, &spec::parse(spec, &c.words[1..]))
                .into_iter()
                .map(|f| normal(&ws.join(f)))
                .collect::<Vec<_>>()
        }))
        .collect();
    for d in &t.chdirs {
        if !d.starts_with(ws) && d != Path::new("/") && !folders.contains(d) {
            out.push(format!("chdir {} the analysis never resolved", d.display()));
        }
    }
    if t.connects > 0 && !a.effects.contains(&reasonix::vocab::Effect::Network) {
        out.push(format!("{} connections, no network effect", t.connects));
    }
    out
}

/// Every script of the tables the analysis calls read-only is run for real under `strace -f`,
/// and what it touched is held to the analysis ([`effect_mismatches`]). Returns (scripts run,
/// mismatches by kind, the mismatches).
fn file_effects(scripts: &[String]) -> Option<(usize, BTreeMap<String, usize>, Vec<String>)> {
    Process::new("strace").arg("-V").output().ok()?;
    let mut run = 0;
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut found = Vec::new();
    for script in scripts {
        let a = Analysis::of(script);
        if !a.analysed || !a.read_only {
            continue;
        }
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let (ws, home, tmp) = (root.join("ws"), root.join("home"), root.join("tmp"));
        for d in [&ws, &home, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        for (rel, body) in EFFECT_SEED {
            let p = ws.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let Some(t) = trace(script, &ws, &home, &tmp) else {
            continue;
        };
        run += 1;
        for m in effect_mismatches(&a, &t, &ws, &home, &tmp) {
            let kind = m.split(' ').next().unwrap_or("").to_owned();
            *kinds.entry(kind).or_default() += 1;
            found.push(format!("{script:?}: {m}"));
        }
    }
    Some((run, kinds, found))
}

/// Reads that are the program's own, named by no argument, and harmless: each with its
/// reason. A mismatch listed here is counted, not failed.
const EFFECT_NOISE: &[(&str, &str)] = &[
    (
        "write /var/cache/man/",
        "man-db keeps formatted pages in its own cache (a jailed run cannot write there)",
    ),
    (
        "chdir /usr/share/man ",
        "man-db changes into the manual's folder to format a page",
    ),
];

/// The effect oracle itself: a script whose reads, writes, folder changes and connections the
/// analysis of another script does not account for is flagged, each kind.
#[test]
fn the_effect_oracle_flags_what_the_analysis_did_not_account_for() {
    if Process::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: strace is not available");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let (ws, home, tmp) = (root.join("ws"), root.join("home"), root.join("tmp"));
    for d in [&ws, &home, &tmp, &root.join("elsewhere")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(ws.join("notes.txt"), "n\n").unwrap();
    let elsewhere = root.join("elsewhere");
    let script = format!("cat notes.txt; touch made; cd {}", elsewhere.display());
    let t = trace(&script, &ws, &home, &tmp).expect("strace runs");
    let found = effect_mismatches(&Analysis::of("true"), &t, &ws, &home, &tmp);
    for kind in ["read ", "write ", "chdir "] {
        assert!(
            found.iter().any(|m| m.starts_with(kind)),
            "{kind}: {found:?}"
        );
    }
    // The script's own analysis accounts for the read and the folder; it is no reader, so its
    // write is not judged here.
    let own = effect_mismatches(&Analysis::of(&script), &t, &ws, &home, &tmp);
    assert!(
        !own.iter()
            .any(|m| m.starts_with("read ") || m.starts_with("chdir ")),
        "{own:?}"
    );
}

#[test]
fn read_only_table_scripts_touch_only_what_the_analysis_reported() {
    let Some((run, kinds, found)) = file_effects(&table_scripts()) else {
        eprintln!("skipped: strace is not available");
        return;
    };
    let unknown: Vec<&String> = found
        .iter()
        .filter(|m| !EFFECT_NOISE.iter().any(|(n, _)| m.contains(n)))
        .collect();
    eprintln!("file effects: {run} read-only table scripts traced, mismatches {kinds:?}");
    assert!(run >= 100, "only {run} scripts traced");
    assert!(
        unknown.is_empty(),
        "{} mismatches:\n{}",
        unknown.len(),
        unknown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
