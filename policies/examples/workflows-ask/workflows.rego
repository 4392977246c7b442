# Ask before anything changes a CI workflow under .github/workflows/, whichever tool does it:
# write_file, edit_file, move_file or delete_file, a shell redirection into it, or a shell
# command that is not read-only and names a file there (`cp x .github/workflows/`).
package reasonix.workflows

import rego.v1

prefix := concat("", [input.session.workspace, "/.github/workflows/"])

in_workflows(p) if {
	is_string(p.path)
	startswith(p.path, prefix)
}

ask contains {"id": "ci-workflows", "reason": sprintf("%s changes a CI workflow, which runs with the repository's secrets", [p.written])} if {
	some p in input.paths
	p.access == "write"
	in_workflows(p)
}

ask contains {"id": "ci-workflows", "reason": sprintf("`%s` may change the CI workflow %s", [concat(" ", c.argv), p.written])} if {
	is_object(input.bash)
	not input.bash.read_only
	some p in input.paths
	p.role == "argument"
	in_workflows(p)
	some c in input.bash.commands
	p.written in c.argv
}
