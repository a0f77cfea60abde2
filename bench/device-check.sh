#!/usr/bin/env bash
# One run on a lent GPU machine (docs/cuda.md): the CUDA tests (under compute-sanitizer memcheck
# when present), the engine benchmark on the GPU (float32 and float16, opus-mt-en-de shape) and
# the server under loadgen on the GPU; prints a short table last. Must stay well under 8
# minutes. Full output goes to OUT (default build/device-check/).
#
# The GPU machine cannot build the project (it has none of our Debian packages), so the binaries
# come from here: run bench/device-bundle.sh first and carry build/device-bundle.tar.xz. Without
# a bundle the script configures and builds (a machine with the Debian stack and a GPU).
# Usage: [PY=python3] bench/device-check.sh [OUT]
#   ENGINE_MODEL, BATCHES, SERVER_MODEL, DURATION: smaller runs (a dry run on the emulator).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${1:-build/device-check}
PY=${PY:-python3}
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

# The directory holding `library` on this machine, from the loader's cache or the CUDA trees.
library_dir() {
  local path
  path=$(ldconfig -p | awk -v lib="$1" '$1 == lib {print $NF; exit}')
  [ -n "$path" ] || path=$(find /usr/local /usr/lib /opt -name "$1" -print -quit 2>/dev/null)
  [ -n "$path" ] && dirname "$path"
}

# The bundle's binaries find their own libraries first, then the machine's cuBLAS; the C and
# C++ runtimes are the machine's.
use_bundle() {
  local bundle=$PWD/build/device-bundle system_cxx needed cublas
  tar -C build -xJf build/device-bundle.tar.xz || return 1
  LD_LIBRARY_PATH=$bundle/lib
  cublas=$(library_dir libcublas.so.13) && LD_LIBRARY_PATH+=:$cublas
  export LD_LIBRARY_PATH
  system_cxx=$(ldconfig -p | awk '$1 == "libstdc++.so.6" {print $NF; exit}')
  needed=$(cat "$bundle/GLIBCXX")
  if [ -z "$system_cxx" ] || ! grep -qa "$needed" "$system_cxx"; then
    echo "this machine's libstdc++ (${system_cxx:-none}) lacks $needed: the binaries cannot run"
    return 1
  fi
  # The tests read fixtures under the source directory compiled into them.
  local src
  src=$(cat "$bundle/SOURCE_DIR")
  if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
  fi
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH; sources at $src"
}

step gpu nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
if [ -f build/device-bundle.tar.xz ]; then
  step bundle use_bundle  # a function: its exports stay in this shell
  BIN=build/device-bundle/bin
  TESTS=build/device-bundle/bin
else
  step configure cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRANSERVE_CUDA=ON
  # Only what the steps below run: the whole tree (fuzzers, CPU tests) would cost GPU minutes.
  step build cmake --build build --target transerve_cuda cuda_plugin_test \
    transerve-engine-bench transerve-server transerve-client transerve-loadgen
  BIN=build/bin
  TESTS=build/tests
fi
step cuda-tests "$TESTS/cuda_plugin_test"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$sanitizer" ]; then
  step memcheck "$sanitizer" --tool memcheck --error-exitcode 1 "$TESTS/cuda_plugin_test" \
    --gtest_filter='*SelfTest*:CudaOpsTest.*:CudaStreams.*'
fi
# The engine on the GPU, opus-mt-en-de shape (the model engine_bench.sh generates).
model=${ENGINE_MODEL:-build/bench/engine/opus-mt-en-de-shape}
if [ ! -f "$model/model.safetensors" ]; then
  step model "$PY" tools/reference/make_random_model.py --out "$model" --d_model 512 \
    --encoder_layers 6 --decoder_layers 6 --heads 8 --ffn 2048 --vocab 58101 \
    --max_position_embeddings 512 --seed 1
fi
for dtype in float32 float16; do
  step "engine-gpu-$dtype" timeout 150 "$BIN/transerve-engine-bench" --model_dir="$model" \
    --device=cuda --dtype="$dtype" --batch_sizes="${BATCHES:-1,32,128,256}" \
    --searches=greedy,beam4 --repeats=1 --json="$OUT/engine_gpu_$dtype.json"
done
# The server under loadgen on the GPU: the shipped model, float16 (the GPU default), greedy.
step server-gpu env DURATION="${DURATION:-15}" BIN="$BIN" PY="$PY" \
  bench/server_device_check.sh "${SERVER_MODEL:-models/en-de-small}" cuda "$OUT/server"

echo
echo "device check ($(( $(date +%s) - start )) s), logs in $OUT:"
head -2 "$OUT/gpu.log" 2>/dev/null | tail -1
printf '%s\n' "${summary[@]}"
grep -m1 -h -E "device (auto|cuda):" "$OUT/cuda-tests.log" 2>/dev/null
grep -h -E "^\[  (PASSED|FAILED) |^\[  SKIPPED \] [0-9]|sentences with the|logits within" \
  "$OUT/cuda-tests.log" 2>/dev/null
for dtype in float32 float16; do
  echo "engine on the GPU, $dtype (target tok/s):"
  grep -E "^(1|32|128|256) |^CUDA " "$OUT/engine-gpu-$dtype.log" 2>/dev/null
done
echo "server on the GPU (models/en-de-small, float16, greedy, closed loop):"
grep -E "^(concurrency|64 |256 )" "$OUT/server-gpu.log" 2>/dev/null
