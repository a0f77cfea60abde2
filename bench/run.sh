#!/usr/bin/env bash
# The benchmark suite in one command: everything BENCHMARKS.md reports that this machine can
# run. Writes JSON, plots (PNG) and summary.md to bench/results/, each figure with the machine
# and the command that produced it.
#   (a) engine tokens/s against batch size, greedy and beam 4, against the PyTorch reference
#   (b) server throughput-latency curves, static against continuous batching
#   (c) latency percentiles at 25/50/75% of the saturation rate (part of (b))
#   (d) server resident memory at idle and under load
#   and the load generator's own capacity against a server that only echoes.
# Usage: bench/run.sh [ROUNDS]   (engine rounds, default 3; about 25 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
OUT=bench/results
PY=/usr/bin/python3

./scripts/setup.sh --bench
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
mkdir -p "$OUT"

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
printf '{"cpu_model": "%s", "cores": %s, "date": "%s", "commit": "%s"}\n' \
  "$cpu" "$(nproc)" "$(date -u +%Y-%m-%d)" "$(git rev-parse --short HEAD)" > "$OUT/machine.json"
echo "machine: $cpu, $(nproc) cores"

echo "== (a) engine against the PyTorch reference"
bench/engine_bench.sh "$ROUNDS"
cp build/bench/engine/summary.json "$OUT/engine.json"

echo "== (b, c, d) server under load"
bench/server_bench.sh small
bench/server_bench.sh base

echo "== load generator capacity"
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
build/bin/transerve-echo-server --port="$port" >/dev/null &
echo_pid=$!
sleep 1
build/bin/transerve-loadgen --target="127.0.0.1:$port" --input=build/bench/server/sentences.txt \
  --concurrency=64 --duration=5 --warmup=1 --json="$OUT/loadgen_capacity.json"
kill "$echo_pid"
wait "$echo_pid" 2>/dev/null || true

$PY bench/plot.py "$OUT"
