#!/usr/bin/env bash
# Regenerates the committed CTranslate2 golden fixtures under tests/fixtures/ct2/ (each a random
# TransformerSpec directory written by make_random_ct2_model.py plus expected.json computed by
# ct2_reference.py), then runs the CTranslate2 self-test. Deterministic: the same bytes come out
# on every run (make_ct2_fixtures.py starts each variant at a fixed seed and takes the first one
# that passes its robustness checks).
#   marian-like               post-norm, swish, stored Marian sinusoids, zero-embedding start,
#                             shared json vocabulary, shared + tied embeddings, float32
#   opennmt-like              pre-norm + final norms, relu, generated CT2 sinusoids, separate txt
#                             vocabularies, untied projection, some linears without bias, float32
#   gelu-layernorm-embedding  pre-norm, gelu (erf), layernorm_embedding, float scale 2.5,
#                             layer_norm_epsilon 1e-6, tied projection, float16
#   int8                      the opennmt-like layout stored as int8 (+ float32 weight_scale)
#   bfloat16                  the marian-like layout stored as bfloat16
#   marian-int8               the marian-like layout stored as int8 (aliases + `_scale` companions)
# Usage: tools/reference/regenerate_ct2_fixtures.sh [--check]   (about 40 s on 1 core)
#   --check: rebuild in a temporary directory and compare with the committed files instead
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
if [[ "${1:-}" == "--check" ]]; then
  "$PY" tools/reference/make_ct2_fixtures.py --check
else
  "$PY" tools/reference/make_ct2_fixtures.py
fi
"$PY" tools/reference/ct2_selftest.py
du -sh tests/fixtures/ct2/*
