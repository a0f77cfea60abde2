# Shell helpers for tests that run transerve-server binaries (source this file).

# begin_server_test NAME: the frame every server test script shares. Sets `work` (a fresh
# folder, removed on exit) and `server_pid` (killed on exit once set), and defines
# fail REASON: prints "NAME: FAIL: REASON" and the tail of every log in $work, then exits 1.
begin_server_test() {
  server_test_name="$1"
  work="$(mktemp -d)"
  server_pid=""
  trap end_server_test EXIT
}
end_server_test() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
fail() {
  local log
  echo "$server_test_name: FAIL: $*" >&2
  for log in "$work"/*.log; do
    [ -f "$log" ] && { echo "--- $log (last 30 lines)" >&2; tail -30 "$log" >&2; }
  done
  exit 1
}

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
  SERVING_HTTP_PORT="$(sed -n 's/.*serving: .* http_port=\([0-9-]*\) .*/\1/p' "$log")"
}

# stop_server PID WHAT: SIGTERM, then the server must drain and exit 0 (fails otherwise).
stop_server() {
  local pid="$1" what="$2" rc=0
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || fail "$what exited $rc after SIGTERM"
}

# json_field FILE EXPR: prints a Python expression over the JSON document j of FILE.
json_field() { /usr/bin/python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print($2)" "$1"; }

# rss_kb PID: the process's resident size now, in KiB (0 once it is gone).
rss_kb() {
  local kb
  kb="$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || true)"
  echo "${kb:-0}"
}

# sample_rss PID FILE: appends the resident size (KiB) every 0.2 s until the process exits; run
# it in the background. max_in FILE prints the largest sample.
sample_rss() {
  while kill -0 "$1" 2>/dev/null; do
    rss_kb "$1" >>"$2"
    sleep 0.2
  done
}
max_in() { sort -n "$1" | tail -1; }

# load_test_flags USAGE DEFAULT_SECONDS ARGS...: the load tests' flags: sets `seconds`
# (--seconds=N, else DEFAULT_SECONDS) and `json_out` (--json=FILE, else empty).
load_test_flags() {
  local usage="$1" arg
  seconds="$2"
  json_out=""
  shift 2
  for arg in "$@"; do
    case "$arg" in
      --seconds=*) seconds="${arg#--seconds=}" ;;
      --json=*) json_out="${arg#--json=}" ;;
      *) echo "usage: $usage" >&2; exit 2 ;;
    esac
  done
}
