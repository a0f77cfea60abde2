#!/usr/bin/env bash
# M2M-100 and NLLB-200 checkpoints through the real binaries, in a model repository beside a
# bilingual OPUS-MT model, laid out as the hub publishes them: random-weight models with random
# tokenizers (a BPE SentencePiece model, NLLB's offset ids and xxx_Xxxx codes, M2M's vocab.json
# and __xx__ codes), drawn anew each run by the independent references
# (tools/reference/m2m_tokenizer_reference.py over m2m_reference.py).
#  - Callers at once: gRPC by model name (unary and streaming), gRPC by language pair only,
#    gRPC with the source language detected, and LibreTranslate's API by pair; each gets the
#    reference's translations for its source and target languages. A pair a bilingual model
#    serves goes to it; the others to the multilingual model that has both languages.
#  - transerve-translate, given the pair as flags, gives the reference's translations too.
#  - ListModels and /languages list every language the multilingual models read and write.
#  - A CTranslate2 directory of such a model is listed with its languages and told the pair.
#  - No target language, or a source the model does not read, is a clear INVALID_ARGUMENT (400
#    over HTTP), and the server goes on.
# Usage: multilingual_model_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test multilingual_model

ref="$src/tools/reference/m2m_tokenizer_reference.py"
seed=$((RANDOM % 100000))
mkdir -p "$work/repo"
/usr/bin/python3 "$ref" --make "$work/repo/nllb-random" --flavour nllb --model --seed "$seed" \
  > "$work/make.log" 2>&1 || fail "make the NLLB model (seed $seed)"
/usr/bin/python3 "$ref" --make "$work/repo/m2m-random" --flavour m2m100 \
  --codes __en__,__ja__,__ko__,__de__ --model --seed "$((seed + 1))" >> "$work/make.log" 2>&1 \
  || fail "make the M2M-100 model (seed $((seed + 1)))"
cp -r "$src/models/en-de-small" "$work/repo/opus-mt-en-de"

# Texts in the random tokenizers' alphabet, and an English sentence for the detector. (Symbols
# the tokenizer lacks are left out: the server's document layer keeps some of them out of the
# model, which the reference does not; the engine's tests cover their <unk>.)
/usr/bin/python3 - "$src/tools/reference" "$seed" > "$work/in.txt" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
import m2m_tokenizer_reference as tr
rng = random.Random(int(sys.argv[2]) + 7)
for i in range(10):
    print(tr.random_text(rng))
PY
echo "The weather is very nice today and we are going to the park with the children." \
  > "$work/english.txt"

# What each caller must get: MODEL SOURCE_CODE TARGET_CODE INPUT -> want.NAME (text TAB margin).
want() {
  /usr/bin/python3 - "$src/tools/reference" "$work/repo/$2" "$3" "$4" "$work/$5" \
    > "$work/want.$1" 2>> "$work/reference.log" <<'PY' || fail "reference for $1"
import sys
sys.path.insert(0, sys.argv[1])
import torch
torch.set_num_threads(1)
import m2m_tokenizer_reference as tr
model_dir, src, tgt, lines = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
texts = open(lines, encoding="utf-8").read().splitlines()
# generation_config.json's max_length 64 counts the decoder's start token: 63 generated.
for text, margin in tr.translate(model_dir, texts, src, tgt, max_length=63):
    print(f"{text}\t{margin}")
PY
}
want nllb_fr_zh nllb-random fra_Latn zho_Hans in.txt
want nllb_de_ru nllb-random deu_Latn rus_Cyrl in.txt
want nllb_en_fr nllb-random eng_Latn fra_Latn in.txt
want m2m_ja_ko m2m-random __ja__ __ko__ in.txt
want m2m_en_de m2m-random __en__ __de__ english.txt
# float32 throughout: the references compute in float32 (the int8 that --dtype=auto may choose
# has its own tests).
"$bin/transerve-translate" --model_dir="$work/repo/opus-mt-en-de" --num_threads=2 --dtype=float32 \
  < "$work/in.txt" > "$work/want.opus" 2> "$work/translate.log" \
  || fail "transerve-translate: $(tail -3 "$work/translate.log")"

# transerve-translate takes the pair as flags, and needs the target.
"$bin/transerve-translate" --model_dir="$work/repo/nllb-random" --num_threads=2 --dtype=float32 \
  --language=fr --target_language=zh < "$work/in.txt" > "$work/got.cli_fr_zh" \
  2> "$work/translate.log" || fail "transerve-translate fr->zh: $(tail -3 "$work/translate.log")"
cli_rc=0
"$bin/transerve-translate" --model_dir="$work/repo/nllb-random" --language=fr \
  < "$work/in.txt" > /dev/null 2> "$work/cli_refused" || cli_rc=$?
[ "$cli_rc" = 2 ] && grep -q "target_language" "$work/cli_refused" \
  || fail "transerve-translate without a target: exit $cli_rc, $(cat "$work/cli_refused")"

"$bin/transerve-server" --model_repository="$work/repo" --host=127.0.0.1 --port=0 \
  --metrics_port=0 --http_port=0 --num_threads=2 --dtype=float32 --max_queue_wait=120s \
  --drain_timeout=10s \
  > "$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
http="http://127.0.0.1:$SERVING_HTTP_PORT"

# The listings, before any model is loaded: every language each model reads and writes.
"$bin/transerve-client" --target="$target" --list_models > "$work/models" || fail "list_models"
grep -qP '^nllb-random( \(default\))?\t.*\tde,en,es,fr,ru,zh->de,en,es,fr,ru,zh$' "$work/models" \
  || fail "NLLB's languages: $(cat "$work/models")"
grep -qP '^m2m-random( \(default\))?\t.*\tde,en,ja,ko->de,en,ja,ko$' "$work/models" \
  || fail "M2M-100's languages: $(cat "$work/models")"
/usr/bin/python3 - "$http/languages" > "$work/languages.log" 2>&1 <<'PY' || fail "/languages: $(cat "$work/languages.log")"
import json, sys, urllib.request
langs = {l["code"]: set(l["targets"]) for l in json.load(urllib.request.urlopen(sys.argv[1]))}
# Each language reaches its models' targets and, through English (the server's pivot
# language), every target English reaches: ja -> en by M2M-100, en -> zh by NLLB-200.
every = {"de", "en", "es", "fr", "ru", "zh", "ja", "ko"}
want = {code: every - {code} for code in ("en", "ja", "zh", "ko")}
for code, targets in want.items():
    if langs.get(code) != targets:
        sys.exit(f"{code}: targets {langs.get(code)}, want {targets}")
PY

# Callers at once. gRPC: client NAME INPUT ARGS...
client() {
  local name="$1" input="$work/$2"
  shift 2
  "$bin/transerve-client" --target="$target" --timeout=120 "$@" < "$input" \
    > "$work/got.$name" 2> "$work/got.$name.err"
}
pids=()
names=()
run() { client "$@" & pids+=($!); names+=("$1"); }
run nllb_fr_zh in.txt --model=nllb-random --source_language=fr --target_language=zh
run nllb_de_ru in.txt --model=nllb-random --source_language=de --target_language=ru --stream
run m2m_ja_ko in.txt --source_language=ja --target_language=ko
run m2m_en_de_auto english.txt --model=m2m-random --source_language=auto --target_language=de
run m2m_en_de_unnamed english.txt --model=m2m-random --target_language=de
/usr/bin/python3 - "$http/translate" "$work/in.txt" > "$work/lt.log" 2>&1 <<'PY' &
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, lines = sys.argv[1], open(sys.argv[2], encoding="utf-8").read().splitlines()
def one(args):
    text, target = args
    body = json.dumps({"q": text, "source": "en", "target": target}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=120))["translatedText"]
with ThreadPoolExecutor(4) as pool:
    for target in ("fr", "de"):
        got = list(pool.map(one, [(t, target) for t in lines]))
        with open(sys.argv[2].replace("in.txt", f"got.lt_en_{target}"), "w") as f:
            f.write("".join(g + "\n" for g in got))
PY
lt_pid=$!
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || fail "caller ${names[$i]}: $(cat "$work/got.${names[$i]}.err")"
done
wait "$lt_pid" || fail "LibreTranslate API: $(cat "$work/lt.log")"

# Each answer against the reference, but for lines at a near-tie (margin under 1e-3), where a
# batch's rounding may choose otherwise.
compare() {
  /usr/bin/python3 - "$work/got.$1" "$work/want.$2" > "$work/compare.log" 2>&1 <<'PY' \
    || fail "$1: $(cat "$work/compare.log")"
import sys
got = open(sys.argv[1], encoding="utf-8").read().splitlines()
want = [l.rsplit("\t", 1) for l in open(sys.argv[2], encoding="utf-8").read().splitlines()]
if len(got) != len(want):
    sys.exit(f"{len(got)} lines, want {len(want)}")
compared = 0
for i, (g, (w, margin)) in enumerate(zip(got, want)):
    if float(margin) < 1e-3:
        continue
    compared += 1
    if g != w:
        sys.exit(f"line {i}: {g!r}, the reference gives {w!r}")
if compared < len(want) - 3:
    sys.exit(f"only {compared} of {len(want)} lines away from near-ties")
PY
}
compare nllb_fr_zh nllb_fr_zh
compare cli_fr_zh nllb_fr_zh
compare nllb_de_ru nllb_de_ru
compare m2m_ja_ko m2m_ja_ko
compare m2m_en_de_auto m2m_en_de
compare m2m_en_de_unnamed m2m_en_de
compare lt_en_fr nllb_en_fr
cmp -s "$work/got.lt_en_de" "$work/want.opus" \
  || fail "en->de did not go to the bilingual model: $(diff "$work/got.lt_en_de" "$work/want.opus" | head -5)"
grep -q "detected language: en" "$work/got.m2m_en_de_auto.err" \
  || fail "no detected language reported: $(cat "$work/got.m2m_en_de_auto.err")"

# Requests such a model cannot answer, each refused with the reason.
printf '1234 5678\n' > "$work/digits.txt"  # no language for the detector to tell
refused() {
  local name="$1" want="$2" input="$3"
  shift 3
  if "$bin/transerve-client" --target="$target" "$@" < "$work/$input" > /dev/null \
    2> "$work/refused.$name"; then
    fail "$name was answered"
  fi
  grep -q "INVALID_ARGUMENT.*$want" "$work/refused.$name" \
    || fail "$name: $(cat "$work/refused.$name")"
}
refused no_target "target_language" in.txt --model=nllb-random --source_language=en
refused unread_source "does not read\|translates" in.txt --model=nllb-random --source_language=ja \
  --target_language=fr
refused undetected "source_language" digits.txt --model=nllb-random --target_language=fr
# No model reads Korean and writes French: M2M-100 into English, then NLLB-200 out of it.
code="$(curl -s -o "$work/lt_pivot" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"q": "hello", "source": "ko", "target": "fr"}' "$http/translate")"
[ "$code" = 200 ] || fail "LibreTranslate ko->fr through English: HTTP $code $(cat "$work/lt_pivot")"
# No model writes Italian at all.
code="$(curl -s -o "$work/lt_refused" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"q": "hello", "source": "ko", "target": "it"}' "$http/translate")"
[ "$code" = 400 ] || fail "LibreTranslate ko->it: HTTP $code $(cat "$work/lt_refused")"

# A CTranslate2 directory of the NLLB model: listed with the languages its vocabulary's codes
# name before it is loaded, and asked for by name before its load, it answers as
# transerve-translate does on the same directory.
/usr/bin/python3 "$src/tools/reference/m2m_to_ct2.py" --model_dir="$work/repo/nllb-random" \
  --out="$work/nllb-ct2" > "$work/convert.log" 2>&1 || fail "convert to CTranslate2"
"$bin/transerve-translate" --model_dir="$work/nllb-ct2" --num_threads=2 --dtype=float32 \
  --language=fr --target_language=zh < "$work/in.txt" > "$work/want.ct2" \
  2> "$work/translate.log" || fail "transerve-translate on the CTranslate2 directory"
mv "$work/nllb-ct2" "$work/repo/nllb-ct2"
for _ in $(seq 1 100); do
  "$bin/transerve-client" --target="$target" --list_models > "$work/models" 2> /dev/null
  grep -q '^nllb-ct2' "$work/models" && break
  sleep 0.1
done
grep -qP '^nllb-ct2\t.*\tnot loaded\tde,en,es,fr,ru,zh->de,en,es,fr,ru,zh$' "$work/models" \
  || fail "the CTranslate2 directory's listing: $(cat "$work/models")"
"$bin/transerve-client" --target="$target" --model=nllb-ct2 --source_language=fr \
  --target_language=zh < "$work/in.txt" > "$work/got.ct2" 2> "$work/ct2.err" \
  || fail "the CTranslate2 directory: $(cat "$work/ct2.err")"
cmp -s "$work/got.ct2" "$work/want.ct2" \
  || fail "the CTranslate2 directory by name: $(diff "$work/got.ct2" "$work/want.ct2" | head -4)"

# Still serving after the refusals.
"$bin/transerve-client" --target="$target" --model=nllb-random --source_language=fr \
  --target_language=zh < "$work/in.txt" > "$work/got.again" 2> "$work/again.err" \
  || fail "after the refusals: $(cat "$work/again.err")"
compare again nllb_fr_zh
stop_server "$server_pid" "the server"
server_pid=""
echo "multilingual_model: ok (seed $seed)"
