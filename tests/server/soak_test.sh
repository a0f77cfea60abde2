#!/usr/bin/env bash
# Soak (issue 8): the shipped default model under steady load for --seconds (10 minutes by
# default; the test command runs 60 s): unary calls (beam 4) and streams (greedy) side by side,
# below saturation. Every call sent is answered, and answered OK; the server's own count of OK
# answers equals the clients'; the resident size at the end is within 10 % of the one after
# warm-up (no leak growth). Prints the figures and writes them as JSON.
# Usage: soak_test.sh BIN_DIR SOURCE_DIR [--seconds=600] [--json=FILE]
set -euo pipefail
bin="$1"
src="$2"
shift 2
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
load_test_flags "soak_test.sh BIN_DIR SOURCE_DIR [--seconds=600] [--json=FILE]" 600 "$@"
model="$src/models/en-de-small"
input="$src/deploy/loadgen/sentences.en"
begin_server_test soak

"$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=-1 --http_port=-1 \
  --num_threads=1 >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
run() {  # NAME DURATION ARGS...: unary and streaming load side by side, reports NAME.{unary,stream}.json
  local name="$1" duration="$2" pids=() rc=0
  shift 2
  "$bin/transerve-loadgen" --target="$target" --input="$input" --order=random --warmup=0 \
    --duration="$duration" --concurrency=3 --beam_size=4 --max_length=48 --deadline=60 \
    --seed=1 --json="$work/$name.unary.json" >"$work/$name.unary.log" 2>&1 &
  pids+=($!)
  "$bin/transerve-loadgen" --target="$target" --input="$input" --order=random --warmup=0 \
    --duration="$duration" --concurrency=2 --beam_size=1 --max_length=48 --deadline=60 --stream \
    --seed=2 --json="$work/$name.stream.json" >"$work/$name.stream.log" 2>&1 &
  pids+=($!)
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  [ "$rc" = 0 ] || fail "loadgen ($name)"
  for kind in unary stream; do
    local f="$work/$name.$kind.json"
    [ "$(json_field "$f" 'j["sent"] == j["ok"] and not j["errors"] and j["skipped"] == 0')" = True ] \
      || fail "$name $kind: sent $(json_field "$f" 'j["sent"]'), ok $(json_field "$f" 'j["ok"]'), errors $(json_field "$f" 'j["errors"]')"
  done
}

warmup=$((seconds / 6 > 10 ? seconds / 6 : 10))
run warmup "$warmup"
rss_warm="$(rss_kb "$server_pid")"
: >"$work/rss.txt"
sample_rss "$server_pid" "$work/rss.txt" &
run soak "$seconds"
rss_end="$(rss_kb "$server_pid")"
rss_peak="$(max_in "$work/rss.txt")"
stop_server "$server_pid" "the server"
server_pid=""
server_ok="$(sed -n 's/.*stopped: .* OK=\([0-9]*\).*/\1/p' "$work/server.log")"
clients_ok="$(python3 -c "
import json, sys
print(sum(json.load(open(f'$work/{p}.{k}.json'))['ok'] for p in ('warmup', 'soak') for k in ('unary', 'stream')))")"
[ "$server_ok" = "$clients_ok" ] || fail "the server answered $server_ok OK, the clients got $clients_ok"
python3 - "$work" "$rss_warm" "$rss_end" "$rss_peak" "$seconds" "${json_out:-/dev/null}" <<'PY' \
  || fail "the resident size grew more than 10 % after warm-up"
import json, sys
work, warm, end, peak, seconds, out = sys.argv[1], *map(int, sys.argv[2:5]), int(sys.argv[5]), sys.argv[6]
u = json.load(open(f"{work}/soak.unary.json"))
s = json.load(open(f"{work}/soak.stream.json"))
r = {"seconds": seconds, "unary_calls": u["ok"], "stream_calls": s["ok"], "lost": 0,
     "unary_p99_seconds": u["latency_seconds"]["p99"], "stream_p99_seconds": s["latency_seconds"]["p99"],
     "rss_after_warmup_kib": warm, "rss_end_kib": end, "rss_peak_kib": peak,
     "rss_growth": end / warm - 1}
json.dump(r, open(out, "w"), indent=1)
print(f"soak: {seconds} s, {u['ok']} unary (beam 4) + {s['ok']} streamed (greedy) calls, all OK, none lost")
print(f"soak: p99 {u['latency_seconds']['p99'] * 1e3:.0f} ms unary, {s['latency_seconds']['p99'] * 1e3:.0f} ms streamed")
print(f"soak: resident {warm / 1024:.1f} MiB after warm-up, {end / 1024:.1f} MiB at the end "
      f"({100 * (end / warm - 1):+.1f} %), peak {peak / 1024:.1f} MiB")
sys.exit(0 if end <= 1.10 * warm else 1)
PY
echo "soak: OK"
