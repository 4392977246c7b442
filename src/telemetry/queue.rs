//! The bounded span queue: a finished span is handed to a channel of fixed size without
//! waiting (`try_send`); a span that finds it full is dropped and counted. One thread of its own
//! takes spans in batches and sends each batch with the OTLP exporter (blocking HTTP, on this
//! thread only), at the batch size or the flush interval, whichever comes first. A batch the
//! collector refuses or cannot take is dropped and counted too: a call never waits for the
//! collector, and the count is said at exit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

enum Message {
    Span(Box<SpanData>),
    /// Spans made apart (the gate's), queued together.
    Spans(Vec<SpanData>),
    /// Send what waits, then answer.
    Flush(SyncSender<()>),
    /// Send what waits, then stop.
    Stop(SyncSender<()>),
}

#[derive(Debug, Default)]
struct Counts {
    /// Spans taken into the queue.
    queued: AtomicU64,
    /// Spans the collector took.
    exported: AtomicU64,
    /// Spans that found the queue full.
    full: AtomicU64,
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

static DIRECT: std::sync::OnceLock<(SyncSender<Message>, Arc<Counts>)> = std::sync::OnceLock::new();

/// Queues spans made apart (the gate's) in one message, without waiting: when the queue is
/// full they are dropped and counted.
pub fn push(spans: Vec<SpanData>) {
    let Some((tx, counts)) = DIRECT.get() else {
        return;
    };
    let n = spans.len() as u64;
    match tx.try_send(Message::Spans(spans)) {
        Ok(()) => counts.queued.fetch_add(n, Ordering::Relaxed),
        Err(_) => counts.full.fetch_add(n, Ordering::Relaxed),
    };
}

/// The span processor: never blocks `on_end`.
#[derive(Debug)]
pub struct QueueProcessor {
    tx: SyncSender<Message>,
    counts: Arc<Counts>,
    /// The control messages' own channel room: flush and stop wait for their answer, bounded.
    control: SyncSender<Message>,
}

impl QueueProcessor {
    /// Starts the sending thread for `exporter` over a queue of `queue` spans.
    pub fn start<E: SpanExporter + 'static>(
        mut exporter: E,
        resource: &Resource,
        queue: usize,
        batch: usize,
        flush: Duration,
    ) -> std::io::Result<(QueueProcessor, Stats)> {
        exporter.set_resource(resource);
        let (tx, rx) = sync_channel(queue);
        let counts = Arc::new(Counts::default());
        let thread_counts = Arc::clone(&counts);
        std::thread::Builder::new()
            .name("reasonix-otel".into())
            .spawn(move || send_loop(exporter, rx, batch, flush, &thread_counts))?;
        let control = tx.clone();
        let _ = DIRECT.set((tx.clone(), Arc::clone(&counts)));
        Ok((
            QueueProcessor {
                tx,
                counts: Arc::clone(&counts),
                control,
            },
            Stats(counts),
        ))
    }

    fn ask(&self, make: fn(SyncSender<()>) -> Message, wait: Duration) -> OTelSdkResult {
        let (done_tx, done_rx) = sync_channel(1);
        // Control messages may wait for room: they come once, at the end.
        let deadline = Instant::now() + wait;
        let mut msg = make(done_tx);
        loop {
            match self.control.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) if Instant::now() < deadline => {
                    msg = m;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return Err(OTelSdkError::InternalFailure("queue closed".into())),
            }
        }
        done_rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| OTelSdkError::Timeout(wait))
    }
}

fn send_loop<E: SpanExporter>(
    exporter: E,
    rx: Receiver<Message>,
    batch: usize,
    flush: Duration,
    counts: &Counts,
) {
    let mut waiting: Vec<SpanData> = Vec::with_capacity(batch);
    let mut since = Instant::now();
    let send = |waiting: &mut Vec<SpanData>| {
        if waiting.is_empty() {
            return;
        }
        let spans = std::mem::take(waiting);
        let n = spans.len() as u64;
        match futures_executor::block_on(exporter.export(spans)) {
            Ok(()) => {
                counts.exported.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => tracing::debug!("OTLP export failed: {e}"),
        }
    };
    loop {
        let wait = flush.saturating_sub(since.elapsed());
        match rx.recv_timeout(wait) {
            Ok(Message::Span(span)) => {
                waiting.push(*span);
                if waiting.len() >= batch {
                    send(&mut waiting);
                    since = Instant::now();
                }
            }
            Ok(Message::Spans(spans)) => {
                waiting.extend(spans);
                if waiting.len() >= batch {
                    send(&mut waiting);
                    since = Instant::now();
                }
            }
            Ok(Message::Flush(done)) => {
                send(&mut waiting);
                since = Instant::now();
                let _ = done.send(());
            }
            Ok(Message::Stop(done)) => {
                // Spans queued before the stop are still in the channel: take them too.
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Message::Span(span) => waiting.push(*span),
                        Message::Spans(spans) => waiting.extend(spans),
                        _ => {}
                    }
                    if waiting.len() >= batch {
                        send(&mut waiting);
                    }
                }
                send(&mut waiting);
                let _ = exporter.shutdown();
                let _ = done.send(());
                return;
            }
            Err(RecvTimeoutError::Timeout) => {
                send(&mut waiting);
                since = Instant::now();
            }
            Err(RecvTimeoutError::Disconnected) => {
                send(&mut waiting);
                return;
            }
        }
    }
}

impl SpanProcessor for QueueProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        match self.tx.try_send(Message::Span(Box::new(span))) {
            Ok(()) => {
                self.counts.queued.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                self.counts.full.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Message::Flush, Duration::from_secs(5))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.ask(Message::Stop, timeout)
    }

    fn set_resource(&mut self, _resource: &Resource) {
        // Set on the exporter before its thread started.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Span as _, Tracer as _, TracerProvider as _};
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

    #[test]
    fn a_full_queue_drops_and_counts_and_never_blocks_the_caller() {
        let slow = Slow::default();
        let (processor, stats) = QueueProcessor::start(
            slow.clone(),
            &Resource::builder_empty().build(),
            8,
            4,
            Duration::from_secs(60),
        )
        .unwrap();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_span_processor(processor)
            .build();
        let tracer = provider.tracer("t");
        let start = Instant::now();
        for i in 0..1000 {
            let mut s = tracer.start(format!("s{i}"));
            s.end();
        }
        // 1000 spans against an exporter that takes 200 ms a batch: ending them did not wait.
        assert!(
            start.elapsed() < Duration::from_millis(500),
            "{:?}",
            start.elapsed()
        );
        provider.shutdown().unwrap();
        let sent = stats.sent();
        assert!(sent.dropped > 0, "{sent:?}");
        assert_eq!(sent.exported + sent.dropped, 1000, "{sent:?}");
        assert_eq!(slow.0.lock().unwrap().len() as u64, sent.exported);
    }

    #[test]
    fn spans_within_the_bound_are_all_sent_at_shutdown() {
        let slow = Slow::default();
        let (processor, stats) = QueueProcessor::start(
            slow.clone(),
            &Resource::builder_empty().build(),
            64,
            512,
            Duration::from_secs(60),
        )
        .unwrap();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_span_processor(processor)
            .build();
        let tracer = provider.tracer("t");
        for i in 0..50 {
            tracer.start(format!("s{i}")).end();
        }
        provider.shutdown().unwrap();
        assert_eq!(
            stats.sent(),
            crate::telemetry::Sent {
                exported: 50,
                dropped: 0
            }
        );
    }
}
