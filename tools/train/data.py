"""Corpus encoding (cached) and deterministic length-bucketed token batches.

Sentences are encoded with the reference MarianTokenizer (tools/reference/marian_reference.py)
over the vocabulary directory written by train_spm.py, so training ids are exactly the ids the
inference tokenizer produces (source pieces + EOS). The target side uses the same shared
vocabulary (target.spm is source.spm), labels = pieces + EOS, decoder input = [pad] + labels[:-1].

The encoded corpus is cached as .npz under the work directory, keyed by a hash of vocab.json,
the spm model and the text files' sizes and modification times.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from typing import List, Tuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from marian_reference import MarianTokenizer  # noqa: E402


class Corpus:
    """Token ids of one split: flat int32 arrays with offsets."""

    def __init__(self, src: np.ndarray, src_off: np.ndarray, tgt: np.ndarray, tgt_off: np.ndarray):
        self.src, self.src_off, self.tgt, self.tgt_off = src, src_off, tgt, tgt_off
        self.src_len = np.diff(src_off).astype(np.int64)
        self.tgt_len = np.diff(tgt_off).astype(np.int64)

    def __len__(self) -> int:
        return len(self.src_len)

    def src_ids(self, i: int) -> np.ndarray:
        return self.src[self.src_off[i]:self.src_off[i + 1]]

    def tgt_ids(self, i: int) -> np.ndarray:
        return self.tgt[self.tgt_off[i]:self.tgt_off[i + 1]]

    def subset(self, keep: np.ndarray) -> "Corpus":
        idx = np.nonzero(keep)[0]
        s = [self.src_ids(i) for i in idx]
        t = [self.tgt_ids(i) for i in idx]
        return Corpus(*_flatten(s), *_flatten(t))


def _flatten(seqs) -> Tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(s) for s in seqs])
    flat = np.concatenate(seqs).astype(np.int32) if seqs else np.zeros(0, np.int32)
    return flat, off


def _fingerprint(vocab_dir: str, paths: List[str], limit: int) -> str:
    h = hashlib.sha256()
    for name in ("vocab.json", "source.spm"):
        with open(os.path.join(vocab_dir, name), "rb") as f:
            h.update(f.read())
    for p in paths:
        st = os.stat(p)
        h.update(f"{os.path.abspath(p)}:{st.st_size}:{int(st.st_mtime)}".encode())
    h.update(str(limit).encode())
    return h.hexdigest()[:16]


def read_lines(path: str, limit: int = 0) -> List[str]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.append(line.rstrip("\n"))
            if limit and len(out) >= limit:
                break
    return out


def load_split(vocab_dir: str, src_path: str, tgt_path: str, cache_dir: str, limit: int = 0,
               log=print) -> Tuple[Corpus, str]:
    """Encodes (or loads from cache) a parallel split. Returns (corpus, fingerprint)."""
    fp = _fingerprint(vocab_dir, [src_path, tgt_path], limit)
    os.makedirs(cache_dir, exist_ok=True)
    cache = os.path.join(cache_dir, f"{os.path.basename(src_path)}.{fp}.npz")
    if os.path.exists(cache):
        z = np.load(cache)
        return Corpus(z["src"], z["src_off"], z["tgt"], z["tgt_off"]), fp
    t0 = time.time()
    tok = MarianTokenizer(vocab_dir)
    src_lines = read_lines(src_path, limit)
    tgt_lines = read_lines(tgt_path, limit)
    if len(src_lines) != len(tgt_lines):
        raise SystemExit(f"{src_path} and {tgt_path} differ in line count")
    src = [np.asarray(tok.encode(s), dtype=np.int32) for s in src_lines]
    tgt = [np.asarray(tok.encode(s), dtype=np.int32) for s in tgt_lines]
    corpus = Corpus(*_flatten(src), *_flatten(tgt))
    tmp = cache + ".tmp.npz"
    np.savez(tmp, src=corpus.src, src_off=corpus.src_off, tgt=corpus.tgt, tgt_off=corpus.tgt_off)
    os.replace(tmp, cache)
    log(f"encoded {len(corpus)} pairs of {src_path} in {time.time() - t0:.0f}s "
        f"({int(corpus.src_len.sum())} source / {int(corpus.tgt_len.sum())} target tokens)")
    return corpus, fp


def make_batches(corpus: Corpus, batch_tokens: int, seed: int, epoch: int,
                 pool_sentences: int = 50000, shuffle: bool = True) -> List[np.ndarray]:
    """Deterministic batches for one epoch (a function of seed and epoch only).

    Shuffle, cut into pools of `pool_sentences`, sort each pool by (target, source) length, cut
    batches so that sentences x longest (source or target) <= batch_tokens, shuffle batch order.
    """
    n = len(corpus)
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(n) if shuffle else np.arange(n)
    longest = np.maximum(corpus.src_len, corpus.tgt_len)
    batches: List[np.ndarray] = []
    for start in range(0, n, pool_sentences):
        pool = order[start:start + pool_sentences]
        pool = pool[np.lexsort((corpus.src_len[pool], corpus.tgt_len[pool]))]
        cur: List[int] = []
        cur_max = 0
        for i in pool.tolist():
            m = max(cur_max, int(longest[i]))
            if cur and (len(cur) + 1) * m > batch_tokens:
                batches.append(np.asarray(cur, dtype=np.int64))
                cur, m = [], int(longest[i])
            cur.append(i)
            cur_max = m
        if cur:
            batches.append(np.asarray(cur, dtype=np.int64))
    if shuffle:
        perm = rng.permutation(len(batches))
        batches = [batches[i] for i in perm]
    return batches


def collate(corpus: Corpus, idx: np.ndarray, pad_id: int):
    """-> (src [B,S], src_mask [B,S] bool, tgt_in [B,T], tgt_out [B,T]) as numpy arrays."""
    b = len(idx)
    s = int(corpus.src_len[idx].max())
    t = int(corpus.tgt_len[idx].max())
    src = np.full((b, s), pad_id, dtype=np.int64)
    src_mask = np.zeros((b, s), dtype=bool)  # from lengths, not ids (a literal "<pad>" is a token)
    tgt_out = np.full((b, t), pad_id, dtype=np.int64)
    tgt_in = np.full((b, t), pad_id, dtype=np.int64)
    for r, i in enumerate(idx.tolist()):
        x = corpus.src_ids(i)
        y = corpus.tgt_ids(i)
        src[r, :len(x)] = x
        src_mask[r, :len(x)] = True
        tgt_out[r, :len(y)] = y
        tgt_in[r, 1:len(y)] = y[:-1]  # position 0 stays pad = decoder start
    return src, src_mask, tgt_in, tgt_out
