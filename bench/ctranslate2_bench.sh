#!/usr/bin/env bash
# transerve beside CTranslate2 on the CPU, every weight format, in one interleaved run: the
# engine benchmark's work (opus-mt-en-de shape, 32 forced tokens, batch 1/8/32, greedy and
# beam 4) run by transerve-engine-bench at --dtype float32, bfloat16 and int8 (bfloat16 and int8
# also as two replicas of one thread, --replicas=2 --threads=1), and by CTranslate2 float32 and
# int8 at 1 thread, 2 threads and 2 workers of 1 thread, one process per configuration, rounds
# interleaved. CTranslate2 comes from the anchor kit (a source snapshot with a one-command build
# and the driver that runs it); without the kit this prints why and exits 0.
#
#   bench/ctranslate2_bench.sh [KIT_DIR] [ROUNDS]
#     KIT_DIR: the kit (default $CT2_KIT, else ../shared/anchors/ctranslate2 beside the checkout)
#     results: build/bench/ctranslate2/{summary.md,summary.json} (the kit's full table) and
#              build/bench/ctranslate2/dtypes.{md,json} (this script's table with the ratios)
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench/ctranslate2
name=ctranslate2_bench
# shellcheck source=ctranslate2_kit.sh
. bench/ctranslate2_kit.sh
rm -rf "$out/run"
$PY "$kit/compare.py" --transerve_bench build/bin/transerve-engine-bench --model_dir "$model" \
  --workdir "$work" --rounds "$rounds" --out "$out/run" \
  --transerve_args="--dtype=float32" --transerve_args="--dtype=bfloat16" \
  --transerve_args="--dtype=int8" \
  --transerve_args="--dtype=bfloat16 --threads=1 --replicas=2" \
  --transerve_args="--dtype=int8 --threads=1 --replicas=2"
cp "$out/run/summary.md" "$out/run/summary.json" "$out/"
$PY bench/summarize_ctranslate2.py "$out/summary.json" --md "$out/dtypes.md" --json "$out/dtypes.json"
