#!/usr/bin/env bash
# Writes linker/startup.order: the functions a one-call check and `sandbox exec` run, which
# build.rs hands to the linker (`--symbol-ordering-file`, release builds) so that they sit
# together at the start of the code instead of spread over its 18 MB. The kernel maps a
# program's code around each page it first runs (up to 64 KB at a time), so spread code costs
# memory and page faults at every start; see README's Speed section.
#
# The functions are those valgrind's callgrind sees run in the rows of benches/instructions.sh
# (bash call with the YAML policy, the same with the five Rego examples, a read_file call,
# `sandbox exec` with the jail off since valgrind hides Landlock), in the order first seen,
# by their mangled names, kept when the binary defines them.
#
# The names carry hashes: after a change, some no longer match and the linker skips them
# silently, and functions new on the start-up path are laid out elsewhere; the order then
# degrades (memory creeps back up), it never breaks the build (docs/speed.md, "The link"). Run
# this again, with the release binary built from the current code, when benches/instructions.sh
# shows the peak RSS rising.
#
# Usage: benches/startup-order.sh   (REASONIX=path to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/calls.sh
CHECK=("$REASONIX" check --workspace "$WS" --format json)

run() {
    local out=$1; shift
    valgrind --tool=callgrind --demangle=no --dump-line=no --child-silent-after-fork=yes \
        --callgrind-out-file="$WS/$out" --log-file=/dev/null "$@" >/dev/null 2>&1 || true
}
run 1.cg "${CHECK[@]}" --policy policies/default.yaml "$BASH_CALL"
run 2.cg "${CHECK[@]}" "${REGO[@]}" "$BASH_CALL"
run 3.cg "${CHECK[@]}" --policy policies/default.yaml "$READ_CALL"
run 4.cg "$REASONIX" sandbox exec --workspace "$WS/ws" --policy "$WS/off.yaml" -- /bin/true
nm --defined-only "$REASONIX" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u >"$WS/defined"

python3 - "$WS" "$("$REASONIX" --version | head -1)" <<'PY'
import re, sys
ws, version = sys.argv[1], sys.argv[2]
defined = set(open(f"{ws}/defined").read().split())
order, seen = [], set()
for name in ("1.cg", "2.cg", "3.cg", "4.cg"):
    for line in open(f"{ws}/{name}"):
        m = re.match(r"^c?fn=\(\d+\) (\S+)$", line)
        if m and m.group(1) in defined and m.group(1) not in seen:
            seen.add(m.group(1))
            order.append(m.group(1))
with open("linker/startup.order", "w") as f:
    f.write("# Functions a one-call check and `sandbox exec` run, in the order first seen: written by\n")
    f.write("# benches/startup-order.sh (which says why and when to run it again), read by build.rs.\n")
    f.write(f"# From {version}; {len(order)} functions.\n")
    f.write("\n".join(order) + "\n")
print(f"linker/startup.order: {len(order)} functions")
PY
