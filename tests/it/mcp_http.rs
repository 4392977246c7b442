//! MCP over streamable HTTP, for real: an in-process `rmcp` server (its
//! `StreamableHttpService`, served by hyper on a loopback port) that counts every HTTP request
//! it receives and keeps their headers, and counts the `tools/call` requests it answers. The
//! counters are the proof: a denied connect makes no request at all, a schema violation makes
//! no `tools/call`, and a configured header reaches the server.

use crate::common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{World, gate_over, reasons};
use reasonix::agent::servers::Servers;
use reasonix::{PolicySet, Posture, Registry};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value, json};

/// The server's one tool: `echo {text: string}`, `text` required.
#[derive(Clone)]
struct Echo {
    calls: Arc<AtomicUsize>,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"]});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Echo the text back.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let args: Map<String, Value> = request.arguments.unwrap_or_default();
        let text = args.get("text").and_then(Value::as_str).unwrap_or("");
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("echo: {text}"))]).into())
    }
}

/// A running server: its URL, and what it has seen.
struct Served {
    url: String,
    /// HTTP requests received, of any method.
    requests: Arc<AtomicUsize>,
    /// Their headers, in order.
    headers: Arc<Mutex<Vec<hyper::HeaderMap>>>,
    /// `tools/call` requests answered.
    calls: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl Served {
    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
    /// The values the server received for header `name`.
    fn header(&self, name: &str) -> Vec<String> {
        self.headers
            .lock()
            .unwrap()
            .iter()
            .filter_map(|h| h.get(name)?.to_str().ok().map(str::to_owned))
            .collect()
    }
}

/// Starts the server on a loopback port, on a runtime of its own (dropped with it).
fn serve() -> Served {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let headers = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let handler = Echo {
        calls: Arc::clone(&calls),
    };
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let (seen, kept) = (Arc::clone(&requests), Arc::clone(&headers));
    runtime.spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (service, seen, kept) = (service.clone(), Arc::clone(&seen), Arc::clone(&kept));
            tokio::spawn(async move {
                let each = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        seen.fetch_add(1, Ordering::SeqCst);
                        kept.lock().unwrap().push(request.headers().clone());
                        let service = service.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(service.handle(request).await)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), each)
                    .await;
            });
        }
    });
    Served {
        url: format!("http://{addr}/mcp"),
        requests,
        headers,
        calls,
        _runtime: runtime,
    }
}

/// A policy that lets server `web` be reached, declares nothing about its tools (an undeclared
/// MCP call is a writer: allowed here), and denies `mcp_connect__blocked`.
const POLICY: &str = r#"version: 1
defaults:
  read_only: allow
  writer: allow
rules:
  - id: reach-web
    decision: allow
    tools: ["mcp_connect__web"]
  - id: no-blocked
    decision: deny
    tools: ["mcp_connect__blocked"]
    reason: this endpoint is not trusted
"#;

impl World {
    /// `.mcp.json` naming `served` as server `name`, with `headers`.
    fn http_server(&self, name: &str, served: &Served, headers: Value) {
        std::fs::write(
            self.ws.join(".mcp.json"),
            json!({"mcpServers": {name: {"type": "http", "url": served.url, "headers": headers}}})
                .to_string(),
        )
        .unwrap();
        self.trust();
    }
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

/// A gate over the workspace's servers, `name` connected (which must succeed) as `run` does.
fn connected(w: &World, name: &str) -> (reasonix::Gate, Servers) {
    let policy = PolicySet::from_yaml("p.yaml", POLICY).unwrap();
    let gate = gate_over(
        Registry::with_builtins(),
        &policy,
        &w.ws,
        Posture::Unattended,
    );
    let configured = common::trusted_mcp_servers(&w.ws);
    let mut servers = Servers::new(configured, &gate).unwrap();
    let c = servers.connect(name, &mut |_| None);
    assert!(c.result.is_ok(), "{:?}", c.result.as_ref().err());
    let (registry, _) = servers.registry();
    (gate.with_registry(registry).unwrap(), servers)
}

#[test]
fn an_http_servers_tools_are_listed_and_a_call_works_end_to_end() {
    let w = World::new();
    let served = serve();
    w.http_server("web", &served, json!({}));
    let (gate, _servers) = connected(&w, "web");
    assert!(served.requests() > 0, "the connect reached the server");
    assert!(
        gate.registry().names().any(|n| n == "mcp__web__echo"),
        "{:?}",
        gate.registry().names().collect::<Vec<_>>()
    );
    assert_eq!(
        common::run_allowed(&gate, "mcp__web__echo", json!({"text": "hello"})),
        Ok("echo: hello".into())
    );
    assert_eq!(served.calls(), 1);
}

#[test]
fn a_run_reaches_an_http_server_and_records_the_connect_and_the_call() {
    let w = World::new();
    let served = serve();
    w.http_server("web", &served, json!({}));
    let (code, stderr, lines) = common::run_script(
        &w,
        POLICY,
        &[json!({"name": "mcp__web__echo", "arguments": {"text": "from the run"}})],
    );
    assert_eq!(code, 0, "{stderr}");
    let connect = lines
        .iter()
        .find(|l| l["event"] == "mcp_connect")
        .expect("a connect line");
    assert_eq!(connect["arguments"], json!({"url": served.url}));
    assert_eq!(connect["outcome"], "succeeded");
    assert_eq!(connect["tools"], json!(["mcp__web__echo"]));
    let called = lines
        .iter()
        .find(|l| l["tool"] == "mcp__web__echo")
        .expect("a call line");
    assert_eq!(called["outcome"], "succeeded", "{called}");
    assert_eq!(served.calls(), 1);
}

#[test]
fn a_denied_connect_makes_no_http_request_and_its_tools_are_invalid() {
    let w = World::new();
    let served = serve();
    w.http_server("blocked", &served, json!({}));
    let p = w.policy("p.yaml", POLICY);
    let (code, v) = w.check(
        &call("mcp__blocked__echo", json!({"text": "hi"})),
        &["--policy", &p],
    );
    assert_eq!((code, v["verdict"].as_str()), (30, Some("invalid")), "{v}");
    let why = reasons(&v);
    assert!(
        why.contains("mcp_connect__blocked was refused")
            && why.contains("this endpoint is not trusted"),
        "{why}"
    );
    assert_eq!(served.requests(), 0, "a denied connect reached the server");

    // The control: the same server under an allowed name is reached.
    w.http_server("web", &served, json!({}));
    let (_, v) = w.check(
        &call("mcp__web__echo", json!({"text": "hi"})),
        &["--policy", &p],
    );
    assert_eq!(v["verdict"], "allow", "{v}");
    assert!(served.requests() > 0);
}

#[test]
fn a_configured_header_reaches_the_server() {
    let w = World::new();
    let served = serve();
    w.http_server(
        "web",
        &served,
        json!({"Authorization": "Bearer test-token-1", "X-Team": "gate"}),
    );
    let (gate, _servers) = connected(&w, "web");
    assert_eq!(
        common::run_allowed(&gate, "mcp__web__echo", json!({"text": "x"})),
        Ok("echo: x".into())
    );
    let auth = served.header("authorization");
    assert!(!auth.is_empty(), "no Authorization header arrived");
    // Every request carries it: the handshake, the listing and the call alike.
    assert_eq!(auth.len(), served.requests(), "{auth:?}");
    assert!(auth.iter().all(|a| a == "Bearer test-token-1"), "{auth:?}");
    assert!(served.header("x-team").iter().all(|t| t == "gate"));
}

#[test]
fn a_schema_violation_is_invalid_and_makes_no_tools_call() {
    let w = World::new();
    let served = serve();
    w.http_server("web", &served, json!({}));
    let (gate, _servers) = connected(&w, "web");
    let before = served.requests();
    for wrong in [
        json!({"text": 7}),
        json!({}),
        json!({"text": "x", "more": 1}),
    ] {
        let judged = gate.admit(&reasonix::Call::new("mcp__web__echo", wrong.clone()));
        let a = judged.admission();
        assert_eq!(a.verdict, reasonix::Verdict::Invalid, "{wrong}: {a:?}");
        assert!(a.reasons[0].contains("do not match its schema"), "{a:?}");
    }
    assert_eq!(served.calls(), 0, "an invalid call reached the server");
    assert_eq!(served.requests(), before, "an invalid call made a request");
    // The legitimate call goes through.
    assert!(common::run_allowed(&gate, "mcp__web__echo", json!({"text": "ok"})).is_ok());
    assert_eq!(served.calls(), 1);
}

#[test]
fn an_http_connect_is_judged_with_its_url_and_check_explain_shows_it() {
    let w = World::new();
    let served = serve();
    w.http_server("web", &served, json!({"Authorization": "Bearer secret-9"}));
    // A Rego policy that reaches only this URL: the connect's input carries it.
    let rego = format!(
        "package reasonix.mcp\n\nimport rego.v1\n\nallow contains {{\"id\": \"reach-this-url\", \"reason\": \"the one endpoint\"}} if {{\n  input.tool == \"mcp_connect__web\"\n  input.arguments.url == \"{}\"\n}}\n",
        served.url
    );
    let p = w.policy("p.rego", &rego);
    let connect = call("mcp_connect__web", json!({"url": served.url}));
    let (code, v) = w.check(&connect, &["--policy", &p, "--explain"]);
    assert_eq!((code, v["verdict"].as_str()), (0, Some("allow")), "{v}");
    assert_eq!(v["rules"][0]["id"], "reach-this-url", "{v}");
    assert_eq!(v["input"]["tool"], "mcp_connect__web");
    assert_eq!(v["input"]["arguments"]["url"], served.url.as_str());
    assert!(
        !v.to_string().contains("secret-9"),
        "a header's value is not part of what is judged or shown: {v}"
    );
    assert_eq!(
        served.requests(),
        0,
        "check judged the connect; it ran nothing"
    );
    // Another URL is not allowed by that rule.
    let elsewhere = call("mcp_connect__web", json!({"url": "http://127.0.0.1:9/mcp"}));
    let (_, v) = w.check(&elsewhere, &["--policy", &p]);
    assert_ne!(v["verdict"], "allow", "{v}");
}
