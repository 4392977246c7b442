//! MCP servers and their tools: which servers a workspace names ([`config`]), starting one
//! ([`process`]), speaking to it ([`client`], the official Rust SDK `rmcp` as a client), and the
//! tools they put in the registry ([`tools`]). Reasonix's own gated tools served to MCP clients
//! are the agent's (`crate::agent::serve`): a session with no model.
//!
//! On the admission path this is the tool side of `validate` and `execute`: a server's tool is
//! a registry entry whose schema is the server's `inputSchema`, compiled and enforced like a
//! builtin's. What it does is not its own to say: the classify stage asks the policy
//! (`mcp.classify`, [`crate::policy::mcp`]).
//!
//! **Connecting is a call.** Starting server NAME is the call `mcp_connect__NAME` with
//! arguments `{command, args}` or `{url}` ([`tools::ConnectTool`]): it goes through the gate
//! like any other, so a deny rule on it means the process never starts, and only its admitted,
//! leased execution opens the connection. The agent's `servers` module strings this together
//! for `run` and `check`.

pub mod client;
pub mod config;
pub mod process;
pub mod tools;

pub use client::Connection;
pub use config::{Server, ServerSpec, Transport, servers};
pub use tools::{
    ConnectTool, ServerTool, connect_arguments, connect_name, server_of, server_reached,
    tool_prefix,
};
