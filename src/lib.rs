//! Reasonix decides whether a tool call proposed by a language model may acquire an effect, runs
//! it confined when it may, and says honestly what happened.
//!
//! One call, traced to its verdict:
//!
//! ```
//! use reasonix::{Gate, HostFiles, Posture, PolicySet, Registry, Verdict};
//!
//! let workspace = tempfile::tempdir().unwrap();
//! let policy = PolicySet::embedded_default();
//! let gate = Gate::builder(Registry::with_builtins(), &policy, workspace.path())
//!     .posture(Posture::Interactive)
//!     // The host's own files (record, settings, policies): no call may change them.
//!     .host_files(HostFiles::for_workspace(workspace.path()))
//!     .build()
//!     .unwrap();
//!
//! // Reads inside the workspace fall back to `defaults.read_only: allow`.
//! let read = gate.admit_text(r#"{"name":"read_file","arguments":{"path":"notes.md"}}"#);
//! assert_eq!(read.admission().verdict, Verdict::Allow);
//!
//! // Secrets are denied by the default policy's `no-secrets` rule, whatever the tool.
//! let env = gate.admit_text(r#"{"name":"read_file","arguments":{"path":"app/.env"}}"#);
//! assert_eq!(env.admission().verdict, Verdict::Deny);
//!
//! // A path that leaves the workspace is refused by the sandbox stage.
//! let out = gate.admit_text(r#"{"name":"write_file","arguments":{"path":"../x","content":""}}"#);
//! assert_eq!(out.admission().verdict, Verdict::Deny);
//!
//! // A call that does not match its tool's schema is invalid: nothing is resolved or run.
//! let bad = gate.admit_text(r#"{"name":"write_file","arguments":{"path":"a"}}"#);
//! assert_eq!(bad.admission().verdict, Verdict::Invalid);
//! ```
//!
//! # What the gate guarantees
//!
//! - **No effect without an admission.** A tool runs only through [`lease::Leased::execute`]:
//!   a [`gate::Admitted`] value, which only the [`Gate`] can make, leased for what it writes.
//! - **Validation before everything.** A call that does not parse, names an unknown tool or breaks
//!   its tool's JSON Schema is `invalid`; it is never resolved, asked about or run.
//! - **Fail closed.** What the gate cannot resolve or does not understand is never allowed.
//! - **File tools stay inside their roots**, checked on the resolved path at admission and again
//!   by the kernel (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`) at execution, so a
//!   symlink swapped in between cannot redirect the effect.
//!
//! - **A shell command is understood before it is judged.** A `bash` call is parsed with
//!   tree-sitter-bash and every simple command in it — in pipelines, substitutions, wrappers,
//!   `bash -c` — is judged ([`shell`]); what the analysis does not understand is never allowed.
//!
//! - **Processes run jailed.** A shell command runs under Landlock, seccomp, resource limits and
//!   a wall-clock timeout that kills its whole process group ([`sandbox::jail`]); what this
//!   machine cannot enforce is reported, and under `enforce` nothing runs without it.
//!
//! - **Effects enforced, not predicted.** A command admitted as read-only runs on a read-only
//!   workspace; a writer runs on an overlay, and each change it made is judged by the gate as
//!   the file tool that would make it before anything lands ([`effects`]).
//!
//! What it does not do: it does not trust the model's own account of a call (its `description`
//! is shown, never judged), and it does not claim what it did not enforce.
//!
//! # The path every call takes
//!
//! ```text
//! text ─► parse ─► target ─► validate ─► classify ─► resolve paths ─► policy ─► sandbox ─► plan ─► approve
//!         (call)   (proxy)   (schema)    (effects,   (symlinks,        (deny >   (roots)    (plan    (posture)
//!                                         paths)      `..`, `~`)        ask >                mode
//!                                                                       allow >              holds
//!                                                                       fallback)            writers)
//!      ─► hooks ─► lease ─► execute ─► effects ─► record
//! ```
//!
//! `docs/architecture.md` lists the stages once, with the module of each.
//!
//! The modules follow that path: [`call`], [`tool`], [`shell`], [`sandbox`], [`policy`], [`gate`];
//! after it, [`record`] says what happened and [`rewind`] undoes what the file tools changed.

// `unsafe` is denied everywhere; the jail allows it where it registers the hook that runs
// between fork and exec (`sandbox::jail::run`), each block with a SAFETY comment.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod bundle;
pub mod call;
pub mod claude;
pub mod codex;
pub mod decisions;
pub mod effects;
pub mod egress;
pub mod execute;
pub mod gate;
pub mod hooks;
pub mod host;
pub mod import;
pub mod lease;
pub mod mcp;
pub mod policy;
pub mod record;
pub mod report;
pub mod rewind;
pub mod sandbox;
pub mod seal;
pub mod settings;
pub mod telemetry;
pub mod text;
pub mod tool;

/// The shell analysis: the workspace's crate `reasonix-shell`, under the name the gateway's
/// modules have always used for it (`crate::shell`).
pub use reasonix_shell as shell;
/// The words every stage shares ([`Effect`], [`vocab::PathRole`], [`vocab::Access`],
/// [`vocab::PathRequest`]): they live in `reasonix-shell`, whose analysis speaks them.
pub use reasonix_shell::vocab;

pub use call::Call;
pub use gate::{Admission, Gate, GateMode, Judgement, Stage, Verdict};
pub use host::HostFiles;
pub use policy::{PolicySet, Posture};
pub use tool::{Registry, Tool};
pub use vocab::Effect;
