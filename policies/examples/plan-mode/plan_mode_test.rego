package reasonix.plan_mode

import rego.v1

plan := {"mode": "plan", "posture": "strict", "workspace": "/ws"}

normal := {"mode": "normal", "posture": "strict", "workspace": "/ws"}

inside(p) := {"path": p, "written": p, "access": "read", "role": "target", "inside_workspace": true}

outside(p) := {"path": p, "written": p, "access": "read", "role": "target", "inside_workspace": false}

read_call(session, paths) := {
	"tool": "read_file",
	"target": {"tool": "read_file", "source": "builtin", "read_only": true},
	"paths": paths,
	"bash": null,
	"session": session,
}

test_plan_mode_lets_the_plan_be_handed_in if {
	count(allow) == 1 with input as {
		"tool": "submit_plan",
		"target": {"tool": "submit_plan", "source": "builtin", "read_only": true},
		"paths": [], "bash": null, "session": plan,
	}
}

test_an_extension_named_submit_plan_is_not_allowed if {
	count(allow) == 0 with input as {
		"tool": "submit_plan",
		"target": {"tool": "submit_plan", "source": "extension", "read_only": true},
		"paths": [], "bash": null, "session": plan,
	}
}

test_plan_mode_allows_reading_the_workspace if {
	count(allow) == 1 with input as read_call(plan, [inside("/ws/src/a.rs")])
}

test_plan_mode_does_not_allow_reading_outside_the_workspace if {
	count(allow) == 0 with input as read_call(plan, [outside("/etc/passwd")])
}

test_normal_mode_allows_nothing if {
	count(allow) == 0 with input as read_call(normal, [inside("/ws/src/a.rs")])
}

test_a_writer_is_not_allowed_in_plan_mode if {
	count(allow) == 0 with input as {
		"tool": "write_file",
		"target": {"tool": "write_file", "source": "builtin", "read_only": false},
		"paths": [inside("/ws/a")], "bash": null, "session": plan,
	}
}

test_a_read_only_command_with_a_hazard_is_not_allowed if {
	count(allow) == 0 with input as {
		"tool": "bash",
		"target": {"tool": "bash", "source": "builtin", "read_only": false},
		"paths": [],
		"bash": {"analysed": true, "read_only": true, "hazards": [{"id": "environment"}]},
		"session": plan,
	}
}

test_a_read_only_command_is_allowed_in_plan_mode if {
	count(allow) == 1 with input as {
		"tool": "bash",
		"target": {"tool": "bash", "source": "builtin", "read_only": false},
		"paths": [inside("/ws/src")],
		"bash": {"analysed": true, "read_only": true, "hazards": []},
		"session": plan,
	}
}
