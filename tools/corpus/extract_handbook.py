#!/usr/bin/python3
"""EVALUATION ONLY: English/German pairs from the Debian Administrator's Handbook.

debian-handbook is reserved for independent evaluation: it must never be used for training,
validation or tuning. This tool is separate from build_corpus.py, downloads the package into
its own cache folder (<cache>/eval-only) and writes handbook.en / handbook.de into their own
output folder (default /work/data/handbook-eval), never next to the training files.

Pages are aligned like the other manuals (same file names, blocks in order, difflib over block
signatures), and the same segmentation and filters apply. Pairs whose English side (case,
punctuation and placeholders ignored) also occurs in the training corpus are dropped, so that
the set measures translation of unseen text; how many were dropped is reported.
"""

import argparse
import json
import os
import subprocess
import sys

import clean
import debian_fetch
from debian_fetch import log
from html_text import manual_blocks
from source_docs import align_blocks

PACKAGE = "debian-handbook"
EN_DIR = "usr/share/doc/debian-handbook/html/en-US"
DE_DIR = "usr/share/doc/debian-handbook/html/de-DE"

NOTICE = """EVALUATION ONLY - DO NOT TRAIN, VALIDATE OR TUNE ON THESE FILES.

handbook.en / handbook.de: sentence pairs from the Debian Administrator's Handbook
(Debian package debian-handbook {version}), extracted by tools/corpus/extract_handbook.py.
This text is held out from the transerve training corpus for independent evaluation.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/work/data/handbook-eval")
    ap.add_argument("--cache", default="/work/data/corpus-cache")
    ap.add_argument("--train-dir", default="/work/data/corpus",
                    help="corpus whose train/valid/test English sides are excluded")
    ap.add_argument("--min-words", type=int, default=3)
    ap.add_argument("--max-words", type=int, default=60)
    args = ap.parse_args()

    apt = debian_fetch.Apt(os.path.join(args.cache, "apt"))
    apt.update()
    pk = apt.packages()
    version = pk[PACKAGE]["Version"]
    root = os.path.join(args.cache, "eval-only")
    deb_dir = os.path.join(root, "debs")
    os.makedirs(deb_dir, exist_ok=True)
    deb = os.path.join(deb_dir, debian_fetch.deb_file_name(PACKAGE, pk[PACKAGE]))
    if not os.path.exists(deb):
        log(f"downloading {PACKAGE} {version} (evaluation only) ...")
        subprocess.run(["apt-get", "download", "-q", f"{PACKAGE}={version}"], cwd=deb_dir,
                       env=apt.env(), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    d = apt.extract(PACKAGE, deb, os.path.join(root, "extract"),
                    [f"./{EN_DIR}/*.html", f"./{DE_DIR}/*.html"])
    en_root, de_root = os.path.join(d, EN_DIR), os.path.join(d, DE_DIR)

    seen = set()
    if os.path.isdir(args.train_dir):
        for split in ("train", "valid", "test"):
            p = os.path.join(args.train_dir, f"{split}.en")
            if os.path.exists(p):
                with open(p, encoding="utf-8") as f:
                    seen.update(clean.fuzzy_key(line.rstrip("\n")) for line in f)
        log(f"excluding English sides of {args.train_dir} ({len(seen)} keys)")
    else:
        log(f"warning: {args.train_dir} not found; no overlap check")

    counts = {"pages": 0, "blocks": 0, "segments": 0, "dropped_by_filter": {},
              "dropped_length": 0, "dropped_duplicate": 0, "dropped_in_training_corpus": 0}
    out, keys = [], set()
    for f in sorted(os.listdir(en_root)):
        if not f.endswith(".html") or not os.path.exists(os.path.join(de_root, f)):
            continue
        counts["pages"] += 1
        with open(os.path.join(en_root, f), encoding="utf-8") as fe, \
                open(os.path.join(de_root, f), encoding="utf-8") as fd:
            eb, db = manual_blocks(fe.read()), manual_blocks(fd.read())
        counts["blocks"] += len(eb)
        for e, dd in align_blocks(eb, db):
            for a, b, reason in clean.segment_pair(e, dd, ui=False):
                counts["segments"] += 1
                if reason:
                    counts["dropped_by_filter"][reason] = \
                        counts["dropped_by_filter"].get(reason, 0) + 1
                    continue
                if not args.min_words <= clean.word_count(a) <= args.max_words:
                    counts["dropped_length"] += 1
                    continue
                k = clean.fuzzy_key(a)
                if k in keys:
                    counts["dropped_duplicate"] += 1
                    continue
                keys.add(k)
                if k in seen:
                    counts["dropped_in_training_corpus"] += 1
                    continue
                out.append((a, b))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "handbook.en"), "w", encoding="utf-8") as fe, \
            open(os.path.join(args.out, "handbook.de"), "w", encoding="utf-8") as fd:
        for a, b in out:
            fe.write(a + "\n")
            fd.write(b + "\n")
    counts["pairs"] = len(out)
    counts["package"] = f"{PACKAGE} {version}"
    with open(os.path.join(args.out, "README-EVALUATION-ONLY.txt"), "w") as f:
        f.write(NOTICE.format(version=version))
    with open(os.path.join(args.out, "handbook-stats.json"), "w") as f:
        json.dump(counts, f, indent=1)
        f.write("\n")
    log(f"handbook (EVALUATION ONLY): {len(out)} pairs -> {args.out}; "
        f"{counts['dropped_in_training_corpus']} dropped as seen in the training corpus")


if __name__ == "__main__":
    sys.exit(main())
