#!/usr/bin/env python3
"""NLLB-200-distilled-600M's shape against CTranslate2, in the CTranslate2 kit's interleaved run.

    bench/nllb_vs_ctranslate2.py --kit ../shared/anchors/ctranslate2 --workdir /work/ct2 \\
        --out build/bench/nllb600m -- --rounds 1 \\
        --transerve_args=--dtype=float32 --transerve_args=--dtype=int8 \\
        --ct2_variants ct2-dnnl-fp32-t2,ct2-dnnl-int8-t1,ct2-dnnl-int8-t2,ct2-dnnl-int8-2x1

1. Makes the model once, in build/bench/engine/nllb-600m-shape: random weights in the published
   NLLB-200-distilled-600M's dimensions (d_model 1024, 12 + 12 pre-norm layers, 16 heads, FFN
   4096, vocabulary 256,206, 1,024 positions), written by the project's own generator
   (tools/reference/m2m_reference.py). Both families share the architecture (model_type
   m2m_100); its tokenizer files are M2M-100's (a small trained BPE model, and vocab.json naming
   every id), which the kit's run requires, and play no part: both engines get the same ids.
   Its vmap.txt gives every sentence a shortlist of 4,096 random tokens, for the variant with
   --use_vocabulary_map.
2. Runs the kit's compare.py on it with the kit's conversion (Marian only) replaced by
   tools/reference/m2m_to_ct2.py, which writes what CTranslate2's converter writes for these
   models. Everything after `--` goes to compare.py (its --transerve_bench and --model_dir are
   given here). The kit stays as it is: it is imported, not changed.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
REF = os.path.join(ROOT, "tools", "reference")
SHAPE = dict(d_model=1024, layers=12, heads=16, ffn=4096, vocab=256206, max_positions=1024)
VMAP_TOKENS = 4096


def make_model(out, seed):
    if os.path.exists(os.path.join(out, "model.safetensors")):
        return
    sys.path.insert(0, REF)
    import m2m_reference as m2m  # noqa: E402
    import m2m_tokenizer_reference as tr  # noqa: E402
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    t = time.time()
    tr.make_tokenizer(tmp, "m2m100", seed)
    m2m.make_random_checkpoint(tmp, seed, **SHAPE)
    # Every id a piece of its own (the trained pieces, then made-up ones up to the table's
    # rows less the language codes), as the published vocabulary names all of its ids: so that
    # a vocabulary map can name any target token.
    with open(os.path.join(tmp, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    codes = len(tr.ReferenceTokenizer(tmp).code_ids)
    for i in range(len(vocab), SHAPE["vocab"] - codes):
        vocab[f"madeupword{i:06d}"] = i
    with open(os.path.join(tmp, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    # A vocabulary map that gives every sentence the same VMAP_TOKENS tokens: the size of the
    # shortlist is what its speed depends on (the random weights have no lexicon to learn one
    # from).
    rng = random.Random(seed)
    pieces = [p for p, i in vocab.items() if i > 3]
    with open(os.path.join(tmp, "vmap.txt"), "w", encoding="utf-8") as f:
        f.write("\t" + " ".join(rng.sample(pieces, VMAP_TOKENS)) + "\n")
    with open(os.path.join(tmp, "config.json")) as f:
        cfg = json.load(f)
    cfg["_name_or_path"] = f"transerve-random-nllb-600m-shape-seed{seed}"
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    os.replace(tmp, out)
    print(f"made {out} in {time.time() - t:.0f} s", flush=True)


def main():
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        rest = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kit", default=os.path.join(ROOT, "..", "shared", "anchors", "ctranslate2"))
    ap.add_argument("--workdir", required=True, help="the kit's build.sh WORKDIR")
    ap.add_argument("--model_dir", default=os.path.join(ROOT, "build", "bench", "engine",
                                                        "nllb-600m-shape"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bin",
                                                    "transerve-engine-bench"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    make_model(os.path.abspath(args.model_dir), args.seed)

    sys.path.insert(0, os.path.abspath(args.kit))
    import compare  # noqa: E402  (the kit's interleaved run)

    def convert(model_dir, dst, quantization, pylib):
        if os.path.exists(os.path.join(dst, "model.bin")):
            return
        tmp = dst + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["nice", "-n", "10", "/usr/bin/python3",
                        os.path.join(REF, "m2m_to_ct2.py"), "--model_dir", model_dir,
                        "--out", tmp, "--quantization", quantization], check=True,
                       stdout=subprocess.DEVNULL)
        os.replace(tmp, dst)

    compare.convert = convert
    sys.argv = ["compare.py", "--transerve_bench", os.path.abspath(args.bench), "--model_dir",
                os.path.abspath(args.model_dir), "--workdir", os.path.abspath(args.workdir),
                "--out", os.path.abspath(args.out)] + rest
    compare.main()


if __name__ == "__main__":
    main()
