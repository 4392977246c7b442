//! Which MCP servers a workspace names: `.mcp.json` in the format MCP clients already use, and
//! the `mcp_servers:` map of `reasonix.yaml`, with the same fields.
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!             "env": {"LOG": "1"}},
//!   "docs":  {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Team": "a"}}
//! }}
//! ```
//!
//! A field this file does not know is an error naming it, never ignored (`cwd`, `disabled`,
//! `autoApprove` of other clients change what a server may do; Reasonix says so rather than
//! guess). A name given by both files is an error too: which one runs must not depend on an
//! order nobody wrote down. Two fields exist only here: `startup_timeout_ms` (start, handshake
//! and listing the tools; default 10 s) and `call_timeout_ms` (one tool call; default 60 s).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

/// Default limit on starting a server and listing its tools.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default limit on one tool call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One server, as `.mcp.json` or `mcp_servers:` describe it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// `stdio` (the default when `command` is given) or `http` (streamable HTTP; also
    /// `streamable-http`).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to its environment (which otherwise holds only PATH, HOME, LANG).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The URL of an HTTP server.
    pub url: Option<String>,
    /// Headers sent to an HTTP server.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Longest start, handshake and tool listing, in ms.
    pub startup_timeout_ms: Option<u64>,
    /// Longest tool call, in ms.
    pub call_timeout_ms: Option<u64>,
}

/// How to reach a server, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A process spoken to over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Added environment.
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The URL.
        url: String,
        /// Headers to send.
        headers: BTreeMap<String, String>,
    },
}

/// One configured server, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// Its name: `mcp__NAME__TOOL`, `mcp_connect__NAME`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Longest start and listing.
    pub startup_timeout: Duration,
    /// Longest call.
    pub call_timeout: Duration,
    /// Where it was configured (`.mcp.json`, `reasonix.yaml`).
    pub origin: String,
}

impl Server {
    /// Checks one spec.
    pub fn from_spec(name: &str, spec: &ServerSpec, origin: &str) -> Result<Server, String> {
        check_name(name).map_err(|e| format!("{origin}: server {name:?}: {e}"))?;
        let at = |e: &str| format!("{origin}: server {name:?}: {e}");
        let transport = match (spec.kind.as_deref(), &spec.command, &spec.url) {
            (None | Some("stdio"), Some(command), None) => {
                if !spec.headers.is_empty() {
                    return Err(at(
                        "`headers` are for an HTTP server; a stdio server takes `env`",
                    ));
                }
                Transport::Stdio {
                    command: command.clone(),
                    args: spec.args.clone(),
                    env: spec.env.clone(),
                }
            }
            (None | Some("http" | "streamable-http"), None, Some(url)) => {
                if !spec.args.is_empty() || !spec.env.is_empty() {
                    return Err(at(
                        "`args` and `env` are for a stdio server; an HTTP server takes `headers`",
                    ));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(at(&format!(
                        "url {url:?} must start with http:// or https://"
                    )));
                }
                Transport::Http {
                    url: url.clone(),
                    headers: spec.headers.clone(),
                }
            }
            (Some(kind), _, _) if !matches!(kind, "stdio" | "http" | "streamable-http") => {
                return Err(at(&format!(
                    "type {kind:?} is not supported; use stdio (with command) or http (with url)"
                )));
            }
            _ => {
                return Err(at(
                    "give either `command` (a stdio server) or `url` (an HTTP server), not both or neither",
                ));
            }
        };
        Ok(Server {
            name: name.to_owned(),
            transport,
            startup_timeout: spec
                .startup_timeout_ms
                .map_or(STARTUP_TIMEOUT, Duration::from_millis),
            call_timeout: spec
                .call_timeout_ms
                .map_or(CALL_TIMEOUT, Duration::from_millis),
            origin: origin.to_owned(),
        })
    }
}

/// A server name: 1 to 32 of `a-z A-Z 0-9 - _`, without `__` (which separates the server from
/// the tool in `mcp__NAME__TOOL`).
fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !name.contains("__");
    if ok {
        Ok(())
    } else {
        Err("a server name is 1 to 32 of a-z A-Z 0-9 - _, without `__`".into())
    }
}

/// `.mcp.json` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct McpJson {
    #[serde(default)]
    mcp_servers: BTreeMap<String, ServerSpec>,
}

/// The servers of a `.mcp.json`'s text; `origin` names it in errors.
pub fn parse_mcp_json(origin: &str, text: &str) -> Result<BTreeMap<String, ServerSpec>, String> {
    let file: McpJson = serde_json::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    Ok(file.mcp_servers)
}

/// Every server a workspace's settings name: the servers of its `.mcp.json` when the settings
/// loader gives them (it exists and the user trusts it, [`crate::settings`]) and the merged
/// `mcp_servers:` of the settings layers, sorted by name. A bad entry, or a name in both, is an
/// error naming the file.
pub fn servers(
    mcp_json: Option<(&Path, &BTreeMap<String, ServerSpec>)>,
    settings: &BTreeMap<String, ServerSpec>,
) -> Result<Vec<Server>, String> {
    let mut out: BTreeMap<String, Server> = BTreeMap::new();
    if let Some((path, specs)) = mcp_json {
        let origin = path.display().to_string();
        for (name, spec) in specs {
            out.insert(name.clone(), Server::from_spec(name, spec, &origin)?);
        }
    }
    for (name, spec) in settings {
        let server = Server::from_spec(name, spec, "reasonix.yaml mcp_servers")?;
        if let Some(first) = out.get(name) {
            return Err(format!(
                "MCP server {name:?} is configured in both {} and reasonix.yaml mcp_servers; remove one",
                first.origin
            ));
        }
        out.insert(name.clone(), server);
    }
    Ok(out.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> ServerSpec {
        serde_json::from_str(json).unwrap()
    }

    /// `.mcp.json` of `dir` read as trusted, with `settings`.
    fn servers_in(
        dir: &Path,
        settings: &BTreeMap<String, ServerSpec>,
    ) -> Result<Vec<Server>, String> {
        let path = dir.join(".mcp.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let specs = parse_mcp_json(&path.display().to_string(), &text)?;
        servers(Some((&path, &specs)), settings)
    }

    #[test]
    fn stdio_and_http_servers_are_read_from_mcp_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"files": {"command": "node", "args": ["x.js", "."]},
                "docs": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}"#,
        )
        .unwrap();
        let all = servers_in(dir.path(), &BTreeMap::new()).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].name, "docs");
        assert!(matches!(all[0].transport, Transport::Http { .. }));
        assert!(matches!(&all[1].transport, Transport::Stdio { command, .. } if command == "node"));
    }

    #[test]
    fn unknown_fields_bad_names_and_duplicates_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {"a": {"command": "x", "cwd": "/"}}}"#,
        )
        .unwrap();
        let e = servers_in(dir.path(), &BTreeMap::new()).unwrap_err();
        assert!(e.contains("unknown field `cwd`"), "{e}");
        std::fs::write(&file, r#"{"mcpServers": {"a__b": {"command": "x"}}}"#).unwrap();
        let e = servers_in(dir.path(), &BTreeMap::new()).unwrap_err();
        assert!(e.contains("without `__`"), "{e}");
        std::fs::write(&file, r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        let both = BTreeMap::from([("a".to_owned(), spec(r#"{"command": "y"}"#))]);
        let e = servers_in(dir.path(), &both).unwrap_err();
        assert!(e.contains("in both"), "{e}");
    }

    #[test]
    fn a_server_is_stdio_or_http_never_both() {
        for (json, needle) in [
            (
                r#"{"command": "x", "url": "http://a"}"#,
                "not both or neither",
            ),
            (r#"{}"#, "not both or neither"),
            (r#"{"type": "sse", "url": "http://a"}"#, "not supported"),
            (r#"{"url": "file:///etc/passwd"}"#, "http://"),
            (
                r#"{"command": "x", "headers": {"a": "b"}}"#,
                "for an HTTP server",
            ),
        ] {
            let e = Server::from_spec("s", &spec(json), "t").unwrap_err();
            assert!(e.contains(needle), "{json}: {e}");
        }
    }
}
