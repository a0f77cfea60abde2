#!/usr/bin/env python3
"""One table of transerve's weight formats against CTranslate2's best configurations.

Reads the summary.json of an interleaved transerve/CTranslate2 run (bench/ctranslate2_bench.sh)
and prints, per cell, the median target tokens/s of transerve float32, bfloat16 and int8 (each
the best of the configurations run: 2 threads, 1 thread, or N replicas of 1 thread, written
"2x1" like CTranslate2's workers), CTranslate2's best float32 and int8 (of 1 thread, 2 threads
and 2 workers), and the ratios the targets are stated in (BENCHMARKS.md):
int8 / CT2 int8, bfloat16 / CT2 int8, float32 / CT2 float32.

  bench/summarize_ctranslate2.py SUMMARY_JSON [--md OUT.md] [--json OUT.json]
"""

import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary")
    ap.add_argument("--md")
    ap.add_argument("--json")
    a = ap.parse_args()
    with open(a.summary, encoding="utf-8") as f:
        s = json.load(f)

    def ours(cell, dtype):
        """(tok/s, configuration) of the best transerve variant with this dtype."""
        best = (None, None)
        for engine, v in cell["median_tok_s"].items():
            if not engine.startswith("transerve") or v is None:
                continue
            flags = engine[len("transerve"):].strip()
            d, threads, replicas = "float32", "2", "1"
            for f in flags.split():
                if f.startswith("--dtype="):
                    d = f.split("=", 1)[1]
                elif f.startswith("--threads="):
                    threads = f.split("=", 1)[1]
                elif f.startswith("--replicas="):
                    replicas = f.split("=", 1)[1]
            if replicas != "1":
                conf = f"{replicas}x{threads}"
            else:
                conf = "1 thread" if threads == "1" else f"{threads} threads"
            if d == dtype and (best[0] is None or v > best[0]):
                best = (v, conf)
        return best

    rows, out = [], []
    head = ("| cell | ours f32 | ours bf16 | ours int8 | CT2 f32 (best) | CT2 int8 (best) "
            "| int8 / CT2 int8 | bf16 / CT2 int8 | f32 / CT2 f32 |")
    rows += [head, "|---" * 9 + "|"]
    for c in s["cells"]:
        f32, _ = ours(c, "float32")
        bf16, bf16_conf = ours(c, "bfloat16")
        i8, i8_conf = ours(c, "int8")
        cf, ci = c["best_ct2_fp32"], c["best_ct2_int8"]

        def ratio(x, y):
            return x / y if x and y else None

        r = {"search": c["search"], "batch": c["batch"], "float32": f32, "bfloat16": bf16,
             "int8": i8, "int8_configuration": i8_conf,
             "bfloat16_configuration": bf16_conf,
             "ct2_float32": cf["tok_s"], "ct2_float32_engine": cf["engine"],
             "ct2_int8": ci["tok_s"], "ct2_int8_engine": ci["engine"],
             "int8_vs_ct2_int8": ratio(i8, ci["tok_s"]),
             "bfloat16_vs_ct2_int8": ratio(bf16, ci["tok_s"]),
             "float32_vs_ct2_float32": ratio(f32, cf["tok_s"])}
        out.append(r)

        def n(v):
            return "-" if v is None else f"{v:,.0f}"

        def x(v):
            return "-" if v is None else f"{v:.2f}x"

        rows.append(f"| b{r['batch']} {r['search']} | {n(f32)} | {n(bf16)} ({bf16_conf}) | {n(i8)} ({i8_conf}) "
                    f"| {n(cf['tok_s'])} ({cf['engine']}) | {n(ci['tok_s'])} ({ci['engine']}) "
                    f"| {x(r['int8_vs_ct2_int8'])} | {x(r['bfloat16_vs_ct2_int8'])} "
                    f"| {x(r['float32_vs_ct2_float32'])} |")
    rss = s.get("peak_rss_mb", {})
    rows += ["", "Peak RSS (MB): " + "; ".join(
        f"{e} b1 greedy {v.get('b1 greedy') or 0:.0f}, b32 beam4 {v.get('b32 beam4') or 0:.0f}"
        for e, v in rss.items())]
    text = "\n".join(rows) + "\n"
    print(text, end="")
    if a.md:
        with open(a.md, "w", encoding="utf-8") as f:
            f.write(text)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"cells": out, "peak_rss_mb": rss}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
