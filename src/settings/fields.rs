//! Every field of `reasonix.yaml` (and `.mcp.json`), with what a project file nobody trusts may
//! do with it. A field is also the unit layers merge by: a higher layer's field replaces a lower
//! one's whole (`mcp_servers.NAME` is one unit per server, `hooks.pre_tool` one list).
//!
//! A field missing from [`FIELDS`] is judged as [`Rule::Trust`] (fail closed), and
//! `every_field_of_the_settings_has_a_row` keeps the table whole.

/// What a project file nobody trusts may do with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Honoured from a project file only once the user trusts it: the field reaches beyond the
    /// workspace (a URL, a token, a program to start, a host path) or widens the gate.
    Trust,
    /// A bound: an untrusted value counts when it is at most the one in force (it narrows).
    Lower,
    /// A wait: an untrusted value counts when it is at least the one in force.
    Higher,
    /// A path Reasonix writes, relative to the workspace: an untrusted value counts when no
    /// layer above sets the field and it lies inside the workspace's `.reasonix/` folder,
    /// symlinks followed (elsewhere Reasonix would append, outside the gate, to a file of the
    /// repository's choosing that policy protects from a write: a CI workflow, `.git/hooks`).
    Output,
    /// A list of policy or data files: an untrusted list is added to the policies in force
    /// (never replacing them), each of its files counting only for its narrowing part unless
    /// the user trusts that file, and a file outside the workspace left out unread.
    Policies,
}

/// One field.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// Its dotted name; `*` stands for any one key (a server's name).
    pub name: &'static str,
    /// What an untrusted project file may do with it.
    pub rule: Rule,
    /// The built-in value, as shown by `reasonix config` (`None`: unset).
    pub default: Option<&'static str>,
    /// Why the rule is what it is: the threat, for the message that leaves the field out.
    pub why: &'static str,
}

/// The fields of `reasonix.yaml`, then those of `.mcp.json`.
#[rustfmt::skip]
pub const FIELDS: &[Field] = &[
    Field { name: "provider.kind", rule: Rule::Trust, default: Some("deepseek"), why: "chooses what proposes the calls (a script replaces the model)" },
    Field { name: "provider.base_url", rule: Rule::Trust, default: Some("https://api.deepseek.com"), why: "the API key is sent to this URL" },
    Field { name: "provider.model", rule: Rule::Trust, default: Some("deepseek-chat"), why: "chooses what runs on your account" },
    Field { name: "provider.api_key_env", rule: Rule::Trust, default: Some("DEEPSEEK_API_KEY"), why: "names the environment variable whose value is sent as the API key" },
    Field { name: "provider.script", rule: Rule::Trust, default: None, why: "a file whose calls replace the model's" },
    Field { name: "provider.max_retries", rule: Rule::Lower, default: Some("3"), why: "more retries send more requests on your account" },
    Field { name: "provider.read_timeout_ms", rule: Rule::Lower, default: Some("300000"), why: "a longer wait holds the run longer" },
    Field { name: "provider.retry_base_ms", rule: Rule::Higher, default: Some("500"), why: "a shorter backoff hammers the provider" },
    Field { name: "policies", rule: Rule::Policies, default: Some("[builtin:default]"), why: "policies that replace the ones in force, or add allows, widen the gate" },
    Field { name: "data", rule: Rule::Policies, default: None, why: "documents the Rego policies in force decide by" },
    Field { name: "max_steps", rule: Rule::Lower, default: Some("30"), why: "more turns run more calls" },
    Field { name: "result_bytes", rule: Rule::Lower, default: Some("16384"), why: "more of each result goes to the provider" },
    Field { name: "record.path", rule: Rule::Output, default: Some(".reasonix/record.jsonl"), why: "Reasonix appends text the model chose to this file, outside any jail" },
    Field { name: "record.arguments", rule: Rule::Trust, default: Some("full"), why: "decides what the execution record keeps of each call" },
    Field { name: "record.key_env", rule: Rule::Trust, default: None, why: "names the environment variable whose value signs the execution record" },
    Field { name: "mcp_servers.*", rule: Rule::Trust, default: None, why: "starts a program (with the environment given) or reaches a URL" },
    Field { name: "hooks.pre_tool", rule: Rule::Trust, default: None, why: "starts programs on every call" },
    Field { name: "hooks.post_tool", rule: Rule::Trust, default: None, why: "starts programs on every call" },
    Field { name: "bundle", rule: Rule::Trust, default: None, why: "replaces the whole policy, and may download it with a token from the environment" },
    Field { name: "decision_logs.file", rule: Rule::Output, default: None, why: "Reasonix appends each decision to this file, outside any jail" },
    Field { name: "decision_logs.url", rule: Rule::Trust, default: None, why: "each decision, with its input, is sent to this URL" },
    Field { name: "decision_logs.token_env", rule: Rule::Trust, default: None, why: "names the environment variable whose value is sent as a bearer token" },
    Field { name: "decision_logs.batch", rule: Rule::Trust, default: Some("100"), why: "shapes what is sent to the collector" },
    Field { name: "decision_logs.flush_ms", rule: Rule::Trust, default: Some("5000"), why: "shapes what is sent to the collector" },
    Field { name: "decision_logs.buffer", rule: Rule::Output, default: Some(".reasonix/decision-logs"), why: "Reasonix writes batches of decisions to this folder" },
    Field { name: "decision_logs.buffer_bytes", rule: Rule::Trust, default: Some("10485760"), why: "a smaller buffer loses decisions the collector has not taken" },
    Field { name: "decision_logs.mask", rule: Rule::Trust, default: None, why: "removes fields from the decisions your collector sees" },
    Field { name: "otel.endpoint", rule: Rule::Trust, default: None, why: "every decision, with its tool, rules and paths, is sent to this URL" },
    Field { name: "otel.headers", rule: Rule::Trust, default: None, why: "headers (credentials) sent to the collector" },
    Field { name: "otel.service_name", rule: Rule::Trust, default: Some("reasonix"), why: "names this machine's telemetry in your collector" },
    Field { name: "otel.resource_attributes", rule: Rule::Trust, default: None, why: "labels this machine's telemetry in your collector" },
    Field { name: "otel.queue", rule: Rule::Trust, default: Some("4096"), why: "a smaller queue drops spans your collector would have had" },
    Field { name: "otel.batch", rule: Rule::Trust, default: Some("512"), why: "shapes what is sent to the collector" },
    Field { name: "otel.flush_ms", rule: Rule::Trust, default: Some("5000"), why: "shapes what is sent to the collector" },
    Field { name: "otel.metrics", rule: Rule::Trust, default: Some("true"), why: "decides what your collector sees" },
    Field { name: "otel.exit_wait_ms", rule: Rule::Trust, default: Some("5000"), why: "holds every process's exit while the collector is slow" },
    Field { name: "mcpServers.*", rule: Rule::Trust, default: None, why: "starts a program (with the environment given) or reaches a URL" },
];

/// The row of a dotted field name, if the table has one.
pub fn row(name: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| matches(f.name, name))
}

/// Whether the dotted `name` is the field `pattern` names (`*` is any one key).
pub fn matches(pattern: &str, name: &str) -> bool {
    let (mut p, mut n) = (pattern.split('.'), name.split('.'));
    loop {
        match (p.next(), n.next()) {
            (None, None) => return true,
            (Some("*"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

/// Whether some row is this field or lies below it (`provider` holds `provider.kind`): the
/// loader descends into such a key rather than taking it whole.
pub fn holds_rows(name: &str) -> bool {
    FIELDS.iter().any(|f| {
        let mut p = f.name.split('.');
        name.split('.')
            .all(|n| p.next().is_some_and(|a| a == "*" || a == n))
            && p.next().is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the documented example of `reasonix.yaml` (src/agent/config.rs), written
    /// with every field set, lands on a row: a field added to the settings without a row here
    /// fails this test (and is judged as `Trust` meanwhile).
    #[test]
    fn every_field_of_the_settings_has_a_row() {
        let example = r#"
provider: {kind: openai, base_url: u, model: m, api_key_env: K, script: s.json, max_retries: 1, read_timeout_ms: 1, retry_base_ms: 1}
policies: [builtin:default]
data: [d.json]
max_steps: 3
result_bytes: 10
record: {path: r.jsonl, arguments: digest, key_env: K}
mcp_servers: {time: {command: uvx}}
hooks: {pre_tool: [{tools: ['*'], command: [x]}], post_tool: []}
bundle: {url: https://x}
decision_logs: {file: d.jsonl, url: https://x, batch: 1, flush_ms: 1, buffer: b, buffer_bytes: 1, mask: [/input/x], token_env: T}
otel: {endpoint: http://c:4318, headers: {a: b}, service_name: s, resource_attributes: {k: v}, queue: 1, batch: 1, flush_ms: 1, metrics: false, exit_wait_ms: 1}
"#;
        let config: crate::agent::config::RunConfig = yaml_serde::from_str(example).unwrap();
        drop(config);
        let value: serde_json::Value = yaml_serde::from_str(example).unwrap();
        let mut leaves = Vec::new();
        fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) if prefix.is_empty() || holds_rows(prefix) => {
                    for (k, v) in m {
                        let name = if prefix.is_empty() {
                            k.clone()
                        } else {
                            format!("{prefix}.{k}")
                        };
                        walk(&name, v, out);
                    }
                }
                _ => out.push(prefix.to_owned()),
            }
        }
        walk("", &value, &mut leaves);
        assert_eq!(leaves.len(), 36, "{leaves:?}");
        for leaf in &leaves {
            assert!(row(leaf).is_some(), "{leaf} has no row");
        }
    }

    #[test]
    fn a_star_matches_one_key_and_rows_are_found_by_name() {
        assert!(matches("mcp_servers.*", "mcp_servers.time"));
        assert!(!matches("mcp_servers.*", "mcp_servers"));
        assert!(!matches("mcp_servers.*", "mcp_servers.time.command"));
        assert_eq!(row("record.path").map(|f| f.rule), Some(Rule::Output));
        assert_eq!(row("max_steps").map(|f| f.rule), Some(Rule::Lower));
        assert!(row("nothing").is_none());
        assert!(holds_rows("provider") && holds_rows("mcp_servers") && holds_rows("record"));
        assert!(!holds_rows("bundle") && !holds_rows("mcp_servers.time"));
    }

    #[test]
    fn each_row_says_why() {
        for f in FIELDS {
            assert!(!f.why.is_empty(), "{}", f.name);
        }
    }
}
