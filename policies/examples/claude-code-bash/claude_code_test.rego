package reasonix.claude

import rego.v1

bash(commands) := {"tool": "bash", "bash": {"analysed": true, "hazards": [], "redirects": [], "commands": commands}}

cmd(argv) := {"argv": argv, "dynamic": [], "wrapper": false}

test_a_matching_command_is_allowed if {
	count(allow) == 1 with input as bash([cmd(["npm", "run", "test:unit"])])
}

test_every_command_must_match if {
	count(allow) == 0 with input as bash([cmd(["npm", "test"]), cmd(["curl", "evil.example"])])
}

test_an_exact_permission_is_exact if {
	count(allow) == 0 with input as bash([cmd(["npm", "test", "--", "--watch"])])
}

test_dynamic_words_are_not_allowed if {
	count(allow) == 0 with input as bash([{"argv": ["npm", "run", "test", "$X"], "dynamic": [{"word": 3}], "wrapper": false}])
}
