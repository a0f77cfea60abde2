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
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m2m_reference as m2m  # noqa: E402
import m2m_tokenizer_reference as tr  # noqa: E402
import make_random_ct2_model as writer  # noqa: E402
import marian_to_ct2 as m2c  # noqa: E402


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
    cfg, get = m2c.checkpoint_reader(model_dir)
    if cfg.get("model_type") != "m2m_100":
        raise SystemExit(f"{model_dir}: model_type {cfg.get('model_type')!r}, expected m2m_100")
    pad = cfg["pad_token_id"]
    rows = cfg["max_position_embeddings"] + pad + 1
    table = m2m.m2m_positions(rows, cfg["d_model"], pad).numpy()[pad + 1:].astype(np.float32)
    spec = m2c.stacks_spec(cfg, get, table, pre_norm=True)
    embeddings = get("model.shared.weight")
    spec["encoder/embeddings_0/weight"] = embeddings
    spec["decoder/embeddings/weight"] = embeddings.copy()
    spec["decoder/projection/weight"] = embeddings.copy()
    spec["decoder/start_from_zero_embedding"] = np.asarray(0, dtype=np.int8)
    return spec, vocabulary(model_dir, embeddings.shape[0]), dict(m2c.CONFIG)


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
