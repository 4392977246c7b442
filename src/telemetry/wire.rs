//! The gate's spans on the wire: a judgement's timings ([`super::Gate`]) encoded straight into
//! OTLP protobuf (`opentelemetry/proto/trace/v1/trace.proto`, the `Span` message) and sent by
//! a request of their own (`ExportTraceServiceRequest` to the traces endpoint), on the
//! exporter's thread. A `check` batch makes nine spans per call (the judgement and eight
//! stages); made as SDK span data, converted to the protobuf types and encoded, they cost
//! about 60,000 instructions a call, more than the judgement itself. Encoded from the timings,
//! with no span object in between, they cost a few thousand. The other spans (a run's, a
//! provider request's, a jail run's: a handful per call at most) go through the SDK's exporter.
//!
//! What is written is what the SDK's exporter writes for the same span: ids, parent, name,
//! kind `INTERNAL`, start and end in ns since the epoch, the `reasonix.*` attributes, flags
//! `SAMPLED` with the parent known to be local, under the process's resource and the
//! `reasonix` instrumentation scope. `tests/it/otel.rs` decodes it with the OpenTelemetry
//! project's own definitions.

use std::time::SystemTime;

use opentelemetry::{KeyValue, Value};
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

// Field numbers, from opentelemetry-proto (trace.proto, common.proto, resource.proto,
// trace_service.proto).
const REQUEST_RESOURCE_SPANS: u32 = 1;
const RESOURCE_SPANS_RESOURCE: u32 = 1;
const RESOURCE_SPANS_SCOPE_SPANS: u32 = 2;
const RESOURCE_ATTRIBUTES: u32 = 1;
const SCOPE_SPANS_SCOPE: u32 = 1;
const SCOPE_SPANS_SPANS: u32 = 2;
const SCOPE_NAME: u32 = 1;
const SPAN_TRACE_ID: u32 = 1;
const SPAN_SPAN_ID: u32 = 2;
const SPAN_PARENT_SPAN_ID: u32 = 4;
const SPAN_NAME: u32 = 5;
const SPAN_KIND: u32 = 6;
const SPAN_START: u32 = 7;
const SPAN_END: u32 = 8;
const SPAN_ATTRIBUTES: u32 = 9;
const SPAN_FLAGS: u32 = 16;
const KEY_VALUE_KEY: u32 = 1;
const KEY_VALUE_VALUE: u32 = 2;
const ANY_STRING: u32 = 1;
const ANY_BOOL: u32 = 2;
const ANY_INT: u32 = 3;
const ANY_DOUBLE: u32 = 4;
/// `SPAN_KIND_INTERNAL`.
const KIND_INTERNAL: u64 = 1;
/// Trace flags `SAMPLED` and `SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK` (the parent is local).
const FLAGS: u32 = 0x01 | 0x100;

fn bytes_field(tag: u32, bytes: &[u8], buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(bytes.len() as u64, buf);
    buf.extend_from_slice(bytes);
}

fn fixed64_field(tag: u32, value: u64, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::SixtyFourBit, buf);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// A message field whose body `body` writes: its length is learnt by writing it apart first.
fn message_field(tag: u32, buf: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::with_capacity(64);
    body(&mut inner);
    bytes_field(tag, &inner, buf);
}

/// An `AnyValue`'s one field, borrowed where the value is already a string.
enum Any<'a> {
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(std::borrow::Cow<'a, str>),
}

/// Strings, booleans, integers and doubles as themselves, anything else in words.
fn any_of(value: &Value) -> Any<'_> {
    match value {
        Value::Bool(x) => Any::Bool(*x),
        Value::I64(x) => Any::Int(*x),
        Value::F64(x) => Any::Double(*x),
        Value::String(s) => Any::Str(s.as_str().into()),
        other => Any::Str(other.to_string().into()),
    }
}

/// The encoded length of an `AnyValue`'s body.
fn any_len(any: &Any) -> usize {
    match any {
        Any::Bool(_) => 2,
        Any::Int(x) => 1 + encoded_len_varint(*x as u64),
        Any::Double(_) => 9,
        Any::Str(s) => 1 + encoded_len_varint(s.len() as u64) + s.len(),
    }
}

/// The encoded length of a `KeyValue`'s body.
fn key_value_len(key: &str, any: &Any) -> usize {
    let value = any_len(any);
    1 + encoded_len_varint(key.len() as u64)
        + key.len()
        + 1
        + encoded_len_varint(value as u64)
        + value
}

/// A `KeyValue` (as field `tag`), written in place: every length is counted, none written
/// apart (no buffer per attribute).
fn key_value(tag: u32, kv: &KeyValue, buf: &mut Vec<u8>) {
    let key = kv.key.as_str();
    let any = any_of(&kv.value);
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(key_value_len(key, &any) as u64, buf);
    bytes_field(KEY_VALUE_KEY, key.as_bytes(), buf);
    encode_key(KEY_VALUE_VALUE, WireType::LengthDelimited, buf);
    encode_varint(any_len(&any) as u64, buf);
    match any {
        Any::Bool(x) => {
            encode_key(ANY_BOOL, WireType::Varint, buf);
            encode_varint(u64::from(x), buf);
        }
        Any::Int(x) => {
            encode_key(ANY_INT, WireType::Varint, buf);
            encode_varint(x as u64, buf);
        }
        Any::Double(x) => {
            encode_key(ANY_DOUBLE, WireType::SixtyFourBit, buf);
            buf.extend_from_slice(&x.to_le_bytes());
        }
        Any::Str(s) => bytes_field(ANY_STRING, s.as_bytes(), buf),
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The longest span name written through [`span`]'s stack buffer (the gate's names are a few
/// bytes; a longer one is written field by field).
const SHORT_NAME: usize = 64;

/// One `Span`, as a `spans` field of `ScopeSpans`.
fn span(
    buf: &mut Vec<u8>,
    trace: &[u8; 16],
    (id, parent): ([u8; 8], [u8; 8]),
    name: &str,
    (start, end): (u64, u64),
    attributes: &[u8],
) {
    // Nine fields of known size and the attributes (encoded already): the span's length is
    // counted, not written apart. The fields are written in field order, the flags last.
    let attrs = attributes.len();
    let len = (1 + 1 + 16)
        + (1 + 1 + 8) * 2
        + 1
        + encoded_len_varint(name.len() as u64)
        + name.len()
        + 2
        + (1 + 8) * 2
        + attrs
        + (2 + 4);
    buf.reserve(len + 4);
    encode_key(SCOPE_SPANS_SPANS, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
    let at = buf.len();
    if name.len() <= SHORT_NAME {
        // The fields before the attributes, assembled on the stack and copied once: a call
        // makes nine spans, and a small copy per field was most of what encoding them cost.
        let mut head = [0u8; 2 + 16 + (2 + 8) * 2 + 2 + SHORT_NAME + 2 + (1 + 8) * 2];
        head[..2].copy_from_slice(&[tag(SPAN_TRACE_ID, WireType::LengthDelimited), 16]);
        head[2..18].copy_from_slice(trace);
        head[18..20].copy_from_slice(&[tag(SPAN_SPAN_ID, WireType::LengthDelimited), 8]);
        head[20..28].copy_from_slice(&id);
        head[28..30].copy_from_slice(&[tag(SPAN_PARENT_SPAN_ID, WireType::LengthDelimited), 8]);
        head[30..38].copy_from_slice(&parent);
        // A name of at most 64 bytes: its length is one varint byte.
        head[38..40]
            .copy_from_slice(&[tag(SPAN_NAME, WireType::LengthDelimited), name.len() as u8]);
        let mut n = 40 + name.len();
        head[40..n].copy_from_slice(name.as_bytes());
        head[n..n + 2].copy_from_slice(&[tag(SPAN_KIND, WireType::Varint), KIND_INTERNAL as u8]);
        n += 2;
        head[n] = tag(SPAN_START, WireType::SixtyFourBit);
        head[n + 1..n + 9].copy_from_slice(&start.to_le_bytes());
        head[n + 9] = tag(SPAN_END, WireType::SixtyFourBit);
        head[n + 10..n + 18].copy_from_slice(&end.to_le_bytes());
        n += 18;
        buf.extend_from_slice(&head[..n]);
    } else {
        head_by_field(buf, trace, (id, parent), name, (start, end));
    }
    buf.extend_from_slice(attributes);
    encode_key(SPAN_FLAGS, WireType::ThirtyTwoBit, buf);
    buf.extend_from_slice(&FLAGS.to_le_bytes());
    debug_assert_eq!(buf.len() - at, len, "a span's counted length");
}

/// The fields of a span before its attributes, one by one (a name too long for [`span`]'s stack
/// buffer).
fn head_by_field(
    buf: &mut Vec<u8>,
    trace: &[u8; 16],
    (id, parent): ([u8; 8], [u8; 8]),
    name: &str,
    (start, end): (u64, u64),
) {
    bytes_field(SPAN_TRACE_ID, trace, buf);
    bytes_field(SPAN_SPAN_ID, &id, buf);
    bytes_field(SPAN_PARENT_SPAN_ID, &parent, buf);
    bytes_field(SPAN_NAME, name.as_bytes(), buf);
    encode_key(SPAN_KIND, WireType::Varint, buf);
    encode_varint(KIND_INTERNAL, buf);
    fixed64_field(SPAN_START, start, buf);
    fixed64_field(SPAN_END, end, buf);
}

/// A span's string attributes, encoded as `Span.attributes` fields when the span is made (on
/// the call's thread): one buffer, where a `KeyValue` per attribute would allocate its value
/// there and free it on the exporter's thread.
#[derive(Debug, Default)]
pub struct Attributes(Vec<u8>);

impl Attributes {
    /// Room for attributes of about `bytes` in all (in this thread's buffer, when it has one).
    pub fn with_capacity(bytes: usize) -> Attributes {
        let mut buf = SPARE.with(|spare| spare.take());
        buf.clear();
        buf.reserve(bytes);
        Attributes(buf)
    }

    /// Adds `key` = `value` (an `AnyValue` string).
    pub fn add(&mut self, key: &str, value: &str) {
        let any = Any::Str(value.into());
        let buf = &mut self.0;
        encode_key(SPAN_ATTRIBUTES, WireType::LengthDelimited, buf);
        encode_varint(key_value_len(key, &any) as u64, buf);
        bytes_field(KEY_VALUE_KEY, key.as_bytes(), buf);
        encode_key(KEY_VALUE_VALUE, WireType::LengthDelimited, buf);
        encode_varint(any_len(&any) as u64, buf);
        bytes_field(ANY_STRING, value.as_bytes(), buf);
    }

    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Its bytes as they wait in the queue; its buffer stays on this thread for the next call.
    pub(crate) fn store(self) -> Stored {
        let stored = Stored::copy(&self.0);
        SPARE.with(|spare| spare.set(self.0));
        stored
    }
}

/// Attribute bytes kept inline in a queued judgement, up to this many (more go on the heap).
const INLINE: usize = 384;

thread_local! {
    /// The buffer a call's attributes are encoded in, kept for the next call on this thread.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A judgement's attributes as they wait in the queue.
pub(crate) type Stored = Inline<INLINE>;

/// Bytes handed from a call's thread to the exporter's: inline when they fit in `N`, so that
/// the exporter's thread frees nothing the call's thread allocated (a free from another thread
/// takes the lock of the allocator's arena the call's thread allocates in: with one buffer a
/// call, the calls' threads waited on it hundreds of times a batch).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // inline on purpose: boxing it is the free it avoids
pub(crate) enum Inline<const N: usize> {
    Inline(u16, [u8; N]),
    Heap(Vec<u8>),
}

impl<const N: usize> Inline<N> {
    /// A copy of `from`: inline when it fits.
    pub(crate) fn copy(from: &[u8]) -> Inline<N> {
        if from.len() <= N {
            let mut bytes = [0; N];
            bytes[..from.len()].copy_from_slice(from);
            Inline::Inline(from.len() as u16, bytes)
        } else {
            Inline::Heap(from.to_vec())
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Inline::Inline(len, bytes) => &bytes[..usize::from(*len)],
            Inline::Heap(bytes) => bytes,
        }
    }
}

/// A one-byte field key (fields 1 to 15).
const fn tag(field: u32, wire: WireType) -> u8 {
    ((field << 3) | wire as u32) as u8
}

impl super::Gate {
    /// Appends its spans to `buf` as `ScopeSpans.spans` fields: a span per stage that ran, in
    /// order, then the `call` span.
    pub(crate) fn encode(self, buf: &mut Vec<u8>) {
        let trace = self.parent.trace_id().to_bytes();
        let call = super::span_id().to_bytes();
        let start = nanos(self.start);
        let mut at = start;
        for (name, us) in self.names.iter().zip(self.us).take(self.ran) {
            let end = at.saturating_add(us.saturating_mul(1000));
            span(
                buf,
                &trace,
                (super::span_id().to_bytes(), call),
                name,
                (at, end),
                &[],
            );
            at = end;
        }
        span(
            buf,
            &trace,
            (call, self.parent.span_id().to_bytes()),
            "call",
            (start, at),
            self.attributes.bytes(),
        );
    }
}

/// Where the gate's spans go, and the parts of each request that never change.
pub(crate) struct Sink {
    client: reqwest::blocking::Client,
    url: String,
    headers: reqwest::header::HeaderMap,
    /// `ResourceSpans.resource`, encoded once.
    resource: Vec<u8>,
    /// `ScopeSpans.scope`, encoded once.
    scope: Vec<u8>,
}

impl Sink {
    /// A sink for the traces endpoint `url` with `headers`, under `resource`, sending with
    /// `client` (the process's one OTLP client, shared with the SDK's exporters).
    pub(crate) fn new(
        client: reqwest::blocking::Client,
        url: String,
        headers: &std::collections::HashMap<String, String>,
        resource: &opentelemetry_sdk::Resource,
    ) -> Result<Sink, String> {
        let mut map = reqwest::header::HeaderMap::new();
        for (k, v) in headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| format!("the OTLP header {k:?}: {e}"))?;
            let value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|e| format!("the OTLP header {k:?}'s value: {e}"))?;
            map.insert(name, value);
        }
        map.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static("application/x-protobuf"),
        );
        let mut attrs = Vec::new();
        for (k, v) in resource.iter() {
            key_value(
                RESOURCE_ATTRIBUTES,
                &KeyValue::new(k.clone(), v.clone()),
                &mut attrs,
            );
        }
        let mut res = Vec::new();
        bytes_field(RESOURCE_SPANS_RESOURCE, &attrs, &mut res);
        let mut scope = Vec::new();
        message_field(SCOPE_SPANS_SCOPE, &mut scope, |b| {
            bytes_field(SCOPE_NAME, b"reasonix", b);
        });
        Ok(Sink {
            client,
            url,
            headers: map,
            resource: res,
            scope,
        })
    }

    /// Sends `spans` (`ScopeSpans.spans` fields, [`super::Gate::encode`]) as one request;
    /// whether the collector took them.
    pub(crate) fn send(&self, spans: &[u8]) -> Result<(), String> {
        let scope_spans = self.scope.len() + spans.len();
        let resource_spans =
            self.resource.len() + 1 + encoded_len_varint(scope_spans as u64) + scope_spans;
        let mut body = Vec::with_capacity(resource_spans + 8);
        encode_key(REQUEST_RESOURCE_SPANS, WireType::LengthDelimited, &mut body);
        encode_varint(resource_spans as u64, &mut body);
        body.extend_from_slice(&self.resource);
        encode_key(
            RESOURCE_SPANS_SCOPE_SPANS,
            WireType::LengthDelimited,
            &mut body,
        );
        encode_varint(scope_spans as u64, &mut body);
        body.extend_from_slice(&self.scope);
        body.extend_from_slice(spans);
        let answer = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .map_err(|e| e.to_string())?;
        if answer.status().is_success() {
            Ok(())
        } else {
            Err(format!("the collector answered {}", answer.status()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stack-buffer path writes the very bytes the field-by-field path writes, for every
    /// name length it takes (0 to 64 bytes), with and without attributes.
    #[test]
    fn a_short_named_span_is_written_as_field_by_field() {
        let trace: [u8; 16] = std::array::from_fn(|i| i as u8 + 1);
        let ids = ([0xAB; 8], [0xCD; 8]);
        let times = (1_700_000_000_123_456_789, u64::MAX - 7);
        let mut attrs = Attributes::default();
        attrs.add("reasonix.tool", "bash");
        attrs.add("reasonix.rules", &"r".repeat(200));
        // Encoded as the `KeyValue` writer encodes the same string attributes.
        let mut by_key_value = Vec::new();
        key_value(
            SPAN_ATTRIBUTES,
            &KeyValue::new("reasonix.tool", "bash"),
            &mut by_key_value,
        );
        key_value(
            SPAN_ATTRIBUTES,
            &KeyValue::new("reasonix.rules", "r".repeat(200)),
            &mut by_key_value,
        );
        assert_eq!(attrs.bytes(), &by_key_value[..]);
        for len in 0..=SHORT_NAME {
            let name = "g".repeat(len);
            for attributes in [attrs.bytes(), &[]] {
                let mut fast = Vec::new();
                span(&mut fast, &trace, ids, &name, times, attributes);
                let mut slow = Vec::new();
                head_by_field(&mut slow, &trace, ids, &name, times);
                slow.extend_from_slice(attributes);
                encode_key(SPAN_FLAGS, WireType::ThirtyTwoBit, &mut slow);
                slow.extend_from_slice(&FLAGS.to_le_bytes());
                // `fast` carries the `spans` field's key and length before the span.
                let mut framed = Vec::new();
                bytes_field(SCOPE_SPANS_SPANS, &slow, &mut framed);
                assert_eq!(fast, framed, "name of {len} bytes");
            }
        }
        // A longer name takes the field-by-field path and is still framed right.
        let long = "n".repeat(SHORT_NAME + 1);
        let mut out = Vec::new();
        span(&mut out, &trace, ids, &long, times, &[]);
        assert!(out.windows(long.len()).any(|w| w == long.as_bytes()));
    }
}
