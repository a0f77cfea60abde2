#!/usr/bin/python3
"""transerve on a CTranslate2 model directory, beside CTranslate2 itself on the same directory.

The directory is made by CTranslate2's own converter steps (the anchor kit's convert.py, which
fills CTranslate2's TransformerSpec and saves it as its converters do) from a Hugging Face Marian
checkpoint, once per store (float32, float16, int8). Then, for each store and each search (greedy,
beam 4), and for an Argos Translate package made of the float32 store (CTranslate2 called as
Argos Translate calls it: no EOS added, beam 4, length penalty 0.2, unknowns replaced):
  - CTranslate2's translate_batch on the source pieces (SentencePiece + "</s>", as its Marian
    users feed the Hugging Face tokenizer's output), computing in float32 for the float32 and
    float16 stores (CTranslate2 has no float16 on the CPU) and in int8 for the int8 store, at its
    defaults otherwise (beam rules, min_decoding_length 1, length penalty 1);
  - transerve-translate on the same directory, loaded directly (no conversion step), at the
    directory's defaults too (CTranslate2's beam rules), with --dtype float32 for the float32
    and float16 stores and int8 for the int8 store, each line one sequence as CTranslate2 sees
    it (no sentence splitting, no protected spans) and --max_length equal to CTranslate2's
    max_decoding_length (under CTranslate2's rules both count the same tokens).
The sentences: --input, or by default the English prose of this repository's own documents
(README.md, SECURITY.md, docs/*.md; code blocks, tables and headings left out), split at
sentence ends, 4 to 40 words, first occurrence only, in file order: the same lines on every
checkout of the same commit. Lines holding a special token's text ("</s>", "<unk>", "<pad>")
are left out and counted: transerve's tokenizer splits those out as the tokens, as Hugging
Face's does; SentencePiece alone reads their characters, so the engines would be given
different sources.
It prints how many outputs agree (token ids) and writes them to OUT/summary.json; it exits 1
unless every greedy output of the float32 store agrees.

Needs the anchor kit's CTranslate2 build (never a build or test dependency of transerve):
  bench/ct2_directory_parity.py --ct2_workdir /work/ct2 --model_dir models/en-de-small \\
      [--input FILE] [--limit 300] [--out build/bench/ct2_directory_parity]
"""
import argparse
import json
import glob
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KIT = os.path.join(ROOT, "..", "shared", "anchors", "ctranslate2")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def convert(args, store, out):
    if os.path.exists(os.path.join(out, "model.bin")):
        return
    cmd = ["/usr/bin/python3", os.path.join(KIT, "convert.py"), "--model_dir", args.model_dir,
           "--out", out]
    if store != "float32":
        cmd += ["--quantization", store]
    env = dict(os.environ, CT2_PYLIB=os.path.join(args.ct2_workdir, "pylib-dnnl"))
    run(cmd, env=env, stdout=subprocess.DEVNULL)
    # CTranslate2's users keep the SentencePiece models beside it.
    for name in ("source.spm", "target.spm"):
        with open(os.path.join(args.model_dir, name), "rb") as f, \
                open(os.path.join(out, name), "wb") as g:
            g.write(f.read())


CT2_SCRIPT = r"""
import json, sys, time, resource
import ctranslate2, sentencepiece as spm
model, compute_type, beam, max_len, lines_path, out_path = sys.argv[1:7]
sp = spm.SentencePieceProcessor(model_file=model + "/source.spm")
lines = open(lines_path).read().splitlines()
sources = [sp.encode(l, out_type=str) + ["</s>"] for l in lines]
t0 = time.perf_counter()
tr = ctranslate2.Translator(model, device="cpu", compute_type=compute_type, inter_threads=1,
                            intra_threads=2)
load = time.perf_counter() - t0
res = tr.translate_batch(sources, beam_size=int(beam), max_decoding_length=int(max_len),
                         return_scores=True, max_batch_size=32)
vocab = {t: i for i, t in enumerate(json.load(open(model + "/shared_vocabulary.json")))}
out = [[vocab[t] for t in r.hypotheses[0]] for r in res]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
json.dump({"ids": out, "load_seconds": load, "peak_rss_mb": rss}, open(out_path, "w"))
"""


# Argos Translate's call (argostranslate/translate.py): SentencePiece's pieces as they are, no
# EOS added, beam 4, length penalty 0.2, unknowns replaced, batches of 32.
ARGOS_SCRIPT = r"""
import json, sys
import ctranslate2, sentencepiece as spm
package, lines_path, out_path = sys.argv[1:4]
sp = spm.SentencePieceProcessor(model_file=package + "/sentencepiece.model")
sources = [sp.encode(l, out_type=str) for l in open(lines_path).read().splitlines()]
tr = ctranslate2.Translator(package + "/model", device="cpu", compute_type="float32",
                            inter_threads=1, intra_threads=2)
res = tr.translate_batch(sources, replace_unknowns=True, max_batch_size=32, beam_size=4,
                         num_hypotheses=1, length_penalty=0.2, return_scores=True)
# replace_unknowns puts the source piece in place of <unk>, so the pieces are compared as the
# text Argos Translate makes of them: SentencePiece's decode, stripped.
# A token outside the model's vocabulary is a replaced unknown.
vocab = set(json.load(open(package + "/model/shared_vocabulary.json")))
json.dump({"texts": [sp.decode(r.hypotheses[0]).strip() for r in res],
           "replaced": [sum(t not in vocab for t in r.hypotheses[0]) for r in res]},
          open(out_path, "w"))
"""


def argos_package(args, float32_model):
    """The float32 store packaged as argospm installs a package (metadata.json, model/, one
    sentencepiece.model)."""
    package = os.path.join(args.out, "translate-en_de-1_0")
    os.makedirs(os.path.join(package, "model"), exist_ok=True)
    for name in ("model.bin", "config.json", "shared_vocabulary.json"):
        with open(os.path.join(float32_model, name), "rb") as f, \
                open(os.path.join(package, "model", name), "wb") as g:
            g.write(f.read())
    with open(os.path.join(args.model_dir, "source.spm"), "rb") as f, \
            open(os.path.join(package, "sentencepiece.model"), "wb") as g:
        g.write(f.read())
    json.dump({"package_version": "1.0", "from_code": "en", "to_code": "de"},
              open(os.path.join(package, "metadata.json"), "w"))
    return package


def ct2_translate(args, model, compute_type, beam, lines_path, out_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(args.ct2_workdir, "pylib-dnnl"),
               OMP_NUM_THREADS="2")
    run(["/usr/bin/python3", "-c", CT2_SCRIPT, model, compute_type, str(beam), str(args.max_length),
         lines_path, out_path], env=env)
    return json.load(open(out_path))


def transerve_translate(args, model, dtype, beam, lines_path):
    t0 = time.perf_counter()
    proc = subprocess.run(
        [os.path.join(args.bin, "transerve-translate"), f"--model_dir={model}", f"--dtype={dtype}",
         f"--beam_size={beam}", f"--max_length={args.max_length}", "--output_format=jsonl",
         "--num_threads=2", "--protect_spans=false", "--split_sentences=false"], stdin=open(lines_path), capture_output=True, check=True, text=True)
    seconds = time.perf_counter() - t0
    ids = []
    for line in proc.stdout.splitlines():
        got = json.loads(line)["ids"]
        ids.append([i for i in got if i != args.eos_id])  # CTranslate2 returns no EOS
    return {"ids": ids, "seconds": seconds}


SPECIAL_TEXTS = ("</s>", "<unk>", "<pad>")


def prose_sentences():
    """The repository's own English prose, one sentence a line (see the module's docstring)."""
    files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "SECURITY.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    seen, out = set(), []
    for path in files:
        in_code = False
        paragraph = []
        for line in open(path, encoding="utf-8").read().splitlines() + [""]:
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            if in_code or line.lstrip().startswith(("#", "|", "    ")):
                line = ""
            if line.strip():
                paragraph.append(line.strip().lstrip("-*0123456789. ").strip())
                continue
            text = " ".join(paragraph)
            paragraph = []
            for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z`*(])", text):
                sentence = sentence.strip()
                if 4 <= len(sentence.split()) <= 40 and sentence not in seen:
                    seen.add(sentence)
                    out.append(sentence)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ct2_workdir", required=True)
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--input", default="", help="one sentence a line (default: the docs' prose)")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--max_length", type=int, default=128)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "ct2_directory_parity"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    vocab = json.load(open(os.path.join(args.model_dir, "vocab.json")))
    args.eos_id = vocab["</s>"]
    if args.input:
        candidates = [l for l in open(args.input).read().splitlines() if l.strip()]
    else:
        candidates = prose_sentences()
    special = [l for l in candidates if any(t in l for t in SPECIAL_TEXTS)]
    lines = [l for l in candidates if l not in special][: args.limit]
    print(f"{len(lines)} sentences ({len(special)} holding a special token's text left out)",
          flush=True)
    lines_path = os.path.join(args.out, "sources.txt")
    open(lines_path, "w").write("\n".join(lines) + "\n")
    results = []
    for store, dtype in (("float32", "float32"), ("float16", "float32"), ("int8", "int8")):
        model = os.path.join(args.out, f"model-{store}")
        convert(args, store, model)
        for beam in (1, 4):
            ct2 = ct2_translate(args, model, dtype, beam, lines_path,
                                os.path.join(args.out, f"ct2-{store}-{beam}.json"))
            ours = transerve_translate(args, model, dtype, beam, lines_path)
            json.dump(ours, open(os.path.join(args.out, f"transerve-{store}-{beam}.json"), "w"))
            same = sum(a == b for a, b in zip(ct2["ids"], ours["ids"]))
            results.append({"store": store, "beam": beam, "sentences": len(lines),
                            "same_ids": same, "ct2_load_seconds": ct2["load_seconds"],
                            "ct2_peak_rss_mb": ct2["peak_rss_mb"]})
            print(f"{store:8s} beam {beam}: {same}/{len(lines)} outputs with CTranslate2's ids"
                  f" (transerve {ours['seconds']:.1f} s)",
                  flush=True)
    # An Argos Translate package of the float32 store: CTranslate2 called as Argos Translate
    # calls it, transerve-translate on the package folder at its defaults (Argos's search).
    package = argos_package(args, os.path.join(args.out, "model-float32"))
    env = dict(os.environ, PYTHONPATH=os.path.join(args.ct2_workdir, "pylib-dnnl"),
               OMP_NUM_THREADS="2")
    argos_out = os.path.join(args.out, "ct2-argos.json")
    run(["/usr/bin/python3", "-c", ARGOS_SCRIPT, package, lines_path, argos_out], env=env)
    argos = json.load(open(argos_out))
    want = argos["texts"]
    proc = subprocess.run(
        [os.path.join(args.bin, "transerve-translate"), f"--model_dir={package}",
         "--dtype=float32", "--output_format=jsonl", "--num_threads=2", "--protect_spans=false",
         "--split_sentences=false"], stdin=open(lines_path), capture_output=True, check=True,
        text=True)
    got = [json.loads(l)["text"] for l in proc.stdout.splitlines()]
    same = sum(a == b for a, b in zip(want, got))
    with_unknowns = [i for i, n in enumerate(argos["replaced"]) if n]
    same_unknowns = sum(want[i] == got[i] for i in with_unknowns)
    differing = [i for i in range(len(lines)) if want[i] != got[i]]
    results.append({"store": "argos package (float32)", "beam": 4, "sentences": len(lines),
                    "same_text": same, "lines_with_replaced_unknowns": len(with_unknowns),
                    "same_text_with_replaced_unknowns": same_unknowns, "differing": differing})
    print(f"Argos package beam 4, length penalty 0.2: {same}/{len(lines)} texts equal to Argos "
          f"Translate's over CTranslate2 ({same_unknowns}/{len(with_unknowns)} of the lines where "
          f"it replaced an unknown); differing lines {differing}", flush=True)
    # Each engine's int8 against its own float32: CTranslate2's is the bar transerve's int8 is
    # held to (how far int8 moves a translation at all).
    for engine, name in (("ct2", "CTranslate2"), ("transerve", "transerve")):
        for beam in (1, 4):
            f = json.load(open(os.path.join(args.out, f"{engine}-float32-{beam}.json")))["ids"]
            i = json.load(open(os.path.join(args.out, f"{engine}-int8-{beam}.json")))["ids"]
            same = sum(a == b for a, b in zip(f, i))
            results.append({f"{engine}_int8_vs_{engine}_float32_beam": beam, "same_ids": same,
                            "sentences": len(lines)})
            print(f"{name} int8 vs its float32, beam {beam}: {same}/{len(lines)}")
    json.dump(results, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    greedy = next(r for r in results if r.get("store") == "float32" and r["beam"] == 1)
    return 0 if greedy["same_ids"] == greedy["sentences"] else 1


if __name__ == "__main__":
    sys.exit(main())
