#!/usr/bin/env python3
"""An independent float32 reference of M2M-100 (and NLLB-200, the same architecture), written
from the math of Hugging Face's published modeling_m2m_100.py, and a writer of random-weight
checkpoints in the hub's layout.

  /usr/bin/python3 tools/reference/m2m_reference.py --make DIR --seed 7   # random checkpoint
  /usr/bin/python3 tools/reference/m2m_reference.py --model_dir DIR --cases OUT.json --seed 7

The architecture, as the reference implementation computes it:
- embeddings: the shared table times sqrt(d_model) when scale_embedding;
- positions: a sinusoidal table (sines in the first half of the columns, cosines in the second,
  frequencies 10000^(-j/(D/2 - 1)), computed in float32), row padding_idx zeroed; the token at
  index i of a sequence reads row padding_idx + 1 + i;
- pre-norm blocks (x + f(LN(x))) with relu feed-forward layers, and a final layer norm after
  each stack;
- the output projection is the shared table (tied), without a bias;
- generation starts from decoder_start_token_id (the EOS) and forces the target language code
  as the first generated token (forced_bos_token_id) with log-probability 0.
The searches are marian_reference's (Hugging Face's greedy and beam rules), which call this
model through the same interface (cfg, encode, start_decoder, reorder, decode_step).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from typing import List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ct2_reference as cr  # noqa: E402
import marian_reference as mr  # noqa: E402

LAYER_NORM_EPS = 1e-5


def m2m_positions(n: int, dim: int, padding_idx: int) -> torch.Tensor:
    """The first n rows of M2M-100's sinusoidal table."""
    half = dim // 2
    step = math.log(10000) / (half - 1)
    freq = torch.exp(torch.arange(half, dtype=torch.int64).float() * -step)
    angles = torch.arange(n, dtype=torch.int64).float().unsqueeze(1) * freq.unsqueeze(0)
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).view(n, -1)
    if dim % 2 == 1:
        table = torch.cat([table, torch.zeros(n, 1)], dim=1)
    table[padding_idx, :] = 0
    return table


class M2mConfig:
    def __init__(self, cfg: dict):
        if cfg.get("model_type") != "m2m_100":
            raise ValueError(f"model_type {cfg.get('model_type')!r} is not m2m_100")
        self.d_model = cfg["d_model"]
        self.heads = cfg["encoder_attention_heads"]
        self.decoder_heads = cfg["decoder_attention_heads"]
        self.encoder_layers = cfg["encoder_layers"]
        self.decoder_layers = cfg["decoder_layers"]
        self.vocab_size = cfg["vocab_size"]
        self.decoder_vocab_size = self.vocab_size
        self.max_positions = cfg["max_position_embeddings"]
        self.pad_id = cfg["pad_token_id"]
        self.eos_id = cfg["eos_token_id"]
        self.decoder_start_id = cfg["decoder_start_token_id"]
        self.scale = math.sqrt(self.d_model) if cfg.get("scale_embedding") else 1.0
        if cfg["activation_function"] != "relu":
            raise ValueError("the reference computes relu feed-forward layers only")


class M2mModel:
    """Float32 weights, encoder and incremental decoder (marian_reference's interface)."""

    def __init__(self, model_dir: str):
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            self.cfg = M2mConfig(json.load(f))
        tensors, _, _ = mr.read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.w = {k: torch.from_numpy(np.ascontiguousarray(v)).float() for k, v in tensors.items()}
        c = self.cfg
        self.embed = self.w["model.shared.weight"]
        self.positions = m2m_positions(c.max_positions + c.pad_id + 1, c.d_model, c.pad_id)
        # Per decoder row, the token forced as the first generated one (None: no forcing).
        self.forced_first: Optional[List[int]] = None

    def _ln(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        return F.layer_norm(x, (self.cfg.d_model,), self.w[prefix + ".weight"],
                            self.w[prefix + ".bias"], LAYER_NORM_EPS)

    def _lin(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        return F.linear(x, self.w[prefix + ".weight"], self.w[prefix + ".bias"])

    def _split(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        b, t, d = x.shape
        return x.view(b, t, heads, d // heads).transpose(1, 2)

    # Scaled dot-product attention on [B, H, T, hd], back to [B, T, D]: the same math as the
    # CTranslate2 reference's.
    _attend = staticmethod(cr.Ct2Model._attend)

    def _self_attn(self, p: str, x, heads, mask, cache=None, t=0):
        q = self._split(self._lin(x, p + ".q_proj"), heads)
        k = self._split(self._lin(x, p + ".k_proj"), heads)
        v = self._split(self._lin(x, p + ".v_proj"), heads)
        if cache is not None:
            kc, vc = cache
            kc[:, :, t:t + 1] = k
            vc[:, :, t:t + 1] = v
            k, v = kc[:, :, :t + 1], vc[:, :, :t + 1]
        return self._lin(self._attend(q, k, v, mask), p + ".out_proj")

    def _ffn(self, p: str, x):
        return self._lin(F.relu(self._lin(x, p + ".fc1")), p + ".fc2")

    def encode(self, batch_ids: Sequence[Sequence[int]]):
        c = self.cfg
        lengths = [len(s) for s in batch_ids]
        s = max(lengths)
        ids = torch.full((len(batch_ids), s), c.pad_id, dtype=torch.long)
        for b, x in enumerate(batch_ids):
            ids[b, :len(x)] = torch.tensor(list(x))
        mask = None  # additive key-padding mask [B, 1, 1, S]
        if min(lengths) < s:
            mask = torch.zeros(len(lengths), 1, 1, s)
            for b, n in enumerate(lengths):
                mask[b, 0, 0, n:] = torch.finfo(torch.float32).min
        # Position of the token at index i: padding_idx + 1 + i (right padding only).
        x = F.embedding(ids, self.embed) * c.scale + self.positions[c.pad_id + 1:c.pad_id + 1 + s]
        for i in range(c.encoder_layers):
            p = f"model.encoder.layers.{i}"
            x = x + self._self_attn(p + ".self_attn", self._ln(x, p + ".self_attn_layer_norm"),
                                    c.heads, mask)
            x = x + self._ffn(p, self._ln(x, p + ".final_layer_norm"))
        return self._ln(x, "model.encoder.layer_norm"), mask

    def start_decoder(self, enc_out, enc_mask, expand: int = 1, max_steps: int = 512) -> dict:
        c = self.cfg
        heads = c.decoder_heads
        cross = []
        for i in range(c.decoder_layers):
            p = f"model.decoder.layers.{i}.encoder_attn"
            k = self._split(self._lin(enc_out, p + ".k_proj"), heads)
            v = self._split(self._lin(enc_out, p + ".v_proj"), heads)
            cross.append((k.repeat_interleave(expand, dim=0), v.repeat_interleave(expand, dim=0)))
        mask = enc_mask.repeat_interleave(expand, dim=0) if enc_mask is not None else None
        rows = enc_out.shape[0] * expand
        hd = c.d_model // heads
        cache = [(torch.empty(rows, heads, max_steps, hd), torch.empty(rows, heads, max_steps, hd))
                 for _ in range(c.decoder_layers)]
        return {"cross": cross, "mask": mask, "self": cache, "len": 0}

    reorder = mr.MarianModel.reorder  # the same self-attention caches

    def _decoder_layers(self, x, self_attn, cross_attn):
        c = self.cfg
        for i in range(c.decoder_layers):
            p = f"model.decoder.layers.{i}"
            x = x + self_attn(i, p + ".self_attn", self._ln(x, p + ".self_attn_layer_norm"))
            x = x + cross_attn(i, p + ".encoder_attn", self._ln(x, p + ".encoder_attn_layer_norm"))
            x = x + self._ffn(p, self._ln(x, p + ".final_layer_norm"))
        return torch.matmul(self._ln(x, "model.decoder.layer_norm"), self.embed.t())

    def decode_step(self, state: dict, tokens: torch.Tensor) -> torch.Tensor:
        c = self.cfg
        t = state["len"]
        heads = c.decoder_heads
        x = F.embedding(tokens.view(-1, 1), self.embed) * c.scale + \
            self.positions[c.pad_id + 1 + t][None, None]

        def self_attn(i, p, h):
            return self._self_attn(p, h, heads, None, state["self"][i], t)

        def cross_attn(i, p, h):
            q = self._split(self._lin(h, p + ".q_proj"), heads)
            ck, cv = state["cross"][i]
            return self._lin(self._attend(q, ck, cv, state["mask"]), p + ".out_proj")

        logits = self._decoder_layers(x, self_attn, cross_attn)[:, 0, :]
        state["len"] = t + 1
        if t == 0 and self.forced_first is not None:
            # forced_bos_token_id: every other token of the first step is impossible.
            forced = torch.full_like(logits, -math.inf)
            for r, token in enumerate(self.forced_first):
                forced[r, token] = 0.0
            logits = forced
        return logits

    def decoder_full(self, enc_out, enc_mask, dec_ids: torch.Tensor) -> torch.Tensor:
        """Logits of a whole prefix at once (causal mask): a check of the incremental path."""
        c = self.cfg
        b, t = dec_ids.shape
        heads = c.decoder_heads
        x = F.embedding(dec_ids, self.embed) * c.scale + self.positions[c.pad_id + 1:c.pad_id + 1 + t]
        causal = torch.triu(torch.full((t, t), -math.inf), diagonal=1)[None, None]

        def self_attn(i, p, h):
            return self._self_attn(p, h, heads, causal)

        def cross_attn(i, p, h):
            q = self._split(self._lin(h, p + ".q_proj"), heads)
            k = self._split(self._lin(enc_out, p + ".k_proj"), heads)
            v = self._split(self._lin(enc_out, p + ".v_proj"), heads)
            return self._lin(self._attend(q, k, v, enc_mask), p + ".out_proj")

        return self._decoder_layers(x, self_attn, cross_attn)


def make_random_checkpoint(out: str, seed: int, d_model: int = 32, layers: int = 2,
                           heads: int = 4, ffn: int = 64, vocab: int = 96,
                           max_positions: int = 64, emb_std: float = 0.3,
                           eos_gain: float = 2.5) -> None:
    """A random M2M-100 checkpoint as the hub lays one out (config.json, model.safetensors with
    the shared table only: the per-side tables and lm_head are tied to it)."""
    os.makedirs(out, exist_ok=True)
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, std):
        return (torch.randn(*shape, generator=g) * std).numpy().astype(np.float32)

    pad, eos = 1, 2
    w = {}
    shared = randn(vocab, d_model, std=emb_std)
    shared[pad] = 0.0
    shared[eos] *= eos_gain  # so that random outputs end now and then
    w["model.shared.weight"] = shared

    def linear(p, n_out, n_in):
        w[p + ".weight"] = randn(n_out, n_in, std=2.0 / math.sqrt(n_in))
        w[p + ".bias"] = randn(n_out, std=0.1)

    def norm(p):
        w[p + ".weight"] = (1.0 + randn(d_model, std=0.1)).astype(np.float32)
        w[p + ".bias"] = randn(d_model, std=0.1)

    for side in ("encoder", "decoder"):
        for i in range(layers):
            p = f"model.{side}.layers.{i}"
            attns = ["self_attn"] + (["encoder_attn"] if side == "decoder" else [])
            for a in attns:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    linear(f"{p}.{a}.{proj}", d_model, d_model)
                norm(f"{p}.{a}_layer_norm")
            linear(p + ".fc1", ffn, d_model)
            linear(p + ".fc2", d_model, ffn)
            norm(p + ".final_layer_norm")
        norm(f"model.{side}.layer_norm")
    mr.write_safetensors(os.path.join(out, "model.safetensors"), w, {"format": "pt"})
    cfg = {
        "_name_or_path": f"transerve-random-m2m100-seed{seed}",
        "architectures": ["M2M100ForConditionalGeneration"],
        "model_type": "m2m_100", "vocab_size": vocab, "d_model": d_model,
        "encoder_layers": layers, "decoder_layers": layers,
        "encoder_attention_heads": heads, "decoder_attention_heads": heads,
        "encoder_ffn_dim": ffn, "decoder_ffn_dim": ffn, "activation_function": "relu",
        "max_position_embeddings": max_positions, "scale_embedding": True,
        "pad_token_id": pad, "eos_token_id": eos, "bos_token_id": 0,
        "decoder_start_token_id": eos, "dropout": 0.1, "attention_dropout": 0.1,
        "activation_dropout": 0.0, "encoder_layerdrop": 0.05, "decoder_layerdrop": 0.05,
        "init_std": 0.02, "use_cache": True, "is_encoder_decoder": True,
        "tokenizer_class": "NllbTokenizer", "torch_dtype": "float32",
    }
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump({"bos_token_id": 0, "decoder_start_token_id": eos, "eos_token_id": eos,
                   "pad_token_id": pad, "max_length": max_positions}, f, indent=2)
        f.write("\n")


def make_cases(model: M2mModel, seed: int, n: int = 12, max_length: int = 24) -> dict:
    """Random sources (language code, pieces, EOS) and forced target codes, translated greedy in
    one mixed batch and by beam 4 one at a time, with each step's smallest margin between the
    chosen and the next candidate (a case at a near-tie may differ by rounding)."""
    c = model.cfg
    rng = random.Random(seed)
    codes = list(range(c.vocab_size - 6, c.vocab_size))  # the last ids play language codes
    words = [i for i in range(3, c.vocab_size - 6)]
    sources, targets = [], []
    for _ in range(n):
        body = [rng.choice(words) for _ in range(rng.randint(1, 14))]
        sources.append([rng.choice(codes)] + body + [c.eos_id])
        targets.append(rng.choice(codes))
    with torch.inference_mode():
        model.forced_first = targets
        margins: list = []
        greedy = mr.greedy_search(model, sources, max_length, trace=margins)
        cases = []
        for i, src in enumerate(sources):
            model.forced_first = [targets[i]] * 4
            beam = mr.beam_search(model, [src], 4, max_length)[0]
            # The forced first step has no choice: its margin is not one.
            m = [x for x in margins[i][1:] if x != math.inf]
            cases.append({"source": src, "target_code": targets[i],
                          "greedy": greedy[i]["ids"], "greedy_margin": min(m, default=math.inf),
                          "beam4": beam["ids"]})
        # The incremental decoder against a full pass over the greedy prefix.
        enc, mask = model.encode([sources[0]])
        prefix = torch.tensor([[c.decoder_start_id] + cases[0]["greedy"][:-1]])
        full = model.decoder_full(enc, mask, prefix)
        model.forced_first = None
        state = model.start_decoder(enc, mask, 1, prefix.shape[1])
        worst = 0.0
        for t in range(prefix.shape[1]):
            step = model.decode_step(state, prefix[:, t])
            worst = max(worst, float((step - full[:, t]).abs().max()))
        if worst > 1e-3:
            raise RuntimeError(f"incremental and full decoders differ by {worst}")
    return {"max_length": max_length, "cases": cases}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make", help="write a random checkpoint into this directory")
    ap.add_argument("--model_dir", help="a checkpoint to translate cases with")
    ap.add_argument("--cases", help="write the cases (JSON) here")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--d_model", type=int, default=32)
    ap.add_argument("--emb_std", type=float, default=0.3)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.make:
        make_random_checkpoint(args.make, args.seed, d_model=args.d_model, emb_std=args.emb_std)
    if args.model_dir and args.cases:
        cases = make_cases(M2mModel(args.model_dir), args.seed)
        with open(args.cases, "w", encoding="utf-8") as f:
            json.dump(cases, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
