//! Claude Code's permission rules (`permissions.allow`, `ask`, `deny` of a `settings.json`) read
//! as a Reasonix YAML policy ([`crate::import`]).
//!
//! A rule is `Tool` or `Tool(specifier)`. What each becomes:
//!
//! | Claude rule | Reasonix rule |
//! |---|---|
//! | `Bash` | `tools: [bash]` |
//! | `Bash(git status)` | `tools: [bash]`, `commands: ["git status"]` |
//! | `Bash(npm run test:*)`, `Bash(npm run test *)` | `commands: ["npm run test *"]` |
//! | `Read(./secrets/**)` | `effects: [read]`, `paths: ["./secrets/**"]` (allow: the read tools only) |
//! | `Edit(src/**)` | `effects: [write]` (deny and ask: `[write, delete]`), `paths: ["src/**"]` |
//! | `Read`, `Edit`, `Write`, `Glob`, `Grep`, `LS`, `MultiEdit`, `NotebookEdit`, `WebFetch` | `tools:` the Reasonix tools they are judged as ([`TOOL_NAMES`]) |
//! | `mcp__server__tool`, `mcp__server`, `mcp__server__*` | `tools: [mcp__server__tool]`, `[mcp__server__*]` |
//!
//! **The strict reading.** Claude Code matches a Bash specifier against the command string; a
//! Reasonix `commands:` pattern is matched on the analysis, against every simple command anywhere
//! in the call. So an imported allow covers a call only when *every* simple command — in a
//! pipeline, after `&&`, inside `$(…)`, behind a wrapper — matches word by word, and no word is
//! decided at run time. A `*` matches within one word, and a final `*` (or `:*`) any further
//! words; `Bash(ls*)` is the command `ls*` with no further word. Imported deny and ask rules
//! match generously, as every Reasonix deny does (by basename, options in any spelling).
//!
//! **Left out, and said so** (the exit status of `policy import` says it too): a tool Reasonix
//! does not have (`WebSearch`, `Task`, …), `WebFetch(domain:…)` (a YAML rule cannot name a host;
//! the Rego for it is given), a Bash specifier with shell operators or quotes that do not close,
//! a `:*` that is not at the end, and an *allow* with a path on `Write`, `Glob`, `Grep` or
//! `LS`, which Claude Code does not consult (a deny or ask with one is kept: a deny read too
//! widely is the strict reading).

use globset::GlobBuilder;
use serde_json::{Value, json};

use crate::import::{Case, Imported, Rule};

/// Claude's tool names and the Reasonix tools a bare rule on them names.
/// `every_bare_tool_names_its_reasonix_tools` checks each row.
pub const TOOL_NAMES: &[(&str, &[&str])] = &[
    ("Bash", &["bash"]),
    ("Read", &["read_file", "glob", "grep", "list_dir"]),
    ("Edit", &["edit_file", "write_file"]),
    ("Write", &["write_file"]),
    ("MultiEdit", &["edit_file"]),
    ("NotebookEdit", &["write_file"]),
    ("Glob", &["glob"]),
    ("Grep", &["grep"]),
    ("LS", &["list_dir"]),
    ("WebFetch", &[super::tools::NETWORK_CONNECT]),
];

/// The header notes every Claude import carries.
const NOTES: &[&str] = &[
    "Strict reading: Claude Code matches a Bash rule against the command string; here an allow covers a call only when every simple command anywhere in it (pipelines, `&&`, `$(...)`, wrappers, `bash -c`) matches word by word with no word decided at run time. A `*` matches within one word and a final `*` or `:*` any further words. Deny and ask rules match generously (by basename, options in any spelling). Path rules: `//abs` is `/abs`, `/x` (the project root) is `./x`, `~/x` stays, a name without `/` matches at any depth.",
    "Precedence is Claude's: any deny, then any ask, then an allow; an imported deny or ask on paths applies to every tool that reads or writes them (the shell included), not only Read and Edit.",
];

/// The decisions of `permissions`, in the order they are read.
const LISTS: &[&str] = &["deny", "ask", "allow"];

/// Reads a settings.json's `permissions`.
pub fn import(settings: &Value, origin: &str) -> Result<Imported, String> {
    let permissions = settings
        .get("permissions")
        .ok_or("the settings have no `permissions` object; nothing to import")?;
    let mut imported = Imported {
        origin: format!(
            "Imported from Claude Code's permissions in {origin} (reasonix policy import --from claude)"
        ),
        notes: NOTES.iter().map(|s| (*s).to_owned()).collect(),
        ..Imported::default()
    };
    let mut parsed = Vec::new();
    for list in LISTS {
        let Some(rules) = permissions.get(*list) else {
            continue;
        };
        let rules = rules
            .as_array()
            .ok_or_else(|| format!("permissions.{list} is not a list"))?;
        for (i, r) in rules.iter().enumerate() {
            let text = r
                .as_str()
                .ok_or_else(|| format!("permissions.{list}[{i}] is not a string"))?;
            parsed.push((*list, text.to_owned(), parse(text)));
        }
    }
    // Each example's expected decision, by Claude's own precedence over every rule.
    let all: Vec<(&str, Parsed)> = parsed
        .iter()
        .filter_map(|(d, _, p)| p.as_ref().ok().map(|p| (*d, p.clone())))
        .collect();
    let mut n = 0;
    for (decision, text, p) in &parsed {
        let source = format!("{decision} {text:?}");
        let p = match p {
            Ok(p) => p,
            Err(why) => {
                imported.left_out.push((source, why.clone()));
                continue;
            }
        };
        match rule(decision, p) {
            Ok((mut yaml, reading)) => {
                n += 1;
                let id = format!("claude-{decision}-{n}");
                if let Value::Object(m) = &mut yaml {
                    let mut with_id = serde_json::Map::new();
                    with_id.insert("id".into(), json!(id));
                    with_id.insert("decision".into(), json!(decision));
                    with_id.extend(std::mem::take(m));
                    with_id.insert(
                        "reason".into(),
                        json!(format!("imported from Claude Code: {source}")),
                    );
                    *m = with_id;
                }
                let (cases, untested) = cases(&id, &source, p, &all);
                imported.rules.push(Rule {
                    source,
                    reading,
                    yaml,
                    cases,
                    untested,
                });
            }
            Err(why) => imported.left_out.push((source, why)),
        }
    }
    // A deny or ask left out narrowed what an allow lets through: those allows become asks
    // (issue 28, item 3), whatever the rule's text — the import is never wider than the source.
    for (decision, text, p) in &parsed {
        if *decision == "allow" {
            continue;
        }
        let carried = p.as_ref().is_ok_and(|p| rule(decision, p).is_ok());
        if carried {
            continue;
        }
        // The Reasonix tools it spoke of; `None`: unknown, so any allow may overlap.
        let tools: Option<Vec<String>> = match p {
            Ok(Parsed::Tool(t)) | Ok(Parsed::Path { tool: t, .. }) => {
                Some(reasonix_tools(t).iter().map(|s| (*s).to_owned()).collect())
            }
            Ok(Parsed::Bash { .. }) => Some(vec!["bash".into()]),
            Ok(Parsed::Domain(_)) => Some(
                reasonix_tools("WebFetch")
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
            ),
            Ok(Parsed::Mcp(glob)) => Some(vec![glob.clone()]),
            Err(_) => None,
        };
        let overlaps = |yaml: &Value| match (&tools, yaml.get("tools").and_then(Value::as_array)) {
            (None, _) | (_, None) => true,
            (Some(left), Some(allowed)) => allowed.iter().filter_map(Value::as_str).any(|a| {
                left.iter()
                    .any(|l| l == a || l.contains('*') || a.contains('*'))
            }),
        };
        let why = format!(
            "the source's {decision} {text:?} could not be carried over, and it narrowed this allow"
        );
        imported.demote_allows(&overlaps, &why);
    }
    Ok(imported)
}

/// A rule string, parsed.
#[derive(Clone, Debug)]
enum Parsed {
    /// A tool with no specifier.
    Tool(String),
    /// `Bash(...)`: the words, and whether further words may follow.
    Bash { words: Vec<String>, prefix: bool },
    /// `Read(...)`, `Edit(...)`, …: the tool and the Reasonix path glob.
    Path { tool: String, glob: String },
    /// `WebFetch(domain:…)`.
    Domain(String),
    /// An MCP tool or server: the tool glob.
    Mcp(String),
}

fn parse(text: &str) -> Result<Parsed, String> {
    let text = text.trim();
    let (tool, spec) = match text.split_once('(') {
        Some((tool, rest)) => {
            let spec = rest
                .strip_suffix(')')
                .ok_or("a `(` without its closing `)` at the end")?;
            (tool, Some(spec))
        }
        None => (text, None),
    };
    if tool.starts_with("mcp__") {
        if spec.is_some() {
            return Err("an MCP rule takes no specifier".into());
        }
        let parts: Vec<&str> = tool.splitn(3, "__").collect();
        return match parts.as_slice() {
            [_, server] if !server.is_empty() => Ok(Parsed::Mcp(format!("mcp__{server}__*"))),
            [_, server, name] if !server.is_empty() && !name.is_empty() => {
                Ok(Parsed::Mcp(tool.to_owned()))
            }
            _ => Err("an MCP rule is mcp__SERVER or mcp__SERVER__TOOL".into()),
        };
    }
    if !TOOL_NAMES.iter().any(|(t, _)| *t == tool) {
        return Err(format!(
            "Reasonix has no tool that Claude Code's {tool} maps to, so no rule can name it"
        ));
    }
    let Some(spec) = spec else {
        return Ok(Parsed::Tool(tool.to_owned()));
    };
    match tool {
        "Bash" => bash_spec(spec),
        "WebFetch" => match spec.strip_prefix("domain:") {
            Some(host) if !host.is_empty() => Ok(Parsed::Domain(host.to_owned())),
            _ => Err("a WebFetch rule is WebFetch(domain:HOST)".into()),
        },
        _ => Ok(Parsed::Path {
            tool: tool.to_owned(),
            glob: path_glob(spec)?,
        }),
    }
}

/// A Bash specifier as words: split as a shell would (`shlex`), a final `:*` or `*` word
/// making it a prefix.
fn bash_spec(spec: &str) -> Result<Parsed, String> {
    let (body, mut prefix) = match spec.strip_suffix(":*") {
        Some(body) => (body, true),
        None => (spec, false),
    };
    if body.contains(":*") {
        return Err("`:*` is only a prefix marker at the end of a Bash rule".into());
    }
    if ["&&", "||", ";", "|", "`", "$(", ">", "<", "\n"]
        .iter()
        .any(|op| body.contains(op))
    {
        return Err(
            "a Bash rule with shell operators spans several commands; a Reasonix pattern is one simple command (write one rule per command)"
                .into(),
        );
    }
    let mut words =
        shlex::split(body).ok_or("its quotes do not close, so it cannot be split into words")?;
    if words.last().is_some_and(|w| w == "*") {
        words.pop();
        prefix = true;
    }
    if words.is_empty() {
        return Err("a Bash rule with no command name".into());
    }
    Ok(Parsed::Bash { words, prefix })
}

/// Claude's gitignore-style path as a Reasonix path glob.
fn path_glob(spec: &str) -> Result<String, String> {
    if spec.is_empty() {
        return Err("an empty path".into());
    }
    let glob = if let Some(abs) = spec.strip_prefix("//") {
        format!("/{abs}")
    } else if spec.starts_with("~/") || spec.starts_with("./") {
        spec.to_owned()
    } else if let Some(root) = spec.strip_prefix('/') {
        format!("./{root}")
    } else {
        spec.to_owned()
    };
    crate::policy::check_path_glob(&glob)?;
    Ok(glob)
}

/// The YAML rule (without id, decision and reason), and its strict reading when it has one.
fn rule(decision: &str, p: &Parsed) -> Result<(Value, Option<String>), String> {
    let generous = decision != "allow";
    Ok(match p {
        Parsed::Tool(tool) => (json!({"tools": reasonix_tools(tool)}), None),
        Parsed::Bash { words, prefix } => {
            let mut pattern: Vec<String> = words.iter().map(|w| escape_word(w)).collect();
            if *prefix {
                pattern.push("*".into());
            }
            let reading = if generous {
                "any simple command anywhere in the call that matches (by basename, options in any spelling) is enough"
            } else {
                "every simple command anywhere in the call must match word by word, none decided at run time"
            };
            let written = if pattern.iter().any(|w| w.contains(' ')) {
                json!(pattern)
            } else {
                json!(pattern.join(" "))
            };
            (
                json!({"tools": ["bash"], "commands": [written]}),
                Some(reading.to_owned()),
            )
        }
        Parsed::Path { tool, glob } => {
            let reads = matches!(tool.as_str(), "Read" | "Glob" | "Grep" | "LS");
            if !generous && tool != "Read" && tool != "Edit" {
                return Err(format!(
                    "Claude Code does not consult a path on an allow of {tool} (only Read and Edit rules take paths), so no allow is imported"
                ));
            }
            if reads {
                if generous {
                    (
                        json!({"effects": ["read"], "paths": [glob]}),
                        Some(
                            "applies to every call that reads the path, the shell included".into(),
                        ),
                    )
                } else {
                    (
                        json!({"tools": reasonix_tools("Read"), "effects": ["read"], "paths": [glob]}),
                        None,
                    )
                }
            } else if generous {
                (
                    json!({"effects": ["write", "delete"], "paths": [glob]}),
                    Some(
                        "applies to every call that writes or deletes the path, the shell included"
                            .into(),
                    ),
                )
            } else {
                (
                    json!({"tools": reasonix_tools("Edit"), "effects": ["write"], "paths": [glob]}),
                    None,
                )
            }
        }
        Parsed::Domain(host) => {
            return Err(format!(
                "a YAML rule cannot name a host; in Rego: {decision} contains \"{host}\" if {{ input.tool == \"network_connect\"; input.arguments.host == \"{host}\" }}"
            ));
        }
        Parsed::Mcp(glob) => (json!({"tools": [glob]}), None),
    })
}

fn reasonix_tools(claude: &str) -> Vec<&'static str> {
    TOOL_NAMES
        .iter()
        .find(|(t, _)| *t == claude)
        .map(|(_, r)| r.to_vec())
        .unwrap_or_default()
}

/// A word of a Bash specifier as a pattern word: `*` stays a wildcard, every other glob
/// character is literal.
fn escape_word(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    for c in word.chars() {
        if matches!(c, '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An example of one Claude tool's use, to compute what Claude would decide.
#[derive(Clone, Debug)]
enum Example {
    Bash(Vec<String>),
    Path { tool: &'static str, path: String },
}

/// The cases of one rule: its own example, judged by Claude's precedence over every rule; for a
/// Bash allow, also the example followed by a command no rule allows, which must not be allowed.
fn cases(
    id: &str,
    source: &str,
    p: &Parsed,
    all: &[(&str, Parsed)],
) -> (Vec<Case>, Option<String>) {
    let examples: Vec<(Example, Value)> = match p {
        Parsed::Tool(tool) => match tool.as_str() {
            "Bash" => vec![bash_example(&["ls".into()])],
            "Read" => vec![path_example("Read", "notes.md")],
            "Edit" | "Write" => vec![path_example("Edit", "notes.md")],
            "WebFetch" => {
                return (
                    Vec::new(),
                    Some("no case: a bare WebFetch rule names no host to build an example `network_connect` call from".into()),
                );
            }
            _ => {
                return (
                    Vec::new(),
                    Some("no case: no example is generated for this tool".into()),
                );
            }
        },
        Parsed::Bash { words, prefix } => {
            let words: Vec<String> = words.iter().map(|w| w.replace('*', "x")).collect();
            let mut out = vec![bash_example(&words)];
            if *prefix {
                let mut longer = words.clone();
                longer.push("--version".into());
                out.push(bash_example(&longer));
            }
            out
        }
        Parsed::Path { tool, glob } => {
            let Some(path) = example_path(glob) else {
                return (
                    Vec::new(),
                    Some("no case: its path is outside the workspace, which the case runner's temporary workspace cannot hold".into()),
                );
            };
            let tool = if matches!(tool.as_str(), "Read" | "Glob" | "Grep" | "LS") {
                "Read"
            } else {
                "Edit"
            };
            vec![path_example(tool, &path)]
        }
        Parsed::Domain(_) => return (Vec::new(), None),
        Parsed::Mcp(_) => {
            return (
                Vec::new(),
                Some(
                    "no case: the case runner has only the builtin tools, not this MCP server's"
                        .into(),
                ),
            );
        }
    };
    let mut out = Vec::new();
    let decision_of = |e: &Example| claude_decision(e, all);
    for (example, call) in &examples {
        out.push(Case {
            name: format!("{id}: {source}: {}", describe(example)),
            call: call.clone(),
            expect: decision_of(example),
        });
    }
    // A prefix or exact allow does not stretch over a second command.
    if let (Parsed::Bash { .. }, Some((Example::Bash(words), _))) = (p, examples.first()) {
        let own = claude_decision(&Example::Bash(words.clone()), all);
        if own == "allow" {
            let mut line = shlex::try_join(words.iter().map(String::as_str)).unwrap_or_default();
            line.push_str(" && curl -s https://example.invalid/x");
            let curl: Vec<String> = ["curl", "-s", "https://example.invalid/x"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            let expect = strictest(&[own, claude_decision(&Example::Bash(curl), all)]);
            out.push(Case {
                name: format!("{id}: {source}: not stretched over `&& curl`"),
                call: json!({"name": "bash", "arguments": {"command": line}}),
                expect,
            });
        }
    }
    (out, None)
}

fn bash_example(words: &[String]) -> (Example, Value) {
    let line = shlex::try_join(words.iter().map(String::as_str)).unwrap_or_default();
    (
        Example::Bash(words.to_vec()),
        json!({"name": "bash", "arguments": {"command": line}}),
    )
}

fn path_example(tool: &'static str, path: &str) -> (Example, Value) {
    let call = if tool == "Read" {
        json!({"name": "read_file", "arguments": {"path": path}})
    } else {
        json!({"name": "write_file", "arguments": {"path": path, "content": "x"}})
    };
    (
        Example::Path {
            tool,
            path: path.to_owned(),
        },
        call,
    )
}

fn describe(e: &Example) -> String {
    match e {
        Example::Bash(words) => {
            format!(
                "`{}`",
                shlex::try_join(words.iter().map(String::as_str)).unwrap_or_default()
            )
        }
        Example::Path { tool, path } => format!("{tool} {path}"),
    }
}

/// A path inside the workspace that a glob matches, relative to it; `None` for a glob outside.
fn example_path(glob: &str) -> Option<String> {
    if glob.starts_with('/') || glob.starts_with('~') {
        return None;
    }
    let rel = glob.strip_prefix("./").unwrap_or(glob);
    let rel = rel.trim_end_matches('/');
    let path = rel
        .split('/')
        .map(|part| match part {
            "**" => "deep".to_owned(),
            p => p.replace(['*', '?'], "x").replace(['[', ']', '{', '}'], ""),
        })
        .collect::<Vec<_>>()
        .join("/");
    // `x/**` matches below x: name a file there.
    Some(if rel.ends_with("/**") || rel == "**" {
        format!("{path}/file.txt")
    } else {
        path
    })
}

/// What Claude Code decides for an example under every rule: any deny, then any ask, then an
/// allow; with none, what it does by default (reads run, everything else asks).
fn claude_decision(e: &Example, all: &[(&str, Parsed)]) -> &'static str {
    let mut found = Vec::new();
    for (d, p) in all {
        if claude_matches(p, e) {
            found.push(match *d {
                "deny" => "deny",
                "ask" => "ask",
                _ => "allow",
            });
        }
    }
    if found.is_empty() {
        return match e {
            Example::Path { tool: "Read", .. } => "allow",
            _ => "ask",
        };
    }
    strictest(&found)
}

fn strictest(decisions: &[&'static str]) -> &'static str {
    for d in ["deny", "ask", "allow"] {
        if decisions.contains(&d) {
            return d;
        }
    }
    "ask"
}

/// Whether a Claude rule matches an example, as Claude Code matches it: a Bash rule on the
/// command string (a prefix at a word boundary, or `*` as any text), a path rule with
/// gitignore's anchoring, a bare tool on every use of it.
fn claude_matches(p: &Parsed, e: &Example) -> bool {
    match (p, e) {
        (Parsed::Tool(t), Example::Bash(_)) => t == "Bash",
        (Parsed::Tool(t), Example::Path { tool, .. }) => {
            t == tool || (*tool == "Edit" && (t == "Write" || t == "MultiEdit"))
        }
        (Parsed::Bash { words, prefix }, Example::Bash(ex)) => {
            let rule = words.join(" ");
            let line = ex.join(" ");
            let text = if *prefix { format!("{rule}*") } else { rule };
            // Claude's `*` is any text; everything else is literal.
            let pattern: Vec<String> = text.split('*').map(globset::escape).collect();
            let glob = GlobBuilder::new(&pattern.join("*"))
                .literal_separator(false)
                .build();
            let Ok(glob) = glob else { return false };
            let m = glob.compile_matcher();
            if *prefix {
                // At a word boundary: the prefix itself, or it and a space.
                let base = words.join(" ");
                m.is_match(&line)
                    && (line == base || line.starts_with(&format!("{base} ")) || base.contains('*'))
            } else {
                m.is_match(&line)
            }
        }
        (Parsed::Path { tool: t, glob }, Example::Path { tool, path }) => {
            let applies = match t.as_str() {
                "Read" | "Glob" | "Grep" | "LS" => *tool == "Read",
                _ => *tool == "Edit",
            };
            applies && path_matches(glob, path)
        }
        _ => false,
    }
}

/// A workspace-relative path against an imported path glob, with Reasonix's anchoring (which
/// is gitignore's for paths inside the workspace).
fn path_matches(glob: &str, path: &str) -> bool {
    if glob.starts_with('/') || glob.starts_with('~') {
        return false;
    }
    let rel = glob.strip_prefix("./").unwrap_or(glob);
    let anchored = glob.starts_with("./") || rel.trim_end_matches('/').contains('/');
    let pattern = if anchored {
        rel.to_owned()
    } else {
        format!("**/{rel}")
    };
    let pattern = if pattern.ends_with('/') {
        format!("{pattern}**")
    } else {
        pattern
    };
    GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher().is_match(path))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml_of(decision: &str, text: &str) -> Result<Value, String> {
        rule(decision, &parse(text)?).map(|(y, _)| y)
    }

    #[test]
    fn every_bare_tool_names_its_reasonix_tools() {
        let registry = crate::Registry::with_builtins();
        for (claude, tools) in TOOL_NAMES {
            let y = yaml_of("allow", claude).unwrap();
            assert_eq!(y["tools"], json!(tools), "{claude}");
            for t in *tools {
                assert!(
                    registry.get(t).is_some() || *t == super::super::tools::NETWORK_CONNECT,
                    "{claude} names {t}, which is no tool"
                );
            }
        }
    }

    #[test]
    fn bash_rules_become_word_patterns() {
        let cases = [
            ("Bash(git status)", json!(["git status"])),
            ("Bash(npm run test:*)", json!(["npm run test *"])),
            ("Bash(npm run *)", json!(["npm run *"])),
            ("Bash(ls*)", json!(["ls*"])),
            ("Bash(grep -c 'a b')", json!([["grep", "-c", "a b"]])),
            ("Bash(echo a?b)", json!(["echo a\\?b"])),
        ];
        for (text, want) in cases {
            assert_eq!(yaml_of("allow", text).unwrap()["commands"], want, "{text}");
        }
        for bad in [
            "Bash(git add . && git commit:*)",
            "Bash(npm:* run)",
            "Bash(echo 'x)",
            "Bash(cat x > y)",
        ] {
            assert!(yaml_of("allow", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_are_anchored_as_claude_anchors_them() {
        let cases = [
            ("Read(./secrets/**)", "./secrets/**"),
            ("Read(/docs/*.md)", "./docs/*.md"),
            ("Read(//etc/passwd)", "/etc/passwd"),
            ("Read(~/.aws/**)", "~/.aws/**"),
            ("Read(*.env)", "*.env"),
            ("Edit(src/**)", "src/**"),
        ];
        for (text, want) in cases {
            assert_eq!(
                yaml_of("deny", text).unwrap()["paths"],
                json!([want]),
                "{text}"
            );
        }
        assert_eq!(
            yaml_of("deny", "Read(.env)").unwrap()["effects"],
            json!(["read"])
        );
        assert_eq!(yaml_of("deny", "Read(.env)").unwrap().get("tools"), None);
        assert_eq!(
            yaml_of("allow", "Edit(src/**)").unwrap()["effects"],
            json!(["write"])
        );
        assert_eq!(
            yaml_of("deny", "Edit(src/**)").unwrap()["effects"],
            json!(["write", "delete"])
        );
        // Claude does not consult a path on an allow of Write; a deny is kept.
        assert!(yaml_of("allow", "Write(docs/**)").is_err());
        assert!(yaml_of("deny", "Write(docs/**)").is_ok());
    }

    #[test]
    fn what_cannot_be_expressed_says_why() {
        let e = yaml_of("allow", "WebFetch(domain:example.com)").unwrap_err();
        assert!(e.contains("input.arguments.host == \"example.com\""), "{e}");
        assert!(
            yaml_of("allow", "WebSearch")
                .unwrap_err()
                .contains("no tool")
        );
        assert!(yaml_of("allow", "Task(Explore)").is_err());
        assert_eq!(
            yaml_of("allow", "mcp__github").unwrap()["tools"],
            json!(["mcp__github__*"])
        );
    }

    #[test]
    fn claude_prefix_rules_stop_at_a_word_boundary() {
        let p = parse("Bash(npm run test:*)").unwrap();
        let ex = |s: &str| Example::Bash(s.split(' ').map(str::to_owned).collect());
        assert!(claude_matches(&p, &ex("npm run test")));
        assert!(claude_matches(&p, &ex("npm run test --watch")));
        assert!(!claude_matches(&p, &ex("npm run testx")));
        assert!(!claude_matches(&p, &ex("npm run")));
    }
}
