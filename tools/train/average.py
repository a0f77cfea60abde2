#!/usr/bin/env python3
"""Averages the model weights of the last N training checkpoints (float64 accumulation).

  /usr/bin/python3 tools/train/average.py --ckpt_dir /work/data/train/ckpt --last 5 \
      --out /work/data/train/averaged.pt

The output holds the averaged `model` state dict, the `model_cfg`, `args` and `meta` of the newest
checkpoint, and `averaged_from` (path, step of each input); export.py reads it like a checkpoint.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import list_checkpoints  # noqa: E402


def average(paths):
    acc = None
    newest = None
    for p in paths:
        ck = torch.load(p, map_location="cpu")
        sd = ck["model"]
        if acc is None:
            acc = {k: v.to(torch.float64).clone() for k, v in sd.items()}
            cfg = ck["model_cfg"]
        else:
            if ck["model_cfg"] != cfg or set(sd) != set(acc):
                raise SystemExit(f"{p}: a different model than {paths[0]}")
            for k, v in sd.items():
                acc[k] += v.to(torch.float64)
        newest = ck
    out = {k: (v / len(paths)).to(newest["model"][k].dtype) for k, v in acc.items()}
    return {"model": out, "model_cfg": newest["model_cfg"], "args": newest["args"],
            "meta": newest["meta"],
            "averaged_from": [{"path": p, "step": int(os.path.basename(p)[5:-3])} for p in paths]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt_dir", required=True)
    ap.add_argument("--last", type=int, default=5, help="how many of the newest checkpoints")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    paths = list_checkpoints(args.ckpt_dir)[-args.last:]
    if not paths:
        raise SystemExit(f"no ckpt_*.pt in {args.ckpt_dir}")
    ck = average(paths)
    torch.save(ck, args.out + ".tmp")
    os.replace(args.out + ".tmp", args.out)
    print(f"averaged {len(paths)} checkpoints (steps {[a['step'] for a in ck['averaged_from']]}) "
          f"-> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
