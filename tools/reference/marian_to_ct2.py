#!/usr/bin/python3
"""Writes a Hugging Face Marian checkpoint directory as a CTranslate2 model directory, in the
layout CTranslate2's own Marian converter produces (docs/ctranslate2-format.md): a post-norm
TransformerSpec, the pad token dropped from the vocabulary and the tables, the decoder started
from a zero embedding, positions stored, equal tables aliased, and the directory's source.spm and
target.spm copied beside model.bin, as OPUS-MT users keep them.

For tests and measurements of transerve's CTranslate2 loader without CTranslate2 itself:

  /usr/bin/python3 tools/reference/marian_to_ct2.py --model_dir models/en-de-small \\
      --out /tmp/en-de-small-ct2 [--quantization float32|int8|int8_float32|float16|bfloat16]
"""

import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_random_ct2_model as writer  # noqa: E402
import marian_reference as mr  # noqa: E402

ACTIVATIONS = {"relu": 0, "gelu_new": 1, "gelu_fast": 1, "swish": 2, "silu": 2, "gelu": 3}


def stacks_spec(cfg: dict, get, positions, pre_norm: bool) -> dict:
    """Both stacks of a Hugging Face encoder-decoder checkpoint (Marian, M2M-100) as
    TransformerSpec variables: attributes, positions, layers and, pre-norm, the final norms.
    `get(name)` returns a float32 tensor of the checkpoint."""
    spec = {}

    def attr(name, value, dtype):
        spec[name] = np.asarray(value, dtype=dtype)

    def linear(scope, prefix):
        spec[scope + "/weight"] = get(prefix + ".weight")
        spec[scope + "/bias"] = get(prefix + ".bias")

    def fused(scope, prefix, parts):
        spec[scope + "/weight"] = np.concatenate([get(f"{prefix}.{p}.weight") for p in parts])
        spec[scope + "/bias"] = np.concatenate([get(f"{prefix}.{p}.bias") for p in parts])

    def norm(scope, prefix):
        spec[scope + "/gamma"] = get(prefix + ".weight")
        spec[scope + "/beta"] = get(prefix + ".bias")

    d = cfg["d_model"]
    scale = math.sqrt(d) if cfg.get("scale_embedding", False) else 1.0
    for side in ("encoder", "decoder"):
        attr(f"{side}/num_heads", cfg[f"{side}_attention_heads"], np.int16)
        attr(f"{side}/pre_norm", 1 if pre_norm else 0, np.int8)
        attr(f"{side}/activation", ACTIVATIONS[cfg["activation_function"]], np.int8)
        attr(f"{side}/scale_embeddings", scale, np.float32)
        spec[f"{side}/position_encodings/encodings"] = positions
        if pre_norm:
            norm(f"{side}/layer_norm", f"model.{side}.layer_norm")
        for i in range(cfg[f"{side}_layers"]):
            p, hf = f"{side}/layer_{i}", f"model.{side}.layers.{i}"
            fused(p + "/self_attention/linear_0", hf + ".self_attn", ["q_proj", "k_proj", "v_proj"])
            linear(p + "/self_attention/linear_1", hf + ".self_attn.out_proj")
            norm(p + "/self_attention/layer_norm", hf + ".self_attn_layer_norm")
            if side == "decoder":
                linear(p + "/attention/linear_0", hf + ".encoder_attn.q_proj")
                fused(p + "/attention/linear_1", hf + ".encoder_attn", ["k_proj", "v_proj"])
                linear(p + "/attention/linear_2", hf + ".encoder_attn.out_proj")
                norm(p + "/attention/layer_norm", hf + ".encoder_attn_layer_norm")
            linear(p + "/ffn/linear_0", hf + ".fc1")
            linear(p + "/ffn/linear_1", hf + ".fc2")
            norm(p + "/ffn/layer_norm", hf + ".final_layer_norm")
    attr("encoder/embeddings_merge", 0, np.int8)
    attr("encoder/multi_query_attention", 0, np.int8)
    attr("decoder/alignment_layer", -1, np.int16)
    attr("decoder/alignment_heads", 1, np.int16)
    for flag in ("alibi", "alibi_use_positive_positions", "scale_alibi"):
        attr(f"decoder/{flag}", 0, np.int8)
    return spec


def checkpoint_reader(model_dir: str):
    """config.json and a `get(name)` over model.safetensors (names with or without "model.")."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    tensors, _, _ = mr.read_safetensors(os.path.join(model_dir, "model.safetensors"))

    def get(name):
        for candidate in (name, name.replace("model.", "", 1)):
            if candidate in tensors:
                return tensors[candidate].astype(np.float32)
        raise KeyError(name)

    return cfg, get


# The special tokens both conversions write.
CONFIG = {"add_source_bos": False, "add_source_eos": False, "bos_token": "<s>",
          "decoder_start_token": "</s>", "eos_token": "</s>", "layer_norm_epsilon": None,
          "multi_query_attention": False, "unk_token": "<unk>"}


def build_spec(model_dir: str):
    cfg, get = checkpoint_reader(model_dir)
    d = cfg["d_model"]
    vocab = json.load(open(os.path.join(model_dir, "vocab.json")))
    tokens = [None] * (max(vocab.values()) + 1)
    for piece, i in vocab.items():
        tokens[i] = piece
    pad = cfg["pad_token_id"]
    if pad != len(tokens) - 1 or tokens[pad] != "<pad>":
        raise SystemExit("expected <pad> as the last vocabulary entry, as OPUS-MT checkpoints have")
    tokens = tokens[:-1]

    embeddings = get("model.shared.weight")[:-1]
    table = mr.sinusoidal_table(cfg["max_position_embeddings"], d).astype(np.float32)
    spec = stacks_spec(cfg, get, table, pre_norm=False)
    spec["encoder/embeddings_0/weight"] = embeddings
    spec["decoder/embeddings/weight"] = embeddings.copy()
    spec["decoder/projection/weight"] = embeddings.copy()
    spec["decoder/projection/bias"] = get("final_logits_bias").reshape(-1)[:-1]
    spec["decoder/start_from_zero_embedding"] = np.asarray(1, dtype=np.int8)
    config = dict(CONFIG)
    return spec, tokens, config


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quantization", default="float32", choices=writer.QUANTIZATIONS)
    args = ap.parse_args(argv)
    spec, tokens, config = build_spec(args.model_dir)
    os.makedirs(args.out, exist_ok=True)
    variables, aliases = writer.convert(spec, args.quantization)
    writer.write_model_bin(os.path.join(args.out, "model.bin"), variables, aliases)
    json.dump(tokens, open(os.path.join(args.out, "shared_vocabulary.json"), "w"),
              ensure_ascii=False)
    json.dump(config, open(os.path.join(args.out, "config.json"), "w"), indent=2, sort_keys=True)
    for name in ("source.spm", "target.spm"):
        shutil.copyfile(os.path.join(args.model_dir, name), os.path.join(args.out, name))
    print(f"wrote {args.out}: {len(variables)} variables, {len(aliases)} aliases, "
          f"{len(tokens)} tokens, {args.quantization}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
