//! What must not compile: each misuse of an admission below is a `compile_fail` doctest, and
//! each sits beside its *control* — the same code with the misuse replaced by the legitimate
//! use, which must compile. (rustdoc does not check error codes on stable Rust, so the control is
//! what proves each failure comes from the misuse line and not from a typo in the scaffolding.)
//!
//! The scaffolding every example shares: a gate, and an admitted read of `notes.md`.
//!
//! ```no_run
//! # use reasonix::{Gate, HostFiles, Judgement, PolicySet, Registry};
//! # let ws = std::path::Path::new("/tmp");
//! # let policy = PolicySet::embedded_default();
//! # let gate = Gate::builder(Registry::with_builtins(), &policy, ws)
//! #     .host_files(HostFiles::for_workspace(ws)).build().unwrap();
//! let Judgement::Allowed(read) =
//!     gate.admit_text(r#"{"name":"read_file","arguments":{"path":"notes.md"}}"#)
//! else { return };
//! // The one way to run it: take its lease, then execute, once.
//! let leases = reasonix::lease::Leases::new();
//! let done = read.lease_blocking(&leases).unwrap().execute();
//! ```
//!
//! **1. Another tool run with this call's admission.** A tool's `execute` takes an
//! `Invocation`, which only the crate's execute stage makes, for the tool that was judged.
//!
//! ```compile_fail
//! # use reasonix::{Gate, HostFiles, Judgement, PolicySet, Registry};
//! # let ws = std::path::Path::new("/tmp");
//! # let policy = PolicySet::embedded_default();
//! # let gate = Gate::builder(Registry::with_builtins(), &policy, ws)
//! #     .host_files(HostFiles::for_workspace(ws)).build().unwrap();
//! # let Judgement::Allowed(read) =
//! #     gate.admit_text(r#"{"name":"read_file","arguments":{"path":"notes.md"}}"#)
//! # else { return };
//! let delete = gate.registry().get("delete_file").unwrap().tool();
//! delete.execute(&read);
//! ```
//!
//! **2. An invocation made by hand.** The control uses one, as a tool does:
//!
//! ```no_run
//! # use reasonix::tool::Invocation;
//! fn tool_body(call: &Invocation) -> bool {
//!     call.path(0).is_ok()
//! }
//! ```
//!
//! and the misuse calls its constructor with every argument it takes (the crate's execute
//! stage alone may):
//!
//! ```compile_fail
//! # use reasonix::tool::Invocation;
//! fn forge() -> Invocation {
//!     Invocation::new(todo!(), todo!(), todo!(), todo!(), todo!(), todo!())
//! }
//! ```
//!
//! **3. An admission made by hand.** The control reads one:
//!
//! ```no_run
//! # use reasonix::gate::{Admission, Admitted};
//! fn read(a: &Admitted) -> &Admission {
//!     a.admission()
//! }
//! ```
//!
//! and the misuse names every field it has:
//!
//! ```compile_fail
//! # use reasonix::gate::{Admission, Admitted};
//! fn forge(a: Admission) -> Admitted {
//!     Admitted {
//!         admission: a,
//!         tool: todo!(),
//!         arguments: todo!(),
//!         grants: todo!(),
//!         withheld: todo!(),
//!         jail: todo!(),
//!         egress: todo!(),
//!         protected: todo!(),
//!         changes: todo!(),
//!     }
//! }
//! ```
//!
//! Inside the crate the same holds one step later: `Parts` (what an admission is made of) has
//! a field only the gate's modules can fill, and [`Leased`](crate::lease::Leased) one only the
//! lease can, so no module of the crate can assemble an executable call either.
//!
//! **4. Execution without a lease.**
//!
//! ```compile_fail
//! # use reasonix::{Gate, HostFiles, Judgement, PolicySet, Registry};
//! # let ws = std::path::Path::new("/tmp");
//! # let policy = PolicySet::embedded_default();
//! # let gate = Gate::builder(Registry::with_builtins(), &policy, ws)
//! #     .host_files(HostFiles::for_workspace(ws)).build().unwrap();
//! # let Judgement::Allowed(read) =
//! #     gate.admit_text(r#"{"name":"read_file","arguments":{"path":"notes.md"}}"#)
//! # else { return };
//! let done = read.execute();
//! ```
//!
//! **5. One admission, two executions.**
//!
//! ```compile_fail
//! # use reasonix::{Gate, HostFiles, Judgement, PolicySet, Registry};
//! # let ws = std::path::Path::new("/tmp");
//! # let policy = PolicySet::embedded_default();
//! # let gate = Gate::builder(Registry::with_builtins(), &policy, ws)
//! #     .host_files(HostFiles::for_workspace(ws)).build().unwrap();
//! # let Judgement::Allowed(read) =
//! #     gate.admit_text(r#"{"name":"read_file","arguments":{"path":"notes.md"}}"#)
//! # else { return };
//! let leases = reasonix::lease::Leases::new();
//! let leased = read.lease_blocking(&leases).unwrap();
//! let first = leased.execute();
//! let second = leased.execute();
//! ```
//!
//! **6. A gate without the host's files.** Every entry point must say which files are the
//! host's own; a builder without them has no `build`.
//!
//! ```compile_fail
//! # use reasonix::{Gate, PolicySet, Registry};
//! # let ws = std::path::Path::new("/tmp");
//! # let policy = PolicySet::embedded_default();
//! let gate = Gate::builder(Registry::with_builtins(), &policy, ws).build();
//! ```
//!
//! **7. A path admitted for reading, changed.** Inside a tool, [`Invocation::path`] gives a
//! [`ConfinedPath`], which has no method that changes the disk; only
//! [`Invocation::writable`], which refuses a read admission at run time, gives a
//! [`WritePath`]. The control:
//!
//! ```no_run
//! # use reasonix::tool::{Invocation, ToolError};
//! fn tool_body(call: &Invocation) -> Result<(), ToolError> {
//!     call.writable(0)?.remove_file().map_err(|e| ToolError::Refused(e.to_string()))
//! }
//! ```
//!
//! and the misuse:
//!
//! ```compile_fail
//! # use reasonix::tool::{Invocation, ToolError};
//! fn tool_body(call: &Invocation) -> Result<(), ToolError> {
//!     call.path(0)?.remove_file().map_err(|e| ToolError::Refused(e.to_string()))
//! }
//! ```
//!
//! **8. A process started around the gate.** The jail's runner is private to the crate; the
//! one public way to run a command that no gate judged is named for what it is, in the jail's
//! `danger` module (for `reasonix sandbox exec`). The control:
//!
//! ```no_run
//! # use reasonix::sandbox::jail::{Capture, JailConfig, JailPlan, danger};
//! let plan = JailPlan::new(&JailConfig::default(), std::path::Path::new("/tmp"), None);
//! let argv = ["true".to_owned()];
//! let ran = danger::exec_unjudged(&plan, &argv, None, Capture::Inherit);
//! ```
//!
//! and the misuse:
//!
//! ```compile_fail
//! # use reasonix::sandbox::jail::{Capture, JailConfig, JailPlan, danger};
//! let plan = JailPlan::new(&JailConfig::default(), std::path::Path::new("/tmp"), None);
//! let argv = ["true".to_owned()];
//! let ran = reasonix::sandbox::jail::run(&plan, &argv, None, Capture::Inherit);
//! ```
//!
//! **9. A plan's refusal edited away.** The control reads it:
//!
//! ```no_run
//! # use reasonix::sandbox::jail::{JailConfig, JailPlan};
//! let plan = JailPlan::new(&JailConfig::default(), std::path::Path::new("/tmp"), None);
//! let why: Option<&str> = plan.refusal();
//! ```
//!
//! and the misuse:
//!
//! ```compile_fail
//! # use reasonix::sandbox::jail::{JailConfig, JailPlan};
//! let mut plan = JailPlan::new(&JailConfig::default(), std::path::Path::new("/tmp"), None);
//! plan.refusal = None;
//! ```
//!
//! **10. A leased call made by hand.** The control reads one:
//!
//! ```no_run
//! # use reasonix::{gate::Admission, lease::Leased};
//! fn read(l: &Leased) -> &Admission {
//!     l.admission()
//! }
//! ```
//!
//! and the misuse names every field it has:
//!
//! ```compile_fail
//! # use reasonix::lease::Leased;
//! fn forge() -> Leased {
//!     Leased { parts: todo!(), lease: todo!(), _sealed: () }
//! }
//! ```
//!
//! [`Invocation::path`]: crate::tool::Invocation::path
//! [`Invocation::writable`]: crate::tool::Invocation::writable
//! [`ConfinedPath`]: crate::sandbox::ConfinedPath
//! [`WritePath`]: crate::sandbox::WritePath
