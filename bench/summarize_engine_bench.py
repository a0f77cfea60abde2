#!/usr/bin/env python3
"""Merges the per-run JSON files of bench/engine_bench.sh into one table (median over rounds)
with the transerve / PyTorch ratio, and writes summary.json beside them."""
import glob
import json
import os
import statistics
import sys


def load(out_dir, engine):
    """Results by (batch, search), and the per-process fields of every run."""
    runs = {}
    processes = []
    for path in sorted(glob.glob(os.path.join(out_dir, f"{engine}_*.json"))):
        with open(path) as f:
            data = json.load(f)
        for r in data["results"]:
            runs.setdefault((r["batch"], r["search"]), []).append(r)
        processes.append(data)
    return runs, processes


def main():
    out_dir = sys.argv[1]
    ours, ours_processes = load(out_dir, "transerve")
    ref, ref_processes = load(out_dir, "reference")
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
    # Peak and encoder efficiency are measured in every transerve process: report their medians.
    peak = statistics.median(p["sgemm_peak_gflops"] for p in ours_processes)
    enc = statistics.median(p["encoder_gemm_gflops"] for p in ours_processes)
    fraction = statistics.median(p["encoder_gemm_fraction_of_peak"] for p in ours_processes)
    rss = {(p["results"][0]["batch"], p["results"][0]["search"]): p["peak_rss_bytes"] for p in ours_processes}
    info = ours_processes[-1]
    print(f"\nsgemm peak (2048^3) median {peak:.0f} GFLOP/s over {len(ours_processes)} processes "
          f"({info.get('threads')} threads, {info.get('blas')}); encoder GEMMs at batch 32: median "
          f"{enc:.0f} GFLOP/s, {100 * fraction:.0f}% of the peak measured in the same process.")
    print("peak RSS (MB): " + ", ".join(f"batch {b} {s}: {v / 1e6:.0f}" for (b, s), v in sorted(rss.items())))
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"rows": rows, "sgemm_peak_gflops": peak, "encoder_gemm_gflops": enc,
                   "encoder_gemm_fraction_of_peak": fraction,
                   "reference": {k: v for k, v in ref_processes[-1].items() if k != "results"}},
                  f, indent=2)


if __name__ == "__main__":
    main()
