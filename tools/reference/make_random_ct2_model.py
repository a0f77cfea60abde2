#!/usr/bin/env python3
"""Writes a random CTranslate2 `TransformerSpec` directory, laid out as CTranslate2's converters
write one (docs/ctranslate2-format.md), without CTranslate2:

* model.bin: binary version 6 (older versions on request, for reader tests), spec
  `TransformerSpec` revision 7, variables sorted by name; a variable equal to one earlier in name
  order is written once and the later names become aliases of it (so a shared source/target
  embedding and a tied output projection become aliases of `decoder/embeddings/weight`, and two
  equal position tables one table); then the weights are stored in the asked dtype the way the
  converter's quantization step does: linear weights and embeddings (the variables with a
  `weight_scale` slot) become int8 with a float32 `weight_scale` per row
  (scale = 127 / max|row|, 127 when the row is zero; rint; int8), or int16 with one scale
  (2^10 / max|w|), or float16 / bfloat16 / float32; other float variables follow the
  `int8_float16`-style suffix (plain `int8` keeps them float32); one-value attributes keep
  their types (int8 flags, int16 head counts, a float32 embedding scale).
* config.json (sorted keys, 2-space indent): unk/bos/eos/decoder_start tokens, add_source_bos,
  add_source_eos, layer_norm_epsilon (null unless --layer_norm_epsilon), multi_query_attention.
* vocabularies: shared_vocabulary.json, or source_vocabulary + target_vocabulary (.json or .txt).

  /usr/bin/python3 tools/reference/make_random_ct2_model.py --out DIR [--pre_norm]
      [--activation relu|gelu_tanh|swish|gelu] [--positions generated|stored]
      [--layernorm_embedding] [--start_from_zero_embedding] [--shared_vocab]
      [--tied_projection] [--dtype float32|float16|bfloat16|int8|...] [--seed N] ...

Weights are random with gains that keep outputs varied (see --help): sharp attention, wide
feed-forward output with zero row sums, an EOS bias on the output projection.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
from typing import Dict, List, Sequence, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import marian_reference as mr  # noqa: E402  (the Marian/HF position table)

ACTIVATION_IDS = {"relu": 0, "gelu_tanh": 1, "swish": 2, "gelu": 3}
QUANTIZATIONS = ("float32", "float16", "bfloat16", "int8", "int8_float32", "int8_float16",
                 "int8_bfloat16", "int16")
DTYPE_IDS = {"float32": 0, "int8": 1, "int16": 2, "int32": 3, "float16": 4, "bfloat16": 5}
ITEM_SIZES = {"float32": 4, "int8": 1, "int16": 2, "int32": 4, "float16": 2, "bfloat16": 2}


class Var:
    """A variable to write: `array` is the stored data (bfloat16 as its uint16 bits)."""

    __slots__ = ("dtype", "array")

    def __init__(self, dtype: str, array: np.ndarray):
        self.dtype, self.array = dtype, array

    @staticmethod
    def of(value) -> "Var":
        a = np.asarray(value)
        name = {np.dtype("float32"): "float32", np.dtype("float16"): "float16",
                np.dtype("int8"): "int8", np.dtype("int16"): "int16",
                np.dtype("int32"): "int32"}[a.dtype]
        return Var(name, a)


def bfloat16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 (round to nearest even, as torch) -> raw uint16 bits."""
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16)
    return t.view(torch.int16).numpy().view(np.uint16).copy()


# ---------------------------------------------------------------------------------------------
# model.bin writer
# ---------------------------------------------------------------------------------------------


def _string(s: str) -> bytes:
    raw = s.encode("utf-8") + b"\0"
    if len(raw) > 0xFFFF:
        raise ValueError(f"string too long: {s[:40]}...")
    return struct.pack("<H", len(raw)) + raw


def write_model_bin(path: str, variables: Sequence[Tuple[str, Var]],
                    aliases: Sequence[Tuple[str, str]] = (), spec_name: str = "TransformerSpec",
                    revision: int = 7, version: int = 6) -> None:
    """Writes the records in the order given (the converters sort by name).

    Versions 1 to 3 store an item size and element count instead of a dtype id (float32, int16
    and int8 only); versions 1 and 2 have no alias table; version 1 no spec name or revision."""
    if not 1 <= version <= 6:
        raise ValueError("binary version 1 to 6")
    out = [struct.pack("<I", version)]
    if version >= 2:
        out.append(_string(spec_name))
        out.append(struct.pack("<I", revision))
    out.append(struct.pack("<I", len(variables)))
    for name, v in variables:
        a = np.array(v.array, order="C", copy=True)  # keeps rank 0 (ascontiguousarray would not)
        out.append(_string(name))
        out.append(struct.pack("<B", a.ndim))
        for d in a.shape:
            out.append(struct.pack("<I", d))
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        if len(raw) != a.size * ITEM_SIZES[v.dtype]:
            raise ValueError(f"{name}: {v.dtype} data of {len(raw)} bytes for {a.shape}")
        if version >= 4:
            out.append(struct.pack("<B", DTYPE_IDS[v.dtype]))
            out.append(struct.pack("<I", len(raw)))
        else:
            if v.dtype not in ("float32", "int16", "int8"):
                raise ValueError(f"binary version {version} cannot store {v.dtype} ({name})")
            out.append(struct.pack("<B", ITEM_SIZES[v.dtype]))
            out.append(struct.pack("<I", a.size))
        out.append(raw)
    if version >= 3:
        out.append(struct.pack("<I", len(aliases)))
        for alias, target in aliases:
            out.append(_string(alias))
            out.append(_string(target))
    elif aliases:
        raise ValueError(f"binary version {version} has no aliases")
    with open(path, "wb") as f:
        f.write(b"".join(out))


# ---------------------------------------------------------------------------------------------
# Converter steps: aliasing of equal variables, quantization
# ---------------------------------------------------------------------------------------------


def alias_equal_variables(spec: Dict[str, np.ndarray]) -> Dict[str, str]:
    """Of variables with equal dtype, shape and values (one-value attributes excepted) the first
    in name order is kept and the others alias it. Returns {alias: kept name}."""
    names = sorted(spec)
    aliases = {}
    for i, name in enumerate(names):
        a = spec[name]
        if a.ndim == 0:
            continue
        for other in names[:i]:
            b = spec[other]
            if b.ndim and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b):
                aliases[name] = other
                break
    return aliases


def is_quantizable(name: str) -> bool:
    """The variables that have a `weight_scale` slot in the spec: linear weights, embeddings."""
    parts = name.split("/")
    return parts[-1] == "weight" and len(parts) >= 2 and (
        parts[-2].startswith("linear_") or parts[-2] == "projection"
        or parts[-2].startswith("embeddings"))


def quantize_int8_rows(w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per-row int8: scale = 127 / max|row| (127 for an all-zero row), rint, int8."""
    w = w.astype(np.float32)
    amax = np.amax(np.abs(w), axis=1)
    amax[amax == 0] = 127.0
    scale = (np.float32(127.0) / amax).astype(np.float32)
    q = np.rint(w * scale[:, None]).astype(np.int8)
    return q, scale


def quantize_int16(w: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """One scale for the whole weight: 2^10 / max|w|; rint; clipped to int16."""
    w = w.astype(np.float32)
    scale = np.float32(2 ** 10 / np.amax(np.abs(w)))
    q = np.clip(np.rint(w * scale), -32768, 32767).astype(np.int16)
    return q, np.asarray(scale, dtype=np.float32)


def _as_dtype(a: np.ndarray, dtype: str) -> Var:
    if dtype == "float32":
        return Var("float32", a.astype(np.float32))
    if dtype == "float16":
        return Var("float16", a.astype(np.float16))
    if dtype == "bfloat16":
        return Var("bfloat16", bfloat16_bits(a))
    raise ValueError(dtype)


def convert(spec: Dict[str, np.ndarray], quantization: str) -> Tuple[List[Tuple[str, Var]], List[Tuple[str, str]]]:
    """Aliasing, then quantization; returns (variables sorted by name, aliases sorted by name)."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization {quantization!r} not in {QUANTIZATIONS}")
    aliases = alias_equal_variables(spec)
    out: Dict[str, Var] = {}
    others = {"float16": "float16", "int8_float16": "float16", "bfloat16": "bfloat16",
              "int8_bfloat16": "bfloat16"}.get(quantization, "float32")
    for name in sorted(spec):
        if name in aliases:
            continue
        a = spec[name]
        if a.ndim == 0 or a.dtype.kind in "iu":
            out[name] = Var.of(a)
            continue
        if is_quantizable(name) and quantization.startswith("int8"):
            q, s = quantize_int8_rows(a)
            out[name] = Var("int8", q)
            out[name + "_scale"] = Var("float32", s)
        elif is_quantizable(name) and quantization == "int16":
            q, s = quantize_int16(a)
            out[name] = Var("int16", q)
            out[name + "_scale"] = Var("float32", s)
        elif is_quantizable(name) and quantization in ("float16", "bfloat16", "float32"):
            out[name] = _as_dtype(a, quantization)
        elif quantization == "int8":  # plain "int8" leaves the other variables as they are
            out[name] = Var.of(a.astype(np.float32))
        else:
            out[name] = _as_dtype(a, others)
    return sorted(out.items()), sorted(aliases.items())


# ---------------------------------------------------------------------------------------------
# Vocabularies
# ---------------------------------------------------------------------------------------------

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "en", "dor", "pa", "qu", "ix",
              "ber", "sa", "tu", "fe", "gor", "hal", "jo", "ze", "wy", "ost", "un"]


def make_tokens(n: int, style: str, side: str, rng: np.random.Generator) -> List[str]:
    """`n` tokens: the style's specials, then distinct pseudo-words (sentencepiece-like for
    marian, plain words for opennmt)."""
    if style == "marian":
        specials = ["</s>", "<unk>"]
    else:
        specials = ["<unk>", "<blank>", "<s>", "</s>"]
    words = []
    seen = set(specials)
    while len(specials) + len(words) < n:
        k = int(rng.integers(1, 4))
        w = "".join(_SYLLABLES[int(rng.integers(len(_SYLLABLES)))] for _ in range(k))
        if side == "target":
            w = w.capitalize() if rng.random() < 0.3 else w
        if style == "marian" and rng.random() < 0.6:
            w = "\u2581" + w
        if w not in seen:
            seen.add(w)
            words.append(w)
    return specials + words


def write_vocabulary(out_dir: str, name: str, tokens: List[str], fmt: str) -> None:
    if fmt == "json":
        with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(tokens, f, indent=2)
    else:
        with open(os.path.join(out_dir, name + ".txt"), "w", encoding="utf-8", newline="") as f:
            for t in tokens:
                f.write(t + "\n")


# ---------------------------------------------------------------------------------------------
# The random spec
# ---------------------------------------------------------------------------------------------


def build_spec(args, Vs: int, Vt: int, eos_target: int,
               other_specials: Sequence[int] = ()) -> Dict[str, np.ndarray]:
    """Variable name -> float32 array (weights) or numpy scalar (attributes), CTranslate2 names."""
    g = torch.Generator().manual_seed(args.seed)
    D, Fe = args.d_model, args.ffn

    def randn(*shape, std):
        return (torch.randn(*shape, generator=g) * std).numpy().astype(np.float32)

    spec: Dict[str, np.ndarray] = {}
    def has_bias(scope: str) -> bool:
        if args.biases != "some":
            return args.biases == "all"
        # "some": no bias on the fused self-attention QKV and the cross-attention KV
        # projections, nor on the FFN output of odd layers
        layer = int(scope.split("layer_")[1].split("/")[0])
        return not (scope.endswith("self_attention/linear_0")
                    or scope.endswith("/attention/linear_1")
                    or (scope.endswith("ffn/linear_1") and layer % 2 == 1))

    def linear(scope: str, w: np.ndarray, bias_std: float = args.bias_std):
        spec[scope + "/weight"] = w.astype(np.float32)
        if has_bias(scope):
            spec[scope + "/bias"] = randn(w.shape[0], std=bias_std)

    def layer_norm(scope: str):
        spec[scope + "/gamma"] = (1.0 + randn(D, std=0.1)).astype(np.float32)
        spec[scope + "/beta"] = randn(D, std=args.bias_std)

    def proj(out: int, gain: float):
        return randn(out, D, std=gain / math.sqrt(D))

    def ffn(scope: str):
        layer_norm(scope + "/layer_norm")
        linear(scope + "/linear_0", randn(Fe, D, std=1.0 / math.sqrt(D)))
        w2 = randn(D, Fe, std=args.ffn_gain / math.sqrt(Fe))
        # zero row sums: the activation's mean would otherwise push every state the same way
        w2 -= w2.mean(axis=1, keepdims=True)
        linear(scope + "/linear_1", w2)

    def scale_embeddings():
        if args.scale_embeddings == "true":
            return np.int8(1)
        if args.scale_embeddings == "false":
            return np.int8(0)
        return np.float32(float(args.scale_embeddings))

    act = np.int8(ACTIVATION_IDS[args.activation])
    if args.positions == "stored":
        table = mr.sinusoidal_table(args.position_rows, D)  # the Marian / HF table
    dec_embed = randn(Vt, D, std=args.emb_std)
    enc_embed = dec_embed.copy() if args.share_embeddings else randn(Vs, D, std=args.emb_std)

    # encoder
    spec["encoder/activation"] = act
    spec["encoder/embeddings_0/weight"] = enc_embed
    spec["encoder/embeddings_merge"] = np.int8(0)
    spec["encoder/multi_query_attention"] = np.int8(0)
    spec["encoder/num_heads"] = np.int16(args.heads)
    spec["encoder/pre_norm"] = np.int8(args.pre_norm)
    spec["encoder/scale_embeddings"] = scale_embeddings()
    if args.positions == "stored":
        spec["encoder/position_encodings/encodings"] = table.copy()
    if args.pre_norm:
        layer_norm("encoder/layer_norm")
    if args.layernorm_embedding:
        layer_norm("encoder/layernorm_embedding")
    for i in range(args.encoder_layers):
        p = f"encoder/layer_{i}"
        layer_norm(p + "/self_attention/layer_norm")
        linear(p + "/self_attention/linear_0",
               np.concatenate([proj(D, args.qk_gain), proj(D, args.qk_gain),
                               proj(D, args.self_attn_gain)]))
        linear(p + "/self_attention/linear_1", proj(D, args.self_attn_gain))
        ffn(p + "/ffn")

    # decoder
    spec["decoder/activation"] = act
    spec["decoder/alibi"] = np.int8(0)
    spec["decoder/alibi_use_positive_positions"] = np.int8(0)
    spec["decoder/alignment_heads"] = np.int16(1)
    spec["decoder/alignment_layer"] = np.int16(-1)
    spec["decoder/embeddings/weight"] = dec_embed
    spec["decoder/num_heads"] = np.int16(args.heads)
    spec["decoder/pre_norm"] = np.int8(args.pre_norm)
    spec["decoder/scale_alibi"] = np.int8(0)
    spec["decoder/scale_embeddings"] = scale_embeddings()
    spec["decoder/start_from_zero_embedding"] = np.int8(args.start_from_zero_embedding)
    if args.positions == "stored":
        spec["decoder/position_encodings/encodings"] = table.copy()
    if args.pre_norm:
        layer_norm("decoder/layer_norm")
    if args.layernorm_embedding:
        layer_norm("decoder/layernorm_embedding")
    for i in range(args.decoder_layers):
        p = f"decoder/layer_{i}"
        layer_norm(p + "/self_attention/layer_norm")
        linear(p + "/self_attention/linear_0",
               np.concatenate([proj(D, args.qk_gain), proj(D, args.qk_gain),
                               proj(D, args.self_attn_gain)]))
        linear(p + "/self_attention/linear_1", proj(D, args.self_attn_gain))
        layer_norm(p + "/attention/layer_norm")
        linear(p + "/attention/linear_0", proj(D, args.qk_gain))
        linear(p + "/attention/linear_1",
               np.concatenate([proj(D, args.qk_gain), proj(D, args.cross_attn_gain)]))
        linear(p + "/attention/linear_2", proj(D, args.cross_attn_gain))
        ffn(p + "/ffn")
    spec["decoder/projection/weight"] = dec_embed.copy() if args.tied_projection \
        else randn(Vt, D, std=args.emb_std)
    if args.projection_bias:
        b = randn(Vt, std=args.bias_std)
        b[eos_target] += args.eos_bias
        for i in other_specials:  # <unk>, <blank>, <s>: rarely predicted, as in trained models
            b[i] += args.special_bias
        spec["decoder/projection/bias"] = b
    return spec


def write_model(args) -> dict:
    """Writes the directory; returns a summary (vocab sizes, special ids)."""
    out = args.out
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name in ("model.bin", "config.json") or name.endswith(("_vocabulary.json",
                                                                   "_vocabulary.txt")):
            os.remove(os.path.join(out, name))
    rng = np.random.default_rng(args.seed + 7919)
    src_tokens = make_tokens(args.source_vocab, args.vocab_style, "source", rng)
    tgt_tokens = src_tokens if args.shared_vocab else make_tokens(args.target_vocab,
                                                                  args.vocab_style, "target", rng)
    eos = tgt_tokens.index(args.eos_token)
    others = [i for i, t in enumerate(tgt_tokens) if t in ("<unk>", "<blank>", "<s>", "<pad>")]
    spec = build_spec(args, len(src_tokens), len(tgt_tokens), eos, others)
    variables, aliases = convert(spec, args.dtype)
    write_model_bin(os.path.join(out, "model.bin"), variables, aliases, version=args.binary_version)
    config = {"add_source_bos": False, "add_source_eos": bool(args.add_source_eos),
              "bos_token": "<s>", "decoder_start_token": args.decoder_start_token,
              "eos_token": args.eos_token, "layer_norm_epsilon": args.layer_norm_epsilon,
              "multi_query_attention": False, "unk_token": "<unk>"}
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    if args.shared_vocab:
        write_vocabulary(out, "shared_vocabulary", src_tokens, args.vocab_format)
    else:
        write_vocabulary(out, "source_vocabulary", src_tokens, args.vocab_format)
        write_vocabulary(out, "target_vocabulary", tgt_tokens, args.vocab_format)
    n_params = sum(int(np.prod(a.shape)) for a in spec.values())
    print(f"wrote {out}: source vocab {len(src_tokens)}, target vocab {len(tgt_tokens)}, "
          f"{n_params} parameters, {len(variables)} variables, {len(aliases)} aliases, "
          f"dtype {args.dtype}", file=sys.stderr)
    return {"source_tokens": src_tokens, "target_tokens": tgt_tokens, "aliases": aliases}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--d_model", type=int, default=32)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=64)
    ap.add_argument("--encoder_layers", type=int, default=2)
    ap.add_argument("--decoder_layers", type=int, default=2)
    ap.add_argument("--source_vocab", type=int, default=80)
    ap.add_argument("--target_vocab", type=int, default=96, help="ignored with --shared_vocab")
    ap.add_argument("--pre_norm", action="store_true", help="pre-norm (default post-norm)")
    ap.add_argument("--activation", choices=sorted(ACTIVATION_IDS), default="relu")
    ap.add_argument("--positions", choices=["generated", "stored"], default="generated",
                    help="stored: the Marian/HF sinusoid table in position_encodings/encodings")
    ap.add_argument("--position_rows", type=int, default=64)
    ap.add_argument("--layernorm_embedding", action="store_true")
    ap.add_argument("--start_from_zero_embedding", action="store_true")
    ap.add_argument("--scale_embeddings", default="true",
                    help="true / false (int8 flags) or a float value (stored float32)")
    ap.add_argument("--shared_vocab", action="store_true",
                    help="one shared_vocabulary (default: source_ and target_vocabulary)")
    ap.add_argument("--share_embeddings", action="store_true",
                    help="encoder embeddings = decoder embeddings (needs --shared_vocab)")
    ap.add_argument("--tied_projection", action="store_true",
                    help="decoder/projection/weight = decoder/embeddings/weight")
    ap.add_argument("--no_projection_bias", dest="projection_bias", action="store_false")
    ap.add_argument("--biases", choices=["all", "some", "none"], default="all",
                    help="which linear layers get a bias (the output projection: see above)")
    ap.add_argument("--vocab_style", choices=["marian", "opennmt"], default="opennmt")
    ap.add_argument("--vocab_format", choices=["json", "txt"], default="json")
    ap.add_argument("--eos_token", default="</s>")
    ap.add_argument("--decoder_start_token", default="<s>")
    ap.add_argument("--add_source_eos", action="store_true")
    ap.add_argument("--layer_norm_epsilon", type=float, default=None,
                    help="written to config.json (default null: CTranslate2's 1e-5)")
    ap.add_argument("--dtype", choices=QUANTIZATIONS, default="float32")
    ap.add_argument("--binary_version", type=int, default=6)
    ap.add_argument("--emb_std", type=float, default=0.3)
    ap.add_argument("--qk_gain", type=float, default=3.0,
                    help="std of query/key projections x sqrt(d_model) (attention sharpness)")
    ap.add_argument("--self_attn_gain", type=float, default=0.5)
    ap.add_argument("--cross_attn_gain", type=float, default=1.0)
    ap.add_argument("--ffn_gain", type=float, default=8.0)
    ap.add_argument("--bias_std", type=float, default=0.1)
    ap.add_argument("--eos_bias", type=float, default=3.0,
                    help="added to the output projection bias of EOS (varied output lengths)")
    ap.add_argument("--special_bias", type=float, default=-2.0,
                    help="added to the output projection bias of <unk>, <blank>, <s>, <pad>")
    args = ap.parse_args(argv)
    if args.d_model % args.heads:
        ap.error("d_model must be divisible by heads")
    if args.share_embeddings and not args.shared_vocab:
        ap.error("--share_embeddings needs --shared_vocab")
    if args.scale_embeddings not in ("true", "false"):
        try:
            float(args.scale_embeddings)
        except ValueError:
            ap.error("--scale_embeddings: true, false or a number")
    return args


def main(argv=None) -> int:
    write_model(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
