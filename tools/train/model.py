"""The Marian (OPUS-MT) transformer as a trainable torch.nn.Module.

Parameter names are the Hugging Face names (`model.shared.weight`,
`model.encoder.layers.{i}.self_attn.q_proj.weight`, ..., `final_logits_bias`), so a state dict
exports to `model.safetensors` without renaming. The forward pass is the inference forward of
tools/reference/marian_reference.py (docs/marian-format.md sections 4 and 9) plus the three HF
dropouts (embeddings, attention output, FFN output; attention/activation dropout 0 by default):

  x = E[id] * sqrt(D) + PE[pos]  (sinusoid table from the reference, positions from 0)
  post-norm layers: x = LN(x + SelfAttn(x)); [decoder: x = LN(x + CrossAttn(x, enc))];
                    x = LN(x + fc2(act(fc1 x)))        LayerNorm eps 1e-5, no final LayerNorm
  attention: softmax(q.k^T * hd^-0.5 + mask) . v, masks additive with finfo(float32).min
  logits = h . E^T + final_logits_bias                  (tied, shared embeddings)

tools/train/test_train.py checks that exported weights give the same logits and greedy ids in the
reference as this module in eval mode.

Training-only choices that keep the exported model conventional:
* `<pad>` is the last id (V-1) and the decoder start token. Its embedding row is zero and gets
  no gradient (HF nn.Embedding(padding_idx=pad)), as in converted opus-mt models.
* The loss is computed over ids 0..V-2 only: `<pad>` is excluded from the softmax, which is what
  inference does (pad banned and log-probs renormalised), so training and decoding agree.
* `final_logits_bias` is trained (Marian's output bias); its pad entry stays 0.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Dict, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from marian_reference import (FLOAT32_MIN, LAYER_NORM_EPS, _ACTIVATIONS,  # noqa: E402
                              sinusoidal_table)

ARCH_KEYS = ("vocab_size", "d_model", "encoder_layers", "decoder_layers", "heads", "ffn",
             "activation", "max_position_embeddings", "dropout", "attention_dropout",
             "activation_dropout")


class Attention(nn.Module):
    def __init__(self, d_model: int, heads: int, attention_dropout: float):
        super().__init__()
        self.heads = heads
        self.hd = d_model // heads
        self.scaling = self.hd ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = attention_dropout

    def _split(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, D] -> [B, H, T, hd]
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.hd).transpose(1, 2)

    def forward(self, x: torch.Tensor, y: torch.Tensor,
                mask: Optional[torch.Tensor]) -> torch.Tensor:
        b, t, d = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(y))
        v = self._split(self.v_proj(y))
        # product first, then the scale (as the reference and current HF)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scaling
        if mask is not None:
            scores = scores + mask
        probs = torch.softmax(scores, dim=-1)
        if self.attention_dropout > 0:
            probs = F.dropout(probs, self.attention_dropout, self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, d)
        return self.out_proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, act, p: float, p_att: float, p_act: float):
        super().__init__()
        self.self_attn = Attention(d, heads, p_att)
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=LAYER_NORM_EPS)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d, eps=LAYER_NORM_EPS)
        self.act, self.p, self.p_act = act, p, p_act

    def ffn(self, x):
        h = self.act(self.fc1(x))
        if self.p_act > 0:
            h = F.dropout(h, self.p_act, self.training)
        return F.dropout(self.fc2(h), self.p, self.training)

    def forward(self, x, mask):
        x = self.self_attn_layer_norm(
            x + F.dropout(self.self_attn(x, x, mask), self.p, self.training))
        return self.final_layer_norm(x + self.ffn(x))


class DecoderLayer(EncoderLayer):
    def __init__(self, d: int, heads: int, ffn: int, act, p: float, p_att: float, p_act: float):
        super().__init__(d, heads, ffn, act, p, p_att, p_act)
        self.encoder_attn = Attention(d, heads, p_att)
        self.encoder_attn_layer_norm = nn.LayerNorm(d, eps=LAYER_NORM_EPS)

    def forward(self, x, enc, causal, enc_mask):  # noqa: D102 (different signature on purpose)
        x = self.self_attn_layer_norm(
            x + F.dropout(self.self_attn(x, x, causal), self.p, self.training))
        x = self.encoder_attn_layer_norm(
            x + F.dropout(self.encoder_attn(x, enc, enc_mask), self.p, self.training))
        return self.final_layer_norm(x + self.ffn(x))


class Stack(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)


class Core(nn.Module):
    """Holds `shared`, `encoder.layers`, `decoder.layers` so that names get the `model.` prefix."""

    def __init__(self, cfg: dict, act):
        super().__init__()
        d, v = cfg["d_model"], cfg["vocab_size"]
        args = (d, cfg["heads"], cfg["ffn"], act, cfg["dropout"], cfg["attention_dropout"],
                cfg["activation_dropout"])
        self.shared = nn.Embedding(v, d, padding_idx=v - 1)
        self.encoder = Stack([EncoderLayer(*args) for _ in range(cfg["encoder_layers"])])
        self.decoder = Stack([DecoderLayer(*args) for _ in range(cfg["decoder_layers"])])


class MarianMT(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        missing = [k for k in ARCH_KEYS if k not in cfg]
        if missing:
            raise ValueError(f"model config lacks {missing}")
        if cfg["d_model"] % cfg["heads"]:
            raise ValueError("d_model must be divisible by heads")
        self.cfg = dict(cfg)
        self.pad_id = cfg["vocab_size"] - 1
        self.eos_id = 0
        self.act = _ACTIVATIONS[cfg["activation"]]
        self.model = Core(cfg, self.act)
        self.final_logits_bias = nn.Parameter(torch.zeros(1, cfg["vocab_size"]))
        self.embed_scale = math.sqrt(cfg["d_model"])
        self.register_buffer(
            "positions",
            torch.from_numpy(sinusoidal_table(cfg["max_position_embeddings"], cfg["d_model"])),
            persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """fairseq-style init: N(0, D^-1/2) embeddings (std 1 after the sqrt(D) scale), Xavier
        uniform linear weights, zero biases, unit LayerNorms; pad row and logit bias zero."""
        d = self.cfg["d_model"]
        with torch.no_grad():
            nn.init.normal_(self.model.shared.weight, 0.0, d ** -0.5)
            self.model.shared.weight[self.pad_id].zero_()
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    nn.init.xavier_uniform_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.LayerNorm):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
            self.final_logits_bias.zero_()

    # -- forward ---------------------------------------------------------------------------------

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        if t > self.positions.shape[0]:
            raise ValueError(f"sequence of {t} tokens exceeds max_position_embeddings")
        x = F.embedding(ids, self.model.shared.weight, padding_idx=self.pad_id) * self.embed_scale
        x = x + self.positions[:t]
        return F.dropout(x, self.cfg["dropout"], self.training)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """src [B, S] (right-padded with pad), src_mask [B, S] bool (True = real token)."""
        add_mask = self.key_mask(src_mask)
        x = self._embed(src)
        for layer in self.model.encoder.layers:
            x = layer(x, add_mask)
        return x

    def decode(self, tgt_in: torch.Tensor, enc: torch.Tensor,
               src_mask: torch.Tensor) -> torch.Tensor:
        """Teacher-forced decoder over tgt_in [B, T] (starts with the pad = start id) -> [B,T,D]."""
        t = tgt_in.shape[1]
        causal = torch.triu(torch.full((t, t), FLOAT32_MIN, dtype=enc.dtype, device=enc.device),
                            diagonal=1)[None, None]
        add_mask = self.key_mask(src_mask)
        x = self._embed(tgt_in)
        for layer in self.model.decoder.layers:
            x = layer(x, enc, causal, add_mask)
        return x

    @staticmethod
    def key_mask(mask: torch.Tensor) -> torch.Tensor:
        """bool [B, S] -> additive [B, 1, 1, S]: 0 for real keys, finfo(float32).min for pad."""
        return torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_fill(
            ~mask, FLOAT32_MIN)[:, None, None, :]

    def logits(self, h: torch.Tensor, include_pad: bool = True) -> torch.Tensor:
        """Output projection. With include_pad False the pad column (the last id) is left out,
        i.e. the softmax the decoder renormalises over."""
        w, b = self.model.shared.weight, self.final_logits_bias[0]
        if not include_pad:
            w, b = w[:self.pad_id], b[:self.pad_id]
        return F.linear(h, w, b)

    def forward(self, src, src_mask, tgt_in):
        """Full logits [B, T, V] (inference semantics; used by the parity test)."""
        enc = self.encode(src, src_mask)
        return self.logits(self.decode(tgt_in, enc, src_mask))

    def loss(self, src, src_mask, tgt_in, tgt_out, label_smoothing: float):
        """Label-smoothed cross entropy over the non-pad target positions.

        Returns (loss_sum, nll_sum, n_tokens); the smoothing mass is spread uniformly over the
        V-1 non-pad ids."""
        enc = self.encode(src, src_mask)
        h = self.decode(tgt_in, enc, src_mask)
        keep = tgt_out != self.pad_id
        h = h[keep]
        y = tgt_out[keep]
        lp = torch.log_softmax(self.logits(h, include_pad=False).float(), dim=-1)
        nll = -lp.gather(1, y[:, None])[:, 0]
        smooth = -lp.mean(dim=-1)
        loss = (1.0 - label_smoothing) * nll + label_smoothing * smooth
        return loss.sum(), nll.detach().sum(), int(y.numel())

    # -- export ------------------------------------------------------------------------------------

    def hf_tensors(self) -> Dict[str, np.ndarray]:
        """float32 numpy tensors under the HF names (tied embeddings stored once as
        model.shared.weight; no lm_head, no embed_tokens aliases, no position tables)."""
        out = {}
        for name, p in self.state_dict().items():
            out[name] = p.detach().to("cpu", torch.float32).numpy().copy()
        out["final_logits_bias"][0, self.pad_id] = 0.0
        out["model.shared.weight"][self.pad_id] = 0.0
        return out
