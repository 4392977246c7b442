//! The integration tests, as one test binary (issue 31): one module per area, each the file
//! that was once a binary of its own (`tests/jail.rs` is now `tests/it/jail.rs`, module
//! `jail`), and [`common`], the helpers they share. One binary is one link after an edit
//! instead of one per file, as codex-rs does for its sandbox tests (`linux-sandbox/tests/all.rs`).
//!
//! Run one area with its module path as the filter: `cargo test --test it jail::`, or one test
//! with `cargo test --test it jail::some_test -- --exact`. The tests run as threads of one
//! process: none may change the process's environment or working folder (`std::env::set_var`,
//! `set_current_dir`); a child process gets its environment with `Command::env`.
//!
//! Data the tests read stays beside this folder: `tests/fixtures/` (helper servers),
//! `tests/heldout/` and `tests/oracle/`.

mod common;

mod agent;
mod bash_analysis;
mod bash_programs;
mod bash_walk;
mod check_cli;
mod claude_hook;
mod cli_conventions;
mod codex_import_property;
mod docs;
mod edges_heldout;
mod effects;
mod egress;
mod fleet;
mod fuzz_bash;
mod heldout_bash;
mod hooks;
mod hooks_session;
mod host_files;
mod jail;
mod layers;
mod llmock;
mod mcp;
mod mcp_http;
mod mcp_real;
mod mcp_serve;
mod oracle;
mod otel;
mod paths;
mod plan_goal_rewind;
mod policy_import;
mod policy_input;
mod policy_rego;
mod policy_yaml;
mod proxy;
mod race;
mod readme;
mod report;
mod run_cli;
mod tokens;
mod tools;
mod trust;
