//! Network egress by host (issue 15), on the real kernel: `curl` in the jail reaches a listener
//! through the egress proxy only when a rule names it, each connection judged by the gate as
//! `network_connect {host, port}` and recorded; a connection that bypasses the proxy finds no
//! network; a name that resolves to loopback is refused unless the IP is listed; an `ask` is
//! denied unattended and put to a person on a terminal.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::{World, execute, skip_unless};
use reasonix::egress::Connection;
use reasonix::gate::Judgement;
use reasonix::sandbox::jail::{self, Capture, Enforcement, JailConfig, JailPlan, NetRule, danger};
use reasonix::{Call, Gate, PolicySet, Posture};
use serde_json::{Value, json};

/// Whether this machine lacks what host filtering needs (the test then skips, or fails under
/// `REASONIX_NO_SKIP=1`).
fn lacks_egress() -> bool {
    let caps = jail::capabilities();
    skip_unless(
        caps.net_namespace && caps.landlock_net && caps.seccomp && caps.namespaces,
        "a network namespace per run (root), Landlock TCP rules, seccomp and namespaces",
    ) || skip_unless(curl_present(), "curl")
}

fn curl_present() -> bool {
    Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A tiny HTTP server on 127.0.0.1: answers `ok` to each request and passes on what it got.
struct Server {
    port: u16,
    got: Receiver<String>,
}

fn serve() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, got) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            );
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    });
    Server { port, got }
}

impl Server {
    fn reached(&self) -> Option<String> {
        self.got.recv_timeout(Duration::from_secs(3)).ok()
    }
    fn untouched(&self) -> bool {
        self.got.recv_timeout(Duration::from_millis(300)).is_err()
    }
}

/// A policy under which `curl` runs and the network is what `sandbox.network` and `extra`
/// rules say.
fn policy(network: &[String], extra: &str) -> PolicySet {
    let list = network
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let yaml = format!(
        "version: 1\ndefaults:\n  read_only: allow\n  writer: ask\n  unattended: deny\nsandbox:\n  bash: enforce\n  network: [{list}]\nrules:\n  - id: curl-runs\n    decision: allow\n    tools: [bash]\n    commands: [\"curl *\"]\n{extra}"
    );
    PolicySet::from_yaml("egress.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

/// Runs an allowed bash command through the gate: its output text and its connections.
fn bash(gate: &Gate, command: &str) -> (String, Vec<Connection>) {
    match gate.admit(&Call::new("bash", json!({ "command": command }))) {
        Judgement::Allowed(a) => {
            let out = execute(a).unwrap_or_else(|e| panic!("{command}: {e}"));
            (out.text, out.connections)
        }
        other => panic!("{command}: not allowed: {:?}", other.admission().reasons),
    }
}

fn curl(url: &str) -> String {
    format!("curl -sS --max-time 5 -o /dev/null -w 'code=%{{http_code}}\\n' {url}")
}

#[test]
fn a_listener_named_by_ip_is_reached_through_the_proxy_and_one_on_another_port_is_refused() {
    if lacks_egress() {
        return;
    }
    let w = World::new();
    let (a, b) = (serve(), serve());
    let set = policy(&[format!("127.0.0.1:{}", a.port)], "");
    let gate = w.gate(&set, Posture::Unattended);

    // Plain HTTP (absolute form) and a CONNECT tunnel (`-p`) both reach the named listener.
    for tunnel in ["", "-p "] {
        let (text, conns) = bash(
            &gate,
            &curl(&format!("{tunnel}http://127.0.0.1:{}/hello", a.port)),
        );
        assert!(text.contains("code=200"), "{tunnel}: {text}");
        let got = a.reached().expect("the listener was reached");
        assert!(got.starts_with("GET /hello HTTP/1.1"), "origin form: {got}");
        assert!(!got.to_ascii_lowercase().contains("proxy-"), "{got}");
        let [c] = conns.as_slice() else {
            panic!("one connection: {conns:?}")
        };
        assert_eq!(
            (c.host.as_str(), c.port, c.verdict.as_str(), c.outcome),
            ("127.0.0.1", a.port, "allow", "connected")
        );
        assert_eq!(c.method, if tunnel.is_empty() { "GET" } else { "CONNECT" });
        assert_eq!(
            c.address.as_deref(),
            Some(&*format!("127.0.0.1:{}", a.port))
        );
        assert_eq!(c.rules, ["sandbox.network"]);
        assert!(c.bytes_up > 0 && c.bytes_down > 0, "{c:?}");
    }

    // The same listener's neighbour on another port: the gate denies, nothing reaches it.
    let (text, conns) = bash(&gate, &curl(&format!("http://127.0.0.1:{}/", b.port)));
    assert!(text.contains("code=403"), "{text}");
    assert!(
        text.contains(&format!("network_connect 127.0.0.1:{} refused", b.port)),
        "{text}"
    );
    assert!(b.untouched(), "nothing reached the second listener");
    let [c] = conns.as_slice() else {
        panic!("{conns:?}")
    };
    assert_eq!(
        (c.verdict.as_str(), c.outcome, c.address.as_deref()),
        ("deny", "refused", None)
    );
    assert!(c.reasons.iter().any(|r| r.contains("unattended")), "{c:?}");
}

#[test]
fn a_direct_connection_that_bypasses_the_proxy_finds_no_network() {
    if lacks_egress() {
        return;
    }
    let w = World::new();
    let a = serve();
    // The control: unjailed, the listener is reachable directly.
    let mut s = TcpStream::connect(("127.0.0.1", a.port)).unwrap();
    s.write_all(b"control\r\n\r\n").unwrap();
    assert_eq!(a.reached().as_deref(), Some("control\r\n\r\n"));

    let set = policy(
        &[format!("127.0.0.1:{}", a.port)],
        "  - id: read-interfaces\n    decision: allow\n    tools: [bash]\n    commands: [\"cat /proc/net/dev\"]\n",
    );
    let gate = w.gate(&set, Posture::Unattended);
    // Allowed by name, but asked for without the proxy: nothing to reach.
    let (text, conns) = bash(
        &gate,
        &(curl(&format!("--noproxy '*' http://127.0.0.1:{}/", a.port)) + "; cat /proc/net/dev"),
    );
    assert!(text.contains("code=000"), "{text}");
    assert!(a.untouched(), "the direct connection reached the listener");
    assert!(conns.is_empty(), "{conns:?}");
    // Its network namespace has nothing but loopback.
    let stdout = text.split_once("--- stdout ---\n").map_or("", |(_, rest)| {
        rest.split("--- stderr ---").next().unwrap_or("")
    });
    let interfaces: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim()))
        .collect();
    assert_eq!(interfaces, ["lo"], "{text}");
}

/// Landlock lets a run connect to the proxy's port, 3128; a host service on that port (a
/// squid, say) is still out of reach, because the run's 127.0.0.1 is its own namespace's.
#[test]
fn a_host_service_on_the_proxys_own_port_is_out_of_reach() {
    if lacks_egress() {
        return;
    }
    // Where the port is free, a service of our own takes it; where something else holds it,
    // that service plays the part (and the run's answer below still is its own proxy's).
    let (tx, got) = channel();
    if let Ok(host) = TcpListener::bind(("127.0.0.1", reasonix::egress::PROXY_PORT)) {
        std::thread::spawn(move || {
            for stream in host.incoming() {
                let Ok(mut s) = stream else { continue };
                let mut buf = [0u8; 256];
                let n = s.read(&mut buf).unwrap_or(0);
                let _ = tx.send(buf[..n].to_vec());
            }
        });
        // The control: from the host, it is reachable.
        TcpStream::connect(("127.0.0.1", reasonix::egress::PROXY_PORT))
            .unwrap()
            .write_all(b"control")
            .unwrap();
        assert_eq!(
            got.recv_timeout(Duration::from_secs(3)).unwrap(),
            b"control"
        );
    }
    let w = World::new();
    let a = serve();
    let set = policy(&[format!("127.0.0.1:{}", a.port)], "");
    let (text, conns) = bash(
        &w.gate(&set, Posture::Unattended),
        &curl("--noproxy '*' http://127.0.0.1:3128/direct"),
    );
    // The run's own proxy answered (a request not in absolute form), not the host's service.
    assert!(text.contains("code=400"), "{text}");
    assert!(got.recv_timeout(Duration::from_millis(500)).is_err());
    assert_eq!(conns[0].verdict, "invalid", "{conns:?}");
}

#[test]
fn a_name_that_resolves_to_loopback_is_refused_unless_the_ip_is_listed() {
    if lacks_egress() {
        return;
    }
    let w = World::new();
    let a = serve();
    let url = format!("http://localhost:{}/", a.port);

    let by_name = policy(&[format!("localhost:{}", a.port)], "");
    let gate = w.gate(&by_name, Posture::Unattended);
    let (text, conns) = bash(&gate, &curl(&url));
    assert!(text.contains("code=403"), "{text}");
    assert!(a.untouched(), "a name reached loopback");
    let [c] = conns.as_slice() else {
        panic!("{conns:?}")
    };
    // The gate allowed the name; the address check refused where it leads.
    assert_eq!((c.verdict.as_str(), c.outcome), ("allow", "refused"));
    assert!(
        c.reasons
            .iter()
            .any(|r| r.contains("127.0.0.1 (a loopback address)")),
        "{c:?}"
    );

    // A wildcard names no address either.
    let any = policy(&[format!("*:{}", a.port)], "");
    let (text, _) = bash(&w.gate(&any, Posture::Unattended), &curl(&url));
    assert!(text.contains("code=403"), "{text}");
    assert!(a.untouched());

    // Listed as an IP, the same name gets through.
    let by_ip = policy(
        &[
            format!("localhost:{}", a.port),
            format!("127.0.0.1:{}", a.port),
        ],
        "",
    );
    let (text, conns) = bash(&w.gate(&by_ip, Posture::Unattended), &curl(&url));
    assert!(text.contains("code=200"), "{text}");
    assert!(a.reached().is_some());
    assert_eq!(conns[0].outcome, "connected");
}

const ASK_RULE: &str = "  - id: ask-network\n    decision: ask\n    tools: [network_connect]\n    reason: a person decides each connection\n";

#[test]
fn an_ask_on_a_host_is_denied_unattended_and_put_to_the_asker_when_there_is_one() {
    if lacks_egress() {
        return;
    }
    let w = World::new();
    let a = serve();
    let url = format!("http://127.0.0.1:{}/", a.port);
    let set = policy(&[format!("127.0.0.1:{}", a.port)], ASK_RULE);

    // Unattended: the ask becomes a deny, though sandbox.network lists the host (ask > allow).
    let (text, conns) = bash(&w.gate(&set, Posture::Unattended), &curl(&url));
    assert!(text.contains("code=403"), "{text}");
    assert!(a.untouched());
    assert_eq!(conns[0].verdict, "deny");
    assert!(
        conns[0].reasons.iter().any(|r| r.contains("unattended")),
        "{:?}",
        conns[0]
    );

    // Interactive with an asker: it sees the network_connect call and decides.
    for (answer, code, outcome) in [
        (false, "code=403", "refused"),
        (true, "code=200", "connected"),
    ] {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let saw = Arc::clone(&seen);
        let gate = w
            .gate(&set, Posture::Interactive)
            .with_egress_asker(Arc::new(move |admission| {
                saw.lock().unwrap().push(admission.tool.clone());
                answer
            }));
        let (text, conns) = bash(&gate, &curl(&url));
        assert!(text.contains(code), "{answer}: {text}");
        assert_eq!(
            (conns[0].verdict.as_str(), conns[0].outcome),
            ("ask", outcome)
        );
        assert_eq!(*seen.lock().unwrap(), [Some("network_connect".to_owned())]);
        assert_eq!(a.reached().is_some(), answer);
    }

    // Interactive without anyone to ask (no session): refused, saying so.
    let (text, conns) = bash(&w.gate(&set, Posture::Interactive), &curl(&url));
    assert!(text.contains("code=403"), "{text}");
    assert!(
        conns[0]
            .reasons
            .iter()
            .any(|r| r.contains("nobody can answer")),
        "{:?}",
        conns[0]
    );
}

/// `reasonix run` with a scripted model: one bash call reaching two hosts, one listed.
fn run_session(w: &World, network: &[String], extra: &str, tty: Option<&[u8]>) -> (i32, String) {
    let command = network[1..]
        .iter()
        .map(|u| curl(u))
        .collect::<Vec<_>>()
        .join("; ");
    let a_call = json!([{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}]);
    let script = w.root.join("s.json");
    std::fs::write(&script, a_call.to_string()).unwrap();
    let policy = w.policy(
        "p.yaml",
        &format!(
            "version: 1\ndefaults:\n  writer: ask\n  unattended: deny\nsandbox:\n  bash: enforce\n  network: [{:?}]\nrules:\n  - id: curl-runs\n    decision: allow\n    tools: [bash]\n    commands: [\"curl *\"]\n{extra}",
            network[0]
        ),
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reasonix"));
    cmd.args(["run", "--provider"])
        .arg(format!("script:{}", script.display()))
        .args(["--policy", &policy, "--workspace"])
        .arg(&w.ws)
        .env("HOME", &w.home)
        .env("NO_COLOR", "1");
    let out = if let Some(answers) = tty {
        let pty = nix::pty::openpty(None, None).unwrap();
        let mut master = std::fs::File::from(pty.master);
        master.write_all(answers).unwrap();
        cmd.arg("fetch")
            .stdin(std::process::Stdio::from(pty.slave))
            .output()
            .unwrap()
    } else {
        cmd.args(["--unattended", "fetch"]).output().unwrap()
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stderr)
}

fn connection_lines(w: &World) -> Vec<Value> {
    common::jsonl(&w.ws.join(".reasonix/record.jsonl"))
        .into_iter()
        .filter(|l| l["event"] == "network_connect")
        .collect()
}

#[test]
fn each_connection_is_a_record_line_after_its_call() {
    if lacks_egress() {
        return;
    }
    let w = World::new();
    let (a, b) = (serve(), serve());
    let listed = format!("127.0.0.1:{}", a.port);
    let urls = [
        listed.clone(),
        format!("http://127.0.0.1:{}/a", a.port),
        format!("http://127.0.0.1:{}/b", b.port),
    ];
    let (code, stderr) = run_session(&w, &urls, "", None);
    assert_eq!(code, 0, "{stderr}");
    assert!(a.reached().is_some() && b.untouched());
    let record = common::jsonl(&w.ws.join(".reasonix/record.jsonl"));
    let call = record
        .iter()
        .position(|l| l["tool"] == "bash")
        .expect("the bash call's line");
    let lines = connection_lines(&w);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let first = record
        .iter()
        .position(|l| l["event"] == "network_connect")
        .unwrap();
    assert!(first > call, "after the call's line");
    let call_id = record[call]["call_id"].clone();
    for (line, port, verdict, address) in [
        (&lines[0], a.port, "allow", json!(listed)),
        (&lines[1], b.port, "deny", Value::Null),
    ] {
        assert_eq!(line["call_id"], call_id, "{line}");
        assert_eq!(line["run_id"], record[call]["run_id"], "{line}");
        assert_eq!(line["host"], "127.0.0.1", "{line}");
        assert_eq!(line["port"], port, "{line}");
        assert_eq!(line["verdict"], verdict, "{line}");
        assert_eq!(line["address"], address, "{line}");
        for key in [
            "bytes_up",
            "bytes_down",
            "duration_ms",
            "reasons",
            "outcome",
        ] {
            assert!(line.get(key).is_some(), "{key}: {line}");
        }
    }
    assert!(lines[0]["bytes_up"].as_u64().unwrap() > 0);
    assert!(lines[0]["bytes_down"].as_u64().unwrap() > 0);
    assert_eq!(lines[1]["bytes_down"], 0);
}

#[test]
fn on_a_terminal_a_person_answers_the_ask_on_a_connection() {
    if lacks_egress() {
        return;
    }
    let w = World::new();
    let (a, b) = (serve(), serve());
    let listed = format!("127.0.0.1:{}", a.port);
    let urls = [
        listed,
        format!("http://127.0.0.1:{}/a", a.port),
        format!("http://127.0.0.1:{}/again", a.port),
        format!("http://127.0.0.1:{}/b", b.port),
    ];
    // The person allows the first connection for the session (`s`), so the second to the same
    // host and port is not asked about, and denies the third (`d`), which asks too (no rule
    // lists it: defaults.writer).
    let (_, stderr) = run_session(&w, &urls, ASK_RULE, Some(b"s\nd\n"));
    assert!(stderr.contains("network_connect"), "{stderr}");
    assert_eq!(stderr.matches("Run it?").count(), 2, "{stderr}");
    assert!(a.reached().is_some() && a.reached().is_some(), "{stderr}");
    assert!(b.untouched(), "{stderr}");
    let lines = connection_lines(&w);
    let seen: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["verdict"].as_str().unwrap(),
                l["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ask", "connected"),
            ("ask", "connected"),
            ("ask", "refused")
        ],
        "{lines:?}"
    );
}

#[test]
fn check_judges_network_connect_like_any_other_call() {
    let w = World::new();
    let p = w.policy(
        "p.yaml",
        "version: 1\nsandbox:\n  network: [\"*.crates.io:443\", \"github.com:443\"]\nrules:\n  - id: no-network\n    decision: deny\n    tools: [network_connect]\n",
    );
    let rows = [
        ("index.crates.io", 443, "deny"),
        ("github.com", 443, "deny"),
    ];
    for (host, port, verdict) in rows {
        let (_, v) = w.check(
            &json!({"name": "network_connect", "arguments": {"host": host, "port": port}}),
            &["--policy", &p],
        );
        assert_eq!(v["verdict"], verdict, "{host}: {v}");
    }
    let p = w.policy(
        "q.yaml",
        "version: 1\nsandbox:\n  network: [\"*.crates.io:443\", \"github.com:443\"]\n",
    );
    let rows = [
        ("index.crates.io", 443, "allow", 0),
        ("static.crates.io", 443, "allow", 0),
        ("crates.io", 443, "deny", 20),
        ("github.com", 80, "deny", 20),
        ("evil.example", 443, "deny", 20),
    ];
    for (host, port, verdict, code) in rows {
        let (status, v) = w.check(
            &json!({"name": "network_connect", "arguments": {"host": host, "port": port}}),
            &["--policy", &p, "--posture", "unattended"],
        );
        assert_eq!(
            (v["verdict"].as_str(), status),
            (Some(verdict), code),
            "{host}:{port}: {v}"
        );
        assert_eq!(v["effects"], json!(["network"]), "{v}");
        if verdict == "allow" {
            assert_eq!(v["rules"][0]["id"], "sandbox.network", "{v}");
        }
    }
    // Its arguments are checked like any call's.
    let (_, v) = w.check(
        &json!({"name": "network_connect", "arguments": {"host": "a.example", "port": 0}}),
        &["--policy", &p],
    );
    assert_eq!(v["verdict"], "invalid", "{v}");
}

/// Rego that denies the host `vm` and the address 192.0.2.2 by their canonical spellings.
const DENY_VM: &str = r#"package reasonix
import rego.v1
deny contains "vm is off limits" if input.arguments.host == "vm"
deny contains "192.0.2.2 is off limits" if input.arguments.host == "192.0.2.2"
"#;

/// Issue 28, second round, item 2: `reasonix check` of `network_connect` judges the host in its
/// one canonical spelling (stage resolve), as the proxy does — a Rego deny on `vm` or on an
/// address is not passed by another spelling of it; a genuinely different host is not denied;
/// what is no host is invalid.
#[test]
fn check_judges_the_canonical_host_so_no_spelling_passes_a_rego_deny() {
    let w = World::new();
    let rego = w.root.join("vm.rego");
    std::fs::write(&rego, DENY_VM).unwrap();
    let yaml = w.policy(
        "open.yaml",
        "version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n",
    );
    let rows: &[(&str, &str, &str)] = &[
        ("vm", "deny", "vm"),
        ("VM", "deny", "vm"),
        ("vm.", "deny", "vm"),
        ("Vm.", "deny", "vm"),
        ("\u{ff56}\u{ff4d}", "deny", "vm"),
        ("192.0.2.2", "deny", "192.0.2.2"),
        ("3221225986", "deny", "192.0.2.2"),
        ("0xc0000202", "deny", "192.0.2.2"),
        ("0XC0000202", "deny", "192.0.2.2"),
        ("0300.0.02.02", "deny", "192.0.2.2"),
        ("0300.0.2.2.", "deny", "192.0.2.2"),
        ("192.0.514", "deny", "192.0.2.2"),
        ("192.0x0.2.2", "deny", "192.0.2.2"),
        ("[::ffff:192.0.2.2]", "deny", "192.0.2.2"),
        ("::ffff:c000:202", "deny", "192.0.2.2"),
        // The twins: other hosts, other addresses.
        ("vm2", "allow", "vm2"),
        ("vm.example", "allow", "vm.example"),
        ("192.0.2.3", "allow", "192.0.2.3"),
        ("3221225987", "allow", "192.0.2.3"),
        ("[::1]", "allow", "::1"),
        // No host at all.
        ("vm..", "invalid", ""),
        ("4294967296", "invalid", ""),
        ("192.0.2.256", "invalid", ""),
        ("0x1g", "allow", "0x1g"),
    ];
    let lines: String = rows
        .iter()
        .map(|(host, _, _)| {
            format!(
                "{}\n",
                json!({"name": "network_connect", "arguments": {"host": host, "port": 443}})
            )
        })
        .collect();
    let (_, verdicts) = w.check_lines(
        &lines,
        &[
            "--policy",
            &yaml,
            "--policy",
            rego.to_str().unwrap(),
            "--explain",
        ],
    );
    assert_eq!(verdicts.len(), rows.len());
    for ((host, verdict, canonical), v) in rows.iter().zip(&verdicts) {
        assert_eq!(v["verdict"], *verdict, "{host:?}: {v}");
        if *verdict != "invalid" {
            assert_eq!(v["input"]["arguments"]["host"], *canonical, "{host:?}: {v}");
        }
    }
}

#[test]
fn a_model_cannot_run_network_connect_nor_reach_it_through_use_capability() {
    let w = World::new();
    let set = PolicySet::from_yaml(
        "p.yaml",
        "version: 1\nsandbox:\n  network: [\"github.com:443\"]\n",
    )
    .unwrap();
    let gate = w.gate(&set, Posture::Unattended);
    let call = Call::new(
        "network_connect",
        json!({"host": "github.com", "port": 443}),
    );
    let Judgement::Allowed(admitted) = gate.admit(&call) else {
        panic!("the gate allows the listed host");
    };
    let err = execute(admitted).unwrap_err().to_string();
    assert!(err.contains("not a tool to run"), "{err}");
    let via = Call::new(
        "use_capability",
        json!({"capability": "network_connect", "arguments": {"host": "github.com", "port": 443}}),
    );
    assert_eq!(
        gate.admit(&via).admission().verdict,
        reasonix::Verdict::Invalid
    );
}

#[test]
fn enforce_refuses_bash_when_no_network_namespace_can_be_made_and_best_effort_says_what_is_lost() {
    let w = World::new();
    let ws = w.ws.canonicalize().unwrap();
    let caps = jail::Capabilities {
        net_namespace: false,
        ..jail::capabilities().clone()
    };
    let config = |mode| JailConfig {
        mode,
        network: vec![NetRule::try_from("github.com:443".to_owned()).unwrap()],
        ..JailConfig::default()
    };
    let enforce =
        JailPlan::with_capabilities(&config(Enforcement::Enforce), &ws, None, caps.clone());
    let why = enforce.refusal().expect("enforce refuses");
    assert!(
        why.contains("network namespace for the egress proxy"),
        "{why}"
    );
    let marker = w.ws.join("ran");
    match danger::exec_unjudged(
        &enforce,
        &["touch".into(), marker.display().to_string()],
        None,
        Capture::Bounded(1024),
    ) {
        Err(jail::RunError::Refused(r)) => assert_eq!(r, why),
        other => panic!("{other:?}"),
    }
    assert!(!marker.exists());
    let best = JailPlan::with_capabilities(&config(Enforcement::BestEffort), &ws, None, caps);
    assert_eq!(best.refusal(), None);
    assert!(
        best.not_enforced()
            .iter()
            .any(|w| w.contains("network host names")),
        "{:?}",
        best.not_enforced()
    );
    // Where one can be made, the plan says it filters by host, and `sandbox probe` shows it.
    if jail::capabilities().net_namespace {
        let p = w.policy(
            "p.yaml",
            "version: 1\nsandbox:\n  network: [\"github.com:443\"]\n",
        );
        let (code, out, err) = w.run(
            &[
                "sandbox",
                "probe",
                "--workspace",
                w.ws.to_str().unwrap(),
                "--policy",
                &p,
            ],
            "",
        );
        assert_eq!(code, 0, "{err}");
        let probe: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(probe["machine"]["net_namespace"], true);
        let backend = probe["plan"]["backend"].to_string();
        assert!(backend.contains("egress-proxy"), "{backend}");
        let enforced = probe["plan"]["enforced"].to_string();
        assert!(enforced.contains("network by host"), "{enforced}");
        assert!(
            !probe["plan"]["not_enforced"]
                .to_string()
                .contains("network host names"),
            "{probe}"
        );
    }
}

#[test]
fn sandbox_exec_judges_by_sandbox_network_and_prints_each_connection() {
    if lacks_egress() {
        return;
    }
    let w = World::new();
    let (a, b) = (serve(), serve());
    let allow = format!("127.0.0.1:{}", a.port);
    let ws = w.ws.to_str().unwrap().to_owned();
    for (port, code, verdict) in [(a.port, "code=200", "allow"), (b.port, "code=403", "deny")] {
        let (status, out, err) = w.run(
            &[
                "sandbox",
                "exec",
                "--workspace",
                &ws,
                "--allow-net",
                &allow,
                "--",
                "curl",
                "-sS",
                "-o",
                "/dev/null",
                "-w",
                "code=%{http_code}\n",
                &format!("http://127.0.0.1:{port}/"),
            ],
            "",
        );
        assert_eq!(status, 0, "{err}");
        assert!(out.contains(code), "{out}");
        let line = err
            .lines()
            .find_map(|l| l.strip_prefix("reasonix: {"))
            .unwrap_or_else(|| panic!("{err}"));
        let record: Value = serde_json::from_str(&format!("{{{line}")).unwrap();
        assert_eq!(record["event"], "network_connect");
        assert_eq!(record["verdict"], verdict, "{record}");
    }
    assert!(a.reached().is_some() && b.untouched());
}

/// Issue 28, item 1: a service bound to 0.0.0.0 on the host is not reached through the
/// machine's own interface address, in any spelling, by a rule that does not name it
/// (`*:PORT`); the twin: an entry naming the address reaches it.
#[test]
fn the_hosts_own_address_is_refused_unless_an_entry_names_it() {
    if lacks_egress() {
        return;
    }
    let Some(own) = reasonix::egress::address::own_addresses()
        .into_iter()
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
    else {
        common::skip_unless(false, "a non-loopback IPv4 interface address");
        return;
    };
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, got) = channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            );
            let _ = tx.send(());
        }
    });
    let untouched = || got.recv_timeout(Duration::from_millis(300)).is_err();
    let w = World::new();
    let any = w.gate(&policy(&[format!("*:{port}")], ""), Posture::Unattended);
    let octets = match own {
        std::net::IpAddr::V4(v4) => v4.octets(),
        _ => unreachable!(),
    };
    let decimal = u32::from_be_bytes(octets);
    for url in [
        format!("http://{own}:{port}/"),
        format!("-p http://[::ffff:{own}]:{port}/"),
        format!("http://{decimal}:{port}/"),
    ] {
        let (text, conns) = bash(&any, &curl(&url));
        assert!(untouched(), "{url} reached the host's service: {text}");
        assert!(
            !conns.is_empty()
                && conns.iter().all(|c| c.outcome == "refused"
                    && c.reasons.iter().any(|r| r.contains(&own.to_string()))),
            "{url}: {conns:?}"
        );
        assert!(
            conns.iter().all(|c| c.host == own.to_string()),
            "one spelling of the host: {conns:?}"
        );
    }
    let named = w.gate(&policy(&[format!("{own}:{port}")], ""), Posture::Unattended);
    let (text, _) = bash(&named, &curl(&format!("http://{own}:{port}/")));
    assert!(text.contains("code=200"), "{text}");
    assert!(got.recv_timeout(Duration::from_secs(3)).is_ok());
}
