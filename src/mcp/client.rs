//! A live connection to one MCP server, through the official Rust SDK (`rmcp`) as a client.
//!
//! The gate and the tools are synchronous; `rmcp` is async. Every connection lives on one
//! runtime of its own ([`runtime`], one worker thread, never dropped), and a caller on any
//! thread — `reasonix check`, or a run's blocking thread — waits for its answer on a channel,
//! never by entering a runtime, so it cannot panic from inside another one.
//!
//! A connection that fails mid-call (the process died, the transport closed) is marked dead
//! with the reason, and every tool of its server reports itself unavailable from then on: a
//! later call is `invalid`, naming the death, until the server is restarted (its connect judged
//! again: `crate::agent::servers`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool as McpTool};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceExt};
use serde_json::{Map, Value};

use super::config::{Server, Transport};
use super::process;
use crate::sandbox::jail::{JailPlan, Jailed};

/// The runtime every MCP connection lives on.
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("reasonix-mcp")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the MCP runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs `fut` on the MCP runtime and waits for it, at most `limit`.
fn wait<T: Send + 'static>(
    limit: Duration,
    fut: impl Future<Output = T> + Send + 'static,
) -> Result<T, Elapsed> {
    let rt = runtime().map_err(Elapsed::NoRuntime)?;
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let r = tokio::time::timeout(limit, fut).await;
        let _ = tx.send(r);
    });
    match rx.recv() {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err(Elapsed::Timeout),
        Err(_) => Err(Elapsed::NoRuntime("the MCP runtime stopped".into())),
    }
}

enum Elapsed {
    Timeout,
    NoRuntime(String),
}

/// One live server.
pub struct Connection {
    name: String,
    call_timeout: Duration,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, ()>>>,
    /// A stdio server's jailed process (killed when the connection is dropped).
    process: Option<Mutex<Jailed>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    dead: Mutex<Option<String>>,
    tools: Vec<McpTool>,
    /// What the jail does not enforce for a stdio server's process (its plan's words and its
    /// run's), in words; `None` for a server reached over HTTP.
    pub not_enforced: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts the server under `plan` (a stdio server runs in the jail; see
    /// [`process`]) or reaches it, does the handshake and lists its tools, all within its
    /// startup limit. Blocking.
    pub fn open(
        server: &Server,
        plan: &JailPlan,
        shape: &crate::sandbox::jail::Shape,
    ) -> Result<Arc<Connection>, String> {
        let limit = server.startup_timeout;
        let name = server.name.clone();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        // A stdio server is started here, before the runtime takes over its pipes: if anything
        // after fails, dropping `process` kills it with everything it started.
        let (process, pipes, not_enforced) = match &server.transport {
            Transport::Stdio { command, args, env } => {
                let started = process::spawn(plan, shape, command, args, env, Arc::clone(&stderr))
                    .map_err(|e| format!("cannot start {command:?}: {e}"))?;
                let words: Vec<String> = plan
                    .not_enforced()
                    .iter()
                    .chain(started.process.not_enforced())
                    .cloned()
                    .collect();
                (
                    Some(started.process),
                    Some((started.stdin, started.stdout)),
                    Some(words.join("; ")),
                )
            }
            Transport::Http { .. } => (None, None, None),
        };
        let transport = server.transport.clone();
        let opened = wait(limit, async move {
            let service = match (transport, pipes) {
                (Transport::Stdio { .. }, Some((stdin, stdout))) => {
                    let stdin = tokio::process::ChildStdin::from_std(stdin)
                        .map_err(|e| format!("cannot use the server's stdin: {e}"))?;
                    let stdout = tokio::process::ChildStdout::from_std(stdout)
                        .map_err(|e| format!("cannot use the server's stdout: {e}"))?;
                    ().serve((stdout, stdin))
                        .await
                        .map_err(|e| format!("the MCP handshake failed: {e}"))?
                }
                (Transport::Http { url, headers }, _) => {
                    let transport = http_transport(&url, &headers)?;
                    ().serve(transport)
                        .await
                        .map_err(|e| format!("the MCP handshake with {url} failed: {e}"))?
                }
                (Transport::Stdio { .. }, None) => {
                    return Err("the server's pipes were not opened".to_owned());
                }
            };
            let tools = service
                .list_all_tools()
                .await
                .map_err(|e| format!("listing its tools failed: {e}"))?;
            Ok::<_, String>((service, tools))
        });
        let (service, tools) = match opened {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                drop(process);
                return Err(with_stderr(e, &stderr));
            }
            Err(Elapsed::Timeout) => {
                drop(process);
                return Err(with_stderr(
                    format!(
                        "it did not start and list its tools within {} ms (startup_timeout_ms)",
                        limit.as_millis()
                    ),
                    &stderr,
                ));
            }
            Err(Elapsed::NoRuntime(e)) => return Err(e),
        };
        Ok(Arc::new(Connection {
            name,
            call_timeout: server.call_timeout,
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            process: process.map(Mutex::new),
            stderr,
            dead: Mutex::new(None),
            tools,
            not_enforced,
        }))
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tools it listed.
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    /// Why the server cannot take calls, once it died.
    pub fn dead(&self) -> Option<String> {
        match self.dead.lock() {
            Ok(d) => d.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Calls one of its tools, within the call limit. Blocking. A transport failure marks the
    /// server dead (see the module doc).
    pub fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, String> {
        if let Some(why) = self.dead() {
            return Err(why);
        }
        let peer = self.peer.clone();
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        match wait(
            self.call_timeout,
            async move { peer.call_tool(params).await },
        ) {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(rmcp::ServiceError::McpError(e))) => {
                Err(format!("the server answered with an error: {}", e.message))
            }
            Ok(Err(e)) => {
                let status = self.exit_status();
                let why = with_stderr(
                    format!(
                        "MCP server {:?} went away during the call ({e}{status}); its tools are unavailable until it is restarted, its connect judged again",
                        self.name
                    ),
                    &self.stderr,
                );
                if let Ok(mut d) = self.dead.lock() {
                    *d = Some(why.clone());
                }
                Err(why)
            }
            Err(Elapsed::Timeout) => Err(format!(
                "the server did not answer within {} ms (call_timeout_ms)",
                self.call_timeout.as_millis()
            )),
            Err(Elapsed::NoRuntime(e)) => Err(e),
        }
    }

    /// `; exit status N` once the process has ended (waiting for it a little: the transport
    /// may close a moment before the process is gone).
    fn exit_status(&self) -> String {
        let Some(process) = &self.process else {
            return String::new();
        };
        for _ in 0..30 {
            let status = match process.lock() {
                Ok(mut p) => p.try_wait(),
                Err(p) => p.into_inner().try_wait(),
            };
            match status {
                Ok(Some(s)) => return format!("; {s}"),
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => break,
            }
        }
        String::new()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Dropping the service cancels its task (synchronously); the runtime ends it. Then the
        // process goes, with everything it started (`Jailed`'s drop).
        if let Ok(mut s) = self.service.lock() {
            drop(s.take());
        }
        drop(self.process.take());
    }
}

/// `e`, with the server's last stderr line when it wrote one.
fn with_stderr(e: String, stderr: &Mutex<Vec<u8>>) -> String {
    match process::last_line(stderr) {
        Some(line) => format!("{e}; its last stderr line: {line}"),
        None => e,
    }
}

/// The streamable HTTP transport with the configured headers.
fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_owned(),
        );
    for (k, v) in headers {
        let name =
            HeaderName::try_from(k.as_str()).map_err(|e| format!("header name {k:?}: {e}"))?;
        let value = HeaderValue::try_from(v.as_str())
            .map_err(|e| format!("the value of header {k:?}: {e}"))?;
        config.custom_headers.insert(name, value);
    }
    Ok(rmcp::transport::StreamableHttpClientTransport::from_config(
        config,
    ))
}
