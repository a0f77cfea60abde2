#!/usr/bin/env python3
"""PyTorch half of the engine benchmark: the reference Marian implementation
(tools/reference/marian_reference.py, float32, eager PyTorch) timed end to end (encoder +
decoding) on random sources with a forced target length.

Model: a random opus-mt-shaped checkpoint (d_model 512, 6+6 layers, 8 heads, FFN 2048, vocab
58101, swish), e.g.

  /usr/bin/python3 tools/reference/make_random_model.py --out build/bench-model --vocab 58101 \
      --d_model 512 --encoder_layers 6 --decoder_layers 6 --heads 8 --ffn 2048 \
      --activation swish --max_position_embeddings 512 --dtype f32 --seed 1

Run:

  /usr/bin/python3 bench/reference_bench.py --model_dir build/bench-model --batch_sizes 1,8,32 \
      --search greedy,beam4 --source_length 25 --target_length 32 --repeats 3 \
      --write_sources build/bench-sources.json --json build/reference-bench.json

Sources: `--source_length` counts the ids of one source INCLUDING the final EOS (so 24 random
ids drawn uniformly from the vocabulary without pad and EOS, then EOS). One list of
max(batch_sizes) sources is drawn (seeded by --seed); a batch of size B takes the first B.
`--write_sources FILE` saves them and `--source_ids_file FILE` reads them back, so the C++
benchmark can run on exactly the same inputs. File format (JSON):

  {"sources": [[id, ..., eos], ...], "source_length": 25, "seed": 1234, "vocab_size": 58101}

only "sources" is required when reading (a bare JSON list of lists is accepted too); a batch of
B uses sources[0:B] (cycling if the file holds fewer than B). Ids are used as given (no EOS is
appended).

Decoding: forced length = min_length = max_length = --target_length: every hypothesis has
exactly that many tokens (EOS last). Target tokens per run = batch x target_length (for beam
search: the returned best hypotheses, batch x target_length). Reported tokens/s uses the median
of --repeats timed runs; runs are interleaved across configurations after one warm-up run each.

Threading ("best setting" on the 2-core development VM, docs/performance.md):
torch.set_num_threads(1) for PyTorch's own (OpenMP) intra-op pool, while OpenBLAS (Debian's
pthread build, used by PyTorch for every GEMM) keeps its own 2 threads. Measured on this VM
(batch 8 greedy, target 32, interleaved processes, a shared and busy machine): 1 torch thread
with OMP_WAIT_POLICY=ACTIVE 176-178 tok/s, 1 thread PASSIVE 154, 1 thread unset 148-163,
2 threads PASSIVE 139-146, 2 threads ACTIVE 17-44 (the OpenMP spin pathology); at batch 1 the
policy made no consistent difference. The script therefore sets OMP_WAIT_POLICY=ACTIVE unless
the caller set it, and --threads defaults to 1. OPENBLAS_NUM_THREADS is left to the caller
(unset = both cores); when another process occupies a core, OPENBLAS_NUM_THREADS=1 can be
faster. The output projection uses a contiguous [d_model, vocab] copy of the weight (2x faster
than x @ W^T with OpenBLAS at batch 1; see marian_reference.py).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")  # must precede the OpenMP runtime start

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
import marian_reference as mr  # noqa: E402


def make_sources(cfg: mr.MarianConfig, count: int, length: int, seed: int):
    if length < 1:
        raise SystemExit("--source_length must be >= 1 (it includes EOS)")
    if length > cfg.max_positions:
        raise SystemExit("--source_length exceeds max_position_embeddings")
    rng = np.random.default_rng(seed)
    allowed = np.array([i for i in range(cfg.vocab_size) if i not in (cfg.pad_id, cfg.eos_id)])
    return [[int(x) for x in rng.choice(allowed, size=length - 1)] + [cfg.eos_id]
            for _ in range(count)]


def run_once(model: mr.MarianModel, srcs, search: str, target_length: int) -> float:
    t0 = time.perf_counter()
    with torch.inference_mode():
        if search == "greedy":
            res = mr.greedy_search(model, srcs, target_length, min_length=target_length)
        else:
            beams = int(search[len("beam"):])
            res = mr.beam_search(model, srcs, beams, target_length, target_length, 1.0, 1)
    dt = time.perf_counter() - t0
    if any(len(r["ids"]) != target_length for r in res):
        raise RuntimeError("forced length not respected")
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description="PyTorch reference throughput (target tokens/s)")
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--batch_sizes", default="1,8,32")
    ap.add_argument("--search", default="greedy,beam4", help="comma list: greedy, beamN")
    ap.add_argument("--source_length", type=int, default=25, help="ids per source incl. EOS")
    ap.add_argument("--target_length", type=int, default=32, help="forced output length")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--source_ids_file", help='read {"sources": [[ids...], ...]}')
    ap.add_argument("--write_sources", help="write the sources used to this JSON file")
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    batch_sizes = [int(x) for x in args.batch_sizes.split(",") if x]
    searches = [s.strip() for s in args.search.split(",") if s.strip()]
    for s in searches:
        if s != "greedy" and not (s.startswith("beam") and s[4:].isdigit()):
            raise SystemExit(f"unknown search {s!r}")
    t_load = time.perf_counter()
    model = mr.MarianModel(args.model_dir)
    t_load = time.perf_counter() - t_load
    cfg = model.cfg
    if args.source_ids_file:
        with open(args.source_ids_file, encoding="utf-8") as f:
            loaded = json.load(f)
        sources = loaded["sources"] if isinstance(loaded, dict) else loaded  # bare list accepted
        if not sources or not all(isinstance(x, list) and x for x in sources):
            raise SystemExit(f"{args.source_ids_file}: expected {{\"sources\": [[ids...], ...]}}")
    else:
        sources = make_sources(cfg, max(batch_sizes), args.source_length, args.seed)
    if args.write_sources:
        with open(args.write_sources, "w", encoding="utf-8") as f:
            json.dump({"sources": sources, "source_length": len(sources[0]), "seed": args.seed,
                       "vocab_size": cfg.vocab_size}, f)
            f.write("\n")

    def batch(b):
        return [sources[i % len(sources)] for i in range(b)]

    configs = [(b, s) for b in batch_sizes for s in searches]
    print(f"# model {args.model_dir} (loaded in {t_load:.1f} s), torch {torch.__version__}, "
          f"torch threads {torch.get_num_threads()}, OMP_WAIT_POLICY "
          f"{os.environ.get('OMP_WAIT_POLICY')}, OPENBLAS_NUM_THREADS "
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset (all cores)')}", flush=True)
    times = {c: [] for c in configs}
    for c in configs:  # warm-up
        run_once(model, batch(c[0]), c[1], args.target_length)
    for _ in range(args.repeats):
        for c in configs:
            times[c].append(run_once(model, batch(c[0]), c[1], args.target_length))
    results = []
    print(f"{'batch':>5} {'search':>7} {'median s':>9} {'target tok/s':>13} {'source tok/s':>13}")
    for b, s in configs:
        med = statistics.median(times[(b, s)])
        tgt = b * args.target_length
        src_tokens = sum(len(x) for x in batch(b))
        results.append({"batch": b, "search": s, "seconds": med,
                        "all_seconds": times[(b, s)],
                        "target_tokens": tgt,
                        "target_tokens_per_second": tgt / med,
                        "source_tokens_per_second": src_tokens / med})
        print(f"{b:>5} {s:>7} {med:>9.3f} {tgt / med:>13.1f} {src_tokens / med:>13.1f}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"results": results, "torch_version": torch.__version__,
                       "threads": torch.get_num_threads(),
                       "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                       "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                       "model_dir": args.model_dir, "source_length": len(sources[0]),
                       "target_length": args.target_length, "repeats": args.repeats,
                       "implementation": "tools/reference/marian_reference.py (float32, eager)"},
                      f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
