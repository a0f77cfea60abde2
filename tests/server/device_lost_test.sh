#!/usr/bin/env bash
# A GPU lost for good, end to end (the CUDA emulator stands in for the GPU; SIGUSR1 breaks its
# device as a kernel's illegal address would): the next call is answered UNAVAILABLE with the
# reason, health turns NOT_SERVING, and transerve-server drains and exits 1, for its supervisor
# to restart it.
# Usage: device_lost_test.sh BIN_DIR SOURCE_DIR EMULATOR_PLUGIN
set -euo pipefail
bin="$1"
src="$2"
export TRANSERVE_CUDA_PLUGIN="$3"
export TRANSERVE_CUDA_EMULATOR_BREAK_ON_SIGUSR1=1
model="$src/tests/fixtures/tiny-marian/model"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test device_lost

"$bin/transerve-server" --model_dir="$model" --device=cuda --dtype=float32 --host=127.0.0.1 \
  --port=0 --metrics_port=-1 --http_port=-1 --drain_timeout=5s >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
grep -q "on cuda" "$work/server.log" || fail "the model is not on the (emulated) GPU"
"$bin/transerve-client" --target="$target" --max_length=8 "The house is small." >/dev/null \
  || fail "a call before the device broke"

kill -USR1 "$server_pid"
if "$bin/transerve-client" --target="$target" --max_length=8 "The house is small." \
  2>"$work/call.err"; then
  fail "a call on a broken device succeeded"
fi
if ! grep -q "UNAVAILABLE" "$work/call.err" || ! grep -q "GPU failed" "$work/call.err"; then
  fail "the call's error: $(cat "$work/call.err")"
fi

rc=0
for _ in $(seq 1 200); do
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" = 1 ] || fail "the server exited $rc, not 1, after losing its GPU"
grep -q "health is NOT_SERVING" "$work/server.log" || fail "health did not turn NOT_SERVING"
grep -q "exiting 1 to be restarted" "$work/server.log" || fail "no exit reason in the log"
echo "device_lost: OK"
