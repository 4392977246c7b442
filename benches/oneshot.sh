#!/usr/bin/env bash
# One call per process, as a hook or a CI step calls Reasonix: the whole process of
#   reasonix check --policy P --format json CALL
# timed from the shell, N times per row, with the median, the fastest and the 90th percentile.
# Also the peak resident memory of the same process (`/usr/bin/time -f %M`, the largest of 5).
# It depends on which of the executable's pages are cached (a fault maps the cached pages
# around it): to compare two builds, `echo 3 > /proc/sys/vm/drop_caches` first, then run them
# in turns (docs/speed.md, "The link").
#
# hyperfine is not installed here, so each run is timed by the shell itself: bash's
# $EPOCHREALTIME (microseconds, a builtin, so no `date` process sits inside the interval) read
# before and after the run. The interval holds bash's fork and exec, the whole process and its
# exit; the `/bin/true` row is that floor on this machine.
#
# Rows:
#   true            /bin/true (the cost of starting any process here)
#   bash, YAML      a 100-byte bash call, --policy policies/default.yaml (the issue's row)
#   bash, +Rego     the same call, default.yaml and the five example Rego policies
#                   (claude-code-bash, git-push-origin, network-allowlist, read-size-limit,
#                   workflows-ask)
#   read, YAML      a read_file call, --policy policies/default.yaml
#
# Usage: benches/oneshot.sh [N]   (default 200; REASONIX=path to use another binary)
# The load average is printed first and last: on a shared machine, compare figures taken at a
# low load only.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
. benches/calls.sh

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); N=$N"

# time_it NAME COMMAND...: N runs, each timed on its own; prints median, min and p90 in ms.
time_it() {
    local name=$1; shift
    local rc=0
    "$@" >/dev/null 2>&1 || rc=$?
    # check exits 0/10/20/30 with a verdict; 2 is a usage or configuration error.
    if [ "$rc" = 2 ] || [ "$rc" -gt 30 ]; then
        echo "$name: the command fails here (exit $rc): $*" >&2
        return 1
    fi
    local times=() s e
    for _ in $(seq "$N"); do
        s=$EPOCHREALTIME
        "$@" >/dev/null 2>&1 || true
        e=$EPOCHREALTIME
        times+=("$(( (${e/./} - ${s/./}) ))")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v name="$name" '
        { t[NR] = $1 }
        END {
            med = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            p90 = t[int(NR * 0.9) > 0 ? int(NR * 0.9) : 1]
            printf "%-12s median %7.2f ms   min %7.2f ms   p90 %7.2f ms   (%d runs)\n", name, med / 1000, t[1] / 1000, p90 / 1000, NR
        }'
}

# peak NAME COMMAND...: the largest maximum resident set size of 5 runs, in MB.
peak() {
    local name=$1; shift
    local most=0 kb
    for _ in 1 2 3 4 5; do
        /usr/bin/time -f '%M' -o "$WS/rss" "$@" >/dev/null 2>&1 || true
        kb=$(tail -1 "$WS/rss")
        [ "$kb" -gt "$most" ] && most=$kb
    done
    awk -v name="$name" -v kb="$most" 'BEGIN { printf "%-12s peak RSS %6.1f MB (%d kB, largest of 5)\n", name, kb / 1024, kb }'
}

time_it true /bin/true
time_it "bash, YAML" "$REASONIX" check "${YAML[@]}" --workspace "$WS" --format json "$BASH_CALL"
time_it "bash, +Rego" "$REASONIX" check "${REGO[@]}" --workspace "$WS" --format json "$BASH_CALL"
time_it "read, YAML" "$REASONIX" check "${YAML[@]}" --workspace "$WS" --format json "$READ_CALL"
peak "bash, YAML" "$REASONIX" check "${YAML[@]}" --workspace "$WS" --format json "$BASH_CALL"
peak "bash, +Rego" "$REASONIX" check "${REGO[@]}" --workspace "$WS" --format json "$BASH_CALL"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
