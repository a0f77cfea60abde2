#!/usr/bin/env python3
"""A pivoted request's latency against the sum of its two legs' at the same load.

One transerve-server serves MODEL_DIR twice: as "xx-en" (declared fr-en) and as "en-de"
(declared en-de), so a fr-de request has no direct model and goes through English. Each of
--concurrency callers takes sentences in turn and, for each, sends in a random order
  - the pivoted request (source fr, target de),
  - the first leg alone (fr-en), then the second leg alone on the first leg's output (en-de,
    one segment, no protected spans: what the server's second leg takes),
over the native JSON API, so the three kinds share one load. Per sentence it records the pivot's
time over the legs' sum, and checks that the pivot's text equals the second leg's.

    bench/pivot_latency_bench.py --model_dir models/en-de-small --concurrency 1,4 \\
        --sentences 120 --out build/bench/pivot

Sentences are the English prose of the repository's docs (--input to give others). Prints a
table and writes OUT/summary.json.
"""
import argparse
import glob
import json
import os
import queue
import random
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from server_variants_bench import Server  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def docs_sentences(limit, seed):
    """Plain sentences of the docs' prose (no code, tables or headings), shuffled."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        in_code = False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                in_code = not in_code
            line = line.strip()
            if in_code or not line or line[0] in "#|-*>" or "`" in line:
                continue
            for s in re.split(r"(?<=[.!?])\s+", line):
                if 4 <= len(s.split()) <= 40 and s[0].isupper():
                    out.append(s)
    random.Random(seed).shuffle(out)
    return out[:limit]


def post(port, body):
    """Seconds and the first text's translation."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.monotonic()
    with urllib.request.urlopen(req, timeout=300) as r:
        answer = json.load(r)
    return time.monotonic() - start, answer["translations"][0].get("text", "")


def run_one(port, sentence, rng):
    """The pivot's seconds, the legs' seconds, whether the texts agree."""
    pivot = {"texts": [sentence], "sourceLanguage": "fr", "targetLanguage": "de"}
    first = {"texts": [sentence], "sourceLanguage": "fr", "targetLanguage": "en"}
    timings = {}
    kinds = ["pivot", "legs"]
    rng.shuffle(kinds)
    for kind in kinds:
        if kind == "pivot":
            timings["pivot"], timings["pivot_text"] = post(port, pivot)
        else:
            t1, english = post(port, first)
            second = {"texts": [english], "sourceLanguage": "en", "targetLanguage": "de",
                      "document": {"splitSentences": False, "protectSpans": False}}
            t2, german = post(port, second)
            timings["legs"], timings["legs_text"] = t1 + t2, german
    return timings["pivot"], timings["legs"], timings["pivot_text"] == timings["legs_text"]


def measure(port, sentences, concurrency, seed):
    work = queue.Queue()
    for s in sentences:
        work.put(s)
    rows, lock = [], threading.Lock()

    def worker(k):
        rng = random.Random(seed * 1000 + k)
        while True:
            try:
                s = work.get_nowait()
            except queue.Empty:
                return
            row = run_one(port, s, rng)
            with lock:
                rows.append(row)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--bin_dir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--input", help="sentences, one per line (default: the docs' prose)")
    ap.add_argument("--sentences", type=int, default=120)
    ap.add_argument("--concurrency", default="1,4")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--flags", default="", help="extra transerve-server flags")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.input:
        sentences = [l.strip() for l in open(args.input, encoding="utf-8") if l.strip()]
        sentences = sentences[:args.sentences]
    else:
        sentences = docs_sentences(args.sentences, args.seed)
    models = tempfile.mkdtemp(prefix="pivot_bench_")
    model = os.path.abspath(args.model_dir)
    os.symlink(model, os.path.join(models, "xx-en"))
    os.symlink(model, os.path.join(models, "en-de"))
    flags = [f"--model_dir={models}/xx-en,{models}/en-de",
             "--model_languages=xx-en=fr-en,en-de=en-de"] + args.flags.split()
    server = Server(args.bin_dir, flags[0].split("=", 1)[1], flags[1:],
                    os.path.join(args.out, "server.log"))
    results = []
    try:
        for s in sentences[:8]:  # warm both models
            run_one(server.http_port, s, random.Random(0))
        for c in [int(x) for x in args.concurrency.split(",")]:
            rows = []
            for r in range(args.rounds):
                rows += measure(server.http_port, sentences, c, args.seed + r)
            pivot = [p for p, _, _ in rows]
            legs = [l for _, l, _ in rows]
            ratio = [p / l for p, l, _ in rows]
            results.append({
                "concurrency": c, "requests": len(rows),
                "same_text": sum(1 for _, _, same in rows if same),
                "pivot_p50_ms": 1000 * pct(pivot, 50), "pivot_p90_ms": 1000 * pct(pivot, 90),
                "legs_p50_ms": 1000 * pct(legs, 50), "legs_p90_ms": 1000 * pct(legs, 90),
                "ratio_median": statistics.median(ratio),
                "ratio_mean_of_sums": sum(pivot) / sum(legs),
            })
    finally:
        server.stop()
    print("| callers | pairs | same text | pivot p50 / p90 ms | legs' sum p50 / p90 ms "
          "| pivot / sum (median) | total pivot / total sum |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['concurrency']} | {r['requests']} | {r['same_text']} "
              f"| {r['pivot_p50_ms']:.0f} / {r['pivot_p90_ms']:.0f} "
              f"| {r['legs_p50_ms']:.0f} / {r['legs_p90_ms']:.0f} "
              f"| {r['ratio_median']:.2f} | {r['ratio_mean_of_sums']:.2f} |")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"model_dir": args.model_dir, "flags": args.flags, "results": results}, f,
                  indent=1)


if __name__ == "__main__":
    main()
