#!/usr/bin/python3
"""M2M-100 / NLLB-200 checkpoints in transerve, beside CTranslate2 on the same weights.

For each tokenizer flavour (NLLB-200, M2M-100) a random-weight model with a random tokenizer in
the hub's layout (tools/reference/m2m_tokenizer_reference.py) is written, and converted to a
CTranslate2 directory (tools/reference/m2m_to_ct2.py, the layout CTranslate2's converter gives
these models). Random texts are translated for several language pairs, greedy and beam 4:
  - CTranslate2's translate_batch on the reference tokenizer's tokens ([source code] pieces
    </s>, as its users feed the Hugging Face tokenizer's output) with the target code as
    target_prefix, in float32;
  - transerve-translate on the Hugging Face directory and on the CTranslate2 directory, given the
    pair as --language / --target_language, in float32, each line one sequence, CTranslate2's
    search rules and the same length limit.
It prints how many outputs agree (token ids, the EOS left out) and writes OUT/summary.json; it
exits 1 unless every greedy output agrees.

Needs the anchor kit's CTranslate2 build (never a build or test dependency of transerve):
  bench/m2m_ct2_parity.py --ct2_workdir /work/ct2 [--lines 24] [--seed 1] \\
      [--out build/bench/m2m_ct2_parity]
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REFERENCE = os.path.join(ROOT, "tools", "reference")
sys.path.insert(0, REFERENCE)
import m2m_tokenizer_reference as tr  # noqa: E402

FLAVOURS = {
    "nllb": ("--flavour nllb", [("fra_Latn", "zho_Hans"), ("eng_Latn", "deu_Latn"),
                                ("rus_Cyrl", "spa_Latn")]),
    "m2m100": ("--flavour m2m100", [("__fr__", "__zh__"), ("__en__", "__de__"),
                                    ("__ru__", "__es__")]),
}

CT2_SCRIPT = r"""
import json, sys
import ctranslate2
model, beam, max_len, cases_path, out_path = sys.argv[1:6]
cases = json.load(open(cases_path))
vocab = json.load(open(model + "/shared_vocabulary.json"))
index = {t: i for i, t in enumerate(vocab)}
tr = ctranslate2.Translator(model, device="cpu", compute_type="float32", inter_threads=1,
                            intra_threads=2)
res = tr.translate_batch([[vocab[i] for i in c["source"]] for c in cases],
                         target_prefix=[[c["target"]] for c in cases], beam_size=int(beam),
                         max_decoding_length=int(max_len), max_batch_size=32)
json.dump([[index[t] for t in r.hypotheses[0]] for r in res], open(out_path, "w"))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def transerve(args, model_dir, source, target, beam, lines_path):
    out = subprocess.run(
        [os.path.join(args.bin_dir, "transerve-translate"), f"--model_dir={model_dir}",
         "--dtype=float32", "--num_threads=2", f"--beam_size={beam}",
         f"--max_length={args.max_length}", "--search_rules=ctranslate2",
         "--split_sentences=false", "--protect_spans=false", "--output_format=jsonl",
         f"--language={source}", f"--target_language={target}"],
        stdin=open(lines_path), capture_output=True, text=True, check=True).stdout
    return [json.loads(line)["ids"] for line in out.splitlines()]


def strip_eos(ids):
    return ids[:-1] if ids and ids[-1] == 2 else ids


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ct2_workdir", required=True)
    ap.add_argument("--bin_dir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--lines", type=int, default=24, help="texts per language pair")
    ap.add_argument("--max_length", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "m2m_ct2_parity"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(args.ct2_workdir, "pylib-dnnl"),
               OMP_NUM_THREADS="2")
    rng = random.Random(args.seed)
    rows, all_greedy_agree = [], True
    for flavour, (make_args, pairs) in FLAVOURS.items():
        hf = os.path.join(args.out, flavour)
        ct2 = hf + "-ct2"
        run(["/usr/bin/python3", os.path.join(REFERENCE, "m2m_tokenizer_reference.py"), "--make",
             hf, *make_args.split(), "--model", "--seed", str(args.seed)],
            stdout=subprocess.DEVNULL)
        run(["/usr/bin/python3", os.path.join(REFERENCE, "m2m_to_ct2.py"), "--model_dir", hf,
             "--out", ct2], stdout=subprocess.DEVNULL)
        tok = tr.ReferenceTokenizer(hf)
        for source, target in pairs:
            texts = [tr.random_text(rng) for _ in range(args.lines)]
            lines_path = os.path.join(args.out, f"{flavour}.{source}.{target}.txt")
            open(lines_path, "w", encoding="utf-8").write("".join(t + "\n" for t in texts))
            cases = [{"source": tok.encode(t, source), "target": target} for t in texts]
            cases_path = lines_path + ".json"
            json.dump(cases, open(cases_path, "w"))
            src_lang = source.strip("_")
            tgt_lang = target.strip("_")
            for beam in (1, 4):
                out_path = f"{lines_path}.ct2.beam{beam}.json"
                run(["/usr/bin/python3", "-c", CT2_SCRIPT, ct2, str(beam), str(args.max_length),
                     cases_path, out_path], env=env)
                want = json.load(open(out_path))
                got_hf = transerve(args, hf, src_lang, tgt_lang, beam, lines_path)
                got_ct2 = transerve(args, ct2, src_lang, tgt_lang, beam, lines_path)
                agree_hf = sum(strip_eos(g) == w for g, w in zip(got_hf, want))
                agree_ct2 = sum(strip_eos(g) == w for g, w in zip(got_ct2, want))
                rows.append({"flavour": flavour, "pair": f"{source}->{target}", "beam": beam,
                             "lines": len(texts), "hf_dir_agree": agree_hf,
                             "ct2_dir_agree": agree_ct2})
                if beam == 1 and (agree_hf != len(texts) or agree_ct2 != len(texts)):
                    all_greedy_agree = False
    print(f"{'flavour':8} {'pair':22} {'beam':>4} {'lines':>5} {'HF dir':>7} {'CT2 dir':>7}")
    for r in rows:
        print(f"{r['flavour']:8} {r['pair']:22} {r['beam']:>4} {r['lines']:>5} "
              f"{r['hf_dir_agree']:>7} {r['ct2_dir_agree']:>7}")
    json.dump({"seed": args.seed, "max_length": args.max_length, "rows": rows},
              open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    return 0 if all_greedy_agree else 1


if __name__ == "__main__":
    sys.exit(main())
