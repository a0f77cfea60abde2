#!/usr/bin/python3
"""Cross-checks ct2_reference.py against CTranslate2 itself on the CTranslate2 fixtures.

Needs the anchor kit's CTranslate2 build (its `ct2-translator` client and libctranslate2.so);
a one-off check, never a build or test dependency:

  /usr/bin/python3 tools/reference/ct2_translator_probe.py [--ct2 /work/ct2/install-dnnl]
      [--fixtures tests/fixtures/ct2]

For each fixture (compute type float32, one thread, batch size 1):
1. `--task score` on each case's greedy output: CTranslate2's per-token log-probabilities (EOS
   included) against the reference's (log_softmax over the V real tokens); the largest absolute
   difference is reported and must be below --tolerance;
2. greedy translation (`--beam_size 1 --max_decoding_length 24`): CTranslate2's tokens must be
   the reference's greedy ids without the final EOS (for an output that reached max_length, the
   first 23 tokens: the reference forces EOS at step 24, CTranslate2 stops there without one).
Then (unless --no_random) random directories of other layouts (make_random_ct2_model.py:
gelu_tanh, unscaled embeddings, no biases, int16 / int8_float16 / bfloat16 storage, binary
versions 5 and 4 with the special tokens as attributes, ...) are scored the same way on random
source/target pairs.
Beam search is not compared: CTranslate2's beam search is not Hugging Face's (the engine and the
reference follow Hugging Face), so beam outputs may differ legitimately; the count of equal top
hypotheses is printed for information only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ct2_reference as cr  # noqa: E402
import make_random_ct2_model as mk  # noqa: E402

_SMALL = ["--d_model", "24", "--heads", "3", "--ffn", "40", "--encoder_layers", "2",
          "--decoder_layers", "2", "--source_vocab", "40", "--target_vocab", "44"]
RANDOM_LAYOUTS = [
    ("post-norm gelu_tanh, unscaled, no biases, layernorm_embedding",
     ["--activation", "gelu_tanh", "--scale_embeddings", "false", "--biases", "none",
      "--no_projection_bias", "--layernorm_embedding"]),
    ("pre-norm swish, stored positions, zero start, shared+tied, int16",
     ["--pre_norm", "--activation", "swish", "--positions", "stored", "--start_from_zero_embedding",
      "--shared_vocab", "--share_embeddings", "--tied_projection", "--vocab_style", "marian",
      "--decoder_start_token", "</s>", "--dtype", "int16"]),
    ("pre-norm gelu, float scale, eps 1e-6, int8_float16, txt vocabularies",
     ["--pre_norm", "--activation", "gelu", "--scale_embeddings", "3.25",
      "--layer_norm_epsilon", "1e-6", "--dtype", "int8_float16", "--vocab_format", "txt",
      "--biases", "some"]),
    ("post-norm relu, bfloat16, binary version 5 (special tokens as attributes)",
     ["--dtype", "bfloat16", "--binary_version", "5"]),
    ("pre-norm relu, float32, binary version 4, tied projection",
     ["--pre_norm", "--binary_version", "4", "--shared_vocab", "--tied_projection"]),
]


def _old_version_tokens(model_dir: str, version: int) -> None:
    """Binary versions below 6 keep the special tokens as int8 byte-vector attributes."""
    b = cr.read_model_bin(os.path.join(model_dir, "model.bin"))
    vs = {n: mk.Var(v.dtype, v.array.reshape(v.shape)) for n, v in b.variables.items()}
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    for key in ("unk_token", "bos_token", "eos_token"):
        vs[key] = mk.Var("int8", np.frombuffer(cfg[key].encode(), dtype=np.int8).copy())
    mk.write_model_bin(os.path.join(model_dir, "model.bin"), sorted(vs.items()),
                       sorted(b.aliases.items()), revision=b.revision, version=version)

ROOT = os.path.dirname(os.path.dirname(HERE))


def run(args, ct2: str, model_dir: str, extra, src: str, tgt: str = None) -> list:
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(ct2, "lib"))
    with tempfile.TemporaryDirectory() as tmp:
        sp = os.path.join(tmp, "src.txt")
        with open(sp, "w", encoding="utf-8") as f:
            f.write(src)
        cmd = [os.path.join(ct2, "bin", "ct2-translator"), "--model", model_dir, "--src", sp,
               "--compute_type", "float32", "--intra_threads", "1", "--batch_size", "1"] + extra
        if tgt is not None:
            tp = os.path.join(tmp, "tgt.txt")
            with open(tp, "w", encoding="utf-8") as f:
                f.write(tgt)
            cmd += ["--tgt", tp]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(f"ct2-translator failed: {out.stderr[-2000:]}")
    return out.stdout.rstrip("\n").split("\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ct2", default="/work/ct2/install-dnnl",
                    help="CTranslate2 install prefix (bin/ct2-translator, lib/libctranslate2.so)")
    ap.add_argument("--fixtures", default=os.path.join(ROOT, "tests", "fixtures", "ct2"))
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("--no_random", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    bad = 0
    for name in sorted(os.listdir(args.fixtures)):
        d = os.path.join(args.fixtures, name)
        if not os.path.exists(os.path.join(d, "expected.json")):
            continue
        with open(os.path.join(d, "expected.json"), encoding="utf-8") as f:
            exp = json.load(f)
        model_dir = os.path.join(d, "model")
        m = cr.Ct2Model(model_dir)
        eos, N = exp["eos"], exp["max_length"]
        cases = exp["cases"]
        src = "".join(" ".join(m.src_vocab.tokens[i] for i in c["source"]) + "\n" for c in cases)
        # 1. per-token log-probabilities of the greedy outputs
        tgt = "".join(" ".join(m.tgt_vocab.tokens[i] for i in c["greedy"]["ids"] if i != eos) + "\n"
                      for c in cases)
        lines = run(args, args.ct2, model_dir, ["--task", "score", "--with_tokens_score"], src, tgt)
        worst = 0.0
        for c, line in zip(cases, lines):
            theirs = [float(x) for x in line.split(" ||| ")[-1].split()]
            ids = [i for i in c["greedy"]["ids"] if i != eos] + [eos]
            with torch.inference_mode():
                enc, mask = m.encode([c["source"]])
                logits = m.decoder_full(enc, mask, torch.tensor([[m.cfg.decoder_start_id] + ids[:-1]]))[0]
                lp = torch.log_softmax(logits[:, :-1].double(), dim=-1)
            ours = [float(lp[k, t]) for k, t in enumerate(ids)]
            if len(ours) != len(theirs):
                worst = float("inf")
                continue
            worst = max(worst, max(abs(a - b) for a, b in zip(ours, theirs)))
        # 2. greedy ids; 3. beam-4 top hypotheses (information only)
        agree = {}
        for beam, key in ((1, "greedy"), (4, "beam4")):
            out = run(args, args.ct2, model_dir,
                      ["--beam_size", str(beam), "--max_decoding_length", str(N)], src)
            n = 0
            for c, line in zip(cases, out):
                got = [m.tgt_vocab.lookup(t) for t in line.split()]
                want = c[key]["ids"]
                if len(want) == N and want[-1] == eos and len(got) == N:
                    n += got[:N - 1] == want[:N - 1]
                else:
                    n += got == [i for i in want if i != eos]
            agree[key] = n
        ok = worst < args.tolerance and agree["greedy"] == len(cases)
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: per-token log-prob max |diff| {worst:.2g}; greedy ids "
              f"{agree['greedy']}/{len(cases)} equal; beam-4 top hypothesis {agree['beam4']}/"
              f"{len(cases)} equal (CTranslate2's beam search differs from Hugging Face's)")
    if not args.no_random:
        bad += random_layouts(args)
    return 1 if bad else 0


def score_worst(args, m: cr.Ct2Model, model_dir: str, pairs) -> float:
    eos = m.cfg.eos_id
    src = "".join(" ".join(m.src_vocab.tokens[i] for i in s) + "\n" for s, _ in pairs)
    tgt = "".join(" ".join(m.tgt_vocab.tokens[i] for i in t) + "\n" for _, t in pairs)
    lines = run(args, args.ct2, model_dir, ["--task", "score", "--with_tokens_score"], src, tgt)
    worst = 0.0
    for (s, t), line in zip(pairs, lines):
        theirs = [float(x) for x in line.split(" ||| ")[-1].split()]
        ids = list(t) + [eos]
        with torch.inference_mode():
            enc, mask = m.encode([s])
            logits = m.decoder_full(enc, mask, torch.tensor([[m.cfg.decoder_start_id] + ids[:-1]]))[0]
            lp = torch.log_softmax(logits[:, :-1].double(), dim=-1)
        ours = [float(lp[k, i]) for k, i in enumerate(ids)]
        if len(ours) != len(theirs):
            return float("inf")
        worst = max(worst, max(abs(a - b) for a, b in zip(ours, theirs)))
    return worst


def random_layouts(args) -> int:
    bad = 0
    rng = np.random.default_rng(0)
    for what, flags in RANDOM_LAYOUTS:
        with tempfile.TemporaryDirectory() as tmp:
            md = os.path.join(tmp, "model")
            version = 6
            if "--binary_version" in flags:
                version = int(flags[flags.index("--binary_version") + 1])
                flags = [f for f in flags if f not in ("--binary_version", str(version))]
            import contextlib
            import io
            with contextlib.redirect_stderr(io.StringIO()):
                mk.write_model(mk.parse_args(["--out", md, "--seed", "3"] + _SMALL + flags))
            if version != 6:
                _old_version_tokens(md, version)
                os.remove(os.path.join(md, "config.json"))
            m = cr.Ct2Model(md)
            specials = {m.special.unk_token, m.special.bos_token, m.special.eos_token, "<blank>"}
            sp = [i for i, t in enumerate(m.src_vocab.tokens) if t not in specials]
            tp = [i for i, t in enumerate(m.tgt_vocab.tokens) if t not in specials]
            pairs = [([int(x) for x in rng.choice(sp, int(rng.integers(1, 15)))],
                      [int(x) for x in rng.choice(tp, int(rng.integers(1, 15)))]) for _ in range(6)]
            worst = score_worst(args, m, md, pairs)
        ok = worst < args.tolerance
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} random {what}: per-token log-prob max |diff| {worst:.2g}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
