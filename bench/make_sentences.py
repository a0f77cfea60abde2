#!/usr/bin/env python3
"""Writes the server benchmark's input: English-like sentences of mixed length, one per line.

Word counts are log-normal with the shape of our corpus test set (tools/corpus: median about 10
words, log-sd 0.6, a long tail), words drawn from the vocabulary the benchmark model's
SentencePiece models were trained on (tools/reference/make_random_model.py). Deterministic.
"""
import argparse
import math
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools", "reference"))
import make_random_model  # noqa: E402  (its word list)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--median_words", type=float, default=10.0)
    ap.add_argument("--log_sd", type=float, default=0.6)
    ap.add_argument("--max_words", type=int, default=80)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    words = make_random_model._EN_WORDS
    with open(args.out, "w", encoding="utf-8") as f:
        for _ in range(args.lines):
            n = round(math.exp(rng.gauss(math.log(args.median_words), args.log_sd)))
            n = max(1, min(args.max_words, n))
            sentence = " ".join(rng.choice(words) for _ in range(n))
            f.write(sentence[0].upper() + sentence[1:] + rng.choice([".", ".", "?", "!"]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
