# No `git push` to anything but `origin`. The remote is the first plain word after `push`
# (after git's own options, which may take a value). A push with no remote goes to the branch's
# upstream, which may be any remote: it asks. `--repo` names a remote too: denied.
package reasonix.git

import rego.v1

# git's options before the subcommand that take the next word as their value.
valued := {"-C", "-c", "--namespace", "--config-env", "--git-dir", "--work-tree"}

is_git(c) if c.argv[0] == "git"

is_git(c) if endswith(c.argv[0], "/git")

# Index of the subcommand: the first plain word not the value of a global option.
subcommand_at(argv) := min({i |
	some i, word in argv
	i > 0
	not startswith(word, "-")
	not argv[i - 1] in valued
})

push_args(c) := array.slice(c.argv, i + 1, count(c.argv)) if {
	is_git(c)
	i := subcommand_at(c.argv)
	c.argv[i] == "push"
}

pushes contains args if {
	some c in input.bash.commands
	args := push_args(c)
}

deny contains {"id": "git-push-origin-only", "reason": sprintf("git push to %q: only origin may be pushed to", [remote])} if {
	some args in pushes
	plain := [a | some a in args; not startswith(a, "-")]
	remote := plain[0]
	remote != "origin"
}

deny contains {"id": "git-push-origin-only", "reason": "git push --repo names another remote"} if {
	some args in pushes
	some a in args
	startswith(a, "--repo")
}

ask contains {"id": "git-push-upstream", "reason": "git push without a remote goes to the branch's upstream, which may not be origin"} if {
	some args in pushes
	count([a | some a in args; not startswith(a, "-")]) == 0
}
