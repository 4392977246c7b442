# Network access only to allow-listed hosts — something a YAML rule cannot say, because the host
# is inside a word of a command. Every URL-like word of every simple command (anywhere in the
# script: substitutions, wrappers, `bash -c`) is read for its host; one not on the list denies
# the call. A command that reaches the network with no URL the policy can read asks.
#
# The connections themselves are judged too: with `sandbox.network` entries (and a network
# namespace per run), each connection a jailed process asks the egress proxy for is the call
# `network_connect {host, port}`. Here a connection is allowed to an allow-listed host on 443
# only, and denied anywhere else — whatever URL the command line showed, or hid.
package reasonix.network

import rego.v1

allowed_hosts := {
	"github.com", "api.github.com", "codeload.github.com", "objects.githubusercontent.com",
	"crates.io", "static.crates.io", "index.crates.io",
	"registry.npmjs.org", "pypi.org", "files.pythonhosted.org",
}

# Whole subdomains: a host ending in one of these.
allowed_suffixes := {".githubusercontent.com"}

host_allowed(host) if host in allowed_hosts

host_allowed(host) if {
	some suffix in allowed_suffixes
	endswith(host, suffix)
}

# scheme://[user@]host[:port]/...
url_host(word) := lower(m[2]) if {
	some m in regex.find_all_string_submatch_n(`^[A-Za-z][A-Za-z0-9+.-]*://([^/@]*@)?([^/:?#]+)`, word, 1)
}

# scp-style remotes: user@host:path
url_host(word) := lower(m[1]) if {
	not contains(word, "://")
	some m in regex.find_all_string_submatch_n(`^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):`, word, 1)
}

hosts contains host if {
	some c in input.bash.commands
	some i, word in c.argv
	i > 0
	host := url_host(word)
}

deny contains {"id": "network-allowlist", "reason": sprintf("%s is not an allow-listed host", [host])} if {
	some host in hosts
	not host_allowed(host)
}

ask contains {"id": "network-destination-unknown", "reason": "this call reaches the network, and no URL in it says where"} if {
	not input.tool == "network_connect"
	"network" in input.effects
	count(hosts) == 0
}

# A connection through the egress proxy: the host as the client named it, without a final dot.
connect_host := lower(trim_suffix(input.arguments.host, ".")) if input.tool == "network_connect"

allow contains {"id": "network-allowlist", "reason": sprintf("%s:443 is allow-listed", [connect_host])} if {
	host_allowed(connect_host)
	input.arguments.port == 443
}

deny contains {"id": "network-allowlist", "reason": sprintf("%s is not an allow-listed host", [connect_host])} if {
	not host_allowed(connect_host)
}

deny contains {"id": "network-allowlist", "reason": sprintf("port %d: connections go to 443 only", [input.arguments.port])} if {
	host_allowed(connect_host)
	input.arguments.port != 443
}
