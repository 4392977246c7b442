#!/usr/bin/env bash
# Spawning `true` under bubblewrap, side by side with `reasonix sandbox exec`, for comparison with
# `cargo bench --bench jail`. Installs Debian's bubblewrap when it is missing, then times N
# spawns of:
#   bare           true
#   bwrap          bwrap with a read-only root, a private /tmp, /proc, /dev and every namespace
#                  unshared
#   reasonix-off   `reasonix sandbox exec -- true` with `sandbox.bash: off` (the whole CLI process:
#                  start-up, probe, plan — no jail)
#   reasonix       `reasonix sandbox exec -- true` (the same, jailed: mount and PID namespaces,
#                  Landlock, seccomp, cgroups)
#   reasonix-user  the same run by `nobody` (as root, with setpriv): the namespaces are made in a
#                  user namespace, and no cgroup can be made
# and prints the mean per spawn. The in-process cost of the jail alone, with and without
# namespaces, is what the criterion bench measures (`spawn true, jailed…`).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-500}

if ! command -v bwrap >/dev/null; then
    echo "installing bubblewrap (Debian package) ..." >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap >/dev/null; fi
fi
cargo build -q --release
REASONIX=$PWD/target/release/reasonix
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT
printf 'version: 1\nsandbox:\n  bash: off\n' > "$WS/off.yaml"
mkdir "$WS/ws"

time_it() {
    local name=$1; shift
    "$@" >/dev/null 2>&1 || { echo "$name: the command fails here: $*" >&2; return 1; }
    local start end
    start=$(date +%s%N)
    for _ in $(seq "$N"); do "$@" >/dev/null 2>&1; done
    end=$(date +%s%N)
    awk -v n="$N" -v ns=$((end - start)) -v name="$name" 'BEGIN { printf "%-14s %8.3f ms per spawn (%d spawns)\n", name, ns / n / 1e6, n }'
}

time_it bare /bin/true
time_it bwrap bwrap --ro-bind / / --tmpfs /tmp --proc /proc --dev /dev --unshare-all --die-with-parent /bin/true
time_it reasonix-off "$REASONIX" sandbox exec --workspace "$WS/ws" --policy "$WS/off.yaml" -- /bin/true
time_it reasonix "$REASONIX" sandbox exec --workspace "$WS/ws" -- /bin/true
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$WS" && chown 65534:65534 "$WS/ws"
    time_it reasonix-user env HOME="$WS" setpriv --reuid=65534 --regid=65534 --clear-groups -- \
        "$REASONIX" sandbox exec --workspace "$WS/ws" -- /bin/true
fi
