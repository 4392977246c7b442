# Claude Code's `Bash(npm run test:*)` permission, in Rego. A permission ending in `:*` allows a
# command that starts with the words before it; one without, exactly that command. Unlike a
# prefix match on the raw string, this runs on the analysis: every simple command in the call
# (including ones in substitutions, wrappers and `bash -c`) must match a permission, every word
# must be static, nothing may be written through a redirection, and the command must be
# understood and free of hazards.
package reasonix.claude

import rego.v1

permissions := ["npm run test:*", "npm test", "git status", "git diff:*"]

matches(line, permission) if {
	endswith(permission, ":*")
	startswith(line, trim_suffix(permission, ":*"))
}

matches(line, permission) if {
	not endswith(permission, ":*")
	line == permission
}

lines := [concat(" ", c.argv) | some c in input.bash.commands; not c.wrapper]

allow contains {"id": "claude-code-bash", "reason": sprintf("every command matches a Bash(...) permission: %v", [lines])} if {
	input.tool == "bash"
	input.bash.analysed
	count(input.bash.hazards) == 0
	count(lines) > 0
	every c in input.bash.commands { count(c.dynamic) == 0 }
	every line in lines { some p in permissions; matches(line, p) }
	every r in input.bash.redirects { not r.kind in {"write", "append", "read_write", "network"} }
}
