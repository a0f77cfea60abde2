#!/usr/bin/env python3
"""BLEU / chrF scoring, and translation of test sets with the C++ engine and the PyTorch reference.

Score a hypothesis file against a reference file (one sentence per line):
  /usr/bin/python3 tools/train/evaluate.py score --hyp hyp.de --ref /work/data/corpus/test.de

Translate test sets with both engines, score them and compare the generated token ids
(`--engines cpp --cpp_dtypes float32,bfloat16,int8` runs the C++ engine once per dtype and
compares each one's ids with the first's):
  /usr/bin/python3 tools/train/evaluate.py run --model_dir models/en-de-small \
      --set test /work/data/corpus/test --engines cpp,reference --beams 1,4 \
      --out_dir /work/data/train/eval --json /work/data/train/eval/results.json

`--set NAME PREFIX` reads PREFIX.en and PREFIX.de. The C++ engine is
`build/bin/transerve-translate --model_dir=D --beam_size=B --output_format=jsonl`; the reference is
tools/reference/marian_reference.py (imported), batch size 1 by default so that its ids are the
unbatched ones. Scores are sacreBLEU-compatible (metrics.py: 13a BLEU, chrF char 6-grams, beta 2).
Exit status 1 when --require_equal_ids is given and some ids differ.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_env  # noqa: E402,F401  (before torch loads OpenBLAS: the reference runs faster)
from metrics import bleu_stats, bleu_from_stats, corpus_chrf  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def read_lines(path, limit=0):
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:limit] if limit else lines


def score(hyps, refs) -> dict:
    b = bleu_from_stats(*bleu_stats(hyps, refs))
    return {"bleu": b["bleu"], "chrf": corpus_chrf(hyps, refs), "bp": b["bp"],
            "precisions": b["precisions"], "sys_len": b["sys_len"], "ref_len": b["ref_len"],
            "lines": len(hyps)}


def run_cpp(binary, model_dir, src_lines, beam, threads, max_length, dtype="float32"):
    cmd = [binary, f"--model_dir={model_dir}", f"--beam_size={beam}", "--output_format=jsonl",
           f"--num_threads={threads}", f"--dtype={dtype}"]
    if max_length:
        cmd.append(f"--max_length={max_length}")
    t0 = time.time()
    p = subprocess.run(cmd, input="\n".join(src_lines) + "\n", capture_output=True, text=True)
    dt = time.time() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    if len(recs) != len(src_lines):
        raise SystemExit(f"C++ engine returned {len(recs)} lines for {len(src_lines)} inputs")
    return recs, dt


def run_reference(model_dir, src_lines, beam, batch_size, max_length):
    import torch
    sys.path.insert(0, os.path.join(HERE, "..", "reference"))
    from marian_reference import Translator

    torch.set_num_threads(1)
    tr = Translator(model_dir)
    c = tr.model.cfg
    t0 = time.time()
    recs = []
    ids = []
    for line in src_lines:
        x = tr.tokenizer.encode(line)
        ids.append(x[:c.max_positions])
    for k in range(0, len(ids), batch_size):
        for r in tr.translate_ids(ids[k:k + batch_size], beam_size=beam, max_length=max_length):
            recs.append({"text": tr.tokenizer.decode(r["ids"]), "ids": r["ids"],
                         "score": r["score"]})
    return recs, time.time() - t0


def cmd_score(args) -> int:
    hyps, refs = read_lines(args.hyp), read_lines(args.ref)
    r = score(hyps, refs)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"BLEU {r['bleu']:.2f} (bp {r['bp']:.3f}, hyp/ref len {r['sys_len']}/{r['ref_len']}) "
              f"chrF {r['chrf']:.2f} on {r['lines']} lines")
    return 0


def cmd_run(args) -> int:
    engines = [e for e in args.engines.split(",") if e]
    # "cpp" once per --cpp_dtypes entry: cpp (float32), cpp-int8, cpp-bfloat16, cpp-auto, ...
    dtypes = [d for d in args.cpp_dtypes.split(",") if d]
    if "cpp" in engines:
        i = engines.index("cpp")
        engines[i:i + 1] = ["cpp" if d == "float32" else f"cpp-{d}" for d in dtypes]
    beams = [int(b) for b in args.beams.split(",") if b]
    os.makedirs(args.out_dir, exist_ok=True)
    binary = args.translate_bin
    if any(e.startswith("cpp") for e in engines) and not os.path.exists(binary):
        raise SystemExit(f"{binary} not found: "
                         f"cmake --build {REPO}/build --target transerve-translate")
    result = {"model_dir": os.path.abspath(args.model_dir), "runs": [], "id_comparisons": []}
    if args.append and args.json and os.path.exists(args.json):
        with open(args.json, encoding="utf-8") as f:
            result = json.load(f)
    failed = False
    for name, prefix in args.set:
        src_all = read_lines(f"{prefix}.{args.src_lang}", args.limit)
        ref_all = read_lines(f"{prefix}.{args.tgt_lang}", args.limit)
        for beam in beams:
            outs = {}
            for engine in engines:
                n = len(src_all)
                if engine == "reference" and args.reference_limit:
                    n = min(n, args.reference_limit)
                src, ref = src_all[:n], ref_all[:n]
                if engine.startswith("cpp"):
                    dtype = engine[len("cpp-"):] if engine != "cpp" else "float32"
                    recs, dt = run_cpp(binary, args.model_dir, src, beam, args.cpp_threads,
                                       args.max_length, dtype)
                elif engine == "reference":
                    recs, dt = run_reference(args.model_dir, src, beam, args.reference_batch_size,
                                             args.max_length or None)
                else:
                    raise SystemExit(f"unknown engine {engine}")
                errors = [i for i, r in enumerate(recs) if "error" in r]
                hyps = [r.get("text", "") for r in recs]
                base = os.path.join(args.out_dir, f"{name}.{engine}.beam{beam}")
                with open(base + ".jsonl", "w", encoding="utf-8") as f:
                    for r in recs:
                        f.write(json.dumps(r, ensure_ascii=False) + "\n")
                with open(base + ".txt", "w", encoding="utf-8") as f:
                    f.write("\n".join(hyps) + "\n")
                s = score(hyps, ref)
                run = {"set": name, "engine": engine, "beam_size": beam, "bleu": s["bleu"],
                       "chrf": s["chrf"], "bp": s["bp"], "lines": n, "errors": len(errors),
                       "seconds": round(dt, 2), "sentences_per_second": n / max(dt, 1e-9),
                       "hyp_file": base + ".txt"}
                result["runs"].append(run)
                outs[engine] = recs
                print(f"{name:10s} {engine:9s} beam {beam}: BLEU {s['bleu']:6.2f} "
                      f"chrF {s['chrf']:6.2f} "
                      f"({n} lines, {dt:.1f}s, {len(errors)} errors)", file=sys.stderr)
            cpp_runs = [e for e in engines if e.startswith("cpp")]
            for other in cpp_runs[1:]:
                # Each further dtype against the first (float32's ids are the baseline).
                first = outs[cpp_runs[0]]
                same = sum(1 for a, b in zip(first, outs[other]) if a.get("ids") == b.get("ids"))
                result["id_comparisons"].append(
                    {"set": name, "beam_size": beam, "lines": len(first), "equal": same,
                     "between": [cpp_runs[0], other]})
                print(f"{name:10s} ids {other} == {cpp_runs[0]}, beam {beam}: {same}/{len(first)}",
                      file=sys.stderr)
            if "cpp" in outs and "reference" in outs:
                n = min(len(outs["cpp"]), len(outs["reference"]))
                diff = [i for i in range(n)
                        if outs["cpp"][i].get("ids") != outs["reference"][i]["ids"]]
                comp = {"set": name, "beam_size": beam, "lines": n, "equal": n - len(diff),
                        "first_mismatches": [
                            {"line": i + 1, "cpp": outs["cpp"][i].get("ids"),
                             "reference": outs["reference"][i]["ids"],
                             "cpp_score": outs["cpp"][i].get("score"),
                             "reference_score": outs["reference"][i]["score"]} for i in diff[:5]]}
                result["id_comparisons"].append(comp)
                failed |= bool(diff)
                print(f"{name:10s} ids cpp == reference, beam {beam}: {n - len(diff)}/{n}"
                      + (f" (first differing lines {[d + 1 for d in diff[:10]]})" if diff else ""),
                      file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2, ensure_ascii=False)
            f.write("\n")
    return 1 if (failed and args.require_equal_ids) else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score", help="score a hypothesis file")
    s.add_argument("--hyp", required=True)
    s.add_argument("--ref", required=True)
    s.add_argument("--json", action="store_true", help="print JSON")
    r = sub.add_parser("run", help="translate test sets with the engines and score them")
    r.add_argument("--model_dir", required=True)
    r.add_argument("--set", nargs=2, action="append", metavar=("NAME", "PREFIX"), required=True)
    r.add_argument("--src_lang", default="en")
    r.add_argument("--tgt_lang", default="de")
    r.add_argument("--engines", default="cpp,reference", help="comma list: cpp, reference")
    r.add_argument("--beams", default="1,4", help="comma list of beam sizes (1 = greedy)")
    r.add_argument("--limit", type=int, default=0, help="first N lines of each set (0 = all)")
    r.add_argument("--reference_limit", type=int, default=0,
                   help="the reference translates only the first N lines (0: all)")
    r.add_argument("--reference_batch_size", type=int, default=1)
    r.add_argument("--max_length", type=int, default=0, help="0 = the model's default")
    r.add_argument("--translate_bin",
                   default=os.path.join(REPO, "build", "bin", "transerve-translate"))
    r.add_argument("--cpp_dtypes", default="float32",
                   help="comma list of --dtype values for the C++ engine, each its own run "
                        "(float32, bfloat16, int8, auto: the engine's default, int8 where the model "
                        "passes its check); further ones are compared with the first")
    r.add_argument("--cpp_threads", type=int, default=0, help="C++ --num_threads (0 = all cores)")
    r.add_argument("--out_dir", required=True, help="hypothesis files go here")
    r.add_argument("--json", help="write all results to this file")
    r.add_argument("--append", action="store_true", help="add to the runs already in --json")
    r.add_argument("--require_equal_ids", action="store_true",
                   help="exit 1 if the engines' ids differ on any line")
    args = ap.parse_args(argv)
    return cmd_score(args) if args.cmd == "score" else cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
