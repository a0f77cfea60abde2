#!/usr/bin/env bash
# A model directory that cannot be served (issue 8): transerve-server exits 1 with the reason in
# its log and never reports serving; transerve-translate exits non-zero with the reason too.
# Each case is a copy of the fixture model with one thing broken.
# Usage: bad_model_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
fixture="$src/tests/fixtures/tiny-marian/model"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() {
  echo "bad_model: FAIL: $*" >&2
  exit 1
}

# break NAME PYTHON: a copy of the fixture in $work/NAME/model, then PYTHON runs there (cwd).
break_model() {
  mkdir -p "$work/$1"
  cp -r "$fixture" "$work/$1/model"
  (cd "$work/$1/model" && python3 -c "$2") || fail "could not prepare $1"
}
# Helpers for the Python snippets: the safetensors header and where a tensor's bytes are.
st='import json, struct
raw = bytearray(open("model.safetensors", "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
def put(name, i, value):  # element i of an F32 tensor
    a = 8 + n + header[name]["data_offsets"][0] + 4 * i
    raw[a:a + 4] = struct.pack("<f", value)
def save():
    open("model.safetensors", "wb").write(raw)
'
break_model nan_weight "$st
put(\"model.encoder.layers.0.fc1.weight\", 5, float(\"nan\"))
save()"
break_model inf_weight "$st
put(\"model.decoder.layers.1.self_attn.q_proj.weight\", 7, float(\"inf\"))
save()"
break_model truncated_weights "$st
del raw[len(raw) // 2:]
save()"
break_model huge_header_length "$st
raw[:8] = struct.pack(\"<Q\", 1 << 62)
save()"
break_model offsets_beyond_file "$st
k = next(iter(k for k in header if k != \"__metadata__\"))
header[k][\"data_offsets\"][1] += 1 << 40
h = json.dumps(header).encode()
raw[:] = struct.pack(\"<Q\", len(h)) + h + raw[8 + n:]
save()"
break_model garbage_spm 'import random
random.seed(3)
open("source.spm", "wb").write(bytes(random.randrange(256) for _ in range(4096)))'
break_model truncated_spm 'b = open("target.spm", "rb").read()
open("target.spm", "wb").write(b[: len(b) // 3])'
break_model bad_config 'open("config.json", "w").write("{\"d_model\": 64,")'
break_model no_weights 'import os
os.remove("model.safetensors")'

# The reason each case must name.
declare -A reason=(
  [nan_weight]="fc1.weight"
  [inf_weight]="q_proj.weight"
  [truncated_weights]="model.safetensors"
  [huge_header_length]="header"
  [offsets_beyond_file]="model.safetensors"
  [garbage_spm]="source.spm"
  [truncated_spm]="target.spm"
  [bad_config]="config.json"
  [no_weights]="safetensors"
)
cases=0
for name in "${!reason[@]}"; do
  dir="$work/$name/model"
  rc=0
  timeout 60 "$bin/transerve-server" --model_dir="$dir" --host=127.0.0.1 --port=0 \
    --metrics_port=-1 --http_port=-1 --num_threads=1 >"$work/$name.log" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "$name: transerve-server exited $rc, not 1: $(tail -3 "$work/$name.log")"
  grep -q "cannot load models:.*${reason[$name]}" "$work/$name.log" \
    || fail "$name: the log does not give the reason (${reason[$name]}): $(tail -3 "$work/$name.log")"
  if grep -q "serving:" "$work/$name.log"; then fail "$name: the server reported serving"; fi
  rc=0
  echo "hello" | timeout 60 "$bin/transerve-translate" --model_dir="$dir" --num_threads=1 \
    >/dev/null 2>"$work/$name.translate.log" || rc=$?
  [ "$rc" != 0 ] || fail "$name: transerve-translate exited 0"
  grep -q "${reason[$name]}" "$work/$name.translate.log" \
    || fail "$name: transerve-translate did not say why: $(cat "$work/$name.translate.log")"
  echo "bad_model: $name: exit $rc, $(grep -o 'cannot load models:.*' "$work/$name.log" | cut -c1-150)"
  cases=$((cases + 1))
done
echo "bad_model: OK ($cases broken models refused)"
