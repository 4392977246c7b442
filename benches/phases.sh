#!/usr/bin/env bash
# Where the time of one `reasonix sandbox exec -- /bin/true` process goes, phase by phase: N runs
# recorded with `perf record` on scheduler tracepoints and a dozen system calls (no sampling, so
# the process runs as it does untraced, plus about 0.5 ms of tracing), then, per run, the time
# of each mark after the gateway's `execve`, and the median over the runs:
#
#   std's main         Rust's runtime starts (its `poll` of fds 0-2): the loader, glibc's start
#                      and the relocations are behind
#   jail probe         the first Landlock call (the ABI asked): clap, settings, policy behind
#   lease              the workspace lease's `flock`: the probe's answer and the plan behind
#   spawn              the `socketpair` std's spawn opens (only a run with a launcher): the
#                      policy compiled for what it protects, the run's folders behind
#   gateway forked     the gateway's first child exists: the command, cloned into its
#                      namespaces (or the launcher, std's fork of the gateway, for a run that
#                      joins the egress proxy's network namespace)
#   command confined   the command's `seccomp`: namespaces, mounts, Landlock behind
#   command execs      `/bin/true` is executing
#   command exits      `/bin/true` has exited
#   launcher exits     the launcher (a forked copy of the gateway) has exited; none without one
#   removal done       the gateway's `exit_group`: the wait, the cgroups, the folders behind
#   shell sees it      the shell's `wait4` returns: the gateway's address space torn down
#
# Needs perf (Debian's linux-perf) and root (or perf_event_paranoid -1) for the tracepoints.
# The absolute figures carry the tracing's cost; the gaps between marks are what to compare.
#
# Usage: benches/phases.sh [N]   (default 60; REASONIX=path to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-60}
if [ -z "${REASONIX:-}" ]; then
    cargo build -q --release
    REASONIX=$PWD/target/release/reasonix
fi
command -v perf >/dev/null || { echo "phases.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT
mkdir "$WS/ws"
"$REASONIX" sandbox exec --workspace "$WS/ws" -- /bin/true
events=(sched:sched_process_exec sched:sched_process_exit sched:sched_process_fork
    syscalls:sys_exit_poll syscalls:sys_enter_landlock_create_ruleset syscalls:sys_enter_flock
    syscalls:sys_enter_socketpair syscalls:sys_enter_seccomp syscalls:sys_enter_exit_group
    syscalls:sys_exit_wait4)
args=()
for e in "${events[@]}"; do args+=(-e "$e"); done
perf record -q "${args[@]}" -o "$WS/perf.data" -- bash -c \
    "for i in \$(seq $N); do '$REASONIX' sandbox exec --workspace '$WS/ws' -- /bin/true; done" \
    2>/dev/null
perf script -i "$WS/perf.data" -F comm,pid,time,event,trace 2>/dev/null | python3 -c '
import re, statistics, sys
runs, cur = [], None
for line in sys.stdin:
    m = re.match(r"\s*(\S+)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
    if not m:
        continue
    comm, pid, t, ev, tr = m.groups()
    t, ev = float(t) * 1000, ev.split(":")[1]
    if ev == "sched_process_exec" and "filename=/bin/true" not in tr and "/bash" not in tr \
            and "/seq" not in tr:
        cur = {"pid": pid, "events": []}
        runs.append(cur)
        cur["t0"] = t
        continue
    if cur is not None:
        cur["events"].append((t - cur["t0"], comm, pid, ev, tr))
def first(events, test):
    return next((e[0] for e in events if test(e)), None)
marks = {}
for r in runs:
    ev, me = r["events"], r["pid"]
    forks = [e for e in ev if e[3] == "sched_process_fork" and e[2] == me]
    launcher = forks[0][4].split("child_pid=")[1].split()[0] if forks else None
    found = {
        "std main": first(ev, lambda e: e[3] == "sys_exit_poll" and e[2] == me),
        "jail probe": first(ev, lambda e: e[3] == "sys_enter_landlock_create_ruleset" and e[2] == me),
        "lease": first(ev, lambda e: e[3] == "sys_enter_flock" and e[2] == me),
        "spawn": first(ev, lambda e: e[3] == "sys_enter_socketpair" and e[2] == me),
        "gateway forked": forks[0][0] if forks else None,
        "command confined": first(ev, lambda e: e[3] == "sys_enter_seccomp" and e[2] != me),
        "command execs": first(ev, lambda e: e[3] == "sched_process_exec"),
        "command exits": first(ev, lambda e: e[3] == "sched_process_exit" and e[1] == "true"),
        "launcher exits": first(ev, lambda e: e[3] == "sched_process_exit" and e[2] == launcher
                                and e[1] != "true"),
        "removal done": first(ev, lambda e: e[3] == "sys_enter_exit_group" and e[2] == me),
        "shell sees it": first(ev, lambda e: e[3] == "sys_exit_wait4" and e[1] == "bash"),
    }
    for k, v in found.items():
        marks.setdefault(k, [])
        if v is not None:
            marks[k].append(v)
print(f"{len(runs)} runs; median ms after the gateway execve, and the phase before each mark")
last = 0.0
for k, v in marks.items():
    if not v:
        print(f"  {k:17s}      -")
        continue
    m = statistics.median(v)
    print(f"  {k:17s} {m:6.2f}   +{m - last:5.2f}")
    last = m
'
