#!/usr/bin/env python3
"""Random English-like lines for the end-to-end tests, drawn anew on every run.

  random_lines.py OUT COUNT MIN_WORDS MAX_WORDS [--empty_at K] [--words "w1 w2 ..."]

Each line is MIN_WORDS to MAX_WORDS words from the list, capitalised, ending in a full stop;
--empty_at puts an empty line at index K (the tests check it stays empty). The default words
are ones the shipped model translates; a test on a tiny fixture passes its own vocabulary.
"""
import argparse
import random

WORDS = ("the file is open and we copy your devices to the old window where a small program "
         "cannot save this page now because debian installs every package from its own mirror "
         "while users read the manual")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("count", type=int)
    ap.add_argument("min_words", type=int)
    ap.add_argument("max_words", type=int)
    ap.add_argument("--empty_at", type=int, default=None)
    ap.add_argument("--words", default=WORDS)
    a = ap.parse_args()
    words = a.words.split()
    rng = random.Random()
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(a.min_words, a.max_words)))
             .capitalize() + "." for _ in range(a.count)]
    if a.empty_at is not None:
        lines.insert(a.empty_at, "")
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
