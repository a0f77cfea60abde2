#!/usr/bin/env python3
"""An independent reference of the tokenizers of M2M-100 and NLLB-200 checkpoints, written from
the behaviour of Hugging Face's M2M100Tokenizer and NllbTokenizer (non-legacy) over the real
SentencePiece library, and a writer of random tokenizers in the hub's layout.

  /usr/bin/python3 tools/reference/m2m_tokenizer_reference.py --make DIR --flavour nllb --seed 7
  /usr/bin/python3 tools/reference/m2m_tokenizer_reference.py --make DIR --flavour m2m100 \
      --model --cases OUT.json --seed 7

What it reproduces:
- NLLB-200: ids 0..3 are <s> <pad> </s> <unk>; a SentencePiece piece with id i >= 3 is id i + 1,
  a piece SentencePiece does not know (id 0) is <unk>; the language codes ("eng_Latn") follow
  the pieces, then <mask>. Decoding drops the special ids and codes, joins the pieces, turns
  U+2581 into spaces and strips.
- M2M-100: pieces looked up in vocab.json (unknown ones are <unk>); the codes ("__en__") follow
  vocab.json's entries. Decoding drops the special ids and codes and has SentencePiece decode
  the pieces.
- A source is [source code] + pieces + [</s>]; the target code is forced as the first token.
  One difference is deliberate: a text without pieces is [</s>] alone (transerve answers it
  with the empty text without decoding).

With --model, a random-weight checkpoint (m2m_reference.py) whose vocabulary is the tokenizer's
goes beside the tokenizer, and --cases translates random texts between random codes with it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from typing import List

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
# Codes as the published tokenizers write them; a test model carries a few, in this order.
NLLB_CODES = ["eng_Latn", "deu_Latn", "fra_Latn", "zho_Hans", "zho_Hant", "rus_Cyrl", "spa_Latn"]
M2M_CODES = ["__en__", "__de__", "__fr__", "__zh__", "__ru__", "__es__"]

SYLLABLES = ["ka", "to", "ren", "mi", "sal", "ve", "dor", "lu", "ni", "qua", "ße", "ön", "él",
             "да", "ми", "ров", "小", "说", "明", "ção", "ñu", "th", "ing", "er"]


def random_text(rng: random.Random, unseen: bool = False) -> str:
    words = []
    for _ in range(rng.randint(1, 12)):
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.15:
            w = w.capitalize()
        words.append(w)
    text = " ".join(words)
    if rng.random() < 0.3:
        text += rng.choice([".", "!", "?", ","])
    if unseen:  # characters the SentencePiece model never saw: <unk> pieces
        text += " " + rng.choice(["☃", "∑x", "⌘", "ʤʤ"])
    return text


def make_tokenizer(out: str, flavour: str, seed: int, vocab_size: int = 260,
                   explicit_ids: bool = False, codes: List[str] = None) -> int:
    """Trains a BPE SentencePiece model on random text and writes the tokenizer files of
    `flavour`; returns the number of ids the tokenizer uses."""
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for _ in range(3000):
                f.write(random_text(rng) + "\n")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=os.path.join(tmp, "bpe"), model_type="bpe",
            vocab_size=vocab_size, character_coverage=1.0, seed_sentencepiece_size=10000,
            minloglevel=2)
        with open(os.path.join(tmp, "bpe.model"), "rb") as f:
            model_bytes = f.read()
    with open(os.path.join(out, "sentencepiece.bpe.model"), "wb") as f:
        f.write(model_bytes)
    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    special_map = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                   "pad_token": "<pad>", "sep_token": "</s>", "cls_token": "<s>"}
    config = dict(special_map)
    if flavour == "nllb":
        codes = codes or NLLB_CODES
        base = sp.get_piece_size() + 1
        size = base + len(codes) + 1  # <mask> last
        config["tokenizer_class"] = "NllbTokenizer"
        special_map["mask_token"] = "<mask>"
        if explicit_ids:
            added = {str(i): {"content": t, "special": True} for i, t in enumerate(SPECIALS)}
            for i, c in enumerate(codes):
                added[str(base + i)] = {"content": c, "special": True}
            added[str(base + len(codes))] = {"content": "<mask>", "special": True}
            config["added_tokens_decoder"] = added
        else:
            special_map["additional_special_tokens"] = codes
    else:
        codes = codes or M2M_CODES
        # vocab.json as fairseq's dictionary numbers it: the specials, then the pieces in an order
        # of their own (by frequency there; shuffled here), a few left out (they read as <unk>).
        pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                  if not (sp.is_control(i) or sp.is_unknown(i))]
        rng.shuffle(pieces)
        pieces = pieces[: len(pieces) - 5]
        vocab = {t: i for i, t in enumerate(SPECIALS + pieces)}
        with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        size = len(vocab) + len(codes)
        config["tokenizer_class"] = "M2M100Tokenizer"
        special_map["additional_special_tokens"] = codes
    config["src_lang"] = None
    config["tgt_lang"] = None
    for name, data in (("tokenizer_config.json", config),
                       ("special_tokens_map.json", special_map)):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
    return size


class ReferenceTokenizer:
    """Encode / decode as the Hugging Face tokenizer of the directory's flavour does."""

    def __init__(self, model_dir: str):
        self.sp = spm.SentencePieceProcessor(
            model_file=os.path.join(model_dir, "sentencepiece.bpe.model"))
        vocab_path = os.path.join(model_dir, "vocab.json")
        self.nllb = not os.path.exists(vocab_path)
        with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        with open(os.path.join(model_dir, "special_tokens_map.json"), encoding="utf-8") as f:
            special_map = json.load(f)
        if self.nllb:
            base = self.sp.get_piece_size() + 1
            if "added_tokens_decoder" in config:
                codes = {v["content"]: int(k) for k, v in config["added_tokens_decoder"].items()
                         if v["content"] not in SPECIALS + ["<mask>"]}
            else:
                codes = {c: base + i
                         for i, c in enumerate(special_map["additional_special_tokens"])}
            self.code_ids = codes
            self.size = base + len(codes) + 1
        else:
            with open(vocab_path, encoding="utf-8") as f:
                self.encoder = json.load(f)
            self.decoder = {v: k for k, v in self.encoder.items()}
            self.code_ids = {c: len(self.encoder) + i
                             for i, c in enumerate(special_map["additional_special_tokens"])}
            self.size = len(self.encoder) + len(self.code_ids)
        self.special_ids = set(range(4)) | set(self.code_ids.values())
        if self.nllb:
            self.special_ids.add(self.size - 1)  # <mask>

    def piece_id(self, piece: str) -> int:
        if self.nllb:
            if piece in SPECIALS:
                return SPECIALS.index(piece)
            i = self.sp.piece_to_id(piece)
            return i + 1 if i else 3
        return self.encoder.get(piece, self.encoder["<unk>"])

    def encode(self, text: str, src_code: str) -> List[int]:
        pieces = self.sp.encode(text, out_type=str)
        if not pieces:
            return [2]
        return [self.code_ids[src_code]] + [self.piece_id(p) for p in pieces] + [2]

    def decode(self, ids: List[int]) -> str:
        kept = [i for i in ids if i not in self.special_ids]
        if self.nllb:
            tokens = [self.sp.id_to_piece(i - 1) for i in kept]
            return "".join(tokens).replace("\u2581", " ").strip()
        return self.sp.decode([self.decoder.get(i, "<unk>") for i in kept])


def translate(model_dir: str, texts: List[str], src_code: str, tgt_code: str,
              max_length: int) -> List[tuple]:
    """Greedy translations of texts, one at a time, as (text, the smallest margin between a
    chosen token and the next candidate: below 1e-3 a batch's rounding may choose otherwise)."""
    import torch

    import m2m_reference as m2m
    import marian_reference as mr

    tok = ReferenceTokenizer(model_dir)
    model = m2m.M2mModel(model_dir)
    out = []
    with torch.inference_mode():
        for text in texts:
            source = tok.encode(text, src_code)
            if source == [2]:
                out.append(("", float("inf")))
                continue
            model.forced_first = [tok.code_ids[tgt_code]]
            margins: list = []
            ids = mr.greedy_search(model, [source], max_length, trace=margins)[0]["ids"]
            m = [x for x in margins[0][1:] if x != float("inf")]
            out.append((tok.decode(ids), min(m, default=float("inf"))))
    return out


def make_cases(model_dir: str, seed: int, n: int = 16, max_length: int = 24) -> dict:
    import torch

    import m2m_reference as m2m
    import marian_reference as mr

    tok = ReferenceTokenizer(model_dir)
    model = m2m.M2mModel(model_dir)
    rng = random.Random(seed + 1)
    codes = list(tok.code_ids)
    texts = [random_text(rng, unseen=(i % 4 == 3)) for i in range(n)]
    src = [rng.choice(codes) for _ in texts]
    tgt = [rng.choice(codes) for _ in texts]
    sources = [tok.encode(t, s) for t, s in zip(texts, src)]
    with torch.inference_mode():
        model.forced_first = [tok.code_ids[t] for t in tgt]
        margins: list = []
        greedy = mr.greedy_search(model, sources, max_length, trace=margins)
    cases = []
    for i, text in enumerate(texts):
        m = [x for x in margins[i][1:] if x != float("inf")]
        cases.append({"text": text, "source_code": src[i], "target_code": tgt[i],
                      "source": sources[i], "ids": greedy[i]["ids"],
                      "translation": tok.decode(greedy[i]["ids"]),
                      "margin": min(m, default=float("inf"))})
    # Decoding alone, over random ids (codes, specials, pieces) the model may never produce.
    decodes = []
    for _ in range(20):
        ids = [rng.randrange(tok.size) for _ in range(rng.randint(0, 12))]
        decodes.append({"ids": ids, "text": tok.decode(ids)})
    return {"flavour": "nllb" if tok.nllb else "m2m100", "size": tok.size,
            "max_length": max_length, "cases": cases, "decodes": decodes}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make", required=True, help="the directory to write (or read, without "
                    "--flavour)")
    ap.add_argument("--flavour", choices=["nllb", "m2m100"])
    ap.add_argument("--explicit_ids", action="store_true",
                    help="NLLB: write the codes' ids in added_tokens_decoder")
    ap.add_argument("--codes", help="the language codes, comma-separated (default: a few)")
    ap.add_argument("--model", action="store_true", help="write a random checkpoint beside it")
    ap.add_argument("--cases", help="translate random texts with it, into this JSON file")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.flavour:
        codes = args.codes.split(",") if args.codes else None
        size = make_tokenizer(args.make, args.flavour, args.seed, explicit_ids=args.explicit_ids,
                              codes=codes)
        if args.model:
            import m2m_reference as m2m
            m2m.make_random_checkpoint(args.make, args.seed, vocab=size, d_model=32)
    if args.cases:
        import torch
        torch.set_num_threads(1)
        with open(args.cases, "w", encoding="utf-8") as f:
            json.dump(make_cases(args.make, args.seed), f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
