#!/usr/bin/env bash
# A drain that always ends (issue 16), through the real binaries. A decoder step that never
# returns (the test hook TRANSERVE_TEST_BLOCK_STEP, docs/server.md) holds a unary and a
# streaming call: on SIGTERM the server still exits within --drain_timeout + 5 s, with status 1
# and a log line naming the stuck model and step, and both callers get UNAVAILABLE from the
# server (not a hang, not a dropped connection). The clean case: a step that pauses (N:DURATION)
# and then goes on; the drain lets both calls finish, they get their translations, exit 0.
# Usage: drain_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/tests/fixtures/tiny-marian/model"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test drain
drain_seconds=2
unary_text="The house is small."
stream_text="We walk through the old city tonight."

# start_server NAME HOOK DRAIN_TIMEOUT: the server with the step hook, serving; sets server_pid,
# target and metrics_url.
start_server() {
  TRANSERVE_TEST_BLOCK_STEP="$2" "$bin/transerve-server" --model_dir="$model" \
    --host=127.0.0.1 --port=0 --metrics_port=0 --http_port=0 --num_threads=1 --drain_timeout="$3" \
    >"$work/$1.log" 2>&1 &
  server_pid=$!
  wait_serving "$work/$1.log" "$server_pid"
  target="127.0.0.1:$SERVING_PORT"
  metrics_url="http://127.0.0.1:$SERVING_METRICS_PORT/metrics"
}

# start_calls NAME: one unary and one streaming call in the background (deadline 60 s, so a
# hang shows up as DEADLINE_EXCEEDED rather than as a stuck test); sets unary_pid, stream_pid.
start_calls() {
  "$bin/transerve-client" --target="$target" --beam_size=1 --max_length=32 --timeout=60 \
    "$unary_text" >"$work/$1.unary.out" 2>"$work/$1.unary.err" &
  unary_pid=$!
  "$bin/transerve-client" --target="$target" --beam_size=1 --max_length=32 --timeout=60 \
    --stream "$stream_text" >"$work/$1.stream.out" 2>"$work/$1.stream.err" &
  stream_pid=$!
}

# wait_sentences_held N: until the server's gauges show N sentences decoding or queued.
wait_sentences_held() {
  local held=""
  for _ in $(seq 1 300); do
    held="$(python3 -c '
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1]).read().decode()
print(int(sum(float(l.split()[-1]) for l in text.splitlines()
              if l.startswith(("transerve_active_sequences{", "transerve_queue_depth{")))))
' "$metrics_url")" || held=""
    [ "$held" = "$1" ] && return 0
    sleep 0.1
  done
  fail "the server never held $1 sentences (last: '$held')"
}

# terminate LIMIT: SIGTERM; the server must exit within LIMIT seconds. Sets exit_rc and
# exit_seconds.
terminate() {
  local start end
  start="$(date +%s.%N)"
  kill -TERM "$server_pid"
  while kill -0 "$server_pid" 2>/dev/null; do
    end="$(date +%s.%N)"
    if python3 -c "import sys; sys.exit(0 if $end - $start > $1 else 1)"; then
      fail "the server still runs $1 s after SIGTERM"
    fi
    sleep 0.05
  done
  end="$(date +%s.%N)"
  exit_rc=0
  wait "$server_pid" || exit_rc=$?
  server_pid=""
  exit_seconds="$(python3 -c "print(f'{$end - $start:.2f}')")"
}

# --- stuck: step 2 never returns ---------------------------------------------------------------
start_server stuck 2 "${drain_seconds}s"
grep -q "test hook: decoder step 2 of every model blocks for inf" "$work/stuck.log" \
  || fail "the hook is not announced"
start_calls stuck
wait_sentences_held 2
terminate $((drain_seconds + 5))
echo "drain: stuck step: exit $exit_rc after ${exit_seconds}s (--drain_timeout=${drain_seconds}s)"
[ "$exit_rc" = 1 ] || fail "exit status $exit_rc after a stuck drain, not 1"
grep -q "model 'model': the drain found its decoder stuck: decoder step 2 has been running for" \
  "$work/stuck.log" || fail "the log does not name the stuck step"
grep -q "the drain did not end cleanly" "$work/stuck.log" || fail "no exit reason in the log"
for call in unary stream; do
  rc=0
  wait "$([ $call = unary ] && echo "$unary_pid" || echo "$stream_pid")" || rc=$?
  [ "$rc" != 0 ] || fail "the $call call succeeded through a stuck step"
  # The server's own answer: its status and message, not a transport error.
  grep -q "UNAVAILABLE: shut down before the translation finished" "$work/stuck.$call.err" \
    || fail "the $call call's error: $(cat "$work/stuck.$call.err")"
done

# --- clean: step 2 pauses 3 s, then goes on ------------------------------------------------------
start_server clean 2:3s 20s
start_calls clean
wait_sentences_held 2
terminate 25
echo "drain: clean: exit $exit_rc after ${exit_seconds}s"
[ "$exit_rc" = 0 ] || fail "exit status $exit_rc after a clean drain, not 0"
wait "$unary_pid" || fail "the unary call failed: $(cat "$work/clean.unary.err")"
wait "$stream_pid" || fail "the streaming call failed: $(cat "$work/clean.stream.err")"
printf '%s\n' "$unary_text" "$stream_text" | "$bin/transerve-translate" --model_dir="$model" \
  --num_threads=1 --beam_size=1 --max_length=32 >"$work/want.out" || fail "transerve-translate"
cat "$work/clean.unary.out" "$work/clean.stream.out" >"$work/got.out"
cmp -s "$work/want.out" "$work/got.out" || fail "the drained calls' translations differ"
grep -q "stopped: answered=2 OK=2" "$work/clean.log" || fail "not both answered OK"
if grep -q "stuck" "$work/clean.log"; then fail "a clean drain reported a stuck step"; fi
echo "drain: OK"
