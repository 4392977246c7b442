//! The OS jail on the real kernel. Each test first checks that this kernel has what it tests
//! (and says so when it skips — `REASONIX_NO_SKIP=1` turns a skip into a failure), then tries
//! the attack and the legitimate use that must still work. The refusals of `enforce` are proven
//! on every machine, with capabilities taken away from a plan ([`JailPlan::with_capabilities`]).

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{World, skip_unless};
use reasonix::sandbox::jail::{
    self, Capabilities, Capture, Enforcement, Exit, JailConfig, JailPlan, Limits, NetRule,
    RunError, RunResult, danger,
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

fn lacks_namespaces() -> bool {
    skip_unless(
        jail::capabilities().namespaces,
        "mount and PID namespaces for a run (root, or unprivileged user namespaces)",
    )
}

fn lacks_seccomp() -> bool {
    skip_unless(jail::capabilities().seccomp, "seccomp filters")
}

fn lacks_full_backend() -> bool {
    let caps = jail::capabilities();
    skip_unless(
        caps.landlock_fs
            && caps.landlock_net
            && caps.landlock_scope
            && caps.seccomp
            && caps.namespaces,
        "one of Landlock filesystem rules, TCP rules, scoping, seccomp or namespaces (enforce needs them all)",
    )
}

fn plan(w: &World, configure: impl FnOnce(&mut JailConfig)) -> JailPlan {
    plan_for(w, jail::capabilities().clone(), configure)
}

/// A plan computed as if the machine offered `caps`.
fn plan_for(w: &World, caps: Capabilities, configure: impl FnOnce(&mut JailConfig)) -> JailPlan {
    let mut config = JailConfig::default();
    configure(&mut config);
    let ws = w.ws.canonicalize().unwrap();
    // The real home: its toolchains (python3 under ~/.pyenv, say) are read roots.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    JailPlan::with_capabilities(&config, &ws, home.as_deref(), caps)
}

/// This machine's capabilities with a part taken away.
fn without(take: impl FnOnce(&mut Capabilities)) -> Capabilities {
    let mut caps = jail::capabilities().clone();
    take(&mut caps);
    caps
}

fn sh(plan: &JailPlan, script: &str) -> RunResult {
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
fn a_write_outside_the_write_roots_fails_and_leaves_nothing_with_each_layer() {
    if lacks_landlock() || lacks_namespaces() {
        return;
    }
    // With a mount namespace the read-only mount refuses first (EROFS); without one, Landlock
    // alone refuses (EACCES): either layer holds by itself.
    for (caps, message, errno) in [
        (
            jail::capabilities().clone(),
            "Read-only file system",
            "Errno 30",
        ),
        (
            without(|c| c.namespaces = false),
            "Permission denied",
            "Errno 13",
        ),
    ] {
        let w = World::new();
        let p = plan_for(&w, caps, |c| c.mode = Enforcement::BestEffort);
        let target = w.outside.join("planted.txt");
        let r = sh(&p, &format!("echo x > {} ; echo rc=$?", target.display()));
        assert!(r.stderr.contains(message), "{r:?}");
        assert!(r.stdout.contains("rc=1"), "{r:?}");
        assert!(!target.exists(), "nothing may be created outside");
        let r = sh(
            &p,
            &format!(
                "{} -c \"open('{}', 'w')\" 2>&1 | tail -1",
                python(),
                target.display()
            ),
        );
        assert!(r.stdout.contains(errno), "{r:?}");
        assert!(!target.exists());
    }
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
    let p = plan(&w, |c| c.mode = Enforcement::BestEffort);
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

    let rule = NetRule {
        host: "127.0.0.1".into(),
        port: listener.port,
    };
    // With the egress proxy (a network namespace per run), a listed destination is reached
    // through the proxy only (tests/it/egress.rs): a direct connection is refused even to its port.
    if jail::capabilities().net_namespace {
        let proxied = plan(&w, |c| c.network.push(rule.clone()));
        let r = sh(&proxied, &connect);
        assert!(r.stdout.contains("Errno 13"), "{r:?}");
        assert!(
            listener
                .accepted
                .recv_timeout(Duration::from_millis(300))
                .is_err(),
            "a direct connection bypassed the proxy"
        );
    }
    // Without a network namespace (best_effort), Landlock keeps the port alone.
    let allowed = plan_for(&w, without(|c| c.net_namespace = false), |c| {
        c.mode = Enforcement::BestEffort;
        c.network.push(rule);
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
    let bomb = format!("bomb_{}", own_marker());
    let started = Instant::now();
    let r = sh(&p, &format!("{bomb}(){{ {bomb}|{bomb}& }};{bomb}; sleep 2"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(r.exit, Exit::TimedOut | Exit::Exited(_)), "{r:?}");
    // Every process of the bomb is gone once the run returns.
    let left = processes_with(&bomb);
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

/// A number that names this test process's jailed processes in `/proc` (where a pid inside a
/// PID namespace means nothing): it holds this process's id, so that the same test run at the
/// same time by another test process on this machine (another checkout's suite) is not taken
/// for this one's — which once made `a_fork_bomb_is_contained` fail with a neighbour's bomb.
fn own_marker() -> String {
    std::process::id().to_string()
}

/// Live (not zombie) processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
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

/// This machine's capabilities, and the same without namespaces: a test that runs under both
/// proves the jail with a PID namespace and the fallback without one.
fn with_and_without_namespaces() -> [Capabilities; 2] {
    [
        jail::capabilities().clone(),
        without(|c| c.namespaces = false),
    ]
}

#[test]
fn a_child_that_ignores_sigterm_dies_at_the_timeout_with_its_whole_group() {
    for (i, caps) in with_and_without_namespaces().into_iter().enumerate() {
        let w = World::new();
        let p = plan_for(&w, caps, |c| {
            c.mode = Enforcement::BestEffort;
            c.limits.timeout_ms = 700;
        });
        let marker = format!("300.{}{i}31", own_marker());
        let started = Instant::now();
        let r = sh(
            &p,
            &format!("trap '' TERM; sleep {marker} & sleep {marker}"),
        );
        assert_eq!(r.exit, Exit::TimedOut, "{r:?}");
        assert_eq!(r.exit.code(), 124);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // Looked at once: a run returns only when its processes are gone.
        let left = processes_with(&marker);
        assert!(left.is_empty(), "{left:?} outlived the timeout");
    }
}

#[test]
fn background_processes_do_not_outlive_a_finished_command() {
    for (i, caps) in with_and_without_namespaces().into_iter().enumerate() {
        let w = World::new();
        let p = plan_for(&w, caps, |c| c.mode = Enforcement::BestEffort);
        let marker = format!("300.{}{i}57", own_marker());
        let r = sh(&p, &format!("sleep {marker} & echo started"));
        assert_eq!((r.exit, r.stdout.as_str()), (Exit::Exited(0), "started\n"));
        let left = processes_with(&marker);
        assert!(
            left.is_empty(),
            "the background sleep {left:?} outlived the command"
        );
    }
    // The control: started so outside the jail, the background sleep lives on.
    let marker = &format!("300.{}9157", own_marker());
    std::process::Command::new("bash")
        .args(["-c", &format!("sleep {marker} > /dev/null 2>&1 &")])
        .status()
        .unwrap();
    // The forked shell holds the marker in its command line until it execs `sleep`.
    let left = processes_with(marker);
    assert_eq!(left.len(), 1, "{left:?}");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(left[0]),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[test]
fn a_process_that_escaped_and_holds_the_output_open_does_not_hold_the_run_past_its_clock() {
    // With the jail off, nothing kills a process that left the group (`setsid`): it keeps the
    // output pipe open, and the run reads it only until the wall clock, not until it ends.
    let w = World::new();
    let marker = format!("300.{}41", own_marker());
    // The command ends once the sleep has left its group (`ready` is written after `setsid`).
    let script = format!(
        "rm -f ready; setsid bash -c 'echo > ready; exec sleep {marker}' & \
         while [ ! -e ready ]; do sleep 0.01; done; echo hi"
    );
    let off = plan(&w, |c| {
        c.mode = Enforcement::Off;
        c.limits.timeout_ms = 1000;
    });
    let started = Instant::now();
    let r = sh(&off, &script);
    assert_eq!(
        (r.exit, r.stdout.as_str()),
        (Exit::Exited(0), "hi\n"),
        "{r:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let left = processes_with(&marker);
    assert_eq!(left.len(), 1, "the control: it escaped {left:?}");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(left[0]),
        nix::sys::signal::Signal::SIGKILL,
    );
    // Jailed, the cgroup (or the PID namespace) ends it with the command, and the run returns
    // at once.
    let p = plan(&w, |c| {
        c.mode = Enforcement::BestEffort;
        c.limits.timeout_ms = 10_000;
    });
    let started = Instant::now();
    let r = sh(&p, &script);
    assert_eq!(
        (r.exit, r.stdout.as_str()),
        (Exit::Exited(0), "hi\n"),
        "{r:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(processes_with(&marker).is_empty());
}

#[test]
fn output_past_the_bound_is_cut_with_a_marker_and_the_true_size() {
    let w = World::new();
    let p = plan(&w, |c| c.mode = Enforcement::BestEffort);
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
    let p = plan(&w, |c| c.mode = Enforcement::BestEffort);
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
    if caps.landlock_fs
        && caps.landlock_net
        && caps.landlock_scope
        && caps.seccomp
        && caps.namespaces
    {
        assert_eq!(a.verdict.as_str(), "allow");
        assert!(view.refusal.is_none());
        assert_eq!(view.mode, Enforcement::Enforce);
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
    assert!(
        out.text.contains("Read-only file system") || out.text.contains("Permission denied"),
        "{}",
        out.text
    );
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

/// Issue 30: the probe's answer is kept for the next process on this machine, which runs its
/// command with every layer on without trying each part again; `sandbox probe`,
/// `REASONIX_PROBE=fresh`, a kept file others could write and one kept for another machine all
/// try each part again.
#[test]
fn the_probes_answer_is_kept_for_the_next_process_which_runs_with_every_layer_on() {
    if lacks_full_backend() || lacks_namespaces() {
        return;
    }
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let kept = w.home.join(".local/state/reasonix/probe.json");
    let status = "grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd):' /proc/self/status; ls /proc | grep -c '^[0-9]'";
    let exec = |env: &[(&str, &str)]| {
        let mut all = vec![("RUST_LOG", "reasonix=debug")];
        all.extend_from_slice(env);
        w.run_env(
            &[
                "sandbox",
                "exec",
                "--workspace",
                &ws,
                "--",
                "sh",
                "-c",
                status,
            ],
            "",
            &all,
        )
    };
    const TAKEN: &str = "the answer kept for this machine is taken";
    const TRIED: &str = "each part is tried";
    let jailed = |stdout: &str| {
        for line in [
            "Seccomp:\t2",
            "NoNewPrivs:\t1",
            "CapEff:\t0000000000000000",
            "CapBnd:\t0000000000000000",
        ] {
            assert!(stdout.contains(line), "{line} missing: {stdout}");
        }
        // A PID namespace of its own: sh and the pipeline's two, not the machine's.
        let pids: usize = stdout.lines().last().unwrap().trim().parse().unwrap();
        assert!(pids <= 4, "{stdout}");
    };

    // The first process tries each part, and keeps the answer, for its user only.
    assert!(!kept.exists());
    let (code, stdout, stderr) = exec(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(TRIED) && !stderr.contains(TAKEN),
        "{stderr}"
    );
    jailed(&stdout);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // The next takes it, and its command is jailed as fully.
    let (code, stdout, stderr) = exec(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(TAKEN) && !stderr.contains(TRIED),
        "{stderr}"
    );
    jailed(&stdout);

    // Asked to, or as the diagnostic, a process tries each part again.
    let (code, _, stderr) = exec(&[("REASONIX_PROBE", "fresh")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(TRIED), "{stderr}");
    let (code, _, stderr) = w.run_env(
        &["sandbox", "probe", "--workspace", &ws],
        "",
        &[("RUST_LOG", "reasonix=debug")],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(TRIED) && !stderr.contains(TAKEN),
        "{stderr}"
    );

    // A kept file another user could have written is not taken; the answer is kept again.
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (code, _, stderr) = exec(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(TRIED), "{stderr}");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // Nor one kept for another boot, or one that claims more than the machine says it offers.
    let text = std::fs::read_to_string(&kept).unwrap();
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    let forged = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut v = original.clone();
        change(&mut v);
        std::fs::write(&kept, v.to_string()).unwrap();
        let (code, stdout, stderr) = exec(&[]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains(TRIED), "{stderr}");
        jailed(&stdout);
    };
    forged(&|v| v["answers"][0]["machine"]["boot_id"] = "another boot".into());
    forged(&|v| v["answers"][0]["base"]["cgroup_pids"] = w.ws.to_str().unwrap().into());
    forged(&|v| v["answers"][0]["base"]["landlock_abi"] = 99.into());
}

/// Where the state folder cannot be written (as root: a HOME of another user's, as with `sudo
/// -E`), the probe's answer is kept in the user's own folder in the temporary folder instead,
/// and the next process takes it from there, rather than every process trying each part again;
/// that HOME is left as it was.
#[test]
fn the_probes_answer_is_kept_in_the_temporary_folder_when_home_cannot_be_written() {
    if lacks_full_backend() || lacks_namespaces() {
        return;
    }
    let root = nix::unistd::geteuid().is_root();
    if skip_unless(root, "root, to give HOME to another user") {
        return;
    }
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let theirs = w.outside.join("theirs");
    let tmp = w.outside.join("tmp");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let env = [
        ("RUST_LOG", "reasonix=debug"),
        ("HOME", theirs.to_str().unwrap()),
        ("TMPDIR", tmp.to_str().unwrap()),
    ];
    let exec = || {
        w.run_env(
            &["sandbox", "exec", "--workspace", &ws, "--", "true"],
            "",
            &env,
        )
    };
    let (code, _, stderr) = exec();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("each part is tried"), "{stderr}");
    let kept = tmp.join("reasonix-0/probe.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!theirs.join(".local").exists(), "their HOME is left alone");
    let (code, _, stderr) = exec();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the answer kept for this machine is taken")
            && !stderr.contains("each part is tried"),
        "{stderr}"
    );
}

#[test]
fn sandbox_exec_covers_what_the_policy_protects_from_reading_in_every_shape() {
    let w = World::new();
    std::fs::write(w.ws.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(w.ws.join("notes.txt"), "plain\n").unwrap();
    let ws = w.ws.to_str().unwrap().to_owned();
    // In place (the user's own command), read-only and observed: the default policy's
    // `no-secrets` covers `.env` in each, as it does in a bash call's jail; the file beside it
    // reads as it is.
    for shape in [&[][..], &["--read-only"][..], &["--observe"][..]] {
        let mut args = vec!["sandbox", "exec", "--workspace", ws.as_str()];
        args.extend_from_slice(shape);
        args.extend_from_slice(&["--", "sh", "-c", "cat .env; cat notes.txt"]);
        let (code, stdout, stderr) = w.run(&args, "");
        assert!(!stdout.contains("SECRET"), "{shape:?}: {stdout}{stderr}");
        assert_eq!(
            (code, stdout.as_str()),
            (0, "plain\n"),
            "{shape:?}: {stderr}"
        );
    }
    // Written in place, the covered file cannot be written either; the rest of the workspace can.
    let (code, _, stderr) = w.run(
        &[
            "sandbox",
            "exec",
            "--workspace",
            &ws,
            "--",
            "sh",
            "-c",
            "echo made > made.txt; echo leaked > .env",
        ],
        "",
    );
    assert_ne!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(w.ws.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws.join("made.txt")).unwrap(),
        "made\n"
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

    let enforce = plan_for(&w, caps.clone(), |c| c.mode = Enforcement::Enforce);
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

    let best = plan_for(&w, caps, |c| c.mode = Enforcement::BestEffort);
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
fn enforce_without_namespaces_refuses_and_runs_nothing() {
    refuses_without(
        without(|c| c.namespaces = false),
        "mount and PID namespaces",
        "filesystem read-only outside the write roots",
    );
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
        c.namespaces = false;
    });
    let p = plan_for(&w, caps, |_| {});
    assert_eq!(
        p.refusal(),
        Some(
            "sandbox.bash is enforce, and this kernel lacks Landlock filesystem rules, Landlock TCP rules (ABI 4), Landlock scoping (ABI 6), seccomp, mount and PID namespaces; use best_effort to run with less, or a newer kernel"
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
    let p = plan(&w, |c| c.mode = Enforcement::Enforce);
    assert_eq!(p.refusal(), None);
    let r = danger::exec_unjudged(&p, &argv, None, Capture::Bounded(1024)).unwrap();
    assert_eq!((r.exit, r.not_enforced.len()), (Exit::Exited(0), 0));
    assert!(marker.exists());
}

#[test]
fn plan_new_is_computed_for_the_probed_capabilities() {
    let w = World::new();
    let ws = w.ws.canonicalize().unwrap();
    // With network rules, for the whole probe.
    let config = JailConfig {
        network: vec![NetRule::try_from("crates.io:443".to_owned()).unwrap()],
        ..JailConfig::default()
    };
    let new = JailPlan::new(&config, &ws, None);
    assert_eq!(new.capabilities(), jail::capabilities());
    let probed = JailPlan::with_capabilities(&config, &ws, None, jail::capabilities().clone());
    assert_eq!(new.view(), probed.view());
    // Without, the network namespace is neither tried for it nor claimed (issue 12); the rest is
    // the probe's, and so are the words.
    let config = JailConfig::default();
    let new = JailPlan::new(&config, &ws, None);
    let no_netns = without(|c| c.net_namespace = false);
    assert_eq!(new.capabilities(), &no_netns);
    let probed = JailPlan::with_capabilities(&config, &ws, None, jail::capabilities().clone());
    assert_eq!(new.view(), probed.view());
}

/// Issue 12: `sandbox exec` runs its command in the cgroups its probe made to try their
/// parents (the first two its process made: `reasonix-<pid>-0`, `-1`), with the plan's limits
/// (the memory trial's 64 MiB raised to the default 4 GiB), instead of removing them and making
/// two more.
#[test]
fn sandbox_exec_runs_in_the_cgroups_its_probe_made_with_the_plans_limits() {
    let caps = jail::capabilities();
    if lacks_full_backend()
        || skip_unless(
            caps.cgroup_pids.is_some() && caps.cgroup_memory.is_some(),
            "pids and memory cgroups for a run",
        )
    {
        return;
    }
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    // Each cgroup of the command, and the limit files there (v1: one hierarchy per controller;
    // v2: both in one).
    let script = r#"while IFS=: read -r _ controllers path; do
  case ",$controllers," in
    *,pids,*) echo "pids $path $(cat /sys/fs/cgroup/pids$path/pids.max)" ;;
    *,memory,*) echo "memory $path $(cat /sys/fs/cgroup/memory$path/memory.limit_in_bytes)" ;;
    ,,) [ -e /sys/fs/cgroup$path/pids.max ] && echo "pids $path $(cat /sys/fs/cgroup$path/pids.max)"
        [ -e /sys/fs/cgroup$path/memory.max ] && echo "memory $path $(cat /sys/fs/cgroup$path/memory.max)" ;;
  esac
done < /proc/self/cgroup
true"#;
    let (code, stdout, stderr) = w.run(
        &[
            "sandbox",
            "exec",
            "--workspace",
            &ws,
            "--",
            "bash",
            "-c",
            script,
        ],
        "",
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let line = |what: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no {what} cgroup: {stdout}"))
            .split(' ')
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (pids, memory) = (line("pids "), line("memory "));
    // The first cgroup the process made is its pids trial; the plan keeps a whole set or none,
    // so the memory cgroup is its trial's too (numbered after the parents it tried).
    assert!(pids[1].ends_with("-0"), "{stdout}");
    let made_by = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or_default().to_owned();
        name.rsplit_once('-').map(|(process, _)| process.to_owned())
    };
    assert_eq!(made_by(&pids[1]), made_by(&memory[1]), "{stdout}");
    assert_eq!(pids[2], "512", "{stdout}");
    assert_eq!(memory[2], (4u64 << 30).to_string(), "{stdout}");
    // And they are gone with the process.
    for (controller, path) in [("pids", &pids[1]), ("memory", &memory[1])] {
        for root in [
            format!("/sys/fs/cgroup/{controller}"),
            "/sys/fs/cgroup".into(),
        ] {
            let left = Path::new(&root).join(path.trim_start_matches('/'));
            assert!(!left.exists(), "{} is left behind", left.display());
        }
    }
}

/// The network namespace a process of the jail is in, as `/proc/self/ns/net` names it
/// (`net:[inode]`).
fn jailed_netns(plan: &JailPlan) -> String {
    let r = sh(plan, "readlink /proc/self/ns/net");
    assert_eq!(r.exit, Exit::Exited(0), "{r:?}");
    r.stdout.trim().to_owned()
}

/// Issue 12: a plan without network rules does not try a network namespace. Nothing claims one
/// for it — not its capabilities, backend or words — and its run is in the host's, where
/// Landlock and seccomp refuse TCP and every other socket (`tcp_connect_to_a_live_listener…`,
/// `udp_and_raw_sockets_are_refused_with_eperm`).
#[test]
fn without_network_rules_no_network_namespace_is_tried_or_claimed_and_a_run_has_none() {
    if lacks_full_backend() {
        return;
    }
    let w = World::new();
    let ws = w.ws.canonicalize().unwrap();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let p = JailPlan::new(&JailConfig::default(), &ws, home.as_deref());
    assert!(!p.capabilities().net_namespace);
    let view = p.view();
    assert!(
        !view.backend.iter().any(|b| b.contains("network")),
        "{view:?}"
    );
    assert!(
        !view
            .enforced
            .iter()
            .any(|e| e.contains("network namespace")),
        "{view:?}"
    );
    assert!(
        view.enforced
            .iter()
            .any(|e| e == "TCP connect and bind: refused (Landlock)"),
        "{view:?}"
    );
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_eq!(jailed_netns(&p), host.display().to_string());
}

/// Issue 12: a plan with network rules still tries the network namespace, claims it, and each
/// run gets one of its own (here: as root, where one can be made).
#[test]
fn with_network_rules_the_network_namespace_is_tried_claimed_and_each_run_has_its_own() {
    if lacks_full_backend()
        || skip_unless(
            jail::capabilities().net_namespace,
            "a network namespace per run (CAP_SYS_ADMIN)",
        )
    {
        return;
    }
    let w = World::new();
    let ws = w.ws.canonicalize().unwrap();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let config = JailConfig {
        network: vec![NetRule::try_from("crates.io:443".to_owned()).unwrap()],
        ..JailConfig::default()
    };
    let p = JailPlan::new(&config, &ws, home.as_deref());
    assert!(p.capabilities().net_namespace);
    let view = p.view();
    assert!(
        view.backend.iter().any(|b| b == "network-namespace"),
        "{view:?}"
    );
    assert!(
        view.enforced
            .iter()
            .any(|e| e.starts_with("network by host: a network namespace of the run's own")),
        "{view:?}"
    );
    let host = std::fs::read_link("/proc/self/ns/net")
        .unwrap()
        .display()
        .to_string();
    for _ in 0..2 {
        let run = jailed_netns(&p);
        assert!(run.starts_with("net:[") && run != host, "{run}");
    }
}

/// The lines of the plan that name each part issue 11 added, as this machine enforces them: the
/// read-only world, the covered secrets, the PID namespace, the descriptors, the memory limit
/// with its mechanism, the run's own TMPDIR and the host's files.
fn closed_jail_words(caps: &Capabilities) -> Vec<&'static str> {
    vec![
        "filesystem read-only outside the write roots and the run's TMPDIR (mount namespace)",
        "system secrets covered by an empty file or folder (mount namespace)",
        "processes: a PID namespace of the run's own, so /proc shows its processes only",
        "descriptors: the command gets standard input from /dev/null, standard output and error, and no other descriptor (close_range)",
        if caps.cgroup_memory.is_some() {
            "memory: at most 4294967296 bytes for the whole run, swap included (memory cgroup)"
        } else {
            "memory: at most 4294967296 bytes of address space per process (RLIMIT_AS;"
        },
        "TMPDIR: the run's own, out of reach of every other run (Landlock grants each run its own folder; the mount namespace hides the others)",
        "the host's own files inside the write roots (record, settings, policy and data files that exist when a run starts) bound read-only over themselves",
    ]
}

/// Whether some line of `list` (a JSON array of strings) starts with `words`.
fn lists(list: &serde_json::Value, words: &str) -> bool {
    list.as_array().is_some_and(|l| {
        l.iter()
            .any(|e| e.as_str().is_some_and(|e| e.starts_with(words)))
    })
}

#[test]
fn sandbox_probe_and_check_list_each_part_of_the_closed_jail_as_enforced() {
    if lacks_full_backend() {
        return;
    }
    let w = World::new();
    w.file("reasonix.yaml", "max_steps: 3\n");
    let ws = w.ws.to_str().unwrap();
    let (code, probe, stderr) = w.run(&["sandbox", "probe", "--workspace", ws], "");
    assert_eq!(code, 0, "{stderr}");
    let probe: serde_json::Value = serde_json::from_str(&probe).unwrap();
    let caps = jail::capabilities();
    let (code, check) = w.check(
        &serde_json::json!({"name": "bash", "arguments": {"command": "ls"}}),
        &[],
    );
    assert_eq!(code, 0, "{check}");
    // A dry run shows the very plan `sandbox probe` prints, and how this call runs in it
    // (issue 25: `ls` is read-only).
    let mut shown = check["sandbox"].clone();
    assert_eq!(shown["run"], "read_only", "{check}");
    shown.as_object_mut().unwrap().remove("run");
    assert_eq!(shown, probe["plan"], "{check}");
    let plan = &probe["plan"];
    for words in closed_jail_words(caps) {
        assert!(lists(&plan["enforced"], words), "{words}: {plan}");
        assert!(!lists(&plan["not_enforced"], words), "{words}: {plan}");
    }
    for backend in ["mount-namespace", "pid-namespace"] {
        assert!(lists(&plan["backend"], backend), "{plan}");
    }
    assert_eq!(
        lists(&plan["backend"], "memory-cgroup"),
        caps.cgroup_memory.is_some()
    );
    assert_eq!(plan["limits"]["memory_bytes"], 4u64 << 30);
    assert_eq!(plan["refusal"], serde_json::Value::Null);
}

#[test]
fn where_namespaces_cannot_be_had_probe_and_check_say_so_and_enforce_refuses_in_the_plans_words() {
    // Not faked: Reasonix itself runs inside the jail, whose seccomp filter refuses namespaces
    // and whose read-only world refuses cgroups, so its own probe finds them missing.
    if lacks_full_backend() {
        return;
    }
    let w = World::new();
    let reasonix = env!("CARGO_BIN_EXE_reasonix");
    let bin = Path::new(reasonix).parent().unwrap().display().to_string();
    let outer = w.policy(
        "outer.yaml",
        &format!("version: 1\nsandbox:\n  bash: best_effort\n  read_roots: [\"{bin}\"]\n"),
    );
    w.file("best.yaml", "version: 1\nsandbox:\n  bash: best_effort\n");
    let ws = w.ws.to_str().unwrap();
    let best = w.ws.join("best.yaml").display().to_string();
    let call = r#"{"name":"bash","arguments":{"command":"ls"}}"#;
    let inside = |args: &[&str]| {
        let mut all = vec![
            "sandbox",
            "exec",
            "--workspace",
            ws,
            "--policy",
            &outer,
            "--",
            reasonix,
        ];
        all.extend_from_slice(args);
        w.run(&all, "")
    };
    let refusal = "sandbox.bash is enforce, and this kernel lacks mount and PID namespaces; use best_effort to run with less, or a newer kernel";

    // `sandbox probe` inside: the machine lacks them, and the plan (enforce) refuses.
    let (code, probe, stderr) = inside(&["sandbox", "probe", "--workspace", ws]);
    assert_eq!(code, 0, "{stderr}");
    let probe: serde_json::Value = serde_json::from_str(&probe).unwrap();
    assert_eq!(probe["machine"]["namespaces"], false, "{probe}");
    assert_eq!(probe["machine"]["cgroup_memory"], serde_json::Value::Null);
    assert_eq!(probe["plan"]["refusal"], refusal, "{probe}");
    // `check`: a bash call is blocked at the sandbox stage, in the same words.
    let (code, check, stderr) = inside(&["check", "--format", "json", "--workspace", ws, call]);
    assert_eq!(code, 20, "{stderr}");
    let check: serde_json::Value = serde_json::from_str(&check).unwrap();
    assert_eq!(
        (&check["verdict"], &check["stage"]),
        (&"deny".into(), &"sandbox".into())
    );
    assert_eq!(check["reasons"][0], refusal, "{check}");
    let mut shown = check["sandbox"].clone();
    shown.as_object_mut().unwrap().remove("run");
    assert_eq!(shown, probe["plan"]);
    // `sandbox exec`: refused, nothing runs.
    let (code, _, stderr) = inside(&[
        "sandbox",
        "exec",
        "--workspace",
        ws,
        "--",
        "touch",
        "ran.txt",
    ]);
    assert_eq!(
        (code, stderr.trim()),
        (126, format!("reasonix: {refusal}").as_str())
    );
    assert!(!w.ws.join("ran.txt").exists());

    // best_effort: each part is listed as it stands without namespaces, and the run goes on.
    let (code, check, stderr) = inside(&[
        "check",
        "--format",
        "json",
        "--workspace",
        ws,
        "--policy",
        &best,
        call,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let check: serde_json::Value = serde_json::from_str(&check).unwrap();
    let plan = &check["sandbox"];
    assert_eq!(plan["refusal"], serde_json::Value::Null, "{plan}");
    for words in [
        "mount and PID namespaces: not available on this kernel",
        "process visibility: without a PID namespace, /proc shows every process on this machine",
        "metadata inside the write roots: without a mount namespace",
        "the host's own files inside the write roots: without a mount namespace only the gate keeps a command from changing them",
    ] {
        assert!(lists(&plan["not_enforced"], words), "{words}: {plan}");
    }
    for words in [
        "metadata: chmod, chown, utime and extended attribute calls refused everywhere (seccomp;",
        "descriptors: the command gets standard input from /dev/null",
        "memory: at most 4294967296 bytes of address space per process (RLIMIT_AS;",
        "TMPDIR: the run's own, out of reach of every other run (Landlock grants each run its own folder)",
    ] {
        assert!(lists(&plan["enforced"], words), "{words}: {plan}");
    }
    for words in [
        "filesystem read-only outside",
        "processes: a PID namespace",
        "system secrets covered",
    ] {
        assert!(!lists(&plan["enforced"], words), "{words}: {plan}");
    }
    assert!(!lists(&plan["backend"], "mount-namespace"), "{plan}");
    // A Reasonix inside the jail cannot take a lease on the outer one's workspace (its
    // `.reasonix` is read-only there, and the outer one holds the workspace): it refuses
    // rather than run unleased (issue 28). On a workspace of its own it runs, best effort.
    let (code, _, stderr) = inside(&[
        "sandbox",
        "exec",
        "--workspace",
        ws,
        "--policy",
        &best,
        "--",
        "touch",
        "ran.txt",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cannot take the write lease"), "{stderr}");
    assert!(!w.ws.join("ran.txt").exists());
    std::fs::create_dir(w.ws.join("sub")).unwrap();
    let sub = w.ws.join("sub").display().to_string();
    let (code, _, stderr) = inside(&[
        "sandbox",
        "exec",
        "--workspace",
        &sub,
        "--policy",
        &best,
        "--",
        "touch",
        "ran.txt",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(w.ws.join("sub/ran.txt").exists());
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
    let off = cap_sets(&sh(&plan(&w, |c| c.mode = Enforcement::Off), READ_CAPS).stdout);
    assert!(off["CapBnd"] != 0 && off["CapEff"] != 0, "{off:?}");

    let p = plan(&w, |c| c.mode = Enforcement::BestEffort);
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
        c.mode = Enforcement::BestEffort
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
        c.mode = Enforcement::Enforce
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
        c.mode = Enforcement::BestEffort;
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
        c.mode = Enforcement::BestEffort;
        c.limits.processes = 77;
    });
    let r = sh(&p, &format!("{limits}; cat /proc/self/cgroup"));
    assert!(r.not_enforced.is_empty(), "{:?}", r.not_enforced);
    assert!(!r.stdout.contains(" 77 "), "{}", r.stdout);
    assert!(r.stdout.contains("reasonix-"), "{}", r.stdout);
}

// ---------------------------------------------------------------------------------------------
// Issue 11: what Landlock does not mediate (metadata), inherited descriptors, memory, `/proc`,
// the host's own files inside the workspace, and each run's TMPDIR.

/// A Python script that tries chmod, chown (to its own ids), utime and setxattr on `argv[1]`
/// and prints, for each, `ok` or the errno.
const METADATA: &str = r#"
import os, sys
p = sys.argv[1]
for name, f in [
    ("chmod", lambda: os.chmod(p, 0o777)),
    ("chown", lambda: os.chown(p, os.getuid(), os.getgid())),
    ("utime", lambda: os.utime(p, (0, 0))),
    ("setxattr", lambda: os.setxattr(p, "user.reasonix", b"1")),
]:
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, e.errno)
"#;

/// What metadata a file has: mode, owner, modification time, and its `user.reasonix` attribute.
fn metadata_of(path: &Path) -> (u32, u32, i64, Option<Vec<u8>>) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    let out = std::process::Command::new(python())
        .args([
            "-c",
            "import os,sys\ntry: print(os.getxattr(sys.argv[1], 'user.reasonix').hex())\nexcept OSError: print('none')",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let xattr = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (
        m.mode(),
        m.uid(),
        m.mtime(),
        (xattr != "none").then(|| xattr.into_bytes()),
    )
}

/// Runs the metadata script on `target` under `plan`; one line per call.
fn try_metadata(plan: &JailPlan, w: &World, target: &Path) -> String {
    std::fs::write(w.root.join("metadata.py"), METADATA).unwrap();
    let script = w.root.join("metadata.py");
    let r = danger::exec_unjudged(
        plan,
        &[
            python(),
            script.display().to_string(),
            target.display().to_string(),
        ],
        Some(Duration::from_secs(20)),
        Capture::Bounded(64 * 1024),
    )
    .unwrap();
    assert_eq!(r.exit, Exit::Exited(0), "{r:?}");
    r.stdout
}

/// A file with a known mode and an old modification time.
fn plain_file(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, "x").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(old)
        .unwrap();
}

#[test]
fn chmod_chown_utime_and_setxattr_outside_the_write_roots_fail_and_change_nothing() {
    if lacks_landlock() || lacks_namespaces() {
        return;
    }
    let w = World::new();
    // The root folder of the script: readable, so the jailed Python can open it.
    let p = plan(&w, |c| c.read_roots.push(w.root.display().to_string()));
    let outside = w.outside.join("victim.txt");
    plain_file(&outside);
    let before = metadata_of(&outside);
    // The control: Reasonix's own rights change all four (on a twin, so the victim stays as it
    // was).
    let twin = w.outside.join("twin.txt");
    plain_file(&twin);
    let off = plan_for(&w, jail::capabilities().clone(), |c| {
        c.mode = Enforcement::Off;
        c.read_roots.push(w.root.display().to_string());
    });
    assert_eq!(
        try_metadata(&off, &w, &twin),
        "chmod ok\nchown ok\nutime ok\nsetxattr ok\n"
    );
    assert_ne!(metadata_of(&twin), before);

    // Jailed: each fails with EROFS (30), and nothing changed.
    assert_eq!(
        try_metadata(&p, &w, &outside),
        "chmod 30\nchown 30\nutime 30\nsetxattr 30\n"
    );
    assert_eq!(metadata_of(&outside), before);
    // And with the tools a shell command uses.
    let r = sh(
        &p,
        &format!(
            "chmod 777 {0}; touch -d 2000-01-01 {0}; chown $(id -u) {0}; echo done",
            outside.display()
        ),
    );
    assert!(
        r.stdout == "done\n" && r.stderr.matches("Read-only file system").count() == 3,
        "{r:?}"
    );
    assert_eq!(metadata_of(&outside), before);
}

#[test]
fn chmod_chown_utime_and_setxattr_inside_the_workspace_still_work() {
    if lacks_landlock() || lacks_namespaces() {
        return;
    }
    let w = World::new();
    let p = plan(&w, |c| c.read_roots.push(w.root.display().to_string()));
    let inside = w.ws.join("script.sh");
    plain_file(&inside);
    assert_eq!(
        try_metadata(&p, &w, &inside),
        "chmod ok\nchown ok\nutime ok\nsetxattr ok\n"
    );
    // `chmod +x script.sh` is everyday work.
    plain_file(&inside);
    let r = sh(
        &p,
        "printf 'echo ran' > script.sh && chmod +x script.sh && ./script.sh",
    );
    assert_eq!(r.stdout, "ran\n", "{r:?}");
}

#[test]
fn without_namespaces_best_effort_refuses_metadata_everywhere_and_says_so() {
    // The fallback, on this kernel, with namespaces taken away: seccomp cannot tell the
    // workspace apart, so it refuses the calls everywhere, and the plan says what that costs.
    if lacks_landlock() || lacks_seccomp() {
        return;
    }
    let w = World::new();
    let p = plan_for(&w, without(|c| c.namespaces = false), |c| {
        c.mode = Enforcement::BestEffort;
        c.read_roots.push(w.root.display().to_string());
    });
    assert!(
        p.enforced().contains(&"metadata: chmod, chown, utime and extended attribute calls refused everywhere (seccomp; without a mount namespace it cannot tell the write roots apart)".to_owned()),
        "{:?}",
        p.enforced()
    );
    for words in [
        "mount and PID namespaces: not available on this kernel",
        "metadata inside the write roots: without a mount namespace, chmod, chown, utime and extended attribute changes are refused there too (`chmod +x` fails)",
        "process visibility: without a PID namespace, /proc shows every process on this machine, command lines included",
    ] {
        assert!(
            p.not_enforced().contains(&words.to_owned()),
            "{words}: {:?}",
            p.not_enforced()
        );
    }
    assert!(
        !p.enforced()
            .iter()
            .any(|e| e.contains("namespace of the run's own"))
    );
    for file in [w.outside.join("victim.txt"), w.ws.join("script.sh")] {
        plain_file(&file);
        let before = metadata_of(&file);
        assert_eq!(
            try_metadata(&p, &w, &file),
            "chmod 1\nchown 1\nutime 1\nsetxattr 1\n",
            "{}",
            file.display()
        );
        assert_eq!(metadata_of(&file), before);
    }
}

#[test]
fn a_descriptor_to_an_outside_file_passed_as_9_to_sandbox_exec_cannot_be_written() {
    let w = World::new();
    let log = w.outside.join("outside.log");
    std::fs::write(&log, "").unwrap();
    let reasonix = env!("CARGO_BIN_EXE_reasonix");
    let write_9 = "echo leak >&9; echo rc=$?";
    // The control: a command that inherits descriptor 9 appends through it.
    let out = std::process::Command::new("bash")
        .args([
            "-c",
            &format!("exec 9>>{}; bash -c '{write_9}'", log.display()),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rc=0\n");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "leak\n");
    std::fs::write(&log, "").unwrap();
    // Through the jail, descriptor 9 is gone.
    let out = std::process::Command::new("bash")
        .args([
            "-c",
            &format!(
                "exec 9>>{}; {reasonix} sandbox exec --workspace {} -- bash -c '{write_9}; ls /proc/self/fd'",
                log.display(),
                w.ws.display()
            ),
        ])
        .env("HOME", &w.home)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.starts_with("rc=1\n") && stderr.contains("Bad file descriptor"),
        "{stdout}{stderr}"
    );
    // Only 0, 1, 2 and the folder `ls` itself opened.
    assert_eq!(&stdout["rc=1\n".len()..], "0\n1\n2\n3\n", "{stdout}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "");
}

#[test]
fn the_bash_tool_gets_dev_null_as_input_and_none_of_the_hosts_descriptors() {
    use std::os::fd::AsRawFd;
    if lacks_landlock() {
        return;
    }
    let w = World::new();
    // A descriptor of the host process that is not close-on-exec, as a library might leave one.
    let held = std::fs::File::create(w.outside.join("host.log")).unwrap();
    let fd = held.as_raw_fd();
    nix::fcntl::fcntl(
        &held,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
    )
    .unwrap();
    let script =
        format!("readlink /proc/self/fd/0; test -e /proc/self/fd/{fd} && echo leaked; echo end");
    // The control: a child of the host inherits it.
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("leaked"));

    let set = PolicySet::from_yaml("p.yaml", "version: 1\ndefaults:\n  writer: allow\n").unwrap();
    let gate = common::gate_over(Registry::with_builtins(), &set, &w.ws, Posture::Interactive);
    let call = serde_json::json!({"name": "bash", "arguments": {"command": script}});
    let admitted = match gate.admit_text(&call.to_string()) {
        Judgement::Allowed(a) => a,
        Judgement::Ask(p) => p.approve(),
        Judgement::Refused(a) => panic!("{:?}", a.reasons),
    };
    let out = common::execute(admitted).unwrap();
    assert_eq!(
        out.text, "exit status 0\n--- stdout ---\n/dev/null\nend\n",
        "{}",
        out.text
    );
    drop(held);
}

/// Runs Python under `plan` to fill `n` bytes (touching every page); it prints `allocated N`
/// when it could. Slow on this VM (filling 6 GiB takes over 10 s), so with a wall clock of its
/// own: the plan's (120 s by default).
fn allocate(plan: &JailPlan, n: u64) -> RunResult {
    let script = format!(
        "{} -c \"b = b'x' * {n}; print('allocated', len(b))\" 2>&1 | tail -1",
        python()
    );
    danger::exec_unjudged(
        plan,
        &["bash".into(), "-c".into(), script],
        None,
        Capture::Bounded(64 * 1024),
    )
    .unwrap()
}

#[test]
fn a_6_gib_allocation_fails_under_the_default_memory_limit_and_100_mib_works() {
    if lacks_landlock() {
        return;
    }
    let (big, small) = (6u64 << 30, 100u64 << 20);
    let w = World::new();
    // The control: with the jail off, 6 GiB are had.
    let off = plan(&w, |c| c.mode = Enforcement::Off);
    let r = allocate(&off, big);
    assert_eq!(r.stdout, format!("allocated {big}\n"), "{r:?}");
    // Under the default limit, with each mechanism: the memory cgroup (the process is killed
    // when the run's memory reaches the limit) and RLIMIT_AS (the allocation fails).
    let mut mechanisms = vec![(
        without(|c| c.cgroup_memory = None),
        "memory: at most 4294967296 bytes of address space per process (RLIMIT_AS; no memory cgroup can be made, so a run of several processes may use more in all)",
    )];
    if !skip_unless(
        jail::capabilities().cgroup_memory.is_some(),
        "a memory cgroup (the run's memory limit)",
    ) {
        mechanisms.push((
            jail::capabilities().clone(),
            "memory: at most 4294967296 bytes for the whole run, swap included (memory cgroup)",
        ));
    }
    for (caps, words) in mechanisms {
        let p = plan_for(&w, caps, |c| c.mode = Enforcement::BestEffort);
        assert_eq!(p.limits().memory_bytes, 4 << 30);
        assert!(
            p.enforced().contains(&words.to_owned()),
            "{:?}",
            p.enforced()
        );
        let r = allocate(&p, big);
        assert!(!r.stdout.contains("allocated"), "{words}: {r:?}");
        let r = allocate(&p, small);
        assert_eq!(r.stdout, format!("allocated {small}\n"), "{words}: {r:?}");
    }
}

#[test]
fn inside_the_jail_proc_shows_only_the_jails_processes() {
    if lacks_landlock() || lacks_namespaces() {
        return;
    }
    let w = World::new();
    let me = std::process::id();
    // Bash lists /proc itself (a glob, no process of its own), then the pids it knows: its own
    // inside and the background sleep's.
    let script = format!(
        "sleep 30.4242 & echo /proc/[0-9]*; echo /proc/1 /proc/$!; tr '\\0' ' ' < /proc/1/cmdline; echo; test -e /proc/{me} && echo sees-reasonix; kill %1"
    );
    // The control: without a PID namespace, the jail sees Reasonix and the machine's init.
    let p = plan_for(&w, without(|c| c.namespaces = false), |c| {
        c.mode = Enforcement::BestEffort
    });
    let r = sh(&p, &script);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].split(' ').count() > 3, "{r:?}");
    assert!(!lines[2].contains("30.4242"), "{r:?}");
    assert_eq!(lines.get(3), Some(&"sees-reasonix"), "{r:?}");
    // Jailed: bash, pid 1 with this script as its command line, and the sleep; nothing else.
    let p = plan(&w, |_| {});
    let r = sh(&p, &script);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], lines[1], "{r:?}");
    assert!(lines[2].starts_with("bash -c sleep 30.4242 &"), "{r:?}");
    assert_eq!(lines.len(), 3, "{r:?}");
}

/// Finds, from outside, the file `a` in the TMPDIR a run printed: its own, or — inside a mount
/// namespace, where the run's folder is bound over the folder of every run's — `tmp` in one of
/// the run folders there.
fn real_tmp_file(printed: &Path) -> std::path::PathBuf {
    if printed.join("a").exists() {
        return printed.join("a");
    }
    let runs = printed.parent().unwrap();
    std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path().join("tmp/a"))
        .find(|a| a.exists())
        .unwrap_or_else(|| panic!("no run folder with `tmp/a` under {}", runs.display()))
}

/// Run A writes a secret to its TMPDIR and waits; run B, of the same plan, at the same time, tries
/// to read it and to write beside it. Returns B's output and whether B's file appeared.
fn tmpdir_race(p: &JailPlan, w: &World) -> (RunResult, bool) {
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            sh(
                p,
                "echo SECRET > $TMPDIR/a; echo $TMPDIR > tmpdir.txt; sleep 3",
            )
        });
        let printed = w.ws.join("tmpdir.txt");
        let started = Instant::now();
        while std::fs::read_to_string(&printed).map_or(true, |t| !t.ends_with('\n')) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "run A did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let printed = std::fs::read_to_string(&printed).unwrap();
        let file = real_tmp_file(Path::new(printed.trim()));
        let dir = file.parent().unwrap().to_path_buf();
        let b = sh(
            p,
            &format!(
                "cat {0}/a; echo planted > {0}/b; ls {0}; ls $TMPDIR",
                dir.display()
            ),
        );
        let planted = dir.join("b").exists();
        let _ = a.join();
        (b, planted)
    })
}

#[test]
fn two_concurrent_runs_cannot_read_or_write_each_others_tmpdir() {
    if lacks_landlock() {
        return;
    }
    // The control: with the jail off, B reads A's secret and writes beside it.
    let w = World::new();
    let off = plan(&w, |c| c.mode = Enforcement::Off);
    let (b, planted) = tmpdir_race(&off, &w);
    assert!(b.stdout.contains("SECRET") && planted, "{b:?}");
    // Jailed, with a mount namespace and without (Landlock grants each run its own folder).
    for caps in with_and_without_namespaces() {
        let w = World::new();
        let p = plan_for(&w, caps, |c| c.mode = Enforcement::BestEffort);
        assert!(
            p.enforced()
                .iter()
                .any(|e| e.starts_with("TMPDIR: the run's own")),
            "{:?}",
            p.enforced()
        );
        let (b, planted) = tmpdir_race(&p, &w);
        assert!(!b.stdout.contains("SECRET") && !planted, "{b:?}");
        assert!(
            b.stdout.is_empty(),
            "B's own TMPDIR is empty, A's unseen: {b:?}"
        );
    }
}

#[test]
fn a_runs_tmpdir_is_new_and_empty_whatever_the_run_before_it_left_there() {
    // A plan keeps the TMPDIR of a finished run for its next one (making a folder is slow on
    // some filesystems); the next run must find nothing of the last.
    if lacks_landlock() {
        return;
    }
    for caps in with_and_without_namespaces() {
        let w = World::new();
        let reused = caps.cgroup_pids.is_some() && !caps.namespaces;
        let p = plan_for(&w, caps, |c| c.mode = Enforcement::BestEffort);
        // (Without namespaces, seccomp refuses `chmod`.)
        let leave = "cd $TMPDIR && echo secret > a && mkdir -p d/e && echo f > d/e/f && \
                     ln -s /etc l && { chmod 0 d; chmod 777 .; } 2>/dev/null; echo left";
        let look = "ls -A $TMPDIR; stat -c %a $TMPDIR; echo looked";
        let mut folders = std::collections::BTreeSet::new();
        for _ in 0..3 {
            let r = sh(&p, &format!("echo $TMPDIR; {leave}"));
            let (folder, rest) = r.stdout.split_once('\n').unwrap();
            assert_eq!(rest, "left\n", "{r:?}");
            folders.insert(folder.to_owned());
            let r = sh(&p, look);
            assert_eq!(r.stdout, "700\nlooked\n", "{r:?}");
        }
        // Outside a mount namespace the folder's own path shows: with cgroups, one kept.
        if reused {
            assert_eq!(folders.len(), 1, "{folders:?}");
        }
    }
}

#[test]
fn under_off_a_runs_tmpdir_is_kept_for_the_next_run_emptied() {
    // Issue 11: with the jail off, no cgroup shows the run's processes gone, yet the TMPDIR is
    // kept (nothing is confined, so a process left behind reaches any folder anyway): one folder
    // for every run, found empty and 0700 each time. On every machine.
    let w = World::new();
    let p = plan(&w, |c| c.mode = Enforcement::Off);
    let leave = "cd $TMPDIR && echo secret > a && mkdir -p d/e && echo f > d/e/f && \
                 ln -s /etc l && chmod 0 d && chmod 777 . && echo left";
    let look = "ls -A $TMPDIR; stat -c %a $TMPDIR; echo looked";
    let mut folders = std::collections::BTreeSet::new();
    for _ in 0..3 {
        let r = sh(&p, &format!("echo $TMPDIR; {leave}"));
        let (folder, rest) = r.stdout.split_once('\n').unwrap();
        assert_eq!(rest, "left\n", "{r:?}");
        folders.insert(folder.to_owned());
        let r = sh(&p, &format!("echo $TMPDIR; {look}"));
        let (folder, rest) = r.stdout.split_once('\n').unwrap();
        assert_eq!(rest, "700\nlooked\n", "{r:?}");
        folders.insert(folder.to_owned());
    }
    assert_eq!(folders.len(), 1, "{folders:?}");
    // Kept between runs: the run's folder, which holds its TMPDIR (and HOME) while it runs.
    let kept = Path::new(folders.first().unwrap()).parent().unwrap();
    assert!(std::fs::read_dir(kept).is_ok());
}

#[test]
fn the_hosts_files_in_the_workspace_survive_find_delete_and_a_script_in_the_jail() {
    if lacks_landlock() || lacks_namespaces() {
        return;
    }
    let w = World::new();
    let files = [
        ".reasonix/record.jsonl",
        "reasonix.yaml",
        "config/policies/p.yaml",
    ];
    for f in files {
        w.file(f, "HOST\n");
    }
    w.file("notes.txt", "scratch\n");
    let host = reasonix::HostFiles::for_workspace(&w.ws.canonicalize().unwrap())
        .with_files([w.ws.join("config/policies/p.yaml")]);
    let p = plan(&w, |_| {}).with_host_files(host.all());
    assert!(
        p.enforced()
            .iter()
            .any(|e| e.starts_with("the host's own files inside the write roots")),
        "{:?}",
        p.enforced()
    );
    let attack = "rm -rf .reasonix; rm -f reasonix.yaml; echo forged > config/policies/p.yaml; \
                  mv config config.old; mv config/policies elsewhere; \
                  echo forged >> .reasonix/record.jsonl; find . -delete; echo end";
    // The control: the same script, unjailed, on a copy, destroys them all.
    let copy = World::new();
    for f in files {
        copy.file(f, "HOST\n");
    }
    std::process::Command::new("bash")
        .args(["-c", attack])
        .current_dir(&copy.ws)
        .output()
        .unwrap();
    assert!(files.iter().all(|f| !copy.ws.join(f).exists()));

    let r = sh(&p, attack);
    assert!(r.stdout.ends_with("end\n"), "{r:?}");
    for f in files {
        assert_eq!(
            std::fs::read_to_string(w.ws.join(f)).unwrap(),
            "HOST\n",
            "{f}"
        );
    }
    // Everything else went: the command did run.
    assert!(!w.ws.join("notes.txt").exists());
    // The host itself still writes its record.
    std::fs::OpenOptions::new()
        .append(true)
        .open(w.ws.join(".reasonix/record.jsonl"))
        .unwrap()
        .write_all(b"line\n")
        .unwrap();
}

#[test]
fn as_another_user_the_namespaces_are_made_in_a_user_namespace() {
    // Reasonix run by `nobody`: no CAP_SYS_ADMIN, so the mount and PID namespaces come inside a
    // user namespace of its own; the same attacks fail.
    let caps = jail::capabilities();
    if skip_unless(caps.uid == 0, "root, to start Reasonix as nobody") {
        return;
    }
    let Some(setpriv) = setpriv() else { return };
    let w = World::new();
    for d in [&w.root, &w.ws, &w.outside] {
        nix::unistd::chown(
            d.as_path(),
            Some(nix::unistd::Uid::from_raw(65534)),
            Some(nix::unistd::Gid::from_raw(65534)),
        )
        .unwrap();
    }
    std::fs::set_permissions(&w.root, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let as_nobody = |args: &[&str]| {
        let out = std::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_reasonix"))
            .args(args)
            .env("HOME", &w.home)
            .current_dir(&w.ws)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let ws = w.ws.to_str().unwrap();
    let (code, probe, stderr) = as_nobody(&["sandbox", "probe", "--workspace", ws]);
    assert_eq!(code, Some(0), "{stderr}");
    let probe: serde_json::Value = serde_json::from_str(&probe).unwrap();
    if skip_unless(
        probe["machine"]["namespaces"] == true,
        "unprivileged user namespaces (the kernel or a security module refuses them)",
    ) {
        return;
    }
    assert_eq!(probe["machine"]["user_namespace"], true, "{probe}");
    assert_eq!(probe["plan"]["refusal"], serde_json::Value::Null, "{probe}");
    // A writer's run is observed on an overlay in the user namespace too (overlayfs refused the
    // root's `redirect_dir=off` beside `userxattr`, so no user but root had one).
    if !skip_unless(
        probe["machine"]["overlay"] == true,
        "overlayfs in a user namespace (kernel 5.11 or later)",
    ) {
        // A folder replaced whole: opaque in the upper layer (`user.overlay.opaque` here).
        std::fs::create_dir(w.ws.join("sub")).unwrap();
        std::fs::write(w.ws.join("sub/old"), "old\n").unwrap();
        for p in [w.ws.join("sub"), w.ws.join("sub/old")] {
            let nobody = (
                nix::unistd::Uid::from_raw(65534),
                nix::unistd::Gid::from_raw(65534),
            );
            nix::unistd::chown(&p, Some(nobody.0), Some(nobody.1)).unwrap();
        }
        let (code, _, stderr) = as_nobody(&[
            "sandbox",
            "exec",
            "--workspace",
            ws,
            "--observe",
            "--",
            "sh",
            "-c",
            "echo made > made.txt; mkdir d && echo in > d/f && mv d e; rm -r sub && mkdir sub && echo new > sub/new",
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!w.ws.join("sub/old").exists(), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(w.ws.join("sub/new")).unwrap(),
            "new\n"
        );
        assert!(stderr.contains("made.txt"), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(w.ws.join("made.txt")).unwrap(),
            "made\n"
        );
        assert_eq!(std::fs::read_to_string(w.ws.join("e/f")).unwrap(), "in\n");
        assert!(!w.ws.join("d").exists());
    }
    let outside = w.outside.join("x");
    let script = format!(
        "id -u; echo /proc/[0-9]*; echo in > in.txt && cat in.txt; echo out > {}",
        outside.display()
    );
    let (code, stdout, stderr) = as_nobody(&[
        "sandbox",
        "exec",
        "--workspace",
        ws,
        "--",
        "bash",
        "-c",
        &script,
    ]);
    // Its processes only: bash, pid 1, lists /proc by its own glob.
    assert_eq!(stdout, "65534\n/proc/1\nin\n", "{stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert_eq!(code, Some(1));
    assert!(!outside.exists());
}

#[test]
fn the_system_secrets_stay_hidden_by_the_mount_namespace_alone() {
    // Landlock taken away (best_effort), the empty file over /etc/shadow still hides it.
    if lacks_namespaces() {
        return;
    }
    let shadow = Path::new("/etc/shadow");
    if skip_unless(
        std::fs::read(shadow).is_ok_and(|s| !s.is_empty()),
        "a readable, non-empty /etc/shadow (root), to show it hidden",
    ) {
        return;
    }
    let w = World::new();
    let p = plan_for(
        &w,
        without(|c| {
            c.landlock_fs = false;
            c.landlock_abi = None;
        }),
        |c| c.mode = Enforcement::BestEffort,
    );
    // The control: without Landlock and without namespaces, root reads it.
    let flat = plan_for(
        &w,
        without(|c| {
            c.landlock_fs = false;
            c.landlock_abi = None;
            c.namespaces = false;
        }),
        |c| c.mode = Enforcement::BestEffort,
    );
    let r = sh(&flat, "cat /etc/shadow | wc -c");
    assert_ne!(r.stdout.trim(), "0", "{r:?}");
    let r = sh(
        &p,
        "cat /etc/shadow | wc -c; ls -A /etc/ssh | wc -l; echo x > /etc/shadow",
    );
    assert_eq!(r.stdout, "0\n0\n", "{r:?}");
    assert!(r.stderr.contains("Read-only file system"), "{r:?}");
}

#[test]
fn a_run_whose_memory_cgroup_cannot_be_made_is_refused_under_enforce_and_says_so_under_best_effort()
{
    if lacks_full_backend() {
        return;
    }
    let w = World::new();
    let (argv, marker) = leaves_a_marker(&w);
    let parent = w.root.join("not-a-memory-cgroup");
    let caps = without(|c| c.cgroup_memory = Some(parent.clone()));
    let p = plan_for(&w, caps.clone(), |c| c.mode = Enforcement::Enforce);
    assert_eq!(p.refusal(), None);
    match danger::exec_unjudged(&p, &argv, None, Capture::Bounded(1024)) {
        Err(RunError::Refused(why)) => assert!(
            why.starts_with(&format!(
                "sandbox.bash is enforce, and the memory cgroup the plan promises could not be made in {} (",
                parent.display()
            )) && why.ends_with("RLIMIT_AS, the fallback, bounds each process's address space rather than the run's memory"),
            "{why}"
        ),
        other => panic!("ran without its memory cgroup: {other:?}"),
    }
    assert!(!marker.exists(), "nothing ran");
    // best_effort: RLIMIT_AS instead, said in the run's result.
    let p = plan_for(&w, caps, |c| {
        c.mode = Enforcement::BestEffort;
        c.limits.memory_bytes = 3 << 30;
    });
    let r = sh(&p, "grep '^Max address space' /proc/self/limits");
    assert!(r.stdout.contains(&(3u64 << 30).to_string()), "{r:?}");
    assert_eq!(r.not_enforced.len(), 1, "{:?}", r.not_enforced);
    assert!(
        r.not_enforced[0].starts_with("memory: the memory cgroup could not be made in "),
        "{:?}",
        r.not_enforced
    );
    // The control: with the memory cgroup this machine has, no RLIMIT_AS and nothing to add.
    if skip_unless(
        jail::capabilities().cgroup_memory.is_some(),
        "a memory cgroup (the control of this test runs in one)",
    ) {
        return;
    }
    let p = plan(&w, |c| c.mode = Enforcement::BestEffort);
    let r = sh(&p, "grep '^Max address space' /proc/self/limits");
    assert!(
        r.stdout.contains("unlimited") && r.not_enforced.is_empty(),
        "{r:?}"
    );
}

/// The run cgroups (pids and memory) whose owner is `pid`, wherever they were made below
/// `/sys/fs/cgroup`.
fn cgroups_of(pid: u32) -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, depth: usize, prefix: &str, found: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(prefix) {
                found.push(path);
            } else if depth > 0 {
                walk(&path, depth - 1, prefix, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(
        Path::new("/sys/fs/cgroup"),
        4,
        &format!("reasonix-{pid}-"),
        &mut found,
    );
    found
}

/// Waits (at most 20 s) until a process whose command line holds `marker` runs.
fn wait_for_process(marker: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if !processes_with(marker).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Issue 28, item 9: `kill -9` of the Reasonix that started a jailed command kills the command
/// at once — it never writes after the gate is gone — and the cgroups the dead Reasonix left
/// are reclaimed by the next one that probes the jail. The twin: left alive, the same command
/// writes its file.
#[test]
fn a_jailed_command_dies_with_a_killed_reasonix_and_its_cgroups_are_reclaimed_next_start() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let late = w.ws.join("late.txt");
    let marker = format!("1.{}83", own_marker());
    let script = format!("sleep {marker}; echo hi > late.txt");
    let exec = |script: &str| {
        w.spawn(&[
            "sandbox",
            "exec",
            "--workspace",
            &ws,
            "--timeout-ms",
            "20000",
            "--",
            "sh",
            "-c",
            script,
        ])
    };

    // The twin first: a Reasonix left alone lets its command finish and write.
    let mut alive = exec(&script);
    let until = Instant::now() + Duration::from_secs(20);
    while alive.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = alive.try_wait().unwrap();
    if status.is_none() {
        let _ = alive.kill();
    }
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    assert!(
        late.exists(),
        "the command of a live Reasonix wrote its file"
    );
    std::fs::remove_file(&late).unwrap();

    let mut killed = exec(&script);
    assert!(wait_for_process(&marker), "the jailed sleep started");
    let pid = killed.id();
    killed.kill().unwrap();
    killed.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The shell that would write is gone at once (with a PID namespace, the sleep too).
    let shells = processes_with(&script);
    assert!(
        shells.is_empty(),
        "{shells:?} outlived the Reasonix that started them"
    );
    // Past the sleep: nothing was written.
    std::thread::sleep(Duration::from_millis(1800));
    assert!(
        !late.exists(),
        "a command wrote after its Reasonix was killed"
    );

    // Whatever cgroups the killed one made are still there; the next start reclaims them.
    // (Another test's Reasonix starting meanwhile may already have reclaimed them.)
    let left = cgroups_of(pid);
    let (code, _, stderr) = w.run(&["sandbox", "exec", "--workspace", &ws, "--", "true"], "");
    assert_eq!(code, 0, "{stderr}");
    let after = cgroups_of(pid);
    assert!(
        after.is_empty(),
        "cgroups of a dead Reasonix left after the next start: {after:?} (before: {left:?})"
    );
}

/// A killed Reasonix cannot remove its plan's folder, and its run's TMPDIR stayed on disk with
/// what the command wrote there: the next plan made removes the folder of an owner that is gone
/// (`plan_folder`). The twin: a live Reasonix's folder is left alone, and one that ends removes
/// its own.
#[test]
fn a_killed_reasonixs_plan_folder_is_removed_by_the_next_plan() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let tmp = w.root.join("system-tmp");
    std::fs::create_dir(&tmp).unwrap();
    let env = [("TMPDIR", tmp.to_str().unwrap())];
    let own = tmp.join(format!("reasonix-{}", nix::unistd::geteuid()));
    let marker = format!("30.{}89", own_marker());
    let script = format!("echo SECRET > $TMPDIR/left; sleep {marker}");
    fn exec<'a>(ws: &'a str, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec![
            "sandbox",
            "exec",
            "--workspace",
            ws,
            "--timeout-ms",
            "40000",
        ];
        all.extend_from_slice(args);
        all
    }
    let plans = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&own)
            .map(|es| es.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    // Whether the run's TMPDIR (the plan's folder/run-…/tmp on the host) holds the file.
    fn holds(dir: &Path, name: &str) -> bool {
        std::fs::read_dir(dir).is_ok_and(|es| {
            es.flatten().any(|e| {
                e.file_name() == name
                    || e.file_type().is_ok_and(|t| t.is_dir()) && holds(&e.path(), name)
            })
        })
    }
    let mut killed = w.spawn_env(&exec(&ws, &["--", "sh", "-c", &script]), &env);
    let until = Instant::now() + Duration::from_secs(20);
    while !holds(&own, "left") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(holds(&own, "left"), "the command wrote to its TMPDIR");
    let folder = plans();
    assert_eq!(folder.len(), 1, "{folder:?}");
    let name = folder[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with(&format!("{}-", killed.id())), "{name}");
    // In a workspace of its own: `sandbox exec` holds its workspace's lease while it runs.
    let other = w.root.join("other-ws");
    std::fs::create_dir(&other).unwrap();
    let mut live = w.spawn_env(&exec(other.to_str().unwrap(), &["--", "sleep", "30"]), &env);
    let until = Instant::now() + Duration::from_secs(10);
    while plans().len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let both = plans();
    assert_eq!(both.len(), 2, "{both:?}");
    killed.kill().unwrap();
    killed.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        folder[0].exists(),
        "nothing removed the killed one's folder yet"
    );

    let (code, _, stderr) = w.run_env(&exec(&ws, &["--", "true"]), "", &env);
    assert_eq!(code, 0, "{stderr}");
    let all = plans();
    assert!(
        !folder[0].exists(),
        "the killed one's folder is left: {all:?}"
    );
    let (parked, left): (Vec<_>, Vec<_>) = all.into_iter().partition(|p| {
        p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("idle-")
    });
    assert_eq!(
        left.len(),
        1,
        "the live one's stays, the ended one's is gone: {left:?}"
    );
    assert!(left[0].starts_with(&own) && left[0] != folder[0]);
    // The ended one's is parked, emptied, for the next process (`plan_folder`).
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert!(!holds(&parked[0], "left"));
    let _ = live.kill();
    let _ = live.wait();
}

/// `reasonix sandbox exec --workspace WS -- sh -c SCRIPT` with `TMPDIR` set: the exit code,
/// stdout and stderr.
fn sh_in_exec(w: &World, ws: &str, tmpdir: &str, script: &str) -> (i32, String, String) {
    let args = [
        "sandbox",
        "exec",
        "--workspace",
        ws,
        "--",
        "sh",
        "-c",
        script,
    ];
    w.run_env(&args, "", &[("TMPDIR", tmpdir)])
}

/// A plan's folder parked by one `sandbox exec` and taken over by the next hands the next run
/// nothing of the last: its TMPDIR and HOME are empty again (but for the toolchain links), and
/// a folder it made beside them is gone.
#[test]
fn a_parked_plan_folder_hands_nothing_of_one_run_to_the_next_process() {
    if lacks_namespaces() {
        return;
    }
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let tmp = w.root.join("system-tmp");
    std::fs::create_dir(&tmp).unwrap();
    let own = tmp.join(format!("reasonix-{}", nix::unistd::geteuid()));
    let exec = |script: &str| {
        let (code, out, stderr) = sh_in_exec(&w, &ws, tmp.to_str().unwrap(), script);
        assert_eq!(code, 0, "{script}: {stderr}");
        out
    };
    let listing = "ls -A \"$TMPDIR\"; echo --; ls -A \"$HOME\"";
    let fresh = exec(listing);
    exec("echo SECRET > $TMPDIR/t; mkdir -p $TMPDIR/d/e; echo SECRET > $HOME/h; chmod 0 $TMPDIR");
    let parked: Vec<_> = std::fs::read_dir(&own)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert!(
        parked[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("idle-"),
        "{parked:?}"
    );
    // The next process takes the parked folder over: the same run's folder, as new.
    let next = exec(&format!("{listing}; echo --; echo \"$TMPDIR\""));
    let (listed, tmpdir) = next.rsplit_once("--\n").unwrap();
    assert_eq!(listed.trim_end(), fresh.trim_end(), "as a fresh run's");
    // Its plan's folder (where the run's TMPDIR is bound) is the parked one, renamed.
    let suffix = parked[0].file_name().unwrap().to_string_lossy()["idle-".len()..].to_owned();
    assert!(
        tmpdir.trim().ends_with(&format!("-{suffix}/tmp")),
        "{tmpdir} {suffix}"
    );
    let again: Vec<_> = std::fs::read_dir(&own)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(again, parked, "parked again, under the same name");
}

/// The same through `reasonix run`: its jailed bash call dies with it.
#[test]
fn a_jailed_bash_call_of_a_killed_run_dies_with_it() {
    let w = World::new();
    let ws = w.ws.to_str().unwrap().to_owned();
    let marker = format!("20.{}87", own_marker());
    let policy = w.policy("p.yaml", common::ALLOW_ALL);
    let script = w.root.join("s.json");
    let command = format!("sleep {marker}; echo hi > late.txt");
    std::fs::write(
        &script,
        serde_json::json!([{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}])
            .to_string(),
    )
    .unwrap();
    let provider = format!("script:{}", script.display());
    let mut run = w.spawn(&[
        "run",
        "--provider",
        &provider,
        "--workspace",
        &ws,
        "--policy",
        &policy,
        "--unattended",
        "go",
    ]);
    let started = wait_for_process(&marker);
    run.kill().unwrap();
    run.wait().unwrap();
    assert!(started, "the jailed sleep started");
    std::thread::sleep(Duration::from_millis(300));
    let left = processes_with(&command);
    assert!(
        left.is_empty(),
        "{left:?} outlived the run that started them"
    );
}

/// Processes that end and start at once, in several workspaces, share the parked plan folders:
/// each run finds its TMPDIR and HOME as a fresh run does, and none loses its folder to another
/// process (a removal of a parked folder under way once went on inside the folder another
/// process had just taken over: "cannot prepare the jail … No such file or directory").
#[test]
fn concurrent_processes_taking_over_parked_folders_each_start_clean() {
    if lacks_namespaces() {
        return;
    }
    let w = World::new();
    let tmp = w.root.join("system-tmp");
    std::fs::create_dir(&tmp).unwrap();
    let tmp = tmp.to_str().unwrap().to_owned();
    let script = "echo \"$(ls -A \"$TMPDIR\" | wc -l) $(ls -A \"$HOME\" | wc -l)\"; \
                  echo x > \"$TMPDIR/f$$\"; mkdir \"$TMPDIR/d$$\"; echo y > \"$HOME/g$$\"";
    let workspaces: Vec<String> = (0..6)
        .map(|i| {
            let ws = w.root.join(format!("ws{i}"));
            std::fs::create_dir(&ws).unwrap();
            ws.to_str().unwrap().to_owned()
        })
        .collect();
    let (code, _, stderr) = sh_in_exec(&w, &workspaces[0], &tmp, "true");
    assert_eq!(code, 0, "{stderr}");
    // What a run that takes over a parked folder finds: "0 N" (an empty TMPDIR; in HOME, the
    // toolchain links of this world's home, if any).
    let (code, expected, stderr) = sh_in_exec(&w, &workspaces[0], &tmp, script);
    assert_eq!(code, 0, "{stderr}");
    assert!(expected.starts_with("0 "), "{expected}");
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = workspaces
            .iter()
            .map(|ws| {
                let (w, tmp, expected) = (&w, &tmp, &expected);
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for i in 0..15 {
                        let (code, out, stderr) = sh_in_exec(w, ws, tmp, script);
                        if code != 0 || out != *expected {
                            failed.push(format!("{ws} run {i}: {code} {out} {stderr}"));
                        }
                    }
                    failed
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{failures:#?}");
}
