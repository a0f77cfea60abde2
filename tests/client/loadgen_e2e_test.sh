#!/usr/bin/env bash
# transerve-loadgen against the real transerve-server (fixture model, a bearer token): a short
# closed-loop run over each protocol and API - gRPC, HTTP v1, HTTP v1 streaming (SSE), HTTP
# LibreTranslate - must have every call answered OK, and the server's own request counters must
# equal what the JSON reports say was sent. Without the token every HTTP call is counted
# UNAUTHENTICATED, by both APIs.
# Usage: loadgen_e2e_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/tests/fixtures/tiny-marian/model"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test loadgen_e2e

token="loadgen-token-$RANDOM$RANDOM"
printf '%s\n' "$token" > "$work/tokens"
"$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=0 \
  --http_port=0 --num_threads=1 --auth_tokens_file="$work/tokens" >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
grpc="127.0.0.1:$SERVING_PORT"
http="127.0.0.1:$SERVING_HTTP_PORT"
metrics="http://127.0.0.1:$SERVING_METRICS_PORT/metrics"
[ "$SERVING_HTTP_PORT" -gt 0 ] || fail "no HTTP port in the serving line"

printf '%s\n' "Hello world." "The house is small." "We walk through the old city tonight." \
  "a" "Good morning, how are you?" > "$work/in.txt"
# run NAME ARGS...: one second of load, its report in $work/NAME.json; prints the calls sent.
run() {
  local name="$1"
  shift
  "$bin/transerve-loadgen" --input="$work/in.txt" --concurrency=2 --duration=1 --warmup=0 \
    --max_length=16 --json="$work/$name.json" "$@" >"$work/$name.log" 2>&1 \
    || fail "loadgen $name: $(cat "$work/$name.log")"
  json_field "$work/$name.json" 'j["sent"]'
}
# all_ok NAME: the report has calls, all OK, no error bucket, one sentence each.
all_ok() {
  json_field "$work/$1.json" \
    'int(j["sent"] > 0 and j["ok"] == j["sent"] and not j["errors"] and j["sentences_per_second"] > 0)' \
    | grep -qx 1 || fail "$1: not every call OK: $(cat "$work/$1.json")"
}
# served METHOD PROTOCOL: the server's OK count of that method over that protocol.
served() {
  curl -sf "$metrics" | awk -v m="method=\"$1\"" -v p="protocol=\"$2\"" '
    /^transerve_requests_total\{/ && index($0, m) && index($0, p) && /code="OK"/ { n += $NF }
    END { print n + 0 }'
}

auth=(--auth_token="$token")
grpc_sent="$(run grpc "${auth[@]}" --protocol=grpc --target="$grpc")"
all_ok grpc
v1_sent="$(run v1 "${auth[@]}" --protocol=http --http_api=v1 --http_target="$http")"
all_ok v1
# --target serves as the HTTP address when --http_target is not given.
sse_sent="$(run v1_stream "${auth[@]}" --protocol=http --http_api=v1 --stream --target="$http")"
all_ok v1_stream
json_field "$work/v1_stream.json" \
  'int(j["time_to_first_chunk_seconds"]["count"] == j["ok"])' | grep -qx 1 \
  || fail "v1 stream: a first event per call: $(cat "$work/v1_stream.json")"
libre_sent="$(run libre "${auth[@]}" --protocol=http --http_api=libretranslate --http_target="$http")"
all_ok libre
echo "loadgen_e2e: sent grpc $grpc_sent, v1 $v1_sent, v1 stream $sse_sent, libretranslate $libre_sent"

[ "$(served Translate grpc)" = "$grpc_sent" ] \
  || fail "server counted $(served Translate grpc) gRPC Translate calls, loadgen sent $grpc_sent"
[ "$(served TranslateStream http)" = "$sse_sent" ] \
  || fail "server counted $(served TranslateStream http) HTTP streams, loadgen sent $sse_sent"
[ "$(served Translate http)" = "$((v1_sent + libre_sent))" ] \
  || fail "server counted $(served Translate http) HTTP Translate calls, loadgen sent" \
    "$v1_sent + $libre_sent"

# No token: every HTTP call is refused, and counted by its gRPC name.
for api in v1 libretranslate; do
  run "no_token_$api" --protocol=http --http_api=$api --http_target="$http" >/dev/null
  json_field "$work/no_token_$api.json" \
    'int(j["ok"] == 0 and j["sent"] > 0 and j["errors"] == {"UNAUTHENTICATED": j["sent"]})' \
    | grep -qx 1 || fail "$api without a token: $(cat "$work/no_token_$api.json")"
done

stop_server "$server_pid" "server"
server_pid=""
echo "loadgen_e2e: OK"
