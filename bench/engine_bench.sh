#!/usr/bin/env bash
# Engine throughput, transerve beside the PyTorch reference, on the same random model with the
# opus-mt-en-de shape (d_model 512, 6+6 layers, 8 heads, FFN 2048, vocab 58101) and the same
# source ids, forced output length. Runs are interleaved (C++, PyTorch, C++, ...) one process per
# configuration, and the median of the rounds is reported with the ratio.
#
#   bench/engine_bench.sh [ROUNDS]        (results: build/bench/engine/summary.{md,json})
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${1:-3}"
out=build/bench/engine
model="$out/opus-mt-en-de-shape"
sources="$out/sources.json"
mkdir -p "$out"
rm -f "$out"/transerve_*.json "$out"/reference_*.json  # a run summarises only its own rounds
PY=/usr/bin/python3

# Both engines run OpenBLAS; give both the kernel family the CPU supports (OpenBLAS 0.3.21
# misdetects some CPUs as Prescott; transerve fixes that itself, PyTorch does not).
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo)
  case "$flags" in
    *avx512_bf16*) export OPENBLAS_CORETYPE=Cooperlake ;;
    *avx512f*) export OPENBLAS_CORETYPE=SkylakeX ;;
    *avx2*) export OPENBLAS_CORETYPE=Haswell ;;
  esac
fi
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"

cmake --build build --target transerve-engine-bench >/dev/null
if [ ! -f "$model/model.safetensors" ]; then
  $PY tools/reference/make_random_model.py --out "$model" --d_model 512 --encoder_layers 6 \
    --decoder_layers 6 --heads 8 --ffn 2048 --vocab 58101 --max_position_embeddings 512 --seed 1
fi
if [ ! -f "$sources" ]; then
  # 32 random sources of 24 ids + EOS (id 0), never pad (58100): the same for both engines.
  $PY -c 'import json, random; r = random.Random(1234)
print(json.dumps({"sources": [[r.randrange(1, 58100) for _ in range(24)] + [0] for _ in range(32)]}))' \
    > "$sources"
fi

for round in $(seq 1 "$rounds"); do
  for search in greedy beam4; do
    for batch in 1 8 32; do
      tag="${batch}_${search}_${round}"
      echo "round $round: batch $batch $search"
      build/bin/transerve-engine-bench --model_dir="$model" --sources_file="$sources" \
        --dtype=float32 --batch_sizes="$batch" --searches="$search" --target_length=32 --repeats=1 \
        --json="$out/transerve_$tag.json" | tail -n +2 | head -1
      $PY bench/reference_bench.py --model_dir "$model" --source_ids_file "$sources" \
        --batch_sizes "$batch" --search "$search" --target_length 32 --repeats 1 \
        --json "$out/reference_$tag.json" | tail -3
    done
  done
done
$PY bench/summarize_engine_bench.py "$out" | tee "$out/summary.md"
