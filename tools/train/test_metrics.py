#!/usr/bin/env python3
"""Hand-computed checks of metrics.py (BLEU 13a / chrF as sacreBLEU 2.x computes them).

  /usr/bin/python3 tools/train/test_metrics.py
"""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics import (bleu_stats, chrf_stats, corpus_bleu, corpus_chrf,  # noqa: E402
                     tokenize_13a)


class Tokenize13a(unittest.TestCase):
    def test_punctuation_split(self):
        self.assertEqual(tokenize_13a("Hello, world."), "Hello , world .")
        self.assertEqual(tokenize_13a("(a) a/b $5 x:y"), "( a ) a / b $ 5 x : y")

    def test_numbers_keep_separators(self):
        self.assertEqual(tokenize_13a("Version 3.14, 1,000 files."), "Version 3.14 , 1,000 files .")

    def test_dash_after_digit_only(self):
        self.assertEqual(tokenize_13a("x-y 5-6"), "x-y 5 - 6")

    def test_apostrophe_is_not_split(self):
        self.assertEqual(tokenize_13a("It wasn't"), "It wasn't")

    def test_entities_and_whitespace(self):
        self.assertEqual(tokenize_13a("&quot;a&quot;  &amp;  b "), '" a " & b')


class Bleu(unittest.TestCase):
    def test_identical_is_100(self):
        self.assertAlmostEqual(corpus_bleu(["the cat sat on the mat"],
                                           ["the cat sat on the mat"])["bleu"], 100.0)

    def test_partial_with_exp_smoothing(self):
        # 1-grams 5/6, 2-grams 3/5, 3-grams 1/4, 4-grams 0/3 -> smoothed 1/(2*3); bp 1
        r = corpus_bleu(["the cat is on the mat"], ["the cat sat on the mat"])
        self.assertAlmostEqual(r["bleu"], 100 * (5 / 6 * 3 / 5 * 1 / 4 * 1 / 6) ** 0.25, places=10)
        self.assertAlmostEqual(r["bleu"], 37.992, places=3)

    def test_brevity_penalty(self):
        r = corpus_bleu(["the cat sat on the"], ["the cat sat on the mat"])
        self.assertAlmostEqual(r["bp"], math.exp(1 - 6 / 5))
        self.assertAlmostEqual(r["bleu"], 100 * math.exp(-0.2), places=10)

    def test_missing_order_gives_zero(self):
        # no 3-grams at all in the hypothesis: precision 0 at order 3 -> BLEU 0 (no effective order)
        self.assertEqual(corpus_bleu(["the cat"], ["the cat sat on the mat"])["bleu"], 0.0)

    def test_no_match_is_zero(self):
        self.assertEqual(corpus_bleu(["a b c d"], ["e f g h"])["bleu"], 0.0)

    def test_corpus_level_sums_statistics(self):
        hyps = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
        refs = ["The dog bit the man.", "It was not unexpected.", "The man bit him first."]
        correct, total, sys_len, ref_len = bleu_stats(hyps, refs)
        self.assertEqual(correct, [12, 6, 4, 3])
        self.assertEqual(total, [17, 14, 11, 8])
        self.assertEqual((sys_len, ref_len), (17, 17))
        expected = 100 * (12 / 17 * 6 / 14 * 4 / 11 * 3 / 8) ** 0.25
        self.assertAlmostEqual(corpus_bleu(hyps, refs)["bleu"], expected, places=10)
        self.assertAlmostEqual(expected, 45.07, places=2)

    def test_clipping(self):
        # "the the the the" vs "the cat": unigram matches clipped to 1 of 4; no higher orders
        c, t, _, _ = bleu_stats(["the the the the"], ["the cat"])
        self.assertEqual(c[0], 1)
        self.assertEqual(t[0], 4)


class Chrf(unittest.TestCase):
    def test_identical_is_100(self):
        self.assertAlmostEqual(corpus_chrf(["ab"], ["ab"]), 100.0)

    def test_symmetric_partial(self):
        # orders 1..3: matches 2/3, 1/2, 0/1 on both sides -> P = R = (2/3 + 1/2 + 0) / 3
        self.assertAlmostEqual(corpus_chrf(["abc"], ["abd"]), 100 * (2 / 3 + 1 / 2) / 3, places=10)

    def test_beta_2_and_whitespace_removed(self):
        # hyp "a b" -> "ab"; ref "abc": P = (1 + 1)/2 = 1, R = (2/3 + 1/2)/2 = 7/12
        p, r = 1.0, 7 / 12
        expected = 100 * 5 * p * r / (4 * p + r)
        self.assertAlmostEqual(corpus_chrf(["a b"], ["abc"]), expected, places=10)
        self.assertAlmostEqual(expected, 63.636, places=3)

    def test_corpus_statistics_are_summed(self):
        s = chrf_stats(["ab", "x"], ["ab", "y"])
        # order 1: hyp 3, ref 3, match 2; order 2: hyp 1, ref 1, match 1
        self.assertEqual(s[:6], [3, 3, 2, 1, 1, 1])
        self.assertAlmostEqual(corpus_chrf(["ab", "x"], ["ab", "y"]), 100 * (2 / 3 + 1) / 2,
                               places=10)

    def test_empty_hypothesis(self):
        self.assertEqual(corpus_chrf([""], ["abc"]), 0.0)


if __name__ == "__main__":
    unittest.main()
