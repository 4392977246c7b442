#!/usr/bin/env bash
# Instructions per Rego evaluation, the figure that does not move with the load of a shared
# machine: examples/rego_calls.rs makes the votes of benches/rego.rs (the five example policies,
# on the 100-byte bash call and on a read_file call) N times under valgrind's callgrind, then
# once with none; the difference divided by N is one evaluation (`votes_on`: a kept VM or
# engine, input, rule evaluation, reading the votes).
#
# Then what Rego adds to a whole admission (`Gate::admit_text`, as benches/check.rs makes it,
# input document and reading of the votes included): N admissions with the YAML default and
# the five examples, less N with the YAML default alone (`rego_calls N CALL admit`).
#
# Usage: benches/rego_instructions.sh [N]   (default 100; POLICIES=a,b for other examples;
# REGO_ENGINE=interpreter for the interpreter instead of the bytecode VM)
# PROFILE=bench builds without LTO (minutes instead of the release build's fat LTO); the
# README says which profile each figure comes from.
# Needs valgrind. RUST_BACKTRACE is unset for the runs: with it set, every error regorus makes
# and drops inside an evaluation captures a backtrace, which is not what a deployment pays.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}
PROFILE=${PROFILE:-release}
cargo build -q --profile "$PROFILE" --example rego_calls
BIN=target/release/examples/rego_calls
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
count() {
    env -u RUST_BACKTRACE valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.%p" \
        "$BIN" "$@" 2>&1 >/dev/null | grep -o 'Collected : [0-9]*' | grep -o '[0-9]*' | sort -n | tail -1
    rm -f "$OUT"/cg.*
}
for call in bash read_file; do
    none=$(count 0 "$call")
    many=$(count "$N" "$call")
    echo "$call: $(( (many - none) / N )) instructions per evaluation (${POLICIES:-five examples}, ${REGO_ENGINE:-vm}, N=$N)"
done
for call in bash read_file; do
    rego=$(( ($(count "$N" "$call" admit) - $(count 0 "$call" admit)) / N ))
    yaml=$(( ($(POLICIES=none count "$N" "$call" admit) - $(POLICIES=none count 0 "$call" admit)) / N ))
    echo "$call: $rego instructions per admission with Rego, $yaml with the YAML default alone: Rego adds $(( rego - yaml )) (N=$N)"
done
