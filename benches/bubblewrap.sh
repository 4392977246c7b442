#!/usr/bin/env bash
# Spawning `true` under bubblewrap, for comparison with `cargo bench --bench jail`.
# Installs Debian's bubblewrap when it is missing, then times, N times each and in pairs (one
# of each in turn, so that a change in the machine's load falls on both):
#   bare      /bin/true
#   bwrap     bwrap with a read-only root, a private /tmp, /proc, /dev, every namespace
#             unshared and every capability dropped
#   reasonix  `reasonix sandbox exec -- /bin/true` (the whole CLI process: start-up, probe,
#             plan, jail)
# and prints the median, the fastest and the 90th percentile per spawn. Each run is timed by
# bash's $EPOCHREALTIME (a builtin: no `date` process inside the interval). The in-process cost
# of the jail alone is what the criterion bench measures (`spawn true, jailed`).
#
# Usage: benches/bubblewrap.sh [N]   (default 200; REASONIX=path to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}

if ! command -v bwrap >/dev/null; then
    echo "installing bubblewrap (Debian package) ..." >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap >/dev/null; fi
fi
if [ -z "${REASONIX:-}" ]; then
    cargo build -q --release
    REASONIX=target/release/reasonix
fi
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT
printf 'version: 1\nsandbox:\n  bash: off\n' > "$WS/off.yaml"
mkdir "$WS/ws"

BARE=(/bin/true)
BWRAP=(bwrap --ro-bind / / --tmpfs /tmp --proc /proc --dev /dev --unshare-all --cap-drop ALL --die-with-parent /bin/true)
JAIL=("$REASONIX" sandbox exec --workspace "$WS" -- /bin/true)

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; N=$N in pairs"
for cmd in BARE BWRAP JAIL; do
    declare -n c=$cmd
    "${c[@]}" >/dev/null 2>&1 || { echo "$cmd: the command fails here: ${c[*]}" >&2; exit 1; }
done

# One run of a command, in microseconds.
once() {
    local s e
    s=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 || true
    e=$EPOCHREALTIME
    echo $(( ${e/./} - ${s/./} ))
}

: >"$WS/bare"; : >"$WS/bwrap"; : >"$WS/reasonix"
for _ in $(seq "$N"); do
    once "${BARE[@]}" >>"$WS/bare"
    once "${BWRAP[@]}" >>"$WS/bwrap"
    once "${JAIL[@]}" >>"$WS/reasonix"
done
for name in bare bwrap reasonix; do
    sort -n "$WS/$name" | awk -v name="$name" '
        { t[NR] = $1 }
        END {
            med = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            printf "%-9s median %6.2f ms   min %6.2f ms   p90 %6.2f ms\n", name, med / 1000, t[1] / 1000, t[int(NR * 0.9)] / 1000
        }'
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
