#!/usr/bin/env bash
# Spawning `true` under bubblewrap, side by side with `reasonix sandbox exec`, for comparison with
# `cargo bench --bench jail`. Installs Debian's bubblewrap when it is missing, then times, N times
# each and in turns (one of each in turn, so that a change in the machine's load falls on all):
#   bare           /bin/true
#   bwrap          bwrap with a read-only root, a private /tmp, /proc, /dev, every namespace
#                  unshared and every capability dropped
#   reasonix-off   `reasonix sandbox exec -- true` with `sandbox.bash: off` (the whole CLI process:
#                  start-up, probe, plan — no jail)
#   reasonix       `reasonix sandbox exec -- true` (the same, jailed: mount and PID namespaces,
#                  Landlock, seccomp, cgroups)
#   bare-user      /bin/true run by `nobody` (as root, with env and setpriv: what they cost)
#   bwrap-user     bwrap's run by `nobody` the same way: its namespaces made in a user namespace
#   reasonix-user  `reasonix sandbox exec -- true` by `nobody` the same way, with a HOME it can
#                  write: the namespaces are made in a user namespace, and no cgroup can be made
#   reasonix-ro    `reasonix sandbox exec --read-only -- true` (issue 25: a call admitted as
#                  read-only; the default policy's protected paths looked for and covered)
#   reasonix-obs   `reasonix sandbox exec --observe -- true` (a writer: on an overlay, its upper
#                  layer read, judged and settled after it ends; the gate built to judge it)
# and prints the median, the fastest and the 90th percentile per spawn. Each run is timed by
# bash's $EPOCHREALTIME (a builtin: no `date` process inside the interval). The in-process cost
# of the jail alone, with and without namespaces, is what the criterion bench measures (`spawn
# true, jailed…`).
#
# With JAIL_ALONE=path (`cargo build --release --example jail_alone`), the row jail-alone: the
# jail alone in a small executable, run in the same workspace, keeping the probe's answer as
# the CLI does (the floor of a launcher).
# With BASE=path, the jailed rows of that binary too (base-reasonix, base-ro, base-obs), in the
# same turns: a before and after on one machine under one load.
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
    REASONIX=$PWD/target/release/reasonix
fi
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT
printf 'version: 1\nsandbox:\n  bash: off\n' > "$WS/off.yaml"
mkdir "$WS/ws" "$WS/times"

ROWS=(bare bwrap reasonix-off reasonix reasonix-ro reasonix-obs)
bare=(/bin/true)
bwrap=(bwrap --ro-bind / / --tmpfs /tmp --proc /proc --dev /dev --unshare-all --cap-drop ALL --die-with-parent /bin/true)
reasonix_off=("$REASONIX" sandbox exec --workspace "$WS/ws" --policy "$WS/off.yaml" -- /bin/true)
reasonix=("$REASONIX" sandbox exec --workspace "$WS/ws" -- /bin/true)
reasonix_ro=("$REASONIX" sandbox exec --workspace "$WS/ws" --read-only -- /bin/true)
reasonix_obs=("$REASONIX" sandbox exec --workspace "$WS/ws" --observe -- /bin/true)
if [ -n "${BASE:-}" ]; then
    # The same three jailed rows of another binary, in the same turns (before and after).
    base_reasonix=("$BASE" sandbox exec --workspace "$WS/ws" -- /bin/true)
    base_ro=("$BASE" sandbox exec --workspace "$WS/ws" --read-only -- /bin/true)
    base_obs=("$BASE" sandbox exec --workspace "$WS/ws" --observe -- /bin/true)
    ROWS+=(base-reasonix base-ro base-obs)
fi
if [ -n "${JAIL_ALONE:-}" ]; then
    # The jail alone in a small executable (examples/jail_alone.rs): the floor of a launcher.
    # It keeps the probe's answer as the CLI does (`--keep`: here in the bench's own folder).
    jail_alone=("$JAIL_ALONE" --keep "$WS/keep" --workspace "$WS/ws" /bin/true)
    ROWS+=(jail-alone)
fi
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    # A workspace of its own: the rows run as root make the workspace's lease folder, which
    # `nobody` could not then lock in. A HOME of its own too, which `nobody` can write: without
    # one, no probe's answer was kept, and each run tried every layer afresh (about 0.7 ms
    # more here, docs/speed.md), which timed the probe rather than the jail.
    mkdir "$WS/ws-user" "$WS/home-user" && chmod 755 "$WS"
    chown 65534:65534 "$WS/ws-user" "$WS/home-user"
    as_nobody=(env HOME="$WS/home-user" setpriv --reuid=65534 --regid=65534 --clear-groups --)
    reasonix_user=("${as_nobody[@]}" "$REASONIX" sandbox exec --workspace "$WS/ws-user" -- /bin/true)
    # /bin/true and bubblewrap run the same way (the first is what env and setpriv cost).
    bare_user=("${as_nobody[@]}" /bin/true)
    bwrap_user=("${as_nobody[@]}" "${bwrap[@]}")
    ROWS+=(bare-user bwrap-user reasonix-user)
fi

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; N=$N in turns"
for row in "${ROWS[@]}"; do
    declare -n c=${row//-/_}
    "${c[@]}" >/dev/null 2>&1 || { echo "$row: the command fails here: ${c[*]}" >&2; exit 1; }
    : >"$WS/times/$row"
done

# One run of a command, in microseconds.
once() {
    local s e
    s=$EPOCHREALTIME
    "$@" >/dev/null 2>&1 || true
    e=$EPOCHREALTIME
    echo $(( ${e/./} - ${s/./} ))
}

for _ in $(seq "$N"); do
    for row in "${ROWS[@]}"; do
        declare -n c=${row//-/_}
        once "${c[@]}" >>"$WS/times/$row"
    done
done
for row in "${ROWS[@]}"; do
    sort -n "$WS/times/$row" | awk -v name="$row" '
        { t[NR] = $1 }
        END {
            med = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
            p90 = t[int(NR * 0.9) > 0 ? int(NR * 0.9) : 1]
            printf "%-14s median %6.2f ms   min %6.2f ms   p90 %6.2f ms\n", name, med / 1000, t[1] / 1000, p90 / 1000
        }'
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
