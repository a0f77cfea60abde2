#!/usr/bin/python3
"""transerve beside CTranslate2 on random CTranslate2 directories that CTranslate2 itself wrote.

Each variant is a random-weight TransformerSpec built with CTranslate2's own spec classes
(TransformerSpec.from_config) and saved the way its converters save one (validate, optimize with
the store's quantization, save), with a SentencePiece model trained here (Debian's spm_train, on
the repository's own prose) as its vocabulary. Both engines then translate the same sentences:
CTranslate2's translate_batch on the SentencePiece pieces at its defaults (greedy, then beam 4:
its beam rules, min_decoding_length 1), computing in float32; transerve-translate on the text,
loading the directory directly at its defaults (CTranslate2's), --dtype float32, one line one
sequence, the same max_length (64; under CTranslate2's rules the last token ends a hypothesis as
it is in both engines). The EOS logit gets a bias so that many outputs end before the limit;
the lines that reach it are counted in their own column.

Variants (2 + 2 layers, d_model 64, 4 heads, ffn 128):
  post-norm relu, pre-norm gelu + layernorm_embedding, pre-norm swish with separate (untied)
  projection; each stored as float32 and as float16.

Needs the anchor kit's CTranslate2 build (never a build or test dependency of transerve):
  bench/ct2_random_spec_parity.py --ct2_workdir /work/ct2 [--sentences 200]
      [--out build/bench/ct2_random_spec_parity]
Prints a table and writes OUT/summary.json; exits 1 unless every line agrees.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import ct2_directory_parity as parity  # noqa: E402  (the repository's prose sentences)

D, FFN, HEADS, MAX_LEN = 64, 128, 4, 64

BUILD = r"""
import json, os, sys
import numpy as np
from ctranslate2.specs import common_spec, model_spec, transformer_spec
out, tokens_path, pre_norm, activation, layernorm_embedding, tied, quantization, seed = sys.argv[1:9]
D, FFN, HEADS = %d, %d, %d
tokens = json.load(open(tokens_path))
V = len(tokens)
rng = np.random.default_rng(int(seed))
spec = transformer_spec.TransformerSpec.from_config(
    (2, 2), HEADS, pre_norm=pre_norm == "1",
    activation=getattr(common_spec.Activation, activation),
    layernorm_embedding=layernorm_embedding == "1")
shapes = {"self_attention/linear_0": (3 * D, D), "self_attention/linear_1": (D, D),
          "attention/linear_0": (D, D), "attention/linear_1": (2 * D, D),
          "attention/linear_2": (D, D), "ffn/linear_0": (FFN, D), "ffn/linear_1": (D, FFN)}
def fill(layer, name, value):
    if value is not None:
        return
    attr = name.split("/")[-1]
    where = "/".join(name.split("/")[-3:-1])
    if "embeddings" in name or name.endswith("projection/weight"):
        # Scaled by sqrt(D) at the input, so the logits' spread stays near 1.
        v = rng.standard_normal((V, D)) / np.sqrt(D)
    elif attr == "gamma":
        v = 1 + 0.1 * rng.standard_normal(D)
    elif attr == "beta":
        v = 0.1 * rng.standard_normal(D)
    elif attr == "weight" and where in shapes:
        rows, cols = shapes[where]
        v = rng.standard_normal((rows, cols)) / np.sqrt(cols)
    else:
        return
    setattr(layer, attr, v.astype(np.float32))
    if isinstance(layer, common_spec.LinearSpec):
        layer.bias = (0.1 * rng.standard_normal(v.shape[0])).astype(np.float32)
model_spec.visit_spec(spec, fill)
if tied == "1":
    spec.decoder.projection.weight = spec.decoder.embeddings.weight.copy()
    spec.encoder.embeddings[0].weight = spec.decoder.embeddings.weight.copy()
# Outputs that end: a bias towards EOS.
bias = np.zeros(V, dtype=np.float32) if spec.decoder.projection.bias is None else spec.decoder.projection.bias
bias[tokens.index("</s>")] += float(os.environ.get("EOS_BIAS", "2.0"))
spec.decoder.projection.bias = bias
spec.register_source_vocabulary(tokens)
spec.register_target_vocabulary(tokens)
spec.validate()
spec.optimize(quantization=quantization)
os.makedirs(out, exist_ok=True)
spec.save(out)
""" % (D, FFN, HEADS)

TRANSLATE = r"""
import json, sys
import ctranslate2, sentencepiece as spm
model, spm_path, beam, max_len, lines_path, out_path = sys.argv[1:7]
sp = spm.SentencePieceProcessor(model_file=spm_path)
sources = [sp.encode(l, out_type=str) for l in open(lines_path).read().splitlines()]
tr = ctranslate2.Translator(model, device="cpu", compute_type="float32", intra_threads=2)
res = tr.translate_batch(sources, beam_size=int(beam), max_decoding_length=int(max_len),
                         max_batch_size=32)
vocab = {t: i for i, t in enumerate(json.load(open(model + "/shared_vocabulary.json")))}
json.dump([[vocab[t] for t in r.hypotheses[0]] for r in res], open(out_path, "w"))
"""

VARIANTS = [  # name, pre_norm, activation, layernorm_embedding, tied projection
    ("post-norm-relu", "0", "RELU", "0", "1"),
    ("pre-norm-gelu-lnemb", "1", "GELU", "1", "1"),
    ("pre-norm-swish-untied", "1", "SWISH", "0", "0"),
]


def results_same_at_limit(want, got, at_limit):
    return all(a == b for a, b, lim in zip(want, got, at_limit) if lim)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ct2_workdir", required=True)
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "ct2_random_spec_parity"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(args.ct2_workdir, "pylib-dnnl"),
               OMP_NUM_THREADS="2")
    prose = parity.prose_sentences()
    text_path = os.path.join(args.out, "train.txt")
    open(text_path, "w").write("\n".join(prose) + "\n")
    prefix = os.path.join(args.out, "spm")
    subprocess.run(["spm_train", f"--input={text_path}", f"--model_prefix={prefix}",
                    "--vocab_size=400", "--model_type=unigram", "--character_coverage=1.0",
                    "--minloglevel=2"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    tokens = [l.split("\t")[0] for l in open(prefix + ".vocab", encoding="utf-8")]
    tokens_path = os.path.join(args.out, "tokens.json")
    json.dump(tokens, open(tokens_path, "w"))
    eos = tokens.index("</s>")
    # Sentences the models were not trained on do not matter (random weights): the last ones.
    lines = [l for l in prose[::-1] if not any(t in l for t in parity.SPECIAL_TEXTS)]
    lines = lines[: args.sentences]
    lines_path = os.path.join(args.out, "sources.txt")
    open(lines_path, "w").write("\n".join(lines) + "\n")
    results, all_ok = [], True
    print(f"{'variant':24s} {'store':8s} {'search':7s} {'agree':>9s}  at limit")
    for seed, (name, pre_norm, activation, lnemb, tied) in enumerate(VARIANTS):
        for quantization in ("float32", "float16"):
            model = os.path.join(args.out, f"{name}-{quantization}")
            if not os.path.exists(os.path.join(model, "model.bin")):
                subprocess.run(["/usr/bin/python3", "-c", BUILD, model, tokens_path, pre_norm,
                                activation, lnemb, tied, quantization, str(100 + seed)],
                               check=True, env=env)
            for side in ("source.spm", "target.spm"):
                with open(prefix + ".model", "rb") as f, open(os.path.join(model, side), "wb") as g:
                    g.write(f.read())
            for beam in (1, 4):
                ct2_path = os.path.join(args.out, f"ct2-{name}-{quantization}-{beam}.json")
                subprocess.run(["/usr/bin/python3", "-c", TRANSLATE, model, prefix + ".model",
                                str(beam), str(MAX_LEN), lines_path, ct2_path], check=True, env=env)
                want = json.load(open(ct2_path))
                proc = subprocess.run(
                    [os.path.join(args.bin, "transerve-translate"), f"--model_dir={model}",
                     "--dtype=float32", f"--beam_size={beam}", f"--max_length={MAX_LEN}",
                     "--output_format=jsonl", "--num_threads=2", "--protect_spans=false",
                     "--split_sentences=false"], stdin=open(lines_path), capture_output=True,
                    check=True, text=True)
                got = [[i for i in json.loads(l)["ids"] if i != eos]
                       for l in proc.stdout.splitlines()]
                at_limit = [len(w) >= MAX_LEN or len(g) >= MAX_LEN for w, g in zip(want, got)]
                agree = sum(a == b for a, b, lim in zip(want, got, at_limit) if not lim)
                ended = sum(not lim for lim in at_limit)
                all_ok &= agree == ended and results_same_at_limit(want, got, at_limit)
                results.append({"variant": name, "store": quantization, "beam": beam,
                                "ended_lines": ended, "agree": agree,
                                "at_limit": len(lines) - ended,
                                "agree_at_limit": sum(a == b for a, b, lim in
                                                      zip(want, got, at_limit) if lim)})
                search = "greedy" if beam == 1 else "beam 4"
                lengths = sorted(len(w) for w in want)
                print(f"{name:24s} {quantization:8s} {search:7s} {agree:4d}/{ended:<4d} "
                      f"{len(lines) - ended:4d} ({results[-1]['agree_at_limit']:3d} same)"
                      f"   output lengths: median "
                      f"{lengths[len(lengths) // 2]}, {len(set(map(tuple, want)))} distinct",
                      flush=True)
    json.dump(results, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
