package reasonix.git

import rego.v1

run(argv) := {"bash": {"commands": [{"argv": argv}]}}

test_push_to_origin_is_not_denied if {
	count(deny) == 0 with input as run(["git", "push", "origin", "main"])
	count(deny) == 0 with input as run(["git", "push", "-u", "origin", "feature"])
}

test_push_to_another_remote_is_denied if {
	count(deny) == 1 with input as run(["git", "push", "fork", "main"])
}

test_global_options_do_not_hide_the_subcommand if {
	count(deny) == 1 with input as run(["git", "-C", "repo", "push", "upstream"])
	count(deny) == 1 with input as run(["/usr/bin/git", "push", "evil"])
}

test_a_variable_remote_is_denied if {
	count(deny) == 1 with input as run(["git", "push", "$REMOTE"])
}

test_push_without_remote_asks if {
	count(ask) == 1 with input as run(["git", "push"])
	count(deny) == 0 with input as run(["git", "push"])
}

test_other_git_commands_are_ignored if {
	count(deny) == 0 with input as run(["git", "log", "push"])
}
