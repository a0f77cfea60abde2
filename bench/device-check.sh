#!/usr/bin/env bash
# One run on a lent GPU machine (docs/cuda.md): builds with the CUDA plugin; runs the CUDA
# tests (under compute-sanitizer memcheck when present), the engine benchmark on the GPU
# (float32 and float16) and the server under loadgen on the GPU; prints a short table last.
# Full output goes to OUT (default build/device-check/). Must stay well under 8 minutes.
# Usage: bench/device-check.sh [OUT]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${1:-build/device-check}
mkdir -p "$OUT"
start=$(date +%s)
summary=()

step() {  # NAME COMMAND...
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  if "$@" > "$OUT/$name.log" 2>&1; then
    summary+=("$(printf '%-28s ok     %4ss' "$name" $(( $(date +%s) - t0 )))")
  else
    summary+=("$(printf '%-28s FAILED %4ss  (see %s)' "$name" $(( $(date +%s) - t0 )) "$OUT/$name.log")")
  fi
}

step gpu "nvidia-smi" --query-gpu=name,driver_version,memory.total --format=csv
step configure cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRANSERVE_CUDA=ON
step build cmake --build build
step cuda-tests ctest --test-dir build -R Cuda --output-on-failure
if command -v compute-sanitizer >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  step memcheck "$sanitizer" --tool memcheck --error-exitcode 1 build/tests/cuda_plugin_test \
    --gtest_filter='*SelfTest*:CudaOpsTest.*:CudaStreams.*'
fi
# The engine on the GPU, float32, opus-mt-en-de shape (the model engine_bench.sh generates).
model=build/bench/engine/opus-mt-en-de-shape
if [ ! -f "$model/model.safetensors" ]; then
  step model /usr/bin/python3 tools/reference/make_random_model.py --out "$model" --d_model 512 \
    --encoder_layers 6 --decoder_layers 6 --heads 8 --ffn 2048 --vocab 58101 \
    --max_position_embeddings 512 --seed 1
fi
for dtype in float32 float16; do
  step "engine-gpu-$dtype" timeout 150 build/bin/transerve-engine-bench --model_dir="$model" \
    --device=cuda --dtype="$dtype" --batch_sizes=1,32,128 --searches=greedy,beam4 --repeats=1 \
    --json="$OUT/engine_gpu_$dtype.json"
done
# The server under loadgen on the GPU: the shipped model, float16 (the GPU default), greedy.
step server-gpu env DURATION=15 bench/server_device_check.sh models/en-de-small cuda "$OUT/server"

echo
echo "device check ($(( $(date +%s) - start )) s), logs in $OUT:"
head -2 "$OUT/gpu.log" 2>/dev/null | tail -1
printf '%s\n' "${summary[@]}"
grep -h -E "Skipped|device auto|sentences with the|float16" "$OUT/cuda-tests.log" 2>/dev/null | head -8
for dtype in float32 float16; do
  echo "engine on the GPU, $dtype (target tok/s):"
  grep -E "^(1|32|128) " "$OUT/engine-gpu-$dtype.log" 2>/dev/null
done
echo "server on the GPU (models/en-de-small, float16, greedy, closed loop):"
grep -E "^(concurrency|64 |256 )" "$OUT/server-gpu.log" 2>/dev/null
