//! The README's tour, run exactly as written: every `sh` block of "A ten-minute tour" (but the
//! one that installs the binary) runs with `bash` from the repository's root, with this build's
//! `reasonix` first on `PATH`, and must end with the exit status its last comment gives
//! (`# exit N`). The demo folder it copies the example workspace to is made private to the test.

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The tour's blocks, in order, each with the status it promises.
fn tour() -> Vec<(String, i32)> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let section = readme
        .split("\n## A ten-minute tour\n")
        .nth(1)
        .expect("the README has its tour")
        .split("\n## ")
        .next()
        .unwrap();
    let mut blocks = Vec::new();
    for chunk in section.split("```sh\n").skip(1) {
        let block = chunk.split("\n```").next().unwrap().to_owned();
        if block.contains("cargo install") {
            continue;
        }
        let status = block
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("# exit "))
            .and_then(|r| r.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("a tour block without its `# exit N`:\n{block}"));
        blocks.push((block, status));
    }
    blocks
}

#[test]
fn every_command_of_the_readme_tour_does_what_it_says() {
    let blocks = tour();
    assert!(blocks.len() >= 6, "{} blocks", blocks.len());
    let bin = Path::new(env!("CARGO_BIN_EXE_reasonix")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = tempfile::tempdir().unwrap();
    let demo = home.path().join("rx-demo");
    for (block, status) in blocks {
        let script = block.replace("/tmp/rx-demo", &demo.display().to_string());
        let out = Command::new("timeout")
            .args(["60", "bash", "-c", &script])
            .current_dir(ROOT)
            .env("PATH", &path)
            .env("HOME", home.path())
            .env("NO_COLOR", "1")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{block}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
        // What each block's comment says it shows.
        if block.contains("hook claude") {
            assert!(
                stdout.contains(r#""permissionDecision":"deny""#),
                "{stdout}"
            );
        }
        if block.contains("mcp serve") {
            assert!(
                stdout.contains("no-secrets") && stdout.contains("# Notes"),
                "{stdout}"
            );
        }
        if block.contains("reasonix report") {
            let page = std::fs::read_to_string(demo.join("report.html")).unwrap();
            assert!(page.contains("Tidy the notes"), "the page names the task");
            assert!(
                !["src=\"http", "href=\"http", "url(http", "@import"]
                    .iter()
                    .any(|s| page.contains(s)),
                "the page loads nothing from elsewhere"
            );
            assert!(
                stdout.contains("10 calls: 4 succeeded, 1 failed, 3 blocked, 2 invalid"),
                "{stdout}"
            );
        }
        if block.contains("reasonix run") {
            assert!(
                stderr.contains("10 calls: 4 succeeded, 1 failed, 3 blocked, 2 invalid"),
                "{stderr}"
            );
        }
    }
    assert!(
        !Path::new(ROOT)
            .join("examples/workspace/.reasonix")
            .exists(),
        "the tour left a record in the example workspace"
    );
}

/// The contributing notes' commands (`cargo test --test it MODULE::…`) are not run here (they
/// run this binary): each must name a module of it, and a suite said to be ignored by default
/// must have ignored tests.
#[test]
fn the_contributing_commands_name_modules_of_the_test_binary() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let main = std::fs::read_to_string(Path::new(ROOT).join("tests/it/main.rs")).unwrap();
    let section = readme
        .split("\n## Contributing\n")
        .nth(1)
        .expect("the README has its contributing notes")
        .split("\n## ")
        .next()
        .unwrap();
    let mut seen = 0;
    for line in section
        .lines()
        .filter(|l| l.starts_with("cargo test --test it "))
    {
        let filter = line.split_whitespace().nth(4).unwrap();
        let module = filter.split("::").next().unwrap();
        assert!(
            main.lines().any(|l| l.trim() == format!("mod {module};")),
            "{line}: no module {module} in tests/it/main.rs"
        );
        if line.contains("--ignored") {
            let file =
                std::fs::read_to_string(Path::new(ROOT).join(format!("tests/it/{module}.rs")))
                    .unwrap();
            assert!(
                file.contains("#[ignore"),
                "{line}: {module} ignores no test"
            );
        }
        seen += 1;
    }
    assert!(seen >= 3, "{seen} commands");
}
