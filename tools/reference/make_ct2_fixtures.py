#!/usr/bin/env python3
"""Builds the golden CTranslate2 fixtures: tests/fixtures/ct2/<variant>/{model/, expected.json}.

  /usr/bin/python3 tools/reference/make_ct2_fixtures.py [--variants a,b] [--check]

Each variant is a random TransformerSpec directory (make_random_ct2_model.py, fixed flags below)
and the reference's (ct2_reference.py) greedy and beam-4 results for 8 random sources, one
sentence at a time, max_length 24, length penalty 1. Sources are random ids of the source
vocabulary (specials excluded) of varied lengths, each ending with the source eos id.

A model seed is accepted (else the next one is tried, from the variant's first seed) when 8
candidate sources pass the robustness checks of make_fixtures.py (greedy margins >= 1e-3, beam
decision margins >= 1e-4, the same ids in float64 and with 1e-5 relative logit noise), the
8 results decoded as one right-padded batch equal the unbatched ones, the KV-cache decoder equals
a full decoder pass, and the outputs are varied: no greedy output is EOS alone, greedy outputs
have at least 3 distinct lengths, at least 2 end by EOS and 2 reach max_length, at least 6 of
the 8 differ. --check rebuilds in a temporary directory and compares with the committed files.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import platform
import shutil
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ct2_reference as cr  # noqa: E402
import make_fixtures as mf  # noqa: E402  (robustness checks shared with the Marian fixtures)
import make_random_ct2_model as mk  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "ct2")
MAX_LENGTH = 24
BEAM = 4
N_CASES = 8
N_CANDIDATES = 80

_MARIAN = ["--d_model", "32", "--heads", "2", "--ffn", "64", "--encoder_layers", "2",
           "--decoder_layers", "2", "--activation", "swish", "--positions", "stored",
           "--position_rows", "64", "--start_from_zero_embedding", "--shared_vocab",
           "--share_embeddings", "--tied_projection", "--vocab_style", "marian",
           "--source_vocab", "90", "--decoder_start_token", "</s>",
           "--scale_embeddings", "5.656854249492381", "--eos_bias", "4"]
_OPENNMT = ["--d_model", "32", "--heads", "4", "--ffn", "64", "--encoder_layers", "2",
            "--decoder_layers", "2", "--pre_norm", "--activation", "relu",
            "--positions", "generated", "--vocab_style", "opennmt", "--vocab_format", "txt",
            "--source_vocab", "72", "--target_vocab", "100", "--biases", "some",
            "--decoder_start_token", "<s>", "--eos_bias", "3"]

# name -> (first seed, make_random_ct2_model flags)
VARIANTS = {
    "marian-like": (1, _MARIAN + ["--dtype", "float32"]),
    "opennmt-like": (1, _OPENNMT + ["--dtype", "float32"]),
    "gelu-layernorm-embedding": (1, [
        "--d_model", "48", "--heads", "2", "--ffn", "96", "--encoder_layers", "2",
        "--decoder_layers", "2", "--pre_norm", "--activation", "gelu", "--layernorm_embedding",
        "--positions", "generated", "--scale_embeddings", "2.5", "--shared_vocab",
        "--tied_projection", "--vocab_style", "opennmt", "--source_vocab", "84",
        "--decoder_start_token", "<s>", "--layer_norm_epsilon", "1e-6", "--eos_bias", "3",
        "--dtype", "float16"]),
    "int8": (11, _OPENNMT + ["--dtype", "int8"]),
    "bfloat16": (11, _MARIAN + ["--dtype", "bfloat16"]),
    # int8 with aliases: the tied projection and the shared encoder table alias
    # decoder/embeddings/weight, whose weight_scale they reach by the `_scale` companion rule
    "marian-int8": (21, _MARIAN + ["--dtype", "int8"]),
}


def candidate_sources(model: cr.Ct2Model, seed: int):
    """Random source ids of varied lengths (1 to 30 words), specials excluded, eos last."""
    c = model.cfg
    st = model.special
    specials = {t for t in (st.unk_token, st.bos_token, st.eos_token, "<blank>", "<pad>")}
    pool = [i for i, t in enumerate(model.src_vocab.tokens) if t not in specials]
    if c.source_eos_id is None:
        raise SystemExit("the source vocabulary has no eos token")
    rng = np.random.default_rng(seed)
    lengths = [1, 2, 3, 5, 8, 12, 17, 23, 30, 4, 6, 10, 14, 20, 26, 7, 9, 11, 15, 19]
    out = []
    for k in range(N_CANDIDATES):
        n = lengths[k % len(lengths)]
        out.append([int(x) for x in rng.choice(pool, size=n)] + [c.source_eos_id])
    return out


def top_logits(logits_steps, k=5):
    out = []
    for step in logits_steps:
        t = torch.tensor(step)
        vals, idx = torch.topk(t, k)
        out.append({"ids": idx.tolist(), "logits": [mf.f9(v) for v in vals.tolist()]})
    return out


def try_seed(name: str, flags, seed: int, model_dir: str):
    args = mk.parse_args(["--out", model_dir, "--seed", str(seed)] + flags)
    mk.write_model(args)
    model = cr.Ct2Model(model_dir)
    srcs = candidate_sources(model, 1000 + seed)
    N = MAX_LENGTH
    with torch.inference_mode():
        greedy, beam, gm, bm = mf.run_unbatched(model, srcs, N)
    keep = [i for i in range(len(srcs)) if gm[i] >= 1e-3 and bm[i] >= 1e-4
            and len(greedy[i]["ids"]) > 1]
    with torch.inference_mode():
        keep = mf.robust_cases(model, srcs, greedy, beam, keep, N, 1e-5)
    # varied outputs: take cases in candidate order, but at most 5 at max_length / 5 natural
    chosen, n_nat, n_max = [], 0, 0
    for i in keep:
        natural = len(greedy[i]["ids"]) < N
        if (natural and n_nat >= N_CASES - 3) or (not natural and n_max >= N_CASES - 3):
            continue
        chosen.append(i)
        n_nat += natural
        n_max += not natural
        if len(chosen) == N_CASES:
            break
    if len(chosen) < N_CASES:
        return None, f"only {len(chosen)} robust cases (of {len(keep)} passing)"
    lens = {len(greedy[i]["ids"]) for i in chosen}
    distinct = {tuple(greedy[i]["ids"]) for i in chosen}
    if len(lens) < 3 or n_nat < 2 or n_max < 2 or len(distinct) < 6:
        return None, (f"outputs not varied enough: lengths {sorted(lens)}, natural {n_nat}, "
                      f"max_length {n_max}, distinct {len(distinct)}")
    with torch.inference_mode():
        ok, msg = mf.check_batch_invariance(model, [srcs[i] for i in chosen],
                                            [greedy[i] for i in chosen],
                                            [beam[i] for i in chosen], N, batch=N_CASES)
        kv = mf.check_kv_cache(model, srcs, greedy, chosen)
    if not ok:
        return None, msg
    if kv > 1e-5:
        return None, f"KV-cache decoder differs from the full decoder by {kv}"
    c = model.cfg
    with torch.inference_mode():
        ct2 = {i: cr.ct2_beam_search(model, srcs[i], BEAM, N, 1.0, 0, BEAM) for i in chosen}
    cases = []
    for i in chosen:
        g, b, t = greedy[i], beam[i], ct2[i]
        cases.append({
            "source": srcs[i],
            "greedy": {"ids": g["ids"], "score": mf.f9(g["score"])},
            "beam4": {"ids": b["ids"], "score": mf.f9(b["score"]),
                      "nbest": [{"ids": h["ids"], "score": mf.f9(h["score"])} for h in b["nbest"]]},
            "beam4_ct2": {"ids": t["ids"], "score": mf.f9(t["score"]),
                          "nbest": [{"ids": h["ids"], "score": mf.f9(h["score"])}
                                    for h in t["nbest"]]},
            "greedy_top5": top_logits(g["logits"]),
        })
    d = model.describe()
    expected = {
        "variant": name,
        "generator": (f"tools/reference/make_ct2_fixtures.py + ct2_reference.py; torch "
                      f"{torch.__version__}, numpy {np.__version__}, python "
                      f"{platform.python_version()}; search = marian_reference greedy / "
                      f"HF vectorized beam search (beam4) / CTranslate2's beam rules "
                      f"(beam4_ct2)"),
        "model_seed": seed,
        "model_flags": flags,
        "max_length": N,
        "beam_size": BEAM,
        "length_penalty": 1.0,
        "num_return_sequences": BEAM,
        "target_vocab_size": c.target_vocab_size,
        "source_vocab_size": c.source_vocab_size,
        "eos": c.eos_id,
        "pad": c.pad_id,
        "decoder_start": c.decoder_start_id,
        "decoder_start_token_id": c.decoder_start_token_id,
        "start_from_zero_embedding": model.start_from_zero_embedding,
        "source_eos": c.source_eos_id,
        "layer_norm_epsilon": c.epsilon,
        "stored_dtypes": d["stored_dtypes"],
        "encoder": d["encoder"],
        "decoder": d["decoder"],
        "greedy_margin_min": mf.f9(min(gm[i] for i in chosen)),
        "beam_margin_min": mf.f9(min(bm[i] for i in chosen)),
        # How far each beam4_ct2 winner is above the runner-up it was ranked against.
        "beam4_ct2_rank_margin_min": mf.f9(min(ct2[i]["rank_margin"] for i in chosen)),
        "batch_invariance_checked": True,
        "notes": ("ids are target vocabulary ids; pad = target_vocab_size is the synthetic id "
                  "with logit -inf that the search excludes; decoder_start is the id fed at "
                  "step 0 (pad = a zero row with start_from_zero_embedding); greedy_top5 = the "
                  "5 largest raw logits of the first 3 greedy steps"),
        "cases": cases,
    }
    summary = (f"seed {seed}: greedy lengths {[len(greedy[i]['ids']) for i in chosen]}, "
               f"beam lengths {[len(beam[i]['ids']) for i in chosen]}; {msg}; kv {kv:.2g}")
    return expected, summary


def build(name: str, out_root: str) -> str:
    first_seed, flags = VARIANTS[name]
    torch.set_num_threads(1)
    for seed in range(first_seed, first_seed + 30):
        tmp = tempfile.mkdtemp(prefix="ct2-fixture-")
        model_dir = os.path.join(tmp, "model")
        expected, msg = try_seed(name, flags, seed, model_dir)
        if expected is None:
            print(f"{name}: seed {seed} rejected: {msg}", file=sys.stderr)
            shutil.rmtree(tmp)
            continue
        print(f"{name}: {msg}", file=sys.stderr)
        out = os.path.join(out_root, name)
        if os.path.exists(out):
            shutil.rmtree(out)
        os.makedirs(out)
        shutil.move(model_dir, os.path.join(out, "model"))
        shutil.rmtree(tmp)
        with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
            f.write(mf.dumps_compact(expected) + "\n")
        return out
    raise SystemExit(f"{name}: no seed passed the checks")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--check", action="store_true",
                    help="rebuild into a temporary directory and compare with the committed files")
    args = ap.parse_args()
    names = [n for n in args.variants.split(",") if n]
    for n in names:
        if n not in VARIANTS:
            raise SystemExit(f"unknown variant {n}; known: {', '.join(VARIANTS)}")
    root = tempfile.mkdtemp(prefix="ct2-fixtures-") if args.check else FIXTURES
    os.makedirs(root, exist_ok=True)
    bad = []
    for n in names:
        out = build(n, root)
        if args.check:
            ref = os.path.join(FIXTURES, n)
            for rel in ["expected.json"] + [os.path.join("model", f) for f in
                                            sorted(os.listdir(os.path.join(out, "model")))]:
                a, b = os.path.join(out, rel), os.path.join(ref, rel)
                if not os.path.exists(b) or not filecmp.cmp(a, b, shallow=False):
                    bad.append(f"{n}/{rel}")
    if args.check:
        shutil.rmtree(root)
        if bad:
            print("differ from the committed fixtures: " + ", ".join(bad), file=sys.stderr)
            return 1
        print("the committed fixtures are reproduced byte for byte", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
