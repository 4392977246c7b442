//! The execution record's seal: a hash chain through every line and an HMAC-SHA256 on each,
//! so that a changed byte, a deleted, reordered or inserted line, a line appended by anything
//! but a Reasonix holding the key, and a cut tail are all seen (issue 28). It is the record
//! stage's last step: [`crate::record::Recorder`] seals each line as it appends it;
//! `reasonix record verify` and `reasonix rewind` check a record with [`verify`].
//!
//! # A sealed line
//!
//! Each line is a JSON object whose last field is `chain`, written by Reasonix exactly so:
//!
//! ```text
//! {…the line…,"chain":{"line":7,"prev":"<sha256 of line 6>","start":true,"end":true,"key":"hmac-sha256:<key id>","mac":"<hmac>"}}
//! ```
//!
//! - `line` is its number in the file, from 1; `prev` the sha256 of the whole line before it
//!   (64 zeros on line 1): removing, reordering or inserting a line breaks the next one's.
//! - `start` marks the first line a writer appended (a run, `mcp serve`, a rewind, a hook
//!   call), `end` its last: a writer whose last line has no `end` was killed, or crashed, or
//!   the lines after were cut — the record cannot tell which, and says so.
//! - `mac` is HMAC-SHA256, under the key, of the line's bytes up to (not including)
//!   `,"mac":` — that is, of the line and its place in the chain. Every line is signed, the
//!   last of each writer included: the cost is a microsecond beside the line's `fsync`.
//! - Without a key (`record.key_env` names a variable that is not set, or the key file cannot
//!   be read or made), each line says `"key":"none"` and has no `mac`: the record then
//!   verifies as *unsigned*, which proves its chain and nothing more.
//!
//! # The key
//!
//! `record.key_env` in `reasonix.yaml` (a trusted setting) names an environment variable whose
//! value is the key; without it, the key is the file `record.key` in the user's state folder
//! (`$XDG_STATE_HOME/reasonix/`, beside the trust store), made with 32 random bytes (as hex,
//! mode 0600) the first time a record is written. Neither is inside the workspace, and the
//! jail gives its commands a HOME of their own: what a model's command can write, it cannot
//! sign.
//!
//! # What verifying proves
//!
//! Lines before the first chained one (a record written before records were chained) are
//! *unchained*, and a signed record may begin with *unsigned* lines (written before the key
//! existed); from the first signed line on, every line must be signed with the key, in order,
//! unbroken. A torn line (a writer killed mid-line) is allowed at the end, or right before a
//! writer's `start` line. What it cannot prove: that nothing was cut after the last writer's
//! `end` (no log can, without a copy of its head elsewhere), nor anything of an unsigned
//! record's authorship.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

/// The name of the key file in the user's state folder.
pub const KEY_FILE: &str = "record.key";

/// The `prev` of a record's first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A record key. Its bytes never appear in `Debug` or in the record: only its id does.
#[derive(Clone)]
pub struct Key {
    bytes: Vec<u8>,
    id: String,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("id", &self.id).finish()
    }
}

impl Key {
    /// A key of these bytes (surrounding whitespace removed).
    pub fn new(bytes: &[u8]) -> Option<Key> {
        let bytes = bytes.trim_ascii().to_vec();
        if bytes.is_empty() {
            return None;
        }
        let id = hex(&Sha256::digest(
            [b"reasonix record key\0".as_slice(), &bytes].concat(),
        ))[..16]
            .to_owned();
        Some(Key { bytes, id })
    }

    /// What the record says of it: `hmac-sha256:` and a digest of the key (not the key).
    pub fn label(&self) -> String {
        format!("hmac-sha256:{}", self.id)
    }

    /// The key in the file at `path`.
    ///
    /// # Errors
    ///
    /// It cannot be read, or is empty.
    pub fn from_file(path: &Path) -> std::io::Result<Key> {
        let bytes = std::fs::read(path)?;
        Key::new(&bytes).ok_or_else(|| std::io::Error::other("the key file is empty"))
    }

    /// The key in `path`, made first (32 random bytes, as hex, mode 0600) when there is none.
    /// Two processes making it at once end with the same key: it is written aside and linked
    /// into place, never half-written where the other reads it.
    ///
    /// # Errors
    ///
    /// It could not be read or made.
    pub fn from_file_or_new(path: &Path) -> std::io::Result<Key> {
        match Key::from_file(path) {
            Ok(key) => return Ok(key),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        let dir = path
            .parent()
            .ok_or_else(|| std::io::Error::other("the key file has no folder"))?;
        std::fs::create_dir_all(dir)?;
        let mut random = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut random)?;
        let aside = dir.join(format!(".{KEY_FILE}.{}", std::process::id()));
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&aside)?;
            f.write_all(hex(&random).as_bytes())?;
            f.sync_all()?;
        }
        let linked = std::fs::hard_link(&aside, path);
        let _ = std::fs::remove_file(&aside);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        Key::from_file(path)
    }

    fn mac(&self, bytes: &[u8]) -> String {
        // HMAC takes a key of any length.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.bytes)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        mac.update(bytes);
        hex(&mac.finalize().into_bytes())
    }

    fn verifies(&self, bytes: &[u8], mac_hex: &str) -> bool {
        let Some(tag) = unhex(mac_hex) else {
            return false;
        };
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.bytes)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        mac.update(bytes);
        // Constant time.
        mac.verify_slice(&tag).is_ok()
    }
}

/// How a writer signs: with a key, or not, and why not.
#[derive(Clone, Debug)]
pub enum Signing {
    /// Every line is signed with this key.
    Key(Key),
    /// No line is signed; each says so.
    Unsigned(String),
}

impl Signing {
    /// The key a writer uses: the value of the variable `key_env` names when it is given (and
    /// none when that is unset: the lines then say so, rather than falling back silently to
    /// another key), else the key file `key_file` (`record.key` in the user's state folder:
    /// `None` when there is none), made if missing.
    pub fn resolve(key_env: Option<&str>, key_file: Option<PathBuf>) -> Signing {
        if let Some(var) = key_env {
            return match std::env::var_os(var).and_then(|v| Key::new(v.as_encoded_bytes())) {
                Some(key) => Signing::Key(key),
                None => Signing::Unsigned(format!(
                    "record.key_env names {var}, which is not set: this record is unsigned"
                )),
            };
        }
        match key_file {
            None => Signing::Unsigned(
                "no state folder (XDG_STATE_HOME or HOME) for the record key: this record is unsigned"
                    .into(),
            ),
            Some(file) => match Key::from_file_or_new(&file) {
                Ok(key) => Signing::Key(key),
                Err(e) => Signing::Unsigned(format!(
                    "the record key {} could not be read or made ({e}): this record is unsigned",
                    file.display()
                )),
            },
        }
    }

    /// The key, if any.
    pub fn key(&self) -> Option<&Key> {
        match self {
            Signing::Key(k) => Some(k),
            Signing::Unsigned(_) => None,
        }
    }
}

/// Where a writer is in the chain: the next line's number and the sha256 of the last line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The number the next line gets.
    pub next: u64,
    /// sha256 (hex) of the last line, or [`GENESIS`].
    pub prev: String,
}

impl Head {
    /// The head of a record whose whole content is `bytes` (ending with a newline, or empty).
    pub fn of(bytes: &[u8]) -> Head {
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        if body.is_empty() && bytes.is_empty() {
            return Head {
                next: 1,
                prev: GENESIS.into(),
            };
        }
        let last = body.rsplit(|&b| b == b'\n').next().unwrap_or(body);
        Head {
            next: bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1,
            prev: hex(&Sha256::digest(last)),
        }
    }

    /// The head of the record in `file` (of `len` bytes, ending with a newline or empty): read
    /// from its tail where its last line is chained (its number then gives the next), else from
    /// the whole file.
    ///
    /// # Errors
    ///
    /// Reading failed.
    pub fn read(file: &std::fs::File, len: u64) -> std::io::Result<Head> {
        use std::os::unix::fs::FileExt;
        const TAIL: u64 = 1 << 20;
        let from = len.saturating_sub(TAIL);
        let mut tail = vec![0u8; (len - from) as usize];
        file.read_exact_at(&mut tail, from)?;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        let last = match body.iter().rposition(|&b| b == b'\n') {
            Some(nl) => Some(&body[nl + 1..]),
            None if from == 0 => Some(body),
            None => None,
        };
        if let Some(n) = last.and_then(chain_of).and_then(|c| c.line) {
            return Ok(Head {
                next: n + 1,
                prev: hex(&Sha256::digest(last.unwrap_or_default())),
            });
        }
        let mut all = vec![0u8; len as usize];
        file.read_exact_at(&mut all, 0)?;
        Ok(Head::of(&all))
    }
}

/// Seals one line: `object` is a JSON object's bytes (no newline); returns it with its `chain`
/// field, signed when `signing` has a key, and moves `head` on. `start` and `end` mark a
/// writer's first and last lines.
pub fn seal(object: &[u8], head: &mut Head, signing: &Signing, start: bool, end: bool) -> Vec<u8> {
    let open = object.strip_suffix(b"}").unwrap_or(object);
    let mut line = open.to_vec();
    if open.len() > 1 {
        line.push(b',');
    }
    let mut chain = format!(
        "\"chain\":{{\"line\":{},\"prev\":\"{}\"",
        head.next, head.prev
    );
    if start {
        chain.push_str(",\"start\":true");
    }
    if end {
        chain.push_str(",\"end\":true");
    }
    match signing {
        Signing::Key(key) => {
            let _ = write!(chain, ",\"key\":\"{}\"", key.label());
            line.extend_from_slice(chain.as_bytes());
            let mac = key.mac(&line);
            line.extend_from_slice(format!(",\"mac\":\"{mac}\"}}}}").as_bytes());
        }
        Signing::Unsigned(_) => {
            chain.push_str(",\"key\":\"none\"}}");
            line.extend_from_slice(chain.as_bytes());
        }
    }
    head.prev = hex(&Sha256::digest(&line));
    head.next += 1;
    line
}

/// A line's `chain`, as read.
#[derive(Debug, Default, serde::Deserialize)]
struct Chain {
    line: Option<u64>,
    prev: Option<String>,
    #[serde(default)]
    start: bool,
    #[serde(default)]
    end: bool,
    key: Option<String>,
    mac: Option<String>,
}

fn chain_of(line: &[u8]) -> Option<Chain> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    serde_json::from_value(v.get("chain")?.clone()).ok()
}

/// Why a record does not verify: the first line that fails, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The line, from 1.
    pub line: u64,
    /// What is wrong with it.
    pub why: String,
    /// Whether it is only an end that is missing (a writer killed, or the tail cut): the lines
    /// before are whole, and nothing after them claims to be.
    pub incomplete: bool,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// What verifying a record found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Lines read.
    pub lines: u64,
    /// Lines before the first chained one.
    pub unchained: u64,
    /// Chained lines that say `"key":"none"`.
    pub unsigned: u64,
    /// Signed lines whose signature was checked.
    pub signed: u64,
    /// Signed lines not checked for want of the key.
    pub unchecked: u64,
    /// Torn lines (a writer killed mid-line), allowed where they are.
    pub torn: Vec<u64>,
    /// Writers that did not close the record (their last line, their first), before the last.
    pub unended: Vec<(u64, u64)>,
    /// The first failure, if any.
    pub failure: Option<Failure>,
}

impl Report {
    /// Whether the record verified: whole, with every signature checked, or unsigned.
    pub fn verified(&self) -> bool {
        self.failure.is_none()
    }

    /// Whether every line after the unsigned and unchained ones was signed and checked.
    pub fn signed(&self) -> bool {
        self.signed > 0 && self.unchecked == 0
    }

    /// One line that says what was found.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        match &self.failure {
            Some(f) if f.incomplete => parts.push(format!("incomplete at {f}")),
            Some(f) => parts.push(format!("does not verify: {f}")),
            None if self.signed() => parts.push("verified: every line chained and signed".into()),
            None if self.unchecked > 0 => parts.push(format!(
                "chain intact; {} signed lines not checked (no key given)",
                self.unchecked
            )),
            None => parts
                .push("verified as unsigned: the chain is intact, but no line is signed".into()),
        }
        parts.push(format!("{} lines", self.lines));
        if self.signed > 0 {
            parts.push(format!("{} signed", self.signed));
        }
        if self.unsigned > 0 {
            parts.push(format!("{} unsigned", self.unsigned));
        }
        if self.unchained > 0 {
            parts.push(format!(
                "{} unchained (written before records were chained)",
                self.unchained
            ));
        }
        for t in &self.torn {
            parts.push(format!("line {t} torn (its writer died while writing it)"));
        }
        for (last, first) in &self.unended {
            parts.push(format!(
                "the writer that began at line {first} stopped after line {last} without closing the record (killed or crashed)"
            ));
        }
        parts.join("; ")
    }
}

/// Verifies a record's whole content: its chain, and each signature with `key` (without a key,
/// signed lines are counted as unchecked). See the module doc for what passes.
pub fn verify(bytes: &[u8], key: Option<&Key>) -> Report {
    let mut report = Report::default();
    let complete = bytes.is_empty() || bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() && complete {
        return report;
    }
    let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let n = lines.len() as u64;
    report.lines = n;
    let mut prev = GENESIS.to_owned();
    let mut chained = false;
    let mut signed_at: Option<u64> = None;
    // The writer whose lines are being read: its first line, and whether it ended.
    let mut writer: Option<(u64, bool)> = None;
    let fail = |report: &mut Report, line: u64, why: String| {
        report.failure = Some(Failure {
            line,
            why,
            incomplete: false,
        });
    };
    for (i, raw) in lines.iter().enumerate() {
        let no = i as u64 + 1;
        let last = no == n;
        let this = hex(&Sha256::digest(raw));
        let next_starts = lines
            .get(i + 1)
            .and_then(|l| chain_of(l))
            .is_some_and(|c| c.start);
        let parsed: Option<serde_json::Value> = serde_json::from_slice(raw).ok();
        let torn_here = parsed.as_ref().is_none_or(|v| !v.is_object()) || (last && !complete);
        if torn_here {
            if last || next_starts || !chained {
                if chained || last {
                    report.torn.push(no);
                } else {
                    report.unchained += 1;
                }
                if last && chained {
                    report.failure = Some(Failure {
                        line: no,
                        why: "torn: its writer died while writing it, or the record was cut there"
                            .into(),
                        incomplete: true,
                    });
                    return report;
                }
                if let Some((_, ended)) = writer.as_mut() {
                    *ended = true;
                }
                prev = this;
                continue;
            }
            fail(&mut report, no, "not a whole JSON object".into());
            return report;
        }
        let chain = parsed
            .as_ref()
            .and_then(|v| v.get("chain"))
            .and_then(|c| serde_json::from_value::<Chain>(c.clone()).ok());
        let Some(chain) = chain else {
            if chained {
                fail(
                    &mut report,
                    no,
                    "no chain, after chained lines: inserted by something other than Reasonix"
                        .into(),
                );
                return report;
            }
            report.unchained += 1;
            prev = this;
            continue;
        };
        chained = true;
        if chain.line != Some(no) {
            fail(
                &mut report,
                no,
                format!(
                    "it says it is line {}: a line before it was removed, added or moved",
                    chain.line.map_or_else(|| "?".into(), |l| l.to_string())
                ),
            );
            return report;
        }
        if chain.prev.as_deref() != Some(prev.as_str()) {
            fail(
                &mut report,
                no,
                "the digest of the line before it does not match: the line before was changed, removed or moved"
                    .into(),
            );
            return report;
        }
        // The line must end with the chain Reasonix writes.
        match chain.key.as_deref() {
            Some("none") => {
                if chain.mac.is_some() || !raw.ends_with(b",\"key\":\"none\"}}") {
                    fail(
                        &mut report,
                        no,
                        "its chain is not as Reasonix writes it".into(),
                    );
                    return report;
                }
                if let Some(s) = signed_at {
                    fail(
                        &mut report,
                        no,
                        format!(
                            "unsigned, though line {s} before it is signed: appended without the key"
                        ),
                    );
                    return report;
                }
                report.unsigned += 1;
            }
            Some(label) => {
                let Some(mac) = chain.mac.as_deref() else {
                    fail(
                        &mut report,
                        no,
                        "it names a key but has no signature".into(),
                    );
                    return report;
                };
                let suffix = format!(",\"mac\":\"{mac}\"}}}}");
                let Some(signed_bytes) = raw.strip_suffix(suffix.as_bytes()) else {
                    fail(
                        &mut report,
                        no,
                        "its chain is not as Reasonix writes it".into(),
                    );
                    return report;
                };
                signed_at.get_or_insert(no);
                match key {
                    Some(k) if k.label() != label => {
                        fail(
                            &mut report,
                            no,
                            format!(
                                "signed with another key ({label}; the key given is {})",
                                k.label()
                            ),
                        );
                        return report;
                    }
                    Some(k) if !k.verifies(signed_bytes, mac) => {
                        fail(
                            &mut report,
                            no,
                            "its signature does not match its content: the line was changed".into(),
                        );
                        return report;
                    }
                    Some(_) => report.signed += 1,
                    None => report.unchecked += 1,
                }
            }
            None => {
                fail(&mut report, no, "its chain names no key".into());
                return report;
            }
        }
        if chain.start {
            if let Some((first, false)) = writer {
                report.unended.push((no - 1, first));
            }
            writer = Some((no, false));
        } else if writer.is_none() {
            fail(
                &mut report,
                no,
                "the first chained line does not open a writer's lines".into(),
            );
            return report;
        }
        if chain.end
            && let Some((_, ended)) = writer.as_mut()
        {
            *ended = true;
        }
        prev = this;
    }
    if let Some((first, false)) = writer {
        report.failure = Some(Failure {
            line: n,
            why: format!(
                "the writer that began at line {first} did not close the record: it was killed or crashed, or the lines after this one were cut"
            ),
            incomplete: true,
        });
    }
    report
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::new(b"a test key, not a secret").unwrap()
    }

    /// A record of `runs` writers of `lines` lines each, sealed with `signing`.
    fn record(signing: &Signing, runs: usize, lines: usize) -> Vec<u8> {
        let mut head = Head::of(b"");
        let mut out = Vec::new();
        for r in 0..runs {
            for l in 0..lines {
                let object = serde_json::to_vec(&serde_json::json!({"run_id": r, "n": l})).unwrap();
                out.extend(seal(&object, &mut head, signing, l == 0, l + 1 == lines));
                out.push(b'\n');
            }
        }
        out
    }

    fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
        bytes
            .strip_suffix(b"\n")
            .unwrap()
            .split(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    }

    fn join(lines: &[Vec<u8>]) -> Vec<u8> {
        let mut out = lines.join(&b'\n');
        out.push(b'\n');
        out
    }

    #[test]
    fn an_untouched_signed_record_verifies_and_every_line_is_checked() {
        let r = record(&Signing::Key(key()), 2, 3);
        let report = verify(&r, Some(&key()));
        assert!(report.verified() && report.signed(), "{report:?}");
        assert_eq!(report.signed, 6);
        // Without the key: the chain holds, the signatures are unchecked.
        let report = verify(&r, None);
        assert!(report.verified() && !report.signed(), "{report:?}");
        assert_eq!(report.unchecked, 6);
        // The head read back from the record is where the writer left it.
        let mut head = Head::of(b"");
        for l in lines(&r) {
            head.prev = hex(&Sha256::digest(&l));
            head.next += 1;
        }
        assert_eq!(Head::of(&r), head);
    }

    #[test]
    fn one_changed_byte_is_named_by_its_line() {
        let r = record(&Signing::Key(key()), 1, 4);
        let mut ls = lines(&r);
        let at = ls[2].iter().position(|&b| b == b'2').unwrap();
        ls[2][at] = b'9';
        let f = verify(&join(&ls), Some(&key())).failure.unwrap();
        assert_eq!((f.line, f.incomplete), (3, false), "{f}");
        assert!(f.why.contains("signature"), "{f}");
    }

    #[test]
    fn a_deleted_line_is_named() {
        let r = record(&Signing::Key(key()), 1, 4);
        let mut ls = lines(&r);
        ls.remove(1);
        let f = verify(&join(&ls), Some(&key())).failure.unwrap();
        assert_eq!((f.line, f.incomplete), (2, false), "{f}");
    }

    #[test]
    fn a_reordered_pair_is_named() {
        let r = record(&Signing::Key(key()), 1, 4);
        let mut ls = lines(&r);
        ls.swap(1, 2);
        let f = verify(&join(&ls), Some(&key())).failure.unwrap();
        assert_eq!((f.line, f.incomplete), (2, false), "{f}");
    }

    #[test]
    fn a_truncated_tail_is_named_at_a_line_end_and_inside_a_line() {
        let r = record(&Signing::Key(key()), 1, 4);
        let mut ls = lines(&r);
        ls.pop();
        let f = verify(&join(&ls), Some(&key())).failure.unwrap();
        assert_eq!((f.line, f.incomplete), (3, true), "{f}");
        let cut = &r[..r.len() - 20];
        let f = verify(cut, Some(&key())).failure.unwrap();
        assert_eq!((f.line, f.incomplete), (4, true), "{f}");
    }

    #[test]
    fn a_line_appended_without_the_key_is_named() {
        let r = record(&Signing::Key(key()), 1, 3);
        let mut head = Head::of(&r);
        let forged = seal(
            br#"{"run_id":"x","event":"forged"}"#,
            &mut head,
            &Signing::Unsigned("none".into()),
            true,
            true,
        );
        let mut both = r.clone();
        both.extend(&forged);
        both.push(b'\n');
        let f = verify(&both, Some(&key())).failure.unwrap();
        assert_eq!((f.line, f.incomplete), (4, false), "{f}");
        assert!(f.why.contains("without the key"), "{f}");
        // Signed with another key: named too, and with no key at hand it is not taken as checked.
        let mut head = Head::of(&r);
        let other = Signing::Key(Key::new(b"someone else's").unwrap());
        let mut both = r.clone();
        both.extend(seal(br#"{"a":1}"#, &mut head, &other, true, true));
        both.push(b'\n');
        let f = verify(&both, Some(&key())).failure.unwrap();
        assert_eq!(f.line, 4, "{f}");
        assert!(!verify(&both, None).signed());
    }

    #[test]
    fn a_record_written_without_a_key_says_so_on_every_line_and_verifies_as_unsigned() {
        let r = record(&Signing::Unsigned("no key".into()), 2, 2);
        for l in lines(&r) {
            assert!(
                l.ends_with(b",\"key\":\"none\"}}"),
                "{}",
                String::from_utf8_lossy(&l)
            );
        }
        let report = verify(&r, Some(&key()));
        assert!(report.verified() && !report.signed(), "{report:?}");
        assert_eq!(report.unsigned, 4);
        assert!(
            report.summary().contains("unsigned"),
            "{}",
            report.summary()
        );
    }

    #[test]
    fn a_crashed_writer_followed_by_another_is_reported_and_the_record_still_verifies() {
        let signing = Signing::Key(key());
        let mut head = Head::of(b"");
        let mut r = Vec::new();
        for (start, end) in [(true, false), (false, false)] {
            r.extend(seal(br#"{"a":1}"#, &mut head, &signing, start, end));
            r.push(b'\n');
        }
        // Killed mid-line; the next writer ends the torn line and goes on.
        r.extend(br#"{"a":"#);
        r.push(b'\n');
        let mut head = Head::of(&r);
        r.extend(seal(br#"{"b":1}"#, &mut head, &signing, true, true));
        r.push(b'\n');
        let report = verify(&r, Some(&key()));
        assert!(report.verified(), "{report:?}");
        assert_eq!(report.torn, [3]);
        // A torn line in the middle of one writer's lines is a changed line.
        let mut ls = lines(&record(&signing, 1, 4));
        ls[1] = b"{\"a\":".to_vec();
        assert_eq!(verify(&join(&ls), Some(&key())).failure.unwrap().line, 2);
    }

    #[test]
    fn lines_from_before_records_were_chained_may_only_come_first() {
        let mut r = b"{\"old\":1}\n{\"old\":\n".to_vec();
        let mut head = Head::of(&r);
        r.extend(seal(
            br#"{"b":1}"#,
            &mut head,
            &Signing::Key(key()),
            true,
            true,
        ));
        r.push(b'\n');
        let report = verify(&r, Some(&key()));
        assert!(report.verified(), "{report:?}");
        assert_eq!(report.unchained, 2);
        r.extend(b"{\"old\":2}\n");
        assert_eq!(verify(&r, Some(&key())).failure.unwrap().line, 4);
    }

    #[test]
    fn a_key_file_is_made_once_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/record.key");
        let a = Key::from_file_or_new(&path).unwrap();
        let b = Key::from_file_or_new(&path).unwrap();
        assert_eq!(a.label(), b.label());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!format!("{a:?}").contains(&std::fs::read_to_string(&path).unwrap()));
    }
}
