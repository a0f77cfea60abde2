#!/usr/bin/env python3
"""Trains the shared SentencePiece model and writes the opus-mt vocabulary files.

Debian's `spm_train` (unigram, nmt_nfkc, one vocabulary trained on both sides of the training
corpus) -> OUT/source.spm and OUT/target.spm (the same model twice: a shared vocabulary), and
OUT/vocab.json by the opus-mt convention of tools/reference/make_random_model.py:
"</s>"=0, "<unk>"=1, then the pieces of source.spm and target.spm without duplicates and without
spm's own <unk>/<s>/</s>, then "<pad>" = V-1.

  /usr/bin/python3 tools/train/train_spm.py --src /work/data/corpus/train.en \
      --tgt /work/data/corpus/train.de --out /work/data/train/vocab [--vocab_size 8000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from make_random_model import _spm_pieces  # noqa: E402  (the vocab.json piece convention)


def vocab_pieces(source_spm: str, target_spm: str):
    """opus-mt vocab order: </s>, <unk>, source pieces, new target pieces, <pad>."""
    pieces = ["</s>", "<unk>"]
    seen = set(pieces)
    for path in (source_spm, target_spm):
        for p in _spm_pieces(path):
            if p not in seen:
                seen.add(p)
                pieces.append(p)
    pieces.append("<pad>")
    return pieces


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="source-side training text")
    ap.add_argument("--tgt", required=True, help="target-side training text")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--vocab_size", type=int, default=8000,
                    help="spm pieces (incl. spm's <unk>,<s>,</s>); vocab.json gets the same count")
    ap.add_argument("--character_coverage", type=float, default=0.9999)
    ap.add_argument("--input_sentence_size", type=int, default=2000000,
                    help="sentences sampled for training (0 = all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--force", action="store_true", help="retrain even if OUT/vocab.json exists")
    args = ap.parse_args(argv)

    vocab_path = os.path.join(args.out, "vocab.json")
    if os.path.exists(vocab_path) and not args.force:
        print(f"{vocab_path} exists; keeping it (--force to retrain)", file=sys.stderr)
        return 0
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        text = os.path.join(tmp, "both.txt")
        with open(text, "w", encoding="utf-8") as out:
            for path in (args.src, args.tgt):
                with open(path, encoding="utf-8") as f:
                    shutil.copyfileobj(f, out)
        cmd = ["spm_train", "--input=both.txt", "--model_prefix=spm",
               f"--vocab_size={args.vocab_size}", "--model_type=unigram",
               "--normalization_rule_name=nmt_nfkc",
               f"--character_coverage={args.character_coverage}",
               f"--num_threads={args.threads}", f"--random_seed={args.seed}",
               "--minloglevel=1"]
        if args.input_sentence_size:
            cmd += [f"--input_sentence_size={args.input_sentence_size}",
                    "--shuffle_input_sentence=true"]
        # relative paths: the trainer spec stored inside the model records them
        subprocess.run(cmd, check=True, cwd=tmp)
        model = os.path.join(tmp, "spm.model")
        for name in ("source.spm", "target.spm"):
            shutil.copyfile(model, os.path.join(args.out, name))
    pieces = vocab_pieces(os.path.join(args.out, "source.spm"),
                          os.path.join(args.out, "target.spm"))
    tmp_vocab = vocab_path + ".tmp"
    with open(tmp_vocab, "w", encoding="utf-8") as f:
        json.dump({p: i for i, p in enumerate(pieces)}, f, ensure_ascii=False, indent=2)
        f.write("\n")
    os.replace(tmp_vocab, vocab_path)
    with open(os.path.join(args.out, "source.spm"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    info = {"vocab_size": len(pieces), "spm_vocab_size": args.vocab_size,
            "character_coverage": args.character_coverage, "model_type": "unigram",
            "normalization": "nmt_nfkc", "trained_on": [args.src, args.tgt],
            "input_sentence_size": args.input_sentence_size, "spm_sha256_16": digest,
            "seconds": round(time.time() - t0, 1)}
    with open(os.path.join(args.out, "spm_info.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}: vocab.json {len(pieces)} ids (pad = {len(pieces) - 1}), "
          f"spm in {time.time() - t0:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
