#!/usr/bin/env bash
# Argos Translate packages through the real binaries, as a LibreTranslate user would bring their
# packages folder: the shipped model converted to a CTranslate2 directory and packaged the way
# argospm installs one (metadata.json, model/, one sentencepiece.model), as an unpacked folder
# and as a .argosmodel zip, in a --model_repository with no other configuration.
#  - transerve-translate on the package folder gives the ids of Argos Translate's own pipeline
#    (no EOS added to the source; beam 4, length penalty 0.2, CTranslate2's beam rules), as the
#    independent reference computes them;
#  - the server lists each package's pair from its metadata.json before loading it (ListModels,
#    LibreTranslate's /languages), and callers at once over the LibreTranslate API (by language
#    pair) and gRPC (by package name, unary and streaming) get those translations;
#  - a truncated archive and one whose entries climb out of their folder are refused with the
#    reason while the rest is served;
#  - an archive replaced while it serves is unpacked anew and reloaded, with the same answers;
#    the unpacked copies are removed when the server exits.
# Usage: argos_package_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
marian="$src/models/en-de-small"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test argos_package

/usr/bin/python3 "$src/tools/reference/marian_to_ct2.py" --model_dir "$marian" \
  --out "$work/ende-ct2" --quantization float32 > "$work/convert.log" || fail "convert"

# Random English sentences (drawn anew each run), and sentences whose symbols the model writes as
# <unk> (found by hand on the shipped model), which Argos Translate's replace_unknowns fills in.
python3 "$src/tests/testing/random_lines.py" "$work/in.txt" 12 2 14
cat >> "$work/in.txt" <<'EOF'
Price · 5 euros · tax included.
Press ⌘ and C to copy the text.
The snowman ☃ melted in the sun.
He wrote ∑ on the board and left.
EOF

# The packages: package FOLDER FROM TO writes what argospm unpacks.
package() {
  mkdir -p "$1/model"
  cp "$work/ende-ct2/"{model.bin,config.json,shared_vocabulary.json} "$1/model/"
  cp "$marian/source.spm" "$1/sentencepiece.model"
  mkdir -p "$1/stanza"
  head -c 2000 /dev/urandom > "$1/stanza/unused.pt"
  printf '{"package_version": "1.0", "argos_version": "1.5", "from_code": "%s", "to_code": "%s"}\n' \
    "$2" "$3" > "$1/metadata.json"
}
mkdir -p "$work/repo" "$work/staging"
package "$work/repo/translate-en_de-1_0" en de
# The same weights labelled French to German: its listing comes from metadata.json alone.
package "$work/repo/translate-fr_de-1_0" fr de
package "$work/staging/translate-en_de-1_9" en de
python3 - "$work" <<'PY' || fail "zip"
import os, sys, zipfile
work = sys.argv[1]
def zip_folder(path, top, extra=None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for root, _, files in os.walk(os.path.join(work, "staging", top)):
            for f in files:
                full = os.path.join(root, f)
                z.write(full, os.path.relpath(full, os.path.join(work, "staging")))
        if extra:
            z.writestr(extra, b"escaped")
zip_folder(os.path.join(work, "repo", "ende-zip.argosmodel"), "translate-en_de-1_9")
zip_folder(os.path.join(work, "repo", "evil.argosmodel"), "translate-en_de-1_9",
           extra="translate-en_de-1_9/../../escaped")
data = open(os.path.join(work, "repo", "ende-zip.argosmodel"), "rb").read()
open(os.path.join(work, "repo", "broken.argosmodel"), "wb").write(data[: len(data) // 2])
PY

# What callers must get: Argos Translate's own pipeline on the package, computed by the
# independent reference (tools/reference/ct2_reference.py): SentencePiece's pieces as they are
# (Argos adds no EOS), beam 4, length penalty 0.2, CTranslate2's beam rules and its
# min_decoding_length 1. transerve-translate on the package folder, at its defaults and in
# float32 as the reference computes, must give those ids and scores. Its text at the server's
# dtype (auto) is what every caller below must get.
"$bin/transerve-translate" --model_dir="$work/repo/translate-en_de-1_0" --num_threads=2 \
  --dtype=float32 --output_format=jsonl --split_sentences=false --protect_spans=false < "$work/in.txt" \
  > "$work/folder.jsonl" 2> "$work/translate.log" \
  || fail "translate the package folder: $(tail -3 "$work/translate.log")"
/usr/bin/python3 - "$src/tools/reference" "$work/repo/translate-en_de-1_0" "$work/in.txt" \
  "$work/folder.jsonl" > "$work/reference.log" 2>&1 <<'PY' || fail "Argos's pipeline: $(tail -3 "$work/reference.log")"
import json, sys
sys.path.insert(0, sys.argv[1])
import ct2_reference as cr
import sentencepiece as spm
import torch
torch.set_num_threads(1)
package, lines_path, got_path = sys.argv[2:5]
model = cr.Ct2Model(package + "/model")
sp = spm.SentencePieceProcessor(model_file=package + "/sentencepiece.model")
unk = model.src_vocab.lookup(model.special.unk_token)
eos = model.cfg.eos_id
got = [json.loads(line) for line in open(got_path)]
lines = open(lines_path).read().splitlines()
assert len(got) == len(lines), (len(got), len(lines))
replaced = 0
for line, g in zip(lines, got):
    ids = g["ids"]
    pieces = sp.encode(line, out_type=str)
    source = [model.src_vocab.lookup(p) for p in pieces]
    source = [unk if i is None else i for i in source]
    want = cr.ct2_beam_search(model, source, 4, 256, length_penalty=0.2, min_length=2)
    strip = lambda x: x[:-1] if x and x[-1] == eos else x
    if strip(ids) != strip(want["ids"]):
        sys.exit(f"{line!r}: ids {ids}, Argos's pipeline gives {want['ids']}")
    # The score too: a source fed with an EOS Argos does not add would move it.
    if abs(g["score"] - want["score"]) > 1e-3 + 1e-3 * abs(want["score"]):
        sys.exit(f"{line!r}: score {g['score']}, Argos's pipeline gives {want['score']}")
    # The text as Argos Translate makes it: CTranslate2's replace_unknowns (an <unk> becomes the
    # source piece its attention weighs most), then SentencePiece's decode of the pieces.
    out = [model.tgt_vocab.tokens[i] for i in want["ids"] if i != eos]
    out = cr.replace_unknowns(model, pieces, source, want["ids"][:len(out)], out, unk)
    text = sp.decode([p for p in out if p != model.special.unk_token]).strip()
    if g["text"] != text:
        sys.exit(f"{line!r}: text {g['text']!r}, Argos's pipeline gives {text!r}")
    replaced += unk in want["ids"]
if replaced == 0:
    sys.exit("no line generated <unk>: the replacement went untested")
print(f"{len(lines)} lines: Argos's pipeline ids and texts, {replaced} with <unk> replaced")
PY
"$bin/transerve-translate" --model_dir="$work/repo/translate-en_de-1_0" --num_threads=2 \
  < "$work/in.txt" > "$work/want" 2> "$work/translate.log" \
  || fail "translate the package folder: $(tail -3 "$work/translate.log")"

mkdir "$work/tmp"
# The queue's time budget is not what this test is about: under ThreadSanitizer, on two loaded
# cores, the callers' beam-4 sentences can wait past the default 10 s (seen in a run).
TMPDIR="$work/tmp" "$bin/transerve-server" --model_repository="$work/repo" \
  --host=127.0.0.1 --port=0 --metrics_port=0 --http_port=0 --num_threads=2 \
  --max_queue_wait=120s --drain_timeout=10s > "$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
http="http://127.0.0.1:$SERVING_HTTP_PORT"

"$bin/transerve-client" --target="$target" --list_models > "$work/models" || fail "list_models"
for name in ende-zip translate-en_de-1_0 translate-fr_de-1_0; do
  grep -qP "^$name( \(default\))?\t" "$work/models" || fail "ListModels lacks $name: $(cat "$work/models")"
done
if grep -qP '^(evil|broken)\b' "$work/models"; then fail "a hostile archive is listed"; fi
grep -q "evil.argosmodel: entry 'translate-en_de-1_9/../../escaped' would be written outside" \
  "$work/server.log" || fail "the climbing archive's reason is not logged"
grep -q "broken.argosmodel: not a readable zip" "$work/server.log" \
  || fail "the truncated archive's reason is not logged"
[ ! -e "$work/escaped" ] && [ ! -e "$work/tmp/escaped" ] || fail "an entry escaped its folder"

# /languages, before any package is loaded: the pairs their metadata.json files name.
python3 - "$http/languages" > "$work/languages.log" 2>&1 <<'PY' || fail "/languages: $(cat "$work/languages.log")"
import json, sys, urllib.request
langs = json.load(urllib.request.urlopen(sys.argv[1]))
pairs = sorted((l["code"], t) for l in langs for t in l["targets"])
if pairs != [("en", "de"), ("fr", "de")]:
    sys.exit(f"pairs {pairs}")
names = {l["code"]: l["name"] for l in langs}
if names.get("en") != "English" or names.get("fr") != "French":
    sys.exit(f"names {names}")
PY

# Callers at once, each with the package's defaults: the LibreTranslate API by language pair,
# gRPC by package name.
python3 - "$http/translate" "$work/in.txt" "$work/want" > "$work/lt.log" 2>&1 <<'PY' &
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, lines, want = sys.argv[1], open(sys.argv[2]).read().splitlines(), open(sys.argv[3]).read().splitlines()
def one(i):
    body = json.dumps({"q": lines[i], "source": "en", "target": "de"}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    got = json.load(urllib.request.urlopen(req, timeout=120))["translatedText"]
    return None if got == want[i] else f"{lines[i]!r}: got {got!r}, want {want[i]!r}"
with ThreadPoolExecutor(6) as pool:
    errors = [e for e in pool.map(one, range(len(lines))) if e]
sys.exit("\n".join(errors) or None)
PY
lt_pid=$!
pids=()
specs=("ende-zip -" "ende-zip --stream" "translate-en_de-1_0 -" "translate-en_de-1_0 --stream")
for i in "${!specs[@]}"; do
  read -r name stream <<<"${specs[$i]}"
  [ "$stream" = - ] && stream=""
  "$bin/transerve-client" --target="$target" --model="$name" $stream < "$work/in.txt" \
    > "$work/got.$i" 2> "$work/got.$i.err" &
  pids+=($!)
done
for i in "${!specs[@]}"; do
  wait "${pids[$i]}" || fail "caller $i (${specs[$i]}): $(cat "$work/got.$i.err")"
  cmp -s "$work/want" "$work/got.$i" || fail "caller $i (${specs[$i]}) differs"
done
wait "$lt_pid" || fail "LibreTranslate API: $(cat "$work/lt.log")"
"$bin/transerve-client" --target="$target" --list_models > "$work/models" || fail "list_models"
grep -qP '^ende-zip( \(default\))?\tctranslate2 transformer' "$work/models" \
  || fail "the loaded archive's family: $(cat "$work/models")"
[ -n "$(ls -A "$work/tmp")" ] || fail "nothing was unpacked under TMPDIR"

# A new version of the loaded archive, renamed into place as an operator would: unpacked anew,
# reloaded beside the serving version, and the same answers from it.
cp "$work/repo/ende-zip.argosmodel" "$work/staging/new.argosmodel"
mv "$work/staging/new.argosmodel" "$work/repo/ende-zip.argosmodel"
for _ in $(seq 1 300); do
  grep -q "model 'ende-zip': version 2 serves" "$work/server.log" && break
  sleep 0.1
done
grep -q "model 'ende-zip': version 2 serves" "$work/server.log" \
  || fail "the replaced archive was not reloaded"
grep -q "model 'ende-zip': unpacked .*ende-zip\.[0-9]*/translate-en_de-1_9" "$work/server.log" \
  || fail "the new version was not unpacked"
"$bin/transerve-client" --target="$target" --model=ende-zip < "$work/in.txt" \
  > "$work/got.reloaded" 2> "$work/got.reloaded.err" || fail "after the reload: $(cat "$work/got.reloaded.err")"
cmp -s "$work/want" "$work/got.reloaded" || fail "the reloaded archive translates differently"
stop_server "$server_pid" "the server"
server_pid=""
[ -z "$(ls -A "$work/tmp")" ] || fail "unpacked packages left behind: $(ls -A "$work/tmp")"
echo "argos_package: OK"
