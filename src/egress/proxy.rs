//! The proxy of one run: accepts on the listener made in the run's network namespace, reads one
//! request head (`httparse`), judges its destination, checks the address, connects and relays.
//!
//! Two forms are served: `CONNECT host:port` (TLS, or anything a client tunnels), answered
//! `200` once connected and relayed byte for byte; and a plain-HTTP request in absolute form
//! (`GET http://host[:port]/path HTTP/1.1`), sent on in origin form (`GET /path`), without
//! `Proxy-*` headers. Anything else gets `400`; a refusal `403` with the reasons in the body;
//! a host that cannot be resolved or reached `502`.
//!
//! It runs on a thread of its own with a single-threaded tokio runtime, for as long as the run:
//! [`Proxy::stop`] closes the listener, gives open connections a moment to end (the run's
//! processes are gone by then), cuts the rest, and returns one [`Connection`] per connection.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::{Allowlist, CONNECT_TOOL, Connection, ConnectionJudge, Judged, address, hosts};

/// The longest request head read.
const HEAD_LIMIT: usize = 16 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection to a host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections are given to end once the run is over.
const GRACE: Duration = Duration::from_millis(300);

/// One connection while it lives.
struct Live {
    record: Mutex<Connection>,
    up: AtomicU64,
    down: AtomicU64,
    started: Instant,
}

impl Live {
    fn record(&self) -> Connection {
        let mut c = match self.record.lock() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        c.bytes_up = self.up.load(Ordering::Relaxed);
        c.bytes_down = self.down.load(Ordering::Relaxed);
        if c.outcome == "cut" {
            c.duration_ms = millis(self.started.elapsed());
        }
        c
    }

    fn set(&self, f: impl FnOnce(&mut Connection)) {
        if let Ok(mut c) = self.record.lock() {
            f(&mut c);
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What every connection handler shares.
struct Shared {
    judge: Arc<dyn ConnectionJudge>,
    allowlist: Allowlist,
    log: Mutex<Vec<Arc<Live>>>,
}

/// A running proxy. Dropping it stops it too (its records are then lost).
pub struct Proxy {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").finish_non_exhaustive()
    }
}

impl Proxy {
    /// Serves `listener` (already bound; in a run's network namespace), judging each
    /// destination with `judge` and letting an address in a refused range through only when
    /// `allowlist` names it.
    ///
    /// # Errors
    ///
    /// When the runtime or its thread cannot be started.
    pub fn start(
        listener: std::net::TcpListener,
        judge: Arc<dyn ConnectionJudge>,
        allowlist: Allowlist,
    ) -> io::Result<Proxy> {
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (stop, stopped) = oneshot::channel();
        let shared = Arc::new(Shared {
            judge,
            allowlist,
            log: Mutex::new(Vec::new()),
        });
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("reasonix-egress".into())
            .spawn(move || {
                runtime.block_on(serve(listener, serving, stopped));
                // A judge still waiting on a person (the run ended first) is not waited for:
                // its connection is cut already, and the run's result must not hang on it.
                runtime.shutdown_background();
            })?;
        Ok(Proxy {
            stop: Some(stop),
            thread: Some(thread),
            shared,
        })
    }

    /// Stops accepting, lets open connections end for a moment, cuts the rest, and returns
    /// every connection in the order they were accepted.
    pub fn stop(mut self) -> Vec<Connection> {
        self.halt();
        match self.shared.log.lock() {
            Ok(log) => log.iter().map(|l| l.record()).collect(),
            Err(poisoned) => poisoned.into_inner().iter().map(|l| l.record()).collect(),
        }
    }

    fn halt(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.halt();
    }
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!("the egress proxy cannot serve its listener: {e}");
            return;
        }
    };
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let live = Arc::new(Live {
                        record: Mutex::new(Connection {
                            event: CONNECT_TOOL,
                            host: String::new(),
                            port: 0,
                            method: String::new(),
                            verdict: String::new(),
                            outcome: "cut",
                            reasons: Vec::new(),
                            rules: Vec::new(),
                            address: None,
                            bytes_up: 0,
                            bytes_down: 0,
                            duration_ms: 0,
                        }),
                        up: AtomicU64::new(0),
                        down: AtomicU64::new(0),
                        started: Instant::now(),
                    });
                    if let Ok(mut log) = shared.log.lock() {
                        log.push(Arc::clone(&live));
                    }
                    tasks.spawn(handle(stream, Arc::clone(&shared), live));
                }
                Err(e) => tracing::debug!("egress proxy: accept failed: {e}"),
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(GRACE, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
}

/// A request head, parsed.
struct Head {
    method: String,
    target: String,
    minor: u8,
    headers: Vec<(String, Vec<u8>)>,
    /// Its length in the buffer; what follows belongs to the body or the tunnel.
    len: usize,
}

/// Reads until a whole request head is in `buf`.
async fn read_head(client: &mut TcpStream, buf: &mut Vec<u8>) -> Result<Head, String> {
    let mut chunk = [0u8; 4096];
    loop {
        let n = match tokio::time::timeout(HEAD_TIMEOUT, client.read(&mut chunk)).await {
            Err(_) => return Err("no request head within 10 s".into()),
            Ok(Err(e)) => return Err(format!("reading the request: {e}")),
            Ok(Ok(0)) => return Err("the client closed before a whole request head".into()),
            Ok(Ok(n)) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 96];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(len)) => {
                return Ok(Head {
                    method: req.method.unwrap_or_default().to_owned(),
                    target: req.path.unwrap_or_default().to_owned(),
                    minor: req.version.unwrap_or(1),
                    headers: req
                        .headers
                        .iter()
                        .map(|h| (h.name.to_owned(), h.value.to_vec()))
                        .collect(),
                    len,
                });
            }
            Ok(httparse::Status::Partial) if buf.len() < HEAD_LIMIT => {}
            Ok(httparse::Status::Partial) => {
                return Err(format!(
                    "the request head is longer than {HEAD_LIMIT} bytes"
                ));
            }
            Err(e) => return Err(format!("not an HTTP request: {e}")),
        }
    }
}

/// Where a request goes: host, port, and for plain HTTP the origin-form target.
fn destination(head: &Head) -> Result<(String, u16, Option<String>), String> {
    if head.method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = match head.target.strip_prefix('[') {
            Some(rest) => rest.split_once("]:").map(|(h, p)| (format!("[{h}]"), p)),
            None => head.target.rsplit_once(':').map(|(h, p)| (h.to_owned(), p)),
        }
        .ok_or_else(|| format!("CONNECT {:?}: write CONNECT host:port", head.target))?;
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("CONNECT {:?}: {port:?} is not a port", head.target))?;
        if host.is_empty() || host == "[]" {
            return Err(format!("CONNECT {:?}: the host is empty", head.target));
        }
        let host =
            hosts::canonical_host(&host).map_err(|e| format!("CONNECT {:?}: {e}", head.target))?;
        return Ok((host, port, None));
    }
    let url = reqwest::Url::parse(&head.target).map_err(|_| {
        format!(
            "{} {:?}: a proxy request names its URL whole (http://host/path), or tunnels with CONNECT",
            head.method, head.target
        )
    })?;
    if url.scheme() != "http" {
        return Err(format!(
            "{} {:?}: only http:// is forwarded; https goes through CONNECT",
            head.method, head.target
        ));
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("{:?} names no host", head.target))?;
    let host = hosts::canonical_host(host).map_err(|e| format!("{:?}: {e}", head.target))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let mut origin = url.path().to_owned();
    if let Some(q) = url.query() {
        origin.push('?');
        origin.push_str(q);
    }
    Ok((host, port, Some(origin)))
}

/// Answers a refusal or an error and closes.
async fn answer(client: &mut TcpStream, status: &str, why: &str) {
    let body = format!("reasonix egress proxy: {why}\n");
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}

async fn handle(mut client: TcpStream, shared: Arc<Shared>, live: Arc<Live>) {
    let done = |live: &Live, outcome: &'static str| {
        let ms = millis(live.started.elapsed());
        live.set(|c| {
            c.outcome = outcome;
            c.duration_ms = ms;
        });
    };
    let mut buf = Vec::with_capacity(4096);
    let head = match read_head(&mut client, &mut buf).await {
        Ok(head) => head,
        Err(why) => {
            live.set(|c| {
                c.verdict = "invalid".into();
                c.reasons = vec![why.clone()];
            });
            answer(&mut client, "400 Bad Request", &why).await;
            return done(&live, "refused");
        }
    };
    let (host, port, origin) = match destination(&head) {
        Ok(d) => d,
        Err(why) => {
            live.set(|c| {
                c.method = head.method.clone();
                c.verdict = "invalid".into();
                c.reasons = vec![why.clone()];
            });
            answer(&mut client, "400 Bad Request", &why).await;
            return done(&live, "refused");
        }
    };
    live.set(|c| {
        c.host = host.clone();
        c.port = port;
        c.method = head.method.clone();
    });

    // 1. The gate (may block on a person: off the runtime's thread).
    let judge = Arc::clone(&shared.judge);
    let asked = host.clone();
    let judged = tokio::task::spawn_blocking(move || judge.judge_connection(&asked, port))
        .await
        .unwrap_or_else(|e| Judged {
            verdict: "deny".into(),
            allowed: false,
            reasons: vec![format!("the judge failed ({e}); refused")],
            rules: Vec::new(),
        });
    live.set(|c| {
        c.verdict = judged.verdict.clone();
        c.reasons = judged.reasons.clone();
        c.rules = judged.rules.clone();
    });
    if !judged.allowed {
        let why = format!(
            "{CONNECT_TOOL} {host}:{port} is {}: {}",
            if judged.verdict == "ask" {
                "refused (it asks, and the answer was no)"
            } else {
                "denied"
            },
            judged.reasons.join("; ")
        );
        answer(&mut client, "403 Forbidden", &why).await;
        return done(&live, "refused");
    }

    // 2. The address: resolved here, checked, and connected to as checked.
    let addresses: Vec<SocketAddr> = match hosts::ip_literal(&host) {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(found) => found.collect(),
            Err(e) => {
                let why = format!("{host} cannot be resolved: {e}");
                live.set(|c| c.reasons.push(why.clone()));
                answer(&mut client, "502 Bad Gateway", &why).await;
                return done(&live, "failed");
            }
        },
    };
    let mut refused = Vec::new();
    // Read for each connection: an address added or changed since counts at once.
    let own = address::own_addresses();
    let chosen = addresses
        .iter()
        .copied()
        .find(|a| match address::refused(a.ip(), &own) {
            Some(what) if shared.allowlist.names_ip(a.ip(), port).is_none() => {
                refused.push(format!("{} (a {what})", a.ip()));
                false
            }
            _ => true,
        });
    let Some(chosen) = chosen else {
        let why = format!(
            "{host} resolves to {}; only a sandbox.network entry that names the address itself (e.g. {}:{port}) reaches such an address",
            refused.join(", "),
            addresses
                .first()
                .map_or_else(|| "IP".to_owned(), |a| a.ip().to_string())
        );
        live.set(|c| {
            c.address = addresses.first().map(ToString::to_string);
            c.reasons.push(why.clone());
        });
        answer(&mut client, "403 Forbidden", &why).await;
        return done(&live, "refused");
    };
    live.set(|c| c.address = Some(chosen.to_string()));

    // 3. Connect and relay.
    let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(chosen)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let why = format!("{chosen} cannot be reached: {e}");
            live.set(|c| c.reasons.push(why.clone()));
            answer(&mut client, "502 Bad Gateway", &why).await;
            return done(&live, "failed");
        }
        Err(_) => {
            let why = format!("{chosen} did not answer within 10 s");
            live.set(|c| c.reasons.push(why.clone()));
            answer(&mut client, "502 Bad Gateway", &why).await;
            return done(&live, "failed");
        }
    };
    let rest = &buf[head.len..];
    let first: Vec<u8> = match origin {
        None => {
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return done(&live, "connected");
            }
            rest.to_vec()
        }
        Some(origin) => {
            let mut out =
                format!("{} {origin} HTTP/1.{}\r\n", head.method, head.minor).into_bytes();
            for (name, value) in &head.headers {
                if name.to_ascii_lowercase().starts_with("proxy-") {
                    continue;
                }
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(value);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(rest);
            out
        }
    };
    if upstream.write_all(&first).await.is_err() {
        return done(&live, "connected");
    }
    live.up.fetch_add(first.len() as u64, Ordering::Relaxed);
    let (mut client_read, mut client_write) = client.split();
    let (mut up_read, mut up_write) = upstream.split();
    tokio::join!(
        pump(&mut client_read, &mut up_write, &live.up),
        pump(&mut up_read, &mut client_write, &live.down),
    );
    done(&live, "connected");
}

/// Copies until end of file or an error, counting, then closes the writing side.
async fn pump<R, W>(from: &mut R, to: &mut W, count: &AtomicU64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                count.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
    let _ = to.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(method: &str, target: &str) -> Head {
        Head {
            method: method.into(),
            target: target.into(),
            minor: 1,
            headers: Vec::new(),
            len: 0,
        }
    }

    /// Records each host it is asked about, and refuses them all.
    struct Recording(Mutex<Vec<String>>);

    impl ConnectionJudge for Recording {
        fn judge_connection(&self, host: &str, _port: u16) -> Judged {
            if let Ok(mut seen) = self.0.lock() {
                seen.push(host.to_owned());
            }
            Judged {
                verdict: "deny".into(),
                allowed: false,
                reasons: vec!["a test".into()],
                rules: Vec::new(),
            }
        }
    }

    /// Issue 28, item 2: the judge, the record and (were it allowed) the connection see one
    /// spelling of the host, whatever the client wrote; what is no host is not judged at all.
    #[test]
    fn the_judge_and_the_record_see_the_canonical_host() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let judge = Arc::new(Recording(Mutex::new(Vec::new())));
        let proxy = Proxy::start(listener, judge.clone(), Allowlist::default()).unwrap();
        let ask = |target: &str| {
            let mut s = std::net::TcpStream::connect(at).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes())
                .unwrap();
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer
        };
        for target in [
            "VM.:80",
            "3221225986:80",
            "0xc0000202:80",
            "[::ffff:c000:202]:80",
        ] {
            assert!(ask(target).starts_with("HTTP/1.1 403"), "{target}");
        }
        assert!(ask("vm/..:80").starts_with("HTTP/1.1 400"));
        let seen = judge.0.lock().unwrap().clone();
        assert_eq!(seen, ["vm", "192.0.2.2", "192.0.2.2", "192.0.2.2"]);
        let hosts: Vec<String> = proxy.stop().into_iter().map(|c| c.host).collect();
        assert_eq!(hosts[..4], ["vm", "192.0.2.2", "192.0.2.2", "192.0.2.2"]);
    }

    #[test]
    fn destinations_are_read_from_connect_and_absolute_form() {
        type Expected<'a> = Option<(&'a str, u16, Option<&'a str>)>;
        let rows: &[(&str, &str, Expected)] = &[
            ("CONNECT", "github.com:443", Some(("github.com", 443, None))),
            ("CONNECT", "[::1]:8443", Some(("::1", 8443, None))),
            (
                "CONNECT",
                "GitHub.COM.:443",
                Some(("github.com", 443, None)),
            ),
            ("CONNECT", "3221225986:80", Some(("192.0.2.2", 80, None))),
            ("CONNECT", "evil.com/x:80", None),
            (
                "GET",
                "http://0xc0000202:81/",
                Some(("192.0.2.2", 81, Some("/"))),
            ),
            ("CONNECT", "127.0.0.1:80", Some(("127.0.0.1", 80, None))),
            (
                "GET",
                "http://example.com/a?b=c",
                Some(("example.com", 80, Some("/a?b=c"))),
            ),
            (
                "POST",
                "http://127.0.0.1:8080/x",
                Some(("127.0.0.1", 8080, Some("/x"))),
            ),
            ("CONNECT", "github.com", None),
            ("CONNECT", "github.com:0", None),
            ("CONNECT", ":443", None),
            ("GET", "/relative", None),
            ("GET", "https://example.com/", None),
            ("GET", "ftp://example.com/", None),
        ];
        for (method, target, expected) in rows {
            let got = destination(&head(method, target)).ok();
            let expected = expected.map(|(h, p, o)| (h.to_owned(), p, o.map(ToOwned::to_owned)));
            assert_eq!(got, expected, "{method} {target}");
        }
    }
}
