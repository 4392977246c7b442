package reasonix.size

import rego.v1

read(size, arguments) := {"tool": "read_file", "arguments": arguments, "paths": [{"written": "big.log", "size": size}]}

test_a_big_file_is_denied if {
	count(deny) == 1 with input as read(2000000, {"path": "big.log"})
}

test_a_window_of_a_big_file_is_allowed if {
	count(deny) == 0 with input as read(2000000, {"path": "big.log", "limit": 100})
}

test_a_small_file_is_allowed if {
	count(deny) == 0 with input as read(10, {"path": "big.log"})
}

test_a_missing_file_is_not_an_error if {
	count(deny) == 0 with input as read(null, {"path": "big.log"})
}
