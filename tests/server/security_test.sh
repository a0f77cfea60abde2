#!/usr/bin/env bash
# TLS, mutual TLS, bearer tokens and the private metrics address, through the real binaries with
# certificates made here by openssl: a CA, a server certificate for localhost, a client
# certificate it signs and a self-signed impostor. Also the configurations the server refuses.
# Usage: security_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
model="$src/tests/fixtures/tiny-marian/model"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test security
command -v openssl >/dev/null || fail "openssl is not installed (scripts/setup.sh installs it)"

# --- certificates -------------------------------------------------------------------------------
cd "$work"
quiet() { "$@" >/dev/null 2>&1 || fail "$*"; }
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=transerve test CA" \
  -keyout ca.key -out ca.pem
issue() {  # NAME SUBJECT [EXTENSION]: a key and a certificate signed by the test CA
  quiet openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr"
  if [ -n "${3:-}" ]; then echo "$3" > "$1.ext"; else : > "$1.ext"; fi
  quiet openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
    -extfile "$1.ext" -out "$1.pem"
}
issue server "/CN=localhost" "subjectAltName=DNS:localhost"
issue client "/CN=transerve test client"
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=impostor" \
  -keyout impostor.key -out impostor.pem
printf '# test clients\nfirst-token-%s\n\n  second-token-%s  \n' "$RANDOM" "$RANDOM" > tokens
token1="$(sed -n 2p tokens)"
token2="$(sed -n 4p tokens | tr -d ' ')"

# --- configurations the server refuses, each with its reason ------------------------------------
refuses() {  # WHAT PATTERN FLAGS...: the server exits non-zero and says PATTERN
  local what="$1" pattern="$2"
  shift 2
  rc=0
  "$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=-1 --http_port=-1 \
    "$@" >refused.log 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "$what: the server started"
  grep -q "$pattern" refused.log || fail "$what: no '$pattern' in: $(cat refused.log)"
}
: > empty_tokens
refuses "mutual TLS without a certificate" "needs --tls_cert" --tls_client_ca=ca.pem
refuses "a key without a certificate" "both --tls_cert and --tls_key" --tls_key=server.key
refuses "a missing certificate file" "cannot read" --tls_cert=nope.pem --tls_key=server.key
refuses "an empty tokens file" "no tokens" --auth_tokens_file=empty_tokens
refuses "a missing tokens file" "cannot read" --auth_tokens_file=nope

# --- mutual TLS + tokens, metrics on another address --------------------------------------------
"$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_host=127.0.0.2 \
  --metrics_port=0 --http_port=0 --num_threads=1 --tls_cert=server.pem --tls_key=server.key \
  --tls_client_ca=ca.pem --auth_tokens_file=tokens >server.log 2>&1 &
server_pid=$!
wait_serving server.log "$server_pid"
grep -q "tls=mutual auth_tokens=2" server.log || fail "start-up line: $(grep serving: server.log)"
target="localhost:$SERVING_PORT"
mtls=(--target="$target" --tls --tls_ca=ca.pem --tls_cert=client.pem --tls_key=client.key)

for t in "$token1" "$token2"; do
  [ -n "$("$bin/transerve-client" "${mtls[@]}" --auth_token="$t" --max_length=8 "Hello.")" ] \
    || fail "a client with a certificate and a token gets no translation"
done
expect_error() {  # WHAT STATUS CLIENT-ARGS...
  local what="$1" status="$2"
  shift 2
  if "$bin/transerve-client" "$@" --timeout=10 2>err.txt >/dev/null; then fail "$what: succeeded"; fi
  grep -q "$status" err.txt || fail "$what: want $status, got: $(cat err.txt)"
}
expect_error "no token" UNAUTHENTICATED "${mtls[@]}" --max_length=8 "Hello."
expect_error "a wrong token" UNAUTHENTICATED "${mtls[@]}" --auth_token="${token1}x" "Hello."
TRANSERVE_AUTH_TOKEN="$token2" "$bin/transerve-client" "${mtls[@]}" --max_length=8 "Hi." \
  >/dev/null || fail "the token from TRANSERVE_AUTH_TOKEN"
# Health needs no token (load balancers and probes), but still the client certificate.
[ "$("$bin/transerve-client" "${mtls[@]}" --health)" = SERVING ] || fail "health with mTLS"
expect_error "no client certificate" UNAVAILABLE --target="$target" --tls --tls_ca=ca.pem \
  --auth_token="$token1" "Hello."
expect_error "an impostor certificate" UNAVAILABLE --target="$target" --tls --tls_ca=ca.pem \
  --tls_cert=impostor.pem --tls_key=impostor.key --auth_token="$token1" "Hello."
expect_error "plaintext" UNAVAILABLE --target="$target" --auth_token="$token1" "Hello."
expect_error "a certificate without its key" "go together" "${mtls[@]/--tls_key=client.key/}" \
  "Hello."

# The load generator speaks mutual TLS and tokens too.
printf 'Hello world.\nThe house is small.\n' > in.txt
"$bin/transerve-loadgen" "${mtls[@]}" --auth_token="$token1" --input=in.txt --concurrency=2 \
  --duration=1 --warmup=0 --max_length=8 --json=load.json >/dev/null || fail "loadgen with mTLS"
/usr/bin/python3 -c 'import json, sys; j = json.load(open("load.json"))
sys.exit(0 if j["ok"] > 0 and not j["errors"] else 1)' || fail "loadgen: $(cat load.json)"

# The HTTP port speaks HTTPS with the same files: the client certificate and a token are needed.
https="https://localhost:$SERVING_HTTP_PORT"
tls_curl=(curl -s -m 20 --cacert ca.pem --cert client.pem --key client.key)
"${tls_curl[@]}" -H "Authorization: Bearer $token1" -o https.json -w '%{http_code}' \
  "$https/v1/translate" -d '{"texts": ["Hello world."], "options": {"maxLength": 8}}' >code.txt \
  || fail "HTTPS with a client certificate and a token: curl exit $?"
[ "$(cat code.txt)" = 200 ] && grep -q '"translations"' https.json \
  || fail "HTTPS translate: $(cat code.txt) $(cat https.json)"
[ "$("${tls_curl[@]}" -o /dev/null -w '%{http_code}' "$https/v1/translate" \
  -d '{"texts": ["Hello."]}')" = 401 ] || fail "HTTPS without a token is not 401"
[ "$("${tls_curl[@]}" -o /dev/null -w '%{http_code}' "$https/healthz")" = 200 ] \
  || fail "HTTPS health with a client certificate"
if curl -s -m 10 --cacert ca.pem -o /dev/null "$https/healthz"; then
  fail "HTTPS answered a client without a certificate"
fi
if curl -s -m 10 -o /dev/null "http://localhost:$SERVING_HTTP_PORT/healthz"; then
  fail "the HTTP port answered plaintext with TLS on"
fi

# Metrics answer on 127.0.0.2 only.
# To a file first: `curl | grep -q` under pipefail fails when grep exits before curl has written
# the whole page (curl then dies of SIGPIPE).
curl -sf -o metrics.txt "http://127.0.0.2:$SERVING_METRICS_PORT/metrics" \
  || fail "metrics on --metrics_host: curl exit $?"
grep -q '^transerve_requests_total' metrics.txt || fail "metrics on --metrics_host: no requests total"
if curl -sf -m 5 "http://127.0.0.1:$SERVING_METRICS_PORT/metrics" >/dev/null; then
  fail "metrics also answer on --host"
fi

stop_server "$server_pid" "the server"
server_pid=""
echo "security: OK"
