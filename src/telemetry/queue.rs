//! The bounded span queue: a finished span is put in the queue without waiting; a span that
//! finds it full is dropped and counted. One thread of its own takes spans in batches and sends
//! each batch with the OTLP exporter (blocking HTTP, on this thread only), at the batch size or
//! the flush interval, whichever comes first. A batch the collector refuses or cannot take is
//! dropped and counted too: a call never waits for the collector, and the count is said at exit.
//!
//! The sending thread sleeps until a batch is waiting, the flush interval has passed, or it is
//! asked to flush or stop ([`Inbox`]): a call that queues its spans takes a lock no one holds
//! for long and wakes the thread only when its spans complete a batch. (A channel whose
//! receiver waits on every message wakes the thread once per call: on a `check` batch that was
//! most of what export cost.)
//!
//! A trace's root span (a run's `run`, a `check` batch's `check`) is never put in the queue: it
//! would be the first span dropped by a slow collector, and every other span of its trace hangs
//! from it. It waits apart, and at exit it is sent first, by a request of its own on a second
//! exporter that does not queue behind the batches in flight ([`QueueProcessor`]'s shutdown),
//! while the queue is drained beside it; the exit waits for both at most the time it is given.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

// A judgement is kept inline, not boxed: a box a call allocates and the exporter's thread frees
// is the cross-thread free `wire::Stored` is there to avoid.
#[allow(clippy::large_enum_variant)]
enum Message {
    Span(Box<SpanData>),
    /// A judgement's timings: the gate's spans, made on this thread.
    Gate(super::Gate),
    /// Send what waits, then answer.
    Flush(SyncSender<()>),
    /// Send what waits, then stop.
    Stop(SyncSender<()>),
}

impl Message {
    /// The spans it carries.
    fn spans(&self) -> usize {
        match self {
            Message::Span(_) => 1,
            Message::Gate(gate) => gate.len(),
            Message::Flush(_) | Message::Stop(_) => 0,
        }
    }

    /// Whether it counts against the queue's bound (a flush or a stop does not).
    fn bounded(&self) -> bool {
        matches!(self, Message::Span(_) | Message::Gate(_))
    }
}

/// What waits for the sending thread: at most `queue` entries (a span, or a judgement with its
/// stages), taken all at once by the thread, which is woken when the spans waiting reach a
/// batch, and for a flush or a stop.
struct Inbox {
    waiting: Mutex<Vec<Message>>,
    /// Entries in `waiting` (bounded by `queue`).
    entries: AtomicUsize,
    /// Spans in `waiting` (the thread is woken when they reach `batch`).
    spans: AtomicUsize,
    queue: usize,
    batch: usize,
    /// The sending thread, set once it is started.
    thread: OnceLock<std::thread::Thread>,
}

impl Inbox {
    /// Puts `m` in the queue without waiting; false (nothing queued) when the queue is full.
    fn offer(&self, m: Message) -> bool {
        if self.entries.fetch_add(1, Ordering::AcqRel) >= self.queue {
            self.entries.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let n = m.spans();
        let Ok(mut waiting) = self.waiting.lock() else {
            self.entries.fetch_sub(1, Ordering::AcqRel);
            return false;
        };
        waiting.push(m);
        let before = self.spans.fetch_add(n, Ordering::AcqRel);
        drop(waiting);
        if before < self.batch && before + n >= self.batch {
            self.wake();
        }
        true
    }

    /// Puts a flush or a stop in the queue, past its bound (they come once, at the end), and
    /// wakes the thread.
    fn control(&self, m: Message) -> bool {
        let Ok(mut waiting) = self.waiting.lock() else {
            return false;
        };
        waiting.push(m);
        drop(waiting);
        self.wake();
        true
    }

    fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    /// Everything waiting, in the order it came, swapped into `into` (empty, and keeping the
    /// room it had): the queue keeps the room of the buffer it gets back, so that the calls
    /// that fill it again do not grow it from nothing each batch.
    fn take(&self, into: &mut Vec<Message>) {
        debug_assert!(into.is_empty());
        match self.waiting.lock() {
            Ok(mut waiting) => std::mem::swap(&mut *waiting, into),
            Err(_) => return,
        }
        let spans = into.iter().map(Message::spans).sum();
        let entries = into.iter().filter(|m| m.bounded()).count();
        self.spans.fetch_sub(spans, Ordering::AcqRel);
        self.entries.fetch_sub(entries, Ordering::AcqRel);
    }
}

#[derive(Debug, Default)]
struct Counts {
    /// Spans taken into the queue.
    queued: AtomicU64,
    /// Spans the collector took.
    exported: AtomicU64,
    /// Spans that found the queue full.
    full: AtomicU64,
    /// Root spans, kept apart until exit ([`QueueProcessor::shutdown_with_timeout`]).
    roots: std::sync::Mutex<Vec<SpanData>>,
}

/// What the queue sent and dropped, readable after shutdown.
#[derive(Clone, Debug)]
pub struct Stats(Arc<Counts>);

impl Stats {
    /// Spans exported and dropped so far: a span is dropped when it found the queue full, or
    /// was queued and not taken by the collector (refused, unreachable, or still waiting when
    /// the process stopped waiting at exit).
    pub fn sent(&self) -> super::Sent {
        let exported = self.0.exported.load(Ordering::Relaxed);
        let queued = self.0.queued.load(Ordering::Relaxed);
        super::Sent {
            exported,
            dropped: self.0.full.load(Ordering::Relaxed) + queued.saturating_sub(exported),
        }
    }
}

static DIRECT: OnceLock<(Arc<Inbox>, Arc<Counts>)> = OnceLock::new();

/// Queues a judgement's timings (the gate's spans, made on the sending thread) as one entry,
/// without waiting: when the queue is full its spans are dropped and counted.
pub(crate) fn push(gate: super::Gate) {
    let Some((inbox, counts)) = DIRECT.get() else {
        return;
    };
    let n = gate.len() as u64;
    if inbox.offer(Message::Gate(gate)) {
        counts.queued.fetch_add(n, Ordering::Relaxed);
    } else {
        counts.full.fetch_add(n, Ordering::Relaxed);
    }
}

/// Sends root spans at exit, on an exporter of their own.
type RootSender = Arc<dyn Fn(Vec<SpanData>) -> OTelSdkResult + Send + Sync>;

/// The span processor: never blocks `on_end`.
pub struct QueueProcessor {
    inbox: Arc<Inbox>,
    counts: Arc<Counts>,
    /// Sends the root spans at exit.
    roots: RootSender,
}

impl std::fmt::Debug for QueueProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueProcessor")
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl QueueProcessor {
    /// Starts the sending thread for `exporter` over a queue of `queue` spans; `root` sends
    /// the root spans at exit, beside it.
    pub fn start<E: SpanExporter + 'static>(
        mut exporter: E,
        mut root: E,
        sink: Option<super::wire::Sink>,
        resource: &Resource,
        queue: usize,
        batch: usize,
        flush: Duration,
    ) -> std::io::Result<(QueueProcessor, Stats)> {
        exporter.set_resource(resource);
        root.set_resource(resource);
        let roots: RootSender =
            Arc::new(move |spans| futures_executor::block_on(root.export(spans)));
        let inbox = Arc::new(Inbox {
            waiting: Mutex::new(Vec::new()),
            entries: AtomicUsize::new(0),
            spans: AtomicUsize::new(0),
            queue,
            batch,
            thread: OnceLock::new(),
        });
        let counts = Arc::new(Counts::default());
        let thread_counts = Arc::clone(&counts);
        let thread_inbox = Arc::clone(&inbox);
        let sending = std::thread::Builder::new()
            .name("reasonix-otel".into())
            .spawn(move || {
                send_loop(exporter, sink, &thread_inbox, batch, flush, &thread_counts)
            })?;
        let _ = inbox.thread.set(sending.thread().clone());
        let _ = DIRECT.set((Arc::clone(&inbox), Arc::clone(&counts)));
        Ok((
            QueueProcessor {
                inbox,
                counts: Arc::clone(&counts),
                roots,
            },
            Stats(counts),
        ))
    }

    /// Asks the sending thread to flush or stop, and waits for its answer at most `wait`.
    fn ask(&self, make: fn(SyncSender<()>) -> Message, wait: Duration) -> OTelSdkResult {
        let (done_tx, done_rx) = sync_channel(1);
        if !self.inbox.control(make(done_tx)) {
            return Err(OTelSdkError::InternalFailure("queue closed".into()));
        }
        done_rx
            .recv_timeout(wait)
            .map_err(|_| OTelSdkError::Timeout(wait))
    }
}

/// What waits to be sent: the SDK's spans, and the gate's, already encoded ([`super::wire`])
/// when there is a sink for them (else made into span data for the SDK's exporter).
struct Waiting<E> {
    exporter: E,
    sink: Option<super::wire::Sink>,
    spans: Vec<SpanData>,
    encoded: Vec<u8>,
    encoded_n: u64,
}

impl<E: SpanExporter> Waiting<E> {
    fn len(&self) -> usize {
        self.spans.len() + self.encoded_n as usize
    }

    fn push(&mut self, m: Message) {
        match m {
            Message::Span(span) => self.spans.push(*span),
            // The gate's spans go only by the sink (the process always has one; a queue made
            // without one, in tests, counts them as queued and never exported: dropped).
            Message::Gate(gate) => {
                if self.sink.is_some() {
                    self.encoded_n += gate.len() as u64;
                    gate.encode(&mut self.encoded);
                }
            }
            Message::Flush(_) | Message::Stop(_) => {}
        }
    }

    fn send(&mut self, counts: &Counts) {
        if !self.spans.is_empty() {
            let spans = std::mem::take(&mut self.spans);
            let n = spans.len() as u64;
            match futures_executor::block_on(self.exporter.export(spans)) {
                Ok(()) => {
                    counts.exported.fetch_add(n, Ordering::Relaxed);
                }
                Err(e) => tracing::debug!("OTLP export failed: {e}"),
            }
        }
        if let Some(sink) = &self.sink
            && self.encoded_n > 0
        {
            match sink.send(&self.encoded) {
                Ok(()) => {
                    counts.exported.fetch_add(self.encoded_n, Ordering::Relaxed);
                }
                Err(e) => tracing::debug!("OTLP export of the gate's spans failed: {e}"),
            }
            self.encoded.clear();
            self.encoded_n = 0;
        }
    }
}

fn send_loop<E: SpanExporter>(
    exporter: E,
    sink: Option<super::wire::Sink>,
    inbox: &Inbox,
    batch: usize,
    flush: Duration,
    counts: &Counts,
) {
    let mut waiting = Waiting {
        exporter,
        sink,
        spans: Vec::with_capacity(batch),
        encoded: Vec::new(),
        encoded_n: 0,
    };
    let mut since = Instant::now();
    let mut taken = Vec::new();
    loop {
        inbox.take(&mut taken);
        super::record_judged();
        if taken.is_empty() {
            let wait = flush.saturating_sub(since.elapsed());
            if wait.is_zero() {
                waiting.send(counts);
                since = Instant::now();
            } else {
                // Woken by a full batch, a flush or a stop (or spuriously: the loop looks again).
                std::thread::park_timeout(wait);
            }
            continue;
        }
        for m in taken.drain(..) {
            match m {
                Message::Flush(done) => {
                    waiting.send(counts);
                    since = Instant::now();
                    let _ = done.send(());
                }
                Message::Stop(done) => {
                    // Everything queued before the stop came in this take, ahead of it.
                    waiting.send(counts);
                    let _ = waiting.exporter.shutdown();
                    let _ = done.send(());
                    return;
                }
                m => {
                    waiting.push(m);
                    if waiting.len() >= batch {
                        waiting.send(counts);
                        since = Instant::now();
                    }
                }
            }
        }
        if since.elapsed() >= flush {
            waiting.send(counts);
            since = Instant::now();
        }
    }
}

impl SpanProcessor for QueueProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if span.parent_span_id == opentelemetry::trace::SpanId::INVALID {
            // A root: kept apart, sent first at exit.
            if let Ok(mut roots) = self.counts.roots.lock() {
                roots.push(span);
                self.counts.queued.fetch_add(1, Ordering::Relaxed);
            } else {
                self.counts.full.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        if self.inbox.offer(Message::Span(Box::new(span))) {
            self.counts.queued.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counts.full.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Message::Flush, Duration::from_secs(5))
    }

    /// Sends the root spans on their own request (a thread of its own, so that batches in
    /// flight to a slow collector do not hold them up) while the queue is drained and stopped;
    /// waits for both at most `timeout`. What is not sent by then is counted as dropped.
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let deadline = Instant::now() + timeout;
        let roots = self
            .counts
            .roots
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default();
        let (sent_tx, sent_rx) = sync_channel(1);
        let rooted = !roots.is_empty();
        if rooted {
            let send = Arc::clone(&self.roots);
            let counts = Arc::clone(&self.counts);
            let n = roots.len() as u64;
            let spawned = std::thread::Builder::new()
                .name("reasonix-otel-root".into())
                .spawn(move || {
                    match send(roots) {
                        Ok(()) => {
                            counts.exported.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(e) => tracing::debug!("OTLP export of the root spans failed: {e}"),
                    }
                    let _ = sent_tx.send(());
                });
            if spawned.is_err() {
                tracing::debug!("cannot start the thread that sends the root spans");
            }
        }
        let stopped = self.ask(Message::Stop, timeout);
        if rooted {
            let _ = sent_rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        }
        stopped
    }

    fn set_resource(&mut self, _resource: &Resource) {
        // Set on the exporter before its thread started.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Span as _, TraceContextExt as _, Tracer as _, TracerProvider as _};
    use std::sync::Mutex;

    /// An exporter that takes a while per batch and keeps what it got.
    #[derive(Debug, Clone, Default)]
    struct Slow(Arc<Mutex<Vec<String>>>);

    impl SpanExporter for Slow {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            std::thread::sleep(Duration::from_millis(200));
            self.0
                .lock()
                .unwrap()
                .extend(batch.into_iter().map(|s| s.name.into_owned()));
            Ok(())
        }
    }

    /// A processor over `slow` (a second copy sends the roots), and its provider.
    fn provider(
        slow: &Slow,
        queue: usize,
        batch: usize,
    ) -> (opentelemetry_sdk::trace::SdkTracerProvider, Stats) {
        let (processor, stats) = QueueProcessor::start(
            slow.clone(),
            slow.clone(),
            None,
            &Resource::builder_empty().build(),
            queue,
            batch,
            Duration::from_secs(60),
        )
        .unwrap();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_span_processor(processor)
            .build();
        (provider, stats)
    }

    #[test]
    fn a_full_queue_drops_and_counts_and_never_blocks_the_caller() {
        let slow = Slow::default();
        let (provider, stats) = provider(&slow, 8, 4);
        let tracer = provider.tracer("t");
        let root = tracer.start("root");
        let cx = Context::current_with_span(root);
        let start = Instant::now();
        for i in 0..1000 {
            tracer.start_with_context(format!("s{i}"), &cx).end();
        }
        // 1000 spans against an exporter that takes 200 ms a batch: ending them did not wait.
        assert!(
            start.elapsed() < Duration::from_millis(500),
            "{:?}",
            start.elapsed()
        );
        cx.span().end();
        provider.shutdown().unwrap();
        let sent = stats.sent();
        assert!(sent.dropped > 0, "{sent:?}");
        assert_eq!(sent.exported + sent.dropped, 1001, "{sent:?}");
        assert_eq!(slow.0.lock().unwrap().len() as u64, sent.exported);
    }

    #[test]
    fn the_root_span_is_sent_at_exit_though_the_queue_was_full() {
        let slow = Slow::default();
        let (provider, stats) = provider(&slow, 2, 1);
        let tracer = provider.tracer("t");
        let cx = Context::current_with_span(tracer.start("root"));
        for i in 0..100 {
            tracer.start_with_context(format!("s{i}"), &cx).end();
        }
        cx.span().end();
        let start = Instant::now();
        // Far less time than the queue's spans take (200 ms a batch of one): the root still
        // goes, beside them.
        let _ = provider.shutdown_with_timeout(Duration::from_millis(450));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        let got = slow.0.lock().unwrap().clone();
        assert!(got.contains(&"root".to_owned()), "{got:?}");
        let sent = stats.sent();
        assert!(sent.dropped > 90, "{sent:?}");
        assert_eq!(sent.exported as usize, got.len(), "{sent:?}");
    }

    #[test]
    fn spans_within_the_bound_are_all_sent_at_shutdown() {
        let slow = Slow::default();
        let (provider, stats) = provider(&slow, 64, 512);
        let tracer = provider.tracer("t");
        let cx = Context::current_with_span(tracer.start("root"));
        for i in 0..50 {
            tracer.start_with_context(format!("s{i}"), &cx).end();
        }
        cx.span().end();
        provider.shutdown().unwrap();
        assert_eq!(
            stats.sent(),
            crate::telemetry::Sent {
                exported: 51,
                dropped: 0
            }
        );
    }
}
