//! Sending decisions to a collector: batched, gzip'd, through a bounded buffer on disk, on a
//! thread of its own so that no call ever waits for the network.
//!
//! 1. A decision is handed over a bounded channel with `try_send`; when the channel is full the
//!    decision is dropped and counted, never waited for.
//! 2. The thread gathers decisions until [`Upload::batch`] wait or [`Upload::flush`] passes, and
//!    writes the batch — a gzip'd JSON array, the exact body it will send — as the next numbered
//!    chunk in the buffer folder (atomically: a temporary file, synced, renamed).
//! 3. It then sends the chunks in order (`POST`, `Content-Encoding: gzip`), deleting each one the
//!    collector accepted (any 2xx) and stopping at the first failure: the rest wait, in order,
//!    for the next batch or tick. Chunks left when the process ends are sent by the next run.
//! 4. The buffer is bounded ([`Upload::buffer_bytes`]): a new chunk that does not fit deletes the
//!    oldest ones, and the decisions they held are counted as dropped and reported.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

/// Decisions waiting for the thread, at most.
const CHANNEL: usize = 10_000;
/// The longest one POST may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how decisions are sent.
#[derive(Clone, Debug)]
pub struct Upload {
    /// The collector's URL (the body of each POST is a gzip'd JSON array of decisions).
    pub url: String,
    /// Send when this many decisions wait.
    pub batch: usize,
    /// Send at least this often while decisions wait.
    pub flush: Duration,
    /// The buffer folder.
    pub buffer: PathBuf,
    /// The most bytes the buffer may hold.
    pub buffer_bytes: u64,
    /// A bearer token for the collector.
    pub token: Option<String>,
}

enum Message {
    Decision(Json),
    Close,
}

/// The sending thread and the way to it.
pub struct Uploader {
    tx: SyncSender<Message>,
    thread: Mutex<Option<JoinHandle<()>>>,
    dropped: Arc<AtomicU64>,
}

impl Uploader {
    /// Starts the thread.
    pub fn start(upload: Upload) -> std::io::Result<Uploader> {
        std::fs::create_dir_all(&upload.buffer)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL);
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&dropped);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = crate::bundle::fetch::client(TIMEOUT, upload.token.as_deref())
            .map_err(std::io::Error::other)?;
        let thread = std::thread::Builder::new()
            .name("decision-logs".into())
            .spawn(move || {
                Sender {
                    upload,
                    runtime,
                    client,
                    dropped: counted,
                }
                .run(&rx)
            })?;
        Ok(Uploader {
            tx,
            thread: Mutex::new(Some(thread)),
            dropped,
        })
    }

    /// Hands a decision over without waiting; a full channel drops it (counted).
    pub fn send(&self, decision: Json) {
        match self.tx.try_send(Message::Decision(decision)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!(
                    dropped = n,
                    "the decision-log queue is full; a decision was dropped"
                );
            }
            Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Decisions dropped so far (a full queue, a full buffer).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Buffers what waits, tries once to send the buffer, and ends the thread.
    pub fn close(&self) {
        let _ = self.tx.send(Message::Close);
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

struct Sender {
    upload: Upload,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    dropped: Arc<AtomicU64>,
}

impl Sender {
    fn run(mut self, rx: &Receiver<Message>) {
        let runtime = self.runtime.handle().clone();
        let _inside = runtime.enter();
        let mut pending: Vec<Json> = Vec::new();
        let mut since = Instant::now();
        // Chunks a previous run left are sent first.
        self.drain();
        loop {
            let wait = self.upload.flush.saturating_sub(since.elapsed());
            let closing = match rx.recv_timeout(wait) {
                Ok(Message::Decision(d)) => {
                    pending.push(d);
                    false
                }
                Ok(Message::Close) | Err(RecvTimeoutError::Disconnected) => true,
                Err(RecvTimeoutError::Timeout) => false,
            };
            let due = since.elapsed() >= self.upload.flush;
            if pending.len() >= self.upload.batch || closing || due {
                if !pending.is_empty() {
                    self.buffer(std::mem::take(&mut pending));
                }
                self.drain();
                since = Instant::now();
            }
            if closing {
                return;
            }
        }
    }

    /// Writes a batch as the next chunk, making room by dropping the oldest chunks.
    fn buffer(&mut self, batch: Vec<Json>) {
        let count = batch.len();
        let body = match gzip(&Json::Array(batch)) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("cannot compress a decision-log batch: {e}");
                self.dropped.fetch_add(count as u64, Ordering::Relaxed);
                return;
            }
        };
        let mut chunks = chunks(&self.upload.buffer);
        let mut used: u64 = chunks.iter().map(|c| c.bytes).sum();
        let mut lost = 0;
        while used + body.len() as u64 > self.upload.buffer_bytes && !chunks.is_empty() {
            let oldest = chunks.remove(0);
            if std::fs::remove_file(&oldest.path).is_ok() {
                used -= oldest.bytes;
                lost += oldest.count;
            }
        }
        if used + body.len() as u64 > self.upload.buffer_bytes {
            lost += count;
            self.report_lost(lost);
            return;
        }
        self.report_lost(lost);
        let next = chunks.last().map_or(0, |c| c.seq + 1);
        let path = self
            .upload
            .buffer
            .join(format!("{next:020}-{count}.json.gz"));
        if let Err(e) = crate::bundle::fetch::write_atomically(&path, &body) {
            tracing::warn!(buffer = %self.upload.buffer.display(), "cannot buffer decisions: {e}");
            self.dropped.fetch_add(count as u64, Ordering::Relaxed);
        }
    }

    fn report_lost(&self, lost: usize) {
        if lost > 0 {
            let total = self.dropped.fetch_add(lost as u64, Ordering::Relaxed) + lost as u64;
            tracing::warn!(
                dropped = lost,
                total,
                bound = self.upload.buffer_bytes,
                "the decision-log buffer is full: the oldest decisions were dropped"
            );
        }
    }

    /// Sends the buffered chunks in order, stopping at the first that is not accepted.
    fn drain(&mut self) {
        for chunk in chunks(&self.upload.buffer) {
            let Ok(body) = std::fs::read(&chunk.path) else {
                continue;
            };
            // The response is read and dropped inside the runtime: its connection goes back to
            // the pool there.
            let request = self
                .client
                .post(&self.upload.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::CONTENT_ENCODING, "gzip")
                .body(body);
            let sent = self
                .runtime
                .block_on(async { request.send().await.map(|r| r.status()) });
            match sent {
                Ok(status) if status.is_success() => {
                    let _ = std::fs::remove_file(&chunk.path);
                }
                Ok(status) => {
                    tracing::warn!(%status, url = %self.upload.url, "the decision-log collector refused a batch; it stays buffered");
                    return;
                }
                Err(e) => {
                    tracing::debug!(url = %self.upload.url, "the decision-log collector is unreachable; batches stay buffered: {e}");
                    return;
                }
            }
        }
    }
}

/// A buffered chunk: `SEQ-COUNT.json.gz`.
struct Chunk {
    path: PathBuf,
    seq: u64,
    count: usize,
    bytes: u64,
}

/// The chunks in the buffer, oldest first.
fn chunks(dir: &Path) -> Vec<Chunk> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json.gz") else {
            continue;
        };
        let Some((seq, count)) = stem.split_once('-') else {
            continue;
        };
        let (Ok(seq), Ok(count)) = (seq.parse(), count.parse()) else {
            continue;
        };
        let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
        out.push(Chunk {
            path: entry.path(),
            seq,
            count,
            bytes,
        });
    }
    out.sort_by_key(|c| c.seq);
    out
}

fn gzip(value: &Json) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    serde_json::to_writer(&mut encoder, value)?;
    encoder.flush()?;
    encoder.finish()
}
