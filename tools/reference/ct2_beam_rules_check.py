#!/usr/bin/python3
"""Which beam rules give CTranslate2's beam-4 ids: the reference's Hugging Face rules or its
CTranslate2 rules (ct2_reference.ct2_beam_search), on the sources and outputs that
bench/ct2_directory_parity.py saved (its OUT folder: model-float32/, sources.txt,
ct2-float32-4.json). Lines FROM to TO; prints how many agree under each rule.

  /usr/bin/python3 tools/reference/ct2_beam_rules_check.py build/bench/ct2_directory_parity 0 100
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sentencepiece as spm  # noqa: E402
import ct2_reference as cr  # noqa: E402


def main() -> int:
    out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    model_dir = os.path.join(out, "model-float32")
    model = cr.Ct2Model(model_dir)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
    with open(os.path.join(model_dir, "shared_vocabulary.json")) as f:
        vocab = {t: i for i, t in enumerate(json.load(f))}
    with open(os.path.join(out, "sources.txt")) as f:
        lines = f.read().splitlines()
    with open(os.path.join(out, "ct2-float32-4.json")) as f:
        want = json.load(f)["ids"]
    eos = model.cfg.eos_id

    def strip(ids):
        return ids[:-1] if ids and ids[-1] == eos else ids

    agree = {"huggingface": 0, "ctranslate2": 0}
    for n in range(first, min(last, len(lines))):
        pieces = sp.encode(lines[n], out_type=str) + ["</s>"]
        ids = [vocab.get(p, vocab["<unk>"]) for p in pieces]
        for rules in agree:
            # max_length counts the EOS; CTranslate2's max_decoding_length 256 does not. Its
            # min_decoding_length 1 bans EOS at the first step: min_length 2 in our count.
            min_length = 2 if rules == "ctranslate2" else 0
            got = cr.translate_ids(model, [ids], 4, 257, min_length=min_length,
                                   beam_rules=rules)[0]["ids"]
            agree[rules] += strip(got) == strip(want[n])
    print(f"lines {first}-{min(last, len(lines))}: " +
          ", ".join(f"{rules} rules {n}" for rules, n in agree.items()) +
          " agree with CTranslate2's beam 4")
    return 0


if __name__ == "__main__":
    sys.exit(main())
