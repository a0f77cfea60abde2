#!/usr/bin/env bash
# The compose deployment, without Docker, on loopback: two transerve-server replicas, Debian's
# nginx running deploy/nginx/templates/transerve.conf.template (rendered with envsubst, as the
# nginx image does) and Debian's prometheus running deploy/prometheus/prometheus.yml unchanged
# (its file-discovered targets pointed at the replicas). Then, through nginx:
#   1. transerve-loadgen for a few seconds: no errors, both replicas served calls, Prometheus has
#      both targets up and its request counters sum to exactly what the loadgen sent;
#   2. the HTTP front end through nginx's HTTP port: POST /v1/translate, POST /translate
#      (LibreTranslate's), the server-sent events of /v1/translate/stream and GET /readyz answer
#      with translations, and transerve-loadgen --protocol=http spreads its calls over both
#      replicas with no errors;
#   3. transerve-loadgen again while one replica gets SIGTERM: it exits 0 after draining, no
#      call is lost (every one OK: refused connections are retried on the other replica by
#      nginx), the survivor keeps answering, and Prometheus sees the stopped target down.
# Usage: loopback_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/tests/fixtures/tiny-marian/model"
input="$src/deploy/loadgen/sentences.en"
py=/usr/bin/python3
work="$(mktemp -d)"
chmod 755 "$work"  # nginx's workers may run as another user
pids=()
# Everything this test started ends with it: SIGTERM to each process (nginx's master then stops
# its workers; SIGKILL would orphan them), and whatever, workers included, is still alive 10 s
# later is killed and fails the test.
cleanup() {
  local rc=$? pid all=() leftover=()
  for pid in "${pids[@]}"; do
    all+=("$pid")
    for child in $(pgrep -P "$pid" 2>/dev/null || true); do all+=("$child"); done
  done
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    leftover=()
    for pid in "${all[@]}"; do kill -0 "$pid" 2>/dev/null && leftover+=("$pid"); done
    [ ${#leftover[@]} -eq 0 ] && break
    sleep 0.1
  done
  if [ ${#leftover[@]} -gt 0 ]; then
    echo "loopback: FAIL: still running 10 s after SIGTERM:" >&2
    ps -o pid=,args= -p "$(IFS=,; echo "${leftover[*]}")" >&2 || true
    for pid in "${leftover[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    rc=1
  fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "loopback: kept $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
fail() {
  echo "loopback: FAIL: $*" >&2
  for log in "$work"/*.log "$work"/nginx/*.log; do
    if [ -f "$log" ]; then
      echo "--- $log (last 30 lines)" >&2
      grep -v '^200 ' "$log" | tail -30 >&2
    fi
  done
  exit 1
}
say() { echo "loopback: $*"; }
for tool in nginx prometheus envsubst curl; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup.sh installs it)"
done
free_port() {
  $py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- two replicas -------------------------------------------------------------------------------
start_replica() {  # NAME
  "$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=0 --http_port=0 \
    --num_threads=1 --drain_timeout=10s >"$work/$1.log" 2>&1 &
  pids+=($!)
  eval "pid_$1=$!"
}
start_replica a
start_replica b
wait_serving "$work/a.log" "$pid_a"
port_a="$SERVING_PORT"
metrics_a="$SERVING_METRICS_PORT"
http_a="$SERVING_HTTP_PORT"
wait_serving "$work/b.log" "$pid_b"
port_b="$SERVING_PORT"
metrics_b="$SERVING_METRICS_PORT"
http_b="$SERVING_HTTP_PORT"
say "replicas: a on $port_a (metrics $metrics_a, http $http_a)," \
  "b on $port_b (metrics $metrics_b, http $http_b)"

# --- nginx with the compose file's template -----------------------------------------------------
lb_port="$(free_port)"
lb_http_port="$(free_port)"
mkdir -p "$work/nginx/conf.d" "$work/nginx/tmp"
chmod 1777 "$work/nginx/tmp"
NGINX_LISTEN="127.0.0.1:$lb_port" TRANSERVE_UPSTREAM_1="127.0.0.1:$port_a" \
  TRANSERVE_UPSTREAM_2="127.0.0.1:$port_b" NGINX_HTTP_LISTEN="127.0.0.1:$lb_http_port" \
  TRANSERVE_HTTP_UPSTREAM_1="127.0.0.1:$http_a" TRANSERVE_HTTP_UPSTREAM_2="127.0.0.1:$http_b" \
  envsubst '${NGINX_LISTEN} ${TRANSERVE_UPSTREAM_1} ${TRANSERVE_UPSTREAM_2} ${NGINX_HTTP_LISTEN}
            ${TRANSERVE_HTTP_UPSTREAM_1} ${TRANSERVE_HTTP_UPSTREAM_2}' \
  < "$src/deploy/nginx/templates/transerve.conf.template" > "$work/nginx/conf.d/transerve.conf"
# The image's own nginx.conf, reduced to what a non-root process in a temporary directory needs;
# the access log records which upstream(s) each call went to.
cat > "$work/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log info;
events { worker_connections 1024; }
http {
  log_format calls '\$status|\$upstream_addr|\$upstream_status|\$request_time|'
                   '\$upstream_http_grpc_status|\$upstream_trailer_grpc_status|\$msec';
  access_log $work/nginx/access.log calls;
  client_body_temp_path $work/nginx/tmp/body;
  proxy_temp_path $work/nginx/tmp/proxy;
  fastcgi_temp_path $work/nginx/tmp/fastcgi;
  uwsgi_temp_path $work/nginx/tmp/uwsgi;
  scgi_temp_path $work/nginx/tmp/scgi;
  include $work/nginx/conf.d/*.conf;
}
EOF
nginx -t -q -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" \
  || fail "nginx -t rejects the rendered template"
nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" \
  -g 'daemon off;' >"$work/nginx.log" 2>&1 &
pids+=($!)
lb="127.0.0.1:$lb_port"
for _ in $(seq 1 100); do
  "$bin/transerve-client" --target="$lb" --health --timeout=1 >/dev/null 2>&1 && break
  sleep 0.1
done
[ "$("$bin/transerve-client" --target="$lb" --health --timeout=5)" = SERVING ] \
  || fail "health through nginx"
lb_http="127.0.0.1:$lb_http_port"
say "nginx on $lb (gRPC), $lb_http (HTTP)"

# --- prometheus with the compose file's configuration -------------------------------------------
prom_port="$(free_port)"
mkdir -p "$work/prometheus/targets"
cp "$src/deploy/prometheus/prometheus.yml" "$work/prometheus/prometheus.yml"
cat > "$work/prometheus/targets/loopback.yml" <<EOF
- targets: [127.0.0.1:$metrics_a]
  labels: {replica: a}
- targets: [127.0.0.1:$metrics_b]
  labels: {replica: b}
EOF
prometheus --config.file="$work/prometheus/prometheus.yml" \
  --storage.tsdb.path="$work/prometheus/data" --web.listen-address="127.0.0.1:$prom_port" \
  >"$work/prometheus.log" 2>&1 &
pids+=($!)
# promql QUERY: the instant vector as "labelvalue=value" lines (label: replica), sorted.
promql() {
  curl -sf "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" \
    | $py -c 'import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    print("%s=%s" % (r["metric"].get("replica", ""), r["value"][1]))' | sort
}
# await_promql QUERY WANT SECONDS: polls until the query gives WANT (newlines as spaces).
await_promql() {
  local got=""
  for _ in $(seq 1 "$3"); do
    got="$(promql "$1" 2>/dev/null | tr '\n' ' ' || true)"
    [ "$got" = "$2" ] && return 0
    sleep 1
  done
  fail "prometheus: $1 gave '$got', want '$2'"
}
await_promql 'up{job="transerve"}' "a=1 b=1 " 60
say "prometheus on $prom_port: both targets up"

# requests_total METRICS_PORT: the replica's Translate calls, by its own /metrics.
requests_total() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk '
    /^transerve_requests_total\{/ && /method="Translate"/ { n += $NF } END { print n + 0 }'
}

# --- 1: load through nginx, both replicas up ----------------------------------------------------
"$bin/transerve-loadgen" --target="$lb" --input="$input" --order=random --concurrency=8 \
  --connections=2 --duration=6 --warmup=0 --max_length=16 --deadline=30 \
  --json="$work/phase1.json" >"$work/loadgen1.log" 2>&1 || fail "loadgen (phase 1)"
sent1="$(json_field "$work/phase1.json" 'j["ok"] + sum(j["errors"].values())')"
ok1="$(json_field "$work/phase1.json" 'j["ok"]')"
[ "$ok1" -gt 0 ] && [ "$ok1" = "$sent1" ] \
  || fail "phase 1: $ok1 OK of $sent1: $(json_field "$work/phase1.json" 'j["errors"]')"
a1="$(requests_total "$metrics_a")"
b1="$(requests_total "$metrics_b")"
say "phase 1: $sent1 calls, all OK; replica a answered $a1, b answered $b1"
[ "$a1" -gt 0 ] && [ "$b1" -gt 0 ] || fail "nginx did not spread calls over both replicas"
[ $((a1 + b1)) = "$sent1" ] || fail "replicas counted $((a1 + b1)) calls, loadgen sent $sent1"
await_promql 'sum(transerve_requests_total{job="transerve",method="Translate"})' "=$sent1 " 30
await_promql 'sum by (replica) (transerve_requests_total{job="transerve",method="Translate"})' \
  "a=$a1 b=$b1 " 30
say "prometheus counters match the loadgen: $sent1 = $a1 + $b1"

# --- 2: the HTTP front end through nginx ---------------------------------------------------------
# http_post PATH BODY: the answer's body; fails the test unless nginx answers 200.
http_post() {
  curl -sS -f -X POST "http://$lb_http$1" -H 'Content-Type: application/json' -d "$2" \
    || fail "POST $1 through nginx"
}
v1="$(http_post /v1/translate '{"texts": ["The house is small.", "Good morning."]}')"
$py -c 'import json, sys
t = [x.get("text", "") for x in json.loads(sys.argv[1])["translations"]]
sys.exit(0 if len(t) == 2 and all(t) else 1)' "$v1" || fail "/v1/translate through nginx: $v1"
libre="$(http_post /translate '{"q": "The house is small.", "source": "en", "target": "de"}')"
$py -c 'import json, sys
sys.exit(0 if json.loads(sys.argv[1]).get("translatedText") else 1)' "$libre" \
  || fail "/translate through nginx: $libre"
# Server-sent events pass through unbuffered and whole: messages, then the end event.
curl -sS -f -N -X POST "http://$lb_http/v1/translate/stream" -H 'Content-Type: application/json' \
  -d '{"texts": ["We walk through the old city tonight."]}' > "$work/stream.txt" \
  || fail "POST /v1/translate/stream through nginx"
grep -q '^data: {.*"done":true' "$work/stream.txt" && grep -q '^event: done$' "$work/stream.txt" \
  || fail "/v1/translate/stream through nginx: $(head -c 600 "$work/stream.txt")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$lb_http/readyz")" = 200 ] \
  || fail "GET /readyz through nginx"
say "HTTP through nginx: /v1/translate '$($py -c 'import json, sys
print(json.loads(sys.argv[1])["translations"][0]["text"])' "$v1")', /translate '$($py -c \
  'import json, sys; print(json.loads(sys.argv[1])["translatedText"])' "$libre")', SSE, /readyz"
# http_requests_total METRICS_PORT: the replica's Translate calls that came in over HTTP.
http_requests_total() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk '/^transerve_requests_total\{/ &&
    /method="Translate"/ && /protocol="http"/ { n += $NF } END { print n + 0 }'
}
ha0="$(http_requests_total "$metrics_a")"
hb0="$(http_requests_total "$metrics_b")"
for api in v1 libretranslate; do
  "$bin/transerve-loadgen" --protocol=http --http_api=$api --http_target="$lb_http" \
    --input="$input" --order=random --concurrency=4 --duration=2 --warmup=0 \
    --json="$work/http_$api.json" >"$work/loadgen_http_$api.log" 2>&1 || fail "loadgen over HTTP ($api)"
  ok="$(json_field "$work/http_$api.json" 'j["ok"]')"
  sent="$(json_field "$work/http_$api.json" 'j["sent"]')"
  [ "$ok" -gt 0 ] && [ "$ok" = "$sent" ] \
    || fail "loadgen over HTTP ($api): $ok OK of $sent: $(json_field "$work/http_$api.json" 'j["errors"]')"
  say "loadgen --protocol=http --http_api=$api through nginx: $ok calls, all OK"
done
ha="$(( $(http_requests_total "$metrics_a") - ha0 ))"
hb="$(( $(http_requests_total "$metrics_b") - hb0 ))"
[ "$ha" -gt 0 ] && [ "$hb" -gt 0 ] || fail "nginx sent HTTP calls to a: $ha, b: $hb (not both)"
say "nginx spread the HTTP calls: a answered $ha, b $hb"

# --- 3: stop replica b mid-run ------------------------------------------------------------------
"$bin/transerve-loadgen" --target="$lb" --input="$input" --order=random --concurrency=8 \
  --connections=2 --duration=10 --warmup=0 --max_length=16 --deadline=30 \
  --json="$work/phase2.json" >"$work/loadgen2.log" 2>&1 &
loadgen_pid=$!
pids+=("$loadgen_pid")
sleep 3
stop_server "$pid_b" "replica b"
grep -q "stopped" "$work/b.log" || fail "replica b did not log its drain"
a_at_stop="$(requests_total "$metrics_a")"
say "replica b drained and exited 0"
wait "$loadgen_pid" || fail "loadgen (phase 3)"
sent2="$(json_field "$work/phase2.json" 'j["ok"] + sum(j["errors"].values())')"
ok2="$(json_field "$work/phase2.json" 'j["ok"]')"
a2="$(requests_total "$metrics_a")"

# The access log (status|upstream(s)|upstream statuses|time|grpc-status header|trailer|msec):
# nginx answered every call from a replica (no 502/504: connection failures were retried), and
# each failed call was answered by replica b's gRPC shutdown itself (a trailers-only status, in
# headers), which nginx cannot retry: gRPC 1.51 cancels calls that reach a server in the instant
# between the start of its shutdown and the client reading its GOAWAY (deploy/README.md).
log="$work/nginx/access.log"
retried="$(awk -F'|' '$2 ~ /,/' "$log" | wc -l)"
not_answered="$(awk -F'|' '$1 != 200' "$log" | wc -l)"
# Calls whose final grpc-status is not OK (0), by the replica that gave it.
failed_by() {
  awk -F'|' -v who="$1" '{ n = split($2, up, ", "); last = up[n] }
    (($5 != "-" && $5 != 0) || ($5 == "-" && $6 != 0)) && last == who' "$log" | wc -l
}
cancelled_by_b="$(failed_by "127.0.0.1:$port_b")"
failed_by_a="$(failed_by "127.0.0.1:$port_a")"
say "phase 3: $sent2 calls, $ok2 OK, errors $(json_field "$work/phase2.json" 'j["errors"]');" \
  "nginx retried $retried on the other replica; b's shutdown answered $cancelled_by_b;" \
  "a answered $((a2 - a_at_stop)) after b stopped"
[ "$ok2" -gt 0 ] || fail "phase 3: nothing succeeded"
[ "$not_answered" = 0 ] || fail "nginx could not deliver $not_answered calls (lost, not retried)"
[ "$failed_by_a" = 0 ] || fail "replica a failed $failed_by_a calls"
[ $((sent2 - ok2)) = "$cancelled_by_b" ] \
  || fail "$((sent2 - ok2)) calls failed, b's shutdown answered $cancelled_by_b: some were lost"
# A sanity bound: the window is an instant, a handful of calls (measured: 0-4 of 5,393-11,526 in 13 runs).
[ $((cancelled_by_b * 100)) -le "$sent2" ] \
  || fail "b's shutdown cancelled $cancelled_by_b of $sent2 calls: more than an instant's worth"
[ $((a2 - a_at_stop)) -gt 0 ] || fail "replica a answered nothing after b stopped"
await_promql 'up{job="transerve"}' "a=1 b=0 " 30
say "prometheus sees replica b down, a up"

stop_server "$pid_a" "replica a"
say "OK"
