# Plan mode for strict CI runs ("propose, don't touch"). Under `--strict` only a call an allow
# rule covers may run, so a `--plan --strict` run would be refused even its reads and the plan it
# hands in. In plan mode (`input.session.mode == "plan"`) this policy allows what planning needs
# and nothing more: handing in the plan, and read-only calls whose paths all lie inside the
# workspace (a bash command only when the analysis understood it, found it read-only and found no
# hazard). In normal mode it allows nothing: the rest of the policy decides. Changes need no rule
# here: the gate's plan stage blocks them in plan mode whatever any policy says.
package reasonix.plan_mode

import rego.v1

planning if input.session.mode == "plan"

# A builtin read-only tool, or a bash command the analysis vouches for.
reads_only if input.target.read_only

reads_only if {
	input.bash.analysed
	input.bash.read_only
	count(input.bash.hazards) == 0
}

allow contains {"id": "plan-hand-in", "reason": "in plan mode the plan may be handed in"} if {
	planning
	input.tool == "submit_plan"
	input.target.source == "builtin"
}

allow contains {"id": "plan-reads-workspace", "reason": "in plan mode, reading the workspace is how a plan is made"} if {
	planning
	input.tool != "submit_plan"
	reads_only
	every p in input.paths {
		p.inside_workspace
	}
}
