#!/usr/bin/env python3
"""Float32 PyTorch reference for CTranslate2 `TransformerSpec` model directories.

Written from docs/ctranslate2-format.md and from the math of CTranslate2's layers (read, not
copied); it does not use CTranslate2. It reads a converter's output directory (model.bin,
config.json, the vocabularies), runs the encoder and an incremental decoder in float32 and
exposes the interface of marian_reference.MarianModel (`cfg`, `encode`, `start_decoder`,
`reorder`, `decode_step`), so that marian_reference's `greedy_search` and `beam_search` decode it
unchanged.

Conventions (see tools/reference/README.md, "CTranslate2 reference"):

* The target vocabulary has V tokens. The model's logits have V + 1 entries: id V is a synthetic
  pad whose logit is -inf, and `cfg.pad_id` = V, so the search's pad exclusion leaves exactly
  CTranslate2's distribution over its V tokens.
* Decoder start: with `decoder/start_from_zero_embedding` the decoder starts from id V, whose
  embedding row is zero (CTranslate2 zeroes the first step's input and skips the embedding
  scale there; positions are still added); otherwise from the config's `decoder_start_token`.
* eos = the target id of the config's `eos_token`. Sources are given as ids (no tokenizer; the
  caller adds bos/eos as `add_source_bos` / `add_source_eos` say).

CLI (one JSON array of source ids per input line; one JSON object per output line):

  /usr/bin/python3 tools/reference/ct2_reference.py --model_dir DIR [--beam_size N]
      [--max_length N] [--min_length N] [--length_penalty X] [--num_return_sequences K]
      [--beam_rules huggingface|ctranslate2] < sources.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import struct
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import marian_reference as mr  # noqa: E402  (search functions, Marian position table)

FLOAT32_MIN = float(torch.finfo(torch.float32).min)
NEG_INF = float("-inf")
DEFAULT_LAYER_NORM_EPSILON = 1e-5  # CTranslate2's LayerNorm default when beta is present
GENERATED_POSITIONS = 1 << 16      # bound reported for generated tables (grown on demand)


class Ct2FormatError(RuntimeError):
    """A malformed or unsupported CTranslate2 directory (names the offending part)."""


# ---------------------------------------------------------------------------------------------
# model.bin (docs/ctranslate2-format.md, sections 1 and 2)
# ---------------------------------------------------------------------------------------------

# dtype id -> (name, item size)
DTYPE_IDS = {0: ("float32", 4), 1: ("int8", 1), 2: ("int16", 2), 3: ("int32", 4),
             4: ("float16", 2), 5: ("bfloat16", 2)}
DTYPE_BY_NAME = {name: (i, size) for i, (name, size) in DTYPE_IDS.items()}
_ITEM_SIZE_DTYPES = {4: "float32", 2: "int16", 1: "int8"}  # binary versions 1 to 3
_NUMPY = {"float32": "<f4", "int8": "i1", "int16": "<i2", "int32": "<i4", "float16": "<f2",
          "bfloat16": "<u2"}  # bfloat16 kept as its raw 16 bits
MAX_RANK = 8


class StoredVariable:
    __slots__ = ("name", "dtype", "shape", "array", "offset")

    def __init__(self, name: str, dtype: str, shape: Tuple[int, ...], array: np.ndarray,
                 offset: int):
        self.name, self.dtype, self.shape, self.array, self.offset = name, dtype, shape, array, offset

    def is_scalar(self) -> bool:
        return len(self.shape) == 0

    def as_float32(self) -> np.ndarray:
        """float32 / float16 / bfloat16 values as float32 (integers converted as values)."""
        if self.dtype == "bfloat16":
            return (self.array.astype(np.uint32) << 16).view(np.float32).reshape(self.shape)
        return self.array.astype(np.float32).reshape(self.shape)


class ModelBin:
    """The records of one model.bin: variables in file order and the alias table."""

    def __init__(self, path: str, version: int, spec_name: str, revision: int,
                 variables: Dict[str, StoredVariable], aliases: Dict[str, str]):
        self.path = path
        self.version = version
        self.spec_name = spec_name
        self.revision = revision
        self.variables = variables
        self.aliases = aliases

    def resolve(self, name: str) -> Optional[str]:
        """The stored variable that `name` stands for, or None.

        A variable name is itself; an alias is followed (chains too); `<alias>_scale` and
        `<alias>_zero` stand for the companions of the alias's target when those exist (the
        converters alias a weight before quantizing it, so only the target has a scale)."""
        if name in self.variables:
            return name
        if name in self.aliases:
            return self.aliases[name]  # already resolved to a variable at load time
        for suffix in ("_scale", "_zero"):
            if name.endswith(suffix):
                base = name[: -len(suffix)]
                if base in self.aliases:
                    companion = self.aliases[base] + suffix
                    if companion in self.variables:
                        return companion
        return None

    def get(self, name: str) -> Optional[StoredVariable]:
        target = self.resolve(name)
        return None if target is None else self.variables[target]


class _Reader:
    def __init__(self, data: bytes, path: str):
        self.data, self.pos, self.path = data, 0, path

    def fail(self, what: str, at: Optional[int] = None) -> Ct2FormatError:
        return Ct2FormatError(f"{self.path}: byte {self.pos if at is None else at}: {what}")

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise self.fail(f"truncated while reading {what} ({n} bytes needed, "
                            f"{len(self.data) - self.pos} left)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def u16(self, what: str) -> int:
        return struct.unpack("<H", self.take(2, what))[0]

    def u32(self, what: str) -> int:
        return struct.unpack("<I", self.take(4, what))[0]

    def string(self, what: str) -> str:
        at = self.pos
        n = self.u16(what + " length")
        raw = self.take(n, what)
        if n == 0 or raw[-1] != 0:
            raise self.fail(f"{what}: string does not end with NUL", at)
        if 0 in raw[:-1]:
            raise self.fail(f"{what}: string holds a NUL before its end", at)
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(f"{what}: not UTF-8 ({e})", at)


def read_model_bin(path: str) -> ModelBin:
    """Reads model.bin of binary versions 1 to 6 with the checks of the format doc, section 2."""
    with open(path, "rb") as f:
        data = f.read()
    r = _Reader(data, path)
    version = r.u32("binary version")
    if version < 1 or version > 6:
        raise r.fail(f"unsupported binary version {version} (1 to 6 are read)", 0)
    spec_name, revision = "", 1
    if version >= 2:
        spec_name = r.string("spec name")
        revision = r.u32("spec revision")
    count = r.u32("variable count")
    variables: Dict[str, StoredVariable] = {}
    for k in range(count):
        at = r.pos
        name = r.string(f"name of variable #{k}")
        if not name:
            raise r.fail(f"variable #{k} has an empty name", at)
        rank = r.u8(f"rank of {name}")
        if rank > MAX_RANK:
            raise r.fail(f"variable {name}: rank {rank} above {MAX_RANK}", at)
        shape = tuple(r.u32(f"dimension {d} of {name}") for d in range(rank))
        n_items = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if version >= 4:
            dtype_id = r.u8(f"dtype of {name}")
            if dtype_id not in DTYPE_IDS:
                raise r.fail(f"variable {name}: unknown dtype id {dtype_id}", at)
            dtype, size = DTYPE_IDS[dtype_id]
            nbytes = r.u32(f"byte count of {name}")
            if nbytes != n_items * size:
                raise r.fail(f"variable {name}: byte count {nbytes} != {n_items} x {size} "
                             f"({dtype} {list(shape)})", at)
        else:
            size = r.u8(f"item size of {name}")
            if size not in _ITEM_SIZE_DTYPES:
                raise r.fail(f"variable {name}: unsupported item size {size}", at)
            dtype = _ITEM_SIZE_DTYPES[size]
            n = r.u32(f"element count of {name}")
            if n != n_items:
                raise r.fail(f"variable {name}: element count {n} != shape {list(shape)}", at)
            nbytes = n * size
        raw = r.take(nbytes, f"data of {name}")
        if name in variables:
            raise r.fail(f"duplicated variable name {name}", at)
        arr = np.frombuffer(raw, dtype=_NUMPY[dtype]).copy()
        variables[name] = StoredVariable(name, dtype, shape, arr, at)
    raw_aliases: List[Tuple[str, str, int]] = []
    if version >= 3:
        n_alias = r.u32("alias count")
        seen = set()
        for k in range(n_alias):
            at = r.pos
            alias = r.string(f"name of alias #{k}")
            target = r.string(f"target of alias {alias}")
            if not alias or not target:
                raise r.fail(f"alias #{k} has an empty name or target", at)
            if alias in variables:
                raise r.fail(f"alias {alias} names a variable", at)
            if alias in seen:
                raise r.fail(f"alias {alias} is defined twice", at)
            seen.add(alias)
            raw_aliases.append((alias, target, at))
    if r.pos != len(data):
        raise r.fail(f"{len(data) - r.pos} bytes after the last record")
    table = {a: t for a, t, _ in raw_aliases}
    aliases: Dict[str, str] = {}
    for alias, target, at in raw_aliases:
        seen_chain = [alias]
        t = target
        while t not in variables:
            if t not in table:
                raise r.fail(f"alias {alias} -> {target} does not resolve to a variable", at)
            if t in seen_chain:
                raise r.fail(f"alias cycle {' -> '.join(seen_chain + [t])}", at)
            seen_chain.append(t)
            t = table[t]
        aliases[alias] = t
    return ModelBin(path, version, spec_name, revision, variables, aliases)


# ---------------------------------------------------------------------------------------------
# Vocabularies and special tokens (format doc, section 3)
# ---------------------------------------------------------------------------------------------


def read_vocabulary_file(path_without_ext: str) -> Optional[List[str]]:
    """`<name>.json` (an array of strings) before `<name>.txt` (one token per line); None when
    neither exists."""
    jpath, tpath = path_without_ext + ".json", path_without_ext + ".txt"
    if os.path.exists(jpath):
        with open(jpath, encoding="utf-8") as f:
            try:
                tokens = json.load(f)
            except json.JSONDecodeError as e:
                raise Ct2FormatError(f"{jpath}: invalid JSON ({e})")
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise Ct2FormatError(f"{jpath}: not an array of strings")
        return tokens
    if os.path.exists(tpath):
        with open(tpath, "rb") as f:
            text = f.read().decode("utf-8")
        lines = text.split("\n")
        if lines and lines[-1] == "":  # a final newline ends the last line (std::getline)
            lines.pop()
        if lines and all(line.endswith("\r") for line in lines):
            lines = [line[:-1] for line in lines]
        return lines
    return None


class Vocabulary:
    """Tokens by id; a token written twice keeps both ids, lookup gives the first."""

    def __init__(self, tokens: List[str], unk_token: str):
        self.tokens = list(tokens)
        if unk_token not in self.tokens:
            self.tokens.append(unk_token)
        self.ids: Dict[str, int] = {}
        for i, t in enumerate(self.tokens):
            self.ids.setdefault(t, i)

    def __len__(self) -> int:
        return len(self.tokens)

    def lookup(self, token: str) -> Optional[int]:
        return self.ids.get(token)


def read_vocabularies(model_dir: str, unk_token: str) -> Tuple[Vocabulary, Vocabulary, bool]:
    """(source, target, shared?)"""
    for name in os.listdir(model_dir):
        if re.fullmatch(r"(source|target)_\d+_vocabulary\.(json|txt)", name):
            raise Ct2FormatError(f"{model_dir}: {name}: multi-source vocabularies are not supported")
    shared = read_vocabulary_file(os.path.join(model_dir, "shared_vocabulary"))
    if shared is not None:
        v = Vocabulary(shared, unk_token)
        return v, v, True
    tgt = read_vocabulary_file(os.path.join(model_dir, "target_vocabulary"))
    src = read_vocabulary_file(os.path.join(model_dir, "source_vocabulary"))
    if tgt is None or src is None:
        raise Ct2FormatError(f"{model_dir}: no shared_vocabulary, or not both source_vocabulary "
                             f"and target_vocabulary (.json or .txt)")
    return Vocabulary(src, unk_token), Vocabulary(tgt, unk_token), False


class SpecialTokens:
    def __init__(self):
        self.unk_token = "<unk>"
        self.bos_token = "<s>"
        self.eos_token = "</s>"
        self.decoder_start_token: Optional[str] = "<s>"
        self.add_source_bos = False
        self.add_source_eos = False


def read_config(model_dir: str) -> dict:
    path = os.path.join(model_dir, "config.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        try:
            cfg = json.load(f)
        except json.JSONDecodeError as e:
            raise Ct2FormatError(f"{path}: invalid JSON ({e})")
    if not isinstance(cfg, dict):
        raise Ct2FormatError(f"{path}: not a JSON object")
    return cfg


def special_tokens_from_config(cfg: dict) -> SpecialTokens:
    """Binary version 6: the keys of config.json; an absent key keeps CTranslate2's default."""
    st = SpecialTokens()
    for key in ("unk_token", "bos_token", "eos_token"):
        if key in cfg:
            if not isinstance(cfg[key], str):
                raise Ct2FormatError(f"config.json: {key} must be a string, got {cfg[key]!r}")
            setattr(st, key, cfg[key])
    if "decoder_start_token" in cfg:
        v = cfg["decoder_start_token"]
        if v is not None and not isinstance(v, str):
            raise Ct2FormatError(f"config.json: decoder_start_token must be a string or null, got {v!r}")
        st.decoder_start_token = v
    for key in ("add_source_bos", "add_source_eos"):
        if key in cfg:
            if not isinstance(cfg[key], bool):
                raise Ct2FormatError(f"config.json: {key} must be a boolean, got {cfg[key]!r}")
            setattr(st, key, cfg[key])
    return st


def layer_norm_epsilon_from_config(cfg: dict) -> float:
    """config.json `layer_norm_epsilon` (read as a float32, as CTranslate2 does), else 1e-5."""
    v = cfg.get("layer_norm_epsilon")
    if v is None:
        return DEFAULT_LAYER_NORM_EPSILON
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Ct2FormatError(f"config.json: layer_norm_epsilon must be a number or null, got {v!r}")
    return float(np.float32(v))


# ---------------------------------------------------------------------------------------------
# Position tables
# ---------------------------------------------------------------------------------------------


def ct2_sinusoidal_table(n_pos: int, depth: int) -> np.ndarray:
    """CTranslate2's generated table (its SinusoidalPositionEncoder), float32 arithmetic as there:

      inc      = log(10000) / (depth/2 - 1)            (float32; depth/2 an integer division)
      scale[i] = exp(-inc * i)                         i in [0, depth/2)
      angle    = (p + 1) * scale[i]                    p = position from 0: row 0 uses p + 1 = 1
      row p    = [sin(angle[0..depth/2)), cos(angle[0..depth/2))]

    Not Marian's table (no +1 there, exponent 2i/depth). sin/cos are evaluated in double on the
    float32 angle and rounded to float32."""
    half = depth // 2
    if depth % 2 or half < 2:
        raise Ct2FormatError(f"generated positions need an even depth >= 4, got {depth}")
    inc = np.float32(np.log(np.float32(10000.0))) / np.float32(half - 1)
    scales = np.exp(np.float32(-inc) * np.arange(half, dtype=np.float32)).astype(np.float32)
    angles = (np.arange(1, n_pos + 1, dtype=np.float32)[:, None] * scales[None, :]).astype(np.float32)
    a64 = angles.astype(np.float64)
    return np.concatenate([np.sin(a64), np.cos(a64)], axis=1).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# The TransformerSpec model
# ---------------------------------------------------------------------------------------------

ACTIVATIONS = {
    0: ("relu", F.relu),
    1: ("gelu_tanh", lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                                            * (x + 0.044715 * torch.pow(x, 3.0))))),
    2: ("swish", F.silu),
    3: ("gelu", F.gelu),  # exact erf form
}
_ACTIVATION_NAMES = {4: "GELUSigmoid", 5: "Tanh", 6: "Sigmoid"}

# What a variable left over stands for (first match wins), for the error message.
_UNSUPPORTED = [
    ("relative_position", "relative position representations"),
    ("relative_attention_bias", "relative attention bias (T5)"),
    ("relative_asymmetric", "asymmetric relative positions"),
    ("rotary", "rotary embeddings"),
    ("alibi", "ALiBi"),
    ("num_heads_kv", "grouped or multi-query attention"),
    ("multi_query", "multi-query attention"),
    ("head_dim", "a non-standard head dimension"),
    ("linear_0_noact", "a gated (GLU) feed-forward layer"),
    ("queries_scale", "a stored query scale"),
    ("layer_scalar", "per-layer scalars"),
    ("project_in", "a projection after the decoder embeddings"),
    ("project_out", "a projection before the output layer"),
    ("scale_outputs", "an output scale"),
    ("final_logit_softcapping", "logit soft-capping"),
    ("sliding_window", "a sliding attention window"),
    ("_zero", "zero-point quantization"),
    ("input_layer_norm", "extra pre/post layer norms"),
    ("post_attention_layer_norm", "extra pre/post layer norms"),
    ("pre_feedforward_layer_norm", "extra pre/post layer norms"),
    ("post_feedforward_layer_norm", "extra pre/post layer norms"),
    ("shared_layer_norm", "parallel residual blocks"),
    ("q_norm", "query/key norms"),
    ("k_norm", "query/key norms"),
    ("v_norm", "value norms"),
    ("memory_kv", "merged encoder attention"),
    ("embeddings_1", "source factors (a second source embedding)"),
    ("layer_norm_use_residual", "RMS norms"),
]


# Attributes that TransformerSpec revisions 3 and 4 wrote once, without the side's scope.
_UNSCOPED_BEFORE_REVISION_5 = ("num_heads", "pre_norm", "activation", "embeddings_merge",
                               "alignment_layer", "alignment_heads")


def _what(name: str) -> str:
    return next((desc for key, desc in _UNSUPPORTED if key in name), "an unknown variable")


class Ct2Config:
    """What the search functions read (`max_positions`, `decoder_vocab_size`, `pad_id`,
    `eos_id`, `decoder_start_id`) plus the model's shape and special tokens."""


class _LinearW:
    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w, self.b = w, b


class Ct2Model:
    """Float32 weights + encoder / incremental decoder (CPU)."""

    def __init__(self, model_dir: str):
        self.model_dir = model_dir
        self.bin = read_model_bin(os.path.join(model_dir, "model.bin"))
        b = self.bin
        if b.spec_name != "TransformerSpec":
            raise Ct2FormatError(f"{b.path}: spec {b.spec_name!r} is not a TransformerSpec")
        if not 3 <= b.revision <= 7:
            raise Ct2FormatError(f"{b.path}: TransformerSpec revision {b.revision} "
                                 f"(3 to 7 are read)")
        self.config_json = read_config(model_dir)
        self._requested: set = set()
        self.stored_dtypes = sorted({v.dtype for v in b.variables.values() if not v.is_scalar()})
        st = self._special_tokens()
        self.special = st
        self.src_vocab, self.tgt_vocab, self.shared_vocab = read_vocabularies(model_dir, st.unk_token)
        self.epsilon = layer_norm_epsilon_from_config(self.config_json)
        self.logits_hook = None
        self.w: Dict[str, torch.Tensor] = {}
        self._load_weights()
        self._check_leftovers()
        self._make_cfg()
        self._build()

    # -- reading -------------------------------------------------------------------------------

    def _lookup(self, name: str) -> Optional[StoredVariable]:
        v = self.bin.get(name)
        if v is not None:
            self._requested.add(name)
            self._requested.add(v.name)
        return v

    def _attr(self, scope: str, key: str) -> Optional[StoredVariable]:
        """A one-value attribute; before revision 5 the side attributes were written once,
        without the side's scope."""
        v = self._lookup(f"{scope}/{key}" if scope else key)
        if v is None and scope and self.bin.revision < 5 and key in _UNSCOPED_BEFORE_REVISION_5:
            v = self._lookup(key)
        if v is not None and int(np.prod(v.shape, dtype=np.int64)) != 1:
            raise Ct2FormatError(f"attribute {v.name} has shape {list(v.shape)}, expected one value")
        return v

    def _int_attr(self, scope: str, key: str, default: int) -> int:
        v = self._attr(scope, key)
        if v is None:
            return default
        if v.dtype not in ("int8", "int16", "int32"):
            raise Ct2FormatError(f"attribute {v.name} is {v.dtype}, expected an integer")
        return int(v.array.reshape(-1)[0])

    def _text_attr(self, key: str, default: str) -> str:
        v = self._lookup(key)
        if v is None:
            return default
        if v.dtype != "int8" or len(v.shape) != 1:
            raise Ct2FormatError(f"attribute {key} is not an int8 byte vector")
        return v.array.astype(np.uint8).tobytes().decode("utf-8")

    def _special_tokens(self) -> SpecialTokens:
        if self.bin.version >= 6:
            st = special_tokens_from_config(self.config_json)
        else:
            # Versions 1 to 5: the model's own attribute variables; config.json not read for them.
            st = SpecialTokens()
            st.unk_token = self._text_attr("unk_token", st.unk_token)
            st.bos_token = self._text_attr("bos_token", st.bos_token)
            st.eos_token = self._text_attr("eos_token", st.eos_token)
            st.add_source_bos = bool(self._int_attr("", "with_source_bos", 0))
            st.add_source_eos = bool(self._int_attr("", "with_source_eos", 0))
            user_start = bool(self._int_attr("", "user_decoder_start_tokens", 0))
            with_target_bos = bool(self._int_attr("", "with_target_bos", 1))
            st.decoder_start_token = None if user_start else (
                st.bos_token if with_target_bos else st.eos_token)
        if st.decoder_start_token is None:
            raise Ct2FormatError("the decoder start tokens come from the caller (decoder_start_token "
                                 "null / user_decoder_start_tokens): not supported")
        return st

    def _float(self, name: str, shape: Optional[Tuple[int, ...]] = None,
               required: bool = True) -> Optional[np.ndarray]:
        """A float variable as float32; int8/int16 weights divided by their `_scale`."""
        v = self._lookup(name)
        if v is None:
            if required:
                raise Ct2FormatError(f"model.bin lacks variable {name}")
            return None
        if shape is not None and tuple(v.shape) != tuple(shape):
            raise Ct2FormatError(f"variable {name} ({v.name}) has shape {list(v.shape)}, "
                                 f"expected {list(shape)}")
        if v.dtype in ("float32", "float16", "bfloat16"):
            out = v.as_float32()
        elif v.dtype in ("int8", "int16"):
            s = self._lookup(name + "_scale")
            if s is None:
                raise Ct2FormatError(f"{v.dtype} variable {name} has no {name}_scale")
            if s.dtype not in ("float32", "float16", "bfloat16"):
                raise Ct2FormatError(f"{name}_scale is {s.dtype}, expected a float")
            scale = s.as_float32().reshape(-1)
            q = v.array.astype(np.float32).reshape(v.shape)
            if scale.size == 1:
                out = q / scale[0]
            elif len(v.shape) >= 1 and scale.size == v.shape[0]:
                out = q / scale.reshape((-1,) + (1,) * (len(v.shape) - 1))
            else:
                raise Ct2FormatError(f"{name}_scale has {scale.size} values for {list(v.shape)}")
            if not np.all(np.isfinite(scale)) or np.any(scale == 0):
                raise Ct2FormatError(f"{name}_scale holds a zero or non-finite value")
            out = out.astype(np.float32)
        else:
            raise Ct2FormatError(f"variable {name} has unsupported dtype {v.dtype}")
        if not np.all(np.isfinite(out)):
            raise Ct2FormatError(f"variable {name} holds NaN or infinite values")
        return np.ascontiguousarray(out, dtype=np.float32)

    def _linear(self, scope: str, out_dim: int, in_dim: int) -> _LinearW:
        w = self._float(scope + "/weight", (out_dim, in_dim))
        bias = self._float(scope + "/bias", (out_dim,), required=False)
        if bias is None:
            bias = np.zeros(out_dim, dtype=np.float32)
        return _LinearW(w, bias)

    def _layer_norm(self, scope: str, dim: int, required: bool = True):
        gamma = self._float(scope + "/gamma", (dim,), required=required)
        if gamma is None:
            return None
        beta = self._float(scope + "/beta", (dim,), required=False)
        if beta is None:
            raise Ct2FormatError(f"{scope} has gamma but no beta: RMS norms are not supported")
        return (gamma, beta)

    def _embedding_scale(self, scope: str, depth: int) -> float:
        """CTranslate2's rule: `<scope>/scale_embeddings`, else the old
        `<scope>/embeddings/multiply_by_sqrt_depth`; absent or a non-zero int8 flag: sqrt(depth);
        a zero int8 flag: 1; a float value: that value."""
        v = self._attr(scope, "scale_embeddings")
        if v is None:
            v = self._attr(scope, "embeddings/multiply_by_sqrt_depth")
        if v is None:
            return float(np.float32(math.sqrt(depth)))
        if v.dtype == "int8":
            return float(np.float32(math.sqrt(depth))) if int(v.array[0]) != 0 else 1.0
        if v.dtype != "float32":
            raise Ct2FormatError(f"{v.name}: {v.dtype} is neither an int8 flag nor a float32 scale")
        return float(v.array[0])

    def _side_flags(self, scope: str):
        heads = self._int_attr(scope, "num_heads", 8)
        pre_norm = bool(self._int_attr(scope, "pre_norm", 1))
        act = self._int_attr(scope, "activation", 0)
        if act not in ACTIVATIONS:
            raise Ct2FormatError(f"{scope}/activation {act} "
                                 f"({_ACTIVATION_NAMES.get(act, 'unknown')}) is not supported")
        return heads, pre_norm, act

    def _check_off(self, scope: str, key: str) -> None:
        v = self._attr(scope, key)
        if v is not None and int(np.asarray(v.as_float32()).reshape(-1)[0]) != 0:
            raise Ct2FormatError(f"{v.name} is set: {_what(v.name)} is not supported")

    def _check_restated(self, attn_scope: str, heads: int, depth: int) -> None:
        """Per-attention num_heads_kv / head_dim are accepted when they restate the layout."""
        for key, want in (("num_heads_kv", heads), ("head_dim", depth // heads)):
            v = self._lookup(f"{attn_scope}/{key}")
            if v is not None and int(v.array.reshape(-1)[0]) != want:
                raise Ct2FormatError(f"{attn_scope}/{key} = {int(v.array.reshape(-1)[0])} "
                                     f"(standard {want}): "
                                     f"{'grouped or multi-query attention' if key == 'num_heads_kv' else 'a non-standard head dimension'}"
                                     f" is not supported")

    def _load_weights(self) -> None:
        b = self.bin
        w: Dict[str, np.ndarray] = {}
        # encoder embeddings: one table, "embeddings" (older) or "embeddings_0"
        enc_emb_scope = "encoder/embeddings" if b.resolve("encoder/embeddings/weight") \
            else "encoder/embeddings_0"
        ev = b.get(enc_emb_scope + "/weight")
        if ev is None:
            raise Ct2FormatError("model.bin lacks encoder/embeddings_0/weight")
        if len(ev.shape) != 2:
            raise Ct2FormatError(f"{enc_emb_scope}/weight has shape {list(ev.shape)}")
        Vs, D = ev.shape
        w["enc_embed"] = self._float(enc_emb_scope + "/weight", (Vs, D))
        dv = b.get("decoder/embeddings/weight")
        if dv is None or len(dv.shape) != 2 or dv.shape[1] != D:
            raise Ct2FormatError("decoder/embeddings/weight missing or not [V, d_model]")
        V = dv.shape[0]
        w["dec_embed"] = self._float("decoder/embeddings/weight", (V, D))
        if len(self.src_vocab) != Vs:
            raise Ct2FormatError(f"source vocabulary has {len(self.src_vocab)} tokens, the encoder "
                                 f"embeddings {Vs} rows")
        if len(self.tgt_vocab) != V:
            raise Ct2FormatError(f"target vocabulary has {len(self.tgt_vocab)} tokens, the decoder "
                                 f"embeddings {V} rows")
        self.d_model, self.source_vocab_size, self.target_vocab_size = D, Vs, V
        self._int_attr("encoder", "embeddings_merge", 0)  # read; one source embedding only
        self._check_off("encoder", "multi_query_attention")
        for key in ("alibi", "alibi_use_positive_positions", "scale_alibi"):
            self._check_off("decoder", key)
        # What CTranslate2 returns as attention and replaces unknowns by (its defaults: the
        # last layer, its first head; 0 heads means every head).
        self.alignment_layer = self._int_attr("decoder", "alignment_layer", -1)
        self.alignment_heads = self._int_attr("decoder", "alignment_heads", 1)

        self.sides = {}
        for side in ("encoder", "decoder"):
            heads, pre_norm, act = self._side_flags(side)
            if heads < 1 or D % heads:
                raise Ct2FormatError(f"{side}/num_heads {heads} does not divide d_model {D}")
            info = {"heads": heads, "pre_norm": pre_norm, "activation": act,
                    "scale": self._embedding_scale(side, D)}
            pos = self._float(f"{side}/position_encodings/encodings", None, required=False)
            if pos is not None:
                if pos.ndim != 2 or pos.shape[1] != D:
                    raise Ct2FormatError(f"{side}/position_encodings/encodings has shape "
                                         f"{list(pos.shape)}, expected [N, {D}]")
                info["positions"] = "stored"
                w[f"{side}_pos"] = pos
            else:
                info["positions"] = "generated"
                w[f"{side}_pos"] = ct2_sinusoidal_table(64, D)
            ln = self._layer_norm(f"{side}/layer_norm", D, required=False)
            if ln is not None:
                w[f"{side}_final_ln"] = ln
            elif pre_norm:
                raise Ct2FormatError(f"pre-norm {side} without {side}/layer_norm is not supported")
            lne = self._layer_norm(f"{side}/layernorm_embedding", D, required=False)
            if lne is not None:
                w[f"{side}_ln_embedding"] = lne
            layers = []
            i = 0
            while b.resolve(f"{side}/layer_{i}/self_attention/linear_0/weight") is not None:
                p = f"{side}/layer_{i}"
                layer = {}
                layer["self_ln"] = self._layer_norm(p + "/self_attention/layer_norm", D)
                layer["self_qkv"] = self._linear(p + "/self_attention/linear_0", 3 * D, D)
                layer["self_out"] = self._linear(p + "/self_attention/linear_1", D, D)
                self._check_restated(p + "/self_attention", heads, D)
                if side == "decoder":
                    layer["cross_ln"] = self._layer_norm(p + "/attention/layer_norm", D)
                    layer["cross_q"] = self._linear(p + "/attention/linear_0", D, D)
                    layer["cross_kv"] = self._linear(p + "/attention/linear_1", 2 * D, D)
                    layer["cross_out"] = self._linear(p + "/attention/linear_2", D, D)
                    self._check_restated(p + "/attention", heads, D)
                layer["ffn_ln"] = self._layer_norm(p + "/ffn/layer_norm", D)
                fv = b.get(p + "/ffn/linear_0/weight")
                if fv is None or len(fv.shape) != 2:
                    raise Ct2FormatError(f"{p}/ffn/linear_0/weight missing or not 2-D")
                ffn = fv.shape[0]
                layer["ffn_in"] = self._linear(p + "/ffn/linear_0", ffn, D)
                layer["ffn_out"] = self._linear(p + "/ffn/linear_1", D, ffn)
                layers.append(layer)
                i += 1
            if not layers:
                raise Ct2FormatError(f"model.bin has no {side}/layer_0")
            info["layers"] = layers
            self.sides[side] = info
        proj = self._linear("decoder/projection", V, D)
        w["proj"] = proj
        sz = self._attr("decoder", "start_from_zero_embedding")
        self.start_from_zero_embedding = bool(sz is not None and int(sz.array.reshape(-1)[0]) != 0)
        self._np = w

    def _check_leftovers(self) -> None:
        b = self.bin
        used = set(self._requested)
        for name in list(used):
            t = b.resolve(name)
            if t is not None:
                used.add(t)
        leftovers = [n for n in list(b.variables) + list(b.aliases) if n not in used]
        if leftovers:
            name = sorted(leftovers)[0]
            what = _what(name)
            raise Ct2FormatError(f"model.bin variable {name} is not supported ({what}); "
                                 f"{len(leftovers)} unread: {sorted(leftovers)[:8]}")

    def _make_cfg(self) -> None:
        st = self.special
        c = Ct2Config()
        V = self.target_vocab_size
        c.d_model = self.d_model
        c.source_vocab_size = self.source_vocab_size
        c.target_vocab_size = V
        c.decoder_vocab_size = V + 1
        c.pad_id = V
        eos = self.tgt_vocab.lookup(st.eos_token)
        if eos is None:
            raise Ct2FormatError(f"eos token {st.eos_token!r} is not in the target vocabulary")
        start_tok = self.tgt_vocab.lookup(st.decoder_start_token)
        if start_tok is None:
            raise Ct2FormatError(f"decoder start token {st.decoder_start_token!r} is not in the "
                                 f"target vocabulary")
        c.eos_id = eos
        c.decoder_start_token_id = start_tok
        c.decoder_start_id = V if self.start_from_zero_embedding else start_tok
        c.source_eos_id = self.src_vocab.lookup(st.eos_token)
        c.source_bos_id = self.src_vocab.lookup(st.bos_token)
        c.source_unk_id = self.src_vocab.lookup(st.unk_token)
        c.encoder_heads = self.sides["encoder"]["heads"]
        c.decoder_heads = self.sides["decoder"]["heads"]
        c.epsilon = self.epsilon
        enc_stored = self.sides["encoder"]["positions"] == "stored"
        dec_stored = self.sides["decoder"]["positions"] == "stored"
        c.max_source_positions = self._np["encoder_pos"].shape[0] if enc_stored else GENERATED_POSITIONS
        c.max_positions = self._np["decoder_pos"].shape[0] if dec_stored else GENERATED_POSITIONS
        self.cfg = c

    def describe(self) -> dict:
        out = {"binary_version": self.bin.version, "spec_revision": self.bin.revision,
               "d_model": self.d_model, "stored_dtypes": self.stored_dtypes,
               "layer_norm_epsilon": self.epsilon,
               "start_from_zero_embedding": self.start_from_zero_embedding,
               "shared_vocabulary": self.shared_vocab}
        for side, info in self.sides.items():
            out[side] = {"layers": len(info["layers"]), "heads": info["heads"],
                         "pre_norm": info["pre_norm"],
                         "activation": ACTIVATIONS[info["activation"]][0],
                         "embedding_scale": info["scale"], "positions": info["positions"],
                         "final_layer_norm": f"{side}_final_ln" in self._np,
                         "layernorm_embedding": f"{side}_ln_embedding" in self._np}
        return out

    # -- torch weights -------------------------------------------------------------------------

    def _build(self, dtype: torch.dtype = torch.float32) -> None:
        def t(a):
            return torch.from_numpy(np.ascontiguousarray(a)).to(dtype)

        def lin(l: _LinearW):
            return (t(l.w), t(l.b))

        def ln(p):
            return None if p is None else (t(p[0]), t(p[1]))

        npw = self._np
        self.dtype = dtype
        D = self.d_model
        self.enc_embed = t(npw["enc_embed"])
        # decoder table + the synthetic pad row V (zero: the start_from_zero_embedding input)
        self.dec_embed = torch.cat([t(npw["dec_embed"]), torch.zeros(1, D, dtype=dtype)])
        self.proj_w_t = t(npw["proj"].w).t().contiguous()
        self.proj_b = t(npw["proj"].b)
        self.pos = {s: t(npw[f"{s}_pos"]) for s in ("encoder", "decoder")}
        self.final_ln = {s: ln(npw.get(f"{s}_final_ln")) for s in ("encoder", "decoder")}
        self.ln_embedding = {s: ln(npw.get(f"{s}_ln_embedding")) for s in ("encoder", "decoder")}
        self.layers = {}
        for side, info in self.sides.items():
            self.layers[side] = [{k: (lin(v) if isinstance(v, _LinearW) else ln(v))
                                  for k, v in layer.items()} for layer in info["layers"]]
        self.act = {s: ACTIVATIONS[self.sides[s]["activation"]][1] for s in self.sides}

    def astype(self, dtype: torch.dtype) -> "Ct2Model":
        """A copy computing in another precision (float64 robustness cross-checks)."""
        other = object.__new__(Ct2Model)
        other.__dict__.update(self.__dict__)
        other.pos = None
        other._build(dtype)
        return other

    def _positions(self, side: str, n: int) -> torch.Tensor:
        table = self.pos[side]
        if n > table.shape[0]:
            if self.sides[side]["positions"] == "stored":
                raise ValueError(f"{side}: position {n - 1} beyond the {table.shape[0]} stored "
                                 f"position encodings")
            rows = max(n, 2 * table.shape[0])
            self.pos[side] = table = torch.from_numpy(
                ct2_sinusoidal_table(rows, self.d_model)).to(self.dtype)
        return table

    # -- pieces --------------------------------------------------------------------------------

    def _ln(self, x: torch.Tensor, wb) -> torch.Tensor:
        return F.layer_norm(x, (self.d_model,), wb[0], wb[1], self.epsilon)

    @staticmethod
    def _split(x: torch.Tensor, heads: int) -> torch.Tensor:  # [B, T, D] -> [B, H, T, hd]
        b, t, d = x.shape
        return x.view(b, t, heads, d // heads).transpose(1, 2)

    @staticmethod
    def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: Optional[torch.Tensor], probs_out: Optional[list] = None) -> torch.Tensor:
        """softmax(q·kᵀ / sqrt(hd) + mask)·v on [B, H, T, hd]; returns [B, T, D]."""
        hd = q.shape[-1]
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        if mask is not None:
            scores = scores + mask
        probs = torch.softmax(scores, dim=-1)
        if probs_out is not None:
            probs_out.append(probs)
        out = torch.matmul(probs, v)
        b, h, t, _ = out.shape
        return out.transpose(1, 2).reshape(b, t, h * hd)

    def _sublayer(self, x: torch.Tensor, ln, pre_norm: bool, fn) -> torch.Tensor:
        """pre-norm: x + f(LN(x)); post-norm: LN(x + f(x))."""
        if pre_norm:
            return x + fn(self._ln(x, ln))
        return self._ln(x + fn(x), ln)

    def _self_attention(self, layer, heads: int, x: torch.Tensor, mask, cache=None, t=0):
        D = self.d_model
        qkv = F.linear(x, *layer["self_qkv"])
        q, k, v = (self._split(qkv[..., i * D:(i + 1) * D], heads) for i in range(3))
        if cache is not None:  # incremental: append this step's keys/values
            kc, vc = cache
            kc[:, :, t:t + 1] = k
            vc[:, :, t:t + 1] = v
            k, v = kc[:, :, :t + 1], vc[:, :, :t + 1]
        return F.linear(self._attend(q, k, v, mask), *layer["self_out"])

    def _cross_kv(self, layer, heads: int, memory: torch.Tensor):
        D = self.d_model
        kv = F.linear(memory, *layer["cross_kv"])
        return (self._split(kv[..., :D], heads).contiguous(),
                self._split(kv[..., D:], heads).contiguous())

    def _cross_attention(self, layer, heads: int, x, ck, cv, mask, probs_out=None):
        q = self._split(F.linear(x, *layer["cross_q"]), heads)
        return F.linear(self._attend(q, ck, cv, mask, probs_out), *layer["cross_out"])

    def _ffn(self, side: str, layer, x: torch.Tensor) -> torch.Tensor:
        return F.linear(self.act[side](F.linear(x, *layer["ffn_in"])), *layer["ffn_out"])

    # -- the interface of marian_reference.MarianModel ------------------------------------------

    # The same additive key-padding mask as the Marian reference's.
    padding_mask = mr.MarianModel.padding_mask

    def encode(self, batch_ids: Sequence[Sequence[int]]) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Right-padded batch of source ids -> (encoder output [B, S, D], additive mask or None)."""
        c = self.cfg
        lengths = [len(x) for x in batch_ids]
        if min(lengths) < 1:
            raise ValueError("empty source")
        s = max(lengths)
        if s > c.max_source_positions:
            raise ValueError(f"source of {s} tokens exceeds the {c.max_source_positions} stored "
                             f"encoder positions")
        ids = torch.zeros((len(batch_ids), s), dtype=torch.long)
        for b, x in enumerate(batch_ids):
            if any(i < 0 or i >= c.source_vocab_size for i in x):
                raise ValueError(f"source id out of range [0, {c.source_vocab_size})")
            ids[b, :len(x)] = torch.tensor(list(x), dtype=torch.long)
        mask = self.padding_mask(lengths, s)
        info = self.sides["encoder"]
        x = F.embedding(ids, self.enc_embed)
        if info["scale"] != 1.0:
            x = x * info["scale"]
        x = x + self._positions("encoder", s)[:s]
        if self.ln_embedding["encoder"] is not None:
            x = self._ln(x, self.ln_embedding["encoder"])
        heads, pre = info["heads"], info["pre_norm"]
        for layer in self.layers["encoder"]:
            x = self._sublayer(x, layer["self_ln"], pre,
                               lambda h: self._self_attention(layer, heads, h, mask))
            x = self._sublayer(x, layer["ffn_ln"], pre, lambda h: self._ffn("encoder", layer, h))
        if self.final_ln["encoder"] is not None:
            x = self._ln(x, self.final_ln["encoder"])
        return x, mask

    def start_decoder(self, enc_out: torch.Tensor, enc_mask: Optional[torch.Tensor],
                      expand: int = 1, max_steps: int = 512) -> dict:
        heads = self.sides["decoder"]["heads"]
        cross = []
        for layer in self.layers["decoder"]:
            k, v = self._cross_kv(layer, heads, enc_out)
            if expand > 1:
                k = k.repeat_interleave(expand, dim=0)
                v = v.repeat_interleave(expand, dim=0)
            cross.append((k, v))
        mask = enc_mask.repeat_interleave(expand, dim=0) if (enc_mask is not None and expand > 1) \
            else enc_mask
        rows = enc_out.shape[0] * expand
        hd = self.d_model // heads
        cache = [(torch.empty(rows, heads, max_steps, hd, dtype=self.dtype),
                  torch.empty(rows, heads, max_steps, hd, dtype=self.dtype))
                 for _ in self.layers["decoder"]]
        return {"cross": cross, "mask": mask, "self": cache, "len": 0}

    def reorder(self, state: dict, rows: torch.Tensor) -> None:
        t = state["len"]
        for k, v in state["self"]:
            k[:, :, :t] = k[:, :, :t].index_select(0, rows)
            v[:, :, :t] = v[:, :, :t].index_select(0, rows)

    def _decoder_input(self, tokens: torch.Tensor, steps: Sequence[int]) -> torch.Tensor:
        """Embeddings of [B, T] tokens at decoder positions `steps` (CTranslate2's order: zero
        first input / scale, + position, then layernorm_embedding)."""
        info = self.sides["decoder"]
        x = F.embedding(tokens, self.dec_embed)
        scale = torch.full((len(steps),), info["scale"], dtype=self.dtype)
        if self.start_from_zero_embedding:
            for j, s in enumerate(steps):
                if s == 0:
                    x[:, j] = 0.0
                    scale[j] = 1.0
        if info["scale"] != 1.0:
            x = x * scale[None, :, None]
        table = self._positions("decoder", max(steps) + 1)
        x = x + table[list(steps)][None]
        if self.ln_embedding["decoder"] is not None:
            x = self._ln(x, self.ln_embedding["decoder"])
        return x

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        if self.final_ln["decoder"] is not None:
            x = self._ln(x, self.final_ln["decoder"])
        logits = torch.matmul(x, self.proj_w_t) + self.proj_b
        pad = torch.full(logits.shape[:-1] + (1,), NEG_INF, dtype=logits.dtype)
        return torch.cat([logits, pad], dim=-1)

    def decode_step(self, state: dict, tokens: torch.Tensor) -> torch.Tensor:
        """One token per row at position state['len']; raw logits [rows, V + 1] (id V = -inf)."""
        t = state["len"]
        if t >= self.cfg.max_positions:
            raise ValueError("decoder position beyond the stored position encodings")
        info = self.sides["decoder"]
        heads, pre = info["heads"], info["pre_norm"]
        x = self._decoder_input(tokens.view(-1, 1), [t])
        for layer, cache, (ck, cv) in zip(self.layers["decoder"], state["self"], state["cross"]):
            x = self._sublayer(x, layer["self_ln"], pre,
                               lambda h: self._self_attention(layer, heads, h, None, cache, t))
            x = self._sublayer(x, layer["cross_ln"], pre,
                               lambda h: self._cross_attention(layer, heads, h, ck, cv, state["mask"]))
            x = self._sublayer(x, layer["ffn_ln"], pre, lambda h: self._ffn("decoder", layer, h))
        state["len"] = t + 1
        logits = self._logits(x[:, 0, :])
        return logits if self.logits_hook is None else self.logits_hook(logits)

    def decoder_full(self, enc_out: torch.Tensor, enc_mask: Optional[torch.Tensor],
                     dec_ids: torch.Tensor, cross_probs: Optional[list] = None) -> torch.Tensor:
        """Non-incremental decoder over a whole prefix (causal mask); logits [B, T, V + 1]."""
        b, t = dec_ids.shape
        info = self.sides["decoder"]
        heads, pre = info["heads"], info["pre_norm"]
        x = self._decoder_input(dec_ids, list(range(t)))
        causal = torch.triu(torch.full((t, t), FLOAT32_MIN, dtype=self.dtype), diagonal=1)[None, None]
        for layer in self.layers["decoder"]:
            x = self._sublayer(x, layer["self_ln"], pre,
                               lambda h: self._self_attention(layer, heads, h, causal))
            ck, cv = self._cross_kv(layer, heads, enc_out)
            x = self._sublayer(x, layer["cross_ln"], pre,
                               lambda h: self._cross_attention(layer, heads, h, ck, cv, enc_mask,
                                                               cross_probs))
            x = self._sublayer(x, layer["ffn_ln"], pre, lambda h: self._ffn("decoder", layer, h))
        return self._logits(x)


def ct2_attention(model: Ct2Model, source: Sequence[int], ids: Sequence[int]) -> np.ndarray:
    """The attention CTranslate2 returns for a generated hypothesis `ids` of `source`: per
    generated token, the cross-attention of the step that produced it (the decoder fed the start
    token and ids[:-1], teacher-forced) in the alignment layer, averaged over its first
    alignment_heads heads; [len(ids), len(source)]."""
    with torch.inference_mode():
        enc_out, enc_mask = model.encode([list(source)])
        dec = torch.tensor([[model.cfg.decoder_start_id] + list(ids[:-1])], dtype=torch.long)
        probs: list = []
        model.decoder_full(enc_out, enc_mask, dec, probs)
    layer = probs[model.alignment_layer]  # one [1, H, T, S] per decoder layer
    heads = model.alignment_heads or layer.shape[1]
    return layer[0, :heads].mean(dim=0).float().numpy()


def replace_unknowns(model: Ct2Model, source_pieces: Sequence[str], source: Sequence[int],
                     ids: Sequence[int], target_pieces: Sequence[str], unk: int,
                     first_piece: int = 0) -> List[str]:
    """CTranslate2's replace_unknowns on a hypothesis: `target_pieces` (the pieces of `ids`)
    with each unknown id's piece replaced by the source piece its attention row weighs most (the
    first of equals), over the positions of `source_pieces` in `source` (from `first_piece`, after
    a BOS)."""
    out = list(target_pieces)
    if unk not in ids:
        return out
    attention = ct2_attention(model, source, ids)
    n = min(len(source_pieces), len(source) - first_piece)
    for t, i in enumerate(ids):
        if i == unk and n > 0:
            out[t] = source_pieces[int(np.argmax(attention[t, first_piece:first_piece + n]))]
    return out


# ---------------------------------------------------------------------------------------------
# Convenience + CLI
# ---------------------------------------------------------------------------------------------


def ct2_beam_search(model: Ct2Model, ids: Sequence[int], beam_size: int, max_length: int,
                    length_penalty: float = 1.0, min_length: int = 0,
                    num_hypotheses: int = 1) -> dict:
    """One source, searched with CTranslate2's beam rules (read in its decoding.cc, 4.8.1).

    Like Hugging Face's: 2·beam candidates from the flattened [beam, V] sums of log-probs (step 0
    from the first beam alone), EOS finishing only from the first `beam` ranks, each EOS slot
    refilled by the next non-EOS candidate, EOS counted in the length. Unlike it: the search
    stops as soon as `beam` hypotheses have finished (patience 1), or with length_penalty 0 as
    soon as the top beam has finished and num_hypotheses have, with no look at what the running
    beams could still reach; every finished hypothesis is kept and the best sum / length^penalty
    wins. At max_length the step's `beam` best candidates finish as they are, EOS or not.
    min_length in our count (CTranslate2's min_decoding_length 1 is 2 here).
    Returns the best's ids and score, its nbest (num_hypotheses, best first) and rank_margin: how
    far the best's normalised score is above the runner-up's (inf with one finished)."""
    c = model.cfg
    with torch.inference_mode():
        enc_out, enc_mask = model.encode([list(ids)])
        state = model.start_decoder(enc_out, enc_mask, beam_size, max_length)
        seqs: List[List[int]] = [[] for _ in range(beam_size)]
        scores = torch.zeros(beam_size)
        inputs = torch.full((beam_size,), c.decoder_start_id, dtype=torch.long)
        finished: List[Tuple[float, List[int]]] = []
        top_finished = False
        step = 0
        while True:
            # No EOS forced at max_length: CTranslate2 chooses the last token as any other.
            lp = mr.process_log_probs(model.decode_step(state, inputs), step + 1, max_length + 1,
                                      min_length, c.pad_id, c.eos_id)
            vocab = lp.shape[-1]
            flat = lp[0] if step == 0 else (lp + scores[:, None]).reshape(-1)
            top_scores, top_index = torch.topk(flat, 2 * beam_size)
            parents = [0] * (2 * beam_size) if step == 0 else (top_index // vocab).tolist()
            tokens = (top_index % vocab).tolist()
            last = step + 1 >= max_length
            chosen, spare = [], beam_size
            for k in range(beam_size):
                pick = k
                if tokens[k] == c.eos_id or last:
                    top_finished = top_finished or k == 0
                    finished.append((float(top_scores[k]), seqs[parents[k]] + [tokens[k]]))
                    for j in range(spare, 2 * beam_size):
                        if tokens[j] != c.eos_id:
                            pick, spare = j, j + 1
                            break
                chosen.append(pick)
            enough = ((top_finished and len(finished) >= num_hypotheses) if length_penalty == 0
                      else len(finished) >= beam_size)
            if last or enough:
                break
            seqs = [seqs[parents[p]] + [tokens[p]] for p in chosen]
            scores = torch.tensor([float(top_scores[p]) for p in chosen])
            model.reorder(state, torch.tensor([parents[p] for p in chosen]))
            inputs = torch.tensor([tokens[p] for p in chosen])
            step += 1
    normalized = sorted(((s / (len(h) ** length_penalty), h) for s, h in finished),
                        key=lambda x: x[0], reverse=True)
    margin = normalized[0][0] - normalized[1][0] if len(normalized) > 1 else float("inf")
    return {"ids": normalized[0][1], "score": normalized[0][0], "rank_margin": margin,
            "nbest": [{"ids": h, "score": sc} for sc, h in normalized[:num_hypotheses]]}


def translate_ids(model: Ct2Model, batch_ids, beam_size: int = 1, max_length: int = 256,
                  min_length: int = 0, length_penalty: float = 1.0,
                  num_return_sequences: int = 1, beam_rules: str = "huggingface") -> List[dict]:
    """marian_reference's greedy (beam_size 1) or HF-vectorized beam search on a Ct2Model; with
    beam_rules "ctranslate2", ct2_beam_search on each source."""
    with torch.inference_mode():
        if beam_size <= 1:
            return mr.greedy_search(model, batch_ids, max_length, min_length)
        if beam_rules == "ctranslate2":
            return [ct2_beam_search(model, ids, beam_size, max_length, length_penalty, min_length,
                                    num_return_sequences) for ids in batch_ids]
        return mr.beam_search(model, batch_ids, beam_size, max_length, min_length,
                              length_penalty, num_return_sequences)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--beam_size", type=int, default=2, help="CTranslate2's default: 2")
    ap.add_argument("--max_length", type=int, default=256,
                    help="generated tokens incl. EOS (CTranslate2's default 256)")
    ap.add_argument("--min_length", type=int, default=0)
    ap.add_argument("--length_penalty", type=float, default=1.0)
    ap.add_argument("--num_return_sequences", type=int, default=1)
    ap.add_argument("--batch_size", type=int, default=1)
    ap.add_argument("--beam_rules", choices=("huggingface", "ctranslate2"), default="huggingface",
                    help="when the beam search stops (see ct2_beam_search)")
    ap.add_argument("--describe", action="store_true", help="print the model's layout and exit")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = Ct2Model(args.model_dir)
    if args.describe:
        d = model.describe()
        c = model.cfg
        d.update({"target_vocab_size": c.target_vocab_size, "pad": c.pad_id, "eos": c.eos_id,
                  "decoder_start": c.decoder_start_id})
        print(json.dumps(d, indent=2))
        return 0
    srcs = []
    for n, line in enumerate(sys.stdin, 1):
        line = line.strip()
        if not line:
            continue
        ids = json.loads(line)
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            print(f"error: line {n}: expected a JSON array of ids", file=sys.stderr)
            return 1
        srcs.append(ids)
    bs = max(1, args.batch_size)
    for start in range(0, len(srcs), bs):
        results = translate_ids(model, srcs[start:start + bs], args.beam_size, args.max_length,
                                args.min_length, args.length_penalty, args.num_return_sequences,
                                args.beam_rules)
        for r in results:
            rec = {"ids": r["ids"], "score": r["score"],
                   "tokens": [model.tgt_vocab.tokens[i] for i in r["ids"]]}
            if args.num_return_sequences > 1 and "nbest" in r:
                rec["nbest"] = [{"ids": h["ids"], "score": h["score"]} for h in r["nbest"]]
            sys.stdout.write(json.dumps(rec, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
