#!/usr/bin/env bash
# bfloat16 and int8 through the real binaries, as a user runs them: transerve-translate with
# each --dtype at every CPU instruction-set level this machine has (--cpu_isa) must print the
# same translations at every level, and name the level's kernels in its log; transerve-server
# with --dtype=int8 and the level from the environment (TRANSERVE_CPU_ISA) answers several
# callers at once exactly as transerve-translate does, and reports the dtype in ListModels and
# in the model info metric; a level or dtype the CPU cannot run is refused with a clear error.
# Usage: low_precision_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/tests/fixtures/tiny-marian/model"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test low_precision

# Random sentences of the fixture's vocabulary (drawn anew each run), and an empty line.
python3 "$src/tests/testing/random_lines.py" "$work/in.txt" 12 1 14 --empty_at 5 \
  --words "the file is open and we copy your devices to the old window where a small program cannot save this page now"

levels=()
for level in avx2 avx512 avx512_vnni avx512_bf16; do
  if "$bin/transerve-translate" --model_dir="$model" --cpu_isa=$level --max_length=4 \
    <<<"a" >/dev/null 2>"$work/probe.log"; then
    levels+=("$level")
  else
    grep -q "not one of this CPU's" "$work/probe.log" || fail "--cpu_isa=$level: $(cat "$work/probe.log")"
  fi
done
[ "${levels[0]:-}" = avx2 ] || fail "avx2 must run: levels '${levels[*]}'"
echo "low_precision: levels on this CPU: ${levels[*]}"

for dtype in float32 bfloat16 int8; do
  for beam in 1 4; do
    for level in "${levels[@]}"; do
      out="$work/$dtype.$beam.$level"
      "$bin/transerve-translate" --model_dir="$model" --dtype=$dtype --cpu_isa=$level \
        --beam_size=$beam --max_length=32 --num_threads=2 --log_level=info < "$work/in.txt" > "$out" \
        2> "$out.log" || fail "translate $dtype beam $beam at $level: $(tail -3 "$out.log")"
      grep -q "$dtype; CPU kernels $level:" "$out.log" || fail "$dtype at $level: log $(grep ready "$out.log")"
      cmp -s "$work/$dtype.$beam.avx2" "$out" || fail "$dtype beam $beam: $level differs from avx2"
    done
    [ "$(wc -l < "$work/$dtype.$beam.avx2")" = "$(wc -l < "$work/in.txt")" ] || fail "line count"
  done
done

# Refused: a dtype the CPU does not run, a level that does not exist.
if "$bin/transerve-translate" --model_dir="$model" --dtype=float16 <<<"a" 2>"$work/err"; then
  fail "float16 on the CPU must be refused"
fi
grep -q "needs a GPU" "$work/err" || fail "float16 error: $(cat "$work/err")"
if "$bin/transerve-translate" --model_dir="$model" --cpu_isa=sse2 <<<"a" 2>"$work/err"; then
  fail "--cpu_isa=sse2 must be refused"
fi
grep -q "not one of this CPU's" "$work/err" || fail "sse2 error: $(cat "$work/err")"

TRANSERVE_CPU_ISA=avx2 "$bin/transerve-server" --model_dir="$model" --dtype=int8 \
  --host=127.0.0.1 --port=0 --metrics_port=0 --http_port=-1 --num_threads=2 \
  --drain_timeout=10s >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
grep -q "int8; CPU kernels avx2:" "$work/server.log" || fail "server log: $(grep ready "$work/server.log")"
"$bin/transerve-client" --target="$target" --list_models > "$work/models" || fail "list_models"
grep -qP '\tint8\t' "$work/models" || fail "ListModels dtype: $(cat "$work/models")"
# Eight callers at once, greedy and beam 4, unary and streaming: every answer is the one
# transerve-translate gave (int8 is the same at every level, so avx2 here).
pids=()
for i in 1 2 3 4 5 6 7 8; do
  beam=$(( i % 2 ? 1 : 4 ))
  stream=$([ $i -gt 4 ] && echo --stream || true)
  "$bin/transerve-client" --target="$target" --beam_size=$beam --max_length=32 $stream \
    < "$work/in.txt" > "$work/got.$i" 2>"$work/got.$i.err" &
  pids+=($!)
done
for i in 1 2 3 4 5 6 7 8; do
  wait "${pids[$((i - 1))]}" || fail "caller $i: $(cat "$work/got.$i.err")"
  beam=$(( i % 2 ? 1 : 4 ))
  cmp -s "$work/int8.$beam.avx2" "$work/got.$i" || fail "caller $i (beam $beam) differs"
done
metrics=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
  "http://127.0.0.1:$SERVING_METRICS_PORT/metrics") || fail "GET /metrics"
grep -q '^transerve_model_info{.*dtype="int8".*} 1$' <<<"$metrics" \
  || fail "model info: $(grep transerve_model_info <<<"$metrics")"
stop_server "$server_pid" "the server"
server_pid=""

# A level the CPU lacks from the environment stops the server at start with the reason.
rc=0
TRANSERVE_CPU_ISA=sse2 "$bin/transerve-server" --model_dir="$model" --port=0 --metrics_port=-1 \
  --http_port=-1 >"$work/bad.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "not one of this CPU's" "$work/bad.log" || fail "sse2 server: rc $rc $(tail -2 "$work/bad.log")"
echo "low_precision: OK"
