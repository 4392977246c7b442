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

/// The tests share one process: none changes its environment or working folder, which every
/// other test's thread (and every child it starts) would see mid-run. A test that needs another
/// environment gives it to its child with `Command::env`, or passes paths explicitly.
#[test]
fn no_test_changes_the_environment_or_folder_the_tests_share() {
    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("tests"), &mut files);
    assert!(files.len() > 40, "{files:?}");
    // Spelled in two pieces so this file does not name them itself.
    let calls = [
        ["set", "_var("],
        ["remove", "_var("],
        ["set_current", "_dir("],
    ]
    .map(|[a, b]| format!("{a}{b}"));
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for call in &calls {
                if code.contains(call.as_str()) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
