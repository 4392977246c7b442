# Deny reading a whole file above a size (a model's context is not a place for a 50 MB log).
# Reading a window of it (read_file with `limit`) is fine. The size is in input.paths[].size.
package reasonix.size

import rego.v1

max_bytes := 1048576

deny contains {"id": "read-size-limit", "reason": sprintf("%s is %d bytes; read at most %d bytes at once, or pass `limit`", [p.written, p.size, max_bytes])} if {
	input.tool == "read_file"
	not input.arguments.limit
	some p in input.paths
	is_number(p.size)
	p.size > max_bytes
}
