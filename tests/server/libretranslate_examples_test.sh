#!/usr/bin/env bash
# LibreTranslate's own documented request examples, sent with curl to the real transerve-server
# (the shipped model models/en-de-small), each answer checked against the shape LibreTranslate
# documents and every translation against what the native POST /v1/translate answers for the
# same text. Then the error cases LibreTranslate documents, a server with --auth_token (api_key),
# and form-encoded and multipart bodies.
#
# LibreTranslate publishes its examples as JavaScript fetch() calls with a JSON body; each is sent
# here as curl -d with the body JSON.stringify gives (spacing aside). The bodies are copied as
# published; only the host and port are ours, and a language pair this server does not serve is
# mapped to en->de (said at each example). Sources:
#   [README]  https://github.com/LibreTranslate/LibreTranslate/blob/main/README.md ("API Examples")
#   [DOCS]    https://docs.libretranslate.com/guides/api_usage/
#             (github.com/LibreTranslate/Documentation src/content/docs/guides/api_usage.md)
#   [FAQ]     https://docs.libretranslate.com/guides/faq/ ("Can I do batch translations?")
#   [SPEC]    https://libretranslate.com/docs (the Swagger spec, from the docstrings of
#             https://github.com/LibreTranslate/LibreTranslate/blob/main/libretranslate/app.py)
#   [LTTESTS] https://github.com/LibreTranslate/LibreTranslate/blob/main/libretranslate/tests/test_api/
#             (test_api_translate.py, test_api_api_keys.py: the error answers LibreTranslate asserts)
# Usage: libretranslate_examples_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
model="$src/models/en-de-small"
# shellcheck source=../testing/server_log.sh
. "$src/tests/testing/server_log.sh"
begin_server_test libretranslate_examples
command -v curl >/dev/null || fail "curl is needed (scripts/setup.sh installs it)"

start_server() {  # LOG [FLAGS...]: starts a server, sets server_pid and base
  local log="$1"
  shift
  "$bin/transerve-server" --model_dir="$model" --host=127.0.0.1 --port=0 --metrics_port=-1 \
    --http_port=0 --num_threads=2 "$@" >"$work/$log" 2>&1 &
  server_pid=$!
  wait_serving "$work/$log" "$server_pid"
  base="http://127.0.0.1:$SERVING_HTTP_PORT"
}

# lt NAME WANT_STATUS CURL_ARGS...: one request; the body goes to $work/NAME.json.
lt() {
  local name="$1" want="$2" got
  shift 2
  got="$(curl -sS -o "$work/$name.json" -w '%{http_code}' "$@")" || fail "$name: curl failed"
  [ "$got" = "$want" ] || fail "$name: HTTP $got, want $want: $(cat "$work/$name.json")"
}

# check NAME PYTHON...: runs the Python statements with j = the JSON of $work/NAME.json, and
# `native` (below) at hand; an AssertionError fails the test with its message.
check() {
  local name="$1"
  shift
  /usr/bin/python3 - "$work/$name.json" "$base" <<EOF || fail "$name: $(cat "$work/$name.json")"
import json, sys, urllib.request
j = json.load(open(sys.argv[1]))
base = sys.argv[2]

def native(text, source="en", target="de", html=False, hypotheses=0, beam=0):
    """The native API's answer (POST /v1/translate) for one text, as its Translation."""
    body = {"texts": [text], "sourceLanguage": source, "targetLanguage": target}
    if html:
        body["document"] = {"format": "FORMAT_HTML"}
    if hypotheses:
        body["options"] = {"numHypotheses": hypotheses, "beamSize": beam}
    req = urllib.request.Request(base + "/v1/translate", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    t = json.load(urllib.request.urlopen(req))["translations"]
    assert len(t) == 1, t
    return t[0]

def translated(got, text, **kw):
    """A LibreTranslate translation: a non-empty string, the native API's for the same text."""
    assert isinstance(got, str) and got.strip(), repr(got)
    want = native(text, **kw)["text"]
    assert got == want, f"LibreTranslate API {got!r} != native {want!r}"

def detected(d, q):
    """detectedLanguage {confidence 0..100, language}: /detect's best answer for the same text,
    a language /languages lists."""
    assert isinstance(d, dict) and sorted(d) == ["confidence", "language"], d
    assert isinstance(d["confidence"], (int, float)) and 0 <= d["confidence"] <= 100, d
    req = urllib.request.Request(base + "/detect", json.dumps({"q": q}).encode(),
                                 {"Content-Type": "application/json"})
    best = json.load(urllib.request.urlopen(req))[0]
    assert d == best, (d, best)
    return d["language"]

def error(j):
    assert isinstance(j, dict) and list(j) == ["error"] and isinstance(j["error"], str) \
        and j["error"], j
    return j["error"]

$(printf '%s\n' "$@")
EOF
}

start_server open.log
echo "libretranslate_examples: server at $base"

# --- POST /translate ---------------------------------------------------------------------------
# [README] "Simple": en->es mapped to en->de.
lt simple 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Hello!", "source": "en", "target": "de"}'
check simple 'assert list(j) == ["translatedText"], j' 'translated(j["translatedText"], "Hello!")'

# [DOCS] "Simple Translation", api_key included ("can be optional with self-hosting": this server
# has no keys, so it is ignored): en->es mapped to en->de.
lt simple_docs 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Hello!", "source": "en", "target": "de", "api_key": "xxxxxx"}'
check simple_docs 'assert list(j) == ["translatedText"], j' \
  'translated(j["translatedText"], "Hello!")'

# [README] "HTML" and [DOCS] "Translate HTML/Markup" (the same body and an api_key): en->es
# mapped to en->de. The markup comes back around the translation.
html_q='<p class=\"green\">Hello!</p>'
for key_field in "" ', "api_key": "xxxxxx"'; do
  lt html 200 -X POST "$base/translate" -H "Content-Type: application/json" \
    -d "{\"q\": \"$html_q\", \"source\": \"en\", \"target\": \"de\", \"format\": \"html\"$key_field}"
  check html 'assert list(j) == ["translatedText"], j' \
    't = j["translatedText"]' \
    'assert t.startswith("<p class=\"green\">") and t.endswith("</p>"), t' \
    'translated(t, "<p class=\"green\">Hello!</p>", html=True)'
done

# [README] and [DOCS] "Alternative Translations" (the docs add api_key "xxxxxx"): en->it mapped
# to en->de. alternatives: a list of strings, each once, none the translation; the translation
# and the alternatives are the native API's best and other hypotheses of the same beam (the
# LibreTranslate API asks for alternatives + 1 hypotheses with a beam of at least 4).
lt alternatives 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Hello", "source": "en", "target": "de", "format": "text", "alternatives": 3, "api_key": "xxxxxx"}'
check alternatives 'assert sorted(j) == ["alternatives", "translatedText"], j' \
  'alts = j["alternatives"]' \
  'assert isinstance(alts, list) and len(alts) <= 3 and all(isinstance(a, str) and a for a in alts), alts' \
  'assert len(set(alts)) == len(alts) and j["translatedText"] not in alts, j' \
  'translated(j["translatedText"], "Hello", hypotheses=4, beam=4)' \
  'hyps = [h["text"] for h in native("Hello", hypotheses=4, beam=4)["hypotheses"]]' \
  'want = []' \
  'for h in hyps[1:]:' \
  '    if h and h != hyps[0] and h not in want: want.append(h)' \
  'assert alts == want, (alts, want)'

# [README] "Auto Detect Language": auto->en mapped to auto->de. The text is Italian; this server
# lists English and German only, and LibreTranslate detects among the languages it lists, so the
# answer is English (with no confidence when nothing is found) and the text is translated from it.
lt auto 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Ciao!", "source": "auto", "target": "de"}'
check auto 'assert sorted(j) == ["detectedLanguage", "translatedText"], j' \
  'translated(j["translatedText"], "Ciao!", source=detected(j["detectedLanguage"], "Ciao!"))'
# [DOCS] "Auto Detection of Source Language": auto->en mapped to auto->de (French text, as above).
lt auto_docs 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Bonjour!", "source": "auto", "target": "de", "api_key": "xxxxxx"}'
check auto_docs 'assert sorted(j) == ["detectedLanguage", "translatedText"], j' \
  'translated(j["translatedText"], "Bonjour!", source=detected(j["detectedLanguage"], "Bonjour!"))'
# [LTTESTS] test_api_translate_auto_detect_source (form body; es mapped to de): English, sure.
english="This is a sentence written in English for testing purposes"
lt auto_english 200 -X POST "$base/translate" -d "q=$english" -d source=auto -d target=de
check auto_english 'd = j["detectedLanguage"]' \
  'assert detected(d, "'"$english"'") == "en" and d["confidence"] > 0, j' \
  'translated(j["translatedText"], "'"$english"'")'
# [LTTESTS] test_api_translate_batch_auto_detect (es mapped to de): one detectedLanguage per text.
lt auto_batch 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": ["Hello there", "Good morning"], "source": "auto", "target": "de"}'
check auto_batch 'd = j["detectedLanguage"]' \
  'assert isinstance(d, list) and len(d) == 2 and all(x["language"] == "en" for x in d), j' \
  'assert isinstance(j["translatedText"], list) and len(j["translatedText"]) == 2, j' \
  'translated(j["translatedText"][0], "Hello there")' \
  'translated(j["translatedText"][1], "Good morning")'
# German detected, into German: LibreTranslate's 400 for a pair it has no model for.
lt auto_german 400 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Der schnelle braune Fuchs springt über den faulen Hund.", "source": "auto", "target": "de"}'
check auto_german \
  'assert error(j) == "German (de) is not available as a target language from German (de)", j'

# [FAQ] "Can I do batch translations?": q an array, translatedText an array of as many strings.
# en->es mapped to en->de.
lt batch 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": ["Hello", "world"], "source": "en", "target": "de"}'
check batch 'assert list(j) == ["translatedText"], j' \
  't = j["translatedText"]' \
  'assert isinstance(t, list) and len(t) == 2, t' \
  'translated(t[0], "Hello")' 'translated(t[1], "world")'

# [SPEC] the parameters' own examples (q "Hello world!", source en, target es, format text,
# alternatives 3), sent as the spec declares them: formData. es mapped to de.
lt spec_form 200 -X POST "$base/translate" -H "accept: application/json" \
  -H "Content-Type: application/x-www-form-urlencoded" \
  -d "q=Hello%20world!&source=en&target=de&format=text&alternatives=3"
check spec_form 'assert sorted(j) == ["alternatives", "translatedText"], j' \
  'assert isinstance(j["alternatives"], list) and len(j["alternatives"]) <= 3, j' \
  'translated(j["translatedText"], "Hello world!", hypotheses=4, beam=4)'
# [SPEC] q as its array example ['Hello world!'], as JSON: translatedText an array.
lt spec_array 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": ["Hello world!"], "source": "en", "target": "de"}'
check spec_array 't = j["translatedText"]' 'assert isinstance(t, list) and len(t) == 1, j' \
  'translated(t[0], "Hello world!")'

# One sentence this small model does translate, so that "German" is seen, not just assumed.
lt sentence 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "The house is small.", "source": "en", "target": "de"}'
check sentence 'assert j["translatedText"] != "The house is small.", j' \
  'translated(j["translatedText"], "The house is small.")'

# Form-encoded (curl -d) and multipart (curl -F) bodies, and query parameters (LibreTranslate
# reads request.values: form and query), give the JSON body's translation.
for q in "Hello world!" "The house is small."; do
  lt json_body 200 -X POST "$base/translate" -H "Content-Type: application/json" \
    -d "{\"q\": \"$q\", \"source\": \"en\", \"target\": \"de\"}"
  lt form_body 200 -X POST "$base/translate" --data-urlencode "q=$q" -d source=en -d target=de
  lt multipart_body 200 -X POST "$base/translate" -F "q=$q" -F source=en -F target=de
  # An empty body (Content-Length: 0): cpp-httplib 0.11 answers a POST with no Content-Length
  # at all 400 before any route runs.
  query="q=$(/usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$q")"
  lt query_params 200 -X POST "$base/translate?$query&source=en&target=de" -d ''
  cmp -s "$work/json_body.json" "$work/form_body.json" || fail "form body: $(cat "$work/form_body.json")"
  cmp -s "$work/json_body.json" "$work/query_params.json" \
    || fail "query parameters: $(cat "$work/query_params.json")"
  cmp -s "$work/json_body.json" "$work/multipart_body.json" \
    || fail "multipart body: $(cat "$work/multipart_body.json")"
  check form_body "translated(j['translatedText'], '''$q''')"
done

# --- POST /detect, GET /languages, GET /frontend/settings --------------------------------------
# [DOCS] "Language Detection": a list of {confidence, language}, best first; LibreTranslate
# detects among the languages it lists (here en and de), with confidence 0..100.
lt detect 200 -X POST "$base/detect" -H "Content-Type: application/json" -d '{"q": "Bonjour!"}'
check detect 'assert isinstance(j, list) and j, j' \
  'langs = [l["code"] for l in json.load(urllib.request.urlopen(base + "/languages"))]' \
  'for d in j:' \
  '    assert sorted(d) == ["confidence", "language"], d' \
  '    assert isinstance(d["confidence"], (int, float)) and 0 <= d["confidence"] <= 100, d' \
  '    assert d["language"] in langs, (d, langs)' \
  'assert [d["confidence"] for d in j] == sorted((d["confidence"] for d in j), reverse=True), j'
# [SPEC] /detect's q example "Hello world!", as formData; and a German text is German.
lt detect_form 200 -X POST "$base/detect" -d "q=Hello%20world!"
check detect_form 'assert isinstance(j, list) and j[0]["language"] == "en", j'
lt detect_de 200 -X POST "$base/detect" -H "Content-Type: application/json" \
  -d '{"q": "Der schnelle braune Fuchs springt über den faulen Hund und die Katze schläft."}'
check detect_de 'assert j[0]["language"] == "de" and j[0]["confidence"] > 50, j'

# [README] "List of language codes: https://libretranslate.com/languages"; [SPEC] /languages:
# [{code, name, targets}], names in English.
lt languages 200 "$base/languages"
check languages 'assert isinstance(j, list) and j, j' \
  'for l in j:' \
  '    assert sorted(l) == ["code", "name", "targets"], l' \
  '    assert isinstance(l["code"], str) and isinstance(l["name"], str) and l["name"], l' \
  '    assert isinstance(l["targets"], list) and all(isinstance(t, str) for t in l["targets"]), l' \
  'by = {l["code"]: l for l in j}' \
  'assert by["en"]["name"] == "English" and by["en"]["targets"] == ["de"], j' \
  'assert by["de"]["name"] == "German", j'

# [SPEC] /frontend/settings: charLimit, frontendTimeout (integers), apiKeys, keyRequired,
# suggestions (booleans), supportedFilesFormat (list), language.source/target {code, name}.
lt settings 200 "$base/frontend/settings"
check settings \
  'for k in ("charLimit", "frontendTimeout"): assert type(j[k]) is int, (k, j)' \
  'for k in ("apiKeys", "keyRequired", "suggestions"): assert type(j[k]) is bool, (k, j)' \
  'assert j["apiKeys"] is False and j["keyRequired"] is False, j' \
  'assert isinstance(j["supportedFilesFormat"], list), j' \
  'for side in ("source", "target"):' \
  '    l = j["language"][side]' \
  '    assert isinstance(l["code"], str) and isinstance(l["name"], str), l' \
  'assert j["language"]["source"] == {"code": "auto", "name": "Auto Detect"}, j' \
  'assert j["language"]["target"]["code"] == "de", j'

# --- Errors as LibreTranslate answers them [LTTESTS], [SPEC]: 400 {"error": string} ----------
lt missing_q 400 -X POST "$base/translate" -d source=en -d target=de -d format=text
check missing_q 'assert error(j) == "Invalid request: missing q parameter", j'
lt missing_q_json 400 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"source": "en", "target": "de"}'
check missing_q_json 'assert error(j) == "Invalid request: missing q parameter", j'
lt missing_source 400 -X POST "$base/translate" -d q=Hello -d target=de
check missing_source 'assert error(j) == "Invalid request: missing source parameter", j'
lt missing_target 400 -X POST "$base/translate" -d q=Hello -d source=en
check missing_target 'assert error(j) == "Invalid request: missing target parameter", j'
lt bad_target 400 -X POST "$base/translate" -d q=Hello -d source=en -d target=zz -d format=text
check bad_target 'assert error(j) == "zz is not supported", j'
lt bad_source 400 -X POST "$base/translate" -d q=Hello -d source=zz -d target=de
check bad_source 'assert error(j) == "zz is not supported", j'
lt bad_format 400 -X POST "$base/translate" -d q=Hello -d source=en -d target=de -d format=xml
check bad_format 'assert error(j) == "xml format is not supported", j'
lt bad_alternatives 400 -X POST "$base/translate" -d q=Hello -d source=en -d target=de \
  -d alternatives=abc
check bad_alternatives 'assert error(j) == "Invalid request: alternatives parameter is not a number", j'
lt empty_batch 400 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": [], "source": "en", "target": "de"}'
check empty_batch 'assert error(j) == "Invalid request: missing q parameter", j'
lt not_a_dict 400 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '["not", "a", "dict"]'
check not_a_dict 'assert error(j) == "Invalid JSON format", j'
lt detect_missing_q 400 -X POST "$base/detect" -H "Content-Type: application/json" -d '{}'
check detect_missing_q 'assert error(j) == "Invalid request: missing q parameter", j'
stop_server "$server_pid" "the server"
server_pid=""

# --- A server with keys: api_key is the bearer token ------------------------------------------
# LibreTranslate: a wrong key is 403 "Invalid API key" [LTTESTS]; a missing one is 403 here
# (LibreTranslate: 400), with LibreTranslate's wording.
key="k$RANDOM$RANDOM"
start_server keys.log --auth_token="$key"
lt no_key 403 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Hello!", "source": "en", "target": "de"}'
check no_key 'assert error(j) == "Please contact the server operator to get an API key", j'
# [DOCS] "Simple Translation" as published, api_key "xxxxxx": a wrong key here.
lt docs_key 403 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d '{"q": "Hello!", "source": "en", "target": "de", "api_key": "xxxxxx"}'
check docs_key 'assert error(j) == "Invalid API key", j'
lt wrong_key_form 403 -X POST "$base/translate" -d q=Hello -d source=en -d target=de \
  -d api_key=bogus-key
check wrong_key_form 'assert error(j) == "Invalid API key", j'
lt detect_no_key 403 -X POST "$base/detect" -d "q=Hello%20world!"
check detect_no_key 'error(j)'
lt right_key 200 -X POST "$base/translate" -H "Content-Type: application/json" \
  -d "{\"q\": \"Hello!\", \"source\": \"en\", \"target\": \"de\", \"api_key\": \"$key\"}"
lt right_key_form 200 -X POST "$base/translate" -d q=Hello! -d source=en -d target=de \
  -d "api_key=$key"
lt right_key_multipart 200 -X POST "$base/translate" -F q=Hello! -F source=en -F target=de \
  -F "api_key=$key"
cmp -s "$work/right_key.json" "$work/right_key_form.json" || fail "form with key differs"
cmp -s "$work/right_key.json" "$work/right_key_multipart.json" || fail "multipart with key differs"
lt detect_right_key 200 -X POST "$base/detect" -d "q=Hello%20world!" -d "api_key=$key"
check detect_right_key 'assert j[0]["language"] == "en", j'
# /languages and /frontend/settings stay open, as in LibreTranslate; the settings say keys are on.
lt keys_languages 200 "$base/languages"
lt keys_settings 200 "$base/frontend/settings"
check keys_settings 'assert j["apiKeys"] is True and j["keyRequired"] is True, j'
stop_server "$server_pid" "the server with keys"
server_pid=""
echo "libretranslate_examples: OK"
