#!/usr/bin/env python3
"""Load time and peak memory of the same CTranslate2 model directories in CTranslate2 and in
transerve, in interleaved rounds (each load its own process, so page cache and allocator start
alike; the directory's file is read once before the first round, so every load finds it cached).

CTranslate2 side: `ctranslate2.Translator(dir, compute_type=...)` from the anchor kit's build
(its Python module under CT2_WORKDIR/pylib-dnnl), timed around the constructor, peak RSS of the
process (the interpreter's own ~30 MB included). transerve side: transerve-engine-bench's own
"loaded (...) in X s ... peak while loading Y MB" line (Translator::Create, timed inside).

  bench/ct2_load_bench.py --ct2_workdir /work/ct2 --dir DIR:float32 --dir DIR8:int8 [--rounds 5]
      [--baseline OTHER_ENGINE_BENCH]   (an earlier transerve-engine-bench, in the same rounds)
  results: build/bench/ct2_load/{summary.md,summary.json}
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

CT2_LOAD = r"""
import resource, sys, time
import ctranslate2
start = time.perf_counter()
ctranslate2.Translator(sys.argv[1], device="cpu", compute_type=sys.argv[2], intra_threads=2)
seconds = time.perf_counter() - start
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

TRANSERVE_LINE = re.compile(
    r"loaded \((\w+)\) in ([0-9.]+) s: resident ([0-9.]+) MB.*peak while loading ([0-9.]+) MB")


def ct2_load(workdir, directory, compute_type):
    env = dict(os.environ, PYTHONPATH=os.path.join(workdir, "pylib-dnnl"), OMP_NUM_THREADS="2")
    out = subprocess.run(["/usr/bin/python3", "-c", CT2_LOAD, directory, compute_type], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def transerve_load(binary, directory, dtype):
    out = subprocess.run([binary, f"--model_dir={directory}", f"--dtype={dtype}", "--batch_sizes=1",
                          "--searches=greedy", "--repeats=1", "--target_length=2"], check=True,
                         capture_output=True, text=True).stdout
    match = TRANSERVE_LINE.search(out)
    if match is None:
        sys.exit(f"no load line from {binary}:\n{out}")
    return float(match.group(2)), float(match.group(4)), float(match.group(3))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--ct2_workdir", required=True, help="the anchor kit's build (build.sh WORKDIR)")
    p.add_argument("--dir", action="append", required=True,
                   help="DIR:TYPE, a CTranslate2 model directory and the type both engines run")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--binary", default="build/bin/transerve-engine-bench")
    p.add_argument("--baseline", help="an earlier transerve-engine-bench, measured alike")
    p.add_argument("--out", default="build/bench/ct2_load")
    args = p.parse_args()
    dirs = [tuple(d.rsplit(":", 1)) for d in args.dir]
    for directory, _ in dirs:
        with open(os.path.join(directory, "model.bin"), "rb") as f:
            while f.read(1 << 24):
                pass
    runs = {d: {"ct2": [], "transerve": [], "baseline": []} for d in dirs}
    for _ in range(args.rounds):
        for directory, kind in dirs:
            runs[(directory, kind)]["ct2"].append(ct2_load(args.ct2_workdir, directory, kind))
            runs[(directory, kind)]["transerve"].append(transerve_load(args.binary, directory, kind))
            if args.baseline:
                runs[(directory, kind)]["baseline"].append(
                    transerve_load(args.baseline, directory, kind))
    rows = []
    for (directory, kind), r in runs.items():
        ct2_s = statistics.median(x[0] for x in r["ct2"])
        ours_s = statistics.median(x[0] for x in r["transerve"])
        rows.append({"dir": directory, "type": kind, "ct2_load_s": ct2_s, "transerve_load_s": ours_s,
                     "ct2_peak_mb": max(x[1] for x in r["ct2"]),
                     "transerve_peak_mb": max(x[1] for x in r["transerve"]),
                     "transerve_resident_mb": statistics.median(x[2] for x in r["transerve"]),
                     "baseline_load_s": statistics.median(x[0] for x in r["baseline"])
                     if r["baseline"] else None,
                     "baseline_peak_mb": max(x[1] for x in r["baseline"]) if r["baseline"] else None,
                     "runs": r})
    os.makedirs(args.out, exist_ok=True)
    lines = ["| directory | type | CT2 load | transerve load | ratio (transerve / CT2) | CT2 peak RSS |"
             " transerve peak while loading | transerve resident after load |"
             + (" baseline load | baseline peak while loading |" if args.baseline else ""),
             "|---|---|---|---|---|---|---|---|" + ("---|---|" if args.baseline else "")]
    for row in rows:
        lines.append(f"| {os.path.basename(row['dir'])} | {row['type']} | {row['ct2_load_s']:.3f} s |"
                     f" {row['transerve_load_s']:.3f} s |"
                     f" {row['transerve_load_s'] / row['ct2_load_s']:.2f} |"
                     f" {row['ct2_peak_mb']:.0f} MB | {row['transerve_peak_mb']:.0f} MB |"
                     f" {row['transerve_resident_mb']:.0f} MB |"
                     + (f" {row['baseline_load_s']:.3f} s | {row['baseline_peak_mb']:.0f} MB |"
                        if args.baseline else ""))
    table = "\n".join(lines)
    print(f"{args.rounds} interleaved rounds, medians\n{table}")
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
