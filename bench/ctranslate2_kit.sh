# Sourced by the benches that run the CTranslate2 anchor kit's compare.py: reads [KIT_DIR]
# [ROUNDS] from the caller's arguments ($1, $2), exits 0 with the reason when the kit is absent,
# builds CTranslate2 (idempotent) and transerve-engine-bench, and makes the opus-mt-en-de-shaped
# random model both engines run. Sets kit, rounds, work, model and PY; the caller sets `out`
# first (its results folder) and `name` (for the message).
kit="${1:-${CT2_KIT:-../shared/anchors/ctranslate2}}"
rounds="${2:-3}"
if [ ! -f "$kit/compare.py" ] || [ ! -f "$kit/build.sh" ]; then
  echo "$name: no CTranslate2 kit at $kit (compare.py, build.sh): skipped"
  exit 0
fi
work="${CT2_WORKDIR:-build/bench/ctranslate2-build}"
model=build/bench/engine/opus-mt-en-de-shape
PY=/usr/bin/python3
mkdir -p "$out"
"$kit/build.sh" "$work"  # idempotent: a built CTranslate2 is reused
cmake --build build --target transerve-engine-bench >/dev/null
if [ ! -f "$model/model.safetensors" ]; then
  $PY tools/reference/make_random_model.py --out "$model" --d_model 512 --encoder_layers 6 \
    --decoder_layers 6 --heads 8 --ffn 2048 --vocab 58101 --max_position_embeddings 512 --seed 1
fi
