#!/usr/bin/env python3
"""Trains the Marian transformer (tools/train/model.py) on a parallel corpus, resumably.

Run the same command again to resume: the latest checkpoint in --ckpt_dir is loaded and training
continues exactly where it stopped (model, Adam state, learning-rate step, RNG states, epoch and
batch position; the batch order of an epoch is a function of --seed and the epoch only).

  OMP_WAIT_POLICY=ACTIVE nice -n 19 /usr/bin/python3 tools/train/train.py \
      --vocab_dir /work/data/train/vocab --work_dir /work/data/train \
      --max_epochs 8 --max_minutes 480

Stops at the first of --max_epochs, --max_minutes (cumulative training wall time over all
resumed runs), --session_minutes (this process), --max_steps, or SIGINT/SIGTERM; it always writes
a checkpoint before exiting. Checkpoints: CKPT_DIR/ckpt_<step>.pt every --ckpt_minutes (the last
--keep_last are kept) and CKPT_DIR/best.pt (model only, best validation BLEU).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_env  # noqa: E402,F401  (OMP_WAIT_POLICY, OPENBLAS_CORETYPE: before numpy/torch load)

import argparse  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
from data import collate, load_split, make_batches, read_lines  # noqa: E402
from metrics import corpus_bleu, corpus_chrf  # noqa: E402
from model import MarianMT  # noqa: E402

CKPT_RE = re.compile(r"ckpt_(\d+)\.pt$")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = ap.add_argument_group("data")
    g.add_argument("--vocab_dir", required=True, help="train_spm.py output (vocab.json, *.spm)")
    g.add_argument("--corpus_dir", default="/work/data/corpus")
    g.add_argument("--train_prefix", default="train", help="CORPUS_DIR/PREFIX.{en,de}")
    g.add_argument("--valid_prefix", default="valid")
    g.add_argument("--src_lang", default="en")
    g.add_argument("--tgt_lang", default="de")
    g.add_argument("--train_limit", type=int, default=0, help="use the first N pairs (smoke tests)")
    g.add_argument("--valid_limit", type=int, default=0)
    g.add_argument("--max_len", type=int, default=128,
                   help="drop training pairs with more tokens (EOS included) on either side")
    g.add_argument("--work_dir", default="/work/data/train", help="caches, logs")
    g.add_argument("--ckpt_dir", default="", help="default WORK_DIR/ckpt")
    g = ap.add_argument_group("model")
    g.add_argument("--d_model", type=int, default=256)
    g.add_argument("--heads", type=int, default=4)
    g.add_argument("--ffn", type=int, default=1024)
    g.add_argument("--encoder_layers", type=int, default=3)
    g.add_argument("--decoder_layers", type=int, default=3)
    g.add_argument("--activation", default="swish", choices=["swish", "relu", "gelu", "gelu_new"])
    g.add_argument("--max_position_embeddings", type=int, default=512)
    g.add_argument("--dropout", type=float, default=0.1)
    g.add_argument("--attention_dropout", type=float, default=0.0)
    g.add_argument("--activation_dropout", type=float, default=0.0)
    g = ap.add_argument_group("optimisation")
    g.add_argument("--batch_tokens", type=int, default=4096,
                   help="sentences x longest side (padded tokens) per batch")
    g.add_argument("--lr", type=float, default=7e-4, help="peak learning rate")
    g.add_argument("--warmup", type=int, default=2000, help="linear warm-up steps, then 1/sqrt")
    g.add_argument("--beta1", type=float, default=0.9)
    g.add_argument("--beta2", type=float, default=0.98)
    g.add_argument("--adam_eps", type=float, default=1e-9)
    g.add_argument("--clip_norm", type=float, default=1.0, help="0 = no clipping")
    g.add_argument("--label_smoothing", type=float, default=0.1)
    g.add_argument("--seed", type=int, default=1)
    g = ap.add_argument_group("budget and bookkeeping")
    g.add_argument("--max_epochs", type=float, default=8.0,
                   help="stop after this many epochs (fractions allowed)")
    g.add_argument("--max_minutes", type=float, default=0.0,
                   help="cumulative training minutes over all resumed runs (0 = no limit)")
    g.add_argument("--session_minutes", type=float, default=0.0,
                   help="minutes for this process (0 = no limit)")
    g.add_argument("--max_steps", type=int, default=0, help="total optimizer steps (0 = no limit)")
    g.add_argument("--ckpt_minutes", type=float, default=10.0)
    g.add_argument("--ckpt_steps", type=int, default=0, help="also checkpoint every N steps")
    g.add_argument("--keep_last", type=int, default=5)
    g.add_argument("--valid_minutes", type=float, default=30.0)
    g.add_argument("--valid_steps", type=int, default=0, help="also validate every N steps")
    g.add_argument("--valid_bleu_lines", type=int, default=300,
                   help="greedy BLEU on the first N validation lines (0 = loss only)")
    g.add_argument("--valid_max_length", type=int, default=128)
    g.add_argument("--log_seconds", type=float, default=60.0)
    g.add_argument("--bf16", action="store_true",
                   help="bfloat16 autocast (oneDNN) for the matrix products of the training pass "
                        "(weights, Adam state, softmax/loss, validation stay float32). Slower than "
                        "float32 OpenBLAS with the SkylakeX kernels on the 2-core VM (3.3 vs 1.7 "
                        "s/step); 2x faster than OpenBLAS's generic kernels; for GPUs")
    g.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda")
    return ap.parse_args(argv)


def model_config(args) -> dict:
    with open(os.path.join(args.vocab_dir, "vocab.json"), encoding="utf-8") as f:
        vocab_size = len(json.load(f))
    return {"vocab_size": vocab_size, "d_model": args.d_model,
            "encoder_layers": args.encoder_layers, "decoder_layers": args.decoder_layers,
            "heads": args.heads, "ffn": args.ffn,
            "activation": args.activation, "max_position_embeddings": args.max_position_embeddings,
            "dropout": args.dropout, "attention_dropout": args.attention_dropout,
            "activation_dropout": args.activation_dropout}


class Log:
    def __init__(self, path: str):
        self.f = open(path, "a", encoding="utf-8")

    def __call__(self, msg: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {msg}"
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()


def hms(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"


def list_checkpoints(ckpt_dir: str):
    out = []
    for p in glob.glob(os.path.join(ckpt_dir, "ckpt_*.pt")):
        m = CKPT_RE.search(p)
        if m:
            out.append((int(m.group(1)), p))
    return [p for _, p in sorted(out)]


def lr_at(step: int, args) -> float:
    """Inverse square root schedule; `step` counts from 1."""
    return args.lr * min(step / max(1, args.warmup), math.sqrt(max(1, args.warmup) / step))


class Trainer:
    def __init__(self, args):
        self.args = args
        self.ckpt_dir = args.ckpt_dir or os.path.join(args.work_dir, "ckpt")
        os.makedirs(self.ckpt_dir, exist_ok=True)
        self.log = Log(os.path.join(args.work_dir, "train.log"))
        torch.set_num_threads(args.threads)
        if args.device == "auto":
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        else:
            self.device = torch.device(args.device)
        self.cfg = model_config(args)
        self.pad = self.cfg["vocab_size"] - 1
        c, s, t = args.corpus_dir, args.src_lang, args.tgt_lang
        cache = os.path.join(args.work_dir, "data")
        train, self.data_fp = load_split(
            args.vocab_dir, os.path.join(c, f"{args.train_prefix}.{s}"),
            os.path.join(c, f"{args.train_prefix}.{t}"), cache, args.train_limit, self.log)
        pad_src = np.array([self.pad in train.src_ids(i) for i in range(len(train))]) \
            if (train.src == self.pad).any() else np.zeros(len(train), bool)
        pad_tgt = np.array([self.pad in train.tgt_ids(i) for i in range(len(train))]) \
            if (train.tgt == self.pad).any() else np.zeros(len(train), bool)
        limit = min(args.max_len, args.max_position_embeddings)
        keep = (train.src_len <= limit) & (train.tgt_len <= limit) & ~pad_src & ~pad_tgt
        self.n_total = len(train)
        self.train = train.subset(keep) if not keep.all() else train
        self.valid, _ = load_split(
            args.vocab_dir, os.path.join(c, f"{args.valid_prefix}.{s}"),
            os.path.join(c, f"{args.valid_prefix}.{t}"), cache, args.valid_limit, self.log)
        self.valid_refs = read_lines(os.path.join(c, f"{args.valid_prefix}.{t}"), args.valid_limit)
        self.log(f"train pairs {len(self.train)} (of {self.n_total}; "
                 f"{self.n_total - len(self.train)} over {limit} tokens dropped), "
                 f"target tokens/epoch {int(self.train.tgt_len.sum())}; "
                 f"valid pairs {len(self.valid)}")

        torch.manual_seed(args.seed)  # the initial weights; resume() restores the RNG states
        random.seed(args.seed)
        np.random.seed(args.seed)
        self.model = MarianMT(self.cfg).to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=args.lr,
                                    betas=(args.beta1, args.beta2), eps=args.adam_eps)
        self.state = {"step": 0, "epoch": 0, "batch_idx": 0, "train_seconds": 0.0,
                      "target_tokens": 0, "best_bleu": None, "valid": None}
        self.resume()
        n_params = sum(p.numel() for p in self.model.parameters())
        self.log(f"model {self.cfg} params {n_params / 1e6:.2f}M device {self.device} "
                 f"threads {torch.get_num_threads()}")
        self.stop_signal = None
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum, _frame):
        self.stop_signal = signal.Signals(signum).name
        self.log(f"{self.stop_signal} received: checkpointing after this step")

    # -- checkpoints -------------------------------------------------------------------------

    def resume(self) -> None:
        ckpts = list_checkpoints(self.ckpt_dir)
        if not ckpts:
            self.log(f"fresh start, checkpoints go to {self.ckpt_dir}")
            return
        path = ckpts[-1]
        ck = torch.load(path, map_location="cpu")
        if ck["model_cfg"] != self.cfg:
            raise SystemExit(f"{path} holds a different model ({ck['model_cfg']}) than the flags "
                             f"ask for ({self.cfg}); use another --ckpt_dir")
        if ck.get("data_fingerprint") != self.data_fp:
            self.log("WARNING: training data or vocabulary changed since the checkpoint: the "
                     "resumed data order is not the original one")
        for k in ("seed", "batch_tokens", "max_len"):
            if ck["args"].get(k) != getattr(self.args, k):
                self.log(f"WARNING: --{k} changed from {ck['args'].get(k)} to "
                         f"{getattr(self.args, k)}: the data order changes")
        self.model.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["optimizer"])
        self.state.update(ck["train_state"])
        rng = ck["rng"]
        torch.set_rng_state(rng["torch"])
        if rng.get("cuda") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
        random.setstate(rng["python"])
        np.random.set_state(rng["numpy"])
        s = self.state
        self.log(f"resumed from {path}: step {s['step']}, epoch {s['epoch']} "
                 f"batch {s['batch_idx']}, "
                 f"{hms(s['train_seconds'])} trained")

    def meta(self) -> dict:
        s = self.state
        n_batches = getattr(self, "n_batches", 0) or 1
        return {"step": s["step"], "epoch": s["epoch"], "batch_idx": s["batch_idx"],
                "epoch_float": s["epoch"] + s["batch_idx"] / n_batches,
                "train_seconds": s["train_seconds"], "target_tokens": s["target_tokens"],
                "valid": s["valid"], "train_pairs": len(self.train),
                "device_name": (torch.cuda.get_device_name(0) if self.device.type == "cuda"
                                else f"CPU ({os.cpu_count()} cores)")}

    def save(self, reason: str) -> str:
        s = self.state
        ck = {"model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
              "model_cfg": self.cfg, "args": vars(self.args), "train_state": dict(s),
              "scheduler": {"kind": "inverse_sqrt", "step": s["step"],
                            "lr": lr_at(max(1, s["step"]), self.args)},
              "rng": {"torch": torch.get_rng_state(),
                      "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                      "python": random.getstate(), "numpy": np.random.get_state()},
              "data_fingerprint": self.data_fp, "meta": self.meta(), "reason": reason}
        path = os.path.join(self.ckpt_dir, f"ckpt_{s['step']:08d}.pt")
        tmp = path + ".tmp"
        torch.save(ck, tmp)
        os.replace(tmp, path)
        ckpts = list_checkpoints(self.ckpt_dir)
        for old in ckpts[:-self.args.keep_last] if self.args.keep_last > 0 else []:
            os.remove(old)
        self.log(f"checkpoint {path} ({reason})")
        return path

    def save_best(self) -> None:
        ck = {"model": self.model.state_dict(), "model_cfg": self.cfg, "args": vars(self.args),
              "meta": self.meta()}
        path = os.path.join(self.ckpt_dir, "best.pt")
        torch.save(ck, path + ".tmp")
        os.replace(path + ".tmp", path)

    # -- validation ----------------------------------------------------------------------------

    def validate(self) -> dict:
        from export import write_model_dir
        from marian_reference import Translator

        t0 = time.time()
        a = self.args
        self.model.eval()
        loss_sum = nll_sum = 0.0
        n_tok = 0
        with torch.no_grad():
            for idx in make_batches(self.valid, a.batch_tokens, 0, 0, shuffle=False):
                b = [torch.from_numpy(x).to(self.device)
                     for x in collate(self.valid, idx, self.pad)]
                l, nll, n = self.model.loss(*b, label_smoothing=a.label_smoothing)
                loss_sum += float(l)
                nll_sum += float(nll)
                n_tok += n
        res = {"step": self.state["step"], "loss": loss_sum / n_tok, "nll": nll_sum / n_tok,
               "ppl": math.exp(min(50.0, nll_sum / n_tok))}
        n = min(a.valid_bleu_lines, len(self.valid))
        if n > 0:
            # Decode with the reference implementation on the exported weights: what the C++
            # engine will run, so validation BLEU also checks the export path.
            vdir = os.path.join(a.work_dir, "valid_model")
            write_model_dir(vdir, self.model.hf_tensors(), self.cfg, a.vocab_dir, "f32")
            tr = Translator(vdir)
            srcs = [self.valid.src_ids(i).tolist() for i in range(n)]
            order = sorted(range(n), key=lambda i: len(srcs[i]))
            hyps = [""] * n
            for k in range(0, n, 32):
                chunk = order[k:k + 32]
                batch = [srcs[i] for i in chunk]
                max_len = min(a.valid_max_length, a.max_position_embeddings - 1,
                              2 * max(len(x) for x in batch) + 10)
                for i, r in zip(chunk, tr.translate_ids(batch, beam_size=1, max_length=max_len)):
                    hyps[i] = tr.tokenizer.decode(r["ids"])
            refs = self.valid_refs[:n]
            res.update({"bleu": corpus_bleu(hyps, refs)["bleu"], "chrf": corpus_chrf(hyps, refs),
                        "bleu_lines": n, "sample": {"src_ids": srcs[0][:20], "hyp": hyps[0],
                                                    "ref": refs[0]}})
        res["seconds"] = round(time.time() - t0, 1)
        self.model.train()
        with open(os.path.join(a.work_dir, "valid.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(res, ensure_ascii=False) + "\n")
        msg = (f"[valid] step {res['step']} loss {res['loss']:.4f} nll {res['nll']:.4f} "
               f"ppl {res['ppl']:.2f}")
        if "bleu" in res:
            msg += (f" greedy BLEU {res['bleu']:.2f} chrF {res['chrf']:.2f} ({n} lines) | "
                    f"hyp: {res['sample']['hyp'][:100]!r}")
        self.log(msg + f" ({res['seconds']}s)")
        self.state["valid"] = {k: v for k, v in res.items() if k != "sample"}
        best = self.state["best_bleu"]
        if "bleu" in res and (best is None or res["bleu"] > best):
            self.state["best_bleu"] = res["bleu"]
            self.save_best()
        return res

    # -- training --------------------------------------------------------------------------------

    def run(self) -> int:
        a, s = self.args, self.state
        self.model.train()
        session_start = time.time()
        base_seconds = s["train_seconds"]
        last_ckpt = last_valid = last_log = time.time()
        win = {"loss": 0.0, "nll": 0.0, "tok": 0, "steps": 0, "t": time.time()}
        step_times = []
        stop = None
        saved_at_step = -1

        def elapsed_total():
            return base_seconds + (time.time() - session_start)

        while stop is None:
            if s["epoch"] >= math.ceil(a.max_epochs):
                stop = "max_epochs"
                break
            batches = make_batches(self.train, a.batch_tokens, a.seed, s["epoch"])
            self.n_batches = len(batches)
            # fractional --max_epochs: stop inside the last epoch
            frac_end = len(batches)
            if a.max_epochs < s["epoch"] + 1:
                frac_end = int(round((a.max_epochs - s["epoch"]) * len(batches)))
            while s["batch_idx"] < len(batches):
                if s["batch_idx"] >= frac_end:
                    stop = "max_epochs"
                elif a.max_steps and s["step"] >= a.max_steps:
                    stop = "max_steps"
                elif a.max_minutes and elapsed_total() >= a.max_minutes * 60:
                    stop = "max_minutes"
                elif a.session_minutes and time.time() - session_start >= a.session_minutes * 60:
                    stop = "session_minutes"
                elif self.stop_signal:
                    stop = self.stop_signal
                if stop:
                    break
                t_step = time.time()
                idx = batches[s["batch_idx"]]
                src, src_mask, tgt_in, tgt_out = (torch.from_numpy(x).to(self.device)
                                                  for x in collate(self.train, idx, self.pad))
                lr = lr_at(s["step"] + 1, a)
                for g in self.opt.param_groups:
                    g["lr"] = lr
                with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=a.bf16):
                    loss_sum, nll_sum, n_tok = self.model.loss(src, src_mask, tgt_in, tgt_out,
                                                               a.label_smoothing)
                self.opt.zero_grad(set_to_none=True)
                (loss_sum / n_tok).backward()
                if a.clip_norm > 0:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), a.clip_norm)
                self.opt.step()
                s["step"] += 1
                s["batch_idx"] += 1
                s["target_tokens"] += n_tok
                win["loss"] += float(loss_sum)
                win["nll"] += float(nll_sum)
                win["tok"] += n_tok
                win["steps"] += 1
                step_times.append(time.time() - t_step)
                step_times = step_times[-200:]
                s["train_seconds"] = elapsed_total()
                now = time.time()
                if now - last_log >= a.log_seconds:
                    self._progress(win, step_times, elapsed_total(), len(batches), lr)
                    win = {"loss": 0.0, "nll": 0.0, "tok": 0, "steps": 0, "t": time.time()}
                    last_log = now
                if (a.valid_steps and s["step"] % a.valid_steps == 0) or \
                        (a.valid_minutes and now - last_valid >= a.valid_minutes * 60):
                    self.validate()
                    last_valid = time.time()
                if (a.ckpt_steps and s["step"] % a.ckpt_steps == 0) or \
                        (a.ckpt_minutes and now - last_ckpt >= a.ckpt_minutes * 60):
                    s["train_seconds"] = elapsed_total()
                    self.save("periodic")
                    saved_at_step = s["step"]
                    last_ckpt = time.time()
            if stop is None:
                s["epoch"] += 1
                s["batch_idx"] = 0
                self.log(f"epoch {s['epoch']} done at step {s['step']} ({hms(elapsed_total())})")
        if win["steps"]:
            self._progress(win, step_times, elapsed_total(), getattr(self, "n_batches", 1),
                           lr_at(max(1, s["step"]), a))
        if stop not in ("SIGINT", "SIGTERM") and s["step"] > 0 and saved_at_step != s["step"] \
                and (self.state["valid"] or {}).get("step") != s["step"]:
            self.validate()
        s["train_seconds"] = elapsed_total()
        if saved_at_step != s["step"] or stop:
            self.save(f"stop: {stop}")
        self.log(f"stopped: {stop} at step {s['step']}, epoch {self.meta()['epoch_float']:.3f}, "
                 f"{hms(s['train_seconds'])} trained in total")
        # a signal is an interruption, not the end of the budget: callers (run_all.sh) stop
        return 2 if stop in ("SIGINT", "SIGTERM") else 0

    def _progress(self, win, step_times, total_s, n_batches, lr) -> None:
        a, s = self.args, self.state
        dt = max(1e-9, time.time() - win["t"])
        tps = win["tok"] / dt
        sps = sum(step_times) / max(1, len(step_times))
        wall_per_step = dt / max(1, win["steps"])
        ep = s["epoch"] + s["batch_idx"] / max(1, n_batches)
        limits = []
        left_steps = (a.max_epochs - ep) * n_batches
        limits.append((left_steps * wall_per_step, f"max_epochs {a.max_epochs:g}"))
        if a.max_minutes:
            limits.append((a.max_minutes * 60 - total_s, f"max_minutes {a.max_minutes:g}"))
        if a.max_steps:
            limits.append(((a.max_steps - s["step"]) * wall_per_step, f"max_steps {a.max_steps}"))
        eta, which = min(limits)
        self.log(f"[train] step {s['step']} | epoch {ep:.3f} ({s['batch_idx']}/{n_batches}) | "
                 f"loss {win['loss'] / max(1, win['tok']):.4f} "
                 f"nll {win['nll'] / max(1, win['tok']):.4f}"
                 f" | lr {lr:.2e} | {tps:.0f} tgt tok/s | {sps:.2f} s/step | "
                 f"trained {hms(total_s)} | ETA {hms(eta)} ({which})")


def main(argv=None) -> int:
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    return Trainer(args).run()


if __name__ == "__main__":
    sys.exit(main())
