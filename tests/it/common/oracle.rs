//! The execution oracle: what the real `bash` does with a script, asked of bash itself, and a
//! judge that holds the bash analysis to it.
//!
//! # How a script is run
//!
//! A batch of scripts runs in a private mount namespace (`unshare --mount`, or
//! `--user --map-root-user --mount` when not root) where every system program folder
//! (`/usr/bin`, `/usr/sbin`, `/usr/local/bin`, `/usr/local/sbin`, `/usr/libexec`…; `/bin` and
//! `/sbin` are links to them here) is covered by a tree of the same names, each a link to one
//! **recording stub**; each batch binds its own stub file over the one they link to, so batches
//! running side by side log apart. The test binary itself is the worker inside the namespace
//! (it re-runs itself with `--exact oracle_worker`; a binary using this module declares that
//! test, calling [`serve`]), so the jail's plan is computed once per batch. For each script
//! the worker empties a throwaway workspace, copies a seed into it, snapshots it, runs
//! `env BASH_ENV=prelude PATH=... bash -c SCRIPT` in the jail ([`danger::exec_unjudged`]:
//! Landlock, seccomp, limits, a timeout; `best_effort`, so that a user namespace without a pids
//! cgroup still runs — [`unavailable`] requires Landlock), snapshots again, and reads the log.
//!
//! - `bash`, `env` and `cat` are *copies* of the real ones, kept in the oracle's own folder, outside
//!   the covered folders; so is everything the oracle writes (the log is outside the workspace).
//! - The stub is a bash script (`#!<oracle>/bin/bash -p`: privileged mode reads no `BASH_ENV`
//!   and imports no functions). It writes one log file per start — a kind, the path it was
//!   started as (`$0`: the PATH-resolved path, or the path as typed when it had a `/`), the
//!   argument count, then each argument, all NUL-terminated — and exits 0. Programs run by
//!   absolute or relative path are caught the same way as PATH lookups; a program never runs
//!   another one, so what is logged is what the *shell* started.
//! - A stub named `bash`, `sh` or `dash` given a command string (`-c`) or a script on stdin
//!   goes on to run it with the oracle's bash (as `sh` in POSIX mode), so `bash -c '...'` and
//!   `sh <<EOF` are checked inside too. Given a script file, it only logs.
//! - The prelude (`BASH_ENV`) defines `command_not_found_handle` (logs names not found in
//!   `PATH`, as kind `notfound`) and functions `eval`, `source` and `.` that log (kind
//!   `builtin`) and then call the builtin, and waits for background jobs on exit so that their
//!   logs are written. `builtin eval`, `command eval` and POSIX mode bypass those functions;
//!   what the eval'd code starts is still logged by the stubs.
//!
//! With `real` requests the copies of the real `sort`, `sed`, `tar`, `git` and `make` come first
//! in `PATH` ([`RealRun`]): the line runs the real program in the jail, every other program is
//! still a stub, so what the real program *started* (a shell, `gzip`, a recipe) is logged. In
//! such a batch a stub copies its stdin to its stdout before it exits, as a filter does: a
//! real program writing into a stub through a pipe then never races the stub's exit.
//!
//! # What is judged ([`Judge`])
//!
//! 1. Only for scripts the analysis understood: every program logged is one the analysis
//!    reported ([`reported`]), unless the script holds a hazard that says code is hidden from
//!    the analysis ([`HIDES_CODE`]: `eval`, `source`, `trap`, aliases…) — such programs are
//!    *excused* and counted, never failed.
//! 2. Only for scripts the analysis understood and called read-only: the workspace snapshot
//!    (paths, types, modes, content hashes, link targets) did not change.
//! 3. For every script a test policy allows (a benign allow-list, and the embedded default):
//!    every program logged, judged alone as a bash call of exactly its argv, is allowed too.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reasonix::sandbox::jail::{self, Capture, Enforcement, Exit, JailConfig, JailPlan, danger};
use reasonix::shell::{Analysis, Command, Word};
use reasonix::{Gate, HostFiles, PolicySet, Posture, Registry, Verdict};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The test a binary using this module declares: `#[test] fn oracle_worker() { serve() }`.
pub const WORKER_TEST: &str = "oracle::oracle_worker";

/// The folders of system programs covered by stubs, when they are real folders (here `/bin`
/// and `/sbin` are links to `/usr`). Programs elsewhere (`/usr/lib/*/helper`, `/opt`) run for
/// real when a script names their path; their own children are then logged as if the shell
/// had started them.
const COVERED: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
    "/usr/libexec",
    "/usr/local/libexec",
    "/usr/games",
    "/usr/local/games",
];

/// The `PATH` scripts run with.
pub const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The programs the real-program harness runs for real.
pub const REAL: &[&str] = &["sort", "sed", "tar", "git", "make"];

/// Hazards that say code runs which the analysis cannot see: a program logged under one of
/// them and reported nowhere is excused, not a mismatch.
pub const HIDES_CODE: &[&str] = &[
    "eval",
    "source",
    "alias",
    "inline_code",
    "loads_code",
    "command_path",
    "environment",
    "dynamic_script",
    "stdin_script",
    "dynamic_code",
];

/// The workspace every oracle script starts from.
const SEED: &[(&str, &str)] = &[
    ("README.md", "# demo\n"),
    ("notes.md", "never run rm -rf here\n"),
    ("f", "a\nb\n"),
    ("x", "x\n"),
    ("a", "a\n"),
    ("b", "b\n"),
    ("in", "in\n"),
    ("in.txt", "in\n"),
    ("f.txt", "f\n"),
    ("names", "b\na\nc\n"),
    ("names.txt", "b\na\nc\n"),
    ("package.json", "{\"name\": \"demo\"}\n"),
    ("env.sh", "FOO=1\n"),
    ("script.sh", "echo from a script file\n"),
    ("src/a.rs", "fn a() {}\n"),
    ("src/b.rs", "fn b() {}\n"),
    ("src/main.rs", "fn main() {}\n"),
    ("secrets/key", "k\n"),
    ("build/.keep", ""),
    (".env", "KEY=1\n"),
    ("server.pem", "-----BEGIN KEY-----\n"),
];

/// What the real programs start from (besides a git repository holding `names`, and `a.tar`).
const REAL_SEED: &[(&str, &str)] = &[
    ("names", "b\na\nc\n"),
    ("f", "a\nb\n"),
    ("Makefile", "all:\n\ttouch made\n"),
];

/// The benign allow-list the third assertion judges under.
pub const BENIGN: &str = r#"
version: 1
defaults: {read_only: ask, writer: ask, unattended: deny}
rules:
  - id: benign
    decision: allow
    tools: [bash]
    commands: ["git status", "git diff *", "ls *", "cat *", "grep *", "echo *", "wc *", "sort *", "head *", "tail *"]
"#;

// ---------------------------------------------------------------------------------------------
// What a run logged.

/// How a logged start came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A program file was executed (a stub logged it).
    Exec,
    /// A name bash looked up in `PATH` and did not find.
    Notfound,
    /// `eval`, `source` or `.`.
    Builtin,
}

/// One start, as logged.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Exec {
    pub kind: Kind,
    /// The path it was started as (`Exec`), or the name (`Notfound`, `Builtin`).
    pub name: String,
    pub args: Vec<String>,
    /// How many times it was logged with exactly these words.
    pub count: usize,
}

impl Exec {
    /// The name as the script most likely wrote it: the bare name for a program found in a
    /// `PATH` folder, the path as typed otherwise.
    pub fn invoked(&self) -> &str {
        if self.kind == Kind::Exec
            && let Some((dir, base)) = self.name.rsplit_once('/')
            && PATH.split(':').any(|d| d == dir)
        {
            return base;
        }
        &self.name
    }

    /// The name without its folder.
    pub fn basename(&self) -> &str {
        self.name.rsplit('/').next().unwrap_or(&self.name)
    }

    /// `[invoked name, args...]`.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.invoked().to_owned())
            .chain(self.args.iter().cloned())
            .collect()
    }
}

/// What one script did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Outcome {
    /// The exit status bash would report (124 on timeout).
    pub exit: i32,
    pub timed_out: bool,
    /// Every start logged, grouped.
    pub execs: Vec<Exec>,
    /// Changes to the workspace: `+ path`, `- path`, `~ path`.
    pub changes: Vec<String>,
    /// Standard error, bounded.
    pub stderr: String,
    /// Set when the worker could not run the script at all.
    pub error: Option<String>,
    pub millis: u64,
}

/// One script for the worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    pub script: String,
    /// Run the real [`REAL`] programs (and start from their seed).
    pub real: bool,
}

impl Request {
    pub fn oracle(script: impl Into<String>) -> Request {
        Request {
            script: script.into(),
            real: false,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct BatchConfig {
    timeout_ms: u64,
    requests: Vec<Request>,
}

// ---------------------------------------------------------------------------------------------
// The oracle's folder.

/// The oracle's folder (removed when the value is dropped).
pub struct Oracle {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// Real folder → the stub folder that covers it, the one holding `mount` last.
    mounts: Vec<(PathBuf, PathBuf)>,
    /// Whether this user namespace setup needs `--user --map-root-user`.
    as_user: bool,
    batches: AtomicUsize,
}

/// Why the oracle cannot run on this machine, if it cannot.
pub fn unavailable() -> Option<String> {
    let caps = jail::capabilities();
    if !caps.landlock_fs {
        return Some("Landlock filesystem rules (the oracle runs arbitrary scripts)".into());
    }
    for tool in ["unshare", "mount", "file"] {
        if which(tool).is_none() {
            return Some(format!("the `{tool}` program"));
        }
    }
    if ["bash", "env", "cat"].iter().any(|t| which(t).is_none()) {
        return Some("bash, env and cat".into());
    }
    let probe = |user: bool| {
        let mut c = Process::new("unshare");
        if user {
            c.args(["--user", "--map-root-user"]);
        }
        c.args(["--mount", "--propagation", "private", "--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !probe(false) && !probe(true) {
        return Some("a private mount namespace (`unshare --mount`)".into());
    }
    None
}

/// Whether the five real programs are installed.
pub fn real_unavailable() -> Option<String> {
    let missing: Vec<&str> = REAL
        .iter()
        .copied()
        .filter(|p| which(p).is_none())
        .collect();
    (!missing.is_empty()).then(|| format!("the real {}", missing.join(", ")))
}

/// A new oracle (its folder goes when it is dropped). Panics when it cannot be set up
/// ([`unavailable`] says why beforehand).
pub fn oracle() -> Oracle {
    Oracle::new(false).unwrap_or_else(|e| panic!("cannot set up the oracle: {e}"))
}

/// The first file named `name` in the current `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_else(|_| PATH.into());
    path.split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> String {
    move |e| format!("{what}: {e}")
}

impl Oracle {
    /// Makes the oracle's folder: copies of bash, env and cat, the stub trees, the seed; with
    /// `real_programs`, copies of [`REAL`] and their seed too.
    pub fn new(real_programs: bool) -> Result<Oracle, String> {
        let dir = tempfile::Builder::new()
            .prefix("oracle-")
            .tempdir()
            .map_err(io("temporary folder"))?;
        let root = dir.path().canonicalize().map_err(io("temporary folder"))?;
        let bin = root.join("bin");
        for d in [
            "bin",
            "home",
            "real",
            "stubs",
            "batches",
            "seed/oracle",
            "seed/real",
        ] {
            std::fs::create_dir_all(root.join(d)).map_err(io(d))?;
        }
        // `cat` passes a stub's input on in batches of real programs (`stub_script`).
        for tool in ["bash", "env", "cat"] {
            let from = which(tool).ok_or(format!("no {tool}"))?;
            std::fs::copy(&from, bin.join(tool)).map_err(io(tool))?;
        }
        // The stub every covered name links to; each batch binds its own over it.
        write_exec(&bin.join("stub"), "#!/bin/false\n")?;

        let mut mounts = Vec::new();
        for folder in COVERED {
            if !std::fs::symlink_metadata(folder).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            let cover = root
                .join("stubs")
                .join(folder.trim_start_matches('/').replace('/', "_"));
            mirror(Path::new(folder), &cover, &bin.join("stub"))?;
            mounts.push((PathBuf::from(folder), cover));
        }
        // `mount` must still be the real one while the others are mounted.
        let holds_mount = |(real, _): &(PathBuf, PathBuf)| real.join("mount").exists();
        mounts.sort_by_key(holds_mount);

        for (name, body) in SEED {
            write_file(&root.join("seed/oracle").join(name), body)?;
        }
        if real_programs {
            if let Some(why) = real_unavailable() {
                return Err(why);
            }
            let real_seed = root.join("seed/real");
            for (name, body) in REAL_SEED {
                write_file(&real_seed.join(name), body)?;
            }
            for p in REAL {
                let from = which(p).ok_or(format!("no {p}"))?;
                std::fs::copy(&from, root.join("real").join(p)).map_err(io(p))?;
            }
            let sh = |line: &str| {
                Process::new("sh")
                    .args(["-c", line])
                    .current_dir(&real_seed)
                    .env("HOME", root.join("home"))
                    .stdout(Stdio::null())
                    .status()
                    .map_err(io(line))
                    .and_then(|s| {
                        s.success()
                            .then_some(())
                            .ok_or_else(|| format!("{line}: {s}"))
                    })
            };
            sh("tar -cf a.tar names")?;
            sh(
                "git init -q && git add names && git -c user.name=oracle -c user.email=o@o commit -qm seed",
            )?;
        }
        let as_user = !nix::unistd::geteuid().is_root();
        Ok(Oracle {
            _dir: dir,
            root,
            mounts,
            as_user,
            batches: AtomicUsize::new(0),
        })
    }

    /// Runs each request in the jail, one worker, and returns what each did, in order.
    pub fn run(&self, requests: &[Request], timeout: Duration) -> Vec<Outcome> {
        if requests.is_empty() {
            return Vec::new();
        }
        let n = self.batches.fetch_add(1, Ordering::SeqCst);
        let batch = self.root.join("batches").join(n.to_string());
        for d in ["ws", "log"] {
            std::fs::create_dir_all(batch.join(d)).unwrap();
        }
        let log = batch.join("log");
        // A batch of real programs gets stubs that pass their input on (`stub_script`).
        let filter = requests.iter().any(|r| r.real);
        write_exec(&batch.join("stub"), &stub_script(&self.root, &log, filter)).unwrap();
        std::fs::write(batch.join("prelude.sh"), prelude(&log)).unwrap();
        let config = BatchConfig {
            timeout_ms: timeout.as_millis() as u64,
            requests: requests.to_vec(),
        };
        std::fs::write(
            batch.join("requests.json"),
            serde_json::to_vec(&config).unwrap(),
        )
        .unwrap();

        // This batch's stub first: once its folder is covered, `mount` is a stub too.
        let mut setup = String::from("set -e\n");
        writeln!(
            setup,
            "mount --bind {} {}",
            quote(&batch.join("stub")),
            quote(&self.root.join("bin/stub"))
        )
        .unwrap();
        for (real, cover) in &self.mounts {
            writeln!(setup, "mount --bind {} {}", quote(cover), quote(real)).unwrap();
        }
        setup.push_str("exec \"$0\" --exact \"$1\" --nocapture --test-threads=1 -q\n");

        let exe = std::env::current_exe().unwrap();
        let mut command = Process::new("unshare");
        if self.as_user {
            command.args(["--user", "--map-root-user"]);
        }
        command
            .args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c"])
            .arg(&setup)
            .arg(&exe)
            .arg(WORKER_TEST)
            .env("ORACLE_ROOT", &self.root)
            .env("ORACLE_BATCH", &batch)
            .env("HOME", self.root.join("home"))
            .env("LANG", "C.UTF-8")
            .env("PATH", PATH)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("unshare");
        // Each script has its timeout; the worker as a whole gets their sum and a margin.
        let deadline =
            Instant::now() + timeout * (requests.len() as u32 + 1) + Duration::from_secs(60);
        let (out, err) = drain(&mut child);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                break child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (out, err) = (out.join().unwrap(), err.join().unwrap());
        let results = std::fs::read_to_string(batch.join("results.jsonl")).unwrap_or_default();
        let outcomes: Vec<Outcome> = results
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(
            outcomes.len() == requests.len(),
            "the oracle worker answered {} of {} requests ({status})\nstdout: {out}\nstderr: {err}",
            outcomes.len(),
            requests.len()
        );
        let _ = std::fs::remove_dir_all(&batch);
        outcomes
    }

    /// Runs each request, spread over `jobs` workers.
    pub fn run_parallel(
        &self,
        requests: &[Request],
        timeout: Duration,
        jobs: usize,
    ) -> Vec<Outcome> {
        let jobs = jobs.max(1);
        let chunk = requests.len().div_ceil(jobs).max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = requests
                .chunks(chunk)
                .map(|c| s.spawn(move || self.run(c, timeout)))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        })
    }
}

/// Makes `cover` a copy of the tree `real` where every file is a link to the stub (a link to
/// a folder stays the same link; a folder is mirrored in turn).
fn mirror(real: &Path, cover: &Path, stub: &Path) -> Result<(), String> {
    std::fs::create_dir_all(cover).map_err(io(cover.display()))?;
    for entry in std::fs::read_dir(real)
        .map_err(io(real.display()))?
        .flatten()
    {
        let (from, to) = (entry.path(), cover.join(entry.file_name()));
        let kind = entry.file_type().map_err(io(from.display()))?;
        if kind.is_dir() {
            mirror(&from, &to, stub)?;
        } else if kind.is_symlink() && from.is_dir() {
            let target = std::fs::read_link(&from).map_err(io(from.display()))?;
            symlink(target, &to).map_err(io(to.display()))?;
        } else {
            symlink(stub, &to).map_err(io(to.display()))?;
        }
    }
    Ok(())
}

/// Reads a child's stdout and stderr on threads of their own.
fn drain(
    child: &mut std::process::Child,
) -> (
    std::thread::JoinHandle<String>,
    std::thread::JoinHandle<String>,
) {
    use std::io::Read;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    (
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        }),
    )
}

fn write_file(path: &Path, body: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent.display()))?;
    }
    std::fs::write(path, body).map_err(io(path.display()))
}

fn write_exec(path: &Path, body: &str) -> Result<(), String> {
    write_file(path, body)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(io(path.display()))
}

/// Single-quotes a path for the setup script.
fn quote(p: &Path) -> String {
    shell_quote(&p.display().to_string())
}

/// The stub, with its log folder baked in (the script cannot lose it from its environment).
///
/// With `filter`, a stub copies its stdin to its stdout before it exits, as the filter it
/// stands for would (for `gzip`, `gzip -d`, `sh -c gzip`, a `--to-command`: a compression that
/// changes nothing). A real program that feeds a helper through a pipe otherwise races the
/// stub's exit: `tar --use-compress-program=gzip` lost now and then, with a broken pipe (`tar:
/// c.tar: Cannot write: Broken pipe`, exit 2), and `sort --compress-program` depended on
/// losing it. Only batches of real programs filter: a script's own pipelines end when their
/// stubs exit (`while :; do echo; done | head` would otherwise run to the timeout).
fn stub_script(root: &Path, log: &Path, filter: bool) -> String {
    let bash = root.join("bin/bash");
    let exit = if filter {
        format!(
            "\"{}\" 2>/dev/null; builtin exit 0",
            root.join("bin/cat").display()
        )
    } else {
        "builtin exit 0".to_owned()
    };
    format!(
        r#"#!{bash} -p
# A recording stub: logs how it was started, then exits 0. A shell given a command string or
# a script on stdin goes on to run it with the oracle's bash.
builtin set -C
n=0
until {{ builtin printf '%s\0' exec "$0" "$#" "$@" > "{log}/x.$$.$n"; }} 2>/dev/null; do
  (( ++n < 64 )) || break
done
case ${{0##*/}} in
  bash|sh|dash|rbash) ;;
  *) {exit} ;;
esac
pass=1
for (( i = 1; i <= $#; i++ )); do
  a=${{!i}}
  case $a in
    --) (( i < $# )) && pass=0; break ;;
    -o|+o|-O|+O|--rcfile|--init-file) (( i++ )) ;;
    --*) ;;
    -*c*) pass=1; break ;;
    -*|+*) ;;
    *) pass=0; break ;;
  esac
done
(( pass )) || {{ {exit}; }}
builtin exec -a "${{0##*/}}" {bash} "$@"
"#,
        bash = bash.display(),
        log = log.display()
    )
}

/// The prelude every oracle bash reads (`BASH_ENV`).
fn prelude(log: &Path) -> String {
    format!(
        r#"# The oracle's prelude: logs the builtins that run code and the names not found.
__oracle_rec() (
  builtin set -C
  n=0
  until {{ builtin printf '%s\0' "$1" "$2" "$(( $# - 2 ))" "${{@:3}}" > "{log}/b.$BASHPID.$n"; }} 2>/dev/null; do
    (( ++n < 64 )) || break
  done
)
eval() {{ __oracle_rec builtin eval "$@"; builtin eval "$@"; }}
source() {{ __oracle_rec builtin source "$@"; builtin source "$@"; }}
.() {{ __oracle_rec builtin . "$@"; builtin . "$@"; }}
command_not_found_handle() {{ __oracle_rec notfound "$@"; builtin return 127; }}
builtin trap 'builtin wait' EXIT
"#,
        log = log.display()
    )
}

// ---------------------------------------------------------------------------------------------
// The worker, inside the namespace.

/// The worker's entry: does nothing unless this process was started as an oracle worker.
pub fn serve() {
    let (Some(root), Some(batch)) = (
        std::env::var_os("ORACLE_ROOT"),
        std::env::var_os("ORACLE_BATCH"),
    ) else {
        return;
    };
    let (root, batch) = (PathBuf::from(root), PathBuf::from(batch));
    let config: BatchConfig =
        serde_json::from_slice(&std::fs::read(batch.join("requests.json")).unwrap()).unwrap();
    let ws = batch.join("ws");
    let log = batch.join("log");
    let jail_config = JailConfig {
        mode: Enforcement::BestEffort,
        read_roots: vec![root.display().to_string()],
        write_roots: vec![log.display().to_string()],
        ..JailConfig::default()
    };
    let plan = JailPlan::new(&jail_config, &ws, Some(&root.join("home")));
    let mut results = std::fs::File::create(batch.join("results.jsonl")).unwrap();
    // The workspace as last seeded, per seed: a script that left it as it was needs no reset.
    let mut clean: Option<(bool, BTreeMap<String, String>)> = None;
    for request in &config.requests {
        let outcome = run_one(&root, &batch, &plan, request, config.timeout_ms, &mut clean);
        let mut line = serde_json::to_string(&outcome).unwrap();
        line.push('\n');
        std::io::Write::write_all(&mut results, line.as_bytes()).unwrap();
    }
}

fn run_one(
    root: &Path,
    batch: &Path,
    plan: &JailPlan,
    request: &Request,
    timeout_ms: u64,
    clean: &mut Option<(bool, BTreeMap<String, String>)>,
) -> Outcome {
    let ws = batch.join("ws");
    let log = batch.join("log");
    let seed = root.join(if request.real {
        "seed/real"
    } else {
        "seed/oracle"
    });
    // The plan's Landlock rules hold the workspace and log folders open: empty them, keep them.
    let before = match clean.take() {
        Some((real, snap)) if real == request.real && snapshot(&ws) == snap => Ok(snap),
        _ => empty(&ws)
            .and_then(|()| copy_tree(&seed, &ws))
            .map(|()| snapshot(&ws)),
    }
    .and_then(|snap| empty(&log).map(|()| snap));
    let before = match before {
        Ok(snap) => snap,
        Err(e) => {
            return Outcome {
                error: Some(format!("resetting the workspace: {e}")),
                ..Outcome::default()
            };
        }
    };
    let path = if request.real {
        format!("{}:{PATH}", root.join("real").display())
    } else {
        PATH.to_owned()
    };
    let argv: Vec<String> = vec![
        root.join("bin/env").display().to_string(),
        format!("BASH_ENV={}", batch.join("prelude.sh").display()),
        format!("PATH={path}"),
        format!("HOME={}", root.join("home").display()),
        "LANG=C.UTF-8".into(),
        root.join("bin/bash").display().to_string(),
        "-c".into(),
        request.script.clone(),
    ];
    let started = Instant::now();
    let result = danger::exec_unjudged(
        plan,
        &argv,
        Some(Duration::from_millis(timeout_ms)),
        Capture::Bounded(2048),
    );
    let millis = started.elapsed().as_millis() as u64;
    let after = snapshot(&ws);
    let mut outcome = Outcome {
        execs: read_log(&log),
        changes: diff(&before, &after),
        millis,
        ..Outcome::default()
    };
    if after == before {
        *clean = Some((request.real, before));
    }
    match result {
        Ok(r) => {
            outcome.exit = r.exit.code();
            outcome.timed_out = r.exit == Exit::TimedOut;
            outcome.stderr = r.stderr;
        }
        Err(e) => outcome.error = Some(e.to_string()),
    }
    outcome
}

/// Removes everything inside `dir`.
fn empty(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            // A script may have left a folder it cannot be entered: let root back in first.
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir_all(&dst)?;
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            symlink(std::fs::read_link(&src)?, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Every log record, grouped by identical words.
fn read_log(log: &Path) -> Vec<Exec> {
    let mut grouped: BTreeMap<(Kind, String, Vec<String>), usize> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(log) else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        let mut fields = bytes
            .split(|b| *b == 0)
            .map(|f| String::from_utf8_lossy(f).into_owned());
        let kind = match fields.next().as_deref() {
            Some("exec") => Kind::Exec,
            Some("notfound") => Kind::Notfound,
            Some("builtin") => Kind::Builtin,
            _ => continue,
        };
        let (Some(name), Some(count)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(count) = count.parse::<usize>() else {
            continue;
        };
        let args: Vec<String> = fields.take(count).collect();
        if args.len() != count {
            continue; // cut short by the timeout
        }
        *grouped.entry((kind, name, args)).or_default() += 1;
    }
    grouped
        .into_iter()
        .map(|((kind, name, args), count)| Exec {
            kind,
            name,
            args,
            count,
        })
        .collect()
}

/// Path → type, mode and content (a hash for a file, the target of a link).
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let mode = meta.mode() & 0o7777;
            let what = if meta.is_dir() {
                walk(root, &path, out);
                format!("dir {mode:o}")
            } else if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_default();
                format!("link {}", target.display())
            } else if meta.is_file() {
                let hash = std::fs::read(&path)
                    .map(|b| hex(&Sha256::digest(&b)))
                    .unwrap_or_else(|e| format!("unreadable ({e})"));
                format!("file {mode:o} {hash}")
            } else {
                format!("other {:o}", meta.mode())
            };
            out.insert(rel, what);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// `+ path`, `- path`, `~ path` for each difference.
pub fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, what) in after {
        match before.get(path) {
            None => out.push(format!("+ {path}")),
            Some(old) if old != what => out.push(format!("~ {path}")),
            _ => {}
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            out.push(format!("- {path}"));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The real programs.

/// What a command line did with the real [`REAL`] programs, in the jail, in a throwaway
/// workspace holding `names`, `f`, a `Makefile` (`all:` runs `touch made`), `a.tar` (holding
/// `names`) and a git repository with `names` committed.
#[derive(Clone, Debug)]
pub struct RealRun {
    pub line: String,
    /// The exit status (124 on timeout).
    pub exit: i32,
    /// Workspace changes: `+ out`, `~ f`, `~ .git/index`.
    pub wrote: Vec<String>,
    /// What the real program started, as `path args...` (the stubs logged it; the path as
    /// the program gave it, or as `PATH` found it).
    pub ran: Vec<String>,
    pub stderr: String,
}

/// Runs each line with the real programs; every other program is a recording stub.
pub fn real(lines: &[&str]) -> Vec<RealRun> {
    let requests: Vec<Request> = lines
        .iter()
        .map(|l| Request {
            script: (*l).to_owned(),
            real: true,
        })
        .collect();
    Oracle::new(true)
        .unwrap_or_else(|e| panic!("cannot set up the oracle: {e}"))
        .run(&requests, Duration::from_secs(10))
        .into_iter()
        .zip(lines)
        .map(|(o, line)| RealRun {
            line: (*line).to_owned(),
            exit: o.exit,
            wrote: o.changes,
            ran: o
                .execs
                .iter()
                .map(|e| {
                    std::iter::once(e.name.as_str())
                        .chain(e.args.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect(),
            stderr: o.error.unwrap_or(o.stderr),
        })
        .collect()
}

/// Runs `template` with `{}` replaced by each prefix of the long option `option` (its name
/// from `--` and one letter up to the whole name, any `=value` kept), with the real programs.
/// Returns each prefix tried, with what that line did.
pub fn prefixes(template: &str, option: &str) -> Vec<(String, RealRun)> {
    let (name, value) = match option.split_once('=') {
        Some((n, v)) => (n, format!("={v}")),
        None => (option, String::new()),
    };
    let tried: Vec<String> = (3..=name.len())
        .filter(|&n| name.is_char_boundary(n))
        .map(|n| format!("{}{value}", &name[..n]))
        .collect();
    let lines: Vec<String> = tried.iter().map(|p| template.replace("{}", p)).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    tried.into_iter().zip(real(&refs)).collect()
}

// ---------------------------------------------------------------------------------------------
// Judging.

/// Quotes one word for bash, so that it is read back as exactly itself.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:,+@%^".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Whether the analysis reported a command that `exec` is: the same basename (a name with a
/// `/` must be the very path bash ran, unless it is a system folder bash found the name in),
/// and its words after the name matching the logged arguments in order — a static word matches
/// exactly one equal argument; a word that is not static (a variable, a substitution, a glob, a
/// brace, a tilde, `{}` of find, xargs' input) matches any run of arguments, none included,
/// since it may expand to any number of fields.
pub fn reported(analysis: &Analysis, exec: &Exec) -> bool {
    analysis
        .commands
        .iter()
        .any(|c| name_matches(c, exec) && words_match(&words(c)[1..], &exec.args))
}

fn name_matches(c: &Command, exec: &Exec) -> bool {
    let name = c.name();
    match exec.kind {
        Kind::Builtin | Kind::Notfound => name == exec.name,
        // A name with a `/` is the very file bash ran; a bare name is one bash looked up in
        // `PATH` (not one a `hash -p` or a changed `PATH` sent elsewhere).
        Kind::Exec if name.contains('/') => name == exec.name,
        Kind::Exec => name == exec.basename() && exec.invoked() == exec.basename(),
    }
}

/// The command's words, or its argv when the analysis gave none.
fn words(c: &Command) -> Vec<Word> {
    if c.words.len() == c.argv.len() && !c.words.is_empty() {
        return c.words.clone();
    }
    c.argv
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let dynamic = c.dynamic.iter().find(|d| d.word == i);
            match dynamic.and_then(|d| d.kinds.first()) {
                Some(kind) => Word::with(w.clone(), *kind),
                None => Word::fixed(w.clone()),
            }
        })
        .collect()
}

fn words_match(words: &[Word], args: &[String]) -> bool {
    // reach[j]: the first `i` words can match the first `j` arguments.
    let mut reach = vec![false; args.len() + 1];
    reach[0] = true;
    for w in words {
        let mut next = vec![false; args.len() + 1];
        if w.is_static() {
            for j in 0..args.len() {
                next[j + 1] = reach[j] && args[j] == w.text;
            }
        } else {
            let mut any = false;
            for j in 0..=args.len() {
                any |= reach[j];
                next[j] = any;
            }
        }
        reach = next;
    }
    reach[args.len()]
}

/// One thing bash did that the analysis or the gate did not foresee.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// `unreported`, `wrote_read_only`, `allowed_ran_unallowed:<policy>`, or `excused` (an
    /// unreported program under a hazard that hides code: counted, never failed).
    pub kind: String,
    pub script: String,
    /// What bash ran (for a change: empty).
    pub program: Vec<String>,
    pub detail: String,
}

impl Mismatch {
    pub fn fails(&self) -> bool {
        self.kind != "excused"
    }

    /// For the report: the kind, what bash ran, what was expected, the script.
    pub fn render(&self) -> String {
        format!(
            "{}: bash ran {}\n    {}\n    script: {}\n",
            self.kind,
            serde_json::to_string(&self.program).unwrap(),
            self.detail,
            serde_json::to_string(&self.script).unwrap()
        )
    }
}

/// The judge: the analysis and the gate against what bash did.
pub struct Judge {
    _dir: tempfile::TempDir,
    gates: Vec<(&'static str, Gate)>,
}

impl Judge {
    /// Gates over a workspace seeded like the oracle's, under [`BENIGN`] and the embedded
    /// default, both interactive.
    pub fn new() -> Judge {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        for (name, body) in SEED {
            write_file(&ws.join(name), body).unwrap();
        }
        let benign = PolicySet::from_yaml("benign.yaml", BENIGN).unwrap();
        let default = PolicySet::embedded_default();
        let gate = |policy: &PolicySet| {
            Gate::builder(Registry::with_builtins(), policy, &ws)
                .posture(Posture::Interactive)
                .host_files(HostFiles::for_workspace(&ws))
                .build()
                .unwrap()
        };
        Judge {
            gates: vec![("benign", gate(&benign)), ("default", gate(&default))],
            _dir: dir,
        }
    }

    fn verdict(gate: &Gate, script: &str) -> Verdict {
        let call = serde_json::json!({"name": "bash", "arguments": {"command": script}});
        gate.admit_text(&call.to_string()).into_admission().verdict
    }

    /// Everything bash did with `script` that the analysis or the gate did not foresee.
    pub fn judge(&self, script: &str, analysis: &Analysis, outcome: &Outcome) -> Vec<Mismatch> {
        let mut out = Vec::new();
        let said = || {
            let cmds: Vec<&Vec<String>> = analysis.commands.iter().map(|c| &c.argv).collect();
            serde_json::to_string(&cmds).unwrap()
        };
        if analysis.analysed {
            let hides: Vec<&str> = analysis
                .hazards
                .iter()
                .map(|h| h.id)
                .filter(|id| HIDES_CODE.contains(id))
                .collect();
            for exec in &outcome.execs {
                if reported(analysis, exec) {
                    continue;
                }
                let (kind, detail) = if hides.is_empty() {
                    ("unreported", format!("the analysis reported {}", said()))
                } else {
                    ("excused", format!("hidden by the hazards {hides:?}"))
                };
                out.push(Mismatch {
                    kind: kind.into(),
                    script: script.into(),
                    program: exec.argv(),
                    detail,
                });
            }
            if analysis.read_only && !outcome.changes.is_empty() {
                out.push(Mismatch {
                    kind: "wrote_read_only".into(),
                    script: script.into(),
                    program: Vec::new(),
                    detail: format!(
                        "the analysis called it read-only; the workspace changed: {:?}",
                        outcome.changes
                    ),
                });
            }
        }
        for (name, gate) in &self.gates {
            if Self::verdict(gate, script) != Verdict::Allow {
                continue;
            }
            for exec in &outcome.execs {
                let alone: Vec<String> = exec.argv().iter().map(|w| shell_quote(w)).collect();
                let alone = alone.join(" ");
                let v = Self::verdict(gate, &alone);
                if v != Verdict::Allow {
                    out.push(Mismatch {
                        kind: format!("allowed_ran_unallowed:{name}"),
                        script: script.into(),
                        program: exec.argv(),
                        detail: format!("the script is allowed; `{alone}` alone is {v}"),
                    });
                }
            }
        }
        out
    }
}

impl Default for Judge {
    fn default() -> Judge {
        Judge::new()
    }
}

// ---------------------------------------------------------------------------------------------
// Known mismatches.

/// One entry of the known list: a kind, a regular expression the script matches (the class
/// of scripts a bug shows in: fuzz scripts change with the generator's tokens), and the argv
/// bash ran (or any, for `*`), with the reason above it.
pub struct Known {
    pub kind: String,
    pub pattern: String,
    matcher: grep_regex::RegexMatcher,
    pub program: Option<Vec<String>>,
    pub reason: String,
    pub line: usize,
}

/// Parses the known list: `# reason` lines, then `kind<TAB>"regex"<TAB>["argv"]` or `*`.
pub fn known(text: &str) -> Vec<Known> {
    let mut out = Vec::new();
    let mut reason = String::new();
    for (n, line) in text.lines().enumerate() {
        let at = |what: &dyn std::fmt::Display| format!("known list line {}: {what}", n + 1);
        if let Some(r) = line.strip_prefix('#') {
            if !reason.is_empty() {
                reason.push(' ');
            }
            reason.push_str(r.trim());
            continue;
        }
        if line.trim().is_empty() {
            reason.clear();
            continue;
        }
        let parts: Vec<&str> = line.split('\t').collect();
        assert!(
            parts.len() == 3,
            "{}",
            at(&"want kind<TAB>\"regex\"<TAB>[argv] or *")
        );
        assert!(
            !reason.is_empty(),
            "{}",
            at(&"every entry says why above it")
        );
        let pattern: String =
            serde_json::from_str(parts[1]).unwrap_or_else(|e| panic!("{}", at(&e)));
        let matcher =
            grep_regex::RegexMatcher::new(&pattern).unwrap_or_else(|e| panic!("{}", at(&e)));
        let program = (parts[2] != "*")
            .then(|| serde_json::from_str(parts[2]).unwrap_or_else(|e| panic!("{}", at(&e))));
        out.push(Known {
            kind: parts[0].to_owned(),
            pattern,
            matcher,
            program,
            reason: reason.clone(),
            line: n + 1,
        });
    }
    out
}

impl Known {
    pub fn covers(&self, m: &Mismatch) -> bool {
        use grep_matcher::Matcher;
        let kind = match self.kind.strip_suffix('*') {
            Some(prefix) => m.kind.starts_with(prefix),
            None => m.kind == self.kind,
        };
        kind && self.program.as_ref().is_none_or(|p| *p == m.program)
            && self
                .matcher
                .is_match(context(&m.script, &m.program).as_bytes())
                .unwrap_or(false)
    }
}

/// The part of `script` a mismatch about `program` is looked for in: the lines that name the
/// program (its basename), each with the line before and after; the whole script when it is
/// short or no line names the program.
pub fn context(script: &str, program: &[String]) -> String {
    const SHORT: usize = 400;
    let name = program
        .first()
        .map(|n| n.rsplit('/').next().unwrap_or(n))
        .unwrap_or("");
    if script.len() <= SHORT || name.is_empty() {
        return script.to_owned();
    }
    let lines: Vec<&str> = script.lines().collect();
    let mut keep = vec![false; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if line.contains(name) {
            for k in keep.iter_mut().take(i + 2).skip(i.saturating_sub(1)) {
                *k = true;
            }
        }
    }
    if !keep.contains(&true) {
        return script.to_owned();
    }
    lines
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(l, _)| *l)
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------------
// A whole run: analyse, run what was understood, judge, count.

/// The figures of one oracle run.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub scripts: usize,
    pub understood: usize,
    pub run: usize,
    pub timed_out: usize,
    pub errors: usize,
    pub starts_logged: usize,
    /// Mismatches by kind (excused included).
    pub by_kind: BTreeMap<String, usize>,
    pub known: usize,
    /// The mismatches no known entry covers.
    pub unknown: Vec<Mismatch>,
    /// Every mismatch, known or not, excused included.
    pub all: Vec<Mismatch>,
    /// Known entries that covered something.
    pub used: Vec<usize>,
    pub seconds: f64,
}

impl Tally {
    pub fn summary(&self, what: &str) -> String {
        format!(
            "{what}: {} scripts, {} understood, {} run ({} timed out, {} not run), {} starts logged; mismatches {:?}; {} known, {} unknown; {:.1} s",
            self.scripts,
            self.understood,
            self.run,
            self.timed_out,
            self.errors,
            self.starts_logged,
            self.by_kind,
            self.known,
            self.unknown.len(),
            self.seconds
        )
    }

    /// Writes the report (every mismatch, known ones marked) under `target/`.
    pub fn write_report(&self, what: &str, known: &[Known]) -> PathBuf {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("oracle-{what}.txt"));
        let mut text = format!("{}\n\n", self.summary(what));
        for m in &self.all {
            let tag = match known.iter().find(|k| m.fails() && k.covers(m)) {
                Some(k) => format!("[known, line {}] ", k.line),
                None if m.fails() => "[UNKNOWN] ".to_owned(),
                None => String::new(),
            };
            text.push_str(&tag);
            text.push_str(&m.render());
        }
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// Analyses every script, runs those understood through the oracle (`jobs` workers), judges
/// each, and counts.
pub fn check(scripts: &[String], known: &[Known], timeout: Duration, jobs: usize) -> Tally {
    let started = Instant::now();
    let judge = Judge::new();
    let mut tally = Tally {
        scripts: scripts.len(),
        ..Tally::default()
    };
    let analysed: Vec<(usize, Analysis)> = scripts
        .iter()
        .enumerate()
        .map(|(i, s)| (i, Analysis::of(s)))
        .filter(|(_, a)| a.analysed)
        .collect();
    tally.understood = analysed.len();
    let requests: Vec<Request> = analysed
        .iter()
        .map(|(i, _)| Request::oracle(scripts[*i].clone()))
        .collect();
    let outcomes = oracle().run_parallel(&requests, timeout, jobs);

    for ((i, analysis), outcome) in analysed.iter().zip(&outcomes) {
        if outcome.error.is_some() {
            tally.errors += 1;
            tally.all.push(Mismatch {
                kind: "not_run".into(),
                script: scripts[*i].clone(),
                program: Vec::new(),
                detail: outcome.error.clone().unwrap_or_default(),
            });
            continue;
        }
        tally.run += 1;
        tally.timed_out += usize::from(outcome.timed_out);
        tally.starts_logged += outcome.execs.iter().map(|e| e.count).sum::<usize>();
        tally
            .all
            .extend(judge.judge(&scripts[*i], analysis, outcome));
    }
    for m in &tally.all {
        *tally.by_kind.entry(m.kind.clone()).or_default() += 1;
        if !m.fails() {
            continue;
        }
        match known.iter().position(|k| k.covers(m)) {
            Some(k) => {
                tally.known += 1;
                if !tally.used.contains(&k) {
                    tally.used.push(k);
                }
            }
            None => tally.unknown.push(m.clone()),
        }
    }
    tally.seconds = started.elapsed().as_secs_f64();
    tally
}
