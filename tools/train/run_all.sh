#!/usr/bin/env bash
# The whole en-de-small recipe in one resumable command:
#   spm -> train (resumes from the latest checkpoint) -> average -> export -> evaluate -> card.
# Re-running the same command after an interruption continues where it stopped (the vocabulary
# is kept, training resumes exactly; average/export/evaluate are redone).
#
#   (from the repository root) nohup tools/train/run_all.sh > /work/data/train/run_all.log 2>&1 &
#
# Settings (environment variables, defaults in brackets):
#   CORPUS [/work/data/corpus]         train/valid/test.{en,de}
#   WORK [/work/data/train]            vocabulary, caches, checkpoints, logs, evaluation outputs
#   MODEL_OUT [$WORK/en-de-small]      exported model directory (e.g. $PWD/models/en-de-small)
#   MAX_EPOCHS [8]  MAX_MINUTES [600]  training budget; MAX_MINUTES is cumulative over resumes
#   VOCAB_SIZE [8000]                  shared SentencePiece vocabulary
#   AVERAGE_LAST [5]                   checkpoints averaged for the exported weights
#   BF16 [0]                           1: train.py --bf16 (bfloat16 autocast; slower than float32
#                                      with OpenBLAS's SkylakeX kernels on the 2-core VM)
#   TRAIN_FLAGS []                     extra train.py flags (keep the model flags identical
#                                      across resumes)
#   STEPS [spm,train,average,export,evaluate]   which steps to run
#   HANDBOOK [/work/data/handbook-eval/handbook] held-out evaluation set ("" to skip)
#   REFERENCE_LIMIT [0]                test lines also run through the PyTorch reference (id check; 0 = all)
#   EVAL_MAX_LENGTH [256]              generated-token cap used for evaluation (both engines)
#   NICE [nice -n 19]                  prefix for every heavy command ("" for full priority)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
T="$REPO/tools/train"
CORPUS=${CORPUS:-/work/data/corpus}
WORK=${WORK:-/work/data/train}
MODEL_OUT=${MODEL_OUT:-$WORK/en-de-small}
MAX_EPOCHS=${MAX_EPOCHS:-8}
MAX_MINUTES=${MAX_MINUTES:-600}
VOCAB_SIZE=${VOCAB_SIZE:-8000}
AVERAGE_LAST=${AVERAGE_LAST:-5}
TRAIN_FLAGS=${TRAIN_FLAGS:-}
BF16=${BF16:-0}
[[ "$BF16" == 1 ]] && TRAIN_FLAGS="--bf16 $TRAIN_FLAGS"
STEPS=${STEPS:-spm,train,average,export,evaluate}
HANDBOOK=${HANDBOOK-/work/data/handbook-eval/handbook}
REFERENCE_LIMIT=${REFERENCE_LIMIT:-0}
EVAL_MAX_LENGTH=${EVAL_MAX_LENGTH:-256}
NICE=${NICE-nice -n 19}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-ACTIVE}

VOCAB="$WORK/vocab"
EVAL="$WORK/eval"
mkdir -p "$WORK" "$EVAL"
has() { [[ ",$STEPS," == *",$1,"* ]]; }
say() { echo "$(date '+%F %T') run_all: $*"; }

if has spm; then
  say "SentencePiece ($VOCAB_SIZE pieces) -> $VOCAB"
  $NICE $PY "$T/train_spm.py" --src "$CORPUS/train.en" --tgt "$CORPUS/train.de" \
    --out "$VOCAB" --vocab_size "$VOCAB_SIZE"
fi

if has train; then
  say "training (resumes from $WORK/ckpt if present):" \
    "max_epochs $MAX_EPOCHS, max_minutes $MAX_MINUTES"
  # shellcheck disable=SC2086  # TRAIN_FLAGS is a list of flags
  $NICE $PY "$T/train.py" --vocab_dir "$VOCAB" --corpus_dir "$CORPUS" --work_dir "$WORK" \
    --max_epochs "$MAX_EPOCHS" --max_minutes "$MAX_MINUTES" $TRAIN_FLAGS
fi

if has average; then
  say "averaging the last $AVERAGE_LAST checkpoints"
  $NICE $PY "$T/average.py" --ckpt_dir "$WORK/ckpt" --last "$AVERAGE_LAST" --out "$WORK/averaged.pt"
fi

if has export; then
  say "export -> $MODEL_OUT"
  $NICE $PY "$T/export.py" --ckpt "$WORK/averaged.pt" --vocab_dir "$VOCAB" --out "$MODEL_OUT" \
    --corpus_stats "$CORPUS/stats.json"
fi

if has evaluate; then
  BIN="$REPO/build/bin/transerve-translate"
  if [[ ! -x "$BIN" ]]; then
    say "building transerve-translate"
    $NICE cmake --build "$REPO/build" --target transerve-translate
  fi
  say "evaluating $MODEL_OUT"
  $NICE $PY "$T/evaluate.py" run --model_dir "$MODEL_OUT" --set test "$CORPUS/test" \
    --engines cpp,reference --beams 1,4 --reference_limit "$REFERENCE_LIMIT" \
    --max_length "$EVAL_MAX_LENGTH" --out_dir "$EVAL" --json "$EVAL/results.json"
  if [[ -n "$HANDBOOK" && -f "$HANDBOOK.en" ]]; then
    $NICE $PY "$T/evaluate.py" run --model_dir "$MODEL_OUT" --set handbook "$HANDBOOK" \
      --engines cpp --beams 1,4 --max_length "$EVAL_MAX_LENGTH" --out_dir "$EVAL" \
      --json "$EVAL/results.json" --append
  fi
  $NICE $PY "$T/export.py" --ckpt "$WORK/averaged.pt" --vocab_dir "$VOCAB" --out "$MODEL_OUT" \
    --corpus_stats "$CORPUS/stats.json" --eval_json "$EVAL/results.json" --card_only
  say "scores: $EVAL/results.json; model card: $MODEL_OUT/README.md"
fi
say "done"
