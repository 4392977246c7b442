//! The egress proxy: network access by host name, for the processes of a jailed run. It is part
//! of the **jail** stage: a bash call admitted by the gate runs with it, and each connection its
//! processes ask for is a call of its own, `network_connect {host, port}`, judged by the same gate.
//!
//! ```text
//! jailed process ──(its run's network namespace: lo only)──► 127.0.0.1:3128 ─┐
//!                                                                             │ CONNECT host:port
//!                                                                             │ GET http://host/…
//!   Reasonix (host namespace) ◄─ accept ─────────────────────────────────────┘
//!     1. judge `network_connect {host, port}` through the gate (YAML, Rego, posture, approver)
//!     2. resolve host; refuse loopback, private, link-local and metadata addresses unless a
//!        `sandbox.network` entry names the address itself
//!     3. connect to the address it checked (no second lookup), relay, count bytes each way
//!     4. one record line per connection
//! ```
//!
//! Where the policy has `sandbox.network` entries and a network namespace can be made
//! ([`crate::sandbox::jail`]), each run gets a namespace with nothing but `lo` and the proxy's
//! listening socket in it, Landlock lets a process connect to the proxy's port only, and seccomp
//! refuses UDP (the proxy resolves names, so no DNS is needed inside). The environment points
//! every common client at the proxy ([`environment`]). A program that ignores it has no route.
//!
//! What it does not do: it does not look inside TLS (a CONNECT to an allowed host may carry any
//! request to that host), and a plain-HTTP client connection stays bound to the first host it was
//! judged for: a second request on it goes to that host, whatever its `Host:` header says.

pub mod address;
pub mod hosts;
mod proxy;

use serde::Serialize;

pub use hosts::{Allowlist, Listed};
pub use proxy::Proxy;

/// The name of the call each connection is judged as.
pub const CONNECT_TOOL: &str = "network_connect";

/// The port the proxy listens on, on `127.0.0.1` of each run's own network namespace (so every
/// run has the same one, and no host service can hold it).
pub const PROXY_PORT: u16 = 3128;

/// How a connection was judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judged {
    /// The verdict: `allow`, `deny`, or `ask` (then `allowed` says what the person or the
    /// posture answered).
    pub verdict: String,
    /// Whether the connection may be made.
    pub allowed: bool,
    /// Why, in words.
    pub reasons: Vec<String>,
    /// The rules that voted, by id.
    pub rules: Vec<String>,
}

/// Who judges the connections of a run: the gate, for a bash call it admitted
/// (`Gate::egress_judge`), or the `sandbox.network` entries alone ([`ListJudge`]) for a command
/// no gate judged (`reasonix sandbox exec`).
pub trait ConnectionJudge: Send + Sync {
    /// Judges the call `network_connect {host, port}`. May block (a person may be asked).
    fn judge_connection(&self, host: &str, port: u16) -> Judged;
}

/// Judges by the `sandbox.network` entries alone: listed is allowed, anything else denied.
#[derive(Debug)]
pub struct ListJudge(pub Allowlist);

impl ConnectionJudge for ListJudge {
    fn judge_connection(&self, host: &str, port: u16) -> Judged {
        match self.0.allows(host, port) {
            Some(rule) => Judged {
                verdict: "allow".into(),
                allowed: true,
                reasons: vec![format!("sandbox.network lists {rule}")],
                rules: vec!["sandbox.network".into()],
            },
            None => Judged {
                verdict: "deny".into(),
                allowed: false,
                reasons: vec![format!(
                    "{host}:{port} is not in sandbox.network (add it there or with --allow-net)"
                )],
                rules: Vec::new(),
            },
        }
    }
}

/// One connection a jailed process asked the proxy for: a record line of its own
/// (`event: network_connect`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Connection {
    /// `network_connect`.
    pub event: &'static str,
    /// The host as the client named it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// `CONNECT`, or the method of a plain HTTP request.
    pub method: String,
    /// The gate's verdict: `allow`, `deny`, `ask`.
    pub verdict: String,
    /// `connected` (and relayed until one side closed), `refused` (by the verdict or the
    /// address check; nothing was connected), `failed` (allowed, and the host could not be
    /// resolved or reached), or `cut` (still open when the run ended).
    pub outcome: &'static str,
    /// Why, in words.
    pub reasons: Vec<String>,
    /// The rules that voted.
    pub rules: Vec<String>,
    /// The address connected to (or refused), `IP:PORT`.
    pub address: Option<String>,
    /// Bytes from the jailed process to the host.
    pub bytes_up: u64,
    /// Bytes from the host to the jailed process.
    pub bytes_down: u64,
    /// From accept to close, in milliseconds.
    pub duration_ms: u64,
}

/// The variables that point clients at the proxy: curl, wget, git, pip, Python's `requests`
/// and `urllib`, Node's `undici` with `NODE_USE_ENV_PROXY`, Go (upper and lower case: curl
/// reads only the lower-case `http_proxy`), npm (`npm_config_proxy`, `npm_config_https_proxy`),
/// cargo (`CARGO_HTTP_PROXY`) and pip (`PIP_PROXY`). `NO_PROXY` is empty: nothing bypasses it
/// (nothing else is reachable anyway).
pub fn environment(port: u16) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut env: Vec<(String, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "CARGO_HTTP_PROXY",
        "PIP_PROXY",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), url.clone()))
    .collect();
    env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    env.push(("NO_PROXY".into(), String::new()));
    env.push(("no_proxy".into(), String::new()));
    env
}
