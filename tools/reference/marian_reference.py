#!/usr/bin/env python3
"""Float32 PyTorch reference for Hugging Face Marian (OPUS-MT) checkpoints.

Written from the transerve specification (docs/marian-format.md, sections 2-7 and 9);
it does not use `transformers`. It loads a checkpoint directory (config.json, model.safetensors,
vocab.json, source.spm, target.spm), tokenizes like the transformers v4 MarianTokenizer, runs the
post-norm encoder/decoder in float32 and decodes with Hugging Face semantics:

* per step: log_softmax(raw logits); pad -> -inf; EOS -> -inf while fewer than `min_length`
  tokens would result; at the last allowed step every token but EOS -> -inf and EOS -> 0;
  log_softmax again (HF `renormalize_logits`). Scores add up these processed log-probs.
* `max_length` N = generated tokens including EOS, excluding the decoder start token
  (HF max_length = N + 1). `min_length` M counts the same way (EOS is banned at generated
  position n < M; HF's MinLengthLogitsProcessor with min_length = M does exactly that).
* greedy: argmax; score = plain float32 sum of the processed log-probs of the tokens (EOS incl.).
* beam: the vectorized `_beam_search` of transformers PR #35802 (early_stopping False),
  score = sum_logprobs / L**length_penalty, L = generated tokens including EOS.

Used as a library by the fixture generator and the benchmark, and as a CLI:

  /usr/bin/python3 tools/reference/marian_reference.py --model_dir DIR [--beam_size N]
      [--max_length N] [--output_format text|jsonl] < sentences.txt
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

FLOAT32_MIN = float(torch.finfo(torch.float32).min)  # -3.4028234663852886e38
LAYER_NORM_EPS = 1e-5
NEG_INF = float("-inf")

# ---------------------------------------------------------------------------------------------
# safetensors (spec section 7)
# ---------------------------------------------------------------------------------------------

_ELEMENT_SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}


class CheckpointError(RuntimeError):
    """A malformed or incomplete checkpoint (names the offending file/tensor)."""


def _decode_tensor(dtype: str, raw: bytes, shape: Sequence[int]) -> np.ndarray:
    if dtype == "F32":
        arr = np.frombuffer(raw, dtype="<f4")
    elif dtype == "F64":
        arr = np.frombuffer(raw, dtype="<f8").astype(np.float32)
    elif dtype == "F16":
        arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif dtype == "BF16":
        # bfloat16 is the top half of a float32: widen by shifting into the high 16 bits.
        half = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
        arr = (half << 16).view(np.float32)
    else:
        raise CheckpointError(f"unsupported safetensors dtype {dtype}")
    return np.array(arr, dtype=np.float32).reshape(tuple(shape))


def read_safetensors(path: str) -> Tuple[Dict[str, np.ndarray], Dict[str, str], Dict[str, str]]:
    """Reads a safetensors file; every floating tensor is upcast to float32.

    Returns (tensors, dtypes-as-stored, __metadata__). Validates the layout the way the
    reference Rust implementation does (header size, tiling without gaps, file size).
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise CheckpointError(f"{path}: file too small for a safetensors header")
    (n,) = struct.unpack("<Q", data[:8])
    if n > 100_000_000 or 8 + n > len(data):
        raise CheckpointError(f"{path}: invalid header length {n}")
    header_bytes = data[8:8 + n]
    if not header_bytes.startswith(b"{"):
        raise CheckpointError(f"{path}: header does not start with '{{'")
    header = json.loads(header_bytes.decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    buf = memoryview(data)[8 + n:]
    spans = []
    tensors: Dict[str, np.ndarray] = {}
    dtypes: Dict[str, str] = {}
    for name, info in header.items():
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in _ELEMENT_SIZE:
            raise CheckpointError(f"{path}: tensor {name}: unsupported dtype {dtype}")
        count = int(np.prod(shape)) if shape else 1
        if end - begin != count * _ELEMENT_SIZE[dtype]:
            raise CheckpointError(f"{path}: tensor {name}: byte size does not match shape {shape}")
        if not 0 <= begin <= end <= len(buf):
            raise CheckpointError(f"{path}: tensor {name}: data_offsets outside the file")
        spans.append((begin, end, name))
        tensors[name] = _decode_tensor(dtype, bytes(buf[begin:end]), shape)
        dtypes[name] = dtype
    spans.sort()
    pos = 0
    for begin, end, name in spans:
        if begin != pos:
            raise CheckpointError(f"{path}: tensor {name} does not tile the buffer (gap/overlap)")
        pos = end
    if pos != len(buf):
        raise CheckpointError(f"{path}: {len(buf) - pos} trailing bytes after the last tensor")
    return tensors, dtypes, metadata


def write_safetensors(path: str, tensors: Dict[str, np.ndarray], metadata: Dict[str, str]) -> None:
    """Writes little-endian tensors (numpy float32/float16, or uint16 raw bfloat16 bits given as
    ('BF16', array)) with a space-padded header so that the buffer is 8-byte aligned.

    `tensors` maps name -> numpy array (float32 -> F32, float16 -> F16) or ("BF16", uint16 array).
    Order: larger element size first, then name (as safetensors' own writer does).
    """
    entries = []
    for name, value in tensors.items():
        if isinstance(value, tuple):
            dtype, arr = value
        elif value.dtype == np.float32:
            dtype, arr = "F32", value
        elif value.dtype == np.float16:
            dtype, arr = "F16", value
        else:
            raise ValueError(f"unsupported array dtype {value.dtype} for {name}")
        entries.append((-_ELEMENT_SIZE[dtype], name, dtype, np.ascontiguousarray(arr)))
    entries.sort()
    header: Dict[str, object] = {"__metadata__": dict(metadata)}
    offset = 0
    blobs = []
    for _, name, dtype, arr in entries:
        raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for raw in blobs:
            f.write(raw)


# ---------------------------------------------------------------------------------------------
# Positions (spec 4.2)
# ---------------------------------------------------------------------------------------------


def sinusoidal_table(n_pos: int, dim: int) -> np.ndarray:
    """HF MarianSinusoidalPositionalEmbedding table: float64 math, rounded to float32.

    Column j uses angle pos / 10000**(2*(j//2)/dim); sines of the even-j angles fill columns
    [0, ceil(dim/2)), cosines of the odd-j angles fill the rest. Not interleaved, no offset.
    """
    j = np.arange(dim)
    denom = np.array([np.power(10000, 2 * (int(k) // 2) / dim) for k in j], dtype=np.float64)
    angles = np.arange(n_pos, dtype=np.float64)[:, None] / denom[None, :]
    sentinel = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out = np.empty((n_pos, dim), dtype=np.float32)
    out[:, :sentinel] = np.sin(angles[:, 0::2]).astype(np.float32)
    out[:, sentinel:] = np.cos(angles[:, 1::2]).astype(np.float32)
    return out


# ---------------------------------------------------------------------------------------------
# Config (spec 2)
# ---------------------------------------------------------------------------------------------

_REQUIRED_KEYS = [
    "vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "activation_function",
    "scale_embedding", "pad_token_id", "eos_token_id", "decoder_start_token_id",
    "max_position_embeddings",
]


class MarianConfig:
    def __init__(self, cfg: dict, gen: Optional[dict] = None):
        missing = [k for k in _REQUIRED_KEYS if k not in cfg]
        if missing:
            raise CheckpointError(f"config.json lacks required keys {missing}")
        self.raw = cfg
        self.vocab_size = int(cfg["vocab_size"])
        self.decoder_vocab_size = int(cfg.get("decoder_vocab_size") or self.vocab_size)
        self.share_embeddings = bool(cfg.get("share_encoder_decoder_embeddings", True))
        self.tie_word_embeddings = bool(cfg.get("tie_word_embeddings", True))
        self.d_model = int(cfg["d_model"])
        self.encoder_layers = int(cfg["encoder_layers"])
        self.decoder_layers = int(cfg["decoder_layers"])
        self.encoder_heads = int(cfg["encoder_attention_heads"])
        self.decoder_heads = int(cfg["decoder_attention_heads"])
        self.encoder_ffn = int(cfg["encoder_ffn_dim"])
        self.decoder_ffn = int(cfg["decoder_ffn_dim"])
        self.activation = str(cfg["activation_function"])
        self.max_positions = int(cfg["max_position_embeddings"])
        self.scale_embedding = bool(cfg["scale_embedding"])
        self.pad_id = int(cfg["pad_token_id"])
        self.eos_id = int(cfg["eos_token_id"])
        self.decoder_start_id = int(cfg["decoder_start_token_id"])
        gen = gen or {}
        # Generation defaults: generation_config.json wins over legacy keys in config.json.
        self.num_beams = int(gen.get("num_beams", cfg.get("num_beams", 1)))
        self.hf_max_length = int(gen.get("max_length", cfg.get("max_length", 512)))
        self.length_penalty = float(gen.get("length_penalty", cfg.get("length_penalty", 1.0)))
        for name, dim, heads in (("encoder", self.d_model, self.encoder_heads),
                                 ("decoder", self.d_model, self.decoder_heads)):
            if dim % heads:
                raise CheckpointError(f"d_model {dim} not divisible by {name} heads {heads}")
        if self.activation not in _ACTIVATIONS:
            raise CheckpointError(f"unsupported activation_function {self.activation!r}")


def _gelu_new(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


_ACTIVATIONS = {
    "swish": F.silu,
    "silu": F.silu,
    "relu": F.relu,
    "gelu": F.gelu,  # exact erf form
    "gelu_new": _gelu_new,
}

# ---------------------------------------------------------------------------------------------
# Tokenizer (spec 6; transformers v4 MarianTokenizer semantics)
# ---------------------------------------------------------------------------------------------


class MarianTokenizer:
    SPECIAL = ("</s>", "<unk>", "<pad>")
    LANGUAGE_CODE_RE = re.compile(">>.+<<")  # v4: greedy, every match is deleted

    def __init__(self, model_dir: str):
        import sentencepiece as spm  # local import: the benchmark needs no tokenizer

        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            self.encoder: Dict[str, int] = json.load(f)
        self.decoder_map = {v: k for k, v in self.encoder.items()}
        tv = os.path.join(model_dir, "target_vocab.json")
        self.separate_vocabs = False
        tc_path = os.path.join(model_dir, "tokenizer_config.json")
        if os.path.exists(tc_path):
            with open(tc_path, encoding="utf-8") as f:
                self.separate_vocabs = bool(json.load(f).get("separate_vocabs", False))
        if self.separate_vocabs:
            with open(tv, encoding="utf-8") as f:
                self.target_decoder_map = {v: k for k, v in json.load(f).items()}
        else:
            self.target_decoder_map = self.decoder_map
        for tok in self.SPECIAL:
            if tok not in self.encoder:
                raise CheckpointError(f"vocab.json lacks {tok}")
        self.eos_id = self.encoder["</s>"]
        self.unk_id = self.encoder["<unk>"]
        self.pad_id = self.encoder["<pad>"]
        self.special_ids = {self.eos_id, self.unk_id, self.pad_id}
        self.sp_source = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
        self.sp_target = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "target.spm"))
        self._split_re = re.compile("(" + "|".join(re.escape(t) for t in self.SPECIAL) + ")")

    def tokenize(self, text: str) -> List[str]:
        tokens: List[str] = []
        for chunk in self._split_re.split(text):
            if not chunk:
                continue
            if chunk in self.SPECIAL:
                tokens.append(chunk)
                continue
            m = self.LANGUAGE_CODE_RE.match(chunk)
            if m:
                tokens.append(m.group(0))
            rest = self.LANGUAGE_CODE_RE.sub("", chunk)
            tokens.extend(self.sp_source.encode(rest, out_type=str))
        return tokens

    def encode(self, text: str) -> List[int]:
        """Source text -> model ids, EOS appended (empty text -> [eos])."""
        return [self.encoder.get(t, self.unk_id) for t in self.tokenize(text)] + [self.eos_id]

    def decode(self, ids: Sequence[int]) -> str:
        """skip_special_tokens=True (drops eos, pad, unk), no clean_up_tokenization_spaces."""
        pieces = [self.target_decoder_map.get(i, "<unk>") for i in ids if i not in self.special_ids]
        return self.sp_target.decode_pieces(pieces).strip()


# ---------------------------------------------------------------------------------------------
# Model (spec 3, 4)
# ---------------------------------------------------------------------------------------------


def _resolve_weights(cfg: MarianConfig, tensors: Dict[str, np.ndarray],
                     dtypes: Dict[str, str], metadata: Dict[str, str]) -> Dict[str, np.ndarray]:
    # Keys of a bare MarianModel checkpoint lack the "model." prefix.
    if not any(k.startswith("model.") for k in tensors) and any(
            k.startswith("encoder.") for k in tensors):
        tensors = {("model." + k if not k.startswith(("lm_head", "final_logits_bias")) else k): v
                   for k, v in tensors.items()}
        dtypes = {("model." + k if not k.startswith(("lm_head", "final_logits_bias")) else k): v
                  for k, v in dtypes.items()}
    # Conversion-bot aliases recorded in __metadata__ ("removed_name": "kept_name").
    for removed, kept in metadata.items():
        if removed not in tensors and kept in tensors:
            tensors[removed] = tensors[kept]
            dtypes[removed] = dtypes[kept]

    def get(name: str, shape: Tuple[int, ...]) -> np.ndarray:
        if name not in tensors:
            raise CheckpointError(f"model.safetensors lacks tensor {name}")
        t = tensors[name]
        if tuple(t.shape) != tuple(shape):
            raise CheckpointError(f"tensor {name} has shape {list(t.shape)}, expected {list(shape)}")
        return t

    D, V, Vd = cfg.d_model, cfg.vocab_size, cfg.decoder_vocab_size
    w: Dict[str, np.ndarray] = {}
    enc_name = "model.encoder.embed_tokens.weight"
    dec_name = "model.decoder.embed_tokens.weight"
    w["enc_embed"] = get(enc_name if enc_name in tensors else "model.shared.weight", (V, D))
    w["dec_embed"] = get(dec_name if dec_name in tensors else "model.shared.weight", (Vd, D))
    if cfg.tie_word_embeddings:
        w["lm_head"] = w["dec_embed"]
    else:
        w["lm_head"] = get("lm_head.weight", (Vd, D))
    if "final_logits_bias" in tensors:
        w["final_logits_bias"] = get("final_logits_bias", (1, Vd)).reshape(Vd)
    else:  # HF registers it as a zero buffer and tolerates its absence
        print("warning: final_logits_bias missing, using zeros", file=sys.stderr)
        w["final_logits_bias"] = np.zeros(Vd, dtype=np.float32)
    table = sinusoidal_table(cfg.max_positions, D)
    w["positions"] = table
    for side in ("encoder", "decoder"):
        name = f"model.{side}.embed_positions.weight"
        if name in tensors:
            stored = get(name, (cfg.max_positions, D))
            if dtypes[name] == "F32":
                if not np.array_equal(stored, table):
                    raise CheckpointError(f"{name} differs from the computed sinusoid table")
            else:
                # A lower-precision copy must equal the table rounded to that precision; HF would
                # use the stored (rounded) values, and so do we.
                rounded = _round_to_dtype(table, dtypes[name])
                if not np.array_equal(stored, rounded):
                    raise CheckpointError(f"{name} ({dtypes[name]}) differs from the sinusoid table")
                w["positions"] = stored
    for side, n_layers, ffn, cross in (("encoder", cfg.encoder_layers, cfg.encoder_ffn, False),
                                       ("decoder", cfg.decoder_layers, cfg.decoder_ffn, True)):
        for i in range(n_layers):
            p = f"model.{side}.layers.{i}."
            blocks = ["self_attn"] + (["encoder_attn"] if cross else [])
            for blk in blocks:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    w[p + f"{blk}.{proj}.weight"] = get(p + f"{blk}.{proj}.weight", (D, D))
                    w[p + f"{blk}.{proj}.bias"] = get(p + f"{blk}.{proj}.bias", (D,))
                for suffix in ("weight", "bias"):
                    w[p + f"{blk}_layer_norm.{suffix}"] = get(p + f"{blk}_layer_norm.{suffix}", (D,))
            w[p + "fc1.weight"] = get(p + "fc1.weight", (ffn, D))
            w[p + "fc1.bias"] = get(p + "fc1.bias", (ffn,))
            w[p + "fc2.weight"] = get(p + "fc2.weight", (D, ffn))
            w[p + "fc2.bias"] = get(p + "fc2.bias", (D,))
            for suffix in ("weight", "bias"):
                w[p + f"final_layer_norm.{suffix}"] = get(p + f"final_layer_norm.{suffix}", (D,))
    return w


def _round_to_dtype(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "F16":
        return a.astype(np.float16).astype(np.float32)
    if dtype == "BF16":
        return torch.from_numpy(a).bfloat16().float().numpy()
    return a.astype(np.float32)


class _Attention:
    __slots__ = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "ln_w", "ln_b", "heads", "hd",
                 "scaling")

    def __init__(self, w, prefix, ln_prefix, heads, d_model):
        self.wq, self.bq = w[prefix + "q_proj.weight"], w[prefix + "q_proj.bias"]
        self.wk, self.bk = w[prefix + "k_proj.weight"], w[prefix + "k_proj.bias"]
        self.wv, self.bv = w[prefix + "v_proj.weight"], w[prefix + "v_proj.bias"]
        self.wo, self.bo = w[prefix + "out_proj.weight"], w[prefix + "out_proj.bias"]
        self.ln_w, self.ln_b = w[ln_prefix + "weight"], w[ln_prefix + "bias"]
        self.heads = heads
        self.hd = d_model // heads
        self.scaling = self.hd ** -0.5

    def split(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, D] -> [B, H, T, hd]
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.hd).transpose(1, 2)

    def project_kv(self, y: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return (self.split(F.linear(y, self.wk, self.bk)).contiguous(),
                self.split(F.linear(y, self.wv, self.bv)).contiguous())

    def attend(self, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: Optional[torch.Tensor], probs_out: Optional[list] = None) -> torch.Tensor:
        """Multi-head attention; `probs_out`, when given, receives the softmax [B, H, T, S]."""
        b, t, d = x.shape
        q = self.split(F.linear(x, self.wq, self.bq))
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scaling
        if mask is not None:
            scores = scores + mask
        probs = torch.softmax(scores, dim=-1)
        if probs_out is not None:
            probs_out.append(probs)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, d)
        return F.linear(out, self.wo, self.bo)


class MarianModel:
    """Float32 weights + encoder / incremental decoder. All tensors live on the CPU."""

    def __init__(self, model_dir: str):
        self.model_dir = model_dir
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        gen = None
        gpath = os.path.join(model_dir, "generation_config.json")
        if os.path.exists(gpath):
            with open(gpath, encoding="utf-8") as f:
                gen = json.load(f)
        self.cfg = MarianConfig(cfg, gen)
        st_path = os.path.join(model_dir, "model.safetensors")
        if not os.path.exists(st_path):
            raise CheckpointError(f"{st_path} not found (only safetensors checkpoints are read)")
        tensors, dtypes, metadata = read_safetensors(st_path)
        self.stored_dtypes = sorted(set(dtypes.values()))
        self.w = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in
                  _resolve_weights(self.cfg, tensors, dtypes, metadata).items()}
        self.logits_hook = None  # optional callable(logits) -> logits (robustness tests only)
        self._build()

    def astype(self, dtype: torch.dtype) -> "MarianModel":
        """A copy computing in another precision (float64 cross-checks of fixture robustness)."""
        other = object.__new__(MarianModel)
        other.__dict__.update(self.__dict__)
        other.w = {k: v.to(dtype) for k, v in self.w.items()}
        other._build()
        return other

    def _build(self) -> None:
        w = self.w
        c = self.cfg
        self.dtype = w["enc_embed"].dtype
        self.act = _ACTIVATIONS[c.activation]
        self.embed_scale = math.sqrt(c.d_model) if c.scale_embedding else 1.0
        # Output projection kept as a contiguous [D, Vd] copy: OpenBLAS runs h @ W_out this way
        # ~2x faster for few rows than h @ W_out^T (measured on the 2-core VM, batch 1-8).
        self.lm_head_t = w["lm_head"].t().contiguous()
        self.enc_layers = []
        for i in range(c.encoder_layers):
            p = f"model.encoder.layers.{i}."
            self.enc_layers.append({
                "self": _Attention(w, p + "self_attn.", p + "self_attn_layer_norm.",
                                   c.encoder_heads, c.d_model),
                "fc1": (w[p + "fc1.weight"], w[p + "fc1.bias"]),
                "fc2": (w[p + "fc2.weight"], w[p + "fc2.bias"]),
                "ln": (w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"]),
            })
        self.dec_layers = []
        for i in range(c.decoder_layers):
            p = f"model.decoder.layers.{i}."
            self.dec_layers.append({
                "self": _Attention(w, p + "self_attn.", p + "self_attn_layer_norm.",
                                   c.decoder_heads, c.d_model),
                "cross": _Attention(w, p + "encoder_attn.", p + "encoder_attn_layer_norm.",
                                    c.decoder_heads, c.d_model),
                "fc1": (w[p + "fc1.weight"], w[p + "fc1.bias"]),
                "fc2": (w[p + "fc2.weight"], w[p + "fc2.bias"]),
                "ln": (w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"]),
            })

    # -- pieces ------------------------------------------------------------------------------

    def _ln(self, x, wb):
        return F.layer_norm(x, (self.cfg.d_model,), wb[0], wb[1], LAYER_NORM_EPS)

    def _ffn(self, x, layer):
        h = self.act(F.linear(x, *layer["fc1"]))
        return F.linear(h, *layer["fc2"])

    def padding_mask(self, lengths: Sequence[int], max_len: int) -> Optional[torch.Tensor]:
        """Additive key-padding mask [B, 1, 1, S]: 0 for real tokens, finfo(float32).min for pad.
        None when nothing is padded (HF passes no mask then)."""
        if all(n == max_len for n in lengths):
            return None
        mask = torch.zeros(len(lengths), 1, 1, max_len, dtype=self.dtype)
        for b, n in enumerate(lengths):
            mask[b, 0, 0, n:] = FLOAT32_MIN
        return mask

    def encode(self, batch_ids: Sequence[Sequence[int]]) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Right-padded batch -> (encoder output [B, S, D], additive mask [B,1,1,S] or None)."""
        c = self.cfg
        lengths = [len(x) for x in batch_ids]
        if min(lengths) < 1:
            raise ValueError("empty source (the tokenizer always appends EOS)")
        s = max(lengths)
        if s > c.max_positions:
            raise ValueError(f"source of {s} tokens exceeds max_position_embeddings {c.max_positions}")
        ids = torch.full((len(batch_ids), s), c.pad_id, dtype=torch.long)
        for b, x in enumerate(batch_ids):
            ids[b, :len(x)] = torch.tensor(list(x), dtype=torch.long)
        mask = self.padding_mask(lengths, s)
        x = F.embedding(ids, self.w["enc_embed"]) * self.embed_scale + self.w["positions"][:s]
        for layer in self.enc_layers:
            att = layer["self"]
            k, v = att.project_kv(x)
            x = F.layer_norm(x + att.attend(x, k, v, mask), (c.d_model,), att.ln_w, att.ln_b,
                             LAYER_NORM_EPS)
            x = self._ln(x + self._ffn(x, layer), layer["ln"])
        return x, mask

    def start_decoder(self, enc_out: torch.Tensor, enc_mask: Optional[torch.Tensor],
                      expand: int = 1, max_steps: int = 512) -> dict:
        """Projects cross-attention K/V once per source; `expand` repeats each source (beams)."""
        cross = []
        for layer in self.dec_layers:
            k, v = layer["cross"].project_kv(enc_out)
            if expand > 1:
                k = k.repeat_interleave(expand, dim=0)
                v = v.repeat_interleave(expand, dim=0)
            cross.append((k, v))
        mask = enc_mask.repeat_interleave(expand, dim=0) if (enc_mask is not None and expand > 1) \
            else enc_mask
        rows = enc_out.shape[0] * expand
        c = self.cfg
        hd = c.d_model // c.decoder_heads
        cache = [(torch.empty(rows, c.decoder_heads, max_steps, hd, dtype=self.dtype),
                  torch.empty(rows, c.decoder_heads, max_steps, hd, dtype=self.dtype))
                 for _ in self.dec_layers]
        return {"cross": cross, "mask": mask, "self": cache, "len": 0}

    def reorder(self, state: dict, rows: torch.Tensor) -> None:
        """Beam reordering of the self-attention cache: row r takes the history of rows[r]."""
        t = state["len"]
        for k, v in state["self"]:
            k[:, :, :t] = k[:, :, :t].index_select(0, rows)
            v[:, :, :t] = v[:, :, :t].index_select(0, rows)

    def decode_step(self, state: dict, tokens: torch.Tensor) -> torch.Tensor:
        """Feeds one token per row at position state['len']; returns raw logits [rows, Vd]."""
        c = self.cfg
        t = state["len"]
        if t >= c.max_positions:
            raise ValueError("decoder position exceeds max_position_embeddings")
        x = F.embedding(tokens.view(-1, 1), self.w["dec_embed"]) * self.embed_scale \
            + self.w["positions"][t:t + 1]
        for layer, (kc, vc), (ck, cv) in zip(self.dec_layers, state["self"], state["cross"]):
            att = layer["self"]
            k, v = att.project_kv(x)
            kc[:, :, t:t + 1] = k
            vc[:, :, t:t + 1] = v
            # a single query attends every cached key: no causal mask is needed
            x = F.layer_norm(x + att.attend(x, kc[:, :, :t + 1], vc[:, :, :t + 1], None),
                             (c.d_model,), att.ln_w, att.ln_b, LAYER_NORM_EPS)
            cr = layer["cross"]
            x = F.layer_norm(x + cr.attend(x, ck, cv, state["mask"]), (c.d_model,), cr.ln_w,
                             cr.ln_b, LAYER_NORM_EPS)
            x = self._ln(x + self._ffn(x, layer), layer["ln"])
        state["len"] = t + 1
        h = x[:, 0, :]
        logits = torch.matmul(h, self.lm_head_t) + self.w["final_logits_bias"]
        return logits if self.logits_hook is None else self.logits_hook(logits)

    def decoder_full(self, enc_out: torch.Tensor, enc_mask: Optional[torch.Tensor],
                     dec_ids: torch.Tensor, cross_probs: Optional[list] = None) -> torch.Tensor:
        """Non-incremental decoder over a whole prefix (causal finfo.min mask); logits [B,T,Vd].
        Used to cross-check the KV-cache path and for alignments: `cross_probs`, when given,
        receives each layer's cross-attention softmax [B, H, T, S]."""
        c = self.cfg
        b, t = dec_ids.shape
        x = F.embedding(dec_ids, self.w["dec_embed"]) * self.embed_scale + self.w["positions"][:t]
        causal = torch.triu(torch.full((t, t), FLOAT32_MIN, dtype=self.dtype), diagonal=1)[None, None]
        for layer in self.dec_layers:
            att = layer["self"]
            k, v = att.project_kv(x)
            x = F.layer_norm(x + att.attend(x, k, v, causal), (c.d_model,), att.ln_w, att.ln_b,
                             LAYER_NORM_EPS)
            cr = layer["cross"]
            ck, cv = cr.project_kv(enc_out)
            x = F.layer_norm(x + cr.attend(x, ck, cv, enc_mask, cross_probs), (c.d_model,), cr.ln_w,
                             cr.ln_b, LAYER_NORM_EPS)
            x = self._ln(x + self._ffn(x, layer), layer["ln"])
        return torch.matmul(x, self.lm_head_t) + self.w["final_logits_bias"]

    def alignment(self, source_ids: Sequence[int], generated_ids: Sequence[int]) -> torch.Tensor:
        """Cross-attention weights of the last decoder layer averaged over its heads, one row per
        generated token: row s is the attention of the step that produced generated_ids[s] (its
        decoder input is the start token, then generated_ids[:-1]). [len(generated), len(src)]."""
        enc, mask = self.encode([source_ids])
        inputs = torch.tensor([[self.cfg.decoder_start_id] + list(generated_ids[:-1])])
        probs: list = []
        self.decoder_full(enc, mask, inputs, probs)
        return probs[-1][0].mean(dim=0)


# ---------------------------------------------------------------------------------------------
# Generation (spec 5; docs/architecture.md section 2.3)
# ---------------------------------------------------------------------------------------------


def process_log_probs(logits: torch.Tensor, step: int, max_length: int, min_length: int,
                      pad_id: int, eos_id: int) -> torch.Tensor:
    """HF logits processing for the `step`-th generated token (1-based).

    log_softmax -> pad banned -> EOS banned while step < min_length -> all but EOS banned at
    step == max_length -> log_softmax again (renormalize_logits).
    """
    lp = torch.log_softmax(logits.float(), dim=-1)
    lp[:, pad_id] = NEG_INF
    if step < min_length:
        lp[:, eos_id] = NEG_INF
    if step >= max_length:
        lp.fill_(NEG_INF)
        lp[:, eos_id] = 0.0
    return torch.log_softmax(lp, dim=-1)


def _check_lengths(max_length: int, min_length: int, cfg: MarianConfig) -> None:
    if max_length < 1:
        raise ValueError("max_length must be >= 1")
    if max_length > cfg.max_positions:
        raise ValueError(f"max_length {max_length} exceeds max_position_embeddings {cfg.max_positions}")
    if min_length > max_length:
        raise ValueError("min_length > max_length")


def greedy_search(model: MarianModel, batch_ids: Sequence[Sequence[int]], max_length: int,
                  min_length: int = 0, record_logits: int = 0, trace: Optional[list] = None,
                  encoded=None) -> List[dict]:
    """Batched greedy decoding. Returns per sentence {"ids", "score"} (+ "logits" when asked:
    raw logits of the first `record_logits` steps). `trace` (list) receives per-sentence lists
    of the per-step margin between the best and second-best processed log-prob."""
    c = model.cfg
    _check_lengths(max_length, min_length, c)
    enc_out, enc_mask = encoded if encoded is not None else model.encode(batch_ids)
    b = enc_out.shape[0]
    state = model.start_decoder(enc_out, enc_mask, 1, max_length)
    tokens = torch.full((b,), c.decoder_start_id, dtype=torch.long)
    done = torch.zeros(b, dtype=torch.bool)
    scores = torch.zeros(b, dtype=torch.float32)
    out: List[List[int]] = [[] for _ in range(b)]
    logits_rec: List[List[List[float]]] = [[] for _ in range(b)]
    margins: List[List[float]] = [[] for _ in range(b)]
    for step in range(1, max_length + 1):
        logits = model.decode_step(state, tokens)
        lp = process_log_probs(logits, step, max_length, min_length, c.pad_id, c.eos_id)
        nxt = torch.argmax(lp, dim=-1)
        chosen = lp.gather(1, nxt[:, None])[:, 0]
        scores = torch.where(done, scores, scores + chosen)
        if trace is not None or record_logits:
            top2 = torch.topk(lp, 2, dim=-1).values
        for i in range(b):
            if done[i]:
                continue
            out[i].append(int(nxt[i]))
            if step <= record_logits:
                logits_rec[i].append(logits[i].tolist())
            if trace is not None and step < max_length:  # the forced last step has no choice
                margins[i].append(float(top2[i, 0] - top2[i, 1]))
        done = done | (nxt == c.eos_id)
        tokens = torch.where(done, torch.full_like(nxt, c.pad_id), nxt)
        if bool(done.all()):
            break
    if trace is not None:
        trace.extend(margins)
    res = []
    for i in range(b):
        r = {"ids": out[i], "score": float(scores[i])}
        if record_logits:
            r["logits"] = logits_rec[i]
        res.append(r)
    return res


def beam_search(model: MarianModel, batch_ids: Sequence[Sequence[int]], num_beams: int,
                max_length: int, min_length: int = 0, length_penalty: float = 1.0,
                num_return_sequences: int = 1, trace: Optional[list] = None,
                encoded=None) -> List[dict]:
    """HF vectorized beam search (transformers PR #35802, early_stopping=False), batched.

    Tensor names follow HF's `_beam_search`. `cur_len` counts the decoder start token, so the
    HF max_length is our max_length + 1 and the decoder prompt length is 1. Returns per sentence
    {"ids", "score", "nbest": [{"ids", "score"}, ...num_return_sequences]}.
    `trace` (list, batch of 1 only) receives the decision margins (see _beam_margins)."""
    c = model.cfg
    _check_lengths(max_length, min_length, c)
    if num_return_sequences > num_beams:
        raise ValueError("num_return_sequences > num_beams")
    nb = num_beams
    enc_out, enc_mask = encoded if encoded is not None else model.encode(batch_ids)
    bsz = enc_out.shape[0]
    vocab = c.decoder_vocab_size
    hf_max_length = max_length + 1
    prompt_len = 1
    keep = 2 * nb  # max(2, 1 + n_eos) * num_beams with one EOS id
    top_num_beam_mask = torch.cat((torch.ones(nb, dtype=torch.bool),
                                   torch.zeros(keep - nb, dtype=torch.bool)))
    state = model.start_decoder(enc_out, enc_mask, nb, max_length)

    running_seq = torch.full((bsz, nb, hf_max_length), c.pad_id, dtype=torch.long)
    running_seq[:, :, 0] = c.decoder_start_id
    sequences = running_seq.clone()
    running_scores = torch.zeros((bsz, nb), dtype=torch.float32)
    running_scores[:, 1:] = -1e9
    beam_scores = torch.full((bsz, nb), -1e9, dtype=torch.float32)
    is_sent_finished = torch.zeros((bsz, nb), dtype=torch.bool)
    unsatisfied = torch.ones((bsz, 1), dtype=torch.bool)
    batch_offset = (torch.arange(bsz) * nb)[:, None]
    cur_len = 1
    while True:
        logits = model.decode_step(state, running_seq[:, :, cur_len - 1].reshape(-1))
        lp = process_log_probs(logits, cur_len, max_length, min_length, c.pad_id, c.eos_id)
        acc = (lp.view(bsz, nb, vocab) + running_scores[:, :, None]).view(bsz, nb * vocab)
        topk_lp, topk_idx = torch.topk(acc, keep, dim=-1)
        src_beam = torch.div(topk_idx, vocab, rounding_mode="floor")
        topk_ids = topk_idx % vocab
        topk_seq = torch.gather(running_seq, 1, src_beam[:, :, None].expand(-1, -1, hf_max_length)).clone()
        topk_seq[:, :, cur_len] = topk_ids
        hits = (topk_ids == c.eos_id) | (cur_len + 1 >= hf_max_length)

        # e. running beams for the next step: best num_beams non-finished candidates
        topk_running_lp = topk_lp + hits.to(torch.float32) * -1.0e9
        next_idx = torch.topk(topk_running_lp, nb, dim=-1)[1]
        new_running_seq = torch.gather(topk_seq, 1, next_idx[:, :, None].expand(-1, -1, hf_max_length))
        new_running_scores = torch.gather(topk_running_lp, 1, next_idx)
        new_src = torch.gather(src_beam, 1, next_idx)

        # f. finished hypotheses: only EOS candidates ranked in the first num_beams may enter
        just_finished = hits & top_num_beam_mask[None, :]
        fin_lp = topk_lp / ((cur_len + 1 - prompt_len) ** length_penalty)
        fin_lp = fin_lp + (~unsatisfied).to(torch.float32) * -1.0e9
        fin_lp = fin_lp + (~just_finished).to(torch.float32) * -1.0e9
        merged_seq = torch.cat((sequences, topk_seq), dim=1)
        merged_scores = torch.cat((beam_scores, fin_lp), dim=1)
        merged_fin = torch.cat((is_sent_finished, just_finished), dim=1)
        merged_idx = torch.topk(merged_scores, nb, dim=-1)[1]

        if trace is not None:
            trace.append(_beam_margins(acc[0], vocab, c.eos_id, nb, cur_len, hf_max_length,
                                       merged_scores[0], bool(unsatisfied[0, 0])))

        sequences = torch.gather(merged_seq, 1, merged_idx[:, :, None].expand(-1, -1, hf_max_length))
        beam_scores = torch.gather(merged_scores, 1, merged_idx)
        is_sent_finished = torch.gather(merged_fin, 1, merged_idx)

        running_seq, running_scores = new_running_seq, new_running_scores
        model.reorder(state, (new_src + batch_offset).reshape(-1))

        cur_len += 1
        # g. early-stop heuristic (early_stopping=False): best running beam at its current length
        best_running = running_scores[:, :1] / ((cur_len - prompt_len) ** length_penalty)
        worst_finished = torch.where(is_sent_finished,
                                     torch.min(beam_scores, dim=1, keepdim=True)[0],
                                     torch.tensor(-1.0e9))
        if trace is not None and bool(is_sent_finished[0].all()) and bool(unsatisfied[0, 0]):
            trace[-1]["heuristic"] = abs(float(best_running[0, 0]) - float(worst_finished[0].min()))
        unsatisfied = unsatisfied & torch.any(best_running > worst_finished, dim=-1, keepdim=True)
        if not (bool(unsatisfied.any()) and not bool(hits.all())):
            break

    results = []
    for b in range(bsz):
        nbest = []
        for j in range(num_return_sequences):
            seq = sequences[b, j, 1:].tolist()
            ids = []
            for tok in seq:
                ids.append(tok)
                if tok == c.eos_id:
                    break
            nbest.append({"ids": ids, "score": float(beam_scores[b, j])})
        if trace is not None and b == 0:
            fs = beam_scores[0].tolist()
            trace.append({"final": min((fs[i] - fs[i + 1] for i in range(len(fs) - 1)),
                                       default=math.inf)})
        results.append({"ids": nbest[0]["ids"], "score": nbest[0]["score"], "nbest": nbest})
    return results


def _beam_margins(acc: torch.Tensor, vocab: int, eos: int, nb: int, cur_len: int,
                  hf_max_length: int, merged_scores: torch.Tensor, unsatisfied: bool) -> dict:
    """Score gaps at the decisions of one beam step that float rounding could flip:
    - eligibility: rank nb vs nb+1 among all candidates when one of them is an EOS;
    - running: nb-th vs (nb+1)-th best non-EOS candidate (skipped at the forced last step);
    - finished: nb-th vs (nb+1)-th of the merged finished scores when new finishers compete."""
    out = {}
    finite = acc[torch.isfinite(acc)]
    vals, idx = torch.sort(acc, descending=True)
    if finite.numel() > nb:
        a, bb = idx[nb - 1] % vocab, idx[nb] % vocab
        if (int(a) == eos or int(bb) == eos) and math.isfinite(float(vals[nb])):
            out["eligible"] = float(vals[nb - 1] - vals[nb])
    if cur_len + 1 < hf_max_length:
        non_eos = vals[(idx % vocab) != eos]
        non_eos = non_eos[torch.isfinite(non_eos)]
        if non_eos.numel() > nb:
            out["running"] = float(non_eos[nb - 1] - non_eos[nb])
    if unsatisfied:
        ms = torch.sort(merged_scores, descending=True).values
        real = ms[ms > -5e8]
        if real.numel() > nb:
            out["finished"] = float(real[nb - 1] - real[nb])
    return out


# ---------------------------------------------------------------------------------------------
# Convenience + CLI
# ---------------------------------------------------------------------------------------------


class Translator:
    def __init__(self, model_dir: str):
        self.model = MarianModel(model_dir)
        self.tokenizer = MarianTokenizer(model_dir)
        c = self.model.cfg
        if (self.tokenizer.eos_id, self.tokenizer.pad_id) != (c.eos_id, c.pad_id):
            raise CheckpointError("vocab.json </s>/<pad> ids disagree with config.json")

    def translate_ids(self, batch_ids, beam_size=1, max_length=None, min_length=0,
                      length_penalty=None, num_return_sequences=1):
        c = self.model.cfg
        max_length = max_length if max_length is not None else c.hf_max_length - 1
        length_penalty = c.length_penalty if length_penalty is None else length_penalty
        with torch.inference_mode():
            if beam_size <= 1:
                return greedy_search(self.model, batch_ids, max_length, min_length)
            return beam_search(self.model, batch_ids, beam_size, max_length, min_length,
                               length_penalty, num_return_sequences)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--beam_size", type=int, default=None,
                    help="default: num_beams of generation_config.json (1 = greedy)")
    ap.add_argument("--max_length", type=int, default=None,
                    help="generated tokens incl. EOS (default: HF max_length - 1)")
    ap.add_argument("--min_length", type=int, default=0, help="generated tokens incl. EOS")
    ap.add_argument("--forced_length", type=int, default=None,
                    help="min_length = max_length = N: exactly N tokens (benchmarks)")
    ap.add_argument("--length_penalty", type=float, default=None)
    ap.add_argument("--num_return_sequences", type=int, default=1)
    ap.add_argument("--batch_size", type=int, default=1)
    ap.add_argument("--output_format", choices=["text", "jsonl"], default="text")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    tr = Translator(args.model_dir)
    c = tr.model.cfg
    beam = args.beam_size if args.beam_size is not None else c.num_beams
    max_length = args.max_length if args.max_length is not None else c.hf_max_length - 1
    min_length = args.min_length
    if args.forced_length is not None:
        max_length = min_length = args.forced_length
    lines = [line.rstrip("\n") for line in sys.stdin]
    srcs = []
    for n, line in enumerate(lines, 1):
        ids = tr.tokenizer.encode(line)
        if len(ids) > c.max_positions:
            print(f"error: line {n}: {len(ids)} source tokens exceed max_position_embeddings "
                  f"{c.max_positions}", file=sys.stderr)
            return 1
        srcs.append(ids)
    out = sys.stdout
    for start in range(0, len(srcs), max(1, args.batch_size)):
        chunk = srcs[start:start + max(1, args.batch_size)]
        results = tr.translate_ids(chunk, beam, max_length, min_length, args.length_penalty,
                                   args.num_return_sequences)
        for r in results:
            text = tr.tokenizer.decode(r["ids"])
            if args.output_format == "text":
                out.write(text + "\n")
            else:
                rec = {"text": text, "ids": r["ids"], "score": r["score"]}
                if args.num_return_sequences > 1:
                    rec["nbest"] = [{"text": tr.tokenizer.decode(h["ids"]), "ids": h["ids"],
                                     "score": h["score"]} for h in r["nbest"]]
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
