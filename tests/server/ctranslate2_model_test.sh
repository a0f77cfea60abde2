#!/usr/bin/env bash
# CTranslate2 model directories through the real binaries, as a CTranslate2 user would point
# transerve at theirs: the shipped model written in CTranslate2's Marian layout
# (tools/reference/marian_to_ct2.py: pad dropped, zero start embedding, aliased tables), float32
# and int8 stores, with its SentencePiece files beside it.
#  - transerve-translate gives the Hugging Face directory's translations exactly from the
#    float32 store, greedy and beam 4, under either search's rules (--search_rules);
#  - one transerve-server serves the Marian directory and both CTranslate2 directories side by
#    side; callers at once over gRPC (unary and streaming, several models) and the LibreTranslate
#    API each get what transerve-translate printed for that model;
#  - a model repository finds a CTranslate2 directory and loads it on its first request;
#  - ListModels names the family; a directory without its SentencePiece model and a spec the
#    engine cannot compute are refused at start with the reason.
# Usage: ctranslate2_model_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
marian="$src/models/en-de-small"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test ctranslate2_model

for q in float32 int8; do
  /usr/bin/python3 "$src/tools/reference/marian_to_ct2.py" --model_dir "$marian" \
    --out "$work/ende-ct2-$q" --quantization $q > "$work/convert.$q.log" || fail "convert $q"
done

# Random English sentences (drawn anew each run) and an empty line.
python3 "$src/tests/testing/random_lines.py" "$work/in.txt" 16 2 16 --empty_at 7

# The same weights, so the same translations under the same search: the CTranslate2 store with
# its defaults (CTranslate2's beam rules, EOS banned at the first step) gives what the Marian
# directory gives under those, and with Hugging Face's rules what the Marian directory gives by
# default.
ct2_search=(--search_rules=ctranslate2 --min_length=2)
hf_search=(--search_rules=huggingface --min_length=0)
for beam in 1 4; do
  for run in "$marian:default" "$marian:ct2" "$work/ende-ct2-float32:default" \
             "$work/ende-ct2-float32:hf"; do
    m="${run%:*}" search=()
    [ "${run##*:}" = ct2 ] && search=("${ct2_search[@]}")
    [ "${run##*:}" = hf ] && search=("${hf_search[@]}")
    "$bin/transerve-translate" --model_dir="$m" --dtype=float32 --beam_size=$beam --max_length=48 \
      --num_threads=2 "${search[@]}" < "$work/in.txt" \
      > "$work/$(basename "$m").${run##*:}.$beam" 2> "$work/translate.log" \
      || fail "translate $run beam $beam: $(tail -3 "$work/translate.log")"
  done
  cmp -s "$work/en-de-small.ct2.$beam" "$work/ende-ct2-float32.default.$beam" \
    || fail "beam $beam: the CTranslate2 directory translates differently from its weights under CTranslate2's search: $(diff "$work/en-de-small.ct2.$beam" "$work/ende-ct2-float32.default.$beam" | head -6)"
  cmp -s "$work/en-de-small.default.$beam" "$work/ende-ct2-float32.hf.$beam" \
    || fail "beam $beam: under Hugging Face's search the CTranslate2 directory translates differently: $(diff "$work/en-de-small.default.$beam" "$work/ende-ct2-float32.hf.$beam" | head -6)"
  [ "$(wc -l < "$work/en-de-small.default.$beam")" = "$(wc -l < "$work/in.txt")" ] || fail "line count"
done
# What the server's callers must get: transerve-translate with the server's dtype (auto).
for m in en-de-small:"$marian" ende-ct2-float32:"$work/ende-ct2-float32" \
         ende-ct2-int8:"$work/ende-ct2-int8"; do
  for beam in 1 2 4; do
    "$bin/transerve-translate" --model_dir="${m#*:}" --beam_size=$beam --max_length=48 \
      --num_threads=2 < "$work/in.txt" > "$work/want.${m%%:*}.$beam" 2> "$work/translate.log" \
      || fail "translate ${m%%:*} (auto) beam $beam: $(tail -3 "$work/translate.log")"
  done
done
# Under auto the float32 store runs as int8, quantized from the same weights as the Marian
# directory's: the same translations under the same search.
"$bin/transerve-translate" --model_dir="$marian" --beam_size=4 --max_length=48 --num_threads=2 \
  "${ct2_search[@]}" < "$work/in.txt" > "$work/auto.en-de-small.ct2.4" 2> "$work/translate.log" \
  || fail "translate en-de-small (auto) under CTranslate2's search: $(tail -3 "$work/translate.log")"
cmp -s "$work/auto.en-de-small.ct2.4" "$work/want.ende-ct2-float32.4" \
  || fail "auto: the Marian directory and its CTranslate2 store translate differently"

# The CTranslate2 float32 store first: LibreTranslate's API, which names no model, gets the first
# model serving its pair.
"$bin/transerve-server" --model_dir="$work/ende-ct2-float32,$marian,$work/ende-ct2-int8" \
  --model_languages=ende-ct2-float32=en-de,ende-ct2-int8=en-de \
  --host=127.0.0.1 --port=0 --metrics_port=0 --http_port=0 --num_threads=2 \
  --drain_timeout=10s > "$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
"$bin/transerve-client" --target="$target" --list_models > "$work/models" || fail "list_models"
grep -qP '^ende-ct2-int8\tctranslate2 transformer \(post-norm\) 3\+3 layers' "$work/models" \
  || fail "ListModels: $(cat "$work/models")"

# Nine callers at once: each model, greedy and beam 4, unary and streaming.
pids=()
specs=("ende-ct2-float32 4 -" "ende-ct2-float32 4 --stream" "ende-ct2-int8 4 -"
       "ende-ct2-int8 4 --stream" "en-de-small 4 -" "ende-ct2-float32 1 -"
       "ende-ct2-int8 4 -" "ende-ct2-float32 4 -" "en-de-small 4 --stream")
for i in "${!specs[@]}"; do
  read -r name beam stream <<<"${specs[$i]}"
  [ "$stream" = - ] && stream=""
  "$bin/transerve-client" --target="$target" --model="$name" --beam_size=$beam --max_length=48 \
    $stream < "$work/in.txt" > "$work/got.$i" 2> "$work/got.$i.err" &
  pids+=($!)
done
for i in "${!specs[@]}"; do
  read -r name beam _ <<<"${specs[$i]}"
  wait "${pids[$i]}" || fail "caller $i (${specs[$i]}): $(cat "$work/got.$i.err")"
  cmp -s "$work/want.$name.$beam" "$work/got.$i" \
    || fail "caller $i (${specs[$i]}) differs from transerve-translate"
done

# LibreTranslate's API routes en->de to the CTranslate2 directory (the first model for the pair)
# and asks no beam size: the model's default, CTranslate2's beam 2.
python3 - "http://127.0.0.1:$SERVING_HTTP_PORT/translate" "$work/in.txt" "$work/want.ende-ct2-float32.2" > "$work/lt.log" 2>&1 <<'PY' || fail "LibreTranslate API: $(cat "$work/lt.log")"
import json, sys, urllib.request
url, lines, want = sys.argv[1], open(sys.argv[2]).read().splitlines(), open(sys.argv[3]).read().splitlines()
for line, expected in zip(lines, want):
    if not line:
        continue
    body = json.dumps({"q": line, "source": "en", "target": "de"}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    got = json.load(urllib.request.urlopen(req))["translatedText"]
    if got != expected:
        sys.exit(f"{line!r}: got {got!r}, want {expected!r}")
PY
stop_server "$server_pid" "the server"
server_pid=""

# A model repository holding a CTranslate2 directory beside a Marian one: found, listed, loaded on
# its first request, and the same answer.
mkdir "$work/repo"
cp -r "$work/ende-ct2-float32" "$work/repo/ct2-en-de"
cp -r "$marian" "$work/repo/opus-en-de"
"$bin/transerve-server" --model_repository="$work/repo" --model_languages=ct2-en-de=en-de \
  --host=127.0.0.1 --port=0 --metrics_port=0 --http_port=-1 --num_threads=2 \
  --drain_timeout=10s > "$work/repo_server.log" 2>&1 &
server_pid=$!
wait_serving "$work/repo_server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
"$bin/transerve-client" --target="$target" --list_models > "$work/repo_models" || fail "list_models"
grep -qP '^ct2-en-de\b' "$work/repo_models" || fail "repository listing: $(cat "$work/repo_models")"
"$bin/transerve-client" --target="$target" --model=ct2-en-de --beam_size=4 --max_length=48 \
  < "$work/in.txt" > "$work/repo_got" 2> "$work/repo_got.err" || fail "repository: $(cat "$work/repo_got.err")"
cmp -s "$work/want.ende-ct2-float32.4" "$work/repo_got" || fail "repository model differs"
stop_server "$server_pid" "the repository server"
server_pid=""

# Refused at start, with the reason: no SentencePiece model beside the directory; a spec the
# engine cannot compute (a rotary attribute added to the float32 store's model.bin).
mkdir "$work/no-spm"
cp "$work/ende-ct2-float32/"{model.bin,config.json,shared_vocabulary.json} "$work/no-spm/"
rc=0
"$bin/transerve-server" --model_dir="$work/no-spm" --port=0 --metrics_port=-1 --http_port=-1 \
  > "$work/bad.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "no SentencePiece model" "$work/bad.log" \
  || fail "no spm: rc $rc $(tail -2 "$work/bad.log")"
/usr/bin/python3 - "$src/tools/reference" "$marian" "$work/rotary" <<'PY' || fail "rotary model"
import os, shutil, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import make_random_ct2_model as writer
import marian_to_ct2
spec, tokens, config = marian_to_ct2.build_spec(sys.argv[2])
spec["decoder/layer_0/self_attention/rotary_dim"] = np.asarray(0, dtype=np.int32)
os.makedirs(sys.argv[3])
variables, aliases = writer.convert(spec, "float32")
writer.write_model_bin(os.path.join(sys.argv[3], "model.bin"), variables, aliases)
open(os.path.join(sys.argv[3], "shared_vocabulary.json"), "w").write(__import__("json").dumps(tokens))
open(os.path.join(sys.argv[3], "config.json"), "w").write(__import__("json").dumps(config))
for name in ("source.spm", "target.spm"):
    shutil.copyfile(os.path.join(sys.argv[2], name), os.path.join(sys.argv[3], name))
PY
rc=0
"$bin/transerve-server" --model_dir="$work/rotary" --port=0 --metrics_port=-1 --http_port=-1 \
  > "$work/bad.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "rotary_dim.*rotary position embeddings" "$work/bad.log" \
  || fail "rotary: rc $rc $(tail -2 "$work/bad.log")"
echo "ctranslate2_model: OK"
