#!/usr/bin/env bash
# DeepL's official Node.js client library (deepl-node, installed by scripts/setup.sh into
# tests/deepl_client/) run unchanged against the real server, given its URL as `serverUrl`:
# translate, languages, usage, glossary language pairs, and every v2 and v3 glossary call
# (tests/deepl_client/deepl_client_test.mjs), with a key the server requires.
# Usage: deepl_client_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test deepl_client

client="$src/tests/deepl_client"
command -v node >/dev/null || fail "node is missing: run scripts/setup.sh"
[ -d "$client/node_modules/deepl-node" ] || fail "deepl-node is missing: run scripts/setup.sh"

key="k-$RANDOM-$RANDOM"
"$bin/transerve-server" --model_dir="$src/models/en-de-small" --host=127.0.0.1 --port=0 \
  --http_port=0 --metrics_port=0 --num_threads=2 --auth_token="$key" \
  --data_dir="$work/data" > "$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"

seed=$((RANDOM % 100000))
SEED="$seed" node "$client/deepl_client_test.mjs" "http://127.0.0.1:$SERVING_HTTP_PORT" "$key" \
  > "$work/client.log" 2>&1 || { cat "$work/client.log" >&2; fail "deepl-node checks (seed $seed)"; }
cat "$work/client.log"
stop_server "$server_pid" "the server"
server_pid=""
echo "deepl_client: PASS"
