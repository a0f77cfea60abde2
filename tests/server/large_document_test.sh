#!/usr/bin/env bash
# A document at the character limit through the real binaries, as a user sends it, on a server
# with two replicas and a queue budget far shorter than the document takes: over gRPC (unary
# and streaming) and HTTP (LibreTranslate's /translate and /v1/translate) it is translated in
# full, each API giving the same text with the paragraphs kept, while other callers at a fixed
# rate are all answered OK beside it; one character over the limit is INVALID_ARGUMENT over
# gRPC and 413 over HTTP. ListModels and the metrics name the replicas.
# Usage: large_document_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/models/en-de-small"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test large_document
chars=100000

# Random English-like paragraphs (drawn anew each run) up to exactly $chars characters, and the
# callers' sentences.
python3 - "$work/doc.txt" "$work/over.txt" "$work/callers.txt" "$chars" <<'PY'
import random, sys
words = ("the file is open and we copy your devices to the old window where a small program "
         "cannot save this page now please check settings for each user before you start the "
         "server again with new options").split()
rng = random.Random()
def sentence():
    return " ".join(rng.choice(words) for _ in range(rng.randint(4, 18))).capitalize() + "."
chars = int(sys.argv[4])
paragraphs, size = [], 0
while True:
    p = " ".join(sentence() for _ in range(rng.randint(1, 5)))
    if size + len(p) + 2 > chars - 40:
        break
    paragraphs.append(p)
    size += len(p) + 2
doc = "\n\n".join(paragraphs) + "\n\nThe end"
doc += "." * (chars - len(doc))
assert len(doc) == chars
open(sys.argv[1], "w").write(doc)
open(sys.argv[2], "w").write(doc + "x")
open(sys.argv[3], "w").write("\n".join(sentence() for _ in range(200)) + "\n")
PY

# A 2 s queue budget: the document takes longer than that even on a fast machine, so its own
# sentences would exhaust it if the budget ran per sentence from the request's arrival.
"$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=0 \
  --http_port=0 --replicas=2 --max_text_chars=$chars --max_queue_wait=2s --drain_timeout=60s \
  >"$work/server.log" 2>&1 &
server_pid=$!
wait_serving "$work/server.log" "$server_pid"
target="127.0.0.1:$SERVING_PORT"
http="http://127.0.0.1:$SERVING_HTTP_PORT"
"$bin/transerve-client" --target="$target" --list_models > "$work/models" || fail "list_models"
grep -q "2 replicas" "$work/server.log" || fail "load log: $(grep loaded "$work/server.log")"
metrics=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
  "http://127.0.0.1:$SERVING_METRICS_PORT/metrics") || fail "GET /metrics"
grep -q '^transerve_model_info{.*replicas="2"} 1$' <<<"$metrics" \
  || fail "model info: $(grep transerve_model_info <<<"$metrics")"

# Other callers at a fixed rate for the whole run.
"$bin/transerve-loadgen" --target="$target" --input="$work/callers.txt" --order=random \
  --rate=10 --duration=40 --warmup=0 --deadline=120 --json="$work/callers.json" \
  >"$work/callers.log" 2>&1 &
callers=$!
sleep 1

start=$(date +%s.%N)
"$bin/transerve-client" --target="$target" --document --timeout=300 < "$work/doc.txt" \
  > "$work/unary.out" 2>"$work/unary.err" || fail "unary: $(cat "$work/unary.err")"
unary_s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
"$bin/transerve-client" --target="$target" --document --stream --timeout=300 < "$work/doc.txt" \
  > "$work/stream.out" 2>"$work/stream.err" || fail "stream: $(cat "$work/stream.err")"
# The streaming client ends its output with a newline, the unary one prints the text as it is.
python3 -c 'import sys; a, b = (open(f).read().rstrip("\n") for f in sys.argv[1:]); sys.exit(a != b)' \
  "$work/unary.out" "$work/stream.out" || fail "the stream's text differs from the unary answer"
python3 - "$work/doc.txt" "$work/unary.out" "$http" <<'PY' || fail "HTTP or layout check"
import json, sys, urllib.request
doc, unary, http = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
def post(path, body):
    req = urllib.request.Request(http + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())
text = unary.rstrip("\n")
want = doc.count("\n\n")
assert text.count("\n\n") == want, f"paragraphs: {text.count(chr(10) * 2)} of {want}"
assert len(text) > len(doc) / 3, f"a translation of {len(text)} characters"
lt = post("/translate", {"q": doc, "source": "en", "target": "de"})["translatedText"]
assert lt == text, "LibreTranslate's answer differs from gRPC's"
v1 = post("/v1/translate", {"texts": [doc]})["translations"][0]["text"]
assert v1 == text, "/v1/translate's answer differs from gRPC's"
PY

# One character over the limit: refused at once, before anything is queued.
if "$bin/transerve-client" --target="$target" --document < "$work/over.txt" > /dev/null 2>"$work/over.err"; then
  fail "a text over the limit was accepted"
fi
grep -q "INVALID_ARGUMENT" "$work/over.err" || fail "over the limit: $(cat "$work/over.err")"
python3 - "$work/over.txt" "$http" <<'PY' || fail "HTTP over the limit"
import json, sys, urllib.error, urllib.request
over, http = open(sys.argv[1]).read(), sys.argv[2]
for path, body in (("/translate", {"q": over, "source": "en", "target": "de"}),
                   ("/v1/translate", {"texts": [over]})):
    req = urllib.request.Request(http + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=60)
        raise SystemExit(f"{path}: a text over the limit was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 413, f"{path}: {e.code} {e.read()[:200]}"
PY

wait "$callers" || fail "loadgen"
ok=$(json_field "$work/callers.json" 'j["ok"]')
errors=$(json_field "$work/callers.json" 'sum(j["errors"].values())')
[ "$ok" -gt 100 ] && [ "$errors" = 0 ] || fail "callers beside the document: ok $ok, errors $errors"
stop_server "$server_pid" "the server"
server_pid=""
echo "large_document: OK ($chars characters in ${unary_s} s over gRPC beside 10 calls/s; $ok calls OK)"
