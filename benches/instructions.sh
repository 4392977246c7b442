#!/usr/bin/env bash
# Whole-process costs that do not move with the machine's load, so that two builds can be
# compared on a shared machine without waiting for it to be idle:
#
#   instructions   user-space instructions of the whole process, dynamic linker included.
#                  `perf stat -e instructions:u` when the CPU's counters are visible (exact,
#                  and the jailed `sandbox exec` row runs as it really does); else valgrind's
#                  cachegrind (`I refs`, exact as well; this VM exposes no hardware counters).
#                  Under valgrind, Landlock's system calls are unknown (ENOSYS), so a dry run
#                  sees no Landlock and the `sandbox exec` row runs with `sandbox.bash: off`
#                  (start-up, policy and spawn; not the jail itself).
#   minor faults   page faults of the same process run natively (`perf stat -e minor-faults`,
#                  a software event available everywhere), the mean of N runs: each is a page
#                  first touched, so they count start-up's relocation and code pages.
#   peak RSS       the largest maximum resident set size of 5 runs (`/usr/bin/time -f %M`).
#
# Rows (the calls of benches/oneshot.sh):
#   true            /bin/true
#   bash, YAML      reasonix check --policy policies/default.yaml --format json <bash call>
#   bash, +Rego     the same with the five example Rego policies
#   read, YAML      a read_file call, --policy policies/default.yaml
#   sandbox exec    reasonix sandbox exec -- /bin/true (jailed, the default policy)
#
# Usage: benches/instructions.sh [N]   (default 20 runs for the fault count)
#        REASONIX=path to use another binary (default: cargo build --release); to compare two
#        builds, run it with REASONIX set to each.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
. benches/calls.sh

if perf stat -x, -e instructions:u /bin/true 2>&1 >/dev/null | grep -q '^[0-9]'; then
    COUNTER=perf
elif command -v valgrind >/dev/null; then
    COUNTER=valgrind
else
    echo "neither perf's instructions:u nor valgrind is available here" >&2
    exit 1
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); counter: $COUNTER; binary: $REASONIX ($("$REASONIX" --version | head -1))"

# instructions COMMAND...: user-space instructions, the smallest of 3 runs (the Rego row moves
# by up to 7 % from run to run: hash tables are seeded at random, and the order of a walk
# changes the work; the other rows repeat to 0.2 %).
instructions() {
    for _ in 1 2 3; do
        if [ "$COUNTER" = perf ]; then
            perf stat -x, -e instructions:u -o "$WS/perf" "$@" >/dev/null 2>&1 || true
            grep -m1 'instructions' "$WS/perf" | cut -d, -f1
        else
            valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
                --child-silent-after-fork=yes --log-file="$WS/vg" "$@" >/dev/null 2>&1 || true
            grep 'I *refs:' "$WS/vg" | tail -1 | sed 's/.*refs: *//; s/,//g'
        fi
    done | sort -n | head -1
}

# faults COMMAND...: mean minor page faults of N native runs.
faults() {
    perf stat -x, -r "$N" -e minor-faults -o "$WS/faults" "$@" >/dev/null 2>&1 || true
    grep -m1 'minor-faults' "$WS/faults" | cut -d, -f1
}

# peak COMMAND...: the largest maximum resident set size of 5 runs, in kB.
peak() {
    local most=0 kb
    for _ in 1 2 3 4 5; do
        /usr/bin/time -f '%M' -o "$WS/rss" "$@" >/dev/null 2>&1 || true
        kb=$(tail -1 "$WS/rss")
        [ "$kb" -gt "$most" ] && most=$kb
    done
    echo "$most"
}

# row NAME COUNTED-COMMAND ::: NATIVE-COMMAND: one line of figures.
row() {
    local name=$1; shift
    local counted=() native=()
    while [ "$1" != ::: ]; do counted+=("$1"); shift; done
    shift
    native=("$@")
    local rc=0
    "${native[@]}" >/dev/null 2>&1 || rc=$?
    # check exits 0/10/20/30 with a verdict; 2 is a usage or configuration error.
    if [ "$rc" = 2 ] || [ "$rc" -gt 30 ]; then
        echo "$name: the command fails here (exit $rc): ${native[*]}" >&2
        return 1
    fi
    printf '%-14s %14s instructions   %6s minor faults   peak RSS %6s kB\n' "$name" \
        "$(instructions "${counted[@]}" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')" \
        "$(faults "${native[@]}")" "$(peak "${native[@]}")"
}

CHECK=("$REASONIX" check --workspace "$WS" --format json)
row true /bin/true ::: /bin/true
row "bash, YAML" "${CHECK[@]}" "${YAML[@]}" "$BASH_CALL" ::: "${CHECK[@]}" "${YAML[@]}" "$BASH_CALL"
row "bash, +Rego" "${CHECK[@]}" "${REGO[@]}" "$BASH_CALL" ::: "${CHECK[@]}" "${REGO[@]}" "$BASH_CALL"
row "read, YAML" "${CHECK[@]}" "${YAML[@]}" "$READ_CALL" ::: "${CHECK[@]}" "${YAML[@]}" "$READ_CALL"
if [ "$COUNTER" = perf ]; then
    row "sandbox exec" "$REASONIX" sandbox exec --workspace "$WS/ws" -- /bin/true \
        ::: "$REASONIX" sandbox exec --workspace "$WS/ws" -- /bin/true
else
    # Instructions with the jail off (valgrind hides Landlock); faults and memory jailed.
    row "sandbox exec" "$REASONIX" sandbox exec --workspace "$WS/ws" --policy "$WS/off.yaml" -- /bin/true \
        ::: "$REASONIX" sandbox exec --workspace "$WS/ws" -- /bin/true
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
