#!/usr/bin/env bash
# Mixed traffic through `reasonix check --format json` read from a pipe: calls per second,
# whole process, without and with the five example Rego policies.
#
# The corpus is benches/mixed.jsonl: 263 calls in a fixed shuffled order, 158 of them bash
# (60 %: command lines as tldr pages and shell scripts write them — git, find, grep, sed, awk,
# tar, curl, cargo, npm, pip, docker, kubectl, loops, substitutions, a here-document, pipes to a
# shell, sudo, env/timeout/nice/xargs wrappers) and 105 file tools (40 %: read_file, list_dir,
# glob, grep, write_file, edit_file, move_file, delete_file; secrets, paths outside the
# workspace, the host's own files, and three malformed calls). It is repeated to about 31,000
# lines and `cat`ed into the process through a pipe, judged in a workspace holding the files it
# names. Each row runs 5 times, timed by bash's $EPOCHREALTIME; the median run is reported as
# calls per second (start-up included, spread over the stream).
#
# Rows:
#   YAML      --policy policies/default.yaml
#   +Rego     default.yaml and the five example Rego policies (claude-code-bash, git-push-origin,
#             network-allowlist, read-size-limit, workflows-ask)
#
# With BASE=path, each run of REASONIX is followed by a run of BASE on the same input (paired
# runs, so the machine's load falls on both alike), and both are reported, with their verdicts
# compared line by line: where they differ (the builds judge some calls differently), how many
# and the first few are printed, since the pair then times different work.
#
# Usage: benches/mixed.sh [REPEATS]   (default 120; REASONIX=path to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-120}
if [ -z "${REASONIX:-}" ]; then
    cargo build -q --release
    REASONIX=target/release/reasonix
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The workspace holds only the files the corpus names (a `du -sh *` call lists it); the input
# and the verdicts stay outside it.
WS=$TMP/ws
mkdir -p "$WS/src/deep/a/b" "$WS/build" "$WS/target" "$WS/.github/workflows" "$WS/docs" \
    "$WS/tests/common" "$WS/web" "$WS/app" "$WS/scripts" "$WS/config" "$WS/src/cli" "$WS/src/gate"
printf 'fn main() { println!("hello"); }\n' >"$WS/src/main.rs"
printf 'fn lib() {}\n' >"$WS/src/deep/lib.rs"
printf 'SECRET=x\n' >"$WS/.env"
printf '[package]\n' >"$WS/Cargo.toml"
printf 'x\n' >"$WS/target/tmp.txt"
printf 'on: push\n' >"$WS/.github/workflows/ci.yml"
printf '# Usage\n' >"$WS/README.md"
printf '#!/bin/sh\n' >"$WS/scripts/deploy.sh"
printf 'remember\n' >"$WS/notes.txt"
printf 'x\n' >"$WS/build/out.txt"
INPUT="$TMP/mixed.in.jsonl"
for _ in $(seq "$REPEATS"); do cat benches/mixed.jsonl; done >"$INPUT"
LINES=$(wc -l <"$INPUT")

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $LINES calls per run"

# one BIN OUT ARGS...: one run through a pipe; prints its rate in calls per second.
one() {
    local bin=$1 out=$2; shift 2
    local s e
    s=$EPOCHREALTIME
    cat "$INPUT" | "$bin" check "$@" >"$out" 2>/dev/null || true
    e=$EPOCHREALTIME
    echo "$(( LINES * 1000000 / (${e/./} - ${s/./}) ))"
}

# verdicts FILE: each line's call number and verdict, for comparing two builds' judgements.
verdicts() {
    python3 -c 'import json, sys
for line in open(sys.argv[1]):
    v = json.loads(line)
    print(v.get("line"), v.get("verdict"))' "$1"
}

report() {
    printf '%s\n' "${@:2}" | sort -n | awk -v name="$1" '
        { r[NR] = $1 }
        END { printf "%-14s median %7d calls/s   best %7d calls/s   (5 runs)\n", name, r[3], r[5] }'
}

rate() {
    local name=$1; shift
    local mine=() base=()
    for _ in 1 2 3 4 5; do
        mine+=("$(one "$REASONIX" "$TMP/out.jsonl" "$@")")
        [ -n "${BASE:-}" ] && base+=("$(one "$BASE" "$TMP/base.jsonl" "$@")")
    done
    local got
    got=$(wc -l <"$TMP/out.jsonl")
    [ "$got" = "$LINES" ] || { echo "$name: $got verdicts for $LINES calls" >&2; return 1; }
    report "$name" "${mine[@]}"
    if [ -n "${BASE:-}" ]; then
        report "$name (base)" "${base[@]}"
        if ! cmp -s "$TMP/out.jsonl" "$TMP/base.jsonl"; then
            # Two builds whose verdicts differ (a rule or the analysis changed between them) still
            # get their rates; the pair is then flagged, with the calls judged differently.
            diff <(verdicts "$TMP/out.jsonl") <(verdicts "$TMP/base.jsonl") >"$TMP/differ" || true
            echo "$name: $(grep -c '^<' "$TMP/differ") of $LINES verdicts differ from BASE's (so do the calls they cost); the first:" >&2
            head -4 "$TMP/differ" | cut -c1-300 >&2
        fi
    fi
}

rate YAML --policy policies/default.yaml --workspace "$WS" --format json
rate +Rego --policy policies/default.yaml --policy policies/examples/claude-code-bash --policy policies/examples/git-push-origin --policy policies/examples/network-allowlist --policy policies/examples/read-size-limit --policy policies/examples/workflows-ask \
    --workspace "$WS" --format json
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
