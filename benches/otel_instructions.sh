#!/usr/bin/env bash
# What OpenTelemetry export costs a `reasonix check` batch in work done, the figure a shared
# machine's load does not move (issue 29): the instructions of the whole process (every thread:
# the judging threads, the exporter's, its HTTP client's) judging the batch of benches/otel.rs
# (reads, writes, bash commands, a denied secret), with export off and with export on to a sink
# on 127.0.0.1 (a Python process that answers 200 to every request; its own work is not
# counted), under valgrind's callgrind; then the CPU time (user + system) of the same two runs
# natively, in alternating pairs, and the wall clock. The user settings give the span queue
# room for the whole batch (`otel.queue`) and the exit time to send it under valgrind
# (`otel.exit_wait_ms`); the `otel:` section alone turns nothing on.
#
# Usage: benches/otel_instructions.sh [N] [PAIRS]   (N calls, default 10000; PAIRS native
# pairs, default 5). PROFILE=release for the release build (fat LTO: slow to build on two
# cores); the default is the bench profile, which `cargo bench` builds. BIN=PATH measures
# another build of reasonix instead.
# Needs valgrind and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
PAIRS=${2:-5}
PROFILE=${PROFILE:-bench}
# BIN=path measures that binary instead (another commit's, kept aside).
if [ -z "${BIN:-}" ]; then
    cargo build -q --profile "$PROFILE" --bin reasonix
    BIN=target/release/reasonix
fi
OUT=$(mktemp -d)
SINK_PID=
trap '[ -n "$SINK_PID" ] && kill "$SINK_PID" 2>/dev/null; rm -rf "$OUT"' EXIT
mkdir -p "$OUT/ws/src" "$OUT/home/.config/reasonix"
# Under valgrind every thread runs in turn and slowly: a queue that holds the whole batch keeps
# the exporter from dropping spans, so that both runs do all their work (a run that drops any
# stops the script).
echo "otel: {queue: $((N + 100)), exit_wait_ms: 600000}" >"$OUT/home/.config/reasonix/reasonix.yaml"
for i in $(seq 0 $((N - 1))); do
    case $((i % 4)) in
        0) echo "{\"id\":\"r$i\",\"name\":\"read_file\",\"arguments\":{\"path\":\"src/lib$i.rs\"}}" ;;
        1) echo "{\"id\":\"w$i\",\"name\":\"write_file\",\"arguments\":{\"path\":\"notes/n$i.md\",\"content\":\"x\"}}" ;;
        2) echo "{\"id\":\"b$i\",\"name\":\"bash\",\"arguments\":{\"command\":\"git status --short && grep -rn TODO src | head -20\"}}" ;;
        3) echo "{\"id\":\"s$i\",\"name\":\"read_file\",\"arguments\":{\"path\":\".env\"}}" ;;
    esac
done >"$OUT/batch.jsonl"
python3 - "$OUT/port" <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
SINK_PID=$!
for _ in $(seq 50); do [ -s "$OUT/port" ] && break; sleep 0.1; done
ENDPOINT="http://127.0.0.1:$(cat "$OUT/port")"
check() { # check ON|OFF [prefix...]
    local on=$1
    shift
    if [ "$on" = on ]; then
        env HOME="$OUT/home" OTEL_EXPORTER_OTLP_ENDPOINT="$ENDPOINT" "$@" "$BIN" check --format json --workspace "$OUT/ws" <"$OUT/batch.jsonl" >/dev/null 2>"$OUT/stderr" || true
    else
        env -u OTEL_EXPORTER_OTLP_ENDPOINT HOME="$OUT/home" "$@" "$BIN" check --format json --workspace "$OUT/ws" <"$OUT/batch.jsonl" >/dev/null 2>"$OUT/stderr" || true
    fi
    if grep -q dropped "$OUT/stderr"; then
        echo "export dropped spans: $(cat "$OUT/stderr")" >&2
        exit 1
    fi
}
count() { # instructions of the process and any child it forks (each pid's "Collected")
    check "$1" valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.%p" --log-file="$OUT/vg.%p"
    local n
    n=$(cat "$OUT"/vg.* | grep -o 'Collected : [0-9]*' | grep -o '[0-9]*' | paste -sd+ | bc)
    rm -f "$OUT"/cg.* "$OUT"/vg.*
    echo "$n"
}
off=$(count off)
on=$(count on)
echo "instructions, $N calls: export off $off, on $on: +$(echo "scale=1; ($on - $off) * 100 / $off" | bc) %, $(( (on - off) / N )) per call"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu() { # cpu ON|OFF: user+system seconds and wall seconds
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$OUT/time" bash -c "$(declare -f check); OUT='$OUT' BIN='$BIN' ENDPOINT='$ENDPOINT' check $1"
    t1=$(date +%s.%N)
    echo "$(awk '{print $1 + $2}' "$OUT/time") $(echo "scale=3; ($t1 - $t0) / 1" | bc)"
}
for i in $(seq "$PAIRS"); do
    a=$(cpu off)
    b=$(cpu on)
    echo "pair $i: cpu/wall s, off $a, on $b (load $(cut -d' ' -f1 /proc/loadavg))"
    echo "$a" >>"$OUT/off.times"
    echo "$b" >>"$OUT/on.times"
done
median() { # median FILE COLUMN
    awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
for col in 1 2; do
    name=$([ "$col" = 1 ] && echo "cpu" || echo "wall")
    off=$(median "$OUT/off.times" "$col")
    on=$(median "$OUT/on.times" "$col")
    echo "median $name over $PAIRS pairs: off $off s, on $on s: $(echo "scale=1; ($on - $off) * 100 / $off" | bc) %"
done
