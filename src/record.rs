//! The execution record: one JSON line per call — what was proposed, what the gate decided, who
//! approved, what lease and jail it ran under, how it ended, and receipts of what was observed.
//! Append-only, each line written whole and `fsync`ed before the next call goes on.
//!
//! Lines that are not calls carry an `event`: `claude_hook` (a decision of `reasonix hook
//! claude`, [`HookRecord`]), `run_started`, `mcp_connect` (one per MCP server a
//! run tried to start, [`ConnectRecord`]), `network_connect` (one per connection a bash call's
//! processes asked the egress proxy for, after the call's line, [`NetworkRecord`]), `attempt_failed` (one per attempt at an answer that
//! failed before it was whole), `provider_error`, `run_ended`; and for the three
//! controls over the admission path:
//!
//! - `plan` ([`PlanRecord`]): a plan handed in with `submit_plan`, and what was decided;
//! - `evidence` of `kind: verification` ([`EvidenceRecord`]): one check of a run's goal — the
//!   command, its exit code, a digest of its output, the round — what "done" rested on;
//! - `rewind` ([`RewindRecord`]): what `reasonix rewind` restored, left alone, or could not
//!   restore.
//!
//! A file tool's call line also has a `snapshot` ([`SnapshotFile`]): how each path it changed
//! was before and after — kind, sha256, permission bits, size — and whether the previous content
//! was kept in the record's state folder, so `reasonix rewind` can bring it back.
//!
//! Every line carries its run's `run_id`, so several runs appended to one file stay apart: a
//! call is `(run_id, call_id)`. A call line holds the arguments as the model wrote them, cut past
//! [`ARGUMENTS_BOUND`] bytes, beside the sha256 of the whole — or, with `record.arguments:
//! digest` in `reasonix.yaml`, the digest alone.
//!
//! A receipt says only what was seen: a file writer's carries the path's sha256 before and after
//! and its size; a shell command's says its effects were not observed beyond its exit status.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::gate::{Stage, Verdict};
use crate::lease::Need;
use crate::policy::RuleHit;
use crate::sandbox::jail::JailPlanView;

/// The most bytes of a call's arguments a record line holds; past it they are cut, with the true
/// size said, and `arguments_sha256` is still of the whole.
pub const ARGUMENTS_BOUND: usize = 8192;

/// A run id unique among the runs of one record: the time in milliseconds, the process id and
/// a counter within the process (a record is locked by one run at a time, so two runs on it
/// never share all three).
pub fn run_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("run-{:x}-{:x}-{n}", now_ms(), std::process::id())
}

/// How a call ended. Never blurred: a block is not a failure, and only what ran can succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The model must correct its call; nothing ran.
    Invalid,
    /// The host decided it must not run (deny, an unanswered or declined ask, the sandbox).
    Blocked,
    /// It ran and reported an error (a non-zero exit status included).
    Failed,
    /// It ran and succeeded.
    Succeeded,
}

impl Outcome {
    /// The name used in records and tool messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Invalid => "invalid",
            Outcome::Blocked => "blocked",
            Outcome::Failed => "failed",
            Outcome::Succeeded => "succeeded",
        }
    }
}

/// Who let an `ask` through, or refused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// A person allowed this one call.
    AllowOnce,
    /// A person allowed this exact call for the rest of the session.
    AllowSession,
    /// An earlier "allow for the session" of the same call.
    Session,
    /// A person declined.
    Deny,
}

/// Who was asked to answer an `ask` ([`CallRecord::approver`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproverKind {
    /// The person at the terminal (`reasonix run`).
    Person,
    /// The user of the MCP client that made the call, asked through MCP elicitation
    /// (`reasonix mcp serve`).
    McpElicitation,
}

/// What was observed of a call's effects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Receipt {
    /// A file a writer touched.
    File {
        /// The resolved path.
        path: String,
        /// Its sha256 before the call (`null`: it did not exist).
        before_sha256: Option<String>,
        /// Its sha256 after (`null`: it does not exist).
        after_sha256: Option<String>,
        /// Its size after, in bytes.
        bytes: Option<u64>,
    },
    /// A folder a process wrote in place, not observed (`sandbox.passthrough`, issue 25): only
    /// what changed in it during the run is counted.
    Passthrough {
        /// The folder.
        path: String,
        /// Files changed in it during the run.
        files: u64,
        /// Their size, in bytes.
        bytes: u64,
        /// What the receipt does not claim.
        note: String,
    },
    /// A change a process made that kept its changes from landing (issue 25): refused by the
    /// gate, or asked about and not allowed. Its run was discarded whole.
    RefusedChange {
        /// The path.
        path: String,
        /// What the process did there.
        change: &'static str,
        /// `deny` or `ask`.
        verdict: crate::effects::ChangeVerdict,
        /// The rules that decided.
        rules: Vec<String>,
        /// Why.
        reasons: Vec<String>,
    },
    /// A process: its exit status, and what was observed of its effects.
    Process {
        /// Its exit status.
        exit_code: Option<i32>,
        /// Whether its effects were observed (issue 25): its changes are the `file` receipts
        /// beside this one — none for a read-only run, which could change nothing, or for a
        /// discarded one, which changed nothing that landed. `false` where they were not (the
        /// jail off, or a writer with no overlay under `best_effort`).
        observed: bool,
        /// What was observed, or what the receipt does not claim.
        note: String,
    },
}

/// The gate's conclusion, as recorded.
#[derive(Clone, Debug, Serialize)]
pub struct AdmissionRecord {
    /// The verdict.
    pub verdict: Verdict,
    /// The stage that settled it.
    pub stage: Stage,
    /// The rules that matched.
    pub rules: Vec<RuleHit>,
    /// Why.
    pub reasons: Vec<String>,
    /// What the bash analysis flagged as hazards (`{id, detail}`), for a bash call; left out
    /// when there are none. `reasonix report` shows them beside the verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hazards: Vec<serde_json::Value>,
}

impl AdmissionRecord {
    /// The record's account of what the gate concluded.
    pub fn of(a: &crate::gate::Admission) -> AdmissionRecord {
        AdmissionRecord {
            verdict: a.verdict,
            stage: a.stage,
            rules: a.rules.clone(),
            reasons: a.reasons.clone(),
            hazards: a
                .bash
                .as_ref()
                .and_then(|b| b.get("hazards"))
                .and_then(|h| h.as_array())
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// The most bytes of a call's result a record line keeps as its `result_excerpt`.
pub const RESULT_EXCERPT_BOUND: usize = 2048;

/// One call, as recorded.
#[derive(Clone, Debug, Serialize)]
pub struct CallRecord {
    /// The run it belongs to.
    pub run_id: String,
    /// Milliseconds since the Unix epoch, when the call was judged.
    pub time_ms: u128,
    /// The provider's id of the call (unique within the run).
    pub call_id: String,
    /// The tool as called.
    pub tool: String,
    /// The arguments as the model wrote them, cut past [`ARGUMENTS_BOUND`] bytes (`null` under
    /// `record.arguments: digest`).
    pub arguments: Option<String>,
    /// sha256 of the arguments as the model wrote them, all of them.
    pub arguments_sha256: String,
    /// What the gate concluded.
    pub admission: AdmissionRecord,
    /// Who let an ask through, or refused it.
    pub approval: Option<Approval>,
    /// Who was asked, when someone was (left out otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approver: Option<ApproverKind>,
    /// What the approver's answer was, in words, when it says more than `approval` (an
    /// elicitation's: accepted with approve true or false, declined, cancelled, unanswered in
    /// time, failed); left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_note: Option<String>,
    /// The lease held while it ran.
    pub lease: Option<Need>,
    /// The jail a bash call ran in.
    pub sandbox: Option<JailPlanView>,
    /// How it ended.
    pub outcome: Outcome,
    /// A process's exit status.
    pub exit_code: Option<i32>,
    /// Why it failed, in one line (`null` unless the outcome is `failed`): the tool's error, or
    /// how the process ended and the last line it wrote to stderr.
    pub failure: Option<String>,
    /// Milliseconds since the Unix epoch, when it began to run, its lease held (`null`: it did
    /// not run).
    pub started_ms: Option<u128>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u128,
    /// The size of the whole result, in bytes (what the model saw may be cut).
    pub result_bytes: usize,
    /// sha256 of the whole result.
    pub result_sha256: String,
    /// The result's head and tail, at most [`RESULT_EXCERPT_BOUND`] bytes, as the model saw
    /// them (left out under `record.arguments: digest`, and for an empty result).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_excerpt: Option<String>,
    /// What was observed of its effects.
    pub receipts: Vec<Receipt>,
    /// For a file tool: each path whose state it changed, before and after, and whether the
    /// previous content was kept for `reasonix rewind` (empty for other calls).
    pub snapshot: Vec<SnapshotFile>,
    /// What the tool's provider says about it (an MCP tool's annotations), as given; hints
    /// that played no part in the verdict.
    pub annotations: Option<serde_json::Value>,
    /// When a pre-tool hook replaced the call's arguments: the sha256 of the replacement (as
    /// JSON), which was judged again and is what ran; `arguments_sha256` stays the model's.
    pub replaced_arguments_sha256: Option<String>,
    /// Each post-tool hook that ran on the call, in order: its note, or why it failed. Neither
    /// changed the outcome. Left out when none ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub post_tool: Vec<crate::hooks::PostToolRan>,
}

/// Connecting to an MCP server (`mcp_connect__NAME`): one line per server a run tried, with the
/// gate's conclusion on the connect call, how it ended, the tools the server brought and those
/// it offered that are unavailable (a schema that does not compile), each with why.
#[derive(Clone, Debug, Serialize)]
pub struct ConnectRecord {
    /// The run it belongs to.
    pub run_id: String,
    /// Milliseconds since the Unix epoch, when the connect was judged.
    pub time_ms: u128,
    /// `mcp_connect`.
    pub event: &'static str,
    /// Which restart of the server this connect is (`null`: its first connect). A server whose
    /// connection died is restarted by the next call to one of its tools, its connect judged
    /// again: each restart is a line of its own.
    pub restart: Option<usize>,
    /// The server.
    pub server: String,
    /// The connect call as judged (`mcp_connect__NAME`).
    pub tool: String,
    /// Its arguments: `{command, args}` or `{url}`.
    pub arguments: serde_json::Value,
    /// What the gate concluded.
    pub admission: AdmissionRecord,
    /// Who let an ask through, or refused it.
    pub approval: Option<Approval>,
    /// `blocked` (nothing started), `failed` (it did not start or list its tools) or
    /// `succeeded`.
    pub outcome: Outcome,
    /// Why it failed or was blocked.
    pub failure: Option<String>,
    /// The tools it brought, as registered.
    pub tools: Vec<String>,
    /// Tools it offered that are unavailable, with why.
    pub unavailable: Vec<(String, String)>,
    /// What about the server is not enforced (a stdio server outside the OS jail).
    pub not_enforced: Option<String>,
}

/// One connection a bash call's process asked the egress proxy for (`event: network_connect`):
/// the host and port asked for, the gate's verdict and why, the address connected to, bytes each
/// way and how long it lasted. Written right after its call's line.
#[derive(Clone, Debug, Serialize)]
pub struct NetworkRecord<'a> {
    /// The run it belongs to.
    pub run_id: &'a str,
    /// The bash call whose process asked for it.
    pub call_id: &'a str,
    /// Milliseconds since the Unix epoch, when it was recorded.
    pub time_ms: u128,
    /// The connection.
    #[serde(flatten)]
    pub connection: &'a crate::egress::Connection,
}

/// One decision of `reasonix hook claude`: a tool call Claude Code proposed, the Reasonix call
/// it was judged as, and what the gate concluded. Claude Code runs the tool (or not) after the
/// answer; nothing here ran it, so the line has no outcome, only the `decision` Claude was given.
#[derive(Clone, Debug, Serialize)]
pub struct HookRecord {
    /// `claude-` and Claude's session id: one session's decisions share it.
    pub run_id: String,
    /// Milliseconds since the Unix epoch, when the call was judged.
    pub time_ms: u128,
    /// `claude_hook`.
    pub event: &'static str,
    /// Claude's id of the tool use.
    pub tool_use_id: Option<String>,
    /// Claude's tool name.
    pub claude_tool: String,
    /// Claude's permission mode, as it said.
    pub permission_mode: Option<String>,
    /// The Reasonix tool it was judged as (`null`: it has no mapping).
    pub tool: Option<String>,
    /// The arguments judged, cut past [`ARGUMENTS_BOUND`] bytes.
    pub arguments: Option<String>,
    /// sha256 of the arguments judged, all of them.
    pub arguments_sha256: Option<String>,
    /// What the gate concluded (`null`: nothing was judged).
    pub admission: Option<AdmissionRecord>,
    /// What Claude Code was told for the whole tool call: `allow`, `ask` or `deny`.
    pub decision: &'static str,
    /// The reason it was told.
    pub reason: String,
}

/// A line that is not a call: the start and end of a run, a provider error. (A failed attempt
/// has a line of its own, [`AttemptRecord`].)
#[derive(Clone, Debug, Serialize)]
pub struct EventRecord {
    /// The run it belongs to.
    pub run_id: String,
    /// Milliseconds since the Unix epoch.
    pub time_ms: u128,
    /// `run_started`, `run_ended`, `provider_error`.
    pub event: &'static str,
    /// What happened.
    pub detail: String,
}

/// The first line of a run (`event: run_started`): besides the [`EventRecord`] fields, the
/// provider, the task and the posture on their own, for `reasonix report`.
#[derive(Clone, Debug, Serialize)]
pub struct RunStartRecord {
    /// The run it belongs to.
    pub run_id: String,
    /// Milliseconds since the Unix epoch.
    pub time_ms: u128,
    /// `run_started`.
    pub event: &'static str,
    /// The provider and the task, in words: `PROVIDER — TASK`.
    pub detail: String,
    /// The provider (its model and address, or the script).
    pub provider: String,
    /// The task, as the prompt gave it.
    pub task: String,
    /// The posture: `interactive`, `unattended` or `strict`.
    pub posture: crate::Posture,
}

/// One attempt at a model's answer that failed before the answer was whole: nothing of it was
/// judged, leased or run. The provider asked again after `wait_ms`, or, when that is `null`,
/// gave up (a `provider_error` line follows).
#[derive(Clone, Debug, Serialize)]
pub struct AttemptRecord {
    /// The run it belongs to.
    pub run_id: String,
    /// Milliseconds since the Unix epoch, when it failed.
    pub time_ms: u128,
    /// `attempt_failed`.
    pub event: &'static str,
    /// The model turn it belongs to, from 0.
    pub step: usize,
    /// Which attempt of that turn's answer, from 1.
    pub attempt: u32,
    /// `status`, `transport`, `cut`, `malformed` or `stall`.
    pub fault: &'static str,
    /// The HTTP status, for a `status` fault.
    pub status: Option<u16>,
    /// The fault in words.
    pub detail: String,
    /// Bytes of the response body received before it failed.
    pub bytes: u64,
    /// The wait the server asked for, in milliseconds.
    pub retry_after_ms: Option<u128>,
    /// The wait before the next attempt, in milliseconds (`null`: none followed).
    pub wait_ms: Option<u128>,
    /// Characters of text and reasoning that had been shown from it, now discarded.
    pub discarded_chars: usize,
}

/// The most bytes of a plan a `plan` line holds; past it the plan is cut, with the true size
/// said, and `plan_sha256` is still of the whole.
pub const PLAN_BOUND: usize = 64 * 1024;

/// What became of a plan handed in with `submit_plan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanDecision {
    /// Approved: the session goes on in normal mode.
    Approved,
    /// Rejected, with feedback for the model: the session stays in plan mode.
    Rejected,
    /// Nobody could review it: the run ends with the plan (an unattended `--plan` run).
    Unreviewed,
}

/// Who decided about a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reviewer {
    /// The person at the terminal.
    Person,
    /// The run approved its own plan, as `--approve-plan` told it to.
    ApprovePlan,
}

/// A plan handed in, and what was decided (`event: plan`).
#[derive(Clone, Debug, Serialize)]
pub struct PlanRecord {
    /// The run it belongs to.
    pub run_id: String,
    /// Milliseconds since the Unix epoch, when it was decided.
    pub time_ms: u128,
    /// `plan`.
    pub event: &'static str,
    /// The `submit_plan` call that handed it in.
    pub call_id: String,
    /// The plan, cut past [`PLAN_BOUND`] bytes (`null` under `record.arguments: digest`).
    pub plan: Option<String>,
    /// sha256 of the whole plan.
    pub plan_sha256: String,
    /// Its size in bytes.
    pub plan_bytes: usize,
    /// What was decided.
    pub decision: PlanDecision,
    /// Who decided (`null` when nobody could: `unreviewed`).
    pub by: Option<Reviewer>,
    /// The reviewer's words for the model, with a rejection.
    pub feedback: Option<String>,
}

/// One check of a run's goal (`event: evidence`, `kind: verification`): what "done" rested on.
#[derive(Clone, Debug, Serialize)]
pub struct EvidenceRecord {
    /// The run it belongs to.
    pub run_id: String,
    /// Milliseconds since the Unix epoch, when the check ended.
    pub time_ms: u128,
    /// `evidence`.
    pub event: &'static str,
    /// `verification`.
    pub kind: &'static str,
    /// Which check of the run, from 1.
    pub round: usize,
    /// The bash call that ran the command (its own call line has the admission and the jail).
    pub call_id: String,
    /// The goal, as given.
    pub goal: String,
    /// The command that checks it.
    pub command: String,
    /// How the call ended: `succeeded` or `failed` when it ran, `blocked` or `invalid` when not.
    pub outcome: Outcome,
    /// Its exit status (`null`: it did not run, or ended without one).
    pub exit_code: Option<i32>,
    /// Whether the goal is met: the command ran and exited 0.
    pub met: bool,
    /// The size of its whole output, in bytes.
    pub output_bytes: usize,
    /// sha256 of its whole output.
    pub output_sha256: String,
}

/// How a path was, observed beneath its root without following a symlink.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum FileState {
    /// Nothing is there.
    Absent,
    /// A regular file.
    File {
        /// sha256 of its content.
        sha256: String,
        /// Its permission bits, in octal (`0644`).
        mode: String,
        /// Its size in bytes.
        bytes: u64,
    },
    /// A folder (only `move_file` moves one).
    Folder,
    /// Something else: a symlink, a device, a socket.
    Other,
    /// It could not be observed.
    Unknown {
        /// Why.
        error: String,
    },
}

impl FileState {
    /// A regular file with this digest, permission bits and size.
    pub fn file(sha256: String, mode: u32, bytes: u64) -> FileState {
        FileState::File {
            sha256,
            mode: format!("{:04o}", mode & 0o7777),
            bytes,
        }
    }

    /// Its sha256, when it is a regular file.
    pub fn sha256(&self) -> Option<&str> {
        match self {
            FileState::File { sha256, .. } => Some(sha256),
            _ => None,
        }
    }

    /// Its size, when it is a regular file.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            FileState::File { bytes, .. } => Some(*bytes),
            _ => None,
        }
    }

    /// Its permission bits, when it is a regular file whose mode reads as octal.
    pub fn mode(&self) -> Option<u32> {
        match self {
            FileState::File { mode, .. } => u32::from_str_radix(mode, 8).ok(),
            _ => None,
        }
    }
}

/// One path a file tool changed, before and after the call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// The resolved path.
    pub path: String,
    /// How it was before the call.
    pub before: FileState,
    /// How it was right after.
    pub after: FileState,
    /// Whether the previous content is in the record's state folder (a file before the call).
    pub kept: bool,
    /// Why the previous content was not kept, when it was a file and was not.
    pub note: Option<String>,
}

/// One path, or one call, in a rewind's account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewoundFile {
    /// The run of the call.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The path; for a shell command, the command (`null` when the record keeps only digests).
    pub path: Option<String>,
    /// What was done (`written back`, `removed`, `moved back from …`), or why it was not.
    pub detail: String,
}

/// A rewind (`event: rewind`): what `reasonix rewind` restored, what it left alone, and what
/// it could not restore (a shell command's effects were never observed).
#[derive(Clone, Debug, Serialize)]
pub struct RewindRecord {
    /// An id of its own, made like a run's.
    pub run_id: String,
    /// Milliseconds since the Unix epoch, when it ended.
    pub time_ms: u128,
    /// `rewind`.
    pub event: &'static str,
    /// `--to`: the run of the call it went back to.
    pub to_run: Option<String>,
    /// `--to`: the call it went back to (undoing it and every later one).
    pub to_call: Option<String>,
    /// `--last`: how many points it undid.
    pub last: Option<usize>,
    /// Whether `--force` let it overwrite what changed since.
    pub force: bool,
    /// The paths brought back to how they were before their call.
    pub restored: Vec<RewoundFile>,
    /// The paths left as they are: changed since, or the restore failed.
    pub left: Vec<RewoundFile>,
    /// The calls and paths in the range that cannot be restored.
    pub not_restorable: Vec<RewoundFile>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Lowercase hex sha256.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// sha256 and size of a file, if it is one.
pub fn file_digest(path: &Path) -> Option<(String, u64)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some((sha256(&bytes), bytes.len() as u64))
}

/// The append-only record.
///
/// Before each append it checks that the file at its path is still the one it opened and still
/// has exactly the bytes it wrote: a record replaced, truncated or written to by anything else
/// (a shell command the jail let write the workspace) stops the run with an error instead of
/// going on as if the record were whole.
///
/// Each line is sealed as it is appended ([`crate::seal`]): chained to the line before it and
/// signed with the record key, or marked unsigned when there is none.
pub struct Recorder {
    path: PathBuf,
    file: Mutex<Open>,
    /// The revision of the policy bundle in force, written into every line while it is set.
    policy_revision: Mutex<Option<String>>,
    signing: crate::seal::Signing,
}

struct Open {
    file: File,
    id: (u64, u64),
    len: u64,
    /// Where the chain is: the next line's number and the last line's digest.
    head: crate::seal::Head,
    /// Whether this writer has appended a line yet (its first says `start`).
    started: bool,
}

impl Recorder {
    /// Opens (creating it and its folders) the record at `path` for appending, and holds an
    /// exclusive lock on it until dropped: two runs never share a record. Its lines are sealed
    /// with `signing` ([`crate::seal::Signing::resolve`] finds the user's key).
    pub fn open(path: &Path, signing: crate::seal::Signing) -> std::io::Result<Recorder> {
        Recorder::open_with(path, false, signing)
    }

    /// [`Recorder::open`], waiting for the lock rather than refusing: for short-lived writers
    /// that append a line or two and go (`reasonix hook claude`, run once per tool call, several
    /// at once when Claude Code calls tools in parallel).
    pub fn open_waiting(path: &Path, signing: crate::seal::Signing) -> std::io::Result<Recorder> {
        Recorder::open_with(path, true, signing)
    }

    /// How its lines are signed.
    pub fn signing(&self) -> &crate::seal::Signing {
        &self.signing
    }

    fn open_with(
        path: &Path,
        wait: bool,
        signing: crate::seal::Signing,
    ) -> std::io::Result<Recorder> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        // One writer at a time: a second run on the same record would look like tampering.
        if wait {
            file.lock()?;
        } else if let Err(e) = file.try_lock() {
            // The caller names the path; the error says only what is wrong with it.
            return Err(std::io::Error::other(match e {
                std::fs::TryLockError::WouldBlock => {
                    "it is the record of another run still going; give this run its own with --record"
                        .to_owned()
                }
                std::fs::TryLockError::Error(e) => format!("cannot lock it: {e}"),
            }));
        }
        let mut meta = file.metadata()?;
        // A run that stopped while writing a line left it without its newline: end it, so that
        // the next line starts whole on a line of its own (a rewind skips the torn one and says
        // so).
        let mut last = [0u8; 1];
        if meta.len() > 0 {
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut last, meta.len() - 1)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
                file.sync_data()?;
                meta = file.metadata()?;
            }
        }
        let head = crate::seal::Head::read(&file, meta.len())?;
        Ok(Recorder {
            path: path.to_path_buf(),
            file: Mutex::new(Open {
                file,
                id: (meta.dev(), meta.ino()),
                len: meta.len(),
                head,
                started: false,
            }),
            policy_revision: Mutex::new(None),
            signing,
        })
    }

    /// The revision of the policy bundle judging from now on: every line appended after this
    /// carries it as `policy_revision` (`None`: the policy is not a bundle, and lines carry none).
    pub fn set_policy_revision(&self, revision: Option<String>) {
        *self
            .policy_revision
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = revision;
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line, whole, and syncs it to disk.
    pub fn append(&self, line: &impl Serialize) -> std::io::Result<()> {
        self.append_sealed(line, false)
    }

    /// Appends this writer's last line (`run_ended`, a rewind's, a hook's decision): sealed with
    /// `end`, so that a record whose writer never wrote one shows it was cut or killed.
    pub fn append_end(&self, line: &impl Serialize) -> std::io::Result<()> {
        self.append_sealed(line, true)
    }

    fn append_sealed(&self, line: &impl Serialize, end: bool) -> std::io::Result<()> {
        let revision = self
            .policy_revision
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let bytes = match revision {
            None => serde_json::to_vec(line),
            Some(revision) => {
                let mut value = serde_json::to_value(line).map_err(std::io::Error::other)?;
                if let Some(map) = value.as_object_mut() {
                    map.insert("policy_revision".into(), revision.into());
                }
                serde_json::to_vec(&value)
            }
        }
        .map_err(std::io::Error::other)?;
        let mut open = match self.file.lock() {
            Ok(f) => f,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = std::fs::metadata(&self.path).ok();
        if now.as_ref().map(|m| ((m.dev(), m.ino()), m.len())) != Some((open.id, open.len)) {
            return Err(std::io::Error::other(format!(
                "the execution record {} was changed by something other than reasonix (replaced, \
                 truncated or written to); the run stops rather than record on top of it",
                self.path.display()
            )));
        }
        let start = !open.started;
        let mut head = open.head.clone();
        let mut bytes = crate::seal::seal(&bytes, &mut head, &self.signing, start, end);
        bytes.push(b'\n');
        open.file.write_all(&bytes)?;
        open.file.sync_data()?;
        open.len += bytes.len() as u64;
        open.head = head;
        open.started = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsigned() -> crate::seal::Signing {
        crate::seal::Signing::Unsigned("a test".into())
    }

    /// The lines of a record without their seals.
    fn unsealed(path: &Path) -> String {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| match l.find(",\"chain\":") {
                Some(at) => format!("{}}}\n", &l[..at]),
                None => format!("{l}\n"),
            })
            .collect()
    }

    #[test]
    fn lines_are_appended_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/record.jsonl");
        let r = Recorder::open(&path, unsigned()).unwrap();
        r.append(&serde_json::json!({"a": 1})).unwrap();
        r.append(&serde_json::json!({"b": 2})).unwrap();
        drop(r);
        let r = Recorder::open(&path, unsigned()).unwrap();
        r.append(&serde_json::json!({"c": 3})).unwrap();
        let e = Recorder::open(&path, unsigned()).err().unwrap();
        assert!(e.to_string().contains("another run"), "{e}");
        drop(r);
        assert_eq!(unsealed(&path), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    }

    #[test]
    fn a_line_torn_by_a_crash_is_ended_before_the_next_run_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":").unwrap();
        let r = Recorder::open(&path, unsigned()).unwrap();
        r.append(&serde_json::json!({"c": 3})).unwrap();
        drop(r);
        assert_eq!(unsealed(&path), "{\"a\":1}\n{\"b\":\n{\"c\":3}\n");
    }

    #[test]
    fn a_record_changed_behind_its_back_stops_the_recorder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.jsonl");
        let r = Recorder::open(&path, unsigned()).unwrap();
        r.append(&serde_json::json!({"a": 1})).unwrap();
        // Truncated.
        std::fs::write(&path, "").unwrap();
        let e = r.append(&serde_json::json!({"b": 2})).unwrap_err();
        assert!(
            e.to_string()
                .contains("changed by something other than reasonix"),
            "{e}"
        );

        // Appended to by someone else.
        drop(r);
        let r = Recorder::open(&path, unsigned()).unwrap();
        r.append(&serde_json::json!({"c": 3})).unwrap();
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"forged\":1}\n")
            .unwrap();
        assert!(r.append(&serde_json::json!({"d": 4})).is_err());

        // Replaced by another file.
        drop(r);
        let r = Recorder::open(&path, unsigned()).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "").unwrap();
        assert!(r.append(&serde_json::json!({"e": 5})).is_err());

        // Deleted.
        drop(r);
        let r = Recorder::open(&path, unsigned()).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(r.append(&serde_json::json!({"f": 6})).is_err());
    }

    #[test]
    fn every_line_carries_the_policy_revision_once_one_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.jsonl");
        let r = Recorder::open(&path, unsigned()).unwrap();
        r.append(&serde_json::json!({"a": 1})).unwrap();
        r.set_policy_revision(Some("v7".into()));
        r.append(&serde_json::json!({"b": 2})).unwrap();
        let text = unsealed(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, [r#"{"a":1}"#, r#"{"b":2,"policy_revision":"v7"}"#]);
    }

    #[test]
    fn a_recorders_lines_are_chained_and_signed_across_writers_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.jsonl");
        let key = crate::seal::Key::new(b"k").unwrap();
        let signing = crate::seal::Signing::Key(key.clone());
        for _ in 0..2 {
            let r = Recorder::open(&path, signing.clone()).unwrap();
            r.append(&serde_json::json!({"event": "run_started"}))
                .unwrap();
            r.append_end(&serde_json::json!({"event": "run_ended"}))
                .unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        let report = crate::seal::verify(&bytes, Some(&key));
        assert!(report.verified() && report.signed(), "{report:?}");
        assert_eq!(report.signed, 4);
        // A third writer killed before its end: incomplete, named at its last line.
        let r = Recorder::open(&path, signing.clone()).unwrap();
        r.append(&serde_json::json!({"event": "run_started"}))
            .unwrap();
        drop(r);
        let f = crate::seal::verify(&std::fs::read(&path).unwrap(), Some(&key))
            .failure
            .unwrap();
        assert_eq!((f.line, f.incomplete), (5, true), "{f}");
    }

    #[test]
    fn run_ids_differ_within_one_process() {
        let a = run_id();
        let b = run_id();
        assert_ne!(a, b);
        assert!(a.starts_with("run-"), "{a}");
    }

    #[test]
    fn digests_are_sha256() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
