#!/usr/bin/env bash
# Server benchmark: transerve-server under transerve-loadgen, static against continuous
# batching, on a mixed-length workload. For each mode: resident memory at idle, the closed-loop
# saturation throughput (64 calls in flight), an open-loop sweep at fixed fractions of the
# continuous mode's saturation rate (the throughput-latency curve; 25/50/75% are the latency
# table), and the peak resident memory under that load.
# Results: bench/results/server_SHAPE_MODE_{saturation,sweep,memory}.json.
#
# Models (tools/reference/make_random_model.py; random weights, SentencePiece vocabularies of
# 1,770 pieces, an EOS bias that makes outputs stop at varied lengths; requests cap outputs at
# 128 tokens; a model is rebuilt when its directory is removed):
#   small: the shape of the shipped default model (d_model 256, 3+3 layers, 4 heads, FFN 1024)
#   base:  the opus-mt shape (d_model 512, 6+6 layers, 8 heads, FFN 2048)
# Input: bench/make_sentences.py (log-normal sentence lengths, median 10 words).
# Usage: bench/server_bench.sh [small|base]   (about 4 minutes each; DURATION=S per run,
#        default 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
SHAPE=${1:-small}
OUT=bench/results
WORK=build/bench/server
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-3}
MODEL=$WORK/$SHAPE/model
SENTENCES=$WORK/sentences.txt
mkdir -p "$OUT" "$WORK/$SHAPE"

case "$SHAPE" in
  # EOS biases chosen so greedy outputs of the input have a mean of 24-30 tokens, a median of
  # 12-16 and a long tail (measured on the first 100-300 sentences).
  small) ARCH=(--d_model 256 --encoder_layers 3 --decoder_layers 3 --heads 4 --ffn 1024
               --eos_bias 8) ;;
  base) ARCH=(--d_model 512 --encoder_layers 6 --decoder_layers 6 --heads 8 --ffn 2048
              --eos_bias 14) ;;
  *) echo "server_bench: shape small or base" >&2; exit 2 ;;
esac
if [ ! -f "$MODEL/model.safetensors" ]; then
  $PY tools/reference/make_random_model.py --out "$MODEL" "${ARCH[@]}" --spm_vocab_size 1000 \
    --spm_lines 20000 --max_position_embeddings 512 --seed 3
fi
[ -f "$SENTENCES" ] || $PY bench/make_sentences.py --out "$SENTENCES"
cmake --build build --target transerve-server transerve-loadgen transerve-client >/dev/null

free_port() { $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
rss_mb() { awk '/^VmRSS/ { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status"; }

SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT

start_server() {  # MODE
  PORT=$(free_port)
  build/bin/transerve-server --model_dir="$MODEL" --batching="$1" --host=127.0.0.1 \
    --port="$PORT" --metrics_port=-1 --http_port=-1 --log_level=warn &
  SERVER_PID=$!
  for _ in $(seq 1 120); do
    if build/bin/transerve-client --target="127.0.0.1:$PORT" --list_models >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.5
  done
  echo "server_bench: the server did not come up" >&2
  exit 1
}

loadgen() {  # extra flags...
  build/bin/transerve-loadgen --target="127.0.0.1:$PORT" --input="$SENTENCES" --order=random \
    --beam_size=1 --max_length=128 --duration="$DURATION" --warmup="$WARMUP" --deadline=120 "$@"
}

SATURATION=""
for mode in continuous static; do
  echo "== $SHAPE model, $mode batching"
  start_server "$mode"
  idle=$(rss_mb "$SERVER_PID")
  loadgen --concurrency=64 --json="$OUT/server_${SHAPE}_${mode}_saturation.json"
  if [ -z "$SATURATION" ]; then
    SATURATION=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["requests_per_second"])' \
      "$OUT/server_${SHAPE}_continuous_saturation.json")
  fi
  # Both modes see the same offered rates: fractions of continuous batching's saturation.
  rates=$($PY -c 'import sys; s = float(sys.argv[1]); print(",".join(f"{s * f:.2f}" for f in (0.25, 0.5, 0.75, 1.0, 1.25)))' \
    "$SATURATION")
  peak_file=$(mktemp)
  echo "$idle" > "$peak_file"
  ( while kill -0 "$SERVER_PID" 2>/dev/null; do rss_mb "$SERVER_PID" >> "$peak_file" || true; sleep 0.5; done ) &
  sampler=$!
  loadgen --rate="$rates" --json="$OUT/server_${SHAPE}_${mode}_sweep.json"
  kill "$sampler" 2>/dev/null || true
  peak=$(sort -g "$peak_file" | tail -1)
  rm -f "$peak_file"
  printf '{"shape": "%s", "mode": "%s", "idle_rss_mb": %s, "peak_rss_mb_under_load": %s, "saturation_fractions": [0.25, 0.5, 0.75, 1.0, 1.25], "continuous_saturation_requests_per_second": %s}\n' \
    "$SHAPE" "$mode" "$idle" "$peak" "$SATURATION" > "$OUT/server_${SHAPE}_${mode}_memory.json"
  echo "$mode: resident memory idle ${idle} MB, peak under load ${peak} MB"
  stop_server
done
