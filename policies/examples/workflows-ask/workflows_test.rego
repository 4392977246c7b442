package reasonix.workflows

import rego.v1

session := {"workspace": "/ws"}

path(p, access, role) := {"path": p, "written": p, "access": access, "role": role}

test_writing_a_workflow_asks if {
	count(ask) == 1 with input as {"session": session, "paths": [path("/ws/.github/workflows/ci.yml", "write", "target")]}
}

test_reading_a_workflow_does_not_ask if {
	count(ask) == 0 with input as {"session": session, "paths": [path("/ws/.github/workflows/ci.yml", "read", "target")]}
}

test_a_lookalike_folder_does_not_ask if {
	count(ask) == 0 with input as {"session": session, "paths": [path("/ws/.github/workflows-old/ci.yml", "write", "target")]}
}

test_an_unresolved_path_is_not_an_error if {
	count(ask) == 0 with input as {"session": session, "paths": [{"path": null, "written": "x", "access": "write", "role": "target"}]}
}
