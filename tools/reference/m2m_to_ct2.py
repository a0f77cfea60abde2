#!/usr/bin/python3
"""Writes a Hugging Face M2M-100 / NLLB-200 checkpoint directory (model_type m2m_100) as a
CTranslate2 model directory, in the layout CTranslate2's converter for these models produces: a
pre-norm TransformerSpec with the stacks' final layer norms, M2M's offset positions stored (the
table from row pad + 1 on), no output bias, the decoder started from </s>, the whole vocabulary
(language codes included, padded to the table's rows), and the tokenizer's
sentencepiece.bpe.model copied beside model.bin, as its users keep it.

For measurements of transerve against CTranslate2 on such models, and CTranslate2's own ids as
an oracle (bench/), without the transformers package:

  /usr/bin/python3 tools/reference/m2m_to_ct2.py --model_dir DIR --out OUT [--quantization Q]
"""

import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m2m_reference as m2m  # noqa: E402
import m2m_tokenizer_reference as tr  # noqa: E402
import make_random_ct2_model as writer  # noqa: E402
import marian_reference as mr  # noqa: E402

ACTIVATIONS = {"relu": 0, "gelu_new": 1, "gelu_fast": 1, "swish": 2, "silu": 2, "gelu": 3}


def vocabulary(model_dir: str, rows: int) -> list:
    """The tokenizer's tokens by id, padded with made-up words to the table's rows."""
    tok = tr.ReferenceTokenizer(model_dir)
    tokens = [None] * tok.size
    if tok.nllb:
        for i, t in enumerate(tr.SPECIALS):
            tokens[i] = t
        for i in range(3, tok.sp.get_piece_size()):
            tokens[i + 1] = tok.sp.id_to_piece(i)
        tokens[tok.size - 1] = "<mask>"
    else:
        for piece, i in tok.encoder.items():
            tokens[i] = piece
    for code, i in tok.code_ids.items():
        tokens[i] = code
    if any(t is None for t in tokens):
        raise SystemExit("the tokenizer leaves ids without a token")
    tokens += [f"madeupword{i:04d}" for i in range(rows - len(tokens))]
    return tokens


def build_spec(model_dir: str):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    if cfg.get("model_type") != "m2m_100":
        raise SystemExit(f"{model_dir}: model_type {cfg.get('model_type')!r}, expected m2m_100")
    tensors, _, _ = mr.read_safetensors(os.path.join(model_dir, "model.safetensors"))

    def get(name):
        for candidate in (name, name.replace("model.", "", 1)):
            if candidate in tensors:
                return tensors[candidate].astype(np.float32)
        raise KeyError(name)

    d = cfg["d_model"]
    pad = cfg["pad_token_id"]
    embeddings = get("model.shared.weight")
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

    rows = cfg["max_position_embeddings"] + pad + 1
    table = m2m.m2m_positions(rows, d, pad).numpy()[pad + 1:].astype(np.float32)
    scale = math.sqrt(d) if cfg.get("scale_embedding", False) else 1.0
    for side in ("encoder", "decoder"):
        attr(f"{side}/num_heads", cfg[f"{side}_attention_heads"], np.int16)
        attr(f"{side}/pre_norm", 1, np.int8)
        attr(f"{side}/activation", ACTIVATIONS[cfg["activation_function"]], np.int8)
        attr(f"{side}/scale_embeddings", scale, np.float32)
        spec[f"{side}/position_encodings/encodings"] = table
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
    spec["encoder/embeddings_0/weight"] = embeddings
    spec["decoder/embeddings/weight"] = embeddings.copy()
    spec["decoder/projection/weight"] = embeddings.copy()
    attr("encoder/embeddings_merge", 0, np.int8)
    attr("encoder/multi_query_attention", 0, np.int8)
    attr("decoder/alignment_layer", -1, np.int16)
    attr("decoder/alignment_heads", 1, np.int16)
    attr("decoder/start_from_zero_embedding", 0, np.int8)
    for flag in ("alibi", "alibi_use_positive_positions", "scale_alibi"):
        attr(f"decoder/{flag}", 0, np.int8)
    config = {"add_source_bos": False, "add_source_eos": False, "bos_token": "<s>",
              "decoder_start_token": "</s>", "eos_token": "</s>", "layer_norm_epsilon": None,
              "multi_query_attention": False, "unk_token": "<unk>"}
    return spec, vocabulary(model_dir, embeddings.shape[0]), config


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
    shutil.copyfile(os.path.join(args.model_dir, "sentencepiece.bpe.model"),
                    os.path.join(args.out, "sentencepiece.bpe.model"))
    print(f"wrote {args.out}: {len(variables)} variables, {len(aliases)} aliases, "
          f"{len(tokens)} tokens, {args.quantization}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
