//! The `sandbox.network` entries as the egress proxy and the policy stage read them: each
//! `HOST:PORT` an allow for the call `network_connect {host, port}`, where HOST is a name
//! (`index.crates.io`), a glob on names (`*.example.com`, `*` for any), or an IP literal
//! (`127.0.0.1`, `[::1]`). Names are compared case-insensitively, ports exactly.
//!
//! An IP literal is also the only way to reach an address in a refused range
//! ([`super::address`]): `127.0.0.1:8080` lets a connection to 127.0.0.1 port 8080 through,
//! while `localhost:8080`, `*:8080` or a name that resolves to 127.0.0.1 does not.

use std::fmt;
use std::net::IpAddr;

use globset::{GlobBuilder, GlobMatcher};

/// An entry as written: `HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The host, a glob on names, or an IP literal, as written.
    pub host: String,
    /// The TCP port.
    pub port: u16,
}

impl fmt::Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// One entry, compiled.
#[derive(Clone, Debug)]
struct Entry {
    rule: Listed,
    host: GlobMatcher,
    ip: Option<IpAddr>,
}

/// The `sandbox.network` entries, compiled once.
#[derive(Clone, Debug, Default)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

/// An IP literal as written in a rule or a request: `127.0.0.1`, `::1` or `[::1]`.
pub fn ip_literal(host: &str) -> Option<IpAddr> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
}

/// The one spelling of a host that every judge (YAML, Rego, the address check), the record and
/// the connection use (issue 28): lowercase, no final dot, a name in IDNA's ASCII form
/// (`bücher.example` is `xn--bcher-kva.example`), every numeric IPv4 spelling (`3221225986`,
/// `0xc0000202`, `0300.0.02.02`, `192.0.514`) as its dotted quad, an IPv6 literal in its
/// shortest form and one that carries an IPv4 address (`::ffff:a.b.c.d`) as that address.
/// Parsed by the WHATWG host parser (the `url` crate, with `idna`), as a browser would.
///
/// # Errors
///
/// What is not a host: empty, a character no host has (`/`, `@`, `%`, a space, a control
/// character), a name IDNA refuses, a number too large for an IPv4 address, an empty label.
pub fn canonical_host(raw: &str) -> Result<String, String> {
    let v6 = |ip: std::net::Ipv6Addr| match ip.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => ip.to_string(),
    };
    if let Some(inner) = raw.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse()
            .map(v6)
            .map_err(|_| format!("{raw:?} is not an IPv6 address"));
    }
    if let Ok(ip) = raw.parse::<std::net::Ipv6Addr>() {
        return Ok(v6(ip));
    }
    let odd = raw
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || "/\\@?#%:[]<>^|\"`{}".contains(*c));
    if raw.is_empty() || odd.is_some() {
        return Err(format!("{raw:?} is not a host name"));
    }
    match url::Host::parse(raw).map_err(|e| format!("{raw:?} is not a host name: {e}"))? {
        url::Host::Ipv4(ip) => Ok(ip.to_string()),
        url::Host::Ipv6(ip) => Ok(v6(ip)),
        url::Host::Domain(name) => {
            let name = name.strip_suffix('.').unwrap_or(&name);
            if name.is_empty() || name.split('.').any(str::is_empty) {
                return Err(format!("{raw:?} has an empty label"));
            }
            Ok(name.to_owned())
        }
    }
}

/// A URL with its host in the one spelling [`canonical_host`] gives (`http://VM./x` is
/// `http://vm/x`, `http://3221225986/` is `http://192.0.2.2/`), for an argument that names a
/// server by URL (an HTTP MCP server's `url`).
///
/// # Errors
///
/// What does not parse as a URL, a URL with no host, or a host that is none.
pub fn canonical_url(raw: &str) -> Result<String, String> {
    let mut url = url::Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
    let host = match url.host() {
        Some(url::Host::Domain(name)) => canonical_host(name)?,
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => canonical_host(&ip.to_string())?,
        None => return Err(format!("the URL {raw:?} names no host")),
    };
    let spelled = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    url.set_host(Some(&spelled))
        .map_err(|e| format!("{raw:?}: its host {spelled:?} cannot be set: {e}"))?;
    Ok(url.to_string())
}

impl Allowlist {
    /// Compiles the entries (`sandbox.network`: host and port each); one whose host is not a
    /// valid glob is refused with its text.
    ///
    /// # Errors
    ///
    /// The entry and what is wrong with it.
    pub fn new<'a>(rules: impl IntoIterator<Item = (&'a str, u16)>) -> Result<Allowlist, String> {
        let mut entries = Vec::new();
        for (host, port) in rules {
            let rule = Listed {
                host: host.to_owned(),
                port,
            };
            let ip = ip_literal(&rule.host);
            let pattern = match ip {
                Some(ip) => globset::escape(&ip.to_string()),
                None => rule.host.to_ascii_lowercase(),
            };
            let host = GlobBuilder::new(&pattern)
                .case_insensitive(true)
                .build()
                .map_err(|e| format!("network rule {rule}: {e}"))?
                .compile_matcher();
            entries.push(Entry { rule, host, ip });
        }
        Ok(Allowlist { entries })
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry that allows `host:port`, if one does.
    pub fn allows(&self, host: &str, port: u16) -> Option<&Listed> {
        let host = match ip_literal(host) {
            Some(ip) => ip.to_string(),
            None => host.trim_end_matches('.').to_ascii_lowercase(),
        };
        self.entries
            .iter()
            .find(|e| e.rule.port == port && e.host.is_match(&host))
            .map(|e| &e.rule)
    }

    /// The entry that names `ip` literally on `port`, if one does: what lets a connection reach
    /// an address in a refused range.
    pub fn names_ip(&self, ip: IpAddr, port: u16) -> Option<&Listed> {
        let canonical = |ip: IpAddr| match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.entries
            .iter()
            .find(|e| e.rule.port == port && e.ip.map(canonical) == Some(canonical(ip)))
            .map(|e| &e.rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(rules: &[&str]) -> Allowlist {
        Allowlist::new(rules.iter().map(|r| {
            let (host, port) = r.rsplit_once(':').unwrap();
            (host, port.parse().unwrap())
        }))
        .unwrap()
    }

    /// Issue 28, item 2: each spelling of one host is one value; what is no host is refused.
    #[test]
    fn every_spelling_of_a_host_has_one_canonical_form() {
        let rows: &[(&str, &str)] = &[
            ("VM", "vm"),
            ("vm.", "vm"),
            ("Vm.Example.COM.", "vm.example.com"),
            ("3221225986", "192.0.2.2"),
            ("0xc0000202", "192.0.2.2"),
            ("0XC0.0.2.2", "192.0.2.2"),
            ("0300.0.02.02", "192.0.2.2"),
            ("192.0.514", "192.0.2.2"),
            ("192.0.2.2.", "192.0.2.2"),
            ("[::ffff:192.0.2.2]", "192.0.2.2"),
            ("::FFFF:c000:202", "192.0.2.2"),
            ("[0:0::1]", "::1"),
            ("bücher.example", "xn--bcher-kva.example"),
            ("BÜCHER.example", "xn--bcher-kva.example"),
            // The legitimate twin: a plain name is as it was.
            ("index.crates.io", "index.crates.io"),
        ];
        for (raw, want) in rows {
            assert_eq!(canonical_host(raw).as_deref(), Ok(*want), "{raw}");
        }
        for raw in [
            "",
            ".",
            "a..b",
            "evil.com/x",
            "user@host",
            "ho st",
            "h%41st",
            "4294967296",
            "0x1.0x2.0x3.0x4.5",
            "[1.2.3.4]",
            "a\nb",
        ] {
            assert!(canonical_host(raw).is_err(), "{raw:?} was taken");
        }
    }

    /// An HTTP MCP server's `url` is judged with its host canonical, the rest kept.
    #[test]
    fn a_url_is_given_its_canonical_host_and_keeps_the_rest() {
        let rows = [
            ("http://VM./mcp", "http://vm/mcp"),
            ("https://vm:8443/a?b=c", "https://vm:8443/a?b=c"),
            ("http://3221225986/mcp", "http://192.0.2.2/mcp"),
            ("http://0xc0000202:80/", "http://192.0.2.2/"),
            ("http://0300.0.02.02/", "http://192.0.2.2/"),
            ("http://[::ffff:192.0.2.2]/", "http://192.0.2.2/"),
            ("http://[::1]:9/", "http://[::1]:9/"),
            (
                "https://B\u{fc}cher.example./",
                "https://xn--bcher-kva.example/",
            ),
            // Its twin: an ordinary URL is kept as it is.
            ("https://example.com/mcp", "https://example.com/mcp"),
        ];
        for (raw, want) in rows {
            assert_eq!(canonical_url(raw).as_deref(), Ok(want), "{raw}");
        }
        for raw in [
            "not a url",
            "http://4294967296/",
            "http://a..b/",
            "file:///etc/passwd",
        ] {
            assert!(canonical_url(raw).is_err(), "{raw:?} was taken");
        }
    }

    #[test]
    fn a_name_is_allowed_on_its_port_only_and_case_insensitively() {
        let l = list(&["index.crates.io:443"]);
        assert!(l.allows("index.crates.io", 443).is_some());
        assert!(l.allows("INDEX.Crates.IO", 443).is_some());
        assert!(l.allows("index.crates.io.", 443).is_some());
        assert!(l.allows("index.crates.io", 80).is_none());
        assert!(l.allows("static.crates.io", 443).is_none());
        assert!(l.allows("index.crates.io.evil.example", 443).is_none());
    }

    #[test]
    fn a_wildcard_covers_subdomains_but_not_the_bare_domain() {
        let l = list(&["*.example.com:443"]);
        assert!(l.allows("a.example.com", 443).is_some());
        assert!(l.allows("a.b.example.com", 443).is_some());
        assert!(l.allows("example.com", 443).is_none());
        assert!(l.allows("example.com.evil.example", 443).is_none());
        assert!(l.allows("evilexample.com", 443).is_none());
    }

    #[test]
    fn a_star_allows_any_host_on_its_port_but_names_no_ip() {
        let l = list(&["*:8080"]);
        assert!(l.allows("anything.example", 8080).is_some());
        assert!(l.allows("127.0.0.1", 8080).is_some());
        assert!(l.names_ip("127.0.0.1".parse().unwrap(), 8080).is_none());
    }

    #[test]
    fn an_ip_literal_names_that_address_in_any_spelling() {
        let l = list(&["127.0.0.1:8080", "[::1]:9090"]);
        assert!(l.allows("127.0.0.1", 8080).is_some());
        assert!(l.names_ip("127.0.0.1".parse().unwrap(), 8080).is_some());
        assert!(
            l.names_ip("::ffff:127.0.0.1".parse().unwrap(), 8080)
                .is_some()
        );
        assert!(l.names_ip("127.0.0.2".parse().unwrap(), 8080).is_none());
        assert!(l.names_ip("127.0.0.1".parse().unwrap(), 8081).is_none());
        assert!(l.allows("[::1]", 9090).is_some());
        assert!(l.allows("::1", 9090).is_some());
        assert!(l.names_ip("::1".parse().unwrap(), 9090).is_some());
        assert!(l.allows("localhost", 8080).is_none());
    }
}
