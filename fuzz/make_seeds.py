#!/usr/bin/python3
"""Writes the fuzzers' seed corpus into fuzz/corpus/<target>/ (deterministic; committed).

safetensors: small valid files (F32, F16, BF16, scalars, metadata) and the hostile shapes the
reader must refuse (huge header length, offsets beyond the file, overlapping and gapped tensors,
size mismatches, NaN weights, bad JSON). spm: texts for the fixture model (first byte 0) and
a small unigram and a small BPE model trained here with spm_train (first byte 1; identity
normalization keeps them small: the fixture exercises the charsmap), whole and truncated. request:
serialized TranslateRequest messages, valid and out of range, hand-encoded in the protobuf wire
format (Debian's python3-protobuf is not required). http_request: LibreTranslate requests in
each body encoding, valid and hostile, with the fake backend's answers (see the fuzzer's layout).
pytorch_checkpoint: the small torch.save fixtures of tests/fixtures/pytorch/ (zip and legacy),
cut short, with a compressed entry, a refused global and a hand-written pickle.
ctranslate2_model_bin: small model.bin files in the converters' layout (version 6 with every dtype
and aliases, version 3 with item sizes, version 1 without a spec name) and the hostile shapes the
reader must refuse (unknown version and dtype, lying byte counts, rank 100, overflowing shapes,
huge counts, unterminated strings, aliases to nothing and in a cycle, duplicates, truncation), and
whole TransformerSpec models for the spec loader (tiny random ones, an implausibly wide table).
"""
import json
import os
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None, header_override=None, length_override=None, tail=b""):
    header, data = {}, b""
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata is not None:
        header["__metadata__"] = metadata
    text = header_override if header_override is not None else json.dumps(header).encode()
    length = length_override if length_override is not None else len(text)
    return struct.pack("<Q", length) + text + data + tail


def safetensors_seeds():
    f32 = struct.pack("<4f", 1.0, -2.5, 3.25, 0.0)
    f16 = struct.pack("<4H", 0x3C00, 0xC100, 0x7BFF, 0x0001)
    bf16 = struct.pack("<2H", 0x3F80, 0xFF80)
    write("safetensors", "valid_mixed", safetensors(
        {"a": ("F32", [2, 2], f32), "b": ("F16", [4], f16), "c": ("BF16", [2], bf16)},
        metadata={"format": "pt"}))
    write("safetensors", "valid_scalar", safetensors({"s": ("F32", [], f32[:4])}))
    write("safetensors", "valid_empty_tensor", safetensors({"e": ("F32", [0, 3], b"")}))
    write("safetensors", "nan_weights", safetensors(
        {"w": ("F32", [2], struct.pack("<2I", 0x7FC00000, 0x7F800000))}))
    write("safetensors", "huge_header_length", safetensors(
        {"a": ("F32", [1], f32[:4])}, length_override=2**63))
    write("safetensors", "offsets_beyond_file", safetensors(
        {}, header_override=b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'))
    write("safetensors", "overlapping", safetensors(
        {}, header_override=(b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                             b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}'),
        tail=f32[:12]))
    write("safetensors", "gap", safetensors(
        {}, header_override=b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
        tail=f32[:8]))
    write("safetensors", "size_mismatch", safetensors(
        {}, header_override=b'{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}',
        tail=f32[:8]))
    write("safetensors", "shape_overflow", safetensors(
        {}, header_override=(b'{"a":{"dtype":"F32","shape":[4294967296,4294967296],'
                             b'"data_offsets":[0,0]}}')))
    write("safetensors", "bad_json", safetensors({}, header_override=b'{"a":{"dtype":'))
    write("safetensors", "duplicate_keys", safetensors(
        {}, header_override=(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                             b'"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
        tail=f32[:4]))
    write("safetensors", "truncated", safetensors({"a": ("F32", [2, 2], f32)})[:-5])


def spm_seeds():
    for i, text in enumerate(["Hello world.", "The house is small. Das Haus ist klein.",
                              "caf\u00e9 \u2581\u2581 \t tabs\u3000ideographic", "\xff\xfe bad",
                              "", "a" * 300, "1234567890 %(file)s <b>markup</b>"]):
        write("spm", f"text_{i}", b"\x00" + text.encode("utf-8", "surrogateescape"))
    with tempfile.TemporaryDirectory() as tmp:
        words = ("the house is small we walk through old city tonight hello world "
                 "a an of to in on for with").split()
        with open(os.path.join(tmp, "train.txt"), "w") as f:
            for i in range(400):
                f.write(" ".join(words[(i * 7 + j) % len(words)] for j in range(8)) + "\n")
        models = {}
        for kind in ("unigram", "bpe"):
            subprocess.run(["spm_train", f"--input={tmp}/train.txt", f"--model_prefix={tmp}/{kind}",
                            "--vocab_size=30", f"--model_type={kind}", "--minloglevel=2",
                            "--hard_vocab_limit=false", "--normalization_rule_name=identity"],
                           check=True, capture_output=True)
            with open(os.path.join(tmp, f"{kind}.model"), "rb") as f:
                models[kind] = f.read()
    model = models["unigram"]
    write("spm", "model_small", b"\x01" + model)
    write("spm", "model_small_bpe", b"\x01" + models["bpe"])
    write("spm", "model_truncated", b"\x01" + model[: len(model) // 2])
    write("spm", "model_garbage", b"\x01" + bytes(range(256)))


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field_bytes(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_int(number, value):
    return varint(number << 3) + varint(value & 0xFFFFFFFFFFFFFFFF)


def request(texts, model=b"", options=b""):
    out = b"".join(field_bytes(1, t) for t in texts)
    if model:
        out += field_bytes(2, model)
    if options:
        out += field_bytes(3, options)
    return out


def request_seeds():
    write("request", "one_text", request([b"Hello world."]))
    write("request", "beam_options", request(
        [b"The house is small.", b"We walk."],
        options=field_int(1, 4) + field_int(2, 16) + field_int(4, 2) + field_int(5, 1)))
    write("request", "empty_text", request([b""]))
    write("request", "no_texts", request([]))
    write("request", "invalid_utf8", request([b"ok", b"\xc3\x28 bad"]))
    write("request", "nul_and_controls", request([b"a\x00b\x01\x7f c"]))
    write("request", "too_many_texts", request([b"x"] * 20))
    write("request", "long_text", request([b"word " * 120]))
    write("request", "negative_options", request(
        [b"x"], options=field_int(1, -1) + field_int(2, -5) + field_int(7, 99)))
    write("request", "huge_options", request([b"x"], options=field_int(1, 2**31 - 1)))
    write("request", "unknown_model", request([b"x"], model=b"nope"))
    write("request", "truncate_long", request([b"word " * 200], options=field_int(8, 1)))


def html_document_seeds():
    seeds = {
        "paragraphs": b"<p>The <b>red</b> house.</p><p>A <a href=\"/x?a=1&amp;b=2\">link</a> here.</p>",
        "nested": b"<div>Intro <p>A <b>big <i>red</i> house</b> here.</p> outro</div>",
        "attributes": b"<p title=\"Tom &amp; Jerry\">See <img alt='a cat' src=x> now</p>"
                      b"<input placeholder=name><button aria-label=\"Close it\">X</button>",
        "raw": b"<script>if (a < b) x = '<b>';</script><pre>  keep </pre><p>Call <code>f()</code>"
               b" or <span translate=\"no\">Brand</span> <span class=\"notranslate\">x</span></p>",
        "entities": b"<p>Fish &amp; chips &lt;3 &gt; a&nbsp;b &copy; &mdash; &#8212; &#x263A; & bare</p>",
        "omitted": b"<ul><li>one<li>two <b>bold</ul><p>para<p>next",
        "misnested": b"<p><b>x <i>y</b> z</i></p><a>1<a>2</a></a><table>t<tr><td>x</table>",
        "xml": b"<x:g id=\"1\">Hello</x:g> <ph id=\"2\"/> world <bpt i=\"1\">&lt;b&gt;</bpt>",
        "document": b"<!DOCTYPE html>\r\n<html><head><title>T</title></head><body><!-- c -->"
                    b"<p>Body\r\ntext<br>more</p></body></html>",
        "non_ascii": "<p>\u00dcber <b>gro\u00dfe</b> Stra\u00dfen \u65e5\u672c \u0645\u0631\u062d\u0628\u0627</p>"
                     .encode() + b"\xff\xfe<b>bad utf8</b>\x00nul",
        "deep": b"<div>" * 300 + b"deep",
        "table": b"<table><caption>Cap</caption><tr><th>Name</th><td>John <em>Smith</em></td></tr></table>",
    }
    for name, data in seeds.items():
        write("html_document", name, data)


def http_request_seeds():
    # Layout (http_request_fuzzer.cc): which (API in bits 0-1, content type in bits 2-4, limits
    # bit 5, GET bit 6, Authorization bit 7), the backend's ListModels and Translate codes (under
    # 244: OK), its shape (models, key, detected language), its confidence, its salt, the
    # parameters, the Authorization header, the timeout, then the body.
    def short(b):
        return bytes([len(b)]) + b

    def seed(api, content_type, body=b"", params=(), list_code=0, translate_code=0, shape=0x34,
             auth=None, limits=False, odd=None):
        which = api | content_type << 2 | (0x20 if limits else 0) | (0x80 if auth is not None else 0)
        out = bytes([which, list_code, translate_code, shape, 200])
        if odd is not None:  # shape bit 7: a model with these name, source, target, targets
            out += b"".join(short(f) for f in odd)
        out += short(b"salt")
        out += bytes([len(params)])
        for k, v in params:
            out += bytes([k]) + short(v)
        if auth is not None:
            out += short(auth)
        return out + bytes([0]) + body

    q, source, target, fmt, alternatives, api_key = range(6)
    seeds = {
        "json_text": seed(0, 0, b'{"q": "Hello world!", "source": "en", "target": "de"}'),
        "json_array_auto": seed(0, 4, b'{"q": ["Hello", "Good day"], "source": "auto", '
                                      b'"target": "de", "alternatives": 2, "api_key": "k"}'),
        "json_html": seed(0, 6, b'{"q": "<p>Hi <b>you</b></p>", "source": "en", "target": "fr", '
                                b'"format": "html", "alternatives": "3"}', shape=0x30),
        "json_wrong_types": seed(0, 0, b'{"q": [1, {"a": null}], "source": 5, "target": [],'
                                       b' "alternatives": 1e400}'),
        "json_huge_alternatives": seed(0, 7, b'{"q": "x", "source": "de", "target": "en", '
                                             b'"alternatives": 99999999999999999999999}'),
        "json_invalid": seed(0, 0, b'{"q": "unterminated'),
        "json_not_object": seed(0, 0, b'[["q", "x"]]'),
        "form": seed(0, 1, params=[(q, b"Line one\r\nline two"), (source, b"en"), (target, b"de"),
                                   (alternatives, b" 2 "), (api_key, b"key")], auth=b"Bearer t"),
        "multipart_html": seed(0, 2, params=[(q, b"<i>x</i>"), (source, b"auto"), (target, b"es"),
                                             (fmt, b"html")], shape=0x22),
        "query_limits": seed(0, 3, params=[(q, b"word " * 20), (source, b"en"), (target, b"de")],
                             limits=True),
        "form_bad_utf8": seed(0, 5, params=[(q, b"\xff\xfe\xc3("), (source, b"\xff"), (target, b"de")]),
        "translate_queue_full": seed(0, 0, b'{"q": "x", "source": "en", "target": "de"}',
                                     translate_code=248),
        "translate_internal": seed(0, 0, b'{"q": "x", "source": "en", "target": "de"}',
                                   translate_code=252),
        "list_unauthenticated": seed(0, 0, b'{"q": "x", "source": "en", "target": "de"}',
                                     list_code=246),
        "odd_model": seed(0, 0, b'{"q": "x", "source": "zz", "target": "yy"}', shape=0x80,
                          odd=(b"m", b"zz", b"mul", b"yy")),
        "detect_json": seed(1, 0, b'{"q": "Der schnelle braune Fuchs springt \xc3\xbcber den Hund."}'),
        "detect_array": seed(1, 0, b'{"q": ["The quick brown fox", "Le renard brun"]}', shape=0x70),
        "detect_form": seed(1, 1, params=[(q, b"Ceci est une phrase en fran\xc3\xa7ais.")]),
        "languages": seed(2, 3, shape=0x70),
        "languages_key": seed(2, 0, b'{"api_key": "k"}', list_code=247),
        "settings": seed(3, 3, shape=0x71),
    }
    for name, data in seeds.items():
        write("http_request", name, data)


def pytorch_checkpoint_seeds():
    fixtures = os.path.join(HERE, "..", "tests", "fixtures", "pytorch")
    zipped = open(os.path.join(fixtures, "mixed.zip.bin"), "rb").read()
    legacy = open(os.path.join(fixtures, "mixed.legacy.bin"), "rb").read()
    write("pytorch_checkpoint", "mixed_zip", zipped)
    write("pytorch_checkpoint", "mixed_legacy", legacy)
    write("pytorch_checkpoint", "legacy_truncated", legacy[:len(legacy) // 2])
    central = zipped.find(b"PK\x01\x02")
    write("pytorch_checkpoint", "zip_compressed",
          zipped[:central + 10] + b"\x08" + zipped[central + 11:])
    write("pytorch_checkpoint", "zip_os_system",
          zipped.replace(b"torch\nFloatStorage", b"posix\nFloatStorage", 1))
    write("pytorch_checkpoint", "pickle_reduce_eval",
          b"\x80\x02cbuiltins\neval\nX\x02\x00\x00\x001+\x85R.")


def ct2_string(s):
    data = s.encode()
    return struct.pack("<H", len(data) + 1) + data + b"\0"


def ct2_variable(name, shape, dtype, data, num_bytes=None, version=6):
    out = ct2_string(name) + struct.pack("<B", len(shape))
    out += b"".join(struct.pack("<I", d) for d in shape)
    if version >= 4:  # dtype id, byte count
        count = len(data) if num_bytes is None else num_bytes
        return out + struct.pack("<BI", dtype, count) + data
    item_size = {0: 4, 2: 2, 1: 1}[dtype]  # item size, element count
    count = len(data) // item_size if num_bytes is None else num_bytes // item_size
    return out + struct.pack("<BI", item_size, count) + data


def ct2_model_bin(variables, aliases=(), version=6, spec="TransformerSpec", revision=3,
                  count=None, tail=b""):
    out = struct.pack("<I", version)
    if version >= 2:
        out += ct2_string(spec) + struct.pack("<I", revision)
    out += struct.pack("<I", len(variables) if count is None else count) + b"".join(variables)
    if version >= 3:
        out += struct.pack("<I", len(aliases))
        out += b"".join(ct2_string(a) + ct2_string(t) for a, t in aliases)
    return out + tail


def ctranslate2_model_bin_seeds():
    def seed(name, data):
        write("ctranslate2_model_bin", name, data)

    f32 = struct.pack("<4f", 1.0, -2.5, 3.25, 0.5)
    int8 = b"\x81\x7f\x05\xfb\x11\x22"
    every = [ct2_variable("decoder/embeddings/weight", [2, 2], 0, f32),
             ct2_variable("decoder/layer_0/ffn/linear_0/weight", [2, 3], 1, int8),
             ct2_variable("decoder/layer_0/ffn/linear_0/weight_scale", [2], 0, f32[:8]),
             ct2_variable("encoder/int16", [3], 2, struct.pack("<3h", -7, 300, 12)),
             ct2_variable("encoder/int32", [], 3, struct.pack("<i", -123456)),
             ct2_variable("encoder/layer_0/self_attention/linear_0/bias", [4], 4,
                          struct.pack("<4H", 0x3C00, 0xC100, 0x7BFF, 0x0001)),
             ct2_variable("encoder/position_encodings/encodings", [1, 2], 5,
                          struct.pack("<2H", 0x3F80, 0xFF80)),
             ct2_variable("unk_token", [5], 1, b"<unk>")]
    aliases = [("encoder/embeddings/weight", "decoder/embeddings/weight"),
               ("decoder/projection/weight", "encoder/embeddings/weight")]
    seed("valid_v6_every_dtype", ct2_model_bin(every, aliases))
    seed("valid_v3_item_sizes", ct2_model_bin(
        [ct2_variable("w", [2, 2], 0, f32, version=3),
         ct2_variable("q", [2], 2, struct.pack("<2h", 5, -9), version=3)],
        [("v", "w")], version=3, revision=1))
    seed("valid_v1_no_spec", ct2_model_bin([ct2_variable("w", [4], 0, f32, version=1)], version=1))
    seed("unknown_version", ct2_model_bin(every[:1], version=7))
    seed("unknown_dtype", ct2_model_bin([ct2_variable("w", [1], 6, f32[:4])]))
    seed("lying_byte_count", ct2_model_bin([ct2_variable("w", [3], 0, f32[:8])]))
    seed("byte_count_beyond_file", ct2_model_bin(
        [ct2_variable("w", [1000, 1000], 0, f32, num_bytes=4000000)]))
    seed("rank_100", ct2_model_bin([ct2_variable("w", [1] * 100, 0, f32[:4])]))
    seed("shape_overflow", ct2_model_bin([ct2_variable("w", [0xFFFFFFFF] * 8, 0, f32[:4])]))
    seed("huge_variable_count", ct2_model_bin(every[:1], count=0xFFFFFFFF))
    seed("string_beyond_file", struct.pack("<IH", 6, 65535) + b"TransformerSpec")
    seed("unterminated_string", struct.pack("<IH", 6, 4) + b"Spec" + struct.pack("<III", 1, 0, 0))
    seed("alias_to_missing", ct2_model_bin(every[:1], [("a", "missing")]))
    seed("alias_cycle", ct2_model_bin(every[:1], [("a", "b"), ("b", "a")]))
    seed("duplicate_names", ct2_model_bin([every[0], every[0]]))
    seed("trailing_bytes", ct2_model_bin(every[:2], tail=b"xyz"))
    seed("truncated", ct2_model_bin(every, aliases)[:-7])
    # Whole TransformerSpec models for the spec loader, small enough for fuzz.sh's -max_len (the
    # reference's writer: tools/reference/make_random_ct2_model.py): pre-norm int8, post-norm
    # with tied tables and stored positions; and a table as wide as no translation model is.
    import subprocess
    import tempfile
    writer = os.path.join(HERE, "..", "tools", "reference", "make_random_ct2_model.py")
    for name, flags in (("spec_pre_norm_int8", ["--pre_norm", "--dtype", "int8"]),
                        ("spec_post_norm_tied", ["--shared_vocab", "--share_embeddings",
                                                 "--tied_projection", "--positions", "stored",
                                                 "--position_rows", "16",
                                                 "--start_from_zero_embedding"])):
        with tempfile.TemporaryDirectory() as out:
            subprocess.run(["/usr/bin/python3", writer, "--out", out, "--seed", "3",
                            "--d_model", "8", "--heads", "2", "--ffn", "12",
                            "--encoder_layers", "1", "--decoder_layers", "1",
                            "--source_vocab", "12", "--target_vocab", "12"] + flags,
                           check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out, "model.bin"), "rb") as f:
                seed(name, f.read())
    seed("spec_width_20000", ct2_model_bin(
        [ct2_variable("decoder/embeddings/weight", [3, 20000], 1, b"\x01" * 60000)],
        [("encoder/embeddings_0/weight", "decoder/embeddings/weight")], revision=7))

if __name__ == "__main__":
    safetensors_seeds()
    pytorch_checkpoint_seeds()
    ctranslate2_model_bin_seeds()
    spm_seeds()
    request_seeds()
    html_document_seeds()
    http_request_seeds()
    for target in ("safetensors", "pytorch_checkpoint", "ctranslate2_model_bin", "spm", "request",
                   "html_document", "http_request"):
        print(target, len(os.listdir(os.path.join(HERE, "corpus", target))), "seeds")
