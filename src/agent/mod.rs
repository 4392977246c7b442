//! The agent loop: a provider proposes calls, the gate judges each, the approver answers asks,
//! leases serialize writers, the jail runs processes, and the record says what happened.
//!
//! ```text
//! prompt ─► provider (stream) ─► assemble calls ─► gate ─► approve ─► lease ─► execute ─► bound ─► record
//!              ▲                                                                            │
//!              └──────────────────────── tool messages (invalid / blocked / failed / result) ┘
//! ```
//!
//! See [`session`] for the turn — and for plan mode, goals and the snapshots rewind goes back
//! to — [`openai`] and [`script`] for the providers.

pub mod approvals;
pub mod approver;
pub mod config;
pub mod elicit;
mod landing;
pub mod openai;
pub mod provider;
pub mod script;
pub mod serve;
pub mod servers;
pub mod session;

pub use approver::{Always, Answer, Approver, Decided, PlanAnswer, PlanReviewer, Ruling};
pub use provider::{Event, EventStream, Message, ProposedCall, Provider, ProviderError, Request};
pub use session::{End, Goal, Served, Session, SessionError, Terminal};
