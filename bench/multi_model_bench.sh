#!/usr/bin/env bash
# Several models in one server (issue 16), two figures:
#  1. Throughput of 1, 2 and 4 models under the same total load: CONCURRENCY calls in flight in
#     all, split evenly over the models (one transerve-loadgen per model, run at once), greedy.
#  2. Fairness: the latency of light interactive calls (open loop, RATE single-sentence calls
#     per second) to model m2, alone and while model m1 is saturated by bulk load
#     (BULK_CONCURRENCY calls in flight, 4 sentences each), in the same server.
# Each configuration is measured in every round, rounds interleaved (the machine is shared and
# noisy); the table gives medians over the rounds and ratios.
# Models: copies (symlinks, named m1..m4) of the shipped models/en-de-small, which is what a
# user would serve; input: bench/make_sentences.py. Engine threads: every core.
# Results: bench/results/multi_model.json and a table on stdout.
# Usage: bench/multi_model_bench.sh   (DURATION=S per run, default 15; ROUNDS=N, default 3;
#        about 4 minutes per round)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
OUT=bench/results
WORK=build/bench/multi_model
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-3}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-16}
RATE=${RATE:-4}
BULK_CONCURRENCY=${BULK_CONCURRENCY:-16}
SENTENCES=$WORK/sentences.txt
SERVER=${SERVER:-build/bin/transerve-server}  # another build of it, to compare two
mkdir -p "$OUT" "$WORK/runs"
for i in 1 2 3 4; do ln -sfn "$PWD/models/en-de-small" "$WORK/m$i"; done
[ -f "$SENTENCES" ] || $PY bench/make_sentences.py --out "$SENTENCES"
cmake --build build --target transerve-server transerve-loadgen transerve-client >/dev/null

free_port() { $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT

start_server() {  # N: serves m1..mN
  local dirs="" i
  for i in $(seq 1 "$1"); do dirs="$dirs${dirs:+,}$WORK/m$i"; done
  PORT=$(free_port)
  "$SERVER" --model_dir="$dirs" --host=127.0.0.1 --port="$PORT" \
    --metrics_port=-1 --http_port=-1 --log_level=warn &
  SERVER_PID=$!
  for _ in $(seq 1 120); do
    if build/bin/transerve-client --target="127.0.0.1:$PORT" --list_models >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.5
  done
  echo "multi_model_bench: the server did not come up" >&2
  exit 1
}

loadgen() {  # MODEL JSON extra flags...
  local model="$1" json="$2"
  shift 2
  build/bin/transerve-loadgen --target="127.0.0.1:$PORT" --input="$SENTENCES" --order=random \
    --model="$model" --beam_size=1 --max_length=64 --duration="$DURATION" --warmup="$WARMUP" \
    --deadline=120 --json="$json" "$@" >/dev/null
}

for round in $(seq 1 "$ROUNDS"); do
  for n in 1 2 4; do
    echo "round $round: $n model(s), $CONCURRENCY calls in flight in all"
    start_server "$n"
    pids=()
    for i in $(seq 1 "$n"); do
      loadgen "m$i" "$WORK/runs/throughput_n${n}_m${i}_r${round}.json" \
        --concurrency=$((CONCURRENCY / n)) --seed="$((round * 10 + i))" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    stop_server
    if [ "$n" -gt 1 ]; then
      # The reference for n models: one model at the load each of them gets (its batches are
      # as small as theirs), so that what sharing the cores costs is told apart from what
      # smaller batches cost.
      echo "round $round: 1 model, $((CONCURRENCY / n)) calls in flight (reference for $n)"
      start_server 1
      loadgen m1 "$WORK/runs/reference_n${n}_r${round}.json" \
        --concurrency=$((CONCURRENCY / n)) --seed="$((round * 10))"
      stop_server
    fi
  done
  echo "round $round: fairness, $RATE calls/s to m2 alone, then beside bulk load on m1"
  start_server 2
  loadgen m2 "$WORK/runs/fair_alone_r${round}.json" --rate="$RATE" --seed="$round"
  loadgen m1 "$WORK/runs/fair_bulk_r${round}.json" --concurrency="$BULK_CONCURRENCY" \
    --sentences_per_request=4 --duration=$((DURATION + 2 * WARMUP)) --seed="$round" &
  bulk=$!
  sleep "$WARMUP"
  loadgen m2 "$WORK/runs/fair_loaded_r${round}.json" --rate="$RATE" --seed="$round"
  wait "$bulk"
  stop_server
done

$PY - "$WORK/runs" "$ROUNDS" "$OUT/multi_model.json" "$CONCURRENCY" "$RATE" \
  "$BULK_CONCURRENCY" <<'EOF'
import json, os, statistics, sys
runs, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
concurrency, rate, bulk = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
load = lambda name: json.load(open(os.path.join(runs, name)))
def errors(j):
    return sum(j.get("errors", {}).values())
result = {"concurrency": concurrency, "rounds": rounds, "throughput": {}, "fairness": {}}
print(f"\nTotal throughput, {concurrency} calls in flight split over the models (medians of {rounds})")
print("| models | sentences/s | target tokens/s | vs 1 model | 1 model at the same load per model | vs it | p99 latency (s) | errors |")
print("|---|---|---|---|---|---|---|---|")
base = None
for n in (1, 2, 4):
    tok, sent, p99, err = [], [], [], 0
    for r in range(1, rounds + 1):
        parts = [load(f"throughput_n{n}_m{i}_r{r}.json") for i in range(1, n + 1)]
        tok.append(sum(p["target_tokens_per_second"] for p in parts))
        sent.append(sum(p.get("sentences_per_second", p["requests_per_second"]) for p in parts))
        p99.append(max(p["latency_seconds"]["p99"] for p in parts))
        err += sum(errors(p) for p in parts)
    t = statistics.median(tok)
    base = base or t
    ref = t if n == 1 else statistics.median(
        load(f"reference_n{n}_r{r}.json")["target_tokens_per_second"] for r in range(1, rounds + 1))
    result["throughput"][str(n)] = {"target_tokens_per_second": t,
                                    "sentences_per_second": statistics.median(sent),
                                    "p99_seconds": statistics.median(p99), "errors": err,
                                    "ratio_to_one_model": t / base,
                                    "one_model_at_the_same_load_per_model": ref,
                                    "ratio_to_that": t / ref, "per_round": tok}
    print(f"| {n} | {statistics.median(sent):.1f} | {t:.0f} | {t / base:.2f}x | {ref:.0f} | "
          f"{t / ref:.2f}x | {statistics.median(p99):.3f} | {err} |")
alone = [load(f"fair_alone_r{r}.json") for r in range(1, rounds + 1)]
loaded = [load(f"fair_loaded_r{r}.json") for r in range(1, rounds + 1)]
bulk_runs = [load(f"fair_bulk_r{r}.json") for r in range(1, rounds + 1)]
print(f"\nInteractive calls to m2 ({rate}/s, 1 sentence), alone and beside m1 saturated "
      f"({bulk} calls of 4 sentences in flight); medians of {rounds}")
print("| m2's latency | alone | beside bulk load | ratio |")
print("|---|---|---|---|")
for q in ("p50", "p90", "p99"):
    a = statistics.median(j["latency_seconds"][q] for j in alone)
    b = statistics.median(j["latency_seconds"][q] for j in loaded)
    result["fairness"][q] = {"alone_seconds": a, "loaded_seconds": b, "ratio": b / a}
    print(f"| {q} | {a * 1000:.1f} ms | {b * 1000:.1f} ms | {b / a:.2f}x |")
result["fairness"]["per_round_p99_ratio"] = [
    l["latency_seconds"]["p99"] / a["latency_seconds"]["p99"] for a, l in zip(alone, loaded)]
result["fairness"]["bulk_target_tokens_per_second"] = statistics.median(
    j["target_tokens_per_second"] for j in bulk_runs)
result["fairness"]["errors"] = sum(errors(j) for j in alone + loaded + bulk_runs)
print(f"bulk load on m1 meanwhile: {result['fairness']['bulk_target_tokens_per_second']:.0f} "
      f"target tokens/s; errors in all fairness runs: {result['fairness']['errors']}")
json.dump(result, open(out, "w"), indent=2)
print(f"wrote {out}")
EOF
