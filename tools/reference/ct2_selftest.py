#!/usr/bin/env python3
"""Self-checks of the CTranslate2 reference, the random-directory writer and the committed
CTranslate2 fixtures (tests/fixtures/ct2/).

  /usr/bin/python3 tools/reference/ct2_selftest.py

1. model.bin: the writer's files read back bit for bit (every dtype, rank 0 to 3, binary
   versions 1 to 6, aliases and alias chains, the `_scale` companion of an alias); every
   stricter-than-CTranslate2 rejection of the format doc (section 2);
2. vocabularies and special tokens: .json before .txt, shared before separate, the carriage
   return rule, the appended unknown token, duplicated tokens, config.json types and defaults,
   the attribute tokens of binary versions below 6;
3. int8 (per row) and int16 dequantization error bounds; float16 / bfloat16 values exact;
4. CTranslate2's generated sinusoid table against hand-computed values;
5. model semantics: embedding-scale rules, unscoped attributes of revisions < 5, aliases vs
   copies and older binary versions give identical logits, unsupported variables refused by
   name; the model against an independent float64 numpy forward pass (every fixture's layout);
   the KV-cache decoder against the full decoder;
6. the committed fixtures reproduce (ids equal, scores within 1e-5) and are small.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ct2_reference as cr  # noqa: E402
import make_random_ct2_model as mk  # noqa: E402
import marian_reference as mr  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "ct2")
failures = []


def check(cond: bool, what: str) -> None:
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def expect_error(fn, fragment: str, what: str) -> None:
    try:
        fn()
    except (cr.Ct2FormatError, ValueError) as e:
        check(fragment in str(e), f"{what} (error: {str(e)[:110]})")
        return
    check(False, f"{what} (no error)")


# ---------------------------------------------------------------------------------------------
# 1. model.bin
# ---------------------------------------------------------------------------------------------


def _sample_vars():
    rng = np.random.default_rng(3)
    f = rng.standard_normal((4, 3)).astype(np.float32)
    return [
        ("a/bf16", mk.Var("bfloat16", mk.bfloat16_bits(f))),
        ("a/f16", mk.Var("float16", f.astype(np.float16))),
        ("a/f32", mk.Var("float32", f)),
        ("a/i16", mk.Var("int16", np.arange(-6, 6, dtype=np.int16).reshape(3, 4))),
        ("a/i32", mk.Var("int32", np.array([7, -1 << 30], dtype=np.int32))),
        ("a/i8", mk.Var("int8", np.arange(-12, 12, dtype=np.int8).reshape(2, 3, 4))),
        ("a/scalar_f32", mk.Var("float32", np.array(2.5, dtype=np.float32))),
        ("a/scalar_i8", mk.Var("int8", np.array(1, dtype=np.int8))),
        ("w/weight", mk.Var("int8", np.array([[1, -2], [3, 4]], dtype=np.int8))),
        ("w/weight_scale", mk.Var("float32", np.array([10.0, 20.0], dtype=np.float32))),
    ]


def test_model_bin(tmp: str) -> None:
    path = os.path.join(tmp, "m.bin")
    vs = _sample_vars()
    aliases = [("b/alias", "a/f32"), ("c/chain", "b/alias"), ("p/weight", "w/weight")]
    for version in (6, 5, 4):
        mk.write_model_bin(path, vs, aliases, revision=7, version=version)
        b = cr.read_model_bin(path)
        same = all(b.variables[n].dtype == v.dtype and b.variables[n].shape == v.array.shape
                   and np.array_equal(b.variables[n].array.reshape(v.array.shape), v.array)
                   for n, v in vs)
        check(same and list(b.variables) == [n for n, _ in vs] and b.version == version
              and b.spec_name == "TransformerSpec" and b.revision == 7,
              f"version {version}: every dtype / rank reads back bit for bit, in file order")
        check(b.resolve("c/chain") == "a/f32" and b.resolve("b/alias") == "a/f32",
              f"version {version}: aliases and alias chains resolve")
    check(b.resolve("p/weight_scale") == "w/weight_scale" and b.resolve("p/weight_zero") is None,
          "an alias's `_scale` companion resolves to its target's scale")
    check(np.array_equal(b.variables["a/bf16"].as_float32(),
                         torch.from_numpy(vs[2][1].array).bfloat16().float().numpy())
          and np.array_equal(b.variables["a/f16"].as_float32(),
                             vs[2][1].array.astype(np.float16).astype(np.float32)),
          "bfloat16 / float16 upcast to the exactly rounded float32 values")
    old = [(n, v) for n, v in vs if v.dtype in ("float32", "int16", "int8")]
    for version, al in ((3, aliases), (2, []), (1, [])):
        mk.write_model_bin(path, old, al, revision=3, version=version)
        b = cr.read_model_bin(path)
        same = all(b.variables[n].dtype == v.dtype and np.array_equal(
            b.variables[n].array.reshape(v.array.shape), v.array) for n, v in old)
        check(same and b.aliases == ({"b/alias": "a/f32", "c/chain": "a/f32", "p/weight": "w/weight"}
                                     if al else {})
              and (b.revision, b.spec_name) == ((3, "TransformerSpec") if version > 1 else (1, "")),
              f"version {version} (item size + element count{', aliases' if al else ''}) reads back")

    def write(data: bytes):
        with open(path, "wb") as f:
            f.write(data)

    def read():
        return cr.read_model_bin(path)

    def rec(name: bytes, payload=b"\0\0\0\0", rank=0, dims=(), dtype=0, nbytes=None):
        out = struct.pack("<H", len(name)) + name + struct.pack("<B", rank)
        out += b"".join(struct.pack("<I", d) for d in dims)
        out += struct.pack("<BI", dtype, len(payload) if nbytes is None else nbytes) + payload
        return out

    def file(records, aliases=(), version=6, count=None):
        out = struct.pack("<I", version) + struct.pack("<H", 5) + b"Spec\0" + struct.pack("<I", 7)
        out += struct.pack("<I", len(records) if count is None else count) + b"".join(records)
        out += struct.pack("<I", len(aliases))
        for a, t in aliases:
            out += struct.pack("<H", len(a)) + a + struct.pack("<H", len(t)) + t
        return out

    good = file([rec(b"x\0"), rec(b"y\0")], [(b"z\0", b"x\0")])
    write(good)
    check(read().resolve("z") == "x", "hand-built file reads")
    cases = [
        (struct.pack("<I", 0) + good[4:], "unsupported binary version 0", "version 0 refused"),
        (struct.pack("<I", 7) + good[4:], "unsupported binary version 7", "version 7 refused"),
        (good + b"\0", "bytes after the last record", "a trailing byte refused"),
        (good[:-1], "truncated", "a truncated file refused"),
        (file([rec(b"xy")]), "does not end with NUL", "a string without its final NUL refused"),
        (file([rec(b"x\0y\0")]), "NUL before its end", "a string with an inner NUL refused"),
        (file([rec(b"\0")]), "empty name", "an empty variable name refused"),
        (file([rec(b"x\0", rank=9, dims=(1,) * 9)]), "rank 9", "rank above 8 refused"),
        (file([rec(b"x\0"), rec(b"x\0")]), "duplicated variable name x", "a duplicated variable refused"),
        (file([rec(b"x\0", nbytes=8)]), "byte count 8", "a wrong byte count refused"),
        (file([rec(b"x\0", dtype=9)]), "unknown dtype id 9", "an unknown dtype id refused"),
        (file([rec(b"x\0")], [(b"x\0", b"x\0")]), "alias x names a variable",
         "an alias naming a variable refused"),
        (file([rec(b"x\0")], [(b"z\0", b"x\0"), (b"z\0", b"x\0")]), "defined twice",
         "an alias defined twice refused"),
        (file([rec(b"x\0")], [(b"z\0", b"nope\0")]), "does not resolve",
         "an unresolved alias refused"),
        (file([rec(b"x\0")], [(b"z\0", b"w\0"), (b"w\0", b"z\0")]), "alias cycle",
         "an alias cycle refused"),
    ]
    for data, frag, what in cases:
        write(data)
        expect_error(read, frag, what)


# ---------------------------------------------------------------------------------------------
# 2. vocabularies and special tokens
# ---------------------------------------------------------------------------------------------


def test_vocabularies(tmp: str) -> None:
    d = os.path.join(tmp, "vocab")
    os.makedirs(d)

    def put(name, data: bytes):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)

    put("v.txt", b"a\r\nb\r\nc\r\n")
    check(cr.read_vocabulary_file(os.path.join(d, "v")) == ["a", "b", "c"],
          "txt: a CR on every line is dropped")
    put("v.txt", b"a\r\nb\nc\r\n")
    check(cr.read_vocabulary_file(os.path.join(d, "v")) == ["a\r", "b", "c\r"],
          "txt: a CR on only some lines is kept")
    put("v.txt", b"a\n\nb")
    check(cr.read_vocabulary_file(os.path.join(d, "v")) == ["a", "", "b"],
          "txt: empty lines are tokens, no final newline needed")
    put("v.json", json.dumps(["j", "k"]).encode())
    check(cr.read_vocabulary_file(os.path.join(d, "v")) == ["j", "k"], ".json is read before .txt")
    put("bad.json", b'{"a": 1}')
    expect_error(lambda: cr.read_vocabulary_file(os.path.join(d, "bad")), "not an array",
                 "a .json that is not an array of strings refused")
    v = cr.Vocabulary(["x", "<unk>", "x", "y"], "<unk>")
    check(len(v) == 4 and v.lookup("x") == 0 and v.tokens[2] == "x",
          "a token written twice keeps both ids, lookup gives the first")
    v = cr.Vocabulary(["x", "y"], "<unk>")
    check(v.tokens == ["x", "y", "<unk>"], "a missing unknown token is appended last")
    os.remove(os.path.join(d, "v.json"))
    os.remove(os.path.join(d, "bad.json"))
    put("source_vocabulary.txt", b"s\n")
    expect_error(lambda: cr.read_vocabularies(d, "<unk>"), "not both",
                 "a source vocabulary without a target one refused")
    put("target_vocabulary.json", b'["t", "<unk>"]')
    src, tgt, shared = cr.read_vocabularies(d, "<unk>")
    check(src.tokens == ["s", "<unk>"] and tgt.tokens == ["t", "<unk>"] and not shared,
          "separate source .txt / target .json vocabularies")
    put("shared_vocabulary.txt", b"q\n")
    src, tgt, shared = cr.read_vocabularies(d, "<unk>")
    check(shared and src is tgt and src.tokens == ["q", "<unk>"], "shared_vocabulary wins")
    put("source_1_vocabulary.txt", b"f\n")
    expect_error(lambda: cr.read_vocabularies(d, "<unk>"), "multi-source",
                 "source_1_vocabulary refused")

    st = cr.special_tokens_from_config({})
    check((st.unk_token, st.bos_token, st.eos_token, st.decoder_start_token, st.add_source_bos,
           st.add_source_eos) == ("<unk>", "<s>", "</s>", "<s>", False, False),
          "config.json defaults")
    st = cr.special_tokens_from_config({"eos_token": "E", "decoder_start_token": None,
                                        "add_source_eos": True})
    check(st.eos_token == "E" and st.decoder_start_token is None and st.add_source_eos,
          "config.json keys read")
    for bad, key in (({"eos_token": 3}, "eos_token"), ({"add_source_bos": 1}, "add_source_bos"),
                     ({"decoder_start_token": 5}, "decoder_start_token")):
        expect_error(lambda: cr.special_tokens_from_config(bad), key, f"a wrong-typed {key} refused")
    check(cr.layer_norm_epsilon_from_config({}) == 1e-5
          and cr.layer_norm_epsilon_from_config({"layer_norm_epsilon": None}) == 1e-5
          and cr.layer_norm_epsilon_from_config({"layer_norm_epsilon": 1e-6}) == float(np.float32(1e-6)),
          "layer_norm_epsilon: null/absent -> 1e-5, else the float32 value")


# ---------------------------------------------------------------------------------------------
# 3. quantization
# ---------------------------------------------------------------------------------------------


def test_quantization() -> None:
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((50, 40)) * rng.uniform(0.01, 3, (50, 1))).astype(np.float32)
    w[7] = 0.0
    q, s = mk.quantize_int8_rows(w)
    amax = np.abs(w).max(axis=1)
    check(q.dtype == np.int8 and s.dtype == np.float32 and s[7] == np.float32(127 / 127.0)
          and np.abs(q).max() <= 127 and all(np.abs(q[i]).max() == 127 for i in range(50) if i != 7),
          "int8: per-row scale 127/amax (zero row: 127/127), the row maximum maps to 127")
    deq = q.astype(np.float32) / s[:, None]
    err = np.abs(deq - w).max(axis=1)
    check(bool(np.all(err <= amax / 127 * 0.5 * (1 + 1e-5) + 1e-12)),
          f"int8 dequantization error <= half a step per row (worst {float((err / np.maximum(amax, 1e-30)).max()):.3g} of amax)")
    q16, s16 = mk.quantize_int16(w)
    deq16 = q16.astype(np.float32) / s16
    check(np.abs(deq16 - w).max() <= np.abs(w).max() / 2 ** 10 * 0.5 * (1 + 1e-5),
          "int16: one scale 2^10/amax, error <= half a step")


# ---------------------------------------------------------------------------------------------
# 4. positions
# ---------------------------------------------------------------------------------------------


def test_positions() -> None:
    t = cr.ct2_sinusoidal_table(4, 8)
    # depth 8: 4 frequencies 10000^(-i/3): 1, 0.0464158883, 0.00215443469, 0.0001;
    # row p uses the angle (p + 1) * frequency; sin/cos of those angles written out by hand
    hand = {
        (0, 0): 0.841470985,   # sin(1)
        (0, 1): 0.0463992233,  # sin(0.0464158883)
        (0, 2): 0.00215443302,  # sin(0.00215443469)
        (0, 3): 0.0001,        # sin(0.0001)
        (0, 4): 0.540302306,   # cos(1)
        (0, 5): 0.998922976,   # cos(0.0464158883)
        (2, 0): 0.141120008,   # sin(3)
        (2, 4): -0.989992497,  # cos(3)
        (3, 1): 0.184598724,   # sin(4 * 0.0464158883 = 0.185663553)
        (3, 7): 0.99999992,    # cos(0.0004)
    }
    worst = max(abs(float(t[k]) - v) for k, v in hand.items())
    check(worst < 2e-7, f"generated table == hand-computed CTranslate2 values (worst {worst:.2g})")
    big = cr.ct2_sinusoidal_table(50, 32)
    p, i = np.meshgrid(np.arange(50), np.arange(16), indexing="ij")
    ref = (p + 1) * np.power(10000.0, -i / 15.0)
    check(np.abs(big - np.concatenate([np.sin(ref), np.cos(ref)], axis=1)).max() < 2e-5,
          "generated table == (p+1)*10000^(-i/(D/2-1)) in double within float32 rounding")
    check(not np.allclose(big, mr.sinusoidal_table(50, 32), atol=1e-3),
          "and it differs from the Marian table")
    expect_error(lambda: cr.ct2_sinusoidal_table(4, 7), "even depth", "odd depth refused")


# ---------------------------------------------------------------------------------------------
# 5. model semantics
# ---------------------------------------------------------------------------------------------

_SMALL = ["--d_model", "16", "--heads", "2", "--ffn", "24", "--encoder_layers", "1",
          "--decoder_layers", "2", "--source_vocab", "30", "--target_vocab", "34"]


def _logits(model_dir: str, src=(5, 9, 7, 3), prefix=(6, 11, 8)) -> torch.Tensor:
    m = cr.Ct2Model(model_dir)
    with torch.inference_mode():
        enc, mask = m.encode([list(src)])
        ids = torch.tensor([[m.cfg.decoder_start_id] + list(prefix)])
        return m.decoder_full(enc, mask, ids)[0]


def _rewrite(src_dir: str, dst_dir: str, edit, version: int = 6, revision: int = 7,
             keep_aliases: bool = True) -> None:
    """Copies a directory, passing model.bin's (variables, aliases) through `edit`."""
    if os.path.exists(dst_dir):
        shutil.rmtree(dst_dir)
    shutil.copytree(src_dir, dst_dir)
    b = cr.read_model_bin(os.path.join(src_dir, "model.bin"))
    vs = {n: mk.Var(v.dtype, v.array.reshape(v.shape)) for n, v in b.variables.items()}
    al = dict(b.aliases) if keep_aliases else {}
    if not keep_aliases:
        for a, t in b.aliases.items():
            vs[a] = vs[t]
    vs, al = edit(vs, al)
    mk.write_model_bin(os.path.join(dst_dir, "model.bin"), sorted(vs.items()), sorted(al.items()),
                       revision=revision, version=version)


def _silent(argv):
    import contextlib
    import io
    with contextlib.redirect_stderr(io.StringIO()):
        return mk.write_model(mk.parse_args(argv))


def test_model_semantics(tmp: str) -> None:
    base = os.path.join(tmp, "base")
    _silent(["--out", base, "--shared_vocab", "--share_embeddings", "--tied_projection",
             "--positions", "stored", "--position_rows", "16"] + _SMALL)
    ref = _logits(base)
    b = cr.read_model_bin(os.path.join(base, "model.bin"))
    check(b.aliases == {"decoder/projection/weight": "decoder/embeddings/weight",
                        "encoder/embeddings_0/weight": "decoder/embeddings/weight",
                        "encoder/position_encodings/encodings": "decoder/position_encodings/encodings"},
          "writer: shared/tied tables and equal position tables become aliases (converter style)")
    check(list(b.variables) == sorted(b.variables), "writer: variables sorted by name")
    d = os.path.join(tmp, "x")
    _rewrite(base, d, lambda v, a: (v, a), keep_aliases=False)
    check(torch.equal(_logits(d), ref), "aliases and full copies give identical logits")
    for version in (5, 4):
        def to_old(v, a, version=version):
            cfg = json.load(open(os.path.join(base, "config.json")))
            for key in ("unk_token", "bos_token", "eos_token"):
                v[key] = mk.Var("int8", np.frombuffer(cfg[key].encode(), dtype=np.int8).copy())
            return v, a
        _rewrite(base, d, to_old, version=version)
        os.remove(os.path.join(d, "config.json"))
        check(torch.equal(_logits(d), ref),
              f"binary version {version} with special tokens as attributes: identical logits")

    def unscoped(v, a):
        for key in ("num_heads", "pre_norm", "activation"):
            v[key] = v.pop("encoder/" + key)
            del v["decoder/" + key]
        return v, a
    _rewrite(base, d, unscoped, revision=4)
    check(torch.equal(_logits(d), ref), "revision 4: unscoped num_heads/pre_norm/activation")

    def unscoped_heads(v, a):
        v["num_heads"] = v.pop("encoder/num_heads")
        return v, a
    _rewrite(base, d, unscoped_heads, revision=5)
    expect_error(lambda: cr.Ct2Model(d), "variable num_heads",
                 "revision 5: an unscoped num_heads is not read (left over)")

    # embedding scale rules
    D = 16
    for value, want, what in (
            (mk.Var("int8", np.array(1, np.int8)), math.sqrt(D), "int8 flag 1 -> sqrt(d_model)"),
            (mk.Var("int8", np.array(0, np.int8)), 1.0, "int8 flag 0 -> 1"),
            (mk.Var("float32", np.array(2.75, np.float32)), 2.75, "float32 value used as is"),
            (None, math.sqrt(D), "absent -> sqrt(d_model)"),
            ("old0", 1.0, "old decoder/embeddings/multiply_by_sqrt_depth = 0 -> 1")):
        def edit(v, a, value=value):
            if value == "old0":
                del v["decoder/scale_embeddings"]
                v["decoder/embeddings/multiply_by_sqrt_depth"] = mk.Var("int8", np.array(0, np.int8))
            elif value is None:
                del v["decoder/scale_embeddings"]
            else:
                v["decoder/scale_embeddings"] = value
            return v, a
        _rewrite(base, d, edit)
        got = cr.Ct2Model(d).sides["decoder"]["scale"]
        check(abs(got - want) < 1e-6, f"scale_embeddings: {what} (got {got:.6g})")

    # refusals by name
    def add(name, var):
        def edit(v, a):
            v[name] = var
            return v, a
        return edit
    one_f = mk.Var("float32", np.zeros((4, 16), np.float32))
    for name, var, frag in (
            ("decoder/layer_0/self_attention/relative_position_keys", one_f, "relative position"),
            ("decoder/layer_0/ffn/linear_0_noact/weight", one_f, "gated"),
            ("decoder/layer_1/self_attention/queries_scale", mk.Var("float32", np.array(1, np.float32)),
             "query scale"),
            ("decoder/project_in/weight", one_f, "projection after the decoder embeddings"),
            ("encoder/embeddings_1/weight", one_f, "source factors"),
            ("decoder/foo", one_f, "unknown variable")):
        _rewrite(base, d, add(name, var))
        expect_error(lambda: cr.Ct2Model(d), name, f"{name.split('/')[-1]} refused by name ({frag})")
    _rewrite(base, d, add("decoder/alibi", mk.Var("int8", np.array(1, np.int8))))
    expect_error(lambda: cr.Ct2Model(d), "decoder/alibi", "decoder/alibi set refused")
    _rewrite(base, d, add("encoder/multi_query_attention", mk.Var("int8", np.array(1, np.int8))))
    expect_error(lambda: cr.Ct2Model(d), "multi_query", "encoder/multi_query_attention set refused")
    _rewrite(base, d, add("decoder/layer_0/attention/num_heads_kv", mk.Var("int32", np.array(2, np.int32))))
    check(torch.equal(_logits(d), ref), "num_heads_kv restating the head count is accepted")
    _rewrite(base, d, add("decoder/layer_0/attention/num_heads_kv", mk.Var("int32", np.array(1, np.int32))))
    expect_error(lambda: cr.Ct2Model(d), "num_heads_kv", "num_heads_kv 1 refused")
    _rewrite(base, d, add("decoder/activation", mk.Var("int8", np.array(4, np.int8))))
    expect_error(lambda: cr.Ct2Model(d), "activation 4", "activation 4 (GELUSigmoid) refused")

    def no_beta(v, a):
        del v["decoder/layer_1/ffn/layer_norm/beta"]
        return v, a
    _rewrite(base, d, no_beta)
    expect_error(lambda: cr.Ct2Model(d), "RMS", "a layer norm without beta (RMS norm) refused")

    pre = os.path.join(tmp, "pre")
    _silent(["--out", pre, "--pre_norm"] + _SMALL)

    def no_final(v, a):
        del v["decoder/layer_norm/gamma"], v["decoder/layer_norm/beta"]
        return v, a
    _rewrite(pre, d, no_final)
    expect_error(lambda: cr.Ct2Model(d), "without decoder/layer_norm", "pre-norm without a final norm refused")
    cfg_path = os.path.join(pre, "config.json")
    cfg = json.load(open(cfg_path))
    for key, value, frag in (("decoder_start_token", None, "caller"),
                             ("eos_token", "<nope>", "eos token"),
                             ("decoder_start_token", "<nope>", "decoder start token")):
        shutil.rmtree(d)
        shutil.copytree(pre, d)
        json.dump(dict(cfg, **{key: value}), open(os.path.join(d, "config.json"), "w"))
        expect_error(lambda: cr.Ct2Model(d), frag, f"config {key}={value!r} refused")

    # dtypes: quantized models load and stay close to float32
    ref_pre = _logits(pre)
    for dtype, tol in (("float16", 0.01), ("bfloat16", 0.05), ("int8", 0.05), ("int16", 0.01),
                       ("int8_float16", 0.05)):
        q = os.path.join(tmp, "q" + dtype)
        _silent(["--out", q, "--pre_norm", "--dtype", dtype] + _SMALL)
        out = _logits(q)
        finite = torch.isfinite(ref_pre)
        rel = float((out - ref_pre)[finite].abs().max() / ref_pre[finite].abs().max())
        check(rel < tol, f"{dtype} directory loads, logits within {tol} of float32 ({rel:.3g})")

    # the independent numpy forward, on every layout
    layouts = [
        ("post-norm swish, stored positions, zero start, shared+tied", [
            "--activation", "swish", "--positions", "stored", "--start_from_zero_embedding",
            "--shared_vocab", "--share_embeddings", "--tied_projection", "--vocab_style", "marian",
            "--decoder_start_token", "</s>", "--scale_embeddings", "4.0"]),
        ("pre-norm relu, generated positions, some biases", [
            "--pre_norm", "--biases", "some", "--vocab_format", "txt"]),
        ("pre-norm gelu, layernorm_embedding, eps 1e-6, float16", [
            "--pre_norm", "--activation", "gelu", "--layernorm_embedding", "--scale_embeddings",
            "2.5", "--layer_norm_epsilon", "1e-6", "--dtype", "float16", "--shared_vocab",
            "--tied_projection"]),
        ("post-norm gelu_tanh, no biases, int8, unscaled embeddings", [
            "--activation", "gelu_tanh", "--biases", "none", "--no_projection_bias",
            "--scale_embeddings", "false", "--dtype", "int8", "--layernorm_embedding"]),
    ]
    for what, flags in layouts:
        md = os.path.join(tmp, "np")
        _silent(["--out", md, "--seed", "4"] + _SMALL + flags)
        m = cr.Ct2Model(md)
        src, prefix = [5, 9, 7, 12, 3], [6, 11, 8, 2]
        with torch.inference_mode():
            enc, mask = m.encode([src])
            got = m.decoder_full(enc, mask, torch.tensor([[m.cfg.decoder_start_id] + prefix]))[0, :, :-1]
            st = m.start_decoder(enc, mask, 1, 8)
            steps = torch.stack([m.decode_step(st, torch.tensor([t]))[0]
                                 for t in [m.cfg.decoder_start_id] + prefix])[:, :-1]
        want = numpy_forward(md, src, prefix)
        err = float(np.abs(got.numpy() - want).max() / np.abs(want).max())
        check(err < 1e-5, f"numpy float64 forward == reference: {what} ({err:.2g})")
        kv = float((steps - got).abs().max() / got.abs().max())
        check(kv < 1e-5, f"KV-cache decoder == full decoder: {what} ({kv:.2g})")


def numpy_forward(model_dir: str, src, prefix) -> np.ndarray:
    """An independent float64 forward pass written straight from the spec's variable names:
    logits [1 + len(prefix), V] of the decoder fed [start] + prefix."""
    b = cr.read_model_bin(os.path.join(model_dir, "model.bin"))
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    eps = cfg.get("layer_norm_epsilon") or 1e-5

    def has(n):
        return b.resolve(n) is not None

    def get(n):
        v = b.get(n)
        a = v.as_float32().astype(np.float64) if v.dtype not in ("int8", "int16") else \
            v.array.reshape(v.shape).astype(np.float64)
        if v.dtype in ("int8", "int16"):
            s = b.get(n + "_scale").as_float32().astype(np.float64).reshape(-1)
            a = a / (s[:, None] if s.size > 1 else s[0])
        return a

    def scalar(n, default):
        return float(b.get(n).array.reshape(-1)[0]) if has(n) else default

    def ln(x, scope):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * get(scope + "/gamma") + get(scope + "/beta")

    def dense(x, scope):
        y = x @ get(scope + "/weight").T
        return y + get(scope + "/bias") if has(scope + "/bias") else y

    acts = {0: lambda x: np.maximum(x, 0), 2: lambda x: x / (1 + np.exp(-x)),
            3: lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
            1: lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))}

    def attention(q, k, v, heads, causal):
        D = q.shape[-1]
        hd = D // heads
        out = np.zeros_like(q)
        for h in range(heads):
            sl = slice(h * hd, (h + 1) * hd)
            s = q[:, sl] @ k[:, sl].T / math.sqrt(hd)
            if causal:
                s = s + np.triu(np.full(s.shape, -np.inf), 1)
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            out[:, sl] = p @ v[:, sl]
        return out

    def positions(side, n, D):
        if has(f"{side}/position_encodings/encodings"):
            return get(f"{side}/position_encodings/encodings")[:n]
        p, i = np.meshgrid(np.arange(n), np.arange(D // 2), indexing="ij")
        ang = (p + 1) * np.power(10000.0, -i / (D // 2 - 1))
        return np.concatenate([np.sin(ang), np.cos(ang)], axis=1)

    def scale(side, D):
        n = f"{side}/scale_embeddings"
        if not has(n):
            return math.sqrt(D)
        v = b.get(n)
        return (math.sqrt(D) if int(v.array[0]) else 1.0) if v.dtype == "int8" else float(v.array[0])

    def block(side, x, pre, fn, scope):
        return x + fn(ln(x, scope)) if pre else ln(x + fn(x), scope)

    E_enc = get("encoder/embeddings_0/weight")
    D = E_enc.shape[1]
    heads_e, heads_d = int(scalar("encoder/num_heads", 8)), int(scalar("decoder/num_heads", 8))
    pre_e, pre_d = bool(scalar("encoder/pre_norm", 1)), bool(scalar("decoder/pre_norm", 1))
    act_e, act_d = acts[int(scalar("encoder/activation", 0))], acts[int(scalar("decoder/activation", 0))]
    x = E_enc[src] * scale("encoder", D) + positions("encoder", len(src), D)
    if has("encoder/layernorm_embedding/gamma"):
        x = ln(x, "encoder/layernorm_embedding")
    i = 0
    while has(f"encoder/layer_{i}/self_attention/linear_0/weight"):
        p = f"encoder/layer_{i}"

        def sa(h, p=p):
            qkv = dense(h, p + "/self_attention/linear_0")
            return dense(attention(qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:], heads_e, False),
                         p + "/self_attention/linear_1")
        x = block("encoder", x, pre_e, sa, p + "/self_attention/layer_norm")
        x = block("encoder", x, pre_e, lambda h, p=p: dense(act_e(dense(h, p + "/ffn/linear_0")),
                                                            p + "/ffn/linear_1"),
                  p + "/ffn/layer_norm")
        i += 1
    if has("encoder/layer_norm/gamma"):
        x = ln(x, "encoder/layer_norm")
    memory = x

    E_dec = get("decoder/embeddings/weight")
    V = E_dec.shape[0]
    zero_start = bool(scalar("decoder/start_from_zero_embedding", 0))
    start = cfg.get("decoder_start_token", "<s>")
    tgt = cr.read_vocabularies(model_dir, cfg.get("unk_token", "<unk>"))[1]
    ids = [tgt.lookup(start)] + list(prefix)
    T = len(ids)
    y = E_dec[ids] * scale("decoder", D)
    if zero_start:
        y[0] = 0.0
    y = y + positions("decoder", T, D)
    if has("decoder/layernorm_embedding/gamma"):
        y = ln(y, "decoder/layernorm_embedding")
    i = 0
    while has(f"decoder/layer_{i}/self_attention/linear_0/weight"):
        p = f"decoder/layer_{i}"

        def sa(h, p=p):
            qkv = dense(h, p + "/self_attention/linear_0")
            return dense(attention(qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:], heads_d, True),
                         p + "/self_attention/linear_1")

        def ca(h, p=p):
            q = dense(h, p + "/attention/linear_0")
            kv = dense(memory, p + "/attention/linear_1")
            return dense(attention(q, kv[:, :D], kv[:, D:], heads_d, False), p + "/attention/linear_2")
        y = block("decoder", y, pre_d, sa, p + "/self_attention/layer_norm")
        y = block("decoder", y, pre_d, ca, p + "/attention/layer_norm")
        y = block("decoder", y, pre_d, lambda h, p=p: dense(act_d(dense(h, p + "/ffn/linear_0")),
                                                            p + "/ffn/linear_1"),
                  p + "/ffn/layer_norm")
        i += 1
    if has("decoder/layer_norm/gamma"):
        y = ln(y, "decoder/layer_norm")
    logits = dense(y, "decoder/projection")
    assert logits.shape == (T, V)
    return logits


# ---------------------------------------------------------------------------------------------
# 6. committed fixtures
# ---------------------------------------------------------------------------------------------


def test_fixtures() -> None:
    if not os.path.isdir(FIXTURES):
        check(False, f"{FIXTURES} exists")
        return
    names = sorted(n for n in os.listdir(FIXTURES)
                   if os.path.exists(os.path.join(FIXTURES, n, "expected.json")))
    check(len(names) >= 5, f"at least 5 CTranslate2 fixtures ({', '.join(names)})")
    for name in names:
        root = os.path.join(FIXTURES, name)
        size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(root) for f in fs)
        exp = json.load(open(os.path.join(root, "expected.json")))
        m = cr.Ct2Model(os.path.join(root, "model"))
        c = m.cfg
        ok_ids, worst = True, 0.0
        srcs = [case["source"] for case in exp["cases"]]
        with torch.inference_mode():
            for case in exp["cases"]:
                g = mr.greedy_search(m, [case["source"]], exp["max_length"])[0]
                bm = mr.beam_search(m, [case["source"]], 4, exp["max_length"], 0, 1.0, 4)[0]
                ok_ids &= g["ids"] == case["greedy"]["ids"] and bm["ids"] == case["beam4"]["ids"]
                ok_ids &= [h["ids"] for h in bm["nbest"]] == [h["ids"] for h in case["beam4"]["nbest"]]
                for got, want in ((g["score"], case["greedy"]["score"]),
                                  (bm["score"], case["beam4"]["score"])):
                    worst = max(worst, abs(got - want) / max(1.0, abs(want)))
            gb = mr.greedy_search(m, srcs, exp["max_length"])
            bb = mr.beam_search(m, srcs, 4, exp["max_length"], 0, 1.0, 4)
        batch_ok = all(x["ids"] == case["greedy"]["ids"] and y["ids"] == case["beam4"]["ids"]
                       for x, y, case in zip(gb, bb, exp["cases"]))
        lens = {len(case["greedy"]["ids"]) for case in exp["cases"]}
        check(ok_ids and worst < 1e-5 and batch_ok
              and (exp["pad"], exp["eos"], exp["decoder_start"], exp["target_vocab_size"])
              == (c.pad_id, c.eos_id, c.decoder_start_id, c.target_vocab_size)
              and size < 300_000 and len(lens) >= 3
              and all(len(case["greedy"]["ids"]) > 1 for case in exp["cases"]),
              f"fixture {name}: {len(exp['cases'])} cases reproduce alone and batched (worst score "
              f"rel diff {worst:.2g}), {size // 1000} KB, greedy lengths {sorted(lens)}")


def main() -> int:
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="ct2-selftest-")
    try:
        test_model_bin(tmp)
        test_vocabularies(tmp)
        test_quantization()
        test_positions()
        test_model_semantics(tmp)
        test_fixtures()
    finally:
        shutil.rmtree(tmp)
    print(f"\n{len(failures)} failure(s)" if failures else "\nall checks passed")
    for f in failures:
        print("  FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
