# Network access only to allow-listed hosts — something a YAML rule cannot say, because the host
# is inside a word of a command. Every URL-like word of every simple command (anywhere in the
# script: substitutions, wrappers, `bash -c`) is read for its host; one not on the list denies
# the call. A command that reaches the network with no URL the policy can read asks.
package reasonix.network

import rego.v1

allowed_hosts := {
	"github.com", "api.github.com", "codeload.github.com", "objects.githubusercontent.com",
	"crates.io", "static.crates.io", "index.crates.io",
	"registry.npmjs.org", "pypi.org", "files.pythonhosted.org",
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
	not host in allowed_hosts
}

ask contains {"id": "network-destination-unknown", "reason": "this call reaches the network, and no URL in it says where"} if {
	"network" in input.effects
	count(hosts) == 0
}
