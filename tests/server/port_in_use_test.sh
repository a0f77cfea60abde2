#!/usr/bin/env bash
# A port already taken is an error at start-up, never a silent share: a second transerve-server
# asked for the gRPC, HTTP or metrics port of one that is serving exits 1 at once with the
# reason, and the first goes on answering on every port (gRPC and httplib both set
# SO_REUSEPORT by default, with which the second would bind and the kernel would split the
# connections between the two processes). A plain program holding a port is refused the same
# way.
# Usage: port_in_use_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/tests/fixtures/tiny-marian/model"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test port_in_use

"$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=0 \
  --http_port=0 --num_threads=1 >"$work/first.log" 2>&1 &
server_pid=$!
wait_serving "$work/first.log" "$server_pid"
grpc_port="$SERVING_PORT"
metrics_port="$SERVING_METRICS_PORT"
http_port="$SERVING_HTTP_PORT"
[ "$http_port" -gt 0 ] || fail "the first server reported no HTTP port"

# second NAME FLAGS... EXPECTED: a second server with these ports must exit 1 within 30 s
# (the model loads first), its log naming EXPECTED, and never say it serves.
second() {
  local name="$1" expected="$2" rc=0
  shift 2
  timeout 60 "$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --num_threads=1 \
    "$@" >"$work/$name.log" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "$name: the second server exited $rc, not 1"
  grep -q "serving:" "$work/$name.log" && fail "$name: the second server said it serves"
  grep -q "$expected" "$work/$name.log" || fail "$name: no '$expected' in its log"
  kill -0 "$server_pid" 2>/dev/null || fail "$name: the first server died"
}
second grpc "cannot listen on 127.0.0.1:$grpc_port" --port="$grpc_port" --metrics_port=0 --http_port=0
second http "cannot listen for HTTP on 127.0.0.1:$http_port" --port=0 --metrics_port=0 \
  --http_port="$http_port"
second metrics "cannot serve metrics" --port=0 --metrics_port="$metrics_port" --http_port=0

# A port held by another program (a listening Python socket, no SO_REUSEPORT) is refused too.
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(120)
' >"$work/held.port" &
holder=$!
for _ in $(seq 1 100); do [ -s "$work/held.port" ] && break; sleep 0.1; done
held="$(cat "$work/held.port")"
second held_http "cannot listen for HTTP on 127.0.0.1:$held" --port=0 --metrics_port=0 \
  --http_port="$held"
second held_grpc "cannot listen on 127.0.0.1:$held" --port="$held" --metrics_port=0 --http_port=0
kill "$holder" 2>/dev/null || true

# The first server still answers on each port, every time (no connection lands elsewhere).
for i in $(seq 1 8); do
  out="$("$bin/transerve-client" --target="127.0.0.1:$grpc_port" --beam_size=1 --max_length=16 \
    --timeout=30 "The house number $i is small.")" || fail "gRPC call $i failed after the refusals"
  [ -n "$out" ] || fail "gRPC call $i: empty translation"
  code="$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -d "{\"texts\": [\"The house number $i is small.\"], \"options\": {\"beam_size\": 1}}" \
    "http://127.0.0.1:$http_port/v1/translate")"
  [ "$code" = 200 ] || fail "HTTP call $i answered $code after the refusals"
  scrape="$(curl -sf "http://127.0.0.1:$metrics_port/metrics")" ||
    fail "metrics scrape $i failed after the refusals"
  grep -q "^transerve_" <<<"$scrape" || fail "metrics scrape $i: no transerve_ series"
done
stop_server "$server_pid" "the first server"
server_pid=""
echo "port_in_use: OK"
