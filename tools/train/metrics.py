"""Corpus BLEU and chrF, written to give sacreBLEU 2.x's default numbers.

BLEU: `13a` tokenisation (mteval-v13a), cased, 4-grams, one reference, clipped n-gram counts summed
over the corpus, 'exp' smoothing (a zero count at order n gets precision 1/(2^k * total_n), k
counting the zero orders so far), score 0 when no n-gram of any order matches, brevity penalty
exp(1 - ref_len/sys_len) when the system is shorter.

chrF: character n-grams of orders 1..6 with whitespace removed, statistics summed over the corpus,
precision and recall averaged over the orders where both hypothesis and reference have n-grams,
F-beta with beta = 2 (sacreBLEU's default `eps_smoothing=False`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import List, Sequence

_13A = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # punctuation
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period/comma unless preceded by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # period/comma unless followed by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # dash after a digit
]


def tokenize_13a(line: str) -> str:
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                .replace("&gt;", ">"))
    line = f" {line} "
    for pattern, repl in _13A:
        line = pattern.sub(repl, line)
    return " ".join(line.split())


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu_stats(hyps: Sequence[str], refs: Sequence[str], order: int = 4):
    """-> (correct[order], total[order], sys_len, ref_len) summed over the corpus."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    correct = [0] * order
    total = [0] * order
    sys_len = ref_len = 0
    for h, r in zip(hyps, refs):
        ht = tokenize_13a(h.rstrip()).split()
        rt = tokenize_13a(r.rstrip()).split()
        sys_len += len(ht)
        ref_len += len(rt)
        for n in range(1, order + 1):
            hc, rc = _ngrams(ht, n), _ngrams(rt, n)
            total[n - 1] += sum(hc.values())
            correct[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
    return correct, total, sys_len, ref_len


def bleu_from_stats(correct, total, sys_len, ref_len) -> dict:
    order = len(correct)
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1.0 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * order
    if not any(correct):
        return {"bleu": 0.0, "precisions": precisions, "bp": bp, "sys_len": sys_len,
                "ref_len": ref_len}
    smooth = 1.0
    for n in range(order):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth *= 2
            precisions[n] = 100.0 / (smooth * total[n])
        else:
            precisions[n] = 100.0 * correct[n] / total[n]
    log_sum = sum(math.log(p) if p > 0 else -9999999999 for p in precisions)
    return {"bleu": bp * math.exp(log_sum / order), "precisions": precisions, "bp": bp,
            "sys_len": sys_len, "ref_len": ref_len}


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str]) -> dict:
    return bleu_from_stats(*bleu_stats(hyps, refs))


def chrf_stats(hyps: Sequence[str], refs: Sequence[str], order: int = 6) -> List[int]:
    """Flat [hyp_count, ref_count, matches] per order 1..order, summed over the corpus."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    stats = [0] * (3 * order)
    for h, r in zip(hyps, refs):
        h = "".join(h.split())
        r = "".join(r.split())
        for n in range(1, order + 1):
            hc = Counter(h[i:i + n] for i in range(len(h) - n + 1))
            rc = Counter(r[i:i + n] for i in range(len(r) - n + 1))
            stats[3 * (n - 1)] += sum(hc.values())
            stats[3 * (n - 1) + 1] += sum(rc.values())
            stats[3 * (n - 1) + 2] += sum(min(c, rc[g]) for g, c in hc.items())
    return stats


def chrf_from_stats(stats: Sequence[int], beta: float = 2.0) -> float:
    factor = beta ** 2
    avg_p = avg_r = 0.0
    eff = 0
    for i in range(len(stats) // 3):
        n_hyp, n_ref, n_match = stats[3 * i:3 * i + 3]
        if n_hyp > 0 and n_ref > 0:
            avg_p += n_match / n_hyp
            avg_r += n_match / n_ref
            eff += 1
    if eff == 0:
        return 0.0
    avg_p /= eff
    avg_r /= eff
    if avg_p + avg_r == 0:
        return 0.0
    return 100.0 * (1 + factor) * avg_p * avg_r / (factor * avg_p + avg_r)


def corpus_chrf(hyps: Sequence[str], refs: Sequence[str]) -> float:
    return chrf_from_stats(chrf_stats(hyps, refs))
