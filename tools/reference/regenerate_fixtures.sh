#!/usr/bin/env bash
# Regenerates the committed golden fixtures (model + expected.json) under tests/fixtures/:
#   tiny-marian          d_model 64, 2+3 layers, 4 heads, FFN 128, swish, F32, shared+tied embeddings
#   tiny-marian-variant  d_model 64, 3+2 layers, 2 heads, FFN 96, gelu, F16 weights (F32 stored
#                        position tables), separate encoder/decoder embeddings, untied lm_head,
#                        non-zero decoder <pad> row (the start token's embedding)
# then runs the reference self-test. Deterministic: the same files come out on every run
# (first_seed is the seed that the search of make_fixtures.py settled on; it tries the next
# seeds if that one no longer passes the robustness checks).
# Usage: tools/reference/regenerate_fixtures.sh        (about 3 minutes on 1 core)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3

"$PY" tools/reference/make_fixtures.py --name tiny-marian --max_length 32 --first_seed 5 -- \
  --d_model 64 --encoder_layers 2 --decoder_layers 3 --heads 4 --ffn 128 --activation swish \
  --dtype f32 --max_position_embeddings 256 --eos_bias 4

"$PY" tools/reference/make_fixtures.py --name tiny-marian-variant --max_length 32 --first_seed 2 -- \
  --d_model 64 --encoder_layers 3 --decoder_layers 2 --heads 2 --ffn 96 --activation gelu \
  --dtype f16 --max_position_embeddings 256 --embed_positions --no_share_embeddings --no_tie \
  --nonzero_decoder_pad_row --eos_bias 4

# The pytorch_model.bin twins of the models above (tests/fixtures/pytorch/).
"$PY" tools/reference/make_pytorch_checkpoints.py

"$PY" tools/reference/selftest.py
du -sh tests/fixtures/tiny-marian tests/fixtures/tiny-marian-variant
