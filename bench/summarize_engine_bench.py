#!/usr/bin/env python3
"""Merges the per-run JSON files of bench/engine_bench.sh into one table (median over rounds)
with the transerve / PyTorch ratio, and writes summary.json beside them."""
import glob
import json
import os
import statistics
import sys


def load(out_dir, engine):
    runs = {}
    extra = {}
    for path in sorted(glob.glob(os.path.join(out_dir, f"{engine}_*.json"))):
        with open(path) as f:
            data = json.load(f)
        for r in data["results"]:
            runs.setdefault((r["batch"], r["search"]), []).append(r)
        extra = data
    return runs, extra


def main():
    out_dir = sys.argv[1]
    ours, ours_info = load(out_dir, "transerve")
    ref, ref_info = load(out_dir, "reference")
    rows = []
    print("| batch | search | transerve tok/s | PyTorch tok/s | ratio | GEMM share | GEMM GFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(ours, key=lambda k: (k[1] != "greedy", k[1], k[0])):
        t = statistics.median(r["target_tokens_per_second"] for r in ours[key])
        p = statistics.median(r["target_tokens_per_second"] for r in ref.get(key, [])) if key in ref else None
        share = statistics.median(r["gemm_share"] for r in ours[key])
        gflops = statistics.median(r["gemm_gflops"] for r in ours[key])
        ratio = t / p if p else None
        rows.append({"batch": key[0], "search": key[1], "transerve_tokens_per_second": t,
                     "reference_tokens_per_second": p, "ratio": ratio, "gemm_share": share,
                     "gemm_gflops": gflops, "rounds": len(ours[key])})
        print(f"| {key[0]} | {key[1]} | {t:.1f} | {p:.1f} | {ratio:.2f}x | {100 * share:.0f}% | {gflops:.0f} |"
              if p else f"| {key[0]} | {key[1]} | {t:.1f} | - | - | {100 * share:.0f}% | {gflops:.0f} |")
    peak = ours_info.get("sgemm_peak_gflops")
    enc = ours_info.get("encoder_gemm_gflops")
    if peak:
        print(f"\nsgemm peak {peak:.0f} GFLOP/s ({ours_info.get('threads')} threads, {ours_info.get('blas')});"
              f" encoder GEMMs at batch 32: {enc:.0f} GFLOP/s = {100 * enc / peak:.0f}% of peak.")
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"rows": rows, "sgemm_peak_gflops": peak, "encoder_gemm_gflops": enc,
                   "reference": {k: v for k, v in ref_info.items() if k != "results"}}, f, indent=2)


if __name__ == "__main__":
    main()
