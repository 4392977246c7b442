//! Data flows one way along the admission path: no module imports one that comes after it, and
//! no two sibling modules import each other. Checked over the sources themselves, so a new
//! import that breaks the order fails CI with the file and the line.
//!
//! The order of the crate's top-level modules, earliest first:
//!
//! | module | what it is on the path |
//! |---|---|
//! | `text`, `vocab` | leaves: cutting and showing text; the words every stage shares (`vocab` is the shell crate's, below) |
//! | `telemetry` | a leaf: OpenTelemetry export (the exporter, its queue, the metrics); the stages record onto their spans |
//! | `call` | parse |
//! | `shell` | classify's engine for bash: the crate `reasonix-shell`, re-exported under this name |
//! | `egress` | the egress proxy the jail runs for a run with `network` rules, and the `sandbox.network` entries the policy stage reads as allows for `network_connect` |
//! | `sandbox` | resolve and confine (path resolution, roots, confined paths, the jail) |
//! | `policy` | judge (YAML, Rego, the input document) |
//! | `bundle` | where the policy comes from: OPA bundles, downloaded, verified, swapped between calls |
//! | `import`, `codex` | another agent's rules read as a policy (written out, never judged here) |
//! | `host` | the host's own files, for the confine stage |
//! | `effects` | after a bash writer's run: observe what its overlay holds, judge each change (through the gate's judge), commit or discard |
//! | `tool` | the tool contract (validate, classify) and the tools (execute) |
//! | `mcp` | MCP servers and their tools: configuration, the process, the client, the registry entries |
//! | `hooks` | the hooks of the settings: their format, the process each runs as, their answers (the gate's last stage runs the pre-tool ones; the session runs the post-tool ones) |
//! | `gate` | the stages strung in order: target → validate → classify → resolve → vote → confine → plan → approve → pre_tool (the hooks) |
//! | `claude` | Claude Code met where it is: its hook's tool calls mapped to calls for the gate, its settings' rules imported |
//! | `lease`, `execute` | after admission: the lease, then the one execution |
//! | `record`, `rewind` | the record; the rewind store and what reads the record to go back |
//! | `decisions` | after the record: each decision, in OPA's decision-log shape, to a file or a collector |
//! | `report` | after the record: a record or a decision log shown to a person (HTML page, summary) |
//! | `agent` | the loop that drives it all |
//! | `settings` | before any gate is built: the layers of settings and what a project may decide (it reads the settings format the agent's config module defines) |
//!
//! Inside `gate`, each stage module may use only the stages before it.
//!
//! `shell` and `vocab` are no longer modules of this crate but the workspace's crate
//! `reasonix-shell` (`crates/reasonix-shell/`), which `src/lib.rs` re-exports under those names.
//! That the analysis imports nothing of the gateway is now enforced by the crate boundary
//! itself: `reasonix-shell` does not depend on `reasonix`, and Cargo refuses a cycle between
//! packages, so a `use reasonix::…` in it does not compile. The order above still says which
//! of this crate's modules may use them (not `text`, `telemetry` or `call`), and the tests
//! below hold the shell crate's own rules: it names no gateway dependency, `vocab` stays a leaf,
//! and no two of its sibling modules import each other.

use std::path::{Path, PathBuf};

const ORDER: &[&str] = &[
    "text",
    "vocab",
    "telemetry",
    "call",
    "shell",
    "egress",
    "sandbox",
    "policy",
    "bundle",
    "import",
    "codex",
    "host",
    "effects",
    "tool",
    "mcp",
    "hooks",
    "gate",
    "claude",
    "lease",
    "execute",
    "seal",
    "record",
    "decisions",
    "rewind",
    "report",
    "agent",
    "settings",
];

const GATE_STAGES: &[&str] = &[
    "verdict", "target", "validate", "classify", "resolve", "vote", "confine", "plan", "approve",
    "pre_tool",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file as one text: comments left out, and its tests (`#[cfg(test)]` and what
/// follows), since a test may use anything.
fn code_text(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module named right after `prefix`: `prefix<name>`, or each first name of a group
/// `prefix{a, b::c, d}` (which may span lines).
fn names_after(text: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The top-level items of the group, up to its matching brace.
            let (mut depth, mut item) = (0usize, String::new());
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident(item.trim()));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 && c != '}' {
                    item.push(c);
                }
            }
            out.push(ident(item.trim()));
        } else if !rest.starts_with("super") {
            out.push(ident(rest));
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The sources of the shell analysis, the workspace's crate `reasonix-shell`.
fn shell_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/reasonix-shell/src")
}

/// The modules of the order that are not files of this crate: the shell crate, re-exported.
const REEXPORTED: &[&str] = &["vocab", "shell"];

/// The top-level module a source file belongs to (`None` for lib.rs, main.rs and the CLI).
fn top_module(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (!matches!(name.as_str(), "lib" | "main" | "cli")).then_some(name)
}

#[test]
fn every_module_is_in_the_order() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    for f in &files {
        if let Some(m) = top_module(f) {
            assert!(
                ORDER.contains(&m.as_str()),
                "{}: module {m} is not in tests/it/layers.rs ORDER; place it where it sits on the path",
                f.display()
            );
        }
    }
}

#[test]
fn the_shell_crate_is_reexported_under_the_names_of_the_order() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    for line in [
        "pub use reasonix_shell as shell;",
        "pub use reasonix_shell::vocab;",
    ] {
        assert!(lib.contains(line), "src/lib.rs lost `{line}`");
    }
    for name in REEXPORTED {
        assert!(
            !src().join(format!("{name}.rs")).exists() && !src().join(name).exists(),
            "src/{name} is back in the gateway; it is the shell crate's ({})",
            shell_src().display()
        );
    }
}

/// The crate boundary is what keeps the analysis below the gateway: `reasonix-shell` must not
/// depend on `reasonix` (Cargo would then refuse the cycle with the gateway's own dependency on
/// it, so this only says why in words a reviewer sees first), and its sources name no gateway
/// path.
#[test]
fn the_shell_crate_imports_nothing_of_the_gateway() {
    let manifest =
        std::fs::read_to_string(shell_src().parent().unwrap().join("Cargo.toml")).unwrap();
    let mut wrong = Vec::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.to_owned();
            continue;
        }
        let name = t
            .split(['=', ' ', '.'])
            .next()
            .unwrap_or("")
            .trim_matches('"');
        if section.contains("dependencies") && name == "reasonix" {
            wrong.push(format!("Cargo.toml {section}: {t}"));
        }
    }
    let mut files = Vec::new();
    sources(&shell_src(), &mut files);
    for f in &files {
        let text = code_text(f);
        if text.contains("reasonix::") {
            wrong.push(format!("{}: names `reasonix::`", f.display()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `vocab` was a leaf of the order (it imported nothing of the crate); inside the shell crate
/// it still imports nothing, so the analysis, the tools, the sandbox and the policy can all
/// speak of effects and paths without importing each other.
#[test]
fn vocab_imports_nothing_of_the_shell_crate() {
    let text = code_text(&shell_src().join("vocab.rs"));
    let used: Vec<String> = names_after(&text, "crate::")
        .into_iter()
        .chain(names_after(&text, "super::"))
        .collect();
    assert!(used.is_empty(), "vocab.rs uses {used:?}");
}

#[test]
fn no_module_imports_one_that_comes_after_it_on_the_path() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let mut wrong = Vec::new();
    for f in &files {
        let Some(m) = top_module(f) else { continue };
        let at = ORDER.iter().position(|o| *o == m).unwrap();
        for used in names_after(&code_text(f), "crate::") {
            let Some(used_at) = ORDER.iter().position(|o| *o == used) else {
                continue;
            };
            if used_at > at {
                wrong.push(format!("{}: {m} uses {used}", f.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the path:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn each_gate_stage_uses_only_the_stages_before_it() {
    let mut wrong = Vec::new();
    for (at, stage) in GATE_STAGES.iter().enumerate() {
        let f = src().join("gate").join(format!("{stage}.rs"));
        for used in names_after(&code_text(&f), "super::") {
            if let Some(used_at) = GATE_STAGES.iter().position(|s| *s == used)
                && used_at > at
            {
                wrong.push(format!("{}: {stage} uses {used}", f.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_two_sibling_modules_import_each_other() {
    // Every folder module, of this crate and of the shell crate (its root too: its modules
    // were `src/shell/`'s): its children may use the parent's shared types, but no two children
    // may use each other both ways.
    let mut cycles = Vec::new();
    for (root, mut folders) in [(src(), vec![]), (shell_src(), vec![shell_src()])] {
        let mut files = Vec::new();
        sources(&root, &mut files);
        for f in &files {
            if f.file_name().is_some_and(|n| n == "mod.rs") {
                folders.push(f.parent().unwrap().to_path_buf());
            }
        }
        for folder in folders {
            sibling_cycles(&root, &folder, &mut cycles);
        }
    }
    assert!(
        cycles.is_empty(),
        "sibling modules that import each other:\n{}",
        cycles.join("\n")
    );
}

/// The pairs of children of `folder` (a module of the crate whose sources are `root`) that
/// import each other.
fn sibling_cycles(root: &Path, folder: &Path, cycles: &mut Vec<String>) {
    let children: Vec<(String, PathBuf)> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = if p.is_dir() {
                p.file_name()?.to_str()?.to_owned()
            } else {
                p.file_stem()?.to_str()?.to_owned()
            };
            (name != "mod" && name != "lib" && name != "tests").then_some((name, p))
        })
        .collect();
    let module = folder
        .strip_prefix(root)
        .unwrap()
        .to_str()
        .unwrap()
        .replace('/', "::");
    let prefix = if module.is_empty() {
        "crate::".to_owned()
    } else {
        format!("crate::{module}::")
    };
    let uses = |path: &Path| -> Vec<String> {
        let mut files = Vec::new();
        if path.is_dir() {
            sources(path, &mut files);
        } else {
            files.push(path.to_path_buf());
        }
        let mut out = Vec::new();
        for f in files {
            let text = code_text(&f);
            out.extend(names_after(&text, "super::"));
            out.extend(names_after(&text, &prefix));
        }
        out
    };
    for (a, pa) in &children {
        for (b, pb) in &children {
            if a < b && uses(pa).contains(b) && uses(pb).contains(a) {
                cycles.push(format!("{}: {a} <-> {b}", folder.display()));
            }
        }
    }
}
