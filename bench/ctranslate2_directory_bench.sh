#!/usr/bin/env bash
# transerve and CTranslate2 on the same CTranslate2 model directories, in one interleaved run:
# the anchor kit's comparison (the engine benchmark's work: opus-mt-en-de shape, 32 forced
# tokens, batch 1/8/32, greedy and beam 4), where the kit converts the model with CTranslate2's
# own converter steps into a float32 and an int8 directory, CTranslate2 runs them, and
# transerve-engine-bench loads the very same two directories directly (--model_dir at the
# directory: no conversion step on transerve's side), float32 as float32 and int8 as int8.
# Load time and resident memory come from the same runs (the kit's table). Without the kit this
# prints why and exits 0.
#
#   bench/ctranslate2_directory_bench.sh [KIT_DIR] [ROUNDS]
#     KIT_DIR: the kit (default $CT2_KIT, else ../shared/anchors/ctranslate2 beside the checkout)
#     results: build/bench/ctranslate2_directory/{summary.md,summary.json} (the kit's table)
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench/ctranslate2_directory
name=ctranslate2_directory_bench
# shellcheck source=ctranslate2_kit.sh
. bench/ctranslate2_kit.sh
# Where the kit keeps its conversions of this model (its own naming), made here first with the
# kit's converter so that both engines are pointed at them from the first round.
models="$work/models/$($PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import compare; print(compare.model_key(sys.argv[2]))' "$kit" "$model")"
for q in float32 int8; do
  dir="$models/ct2-$([ $q = float32 ] && echo fp32 || echo $q)"
  if [ ! -f "$dir/model.bin" ]; then
    rm -rf "$dir.tmp"
    PYTHONPATH="$work/pylib-dnnl" $PY "$kit/convert.py" --model_dir "$model" --out "$dir.tmp" \
      $([ $q = int8 ] && echo --quantization int8) > /dev/null
    mv "$dir.tmp" "$dir"
  fi
done
rm -rf "$out/run"
$PY "$kit/compare.py" --transerve_bench build/bin/transerve-engine-bench --model_dir "$model" \
  --workdir "$work" --rounds "$rounds" --out "$out/run" \
  --transerve_args="--model_dir=$models/ct2-fp32 --dtype=float32" \
  --transerve_args="--model_dir=$models/ct2-int8 --dtype=int8"
cp "$out/run/summary.md" "$out/run/summary.json" "$out/"
