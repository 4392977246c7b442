//! Issue 18, a fleet under one policy: OPA bundles in (from a folder, a `.tar.gz`, a bundle
//! server on 127.0.0.1 with ETags and polling, signed), decision logs out (a local file, a
//! collector on 127.0.0.1 that receives gzip'd batches, a bounded buffer while it is down).
//!
//! The server is `tests/fixtures/opa_server.py` (python's http.server): it serves bundles with
//! an ETag, keeps every batch it is sent, and logs every request, so a test can count downloads.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::World;
use serde_json::{Value, json};

/// A bundle server and decision-log collector on 127.0.0.1.
struct Server {
    child: Child,
    port: u16,
    root: PathBuf,
    inbox: PathBuf,
    log: PathBuf,
}

impl Server {
    /// Starts the server over `dir` (bundles in `dir/root`), on `port` (0: any).
    fn start(dir: &Path, port: u16) -> Server {
        Server::start_with(dir, port, &[])
    }

    /// The same, with more arguments for the server (`--token T`).
    fn start_with(dir: &Path, port: u16, extra: &[&str]) -> Server {
        let (root, inbox, log) = (
            dir.join("root"),
            dir.join("inbox"),
            dir.join("requests.log"),
        );
        std::fs::create_dir_all(&root).unwrap();
        let mut child = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/opa_server.py"
            ))
            .args(["--root", root.to_str().unwrap()])
            .args(["--inbox", inbox.to_str().unwrap()])
            .args(["--log", log.to_str().unwrap()])
            .args(["--port", &port.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the test server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .unwrap_or_else(|| panic!("the server did not start: {line:?}"))
            .parse()
            .unwrap();
        Server {
            child,
            port,
            root,
            inbox,
            log,
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn bundle_url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/bundles/{name}", self.port)
    }

    fn collector(&self) -> String {
        format!("http://127.0.0.1:{}/logs", self.port)
    }

    /// Puts a bundle in place whole (a reader never sees half of it).
    fn serve(&self, name: &str, bytes: &[u8]) {
        let tmp = self.root.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(tmp, self.root.join(name)).unwrap();
    }

    /// Every request so far: "METHOD PATH STATUS".
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits until `pred` holds of the requests (at most 10 s).
    fn wait_for(&self, what: &str, pred: impl Fn(&[String]) -> bool) {
        let start = Instant::now();
        while !pred(&self.requests()) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "waited 10 s for {what}; requests: {:?}",
                self.requests()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The batches received, in order, each gunzipped: every decision, in order.
    fn received(&self) -> Vec<Value> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.inbox)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        names.retain(|p| p.extension().is_some_and(|e| e == "gz"));
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(&name).unwrap())
                .read_to_string(&mut text)
                .unwrap_or_else(|e| panic!("{} is not gzip: {e}", name.display()));
            let batch: Vec<Value> = serde_json::from_str(&text).unwrap();
            out.extend(batch);
        }
        out
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A `.tar.gz` of these files, as `opa build` would write them.
fn tarball(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, path, bytes.as_slice())
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A bundle of YAML rules at `revision` that denies reading any of `denied` (file names).
fn bundle(revision: &str, denied: &[&str]) -> Vec<(&'static str, Vec<u8>)> {
    let paths: Vec<String> = denied.iter().map(|d| format!("\"**/{d}\"")).collect();
    let rules = format!(
        "version: 1\nrules:\n  - id: fleet-no-read\n    decision: deny\n    tools: [read_file]\n    paths: [{}]\n    reason: the fleet's bundle forbids it\n  - id: fleet-write-ok\n    decision: allow\n    tools: [write_file]\n    paths: [\"**/ok.txt\"]\n",
        paths.join(", ")
    );
    vec![
        (
            ".manifest",
            format!(r#"{{"revision": "{revision}", "roots": ["reasonix"]}}"#).into_bytes(),
        ),
        ("reasonix/rules/fleet.yaml", rules.into_bytes()),
    ]
}

/// The same files with a `.signatures.json` signed with `key` (`opa sign`'s format).
fn signed(
    files: &[(&'static str, Vec<u8>)],
    key: &jsonwebtoken::EncodingKey,
    alg: jsonwebtoken::Algorithm,
) -> Vec<(&'static str, Vec<u8>)> {
    let listed: Vec<Value> = files
        .iter()
        .map(|(p, b)| {
            json!({"name": p, "hash": reasonix::bundle::digest(p, b).unwrap(), "algorithm": "SHA-256"})
        })
        .collect();
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = Some("fleet".into());
    let token = jsonwebtoken::encode(&header, &json!({"files": listed}), key).unwrap();
    let mut out = files.to_vec();
    out.push((
        ".signatures.json",
        json!({"signatures": [token]}).to_string().into_bytes(),
    ));
    out
}

fn read(path: &str) -> Value {
    json!({"name": "read_file", "arguments": {"path": path}})
}

/// `reasonix check --format json` reading calls one at a time, as a long run would send them.
struct Stream {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Stream {
    fn start(w: &World, extra: &[&str]) -> Stream {
        let ws = w.ws.to_str().unwrap();
        let mut args = vec!["check", "--format", "json", "--workspace", ws];
        args.extend_from_slice(extra);
        let mut child = w.spawn(&args);
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Stream {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends one call and reads its verdict.
    fn ask(&mut self, call: &Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{call}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// Ends the input and returns the exit code and stderr.
    fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status.code().unwrap_or(-1), stderr)
    }
}

fn yaml(w: &World, text: &str) {
    w.file("reasonix.yaml", text);
    // Bundles, collectors and their tokens reach beyond the workspace: the user trusts the
    // file first (issue 26).
    w.trust();
}

// ---------------------------------------------------------------------------------------------
// Bundles in.

#[test]
fn a_bundle_from_a_server_loads_and_its_revision_is_in_every_verdict_and_the_input() {
    let w = World::new();
    let server = Server::start(&w.root.join("srv"), 0);
    server.serve("b.tar.gz", &tarball(&bundle("r1", &["secret.txt"])));
    let url = server.bundle_url("b.tar.gz");
    let (code, v) = w.check(&read("secret.txt"), &["--bundle-url", &url, "--explain"]);
    assert_eq!(code, 20, "{v}");
    assert_eq!(v["verdict"], "deny");
    assert_eq!(v["rules"][0]["id"], "fleet-no-read");
    assert_eq!(v["policy_revision"], "r1");
    assert_eq!(v["input"]["session"]["policy_revision"], "r1");
    let (code, v) = w.check(&read("other.txt"), &["--bundle-url", &url]);
    assert_eq!((code, &v["verdict"]), (0, &json!("allow")), "{v}");
    assert_eq!(v["policy_revision"], "r1");
    // An invalid call is judged under the same revision.
    let (_, v) = w.check(
        &json!({"name": "read_file", "arguments": {}}),
        &["--bundle-url", &url],
    );
    assert_eq!(
        (&v["verdict"], &v["policy_revision"]),
        (&json!("invalid"), &json!("r1"))
    );
    // Without a bundle the field is there, null.
    let (_, v) = w.check(&read("other.txt"), &["--explain"]);
    assert_eq!(v["policy_revision"], Value::Null);
    assert_eq!(v["input"]["session"]["policy_revision"], Value::Null);
}

#[test]
fn an_unchanged_bundle_is_not_downloaded_again() {
    let w = World::new();
    let server = Server::start(&w.root.join("srv"), 0);
    server.serve("b.tar.gz", &tarball(&bundle("r1", &["secret.txt"])));
    yaml(
        &w,
        &format!(
            "bundle:\n  url: {}\n  poll_ms: 100\n",
            server.bundle_url("b.tar.gz")
        ),
    );
    let mut s = Stream::start(&w, &[]);
    assert_eq!(s.ask(&read("secret.txt"))["policy_revision"], "r1");
    server.wait_for("three polls", |r| r.len() >= 4);
    assert_eq!(s.ask(&read("secret.txt"))["verdict"], "deny");
    let (code, stderr) = s.finish();
    assert_eq!(code, 20, "{stderr}");
    let requests = server.requests();
    assert_eq!(requests[0], "GET /bundles/b.tar.gz 200");
    assert!(
        requests[1..]
            .iter()
            .all(|r| r == "GET /bundles/b.tar.gz 304"),
        "an unchanged bundle was downloaded again: {requests:?}"
    );
}

#[test]
fn a_new_revision_is_swapped_in_between_calls_of_one_run() {
    let w = World::new();
    let server = Server::start(&w.root.join("srv"), 0);
    server.serve("b.tar.gz", &tarball(&bundle("r1", &["secret.txt"])));
    yaml(
        &w,
        &format!(
            "bundle:\n  url: {}\n  poll_ms: 100\n",
            server.bundle_url("b.tar.gz")
        ),
    );
    let mut s = Stream::start(&w, &[]);
    let before = s.ask(&read("notes.txt"));
    assert_eq!(
        (&before["verdict"], &before["policy_revision"]),
        (&json!("allow"), &json!("r1"))
    );
    server.serve(
        "b.tar.gz",
        &tarball(&bundle("r2", &["secret.txt", "notes.txt"])),
    );
    // The poll after it: the poller has verified and published this download.
    server.wait_for("the new revision's download, judged", |r| {
        polled_after(r, 2)
    });
    let after = s.ask(&read("notes.txt"));
    assert_eq!(
        (&after["verdict"], &after["policy_revision"]),
        (&json!("deny"), &json!("r2")),
        "{after}"
    );
    let (code, stderr) = s.finish();
    assert_eq!(code, 20, "{stderr}");
}

/// Whether the server has answered `n` downloads with 200 and been asked again since.
fn polled_after(requests: &[String], n: usize) -> bool {
    let nth = requests
        .iter()
        .enumerate()
        .filter(|(_, l)| l.ends_with(" 200"))
        .nth(n - 1);
    nth.is_some_and(|(at, _)| requests.len() > at + 1)
}

#[test]
fn a_corrupt_or_misshapen_bundle_is_refused_and_the_last_good_one_kept() {
    let w = World::new();
    let server = Server::start(&w.root.join("srv"), 0);
    server.serve("b.tar.gz", &tarball(&bundle("r1", &["secret.txt"])));
    yaml(
        &w,
        &format!(
            "bundle:\n  url: {}\n  poll_ms: 100\n",
            server.bundle_url("b.tar.gz")
        ),
    );
    let mut s = Stream::start(&w, &[]);
    assert_eq!(s.ask(&read("secret.txt"))["policy_revision"], "r1");
    // Not a tarball at all.
    server.serve("b.tar.gz", b"this is not gzip");
    // The poll after it: the poller has judged this download (it polls one at a time).
    server.wait_for("the corrupt download, judged", |r| polled_after(r, 2));
    let v = s.ask(&read("secret.txt"));
    assert_eq!(
        (&v["verdict"], &v["policy_revision"]),
        (&json!("deny"), &json!("r1"))
    );
    // A tarball whose rules lie outside its manifest's roots.
    let mut outside = bundle("r3", &[]);
    outside[0].1 = br#"{"revision": "r3", "roots": ["hosts"]}"#.to_vec();
    // The corrupt one is downloaded again at each poll (refused, it is never kept), and one of
    // those may be under way as this is served: the second download from here is this one.
    let before = server
        .requests()
        .iter()
        .filter(|l| l.ends_with(" 200"))
        .count();
    server.serve("b.tar.gz", &tarball(&outside));
    // The poll after it: the poller has judged this download (it polls one at a time).
    server.wait_for("the misshapen download, judged", |r| {
        polled_after(r, before + 2)
    });
    let v = s.ask(&read("secret.txt"));
    assert_eq!(
        (&v["verdict"], &v["policy_revision"]),
        (&json!("deny"), &json!("r1"))
    );
    let (_, stderr) = s.finish();
    assert!(stderr.contains("not a .tar.gz bundle"), "{stderr}");
    assert!(stderr.contains("do not permit Reasonix rules"), "{stderr}");
    assert!(stderr.contains("the bundle in force stays"), "{stderr}");
}

#[test]
fn a_failed_first_download_refuses_to_start_unless_a_last_good_copy_is_configured() {
    let w = World::new();
    let server = Server::start(&w.root.join("srv"), 0);
    server.serve("b.tar.gz", &tarball(&bundle("r1", &["secret.txt"])));
    let good = server.bundle_url("b.tar.gz");
    let missing = server.bundle_url("missing.tar.gz");
    // No bundle, no gate: never an empty policy, never the embedded default.
    let (code, out, err) = w.run(
        &[
            "check",
            "--workspace",
            w.ws.to_str().unwrap(),
            "--bundle-url",
            &missing,
            &read("a").to_string(),
        ],
        "",
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("cannot download the bundle") && err.contains("404"),
        "{err}"
    );
    assert!(err.contains("nothing was checked"), "{err}");
    // A corrupt first download refuses too.
    server.serve("bad.tar.gz", b"\x1f\x8b garbage");
    let (code, _, err) = w.run(
        &[
            "check",
            "--workspace",
            w.ws.to_str().unwrap(),
            "--bundle-url",
            &server.bundle_url("bad.tar.gz"),
            &read("a").to_string(),
        ],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot read the bundle"), "{err}");
    // With a last good copy configured, a good download is kept on disk...
    yaml(
        &w,
        &format!("bundle:\n  url: {good}\n  cache: .reasonix/bundle.tar.gz\n"),
    );
    let (code, v) = w.check(&read("secret.txt"), &[]);
    assert_eq!((code, &v["policy_revision"]), (20, &json!("r1")));
    assert!(w.ws.join(".reasonix/bundle.tar.gz").is_file());
    // ...and used, verified again, when the server is gone.
    yaml(
        &w,
        &format!("bundle:\n  url: {missing}\n  cache: .reasonix/bundle.tar.gz\n"),
    );
    let (code, out, err) = w.run(
        &[
            "check",
            "--format",
            "json",
            "--workspace",
            w.ws.to_str().unwrap(),
            &read("secret.txt").to_string(),
        ],
        "",
    );
    assert_eq!(code, 20, "{out}{err}");
    assert!(err.contains("last good copy"), "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["policy_revision"], "r1");
    // The copy is one of the host's own files: no call may change it.
    let (_, v) = w.check(
        &json!({"name": "write_file", "arguments": {"path": ".reasonix/bundle.tar.gz", "content": "x"}}),
        &[],
    );
    assert_eq!(v["verdict"], "deny", "{v}");
    assert_eq!(v["stage"], "sandbox", "{v}");
}

/// ES256 keys made with `openssl` for this test: (private PKCS#8 PEM, public PEM).
fn es256_keys(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let private = dir.join("es256.pem");
    let public = dir.join("es256.pub.pem");
    let ok = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
        ])
        .arg(&private)
        .status()
        .unwrap()
        .success()
        && Command::new("openssl")
            .args(["pkey", "-pubout", "-in"])
            .arg(&private)
            .arg("-out")
            .arg(&public)
            .status()
            .unwrap()
            .success();
    assert!(ok, "openssl could not make a test key");
    (
        std::fs::read(private).unwrap(),
        std::fs::read(public).unwrap(),
    )
}

#[test]
fn a_signed_bundle_is_verified_and_a_tampered_one_refused() {
    let w = World::new();
    let (private, public) = es256_keys(&w.root);
    std::fs::write(w.ws.join("fleet.pub.pem"), &public).unwrap();
    let key = jsonwebtoken::EncodingKey::from_ec_pem(&private).unwrap();
    let alg = jsonwebtoken::Algorithm::ES256;
    yaml(
        &w,
        "bundle:\n  path: b.tar.gz\n  verification: {key: fleet.pub.pem, algorithm: ES256, keyid: fleet}\n",
    );
    let check = |files: &[(&'static str, Vec<u8>)]| {
        std::fs::write(w.ws.join("b.tar.gz"), tarball(files)).unwrap();
        w.run(
            &[
                "check",
                "--format",
                "json",
                "--workspace",
                w.ws.to_str().unwrap(),
                &read("secret.txt").to_string(),
            ],
            "",
        )
    };
    // Signed: verified and in force.
    let good = signed(&bundle("r1", &["secret.txt"]), &key, alg);
    let (code, out, err) = check(&good);
    assert_eq!(code, 20, "{out}{err}");
    assert!(out.contains(r#""policy_revision":"r1""#), "{out}");
    // Over HTTP too.
    let server = Server::start(&w.root.join("srv"), 0);
    server.serve("s.tar.gz", &tarball(&good));
    let (code, v) = w.check(
        &read("secret.txt"),
        &["--bundle-url", &server.bundle_url("s.tar.gz")],
    );
    assert_eq!((code, &v["policy_revision"]), (20, &json!("r1")), "{v}");
    // A rule file changed after signing: refused, whole.
    let mut tampered = good.clone();
    tampered[1].1 = b"version: 1\ndefaults:\n  read_only: allow\n  writer: allow\n".to_vec();
    let (code, _, err) = check(&tampered);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("signature does not verify") && err.contains("digest mismatch"),
        "{err}"
    );
    // A file the signature does not list.
    let mut extra = good.clone();
    extra.push(("reasonix/rules/more.yaml", b"version: 1\n".to_vec()));
    let (code, _, err) = check(&extra);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not included in bundle signature"), "{err}");
    // Unsigned, while a key is configured.
    let (code, _, err) = check(&bundle("r1", &["secret.txt"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no .signatures.json"), "{err}");
    // Signed with another key.
    let (other, _) = es256_keys(&w.outside);
    let forged = signed(
        &bundle("r9", &[]),
        &jsonwebtoken::EncodingKey::from_ec_pem(&other).unwrap(),
        alg,
    );
    let (code, _, err) = check(&forged);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("does not verify with the configured key"),
        "{err}"
    );
    // Signed for another key id than the one configured.
    yaml(
        &w,
        "bundle:\n  path: b.tar.gz\n  verification: {key: fleet.pub.pem, algorithm: ES256, keyid: other}\n",
    );
    let (code, _, err) = check(&good);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the JWT names key \"fleet\""), "{err}");
    // Signed, but no key configured: loaded, with a warning that nothing was checked.
    yaml(&w, "bundle:\n  path: b.tar.gz\n");
    let (code, _, err) = check(&good);
    assert_eq!(code, 20, "{err}");
    assert!(err.contains("its signature was not checked"), "{err}");
    // HS256 with a shared secret works the same way.
    std::fs::write(w.ws.join("secret.key"), b"a shared secret of the fleet").unwrap();
    yaml(
        &w,
        "bundle:\n  path: b.tar.gz\n  verification: {key: secret.key, algorithm: HS256}\n",
    );
    let hs = signed(
        &bundle("h1", &["secret.txt"]),
        &jsonwebtoken::EncodingKey::from_secret(b"a shared secret of the fleet").unwrap(),
        jsonwebtoken::Algorithm::HS256,
    );
    let (code, out, err) = check(&hs);
    assert_eq!(code, 20, "{out}{err}");
    assert!(out.contains(r#""policy_revision":"h1""#), "{out}");
}

#[test]
fn a_bundle_folder_in_opa_layout_loads_and_layout_errors_refuse_it() {
    let w = World::new();
    let dir = w.root.join("bundle");
    let put = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put(
        ".manifest",
        r#"{"revision": "f1", "roots": ["reasonix", "hosts"]}"#,
    );
    put("hosts/data.json", r#"{"blocked": ["evil.example"]}"#);
    put(
        "reasonix/policy.rego",
        "package reasonix\nimport rego.v1\ndeny contains \"a blocked host\" if {\n  input.tool == \"read_file\"\n  some h in data.hosts.blocked\n  contains(input.arguments.path, h)\n}\n",
    );
    put(
        "reasonix/policy_test.rego",
        "package reasonix\nimport rego.v1\ntest_nothing if true\n",
    );
    let b = dir.to_str().unwrap();
    let (code, v) = w.check(&read("evil.example.txt"), &["--bundle", b]);
    assert_eq!((code, &v["policy_revision"]), (20, &json!("f1")), "{v}");
    assert!(common::reasons(&v).contains("a blocked host"), "{v}");
    let (code, _) = w.check(&read("fine.txt"), &["--bundle", b]);
    assert_eq!(code, 0);
    // A person reading text output sees the revision too.
    let (code, out, err) = w.run(
        &[
            "check",
            "--workspace",
            w.ws.to_str().unwrap(),
            "--bundle",
            b,
            &read("fine.txt").to_string(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("bundle  revision \"f1\""), "{out}");
    // Data outside the roots: refused as OPA refuses it.
    put("other/data.json", r#"{"x": 1}"#);
    let (code, _, err) = w.run(
        &[
            "check",
            "--workspace",
            w.ws.to_str().unwrap(),
            "--bundle",
            b,
            &read("a").to_string(),
        ],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("manifest roots [reasonix hosts] do not permit data at path '/other'"),
        "{err}"
    );
    std::fs::remove_dir_all(dir.join("other")).unwrap();
    // Overlapping roots.
    put(
        ".manifest",
        r#"{"revision": "f2", "roots": ["reasonix", "reasonix/rules", "hosts"]}"#,
    );
    let (code, _, err) = w.run(
        &[
            "check",
            "--workspace",
            w.ws.to_str().unwrap(),
            "--bundle",
            b,
            &read("a").to_string(),
        ],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("manifest has overlapped roots: 'reasonix' and 'reasonix/rules'"),
        "{err}"
    );
    // No manifest: every root, revision "" (as OPA).
    std::fs::remove_file(dir.join(".manifest")).unwrap();
    let (code, v) = w.check(&read("evil.example.txt"), &["--bundle", b]);
    assert_eq!((code, &v["policy_revision"]), (20, &json!("")), "{v}");
    // A bundle in the settings: `--policy` replaces it; `policies:` beside it is refused.
    w.file("p.yaml", "version: 1\n");
    yaml(&w, &format!("bundle:\n  path: {b}\n"));
    let (_, v) = w.check(&read("evil.example.txt"), &[]);
    assert_eq!(v["policy_revision"], "", "{v}");
    let p = w.ws.join("p.yaml");
    let (code, v) = w.check(
        &read("evil.example.txt"),
        &["--policy", p.to_str().unwrap()],
    );
    assert_eq!((code, &v["policy_revision"]), (0, &Value::Null), "{v}");
    yaml(&w, &format!("bundle:\n  path: {b}\npolicies: [p.yaml]\n"));
    let (code, _, err) = w.run(
        &[
            "check",
            "--workspace",
            w.ws.to_str().unwrap(),
            &read("a").to_string(),
        ],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("names both a bundle"), "{err}");
    // --bundle and --policy are one or the other.
    let (code, _, err) = w.run(
        &[
            "check",
            "--bundle",
            b,
            "--policy",
            "p.yaml",
            &read("a").to_string(),
        ],
        "",
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Decision logs out.

fn write(path: &str, content: &str, id: &str) -> Value {
    json!({"id": id, "name": "write_file", "arguments": {"path": path, "content": content}})
}

#[test]
fn decisions_reach_the_collector_in_order_gzipped_and_masked() {
    let w = World::new();
    let server = Server::start(&w.root.join("srv"), 0);
    server.serve("b.tar.gz", &tarball(&bundle("r1", &["secret.txt"])));
    yaml(
        &w,
        &format!(
            "bundle:\n  url: {}\n  poll_ms: 0\ndecision_logs:\n  url: {}\n  batch: 10\n  flush_ms: 100\n  mask: [/input/arguments/content]\n",
            server.bundle_url("b.tar.gz"),
            server.collector()
        ),
    );
    let local = w.root.join("decisions.jsonl");
    // Enough calls that `check` judges them on several threads: the log is still in order.
    let calls: Vec<Value> = (0..40)
        .map(|i| write("ok.txt", &format!("s3cret-{i}"), &format!("c{i:02}")))
        .chain([json!({"id": "c40", "name": "read_file", "arguments": {"path": "secret.txt"}})])
        .collect();
    let stdin: String = calls.iter().map(|c| format!("{c}\n")).collect();
    let (code, verdicts) = w.check_lines(&stdin, &["--decision-log", local.to_str().unwrap()]);
    assert_eq!(code, 20);
    // The verdicts do not show the input (no --explain), though the log has it.
    assert!(verdicts.iter().all(|v| v["input"].is_null()));
    let received = server.received();
    let ids: Vec<&str> = received
        .iter()
        .map(|e| e["result"]["id"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..41).map(|i| format!("c{i:02}")).collect();
    assert_eq!(ids, expected, "in order, none lost");
    let posts = server
        .requests()
        .iter()
        .filter(|r| r.starts_with("POST /logs 200"))
        .count();
    assert!(posts >= 2, "batched by 10: {posts} posts");
    let e = &received[0];
    for key in [
        "decision_id",
        "path",
        "input",
        "result",
        "timestamp",
        "bundles",
        "stage",
        "rules",
        "outcome",
        "labels",
    ] {
        assert!(e.get(key).is_some(), "no {key}: {e}");
    }
    assert_eq!(e["bundles"], json!({"reasonix": {"revision": "r1"}}));
    assert_eq!(e["input"]["tool"], "write_file");
    assert_eq!(e["input"]["session"]["policy_revision"], "r1");
    assert_eq!(e["result"]["verdict"], "allow");
    assert_eq!(e["outcome"], Value::Null, "a dry run ran nothing");
    assert_eq!(e["rules"][0]["id"], "fleet-write-ok");
    // Masked: the content is gone, and `erased` says so.
    assert!(e["input"]["arguments"].get("content").is_none(), "{e}");
    assert_eq!(e["input"]["arguments"]["path"], "ok.txt");
    assert_eq!(e["erased"], json!(["/input/arguments/content"]));
    let denied = &received[40];
    assert_eq!(
        (&denied["result"]["verdict"], &denied["outcome"]),
        (&json!("deny"), &json!("blocked"))
    );
    assert_eq!(denied["stage"], "policy");
    let unique: std::collections::BTreeSet<&str> = received
        .iter()
        .map(|e| e["decision_id"].as_str().unwrap())
        .collect();
    assert_eq!(unique.len(), 41);
    // The local file holds the same events, masked the same way.
    let lines = common::jsonl(&local);
    assert_eq!(lines.len(), 41);
    for (l, r) in lines.iter().zip(&received) {
        assert_eq!(l, r);
    }
    assert!(!std::fs::read_to_string(&local).unwrap().contains("s3cret"));
}

#[test]
fn decisions_made_while_the_collector_is_down_are_delivered_after_it_restarts() {
    let w = World::new();
    let srv = w.root.join("srv");
    let mut server = Server::start(&srv, 0);
    let port = server.port;
    yaml(
        &w,
        &format!(
            "decision_logs:\n  url: {}\n  batch: 1\n  flush_ms: 50\n",
            server.collector()
        ),
    );
    let mut s = Stream::start(&w, &[]);
    s.ask(&json!({"id": "d0", "name": "read_file", "arguments": {"path": "a"}}));
    server.wait_for("the first batch", |r| {
        r.iter().any(|l| l.starts_with("POST"))
    });
    server.stop();
    for i in 1..4 {
        let v =
            s.ask(&json!({"id": format!("d{i}"), "name": "read_file", "arguments": {"path": "a"}}));
        assert_eq!(v["verdict"], "allow");
    }
    // Buffered on disk while the collector is down.
    let buffer = w.ws.join(".reasonix/decision-logs");
    let start = Instant::now();
    while std::fs::read_dir(&buffer).map(|d| d.count()).unwrap_or(0) < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "nothing buffered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _restarted = {
        let s2 = Server::start(&srv, port);
        assert_eq!(s2.port, port);
        s2
    };
    s.ask(&json!({"id": "d4", "name": "read_file", "arguments": {"path": "a"}}));
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<String> = _restarted
        .received()
        .iter()
        .map(|e| e["result"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["d0", "d1", "d2", "d3", "d4"], "in order, none lost");
    assert_eq!(
        std::fs::read_dir(&buffer).unwrap().count(),
        0,
        "the buffer is empty once delivered"
    );
}

#[test]
fn the_decision_buffer_is_bounded_and_drops_the_oldest() {
    let w = World::new();
    // A port nobody listens on: the collector is down for the whole run.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let bound = 2000;
    yaml(
        &w,
        &format!(
            "decision_logs:\n  url: http://127.0.0.1:{port}/logs\n  batch: 1\n  flush_ms: 20\n  buffer_bytes: {bound}\n"
        ),
    );
    let stdin: String = (0..40)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("e{i:02}"), "name": "read_file", "arguments": {"path": "a"}})
            )
        })
        .collect();
    let ws = w.ws.to_str().unwrap().to_owned();
    let (code, out, err) = w.run(&["check", "--format", "json", "--workspace", &ws], &stdin);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().count(), 40, "every call was judged");
    assert!(err.contains("decision-log buffer is full"), "{err}");
    let buffer = w.ws.join(".reasonix/decision-logs");
    let used: u64 = std::fs::read_dir(&buffer)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        used > 0 && used <= bound,
        "the buffer holds {used} bytes, bound {bound}"
    );
    // The collector comes up: what the buffer kept is delivered, oldest first, and it is the
    // newest decisions.
    let server = Server::start(&w.root.join("srv"), port);
    let (code, _, err) = w.run(
        &[
            "check",
            "--format",
            "json",
            "--workspace",
            &ws,
            &json!({"id": "last", "name": "read_file", "arguments": {"path": "a"}}).to_string(),
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let ids: Vec<String> = server
        .received()
        .iter()
        .map(|e| e["result"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.len() > 1 && ids.len() < 41, "{ids:?}");
    assert_eq!(ids.last().map(String::as_str), Some("last"));
    assert_eq!(
        ids[ids.len() - 2],
        "e39",
        "the newest buffered decision was kept: {ids:?}"
    );
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "delivered in order");
}

#[test]
fn a_hung_collector_never_delays_a_verdict() {
    let w = World::new();
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _hold = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
        }
    });
    yaml(
        &w,
        &format!(
            "decision_logs:\n  url: http://127.0.0.1:{port}/logs\n  batch: 1\n  flush_ms: 10\n"
        ),
    );
    let mut s = Stream::start(&w, &[]);
    s.ask(&read("warm-up"));
    let mut slowest = Duration::ZERO;
    for i in 0..5 {
        let start = Instant::now();
        let v = s.ask(&read(&format!("f{i}")));
        slowest = slowest.max(start.elapsed());
        assert_eq!(v["verdict"], "allow");
    }
    let (code, stderr) = s.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        slowest < Duration::from_secs(1),
        "a verdict waited {slowest:?} for a collector that never answers"
    );
}

// ---------------------------------------------------------------------------------------------
// A live run.

#[test]
fn a_run_under_a_bundle_records_its_revision_on_every_line_and_logs_each_outcome() {
    let w = World::new();
    let b = w.root.join("b.tar.gz");
    std::fs::write(&b, tarball(&bundle("r7", &["secret.txt"]))).unwrap();
    w.file("secret.txt", "x");
    let script = w.root.join("s.json");
    std::fs::write(
        &script,
        r#"[{"tool_calls": [{"name": "write_file", "arguments": {"path": "ok.txt", "content": "fine"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "secret.txt"}}]}]"#,
    )
    .unwrap();
    let log = w.root.join("decisions.jsonl");
    let (code, out, err) = w.run(
        &[
            "run",
            "--provider",
            &format!("script:{}", script.display()),
            "--workspace",
            w.ws.to_str().unwrap(),
            "--bundle",
            b.to_str().unwrap(),
            "--decision-log",
            log.to_str().unwrap(),
            "go",
        ],
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    let record = common::jsonl(&w.ws.join(".reasonix/record.jsonl"));
    assert!(record.len() >= 4, "{record:?}");
    for line in &record {
        assert_eq!(line["policy_revision"], "r7", "{line}");
    }
    let decisions = common::jsonl(&log);
    let outcomes: Vec<(&str, &str)> = decisions
        .iter()
        .map(|e| {
            (
                e["input"]["tool"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [("write_file", "succeeded"), ("read_file", "blocked")]
    );
    assert_eq!(decisions[1]["bundles"]["reasonix"]["revision"], "r7");
}

#[test]
fn credentials_come_from_the_environment_and_a_missing_one_refuses_to_start() {
    let w = World::new();
    let server = Server::start_with(&w.root.join("srv"), 0, &["--token", "fleet-token-1"]);
    server.serve("b.tar.gz", &tarball(&bundle("t1", &["secret.txt"])));
    yaml(
        &w,
        &format!(
            "bundle:\n  url: {}\n  token_env: FLEET_TOKEN\ndecision_logs:\n  url: {}\n  token_env: FLEET_TOKEN\n  flush_ms: 50\n",
            server.bundle_url("b.tar.gz"),
            server.collector()
        ),
    );
    let check = |token: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reasonix"));
        cmd.args(["check", "--format", "json", "--workspace"])
            .arg(&w.ws)
            .arg(read("secret.txt").to_string())
            .current_dir(&w.outside)
            .env("HOME", &w.home)
            .env_remove("FLEET_TOKEN");
        if let Some(t) = token {
            cmd.env("FLEET_TOKEN", t);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = check(Some("fleet-token-1"));
    assert_eq!(code, 20, "{out}{err}");
    assert!(out.contains(r#""policy_revision":"t1""#), "{out}");
    let received = server.received();
    assert_eq!(received.len(), 1, "{:?}", server.requests());
    assert_eq!(received[0]["bundles"]["reasonix"]["revision"], "t1");
    // Unset: refused before any request goes out without credentials.
    let before = server.requests().len();
    let (code, _, err) = check(None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bundle.token_env names FLEET_TOKEN, which is not set"),
        "{err}"
    );
    assert_eq!(server.requests().len(), before);
    // A wrong token: the server's 401 refuses the bundle, and the gate does not start.
    let (code, _, err) = check(Some("wrong-token-2"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("401"), "{err}");
    assert!(
        !err.contains("fleet-token-1") && !err.contains("wrong-token-2"),
        "a token in the error: {err}"
    );
}
