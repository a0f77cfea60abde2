# Shell helpers for tests that run transerve-server binaries (source this file; needs `fail`).
#
# wait_serving LOG PID: waits up to 60 s for the server's "serving:" log line, failing early if
# the process exits; then sets SERVING_PORT and SERVING_METRICS_PORT from that line (the ports
# it really bound: tests start servers with --port=0 --metrics_port=0).
wait_serving() {
  local log="$1" pid="$2"
  for _ in $(seq 1 600); do
    grep -q "serving:" "$log" && break
    kill -0 "$pid" 2>/dev/null || fail "server exited during start-up ($log)"
    sleep 0.1
  done
  grep -q "serving:" "$log" || fail "server not serving after 60 s ($log)"
  SERVING_PORT="$(sed -n 's/.*serving: .* port=\([0-9]*\) metrics_port=.*/\1/p' "$log")"
  SERVING_METRICS_PORT="$(sed -n 's/.*serving: .* metrics_port=\([0-9]*\) .*/\1/p' "$log")"
}

# stop_server PID WHAT: SIGTERM, then the server must drain and exit 0 (fails otherwise).
stop_server() {
  local pid="$1" what="$2" rc=0
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || fail "$what exited $rc after SIGTERM"
}
