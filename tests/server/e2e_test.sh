#!/usr/bin/env bash
# End to end through the real binaries: transerve-server on free ports with the fixture model,
# transerve-client against transerve-translate (greedy and beam, unary and streaming), an RPC
# error's exit code, /metrics over HTTP (and `promtool check metrics` when promtool is
# installed), then SIGTERM -> exit 0.
# Usage: e2e_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/tests/fixtures/tiny-marian/model"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test e2e

# Repeated --model_dir flags are joined; two directories with one name are refused (exit 1).
rc=0
"$bin/transerve-server" --model_dir="$model" --model_dir "$src/tests/fixtures/tiny-marian-variant/model" \
  --port=0 --metrics_port=-1 --http_port=-1 >"$work/dup.log" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "named 'model'" "$work/dup.log" || fail "duplicate names: rc $rc"

"$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=0 --http_port=0 \
  --num_threads=1 --drain_timeout=10s >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
port="$SERVING_PORT"
metrics_port="$SERVING_METRICS_PORT"
target="127.0.0.1:$port"
echo "e2e: server on $target, metrics on $metrics_port"

printf '%s\n' "Hello world." "The house is small." "" "We walk through the old city tonight." \
  "a" > "$work/in.txt"
for beam in 1 4; do
  "$bin/transerve-translate" --model_dir="$model" --num_threads=1 --beam_size=$beam \
    --max_length=32 < "$work/in.txt" > "$work/want.$beam" || fail "transerve-translate"
  "$bin/transerve-client" --target="$target" --beam_size=$beam --max_length=32 \
    < "$work/in.txt" > "$work/got.$beam" || fail "client beam $beam"
  cmp -s "$work/want.$beam" "$work/got.$beam" || fail "beam $beam: client output differs"
  "$bin/transerve-client" --target="$target" --beam_size=$beam --max_length=32 --stream \
    < "$work/in.txt" > "$work/stream.$beam" || fail "client --stream beam $beam"
  cmp -s "$work/want.$beam" "$work/stream.$beam" || fail "beam $beam: --stream output differs"
done
# Texts as arguments, one line each.
[ "$("$bin/transerve-client" --target="$target" --beam_size=1 --max_length=32 "Hello world." "a" \
  | wc -l)" = 2 ] || fail "two arguments, two lines"
# An RPC error: non-zero exit with the status.
if "$bin/transerve-client" --target="$target" --model=no-such-model "x" 2>"$work/err"; then
  fail "unknown model should fail"
fi
grep -q NOT_FOUND "$work/err" || fail "status not printed: $(cat "$work/err")"
# --auth_token: the client's token (from TRANSERVE_AUTH_TOKEN) is sent; this server has none,
# so it is ignored.
TRANSERVE_AUTH_TOKEN=abc "$bin/transerve-client" --target="$target" --max_length=8 "x" >/dev/null \
  || fail "client with a token"
models="$("$bin/transerve-client" --target="$target" --list_models)" || fail "list_models"
grep -q '^model (default)' <<<"$models" || fail "list_models: $models"
# --health: SERVING exits 0; an unknown service and an unreachable server exit non-zero.
[ "$("$bin/transerve-client" --target="$target" --health)" = SERVING ] || fail "--health"
[ "$("$bin/transerve-client" --target="$target" --health \
  --health_service=transerve.v1.Translator)" = SERVING ] || fail "--health Translator"
if "$bin/transerve-client" --target="$target" --health --health_service=nope 2>"$work/err"; then
  fail "--health of an unknown service should fail"
fi
grep -q NOT_FOUND "$work/err" || fail "--health unknown service: $(cat "$work/err")"
if "$bin/transerve-client" --target=127.0.0.1:1 --health --timeout=2 2>/dev/null; then
  fail "--health of a closed port should fail"
fi

url="http://127.0.0.1:$metrics_port/metrics"
if command -v curl >/dev/null; then
  curl -sf "$url" > "$work/metrics.txt" || fail "GET /metrics"
else
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' \
    "$url" > "$work/metrics.txt" || fail "GET /metrics"
fi
grep -q '^transerve_requests_total{code="OK",method="Translate",model="model",protocol="grpc"} 4$' \
  "$work/metrics.txt" || fail "requests_total: $(grep transerve_requests_total "$work/metrics.txt")"
grep -q '^transerve_requests_total{code="OK",method="TranslateStream",model="model",protocol="grpc"} 2$' \
  "$work/metrics.txt" || fail "TranslateStream count"
grep -q '^transerve_requests_total{code="NOT_FOUND",method="Translate",model="",protocol="grpc"} 1$' \
  "$work/metrics.txt" || fail "NOT_FOUND count"
if command -v promtool >/dev/null; then
  promtool check metrics < "$work/metrics.txt" || fail "promtool check metrics"
else
  echo "e2e: promtool not installed (Debian package prometheus): lint skipped"
fi

stop_server "$server_pid" "the server"
server_pid=""
grep -q "stopped" "$work/server.log" || fail "no drain in the log"

# TLS (--tls_cert/--tls_key) with a self-signed certificate for localhost.
if command -v openssl >/dev/null; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost" -keyout "$work/key.pem" -out "$work/cert.pem" \
    >/dev/null 2>&1 || fail "openssl"
  # The model comes from the environment this time (TRANSERVE_<FLAG>).
  TRANSERVE_MODEL_DIR="$model" TRANSERVE_AUTH_TOKEN=tok "$bin/transerve-server" --host=127.0.0.1 --port=0 --metrics_port=-1 --http_port=-1 \
    --num_threads=1 --tls_cert="$work/cert.pem" --tls_key="$work/key.pem" \
    >"$work/tls.log" 2>&1 &
  server_pid=$!
  wait_serving "$work/tls.log" "$server_pid"
  port="$SERVING_PORT"
  TRANSERVE_AUTH_TOKEN=tok "$bin/transerve-client" --target="localhost:$port" --tls \
    --tls_ca="$work/cert.pem" --beam_size=1 --max_length=32 < "$work/in.txt" > "$work/tls.1" \
    || fail "TLS client"
  if "$bin/transerve-client" --target="localhost:$port" --tls --tls_ca="$work/cert.pem" "x" \
    2>"$work/err"; then
    fail "a call without the token must fail"
  fi
  grep -q UNAUTHENTICATED "$work/err" || fail "no UNAUTHENTICATED: $(cat "$work/err")"
  cmp -s "$work/want.1" "$work/tls.1" || fail "TLS output differs"
  if "$bin/transerve-client" --target="localhost:$port" "x" 2>/dev/null; then
    fail "a plaintext client must not get through to the TLS server"
  fi
  stop_server "$server_pid" "TLS server"
  server_pid=""
else
  echo "e2e: openssl not installed: TLS leg skipped"
fi
echo "e2e: OK"
