//! The OS jail on the real kernel. Each test first checks that this kernel has what it tests
//! (and says so when it skips — `REASONIX_NO_SKIP=1` turns a skip into a failure), then tries
//! the attack and the legitimate use that must still work. The refusals of `enforce` are proven
//! on every machine, with capabilities taken away from a plan ([`Plan::with_capabilities`]).

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{World, skip_unless};
use reasonix::sandbox::jail::{
    self, Capabilities, Capture, Exit, JailConfig, Limits, Mode, NetRule, Plan, RunError,
    RunResult, danger,
};
use reasonix::{Judgement, PolicySet, Posture, Registry};

fn lacks_landlock() -> bool {
    skip_unless(
        jail::capabilities().landlock_fs,
        "Landlock filesystem rules",
    )
}

fn lacks_landlock_net() -> bool {
    skip_unless(
        jail::capabilities().landlock_net,
        "Landlock TCP rules (ABI 4)",
    )
}

fn lacks_seccomp() -> bool {
    skip_unless(jail::capabilities().seccomp, "seccomp filters")
}

fn lacks_full_backend() -> bool {
    let caps = jail::capabilities();
    skip_unless(
        caps.landlock_fs && caps.landlock_net && caps.landlock_scope && caps.seccomp,
        "one of Landlock filesystem rules, TCP rules, scoping or seccomp (enforce needs them all)",
    )
}

fn plan(w: &World, configure: impl FnOnce(&mut JailConfig)) -> Plan {
    plan_for(w, jail::capabilities().clone(), configure)
}

/// A plan computed as if the machine offered `caps`.
fn plan_for(w: &World, caps: Capabilities, configure: impl FnOnce(&mut JailConfig)) -> Plan {
    let mut config = JailConfig::default();
    configure(&mut config);
    let ws = w.ws.canonicalize().unwrap();
    // The real home: its toolchains (python3 under ~/.pyenv, say) are read roots.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    Plan::with_capabilities(&config, &ws, home.as_deref(), caps)
}

/// This machine's capabilities with a part taken away.
fn without(take: impl FnOnce(&mut Capabilities)) -> Capabilities {
    let mut caps = jail::capabilities().clone();
    take(&mut caps);
    caps
}

fn sh(plan: &Plan, script: &str) -> RunResult {
    danger::exec_unjudged(
        plan,
        &["bash".into(), "-c".into(), script.into()],
        Some(Duration::from_secs(20)),
        Capture::Bounded(64 * 1024),
    )
    .unwrap_or_else(|e| panic!("{script}: {e}"))
}

fn python() -> String {
    for p in ["python3", "/usr/bin/python3"] {
        if std::process::Command::new(p)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return p.to_owned();
        }
    }
    panic!("these tests drive sockets from python3, which this machine should have");
}

#[test]
fn a_write_outside_the_write_roots_fails_with_eacces_and_leaves_nothing() {
    if lacks_landlock() {
        return;
    }
    let w = World::new();
    let p = plan(&w, |_| {});
    let target = w.outside.join("planted.txt");
    let r = sh(&p, &format!("echo x > {} ; echo rc=$?", target.display()));
    assert!(r.stderr.contains("Permission denied"), "{r:?}");
    assert!(r.stdout.contains("rc=1"), "{r:?}");
    assert!(!target.exists(), "nothing may be created outside");
    // Python sees EACCES itself.
    let r = sh(
        &p,
        &format!(
            "{} -c \"open('{}', 'w')\" 2>&1 | tail -1",
            python(),
            target.display()
        ),
    );
    assert!(
        r.stdout.contains("PermissionError") && r.stdout.contains("Errno 13"),
        "{r:?}"
    );
    assert!(!target.exists());
}

#[test]
fn a_write_inside_the_workspace_works_and_reads_of_the_system_work() {
    if lacks_landlock() {
        return;
    }
    let w = World::new();
    let p = plan(&w, |_| {});
    let r = sh(
        &p,
        "mkdir -p sub && echo made > sub/f.txt && cat sub/f.txt && ls /usr/bin >/dev/null && echo ok > $TMPDIR/t && cat $TMPDIR/t",
    );
    assert_eq!(r.exit, Exit::Exited(0), "{r:?}");
    assert_eq!(r.stdout, "made\nok\n");
    assert_eq!(
        std::fs::read_to_string(w.ws.join("sub/f.txt")).unwrap(),
        "made\n"
    );
}

#[test]
fn reads_outside_the_roots_and_system_secrets_are_refused() {
    if lacks_landlock() {
        return;
    }
    let w = World::new();
    std::fs::write(w.outside.join("secret.txt"), "SECRET").unwrap();
    std::fs::write(w.home.join(".netrc"), "SECRET").unwrap();
    let p = plan(&w, |_| {});
    for target in [
        w.outside.join("secret.txt"),
        w.home.join(".netrc"),
        "/etc/shadow".into(),
    ] {
        let r = sh(&p, &format!("cat {}", target.display()));
        assert!(
            !r.stdout.contains("SECRET") && r.stdout.is_empty(),
            "{}: {r:?}",
            target.display()
        );
        assert!(
            r.stderr.contains("Permission denied"),
            "{}: {r:?}",
            target.display()
        );
    }
}

#[test]
fn the_environment_of_reasonix_does_not_reach_the_jail() {
    let w = World::new();
    let p = plan(&w, |c| c.mode = Mode::BestEffort);
    // The parent's environment holds whatever secrets it was started with; none pass.
    let r = sh(&p, "env");
    for line in r.stdout.lines() {
        let key = line.split('=').next().unwrap_or("");
        assert!(
            [
                "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
                "TERM", "PWD", "SHLVL", "_"
            ]
            .contains(&key),
            "{line}"
        );
    }
}

struct Listener {
    port: u16,
    accepted: std::sync::mpsc::Receiver<Vec<u8>>,
}

fn listen() -> Listener {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, accepted) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = Vec::new();
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.read_to_end(&mut buf);
            let _ = tx.send(buf);
        }
    });
    Listener { port, accepted }
}

#[test]
fn tcp_connect_to_a_live_listener_is_refused_unless_its_port_is_allowed() {
    if lacks_landlock_net() {
        return;
    }
    let w = World::new();
    let listener = listen();
    // The control: outside the jail the connection succeeds.
    let mut s = TcpStream::connect(("127.0.0.1", listener.port)).unwrap();
    s.write_all(b"control").unwrap();
    drop(s);
    assert_eq!(
        listener
            .accepted
            .recv_timeout(Duration::from_secs(5))
            .unwrap(),
        b"control"
    );

    let py = python();
    let connect = format!(
        "{py} -c \"import socket; s=socket.create_connection(('127.0.0.1', {})); s.sendall(b'jailed'); print('connected')\" 2>&1 | tail -1",
        listener.port
    );
    let denied = plan(&w, |_| {});
    let r = sh(&denied, &connect);
    assert!(
        r.stdout.contains("PermissionError") || r.stdout.contains("Errno 13"),
        "{r:?}"
    );
    assert!(
        listener
            .accepted
            .recv_timeout(Duration::from_millis(300))
            .is_err(),
        "nothing reached the listener"
    );

    let allowed = plan(&w, |c| {
        c.network.push(NetRule {
            host: "127.0.0.1".into(),
            port: listener.port,
        })
    });
    let r = sh(&allowed, &connect);
    assert!(r.stdout.contains("connected"), "{r:?}");
    assert_eq!(
        listener
            .accepted
            .recv_timeout(Duration::from_secs(5))
            .unwrap(),
        b"jailed"
    );
}

#[test]
fn dev_tcp_is_refused() {
    if lacks_landlock_net() {
        return;
    }
    let w = World::new();
    let listener = listen();
    let r = sh(
        &plan(&w, |_| {}),
        &format!(
            "echo leak > /dev/tcp/127.0.0.1/{} ; echo rc=$?",
            listener.port
        ),
    );
    assert!(r.stdout.contains("rc=1"), "{r:?}");
    assert!(
        listener
            .accepted
            .recv_timeout(Duration::from_millis(300))
            .is_err()
    );
}

#[test]
fn binding_a_tcp_port_is_refused() {
    if lacks_landlock_net() {
        return;
    }
    let w = World::new();
    let r = sh(
        &plan(&w, |_| {}),
        &format!(
            "{} -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('bound')\" 2>&1 | tail -1",
            python()
        ),
    );
    assert!(
        !r.stdout.contains("bound") && r.stdout.contains("Errno 13"),
        "{r:?}"
    );
}

#[test]
fn udp_and_raw_sockets_are_refused_with_eperm() {
    if lacks_seccomp() {
        return;
    }
    let w = World::new();
    let py = python();
    let p = plan(&w, |_| {});
    for kind in ["socket.SOCK_DGRAM", "socket.SOCK_RAW"] {
        let r = sh(
            &p,
            &format!(
                "{py} -c \"import socket; socket.socket(socket.AF_INET, {kind}); print('made')\" 2>&1 | tail -1"
            ),
        );
        assert!(
            r.stdout.contains("Errno 1]") && !r.stdout.contains("made"),
            "{kind}: {r:?}"
        );
    }
    // AF_PACKET and netlink too.
    let r = sh(
        &p,
        &format!(
            "{py} -c \"import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('made')\" 2>&1 | tail -1"
        ),
    );
    assert!(r.stdout.contains("Errno 1]"), "{r:?}");
    // A TCP socket can still be made (Landlock decides where it may connect).
    let r = sh(
        &p,
        &format!(
            "{py} -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM); print('made')\""
        ),
    );
    assert_eq!(r.stdout, "made\n", "{r:?}");
}

#[test]
fn ptrace_and_namespaces_are_refused() {
    if lacks_seccomp() {
        return;
    }
    let w = World::new();
    let py = python();
    let p = plan(&w, |_| {});
    // PTRACE_TRACEME is the simplest ptrace call; the filter refuses every ptrace.
    let r = sh(
        &p,
        &format!(
            "{py} -c \"import ctypes,os; libc=ctypes.CDLL(None, use_errno=True); print(libc.ptrace(0,0,0,0), ctypes.get_errno())\""
        ),
    );
    assert_eq!(r.stdout, "-1 1\n", "{r:?}");
    let r = sh(
        &p,
        &format!(
            "{py} -c \"import ctypes,os; libc=ctypes.CDLL(None, use_errno=True); print(libc.unshare(0x10000000), ctypes.get_errno())\""
        ),
    );
    assert_eq!(r.stdout, "-1 1\n", "unshare(CLONE_NEWUSER): {r:?}");
    // And the parent's memory and environment are out of reach.
    let r = sh(&p, &format!("cat /proc/{}/environ", std::process::id()));
    assert!(r.stdout.is_empty() && !r.stderr.is_empty(), "{r:?}");
}

#[test]
fn a_fork_bomb_is_contained() {
    let caps = jail::capabilities();
    if skip_unless(
        caps.cgroup_pids.is_some() || caps.uid != 0,
        "a pids cgroup (RLIMIT_NPROC does not bind root: a fork bomb would not be contained, so it is not run)",
    ) {
        return;
    }
    let w = World::new();
    let p = plan(&w, |c| {
        c.limits = Limits {
            processes: 64,
            timeout_ms: 3000,
            ..Limits::default()
        };
    });
    let started = Instant::now();
    let r = sh(&p, "bomb_7f3a(){ bomb_7f3a|bomb_7f3a& };bomb_7f3a; sleep 2");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(r.exit, Exit::TimedOut | Exit::Exited(_)), "{r:?}");
    // Every process of the bomb is gone once the run returns.
    let left = bomb_processes("bomb_7f3a");
    assert!(
        left.is_empty(),
        "processes of the bomb outlived the run: {left:?}"
    );
    // The machine still spawns.
    assert!(
        std::process::Command::new("true")
            .status()
            .unwrap()
            .success()
    );
}

/// Live (not zombie) processes whose command line holds `marker`.
fn bomb_processes(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
                && alive(*pid)
        })
        .collect()
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

#[test]
fn a_child_that_ignores_sigterm_dies_at_the_timeout_with_its_whole_group() {
    let w = World::new();
    let p = plan(&w, |c| {
        c.mode = Mode::BestEffort;
        c.limits.timeout_ms = 700;
    });
    let started = Instant::now();
    let r = sh(
        &p,
        "trap '' TERM; sleep 300 & echo $! > bg.pid; echo $$ > main.pid; sleep 300",
    );
    assert_eq!(r.exit, Exit::TimedOut, "{r:?}");
    assert_eq!(r.exit.code(), 124);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    std::thread::sleep(Duration::from_millis(100));
    for file in ["bg.pid", "main.pid"] {
        let pid: i32 = std::fs::read_to_string(w.ws.join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!alive(pid), "{file} {pid} outlived the timeout");
    }
}

#[test]
fn background_processes_do_not_outlive_a_finished_command() {
    let w = World::new();
    let p = plan(&w, |c| c.mode = Mode::BestEffort);
    let r = sh(&p, "sleep 300 & echo $! > bg.pid; echo done");
    assert_eq!(r.exit, Exit::Exited(0));
    let pid: i32 = std::fs::read_to_string(w.ws.join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !alive(pid),
        "the background sleep {pid} outlived the command"
    );
}

#[test]
fn output_past_the_bound_is_cut_with_a_marker_and_the_true_size() {
    let w = World::new();
    let p = plan(&w, |c| c.mode = Mode::BestEffort);
    let r = danger::exec_unjudged(
        &p,
        &[
            "bash".into(),
            "-c".into(),
            "head -c 200000 /dev/zero | tr '\\0' a; echo -n END".into(),
        ],
        None,
        Capture::Bounded(1000),
    )
    .unwrap();
    assert_eq!(r.stdout_bytes, 200_003);
    assert!(r.stdout.len() < 1200, "{}", r.stdout.len());
    assert!(
        r.stdout
            .contains("[… 199003 bytes elided; the output was 200003 bytes in all …]"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.ends_with("END"));
}

#[test]
fn a_setuid_program_gains_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let id = w.ws.join("id");
    std::fs::copy("/usr/bin/id", &id).unwrap();
    let nobody = nix::unistd::User::from_name("nobody").ok().flatten();
    if skip_unless(nobody.is_some(), "a user `nobody` to own a setuid program") {
        return;
    }
    let Some(nobody) = nobody else { return };
    if skip_unless(
        nix::unistd::chown(&id, Some(nobody.uid), None).is_ok(),
        "the right to chown a file to nobody (root)",
    ) {
        return;
    }
    std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o4755)).unwrap();
    // The control: outside the jail the setuid bit works (unless the filesystem ignores it).
    let control = std::process::Command::new(&id).arg("-u").output().unwrap();
    let control = String::from_utf8_lossy(&control.stdout).trim().to_owned();
    if skip_unless(
        control == nobody.uid.to_string(),
        &format!("a filesystem that honours setuid bits (id -u gave {control}): nothing to prove"),
    ) {
        return;
    }
    let p = plan(&w, |c| c.mode = Mode::BestEffort);
    let r = sh(&p, "./id -u; grep NoNewPrivs /proc/self/status");
    let own = nix::unistd::getuid().to_string();
    assert_eq!(r.stdout, format!("{own}\nNoNewPrivs:\t1\n"), "{r:?}");
}

#[test]
fn under_enforce_a_missing_backend_blocks_bash_at_stage_sandbox() {
    // A kernel without Landlock cannot be had here, so the plan's refusal is exercised through
    // the gate with a plan that says so: every machine where a backend is missing takes this path.
    let w = World::new();
    let caps = jail::capabilities();
    let gate = w.yaml_gate("version: 1\ndefaults:\n  writer: allow\nsandbox:\n  bash: enforce\n");
    let a = gate
        .admit_text(r#"{"name":"bash","arguments":{"command":"make"}}"#)
        .into_admission();
    let view = a.sandbox.expect("a bash call shows its sandbox plan");
    if caps.landlock_fs && caps.landlock_net && caps.landlock_scope && caps.seccomp {
        assert_eq!(a.verdict.as_str(), "allow");
        assert!(view.refusal.is_none());
        assert_eq!(view.mode, Mode::Enforce);
    } else {
        assert_eq!(
            (a.verdict.as_str(), a.stage),
            ("deny", reasonix::Stage::Sandbox)
        );
        assert!(view.refusal.is_some());
    }
}

#[test]
fn the_bash_tool_runs_in_the_jail() {
    if lacks_landlock() {
        return;
    }
    let w = World::new();
    let set = PolicySet::from_yaml("p.yaml", "version: 1\ndefaults:\n  writer: allow\n").unwrap();
    let gate = common::gate_over(Registry::with_builtins(), &set, &w.ws, Posture::Interactive);
    let escape = w.outside.join("escaped.txt");
    // Policy cannot see where `$F` points; the jail still stops the write.
    let call = serde_json::json!({"name": "bash", "arguments": {"command": format!("F={}; echo x > \"$F\"; echo made > in.txt; exit 3", escape.display())}});
    let admitted = match gate.admit_text(&call.to_string()) {
        Judgement::Allowed(a) => a,
        Judgement::Ask(p) => p.approve(),
        Judgement::Refused(a) => panic!("{:?}", a.reasons),
    };
    let out = common::execute(admitted).unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert!(out.text.starts_with("exit status 3\n"), "{}", out.text);
    assert!(out.text.contains("Permission denied"), "{}", out.text);
    assert!(!escape.exists());
    assert_eq!(
        std::fs::read_to_string(w.ws.join("in.txt")).unwrap(),
        "made\n"
    );
}

#[test]
fn sandbox_exec_runs_a_command_in_the_jail_and_exits_with_its_status() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let (code, stdout, _) = w.run(
        &[
            "sandbox",
            "exec",
            "--workspace",
            &ws,
            "--",
            "bash",
            "-c",
            "echo hi; exit 7",
        ],
        "",
    );
    assert_eq!((code, stdout.as_str()), (7, "hi\n"));
    let (code, _, stderr) = w.run(
        &[
            "sandbox",
            "exec",
            "--workspace",
            &ws,
            "--timeout-ms",
            "300",
            "--",
            "sleep",
            "30",
        ],
        "",
    );
    assert_eq!(code, 124, "{stderr}");
    let (code, stdout, _) = w.run(&["sandbox", "probe", "--workspace", &ws], "");
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["machine"]["landlock_abi"].is_null(),
        !jail::capabilities().landlock_fs
    );
    assert_eq!(
        v["plan"]["write_roots"][0],
        w.ws.canonicalize().unwrap().to_str().unwrap()
    );
}

#[test]
fn sandbox_roots_widen_what_file_tools_may_reach_too() {
    let w = World::new();
    std::fs::write(w.home.join("notes.txt"), "n").unwrap();
    let yaml = format!(
        "version: 1\ndefaults:\n  writer: allow\nsandbox:\n  write_roots: [\"{}\"]\n  read_roots: [\"{}\"]\n",
        w.outside.display(),
        w.home.display()
    );
    let gate = w.yaml_gate(&yaml);
    let verdict = |call: serde_json::Value| {
        let a = gate.admit_text(&call.to_string()).into_admission();
        (a.verdict.as_str().to_owned(), a.stage)
    };
    let write_outside = serde_json::json!({"name":"write_file","arguments":{"path": w.outside.join("x.txt"), "content": ""}});
    assert_eq!(verdict(write_outside).0, "allow");
    let read_home =
        serde_json::json!({"name":"read_file","arguments":{"path": w.home.join("notes.txt")}});
    assert_eq!(verdict(read_home).0, "allow");
    // A read root is not a write root.
    let write_home = serde_json::json!({"name":"write_file","arguments":{"path": w.home.join("notes.txt"), "content": ""}});
    assert_eq!(
        verdict(write_home),
        ("deny".to_owned(), reasonix::Stage::Sandbox)
    );
    // And the jail plan carries the write root.
    let a = gate
        .admit_text(r#"{"name":"bash","arguments":{"command":"true"}}"#)
        .into_admission();
    let plan = a.sandbox.unwrap();
    assert!(
        plan.write_roots
            .contains(&w.outside.canonicalize().unwrap().display().to_string()),
        "{plan:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// What `enforce` refuses, proven on every machine by taking a part away from the capabilities a
// plan is computed for. Each refusal runs nothing; `best_effort` with the same capabilities
// lists the part as not enforced and runs (the control).

/// A command that leaves `ran.txt` in the workspace when it runs.
fn leaves_a_marker(w: &World) -> (Vec<String>, std::path::PathBuf) {
    let marker = w.ws.join("ran.txt");
    (vec!["touch".into(), marker.display().to_string()], marker)
}

/// `enforce` without `part` (as the plan names it) refuses in its words, claims nothing of it
/// (`claim` starts its enforced line), and runs nothing; `best_effort` with the same
/// capabilities lists it as not enforced and runs the same command.
fn refuses_without(caps: Capabilities, part: &str, claim: &str) {
    let w = World::new();
    let (argv, marker) = leaves_a_marker(&w);

    let enforce = plan_for(&w, caps.clone(), |c| c.mode = Mode::Enforce);
    let why = enforce
        .refusal()
        .unwrap_or_else(|| panic!("enforce without {part} must refuse: {enforce:?}"))
        .to_owned();
    assert!(
        why.starts_with("sandbox.bash is enforce, and this kernel lacks ")
            && why.contains(part)
            && why.ends_with("; use best_effort to run with less, or a newer kernel"),
        "{why}"
    );
    assert_eq!(enforce.view().refusal.as_deref(), Some(why.as_str()));
    assert!(
        !enforce.enforced().iter().any(|e| e.starts_with(claim)),
        "{:?}",
        enforce.enforced()
    );
    match danger::exec_unjudged(&enforce, &argv, None, Capture::Bounded(1024)) {
        Err(RunError::Refused(refused)) => assert_eq!(refused, why),
        other => panic!("enforce without {part} ran: {other:?}"),
    }
    assert!(!marker.exists(), "nothing ran under the refusing plan");

    let best = plan_for(&w, caps, |c| c.mode = Mode::BestEffort);
    assert_eq!(best.refusal(), None);
    let listed = format!("{part}: not available on this kernel");
    assert!(
        best.not_enforced().contains(&listed),
        "{listed:?} in {:?}",
        best.not_enforced()
    );
    assert!(best.view().not_enforced.contains(&listed));
    assert!(!best.enforced().iter().any(|e| e.starts_with(claim)));
    let r = danger::exec_unjudged(&best, &argv, None, Capture::Bounded(1024))
        .unwrap_or_else(|e| panic!("best_effort without {part}: {e}"));
    assert_eq!(r.exit, Exit::Exited(0), "{r:?}");
    assert!(marker.exists(), "the control: best_effort runs the command");
}

#[test]
fn enforce_without_landlock_filesystem_rules_refuses_and_runs_nothing() {
    refuses_without(
        without(|c| {
            c.landlock_fs = false;
            c.landlock_abi = None;
        }),
        "Landlock filesystem rules",
        "filesystem (Landlock",
    );
}

#[test]
fn enforce_without_landlock_tcp_rules_refuses_and_runs_nothing() {
    refuses_without(
        without(|c| c.landlock_net = false),
        "Landlock TCP rules (ABI 4)",
        "TCP connect",
    );
}

#[test]
fn enforce_without_landlock_scoping_refuses_and_runs_nothing() {
    refuses_without(
        without(|c| c.landlock_scope = false),
        "Landlock scoping (ABI 6)",
        "signals and abstract UNIX sockets",
    );
}

#[test]
fn enforce_without_seccomp_refuses_and_runs_nothing() {
    refuses_without(without(|c| c.seccomp = false), "seccomp", "seccomp:");
}

#[test]
fn enforce_names_every_missing_part_at_once() {
    let w = World::new();
    let caps = without(|c| {
        c.landlock_fs = false;
        c.landlock_abi = None;
        c.landlock_net = false;
        c.landlock_scope = false;
        c.seccomp = false;
    });
    let p = plan_for(&w, caps, |_| {});
    assert_eq!(
        p.refusal(),
        Some(
            "sandbox.bash is enforce, and this kernel lacks Landlock filesystem rules, Landlock TCP rules (ABI 4), Landlock scoping (ABI 6), seccomp; use best_effort to run with less, or a newer kernel"
        )
    );
}

#[test]
fn enforce_with_every_part_runs_the_command() {
    // The control of the refusals above: the same command under `enforce` with this machine's
    // full capabilities runs.
    if lacks_full_backend() {
        return;
    }
    let w = World::new();
    let (argv, marker) = leaves_a_marker(&w);
    let p = plan(&w, |c| c.mode = Mode::Enforce);
    assert_eq!(p.refusal(), None);
    let r = danger::exec_unjudged(&p, &argv, None, Capture::Bounded(1024)).unwrap();
    assert_eq!((r.exit, r.not_enforced.len()), (Exit::Exited(0), 0));
    assert!(marker.exists());
}

#[test]
fn plan_new_is_computed_for_the_probed_capabilities() {
    let w = World::new();
    let ws = w.ws.canonicalize().unwrap();
    let config = JailConfig::default();
    let new = Plan::new(&config, &ws, None);
    assert_eq!(new.capabilities(), jail::capabilities());
    let probed = Plan::with_capabilities(&config, &ws, None, jail::capabilities().clone());
    assert_eq!(new.view(), probed.view());
}

// ---------------------------------------------------------------------------------------------
// Capabilities: the plan's words and the jailed process's `/proc/self/status` agree.

const READ_CAPS: &str = "grep ^Cap /proc/self/status";

/// The capability sets of a `/proc/<pid>/status` text: `CapEff` and the rest, as bits.
fn cap_sets(status: &str) -> std::collections::BTreeMap<String, u64> {
    let sets: std::collections::BTreeMap<String, u64> = status
        .lines()
        .filter_map(|l| {
            let (name, hex) = l.split_once(':')?;
            let bits = u64::from_str_radix(hex.trim(), 16).ok()?;
            name.starts_with("Cap").then(|| (name.to_owned(), bits))
        })
        .collect();
    assert_eq!(
        sets.len(),
        5,
        "CapInh, CapPrm, CapEff, CapBnd, CapAmb: {status}"
    );
    sets
}

fn lacks_root_with_cap_setpcap() -> bool {
    let caps = jail::capabilities();
    skip_unless(
        caps.uid == 0 && caps.cap_setpcap,
        "root with CAP_SETPCAP (the test proves that root loses every capability)",
    )
}

#[test]
fn inside_the_jail_root_holds_no_capability_and_an_empty_bounding_set() {
    if lacks_root_with_cap_setpcap() {
        return;
    }
    let w = World::new();
    // The control: outside the jail, and through the same path with the jail off, root holds
    // capabilities and a full bounding set.
    let outside = std::process::Command::new("bash")
        .args(["-c", READ_CAPS])
        .output()
        .unwrap();
    let outside = cap_sets(&String::from_utf8_lossy(&outside.stdout));
    assert!(
        outside["CapBnd"] != 0 && outside["CapEff"] != 0,
        "{outside:?}"
    );
    let off = cap_sets(&sh(&plan(&w, |c| c.mode = Mode::Off), READ_CAPS).stdout);
    assert!(off["CapBnd"] != 0 && off["CapEff"] != 0, "{off:?}");

    let p = plan(&w, |c| c.mode = Mode::BestEffort);
    assert!(
        p.enforced().iter().any(|e| e
            == "capabilities: the bounding, permitted, effective, inheritable and ambient sets are emptied and SECBIT_NOROOT is locked, so the process runs without any, root too"),
        "{:?}",
        p.enforced()
    );
    let r = sh(&p, READ_CAPS);
    assert!(
        r.stdout.contains("CapBnd:\t0000000000000000\n"),
        "{}",
        r.stdout
    );
    for (set, bits) in cap_sets(&r.stdout) {
        assert_eq!(bits, 0, "{set} in the jail: {}", r.stdout);
    }
    // SECBIT_NOROOT is set and locked: exec does not treat uid 0 as privileged (`setpriv -d`
    // reads the securebits; outside, none is set).
    let Some(setpriv) = setpriv() else { return };
    let outside = std::process::Command::new(setpriv)
        .arg("-d")
        .output()
        .unwrap();
    let securebits = |dump: &str| {
        dump.lines()
            .find(|l| l.starts_with("Securebits:"))
            .map(str::to_owned)
    };
    let outside = securebits(&String::from_utf8_lossy(&outside.stdout)).unwrap_or_default();
    assert!(
        outside.starts_with("Securebits:") && !outside.contains("noroot"),
        "{outside}"
    );
    let r = sh(&p, &format!("id -u; {setpriv} -d"));
    assert!(r.stdout.starts_with("0\n"), "{r:?}");
    let inside = securebits(&r.stdout).unwrap_or_default();
    assert!(inside.contains("noroot,noroot_locked"), "{r:?}");
}

/// `setpriv` (util-linux), which starts a program with fewer capabilities and reads securebits.
fn setpriv() -> Option<&'static str> {
    let found = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if skip_unless(
        found.is_some(),
        "setpriv (util-linux), to start Reasonix without CAP_SETPCAP and read securebits",
    ) {
        return None;
    }
    found
}

#[test]
fn without_cap_setpcap_the_sets_are_still_emptied_and_the_plan_keeps_the_bounding_set() {
    // A plan computed as for a Reasonix without CAP_SETPCAP takes the path such a process takes:
    // no bounding set drop, no securebits, and still `capset` to empty every set.
    if lacks_root_with_cap_setpcap() {
        return;
    }
    let w = World::new();
    let p = plan_for(&w, without(|c| c.cap_setpcap = false), |c| {
        c.mode = Mode::BestEffort
    });
    assert!(
        p.enforced().iter().any(|e| e.starts_with(
            "capabilities: the permitted, effective, inheritable and ambient sets are emptied, so root runs without any"
        ) && e.ends_with("the bounding set stays as it is (emptying it needs CAP_SETPCAP, which Reasonix lacks)")),
        "{:?}",
        p.enforced()
    );
    let sets = cap_sets(&sh(&p, READ_CAPS).stdout);
    // As the plan says: the bounding set stays (the control that the drop above is real)…
    assert!(sets["CapBnd"] != 0, "{sets:?}");
    // …and root holds nothing.
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(sets[set], 0, "{set}: {sets:?}");
    }
}

#[test]
fn a_reasonix_started_without_cap_setpcap_still_leaves_the_jailed_command_without_capabilities() {
    // The real thing: `setpriv` takes CAP_SETPCAP out of the bounding set before Reasonix starts,
    // so Reasonix runs as root with every capability but that one, and `PR_SET_SECUREBITS` and
    // `PR_CAPBSET_DROP` would fail with EPERM.
    if lacks_root_with_cap_setpcap() {
        return;
    }
    let Some(setpriv) = setpriv() else { return };
    let w = World::new();
    let ws = w.ws.to_str().unwrap();
    let without_setpcap = |args: &[&str]| {
        let out = std::process::Command::new(setpriv)
            .args(["--bounding-set=-setpcap", "--"])
            .args(args)
            .current_dir(&w.outside)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let reasonix = env!("CARGO_BIN_EXE_reasonix");
    // The control: started so, a process holds capabilities, all but CAP_SETPCAP (bit 8).
    let (_, status, _) = without_setpcap(&["grep", "^Cap", "/proc/self/status"]);
    let outside = cap_sets(&status);
    assert!(
        outside["CapEff"] != 0 && outside["CapEff"] & (1 << 8) == 0,
        "{outside:?}"
    );
    // The plan says what it will do…
    let (code, probe, stderr) = without_setpcap(&[reasonix, "sandbox", "probe", "--workspace", ws]);
    assert_eq!(code, Some(0), "{stderr}");
    let probe: serde_json::Value = serde_json::from_str(&probe).unwrap();
    assert_eq!(probe["machine"]["cap_setpcap"], false, "{probe}");
    let words = probe["plan"]["enforced"].to_string();
    assert!(
        words.contains("so root runs without any")
            && words.contains("the bounding set stays as it is"),
        "{words}"
    );
    // …and the jailed command holds nothing; its bounding set is the one it was given.
    let (code, status, stderr) = without_setpcap(&[
        reasonix,
        "sandbox",
        "exec",
        "--workspace",
        ws,
        "--",
        "grep",
        "^Cap",
        "/proc/self/status",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let jailed = cap_sets(&status);
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(jailed[set], 0, "{set}: {status}");
    }
    assert_eq!(jailed["CapBnd"], outside["CapBnd"], "{status}");
}

// ---------------------------------------------------------------------------------------------
// The pids cgroup a plan promises: made for every run, or the run says so (best_effort) or is
// refused (enforce).

/// This machine's capabilities, with a pids cgroup parent where none can be made.
fn with_unusable_cgroup_parent(w: &World) -> Capabilities {
    let parent = w.root.join("not-a-cgroup");
    without(|c| c.cgroup_pids = Some(parent))
}

#[test]
fn under_enforce_a_run_whose_pids_cgroup_cannot_be_made_is_refused_and_runs_nothing() {
    if lacks_full_backend() {
        return;
    }
    let w = World::new();
    let (argv, marker) = leaves_a_marker(&w);
    let p = plan_for(&w, with_unusable_cgroup_parent(&w), |c| {
        c.mode = Mode::Enforce
    });
    // The plan promises the cgroup…
    assert_eq!(p.refusal(), None);
    assert!(
        p.enforced()
            .contains(&"at most 512 processes (pids cgroup)".to_owned()),
        "{:?}",
        p.enforced()
    );
    // …so a run that cannot have it is refused, saying why.
    match danger::exec_unjudged(&p, &argv, None, Capture::Bounded(1024)) {
        Err(RunError::Refused(why)) => {
            let parent = w.root.join("not-a-cgroup");
            assert!(
                why.starts_with(&format!(
                    "sandbox.bash is enforce, and the pids cgroup the plan promises could not be made in {} (",
                    parent.display()
                )),
                "{why}"
            );
            let instead = if jail::capabilities().uid == 0 {
                "RLIMIT_NPROC, the fallback, does not bind root"
            } else {
                "RLIMIT_NPROC, the fallback, counts every process of this user"
            };
            assert!(why.contains(instead), "{why}");
        }
        other => panic!("ran without its pids cgroup: {other:?}"),
    }
    assert!(!marker.exists(), "nothing ran");

    // The control: with a cgroup parent that works, the same run goes ahead.
    if skip_unless(
        jail::capabilities().cgroup_pids.is_some(),
        "a pids cgroup (the control of this test runs in one)",
    ) {
        return;
    }
    let r = danger::exec_unjudged(&plan(&w, |_| {}), &argv, None, Capture::Bounded(1024)).unwrap();
    assert_eq!((r.exit, r.not_enforced.len()), (Exit::Exited(0), 0));
    assert!(marker.exists());
}

#[test]
fn under_best_effort_a_run_whose_pids_cgroup_cannot_be_made_runs_under_rlimit_nproc_and_says_so() {
    let w = World::new();
    let limits = "grep '^Max processes' /proc/self/limits";
    let p = plan_for(&w, with_unusable_cgroup_parent(&w), |c| {
        c.mode = Mode::BestEffort;
        c.limits.processes = 77;
    });
    let r = sh(&p, limits);
    assert_eq!(r.exit, Exit::Exited(0), "{r:?}");
    // RLIMIT_NPROC took the cgroup's place…
    assert!(
        r.stdout.split_whitespace().filter(|w| *w == "77").count() == 2,
        "{}",
        r.stdout
    );
    // …and the run says what it did not enforce.
    assert_eq!(r.not_enforced.len(), 1, "{:?}", r.not_enforced);
    let parent = w.root.join("not-a-cgroup");
    assert!(
        r.not_enforced[0].starts_with(&format!(
            "process count: the pids cgroup could not be made in {} (",
            parent.display()
        )),
        "{:?}",
        r.not_enforced
    );
    let line = r.not_enforced_line().unwrap();
    assert!(
        line.starts_with("not enforced for this run: process count:") && !line.contains('\n'),
        "{line}"
    );

    // The control: where the cgroup can be made, the run is counted there, not by RLIMIT_NPROC,
    // and has nothing to add.
    if skip_unless(
        jail::capabilities().cgroup_pids.is_some(),
        "a pids cgroup (the control of this test runs in one)",
    ) {
        return;
    }
    let p = plan(&w, |c| {
        c.mode = Mode::BestEffort;
        c.limits.processes = 77;
    });
    let r = sh(&p, &format!("{limits}; cat /proc/self/cgroup"));
    assert!(r.not_enforced.is_empty(), "{:?}", r.not_enforced);
    assert!(!r.stdout.contains(" 77 "), "{}", r.stdout);
    assert!(r.stdout.contains("reasonix-"), "{}", r.stdout);
}
