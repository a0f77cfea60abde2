#!/usr/bin/env python3
"""Exports a training checkpoint to a Hugging Face Marian (OPUS-MT) model directory.

Writes OUT/config.json, generation_config.json, tokenizer_config.json, special_tokens_map.json
(all produced by tools/reference/make_random_model.py's writer, so every key it writes is here
too; only the name, the dropout values and torch_dtype are patched), vocab.json, source.spm,
target.spm (copied from the vocabulary directory), model.safetensors (F16 by default; written by
marian_reference.write_safetensors) and README.md (a model card filled from the checkpoint's
training record, the corpus statistics and, when given, evaluate.py's JSON).

  /usr/bin/python3 tools/train/export.py --ckpt /work/data/train/averaged.pt \
      --vocab_dir /work/data/train/vocab --out models/en-de-small \
      [--eval_json /work/data/train/eval/results.json] [--card_only]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import shutil
import sys
import tempfile
from typing import Dict, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import make_random_model  # noqa: E402  (config / generation_config / tokenizer files)
from marian_reference import write_safetensors  # noqa: E402

MODEL_NAME = "transerve/en-de-small"
HF_MAX_LENGTH = 512
NUM_BEAMS = 4
_TEMPLATE_CACHE: Dict[tuple, Dict[str, dict]] = {}


def _hf_json_files(cfg: dict, dtype: str) -> Dict[str, dict]:
    """config.json & co. from make_random_model's writer, for this architecture."""
    key = (tuple(sorted((k, str(v)) for k, v in cfg.items())), dtype)
    if key not in _TEMPLATE_CACHE:
        with tempfile.TemporaryDirectory() as tmp:
            args = make_random_model.parse_args([
                "--out", tmp, "--vocab", str(cfg["vocab_size"]), "--d_model", str(cfg["d_model"]),
                "--encoder_layers", str(cfg["encoder_layers"]),
                "--decoder_layers", str(cfg["decoder_layers"]), "--heads", str(cfg["heads"]),
                "--ffn", str(cfg["ffn"]), "--activation", cfg["activation"],
                "--max_position_embeddings", str(cfg["max_position_embeddings"]),
                "--hf_max_length", str(HF_MAX_LENGTH), "--num_beams", str(NUM_BEAMS),
                "--dtype", dtype])
            with contextlib.redirect_stderr(io.StringIO()):
                make_random_model.write_model(args)
            files = {}
            for name in ("config.json", "generation_config.json", "tokenizer_config.json",
                         "special_tokens_map.json"):
                with open(os.path.join(tmp, name), encoding="utf-8") as f:
                    files[name] = json.load(f)
        conf = files["config.json"]
        conf["_name_or_path"] = MODEL_NAME
        conf["dropout"] = cfg["dropout"]
        conf["attention_dropout"] = cfg["attention_dropout"]
        conf["activation_dropout"] = cfg["activation_dropout"]
        _TEMPLATE_CACHE[key] = files
    return json.loads(json.dumps(_TEMPLATE_CACHE[key]))


def _write_json(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_model_dir(out: str, tensors: Dict[str, np.ndarray], cfg: dict, vocab_dir: str,
                    dtype: str = "f16") -> None:
    """The HF directory without the model card. `tensors`: float32 arrays under HF names."""
    with open(os.path.join(vocab_dir, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    v = cfg["vocab_size"]
    if len(vocab) != v or vocab.get("<pad>") != v - 1 or vocab.get("</s>") != 0:
        raise SystemExit(f"{vocab_dir}/vocab.json does not match the model (vocab_size {v})")
    os.makedirs(out, exist_ok=True)
    for name, obj in _hf_json_files(cfg, dtype).items():
        _write_json(os.path.join(out, name), obj)
    for name in ("vocab.json", "source.spm", "target.spm"):
        shutil.copyfile(os.path.join(vocab_dir, name), os.path.join(out, name))
    np_dtype = {"f16": np.float16, "f32": np.float32}[dtype]
    if dtype == "f16":
        big = {k: float(np.abs(a).max()) for k, a in tensors.items() if np.abs(a).max() > 60000}
        if big:
            raise SystemExit(f"tensors out of float16 range: {big}")
    write_safetensors(os.path.join(out, "model.safetensors"),
                      {k: np.ascontiguousarray(a.astype(np_dtype)) for k, a in tensors.items()},
                      {"format": "pt"})


def load_checkpoint(path: str) -> dict:
    import torch
    return torch.load(path, map_location="cpu")


def tensors_from_checkpoint(ck: dict) -> Dict[str, np.ndarray]:
    from model import MarianMT
    m = MarianMT(ck["model_cfg"])
    m.load_state_dict(ck["model"])
    return m.hf_tensors()


# ---------------------------------------------------------------------------------------------
# Model card
# ---------------------------------------------------------------------------------------------


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def _score_rows(ev: dict) -> str:
    rows = []
    for r in ev.get("runs", []):
        if r["engine"] != "cpp":  # the reference runs only serve the id comparison below
            continue
        rows.append(f"| {r['set']} | {r['engine']} | {r['beam_size']} | {r['bleu']:.2f} | "
                    f"{r['chrf']:.2f} | {r['lines']} | {r.get('sentences_per_second', 0):.1f} |")
    if not rows:
        return "_Not evaluated yet: run `tools/train/evaluate.py run ...` and re-export with " \
               "`--card_only --eval_json`._\n"
    head = ("| test set | engine | beams | BLEU | chrF | lines | sentences/s |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n")
    out = head + "\n".join(rows) + "\n"
    for c in ev.get("id_comparisons", []):
        out += (f"\nToken ids, C++ engine vs PyTorch reference ({c['set']}, "
                f"beams {c['beam_size']}):"
                f" {c['equal']} of {c['lines']} lines identical.\n")
    return out


def write_card(out: str, ck: dict, corpus_stats: Optional[dict], ev: Optional[dict],
               spm_info: Optional[dict]) -> None:
    cfg, meta = ck["model_cfg"], ck.get("meta", {})
    targs = ck.get("args", {})
    n_params = sum(int(np.prod(t.shape)) for t in ck["model"].values())
    st = os.path.join(out, "model.safetensors")
    size_mb = os.path.getsize(st) / 1e6 if os.path.exists(st) else 0.0
    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        dtype = json.load(f).get("torch_dtype", "?")
    tot = (corpus_stats or {}).get("totals", {})
    sources = (corpus_stats or {}).get("sources", {})
    src_groups = sorted({s.get("group", k) for k, s in sources.items()})
    avg = ck.get("averaged_from")
    lines = [
        f"# {MODEL_NAME}: English → German (OPUS-MT / Marian layout)",
        "",
        "A small English→German transformer trained by transerve from scratch on text that",
        "Debian packages ship in both languages. It is stored in the Hugging Face `MarianMTModel`",
        "layout (config.json, model.safetensors, source.spm/target.spm, vocab.json), so",
        "transerve's C++ engine, its PyTorch reference (tools/reference) and `transformers` can",
        "all load it.",
        "",
        "**Domain:** software text (UI strings, help pages, manuals, package descriptions) and",
        "some game dialogue. Expect weak output on news, conversation or literature.",
        "",
        "## Model",
        "",
        "| | |",
        "| --- | --- |",
        f"| architecture | Marian transformer, post-norm, d_model {cfg['d_model']}, "
        f"{cfg['heads']} heads, FFN {cfg['ffn']}, {cfg['encoder_layers']}+{cfg['decoder_layers']} "
        f"layers, {cfg['activation']}, tied + scaled embeddings |",
        f"| parameters | {n_params / 1e6:.2f} M |",
        f"| vocabulary | {cfg['vocab_size']} shared SentencePiece unigram pieces "
        f"(nmt_nfkc; eos 0, unk 1, pad {cfg['vocab_size'] - 1} = decoder start) |",
        f"| weights | model.safetensors, {dtype}, {size_mb:.1f} MB |",
        f"| generation defaults | beam {NUM_BEAMS}, max_length {HF_MAX_LENGTH}, pad banned |",
        "",
        "## Training data",
        "",
        "tools/corpus/build_corpus.sh: aligned English/German strings from Debian 12 packages",
        "(gettext catalogs, LibreOffice help, Mozilla l10n, manuals, DDTP package descriptions),",
        "cleaned and deduplicated. `debian-handbook` is held out entirely for evaluation.",
        "",
    ]
    if tot:
        lines += [f"- corpus: {tot.get('train', '?')} training pairs "
                  f"({tot.get('train_en_words', '?')} English / {tot.get('train_de_words', '?')} "
                  f"German words), validation {tot.get('valid', '?')}, "
                  f"test {tot.get('test', '?')}; "
                  f"{meta.get('train_pairs', '?')} pairs used (at most {targs.get('max_len', '?')} "
                  f"tokens a side)",
                  f"- source groups: {', '.join(src_groups)}",
                  "- the packages and versions used are listed in the corpus's packages.tsv; the "
                  "texts come under the packages' free licenses", ""]
    lines += [
        "## Training",
        "",
        "tools/train (PyTorch, CPU): label-smoothed (0.1) cross entropy, Adam with inverse-sqrt",
        "warm-up, token batches, dropout, periodic checkpoints; see tools/train/README.md.",
        "",
        f"- steps: {meta.get('step', '?')}, epochs: {meta.get('epoch_float', 0):.2f}, target "
        f"tokens seen: {meta.get('target_tokens', 0) / 1e6:.1f} M",
        f"- training time: {_hms(meta.get('train_seconds', 0))} on "
        f"{meta.get('device_name', 'CPU')}",
        f"- batch ~{targs.get('batch_tokens', '?')} tokens, lr {targs.get('lr', '?')}, warm-up "
        f"{targs.get('warmup', '?')} steps, dropout {cfg['dropout']}, label smoothing "
        f"{targs.get('label_smoothing', '?')}",
    ]
    if avg:
        lines.append(f"- weights: average of {len(avg)} checkpoints (steps "
                     f"{', '.join(str(a.get('step')) for a in avg)})")
    if meta.get("valid"):
        v = meta["valid"]
        lines.append(f"- last validation: loss {v.get('loss', 0):.3f}, greedy BLEU "
                     f"{v.get('bleu', 0):.2f} on {v.get('bleu_lines', '?')} valid lines")
    if spm_info:
        lines.append(f"- SentencePiece: {spm_info.get('model_type')} "
                     f"{spm_info.get('spm_vocab_size')} pieces, coverage "
                     f"{spm_info.get('character_coverage')}")
    lines += [
        "",
        "## Use",
        "",
        "```sh",
        "build/bin/transerve-translate --model_dir=models/en-de-small < input.en",
        "```",
        "",
        "## Evaluation",
        "",
        "BLEU (sacreBLEU-compatible: 13a tokenisation, corpus level) and chrF (character 6-grams,",
        "β = 2), computed by tools/train/evaluate.py. `test` is the corpus's held-out split (same",
        "domain); `handbook` is the Debian Administrator's Handbook, never used for training or",
        "model selection. sentences/s is one `transerve-translate` process over the whole set",
        "(start-up included, every core of the machine that ran the evaluation; the reference's",
        "runs only serve the id comparison).",
        "",
        _score_rows(ev or {}),
        "## Limitations",
        "",
        "Small model, small single-domain corpus: mistranslations, dropped words and literal",
        "renderings are common outside software text. Placeholders and markup were mostly",
        "filtered out of the training data, so they may be mangled. Not for critical use.",
        "",
        f"_Card written {datetime.date.today().isoformat()} by tools/train/export.py._",
        "",
    ]
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def _read_json(path: Optional[str]):
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True, help="training checkpoint or average.py output")
    ap.add_argument("--vocab_dir", required=True, help="train_spm.py output directory")
    ap.add_argument("--out", required=True, help="model directory to write")
    ap.add_argument("--dtype", choices=["f16", "f32"], default="f16")
    ap.add_argument("--corpus_stats", default="/work/data/corpus/stats.json")
    ap.add_argument("--eval_json", help="evaluate.py run --json output, for the card")
    ap.add_argument("--card_only", action="store_true", help="rewrite README.md only")
    args = ap.parse_args(argv)
    ck = load_checkpoint(args.ckpt)
    if not args.card_only:
        write_model_dir(args.out, tensors_from_checkpoint(ck), ck["model_cfg"], args.vocab_dir,
                        args.dtype)
    write_card(args.out, ck, _read_json(args.corpus_stats), _read_json(args.eval_json),
               _read_json(os.path.join(args.vocab_dir, "spm_info.json")))
    print(f"wrote {args.out}" + (" (card only)" if args.card_only else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
