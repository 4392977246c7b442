#!/usr/bin/env bash
# A JSONL stream through `reasonix check --format json`: calls per second, whole process.
#
# The corpus is benches/stream.jsonl (26 calls: 13 bash, 13 file tools, one of them invalid),
# repeated to about 31,000 lines in a temporary file, judged in a workspace with the files it
# names. Each row runs 5 times, timed by bash's $EPOCHREALTIME; the median run is reported as
# calls per second (start-up included, spread over the stream).
#
# Rows:
#   YAML      --policy policies/default.yaml (the issue's row)
#   +Rego     default.yaml and the five example Rego policies (claude-code-bash, git-push-origin,
#             network-allowlist, read-size-limit, workflows-ask)
#
# Usage: benches/stream.sh [REPEATS]   (default 1200; REASONIX=path to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-1200}
if [ -z "${REASONIX:-}" ]; then
    cargo build -q --release
    REASONIX=target/release/reasonix
fi
WS=$(mktemp -d)
trap 'rm -rf "$WS"' EXIT
mkdir -p "$WS/src/deep" "$WS/build" "$WS/target" "$WS/.github/workflows"
printf 'fn main() { println!("hello"); }\n' >"$WS/src/main.rs"
printf 'fn lib() {}\n' >"$WS/src/deep/lib.rs"
printf 'SECRET=x\n' >"$WS/.env"
printf '[package]\n' >"$WS/Cargo.toml"
printf 'x\n' >"$WS/target/tmp.txt"
INPUT="$WS/stream.in.jsonl"
for _ in $(seq "$REPEATS"); do cat benches/stream.jsonl; done >"$INPUT"
LINES=$(wc -l <"$INPUT")

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $LINES calls per run"

rate() {
    local name=$1; shift
    local rates=() s e
    for _ in 1 2 3 4 5; do
        s=$EPOCHREALTIME
        "$@" <"$INPUT" >"$WS/out.jsonl" 2>/dev/null || true
        e=$EPOCHREALTIME
        rates+=("$(( LINES * 1000000 / (${e/./} - ${s/./}) ))")
    done
    local got
    got=$(wc -l <"$WS/out.jsonl")
    [ "$got" = "$LINES" ] || { echo "$name: $got verdicts for $LINES calls" >&2; return 1; }
    printf '%s\n' "${rates[@]}" | sort -n | awk -v name="$name" '
        { r[NR] = $1 }
        END { printf "%-8s median %7d calls/s   best %7d calls/s   (5 runs)\n", name, r[3], r[5] }'
}

rate YAML "$REASONIX" check --policy policies/default.yaml --workspace "$WS" --format json
rate +Rego "$REASONIX" check --policy policies/default.yaml --policy policies/examples/claude-code-bash --policy policies/examples/git-push-origin --policy policies/examples/network-allowlist --policy policies/examples/read-size-limit --policy policies/examples/workflows-ask \
    --workspace "$WS" --format json
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
