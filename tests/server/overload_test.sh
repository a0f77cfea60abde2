#!/usr/bin/env bash
# Overload and SIGTERM under load, through the real binaries and the shipped default model
# (issue 8). One server (one compute thread, so the load generator has a core of its own):
#   1. saturation: a closed loop at the batch size (full batches, nothing queued) for a few
#      seconds gives the saturation rate X and L, the p99 latency of a full batch;
#   2. overload: an open loop at 3X for --seconds with a per-call deadline. Every call ends OK,
#      RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED, each by its deadline; the p99 of the OK calls
#      stays within the queue budget (--max_queue_wait) plus 2L; the peak resident size stays
#      within twice the saturated one; nothing is skipped;
#   3. SIGTERM at 0.7X: the server drains and exits 0, and every call it accepted was answered
#      OK (its stop line holds OK alone); the load generator's failures are only calls refused
#      once the listener closed (UNAVAILABLE) and gRPC 1.51's shutdown race (CANCELLED, at most
#      1 %, docs/server.md). Over all three phases the server's OK count equals the clients'.
# Prints a table and writes the figures as JSON.
# Usage: overload_test.sh BIN_DIR SOURCE_DIR [--seconds=60] [--json=FILE]
set -euo pipefail
bin="$1"
src="$2"
shift 2
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
load_test_flags "overload_test.sh BIN_DIR SOURCE_DIR [--seconds=60] [--json=FILE]" 60 "$@"
model="$src/models/en-de-small"
input="$src/deploy/loadgen/sentences.en"
queue_budget=1 # seconds: --max_queue_wait
batch=16
begin_server_test overload
py() { python3 -c "import sys; print($1)"; }

"$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=-1 --http_port=-1 \
  --num_threads=1 --max_batch_sequences=$batch --max_queue=1024 --max_queue_wait=${queue_budget}s \
  --drain_timeout=30s >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
sample_rss "$server_pid" "$work/rss.txt" &
loadgen() {  # NAME ARGS...: one run, its report in $work/NAME.json
  local name="$1"
  shift
  "$bin/transerve-loadgen" --target="$target" --input="$input" --order=random --warmup=0 \
    --max_length=32 --beam_size=1 --json="$work/$name.json" "$@" >"$work/$name.log" 2>&1 \
    || fail "loadgen $name"
}

# --- 1. saturation --------------------------------------------------------------------------
loadgen saturation --concurrency=$batch --duration=8
rate="$(json_field "$work/saturation.json" 'j["requests_per_second"]')"
full_batch_p99="$(json_field "$work/saturation.json" 'j["latency_seconds"]["p99"]')"
rss_saturated="$(rss_kb "$server_pid")"
echo "overload: saturation $rate calls/s, p99 of a full batch ${full_batch_p99} s"

# --- 2. three times the saturation rate -----------------------------------------------------
overload_rate="$(py "round(3 * $rate, 2)")"
deadline="$(py "round($queue_budget + 3 * $full_batch_p99 + 1, 2)")"
: >"$work/rss.txt"
loadgen overload --rate="$overload_rate" --duration="$seconds" --deadline="$deadline"
rss_peak="$(max_in "$work/rss.txt")"
o="$work/overload.json"
sent="$(json_field "$o" 'j["sent"]')"
answered="$(json_field "$o" 'j["ok"] + sum(j["errors"].values())')"
[ "$sent" = "$answered" ] || fail "overload: $sent sent, $answered answered"
[ "$(json_field "$o" 'j["skipped"]')" = 0 ] || fail "overload: calls skipped by the client"
other="$(json_field "$o" \
  'sum(n for c, n in j["errors"].items() if c not in ("RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"))')"
[ "$other" = 0 ] || fail "overload: statuses other than OK, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED: $(json_field "$o" 'j["errors"]')"
slowest="$(json_field "$o" 'j["answer_any_status_seconds"]["max"]')"
# The deadline is enforced by the client's own timer too: allow it a scheduling instant.
[ "$(py "$slowest <= $deadline + 0.25")" = True ] || fail "overload: an answer took $slowest s (deadline $deadline s)"
ok_p99="$(json_field "$o" 'j["latency_seconds"]["p99"]')"
# A sentence waits at most the queue budget to be admitted, then decodes beside a full batch (L at
# p99); a second L and 50 ms absorb the noise of a shared machine, where the load generator
# shares the two cores at three times the saturation rate (its own lag before a call leaves,
# counted from the call's due time, reached 40 ms beyond 2L in runs on such a machine).
budget="$(py "round($queue_budget + 2 * $full_batch_p99 + 0.05, 3)")"
[ "$(py "$ok_p99 <= $budget")" = True ] || fail "overload: p99 of OK calls $ok_p99 s over the budget $budget s"
[ "$(py "$rss_peak <= 2 * $rss_saturated")" = True ] || fail "overload: peak RSS $rss_peak KiB, saturated $rss_saturated KiB"
[ "$(json_field "$o" 'j["ok"]')" -gt 0 ] || fail "overload: nothing was served"

# --- 3. SIGTERM under load -------------------------------------------------------------------
term_rate="$(py "round(0.7 * $rate, 2)")"
"$bin/transerve-loadgen" --target="$target" --input="$input" --order=random --warmup=0 \
  --max_length=32 --beam_size=1 --rate="$term_rate" --duration=8 --deadline=30 \
  --json="$work/sigterm.json" >"$work/sigterm.log" 2>&1 &
loadgen_pid=$!
sleep 3
kill -TERM "$server_pid"
rc=0
wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" = 0 ] || fail "the server exited $rc after SIGTERM"
wait "$loadgen_pid" || true # it reports the refused calls as errors
stop_line="$(grep "stopped:" "$work/server.log")" || fail "no stop line"
server_ok="$(sed -n 's/.* OK=\([0-9]*\).*/\1/p' <<<"$stop_line")"
s="$work/sigterm.json"
lost_by_server="$(sed -n 's/.* UNAVAILABLE=\([0-9]*\).*/\1/p' <<<"$stop_line")"
[ -z "$lost_by_server" ] || fail "the server cut $lost_by_server accepted calls short: $stop_line"
clients_ok="$(py "$(json_field "$work/saturation.json" 'j["ok"]') + $(json_field "$o" 'j["ok"]') + $(json_field "$s" 'j["ok"]')")"
[ "$server_ok" = "$clients_ok" ] || fail "the server answered $server_ok OK, the clients got $clients_ok"
sigterm_other="$(json_field "$s" \
  'sum(n for c, n in j["errors"].items() if c not in ("UNAVAILABLE", "CANCELLED"))')"
[ "$sigterm_other" = 0 ] || fail "SIGTERM: unexpected statuses $(json_field "$s" 'j["errors"]')"
sigterm_sent="$(json_field "$s" 'j["sent"]')"
cancelled="$(json_field "$s" 'j["errors"].get("CANCELLED", 0)')"
[ $((cancelled * 100)) -le "$sigterm_sent" ] || fail "SIGTERM: $cancelled of $sigterm_sent calls CANCELLED"
# The calls in flight at the signal were answered OK: the run kept succeeding until the stop.
[ "$(json_field "$s" 'j["ok"]')" -gt 0 ] || fail "SIGTERM: no call succeeded"

# --- report ------------------------------------------------------------------------------------
report="$work/report.json"
python3 - "$work" "$report" <<EOF
import json, sys
work, out = sys.argv[1], sys.argv[2]
sat, over, term = (json.load(open(f"{work}/{n}.json")) for n in ("saturation", "overload", "sigterm"))
r = {
    "saturation_calls_per_second": sat["requests_per_second"],
    "full_batch_p99_seconds": $full_batch_p99,
    "overload_rate": $overload_rate, "overload_seconds": $seconds, "deadline_seconds": $deadline,
    "queue_budget_seconds": $queue_budget,
    "overload_sent": over["sent"], "overload_ok": over["ok"], "overload_errors": over["errors"],
    "overload_ok_p99_seconds": over["latency_seconds"]["p99"],
    "overload_slowest_answer_seconds": over["answer_any_status_seconds"]["max"],
    "rss_saturated_kib": $rss_saturated, "rss_peak_kib": $rss_peak,
    "sigterm_sent": term["sent"], "sigterm_ok": term["ok"], "sigterm_errors": term["errors"],
    "server_stop_line": """$stop_line""".split("stopped: ")[1],
    "accepted_calls_lost": 0,
}
json.dump(r, open(out, "w"), indent=1)
print("| phase | calls | OK | other statuses | figure |")
print("|---|---|---|---|---|")
print(f"| saturation (closed, {$batch}) | {sat['sent']} | {sat['ok']} | {sat['errors'] or '-'} | {sat['requests_per_second']:.1f} calls/s, p99 {$full_batch_p99 * 1e3:.0f} ms |")
print(f"| 3x overload ({$overload_rate}/s, {$seconds} s) | {over['sent']} | {over['ok']} | {over['errors']} | OK p99 {over['latency_seconds']['p99'] * 1e3:.0f} ms (budget {$budget * 1e3:.0f}), slowest answer {over['answer_any_status_seconds']['max']:.2f} s (deadline {$deadline}) |")
print(f"| SIGTERM at {$term_rate}/s | {term['sent']} | {term['ok']} | {term['errors'] or '-'} | server: {r['server_stop_line']} |")
print(f"resident size: {$rss_saturated / 1024:.0f} MiB saturated, {$rss_peak / 1024:.0f} MiB peak under overload")
EOF
[ -z "$json_out" ] || cp "$report" "$json_out"
echo "overload: OK"
