//! OpenTelemetry export: the gate's decisions as traces and metrics, sent over OTLP/HTTP
//! (protobuf) to a team's collector. Off unless configured; it reads what the stages concluded
//! and never changes a verdict, and it never makes a call wait: finished spans go into a bounded
//! queue ([`queue`]) that a thread of its own sends, and a span that finds the queue full is
//! dropped and counted, the count said at exit — the shape of the decision logs' uploader
//! ([`crate::decisions`]).
//!
//! Configured the way every OTel SDK is: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `…_METRICS_ENDPOINT`), `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SDK_DISABLED`; and the `otel:` section
//! of the settings ([`OtelSpec`]), a user-layer setting that an untrusted project file may not
//! set (it sends the gate's decisions to a URL). A variable wins over the section.
//!
//! What is sent:
//!
//! - **a trace per run** (`run` span), **per `check` batch** (`check` span), **per call of
//!   `reasonix hook claude`** (`hook` span) and **per session of `reasonix mcp serve`** (`run`
//!   span with `reasonix.entry = "mcp serve"`): every entry point exports when configured;
//! - in a run, **a span per call** (`execute_tool {tool}`), with the gate's `call` span as its
//!   child and under it **a span per gate stage** (`gate.target`, `gate.validate`, …,
//!   `gate.approve`), and **the jail run** (`jail.run`, with `process.*` attributes); in a
//!   `check` batch the gate's `call` span is the call's span, with its stages;
//! - **provider requests** as `chat {model}` spans with `gen_ai.*` attributes;
//! - `reasonix.*` attributes for the rest: tool, verdict, stage, the rules that decided, policy
//!   revision, outcome, observed changes count;
//! - **metrics**: `reasonix.calls` (by tool, verdict and outcome), `reasonix.admission.duration`
//!   and `reasonix.jail.duration` (histograms, ms), `reasonix.asks.answered` (by answer,
//!   `reasonix.approval`, and who answered, `reasonix.approver`: `person`, `mcp_elicitation`,
//!   `session` for an earlier "allow for the session", `posture` when nobody could be asked,
//!   `hook` when a pre-tool hook denied a call that was asked about), `reasonix.provider.retries`
//!   (by `error.type`).
//!
//! - `queue.rs`: the bounded span queue and its sending thread;
//! - `wire.rs`: the gate's spans encoded straight from their timings into OTLP protobuf.

mod queue;
mod wire;

pub use wire::Attributes;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::Deserialize;

/// The most entries waiting to be sent (a span, or a call's judgement with its stages); past it
/// an entry's spans are dropped and counted.
pub const DEFAULT_QUEUE: usize = 4096;
/// Spans per request. Above the 512 of the OTel SDKs' batch processors: a gate's span is about
/// a hundred bytes (a call and its eight stages, about 900), so a request of 2,048 is about
/// 200 KB, and a quarter as many requests cost a quarter of the per-request work on both sides.
pub const DEFAULT_BATCH: usize = 2048;
/// Send at least this often while spans wait, and export metrics this often, in ms.
pub const DEFAULT_FLUSH_MS: u64 = 5_000;

/// The `otel:` section of `reasonix.yaml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OtelSpec {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); traces go to
    /// `/v1/traces`, metrics to `/v1/metrics`. `OTEL_EXPORTER_OTLP_ENDPOINT` wins.
    pub endpoint: Option<String>,
    /// Headers sent with each request (`OTEL_EXPORTER_OTLP_HEADERS` adds to them).
    pub headers: Option<BTreeMap<String, String>>,
    /// `service.name` (`OTEL_SERVICE_NAME` wins; default `reasonix`).
    pub service_name: Option<String>,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES` wins on a shared key).
    pub resource_attributes: Option<BTreeMap<String, String>>,
    /// The most entries waiting to be sent, a call's judgement with its stages counting once
    /// (default [`DEFAULT_QUEUE`]).
    pub queue: Option<usize>,
    /// Spans per request (default [`DEFAULT_BATCH`]).
    pub batch: Option<usize>,
    /// Send at least this often, in ms (default [`DEFAULT_FLUSH_MS`]).
    pub flush_ms: Option<u64>,
    /// Export metrics too (default true).
    pub metrics: Option<bool>,
    /// The longest the process waits at exit for the collector to take what is left, in ms
    /// (default [`EXIT_WAIT`]).
    pub exit_wait_ms: Option<u64>,
}

static ON: AtomicBool = AtomicBool::new(false);
static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
static TRACER: OnceLock<opentelemetry_sdk::trace::SdkTracer> = OnceLock::new();

/// Whether export is on in this process: the cheap test every producer makes first.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

struct Instruments {
    calls: Counter<u64>,
    admission: Histogram<f64>,
    jail: Histogram<f64>,
    asks: Counter<u64>,
    retries: Counter<u64>,
}

/// Export, while it is on: shut it down with [`Telemetry::shutdown`] to send what waits and
/// learn what was dropped.
pub struct Telemetry {
    traces: SdkTracerProvider,
    metrics: Option<SdkMeterProvider>,
    queue: queue::Stats,
    /// The longest the exit waits ([`OtelSpec::exit_wait_ms`]).
    exit_wait: Duration,
}

/// What export did, said at exit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Spans the collector took.
    pub exported: u64,
    /// Spans dropped: the queue was full, or the collector refused or could not be reached.
    pub dropped: u64,
}

/// Whether the environment or `spec` turns export on.
pub fn configured(spec: Option<&OtelSpec>) -> bool {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return false;
    }
    spec.is_some_and(|s| s.endpoint.is_some())
        || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
}

fn signal_url(spec: &OtelSpec, signal_var: &str, path: &str) -> Option<String> {
    let set = |k: &str| std::env::var(k).ok().is_some_and(|v| !v.trim().is_empty());
    if set(signal_var) || set("OTEL_EXPORTER_OTLP_ENDPOINT") {
        return None; // the exporter reads the variables itself
    }
    spec.endpoint
        .as_ref()
        .map(|e| format!("{}/{path}", e.trim_end_matches('/')))
}

/// The traces endpoint, as the SDK's exporter finds it: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
/// whole, else `OTEL_EXPORTER_OTLP_ENDPOINT` or the settings' endpoint with `/v1/traces`.
fn traces_url(spec: &OtelSpec) -> Option<String> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return Some(url);
    }
    var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .or_else(|| spec.endpoint.clone())
        .map(|e| format!("{}/v1/traces", e.trim_end_matches('/')))
}

/// The settings' headers with `OTEL_EXPORTER_OTLP_HEADERS` and
/// `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (`key=value,…`, values percent-decoded) over them.
fn headers_with_env(
    spec: &std::collections::HashMap<String, String>,
) -> std::collections::HashMap<String, String> {
    let mut out = spec.clone();
    for var in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        let Ok(list) = std::env::var(var) else {
            continue;
        };
        for pair in list.split(',') {
            if let Some((k, v)) = pair.split_once('=') {
                out.insert(k.trim().to_owned(), percent_decoded(v.trim()));
            }
        }
    }
    out
}

/// `%XX` escapes decoded (W3C baggage's encoding, which the OTLP header variables use).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The longest a request to the collector may take: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (ms), else 10 s, as the SDK's exporter.
fn export_timeout() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok()?.trim().parse::<u64>().ok())
    .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// Whether every OTLP endpoint this process may send to (the settings' and the
/// `OTEL_EXPORTER_OTLP_{,TRACES_,METRICS_}ENDPOINT` variables that are set) is plain `http://`:
/// then the client needs no TLS root certificates.
fn plain_http_only(spec: &OtelSpec) -> bool {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    [
        spec.endpoint.clone(),
        var("OTEL_EXPORTER_OTLP_ENDPOINT"),
        var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
    ]
    .iter()
    .flatten()
    .all(|url| is_plain_http(url))
}

/// Whether `url` is a plain `http://` address (any case).
fn is_plain_http(url: &str) -> bool {
    url.trim()
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
}

/// The one HTTP client of export, shared by the gate's span sink and the SDK's span and
/// metric exporters (a clone shares the connection pool and the client's runtime thread).
/// Building a client loads the system's TLS root certificates, about 57 million instructions
/// (callgrind): for endpoints that are all `http://` it is given an empty root store instead,
/// so an `https://` address reached anyway (a redirect) fails to verify rather than sending.
fn http_client(spec: &OtelSpec) -> Result<reqwest::blocking::Client, String> {
    let mut builder = reqwest::blocking::Client::builder().timeout(export_timeout());
    if plain_http_only(spec) {
        builder = builder.tls_certs_only([]);
    }
    builder
        .build()
        .map_err(|e| format!("cannot set up the OTLP client: {e}"))
}

/// The resource: `service.name` and the attributes, variables first.
fn resource(spec: &OtelSpec) -> Resource {
    let env = Resource::builder().build();
    let mut attrs: Vec<KeyValue> = spec
        .resource_attributes
        .iter()
        .flatten()
        .filter(|(k, _)| env.get(&opentelemetry::Key::from((*k).clone())).is_none())
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    attrs.push(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| spec.service_name.clone())
        .unwrap_or_else(|| "reasonix".to_owned());
    Resource::builder()
        .with_attributes(attrs)
        .with_service_name(service)
        .build()
}

impl Telemetry {
    /// Starts export when the environment or `spec` configures it; `Ok(None)` when nothing does.
    /// Call it outside any async runtime (the HTTP client is a blocking one, used only on the
    /// exporter's own threads).
    pub fn start(spec: Option<&OtelSpec>) -> Result<Option<Telemetry>, String> {
        if !configured(spec) {
            return Ok(None);
        }
        let spec = spec.cloned().unwrap_or_default();
        let headers: std::collections::HashMap<String, String> = spec
            .headers
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let resource = resource(&spec);
        let client = http_client(&spec)?;
        // Two exporters alike: the queue's, and the root spans' at exit (queue.rs).
        let exporter = || {
            let mut builder = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(client.clone())
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_headers(headers.clone());
            if let Some(url) = signal_url(&spec, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces")
            {
                builder = builder.with_endpoint(url);
            }
            builder
                .build()
                .map_err(|e| format!("cannot set up the OTLP span exporter: {e}"))
        };
        // The gate's spans: encoded from their timings and sent by requests of their own.
        let sink = wire::Sink::new(
            client.clone(),
            traces_url(&spec).ok_or("no OTLP traces endpoint")?,
            &headers_with_env(&headers),
            &resource,
        )?;
        let (processor, stats) = queue::QueueProcessor::start(
            exporter()?,
            exporter()?,
            Some(sink),
            &resource,
            spec.queue.unwrap_or(DEFAULT_QUEUE).max(1),
            spec.batch.unwrap_or(DEFAULT_BATCH).max(1),
            Duration::from_millis(spec.flush_ms.unwrap_or(DEFAULT_FLUSH_MS).max(1)),
        )
        .map_err(|e| format!("cannot start the span exporter's thread: {e}"))?;
        let traces = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.clone())
            .build();
        let metrics = if spec.metrics.unwrap_or(true) {
            let mut builder = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_http_client(client)
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_headers(headers);
            if let Some(url) =
                signal_url(&spec, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics")
            {
                builder = builder.with_endpoint(url);
            }
            let exporter = builder
                .build()
                .map_err(|e| format!("cannot set up the OTLP metric exporter: {e}"))?;
            let reader = PeriodicReader::builder(exporter)
                .with_interval(Duration::from_millis(
                    spec.flush_ms.unwrap_or(DEFAULT_FLUSH_MS).max(100),
                ))
                .build();
            Some(
                SdkMeterProvider::builder()
                    .with_reader(reader)
                    .with_resource(resource)
                    .build(),
            )
        } else {
            None
        };
        let meter = match &metrics {
            Some(m) => m.meter("reasonix"),
            None => opentelemetry::global::meter("reasonix"),
        };
        let _ = INSTRUMENTS.set(Instruments {
            calls: meter
                .u64_counter("reasonix.calls")
                .with_description("Calls judged, by tool, verdict and outcome")
                .build(),
            admission: meter
                .f64_histogram("reasonix.admission.duration")
                .with_unit("ms")
                .with_description("Time from a proposed call to its verdict")
                .build(),
            jail: meter
                .f64_histogram("reasonix.jail.duration")
                .with_unit("ms")
                .with_description("Time a call ran in the jail")
                .build(),
            asks: meter
                .u64_counter("reasonix.asks.answered")
                .with_description("Asks answered, by answer and by whom")
                .build(),
            retries: meter
                .u64_counter("reasonix.provider.retries")
                .with_description("Provider attempts that failed and were retried or given up")
                .build(),
        });
        let _ = TRACER.set(traces.tracer("reasonix"));
        ON.store(true, Ordering::Relaxed);
        Ok(Some(Telemetry {
            traces,
            metrics,
            queue: stats,
            exit_wait: spec.exit_wait_ms.map_or(EXIT_WAIT, Duration::from_millis),
        }))
    }

    /// Hands the bridge ([`bridge`]) the SDK's tracer, and has every callsite's interest
    /// asked again: the crate's spans now become OTel spans.
    pub fn install(&self) {
        let _ = BOXED.set(opentelemetry::global::BoxedTracer::new(Box::new(
            self.traces.tracer("reasonix"),
        )));
        tracing::callsite::rebuild_interest_cache();
    }
    /// Sends what waits and stops, waiting at most [`EXIT_WAIT`] (or `otel.exit_wait_ms`) in all: the root spans first,
    /// on a request of their own, beside the queue's last batches and the metrics' last
    /// export. Returns what was exported and dropped (what was not sent by then is dropped).
    pub fn shutdown(self) -> Sent {
        let deadline = std::time::Instant::now() + self.exit_wait;
        ON.store(false, Ordering::Relaxed);
        tracing::callsite::rebuild_interest_cache();
        record_judged();
        // The metrics' last export on a thread of its own: their reader waits for its exporter
        // by its own clock.
        let (metrics_tx, metrics_rx) = std::sync::mpsc::sync_channel(1);
        if let Some(m) = self.metrics {
            let spawned = std::thread::Builder::new()
                .name("reasonix-otel-metrics".into())
                .spawn(move || {
                    let _ = m.shutdown();
                    let _ = metrics_tx.send(());
                });
            if spawned.is_err() {
                tracing::debug!("cannot start the thread that sends the last metrics");
            }
        }
        let _ = self.traces.shutdown_with_timeout(self.exit_wait);
        let _ =
            metrics_rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()));
        self.queue.sent()
    }
}

/// The longest the process waits at exit for the collector to take what is left: the root
/// spans, the queue, the last metrics.
pub const EXIT_WAIT: Duration = Duration::from_secs(5);

/// The tracer the `tracing` bridge is built with when the logs are set up, before the settings
/// are read: it hands each span to the SDK's tracer once export has started
/// ([`Telemetry::install`]), and to a no-op tracer before. The bridge's layer sits in the
/// subscriber from the start, filtered by [`bridge_wants`], so its span extensions (the OTel
/// context of a `tracing` span) are reachable.
#[derive(Debug, Clone, Copy, Default)]
pub struct LateTracer;

static BOXED: OnceLock<opentelemetry::global::BoxedTracer> = OnceLock::new();
static NOOP: std::sync::LazyLock<opentelemetry::global::BoxedTracer> =
    std::sync::LazyLock::new(|| {
        opentelemetry::global::BoxedTracer::new(Box::new(
            opentelemetry::trace::noop::NoopTracer::new(),
        ))
    });

impl opentelemetry::trace::Tracer for LateTracer {
    type Span = opentelemetry::global::BoxedSpan;

    fn build_with_context(
        &self,
        builder: opentelemetry::trace::SpanBuilder,
        parent_cx: &opentelemetry::Context,
    ) -> Self::Span {
        BOXED
            .get()
            .unwrap_or(&NOOP)
            .build_with_context(builder, parent_cx)
    }
}

/// The bridge's layer: the crate's `tracing` spans (`run`, `check`, `chat`, `execute_tool`,
/// `jail.run`) become OTel spans while export is on. The gate's own spans (a call's judgement
/// and its stages) are made apart, cheaply ([`gate_spans`]).
pub fn bridge<S>() -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    tracing_opentelemetry::layer()
        .with_tracer(LateTracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::filter_fn(bridge_wants))
}

/// Whether the bridge wants this callsite: the crate's spans (not its log events, not the
/// gate's `call` span), while export is on. Off, no callsite is enabled for it (interest is
/// asked again when export starts and ends), so it costs nothing.
pub fn bridge_wants(m: &tracing::Metadata<'_>) -> bool {
    on() && m.is_span() && m.target().starts_with("reasonix") && m.name() != "call"
}

thread_local! {
    /// The OTel span the gate's spans on this thread belong to (a run's `execute_tool`, a
    /// `check` batch).
    static PARENT: std::cell::RefCell<Option<opentelemetry::trace::SpanContext>> =
        const { std::cell::RefCell::new(None) };
    /// Span ids: a xorshift state per thread, seeded at random.
    static IDS: std::cell::Cell<u64> = std::cell::Cell::new({
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x9e37_79b9_7f4a_7c15);
        h.finish() | 1
    });
}

fn span_id() -> opentelemetry::trace::SpanId {
    IDS.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        opentelemetry::trace::SpanId::from(x.max(1))
    })
}

/// Restores the thread's previous parent when dropped.
pub struct Parent(Option<opentelemetry::trace::SpanContext>);

impl Drop for Parent {
    fn drop(&mut self) {
        let previous = self.0.take();
        PARENT.with(|p| *p.borrow_mut() = previous);
    }
}

/// The OTel span context of a `tracing` span, while export is on.
pub fn context_of(span: &tracing::Span) -> Option<opentelemetry::trace::SpanContext> {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if !on() || span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// Makes `parent` the span the gate's spans on this thread belong to, until the guard drops.
pub fn parent(parent: Option<opentelemetry::trace::SpanContext>) -> Parent {
    Parent(PARENT.with(|p| std::mem::replace(&mut *p.borrow_mut(), parent)))
}

/// The gate's stages, as many as [`gate_spans`] takes.
pub const GATE_STAGES: usize = 8;

/// The gate's spans of one judgement, from the stage timings the gate takes anyway: the `call`
/// span (from `start`, as long as the stages took) and under it a span per stage that ran (the
/// first `ran` of `names`, each `us` microseconds long, in order), under the thread's
/// [`parent`]. Nothing without one. On the call's path this only queues the timings and
/// `attributes`, without waiting; the span data is made on the exporter's thread
/// ([`Gate::spans`]).
pub fn gate_spans(
    start: std::time::SystemTime,
    names: &'static [&'static str; GATE_STAGES],
    us: [u64; GATE_STAGES],
    ran: usize,
    attributes: Attributes,
) {
    if !on() {
        return;
    }
    let Some(parent) = PARENT.with(|p| p.borrow().clone()) else {
        return;
    };
    queue::push(Gate {
        parent,
        start,
        names,
        us,
        ran: ran.min(GATE_STAGES),
        attributes: attributes.store(),
    });
}

/// One judgement's timings, queued as they are ([`gate_spans`]).
#[derive(Debug)]
pub(crate) struct Gate {
    parent: opentelemetry::trace::SpanContext,
    start: std::time::SystemTime,
    names: &'static [&'static str; GATE_STAGES],
    us: [u64; GATE_STAGES],
    ran: usize,
    attributes: wire::Stored,
}

impl Gate {
    /// How many spans it makes.
    pub(crate) fn len(&self) -> usize {
        self.ran + 1
    }
}

/// A finished call, for the `reasonix.calls` counter and the admission histogram. The call's
/// thread only notes it ([`JUDGED`]); the exporter's thread records what is noted each time it
/// wakes ([`record_judged`]), and the exit before the last metrics export.
pub fn call_judged(
    tool: &str,
    verdict: &'static str,
    outcome: Option<&'static str>,
    admission: Duration,
) {
    if INSTRUMENTS.get().is_none() || !on() {
        return;
    }
    let judged = Judged {
        tool: Tool::of(tool),
        verdict,
        outcome: outcome.unwrap_or("none"),
        ms: admission.as_secs_f64() * 1000.0,
    };
    let full = match JUDGED.lock() {
        Ok(mut noted) => {
            noted.push(judged);
            noted.len() >= JUDGED_BOUND
        }
        Err(_) => false,
    };
    if full {
        // Nobody took them for a while: record them here rather than let them grow.
        record_judged();
    }
}

/// A tool's name, inline when short (the exporter's thread frees nothing a call's thread
/// allocated: see [`wire::Inline`]).
struct Tool(wire::Inline<62>);

impl Tool {
    fn of(name: &str) -> Tool {
        Tool(wire::Inline::copy(name.as_bytes()))
    }

    fn as_str(&self) -> &str {
        // Copied whole from a `str`: valid UTF-8.
        std::str::from_utf8(self.0.bytes()).unwrap_or_default()
    }
}

/// A call judged and not yet recorded in the instruments.
struct Judged {
    tool: Tool,
    verdict: &'static str,
    outcome: &'static str,
    ms: f64,
}

/// Calls judged and not yet recorded. Recording a measurement in an OTel instrument hashes its
/// attributes and takes the instrument's lock: about 1,500 instructions a call for each of the
/// two, the largest per-call cost of export when the call's thread paid it. Noted here, the
/// counter is added to once per tool, verdict and outcome of a whole batch, on the exporter's
/// thread.
static JUDGED: std::sync::Mutex<Vec<Judged>> = std::sync::Mutex::new(Vec::new());

/// The most calls noted before the call's thread records them itself.
const JUDGED_BOUND: usize = 4096;

/// Held while calls noted are recorded, so that the exit's last recording waits for one in
/// flight on the exporter's thread before the metrics' last export; it holds the buffer the
/// calls noted are swapped into (kept, with its room, for the next time).
static RECORDING: std::sync::Mutex<Vec<Judged>> = std::sync::Mutex::new(Vec::new());

/// Records the calls noted ([`call_judged`]) in the calls counter and the admission histogram.
pub(crate) fn record_judged() {
    let Some(i) = INSTRUMENTS.get() else {
        return;
    };
    let Ok(mut noted) = RECORDING.lock() else {
        return;
    };
    match JUDGED.lock() {
        Ok(mut judged) => std::mem::swap(&mut *judged, &mut *noted),
        Err(_) => return,
    }
    if noted.is_empty() {
        return;
    }
    // Grouped by tool, verdict and outcome: one counter add and one attribute set per group.
    fn key(j: &Judged) -> (&str, &str, &str) {
        (j.tool.as_str(), j.verdict, j.outcome)
    }
    noted.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
    for group in noted.chunk_by(|a, b| key(a) == key(b)) {
        let first = &group[0];
        let attrs = [
            KeyValue::new("reasonix.tool", first.tool.as_str().to_owned()),
            KeyValue::new("reasonix.verdict", first.verdict),
            KeyValue::new("reasonix.outcome", first.outcome),
        ];
        i.calls.add(group.len() as u64, &attrs);
        for judged in group {
            i.admission.record(judged.ms, &attrs[..2]);
        }
    }
    noted.clear();
}

/// A jail run's duration, for the jail histogram.
pub fn jail_ran(tool: &str, ms: u128, outcome: &str) {
    if let Some(i) = INSTRUMENTS.get().filter(|_| on()) {
        i.jail.record(
            ms as f64,
            &[
                KeyValue::new("reasonix.tool", tool.to_owned()),
                KeyValue::new("reasonix.outcome", outcome.to_owned()),
            ],
        );
    }
}

/// An ask that someone answered: the answer, and who.
pub fn ask_answered(answer: &str, by: &str) {
    if let Some(i) = INSTRUMENTS.get().filter(|_| on()) {
        i.asks.add(
            1,
            &[
                KeyValue::new("reasonix.approval", answer.to_owned()),
                KeyValue::new("reasonix.approver", by.to_owned()),
            ],
        );
    }
}

/// A provider attempt that failed.
pub fn provider_retry(fault: &str) {
    if let Some(i) = INSTRUMENTS.get().filter(|_| on()) {
        i.retries
            .add(1, &[KeyValue::new("error.type", fault.to_owned())]);
    }
}

#[cfg(test)]
mod tests {
    use super::is_plain_http;

    #[test]
    fn tls_roots_are_skipped_only_for_plain_http_endpoints() {
        // Loaded: https, and anything not plainly http (the roots are the safe default).
        for url in [
            "https://collector:4318",
            "HTTPS://c",
            "httpx://c",
            "http:/c",
            "c:4318",
            "",
        ] {
            assert!(!is_plain_http(url), "{url:?}");
        }
        // Skipped: plain http, any case.
        for url in ["http://127.0.0.1:4318", " HTTP://collector/v1/traces"] {
            assert!(is_plain_http(url), "{url:?}");
        }
    }
}
