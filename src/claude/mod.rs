//! Claude Code, met where it is: its `PreToolUse` hook ([`hook`]: a tool call of Claude's mapped
//! to Reasonix calls and judged by the same gate) and its `settings.json` permission rules
//! ([`settings`]: imported as a YAML policy, read strictly).
//!
//! On the admission path this is the step before `parse`: it turns another agent's proposal into
//! calls the gate judges as it judges its own. It never runs anything: Claude Code does, once the
//! hook has answered. A web fetch is judged as the builtin `network_connect {host, port}` (the
//! egress proxy's call), and an MCP tool of a server Claude connected as [`tools::Observed`]; both
//! refuse to execute. The call is judged in the project's root as Claude finds it ([`project`]),
//! by the gate every entry point builds (its settings, its policies, its pre-tool hooks), and
//! then narrowed where Reasonix's safety would have come from how its own tool runs
//! ([`unjailed`]), since Claude runs its own.

pub mod hook;
pub mod project;
pub mod settings;
pub mod tools;
pub mod unjailed;
