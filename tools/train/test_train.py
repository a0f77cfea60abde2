#!/usr/bin/env python3
"""Checks of the training pipeline (about 30 s on the 2-core VM):

* the training module (eval mode) computes the same logits as the PyTorch reference
  (tools/reference/marian_reference.py) on its exported weights, for a padded batch, through
  both the reference's full decoder and its incremental (KV-cache) decoder, and greedy ids agree;
* the loss leaves <pad> out of the softmax, with the smoothing mass spread over the other ids;
* resuming is exact: N steps in one run == N/2 steps, stop, resume to N (bitwise model and
  Adam state), across an epoch boundary;
* average.py and export.py produce a directory the reference loads.

  /usr/bin/python3 tools/train/test_train.py            (needs spm_train; uses a temp dir)
"""

import contextlib
import io
import os
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import average  # noqa: E402
import export  # noqa: E402
import train  # noqa: E402
import train_spm  # noqa: E402
from marian_reference import MarianModel, Translator, greedy_search  # noqa: E402
from model import MarianMT  # noqa: E402

EN = ["Open the file.", "Close the window", "Save the document as a new file.",
      "The printer is not connected.", "Select all rows in the table.", "Delete the folder?",
      "Show hidden files", "Search for packages", "The password is wrong.", "Add a new column"]
DE = ["Öffnen Sie die Datei.", "Fenster schließen", "Speichern Sie das Dokument als neue Datei.",
      "Der Drucker ist nicht verbunden.", "Alle Zeilen der Tabelle auswählen.",
      "Den Ordner löschen?", "Versteckte Dateien anzeigen", "Nach Paketen suchen",
      "Das Passwort ist falsch.", "Eine neue Spalte hinzufügen"]


def _quiet(fn, *a, **kw):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn(*a, **kw)


class Pipeline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(1)
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.corpus = os.path.join(d, "corpus")
        os.makedirs(cls.corpus)
        rng = np.random.default_rng(0)
        for split, n in (("train", 240), ("valid", 12)):
            idx = rng.integers(0, len(EN), size=n)
            for lang, lines in (("en", EN), ("de", DE)):
                with open(os.path.join(cls.corpus, f"{split}.{lang}"), "w", encoding="utf-8") as f:
                    f.write("\n".join(lines[i] for i in idx) + "\n")
        cls.vocab = os.path.join(d, "vocab")
        _quiet(train_spm.main, ["--src", os.path.join(cls.corpus, "train.en"),
                                "--tgt", os.path.join(cls.corpus, "train.de"),
                                "--out", cls.vocab, "--vocab_size", "120", "--threads", "1"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def _cfg(self, **kw):
        cfg = {"vocab_size": 120, "d_model": 32, "encoder_layers": 2, "decoder_layers": 2,
               "heads": 4, "ffn": 64, "activation": "swish", "max_position_embeddings": 64,
               "dropout": 0.1, "attention_dropout": 0.0, "activation_dropout": 0.0}
        cfg.update(kw)
        return cfg

    def _random_model(self, seed=3):
        torch.manual_seed(seed)
        m = MarianMT(self._cfg())
        with torch.no_grad():  # perturb everything so no parameter is trivially 0 or 1
            for name, p in m.named_parameters():
                p.add_(torch.randn_like(p) * 0.2)
            m.model.shared.weight[m.pad_id].zero_()
            m.final_logits_bias[0, m.pad_id] = 0.0
        return m.eval()

    def test_forward_matches_reference(self):
        m = self._random_model()
        out = os.path.join(self.tmp.name, "parity")
        export.write_model_dir(out, m.hf_tensors(), m.cfg, self.vocab, "f32")
        ref = MarianModel(out)
        g = torch.Generator().manual_seed(7)
        lengths = [9, 5, 7]
        src_lists = [torch.randint(2, 119, (n - 1,), generator=g).tolist() + [0] for n in lengths]
        s = max(lengths)
        src = torch.full((3, s), m.pad_id, dtype=torch.long)
        mask = torch.zeros(3, s, dtype=torch.bool)
        for i, x in enumerate(src_lists):
            src[i, :len(x)] = torch.tensor(x)
            mask[i, :len(x)] = True
        tgt_in = torch.cat([torch.full((3, 1), m.pad_id, dtype=torch.long),
                            torch.randint(0, 119, (3, 5), generator=g)], dim=1)
        with torch.no_grad():
            mine = m(src, mask, tgt_in)
            enc_ref, enc_mask = ref.encode(src_lists)
            enc_mine = m.encode(src, mask)
            full = ref.decoder_full(enc_ref, enc_mask, tgt_in)
            state = ref.start_decoder(enc_ref, enc_mask, 1, 16)
            steps = torch.stack([ref.decode_step(state, tgt_in[:, t])
                                 for t in range(tgt_in.shape[1])], 1)
        for i, n in enumerate(lengths):  # padded encoder rows are don't-care
            torch.testing.assert_close(enc_mine[i, :n], enc_ref[i, :n], rtol=0, atol=1e-5)
        torch.testing.assert_close(mine, full, rtol=0, atol=1e-4)
        torch.testing.assert_close(mine, steps, rtol=0, atol=1e-4)
        self.assertGreater(float(mine.std()), 1.0)  # logits are not degenerate

        # greedy: the reference's ids == argmax decoding with the training module (pad banned)
        ids_ref = [r["ids"] for r in greedy_search(ref, src_lists, 8)]
        with torch.no_grad():
            for i, x in enumerate(src_lists):
                seq = [m.pad_id]
                xs = torch.tensor([x])
                for step in range(1, 9):
                    lg = m(xs, torch.ones_like(xs, dtype=torch.bool), torch.tensor([seq]))[0, -1]
                    lg[m.pad_id] = float("-inf")
                    if step == 8:  # forced EOS at max_length
                        lg[1:] = float("-inf")
                    seq.append(int(lg.argmax()))
                    if seq[-1] == 0:
                        break
                self.assertEqual(seq[1:], ids_ref[i])

    def test_loss_excludes_pad(self):
        m = self._random_model()
        src = torch.tensor([[5, 6, 0]])
        mask = torch.ones_like(src, dtype=torch.bool)
        tgt_out = torch.tensor([[7, 8, 0, m.pad_id]])
        tgt_in = torch.tensor([[m.pad_id, 7, 8, 0]])
        with torch.no_grad():
            loss, nll, n = m.loss(src, mask, tgt_in, tgt_out, 0.1)
            logits = m(src, mask, tgt_in)[0, :3]
        lp = torch.log_softmax(logits[:, :m.pad_id], -1)
        y = tgt_out[0, :3]
        exp_nll = -lp.gather(1, y[:, None])[:, 0]
        exp_loss = 0.9 * exp_nll - 0.1 * lp.mean(-1)
        self.assertEqual(n, 3)
        self.assertAlmostEqual(float(nll), float(exp_nll.sum()), places=4)
        self.assertAlmostEqual(float(loss), float(exp_loss.sum()), places=4)
        # --bf16: matrix products in bfloat16, loss still float32 and close
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            loss16, _, _ = m.loss(src, mask, tgt_in, tgt_out, 0.1)
        self.assertEqual(loss16.dtype, torch.float32)
        self.assertLess(abs(float(loss16) - float(loss)) / float(loss), 0.05)

    def _train(self, work, steps, extra=()):
        argv = ["--vocab_dir", self.vocab, "--corpus_dir", self.corpus, "--work_dir", work,
                "--d_model", "32", "--heads", "4", "--ffn", "64", "--encoder_layers", "2",
                "--decoder_layers", "2", "--max_position_embeddings", "64", "--batch_tokens", "120",
                "--warmup", "5", "--lr", "2e-3", "--max_steps", str(steps), "--valid_steps", "0",
                "--valid_minutes", "0", "--valid_bleu_lines", "4", "--ckpt_minutes", "0",
                "--log_seconds", "1000", "--keep_last", "2", *extra]
        return _quiet(train.main, argv)

    def test_exact_resume_and_export(self):
        a = os.path.join(self.tmp.name, "run_a")
        b = os.path.join(self.tmp.name, "run_b")
        self._train(a, 40)
        self._train(b, 17)
        self._train(b, 40)  # same command with a larger budget resumes from step 17
        ca = torch.load(train.list_checkpoints(os.path.join(a, "ckpt"))[-1])
        cb = torch.load(train.list_checkpoints(os.path.join(b, "ckpt"))[-1])
        self.assertEqual(ca["train_state"]["step"], 40)
        self.assertEqual(cb["train_state"]["step"], 40)
        self.assertGreaterEqual(ca["train_state"]["epoch"], 1, "the run should cross an epoch")
        for k in ("epoch", "batch_idx", "target_tokens"):
            self.assertEqual(ca["train_state"][k], cb["train_state"][k], k)
        for k, v in ca["model"].items():
            self.assertTrue(torch.equal(v, cb["model"][k]), f"model tensor {k} differs")
        sa, sb = ca["optimizer"]["state"], cb["optimizer"]["state"]
        for k in sa:
            for kk in ("exp_avg", "exp_avg_sq"):
                self.assertTrue(torch.equal(sa[k][kk], sb[k][kk]), f"adam {k} {kk} differs")
        self.assertTrue(torch.equal(ca["rng"]["torch"], cb["rng"]["torch"]))
        self.assertLessEqual(len(train.list_checkpoints(os.path.join(b, "ckpt"))), 2)

        # average.py + export.py (f16) -> the reference loads it and translates
        avg_path = os.path.join(self.tmp.name, "avg.pt")
        _quiet(average.main, ["--ckpt_dir", os.path.join(b, "ckpt"), "--last", "2",
                              "--out", avg_path])
        out = os.path.join(self.tmp.name, "exported")
        _quiet(export.main, ["--ckpt", avg_path, "--vocab_dir", self.vocab, "--out", out,
                             "--corpus_stats", "/nonexistent"])
        for name in ("config.json", "generation_config.json", "model.safetensors", "source.spm",
                     "target.spm", "vocab.json", "tokenizer_config.json", "README.md"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        tr = Translator(out)
        self.assertEqual(tr.model.stored_dtypes, ["F16"])
        r = tr.translate_ids([tr.tokenizer.encode("Open the file.")], beam_size=4, max_length=10)
        self.assertTrue(1 <= len(r[0]["ids"]) <= 10)


if __name__ == "__main__":
    unittest.main()
