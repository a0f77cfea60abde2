#!/usr/bin/env python3
"""Writes a random checkpoint directory in the Hugging Face Marian (OPUS-MT) layout.

The directory holds what an opus-mt repository holds (docs/marian-format.md section 1):
config.json (every key of section 2.1), generation_config.json (2.3), tokenizer_config.json,
special_tokens_map.json, vocab.json (opus-mt convention: "</s>"=0, "<unk>"=1, the pieces of both
SentencePiece models without duplicates, "<pad>"=V-1), source.spm / target.spm (tiny unigram
models trained with spm_train on generated or given text) and model.safetensors written by hand
(section 7: u64 header length, JSON header with __metadata__ {"format": "pt"} padded with spaces
to a multiple of 8, little-endian row-major data).

With --vocab N the vocabulary is synthetic (N pieces, no .spm files): used by the benchmark,
which feeds ids directly.

Weights are random but chosen so that a model's outputs are not degenerate: embeddings with a
larger std than HF's 0.02 (so logits have a spread of a few units), a zero <pad> embedding row
and zero <pad> bias (as the converter writes), and a positive final_logits_bias on EOS so that
greedy/beam outputs stop at varied lengths.

Example (the fixture model):
  /usr/bin/python3 tools/reference/make_random_model.py --out DIR --d_model 64 \
      --encoder_layers 2 --decoder_layers 3 --heads 4 --ffn 128 --spm_vocab_size 250 \
      --max_position_embeddings 256 --activation swish --dtype f32 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marian_reference import write_safetensors, sinusoidal_table  # noqa: E402

# Small word lists for a generated training text (the spm models only need plausible pieces).
_EN_WORDS = """the a an this that these those my your our their his her its one two three some
many every no all each other new old good bad big small long short first last next open close
file files folder window windows menu button text page pages line lines image images document
documents program programs system systems user users name names value values option options
setting settings error errors message messages list lists table tables cell cells row rows
column columns data server client network connection password account key keys time date day
days week year number numbers size color colour font style view tool tools help search result
results project version update updates package packages library device devices screen printer
printing print save saved open opened select selected selection delete deleted remove removed
add added create created change changed changes show shows shown hide hidden use used using
allow allows allowed enable enabled disable disabled start started stop stopped run running
install installed load loaded find found read write written copy paste move moved insert edit
type enter click choose check checked can cannot could should would will must may is are was
were be been has have had do does did not and or but if when while because before after with
without from into onto over under between through for to of in on at by about as than then
there here where which who what how why again also only just still already always never often
please you we they it he she I me us them river mountain house garden city country story king
queen dragon castle forest village road bridge friend enemy battle army soldier sword horse
night morning evening light dark water fire stone gold silver quickly slowly carefully""".split()

_DE_WORDS = """der die das ein eine einer einen dieser diese dieses mein dein unser ihr sein
neu neue neuen alt alte gut gute schlecht groß große klein kleine lang kurz erste letzte nächste
öffnen schließen Datei Dateien Ordner Fenster Menü Schaltfläche Text Seite Seiten Zeile Zeilen
Bild Bilder Dokument Dokumente Programm Programme System Systeme Benutzer Name Namen Wert Werte
Option Optionen Einstellung Einstellungen Fehler Nachricht Nachrichten Liste Listen Tabelle
Tabellen Zelle Zellen Spalte Spalten Daten Netzwerk Verbindung Passwort Konto Schlüssel Zeit
Datum Tag Tage Woche Jahr Zahl Zahlen Größe Farbe Schrift Stil Ansicht Werkzeug Werkzeuge Hilfe
Suche Ergebnis Ergebnisse Projekt Version Aktualisierung Paket Pakete Bibliothek Gerät Geräte
Bildschirm Drucker drucken speichern gespeichert geöffnet auswählen ausgewählt Auswahl löschen
gelöscht entfernen entfernt hinzufügen hinzugefügt erstellen erstellt ändern geändert Änderungen
zeigen anzeigen angezeigt verbergen versteckt verwenden verwendet erlauben erlaubt aktivieren
aktiviert deaktivieren deaktiviert starten gestartet stoppen beenden laufen installieren
installiert laden geladen finden gefunden lesen schreiben geschrieben kopieren einfügen
verschieben bearbeiten eingeben klicken wählen prüfen kann können konnte sollte würde wird muss
darf ist sind war waren sein gewesen hat haben hatte tun nicht und oder aber wenn während weil
vor nach mit ohne von aus in an auf über unter zwischen durch für zu bei als dann dort hier wo
welche wer was wie warum wieder auch nur noch schon immer nie oft bitte Sie wir sie es er ich
mich uns ihnen Fluss Berg Haus Garten Stadt Land Geschichte König Königin Drache Burg Wald Dorf
Straße Brücke Freund Feind Schlacht Heer Soldat Schwert Pferd Nacht Morgen Abend Licht dunkel
Wasser Feuer Stein Gold Silber schnell langsam vorsichtig Größe Maße Übersicht""".split()


def _generate_text(words, n_lines: int, rng: random.Random) -> str:
    lines = []
    for _ in range(n_lines):
        n = rng.randint(2, 16)
        ws = [rng.choice(words) for _ in range(n)]
        if rng.random() < 0.7:
            ws[0] = ws[0][:1].upper() + ws[0][1:]
        if rng.random() < 0.15:
            ws.insert(rng.randint(0, len(ws)), str(rng.randint(0, 2024)))
        if rng.random() < 0.2:
            i = rng.randint(0, len(ws) - 1)
            ws[i] = ws[i] + rng.choice([",", ":", ";"])
        if rng.random() < 0.1:
            i = rng.randint(0, len(ws) - 1)
            ws[i] = '"' + ws[i] + '"'
        lines.append(" ".join(ws) + rng.choice([".", ".", ".", "?", "!", ""]))
    return "\n".join(lines) + "\n"


def _train_spm(text_path: str, prefix: str, vocab_size: int, seed: int) -> None:
    # Relative paths (run inside the directory): the trainer spec stored in the .spm records
    # them, and a random temporary directory name would make the output non-reproducible.
    work = os.path.dirname(text_path)
    cmd = ["spm_train", f"--input={os.path.basename(text_path)}",
           f"--model_prefix={os.path.relpath(prefix, work)}", f"--vocab_size={vocab_size}",
           "--model_type=unigram", "--character_coverage=1.0", "--num_threads=1",
           f"--random_seed={seed}", "--minloglevel=2"]
    subprocess.run(cmd, check=True, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _spm_pieces(model_path: str):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=model_path)
    out = []
    for i in range(sp.get_piece_size()):
        if sp.is_unknown(i) or sp.is_control(i):  # spm's own <unk>, <s>, </s>
            continue
        out.append(sp.id_to_piece(i))
    return out


def build_vocab(args, out_dir: str, rng: random.Random):
    """Returns the ordered list of vocabulary pieces (index = model id)."""
    if args.vocab:
        if args.vocab < 4:
            raise SystemExit("--vocab must be >= 4")
        return ["</s>", "<unk>"] + [f"\u2581w{i}" for i in range(args.vocab - 3)] + ["<pad>"]
    with tempfile.TemporaryDirectory() as tmp:
        texts = []
        for side, words, given in (("source", _EN_WORDS, args.source_text),
                                   ("target", _DE_WORDS, args.target_text)):
            path = os.path.join(tmp, f"{side}.txt")
            if given:
                with open(given, encoding="utf-8") as f:
                    content = f.read()
            else:
                content = _generate_text(words, args.spm_lines, rng)
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
            texts.append(path)
            prefix = os.path.join(tmp, side)
            _train_spm(path, prefix, args.spm_vocab_size, args.seed)
            os.replace(prefix + ".model", os.path.join(out_dir, f"{side}.spm"))
    pieces = ["</s>", "<unk>"]
    seen = set(pieces)
    for side in ("source", "target"):
        for p in _spm_pieces(os.path.join(out_dir, f"{side}.spm")):
            if p not in seen:
                seen.add(p)
                pieces.append(p)
    for code in args.language_codes:
        if code not in seen:
            seen.add(code)
            pieces.append(code)
    pieces.append("<pad>")
    return pieces


def build_weights(args, V: int, pad: int, eos: int):
    """Random float32 weights keyed by HF names (shared or separate embeddings, lm_head)."""
    g = torch.Generator().manual_seed(args.seed)
    D, Fe = args.d_model, args.ffn

    def randn(*shape, std):
        return (torch.randn(*shape, generator=g) * std).numpy().astype(np.float32)

    w = {}

    def embedding():
        e = randn(V, D, std=args.emb_std)
        e[pad] = 0.0
        return e

    if args.share_embeddings:
        w["model.shared.weight"] = embedding()
        if args.store_embed_aliases:
            w["model.encoder.embed_tokens.weight"] = w["model.shared.weight"].copy()
            w["model.decoder.embed_tokens.weight"] = w["model.shared.weight"].copy()
    else:
        w["model.encoder.embed_tokens.weight"] = embedding()
        w["model.decoder.embed_tokens.weight"] = embedding()
    dec_embed_name = ("model.shared.weight" if args.share_embeddings
                      else "model.decoder.embed_tokens.weight")
    if args.nonzero_decoder_pad_row:
        if args.share_embeddings:
            raise SystemExit("--nonzero_decoder_pad_row needs --no_share_embeddings")
        w[dec_embed_name][pad] = randn(D, std=args.emb_std)
    if not args.tie_word_embeddings:
        w["lm_head.weight"] = randn(V, D, std=args.emb_std)
    elif args.store_lm_head:
        w["lm_head.weight"] = w[dec_embed_name].copy()
    bias = randn(1, V, std=args.bias_std)
    bias[0, eos] += args.eos_bias
    bias[0, pad] = 0.0
    w["final_logits_bias"] = bias

    def attention(prefix, vo_gain):
        for proj, gain in (("q_proj", args.qk_gain), ("k_proj", args.qk_gain),
                           ("v_proj", vo_gain), ("out_proj", vo_gain)):
            w[prefix + proj + ".weight"] = randn(D, D, std=gain / np.sqrt(D))
            w[prefix + proj + ".bias"] = randn(D, std=args.bias_std)

    def layer_norm(prefix):
        w[prefix + "weight"] = (1.0 + randn(D, std=0.1)).astype(np.float32)
        w[prefix + "bias"] = randn(D, std=args.bias_std)

    def ffn(prefix):
        w[prefix + "fc1.weight"] = randn(Fe, D, std=1.0 / np.sqrt(D))
        w[prefix + "fc1.bias"] = randn(Fe, std=args.bias_std)
        fc2 = randn(D, Fe, std=args.ffn_gain / np.sqrt(Fe))
        # Zero row sums: the activation's non-zero mean would otherwise add the same vector to
        # every position and collapse all decoder states onto one direction.
        fc2 -= fc2.mean(axis=1, keepdims=True)
        w[prefix + "fc2.weight"] = fc2.astype(np.float32)
        w[prefix + "fc2.bias"] = randn(D, std=args.bias_std)
        layer_norm(prefix + "final_layer_norm.")

    for i in range(args.encoder_layers):
        p = f"model.encoder.layers.{i}."
        attention(p + "self_attn.", args.self_attn_gain)
        layer_norm(p + "self_attn_layer_norm.")
        ffn(p)
    for i in range(args.decoder_layers):
        p = f"model.decoder.layers.{i}."
        attention(p + "self_attn.", args.self_attn_gain)
        layer_norm(p + "self_attn_layer_norm.")
        attention(p + "encoder_attn.", args.cross_attn_gain)
        layer_norm(p + "encoder_attn_layer_norm.")
        ffn(p)
    return w


def _convert(arr: np.ndarray, dtype: str):
    if dtype == "f32":
        return arr.astype(np.float32)
    if dtype == "f16":
        return arr.astype(np.float16)
    if dtype == "bf16":  # round-to-nearest-even via torch, stored as raw uint16 bits
        bits = torch.from_numpy(np.ascontiguousarray(arr)).bfloat16().view(torch.int16).numpy()
        return ("BF16", bits.view(np.uint16))
    raise ValueError(dtype)


def write_model(args) -> None:
    out = args.out
    os.makedirs(out, exist_ok=True)
    rng = random.Random(args.seed)
    pieces = build_vocab(args, out, rng)
    V = len(pieces)
    pad, eos = V - 1, 0  # opus-mt convention; <unk> is 1
    if args.max_position_embeddings < 2:
        raise SystemExit("--max_position_embeddings too small")
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({p: i for i, p in enumerate(pieces)}, f, ensure_ascii=False, indent=2)
        f.write("\n")

    P = args.max_position_embeddings
    hf_max_length = args.hf_max_length or P
    cfg = {
        "_name_or_path": f"transerve-random-marian-seed{args.seed}",
        "architectures": ["MarianMTModel"],
        "model_type": "marian",
        "vocab_size": V,
        "decoder_vocab_size": V,
        "share_encoder_decoder_embeddings": args.share_embeddings,
        "tie_word_embeddings": args.tie_word_embeddings,
        "d_model": args.d_model,
        "encoder_layers": args.encoder_layers,
        "decoder_layers": args.decoder_layers,
        "encoder_attention_heads": args.heads,
        "decoder_attention_heads": args.heads,
        "encoder_ffn_dim": args.ffn,
        "decoder_ffn_dim": args.ffn,
        "activation_function": args.activation,
        "max_position_embeddings": P,
        "scale_embedding": True,
        "pad_token_id": pad,
        "eos_token_id": eos,
        "bos_token_id": 0,
        "decoder_start_token_id": pad,
        "forced_eos_token_id": eos,
        "dropout": 0.1,
        "attention_dropout": 0.0,
        "activation_dropout": 0.0,
        "encoder_layerdrop": 0.0,
        "decoder_layerdrop": 0.0,
        "init_std": 0.02,
        "use_cache": True,
        "is_encoder_decoder": True,
        "num_hidden_layers": args.encoder_layers,
        # generation keys kept in config.json by the converter
        "num_beams": args.num_beams,
        "max_length": hf_max_length,
        "bad_words_ids": [[pad]],
        "length_penalty": 1.0,
        "early_stopping": False,
        "min_length": 0,
        "no_repeat_ngram_size": 0,
        "repetition_penalty": 1.0,
        "do_sample": False,
        "num_return_sequences": 1,
        # legacy keys MarianConfig does not read (see spec 2.1): present in opus-mt files
        "normalize_before": False,
        "normalize_embedding": False,
        "static_position_embeddings": True,
        "add_bias_logits": False,
        "add_final_layer_norm": False,
        "classif_dropout": 0.0,
        "gradient_checkpointing": False,
        "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[args.dtype],
    }
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    gen = {"bad_words_ids": [[pad]], "bos_token_id": 0, "decoder_start_token_id": pad,
           "eos_token_id": eos, "forced_eos_token_id": eos, "max_length": hf_max_length,
           "num_beams": args.num_beams, "pad_token_id": pad, "renormalize_logits": True}
    with open(os.path.join(out, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"source_lang": "eng", "target_lang": "deu", "separate_vocabs": False,
                   "model_max_length": 512}, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "special_tokens_map.json"), "w", encoding="utf-8") as f:
        json.dump({"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}, f, indent=2)
        f.write("\n")

    weights = build_weights(args, V, pad, eos)
    tensors = {name: _convert(arr, args.dtype) for name, arr in weights.items()}
    if args.embed_positions:
        table = sinusoidal_table(P, args.d_model)
        pos = table if args.positions_dtype == "f32" else _convert(table, args.positions_dtype)
        tensors["model.encoder.embed_positions.weight"] = pos
        tensors["model.decoder.embed_positions.weight"] = pos
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
    n_params = sum(int(np.prod(a.shape)) for a in weights.values())
    print(f"wrote {out}: vocab {V}, {n_params} parameters, dtype {args.dtype}", file=sys.stderr)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--d_model", type=int, default=64)
    ap.add_argument("--encoder_layers", type=int, default=2)
    ap.add_argument("--decoder_layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=0,
                    help="synthetic vocabulary of N pieces (no .spm files); 0 = train spm")
    ap.add_argument("--spm_vocab_size", type=int, default=400, help="pieces per spm model")
    ap.add_argument("--spm_lines", type=int, default=3000, help="generated training lines")
    ap.add_argument("--source_text", help="train source.spm on this text instead")
    ap.add_argument("--target_text", help="train target.spm on this text instead")
    ap.add_argument("--language_codes", nargs="*", default=[],
                    help="extra >>xx<< tokens appended to vocab.json before <pad>")
    ap.add_argument("--max_position_embeddings", type=int, default=256)
    ap.add_argument("--hf_max_length", type=int, default=0,
                    help="max_length in config/generation_config (HF semantics); default = P")
    ap.add_argument("--num_beams", type=int, default=4)
    ap.add_argument("--activation", choices=["swish", "silu", "relu", "gelu", "gelu_new"],
                    default="swish")
    ap.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--embed_positions", action="store_true",
                    help="store model.{encoder,decoder}.embed_positions.weight")
    ap.add_argument("--positions_dtype", choices=["f32", "f16", "bf16"], default="f32",
                    help="dtype of stored position tables (f32 keeps them exact)")
    ap.add_argument("--no_share_embeddings", dest="share_embeddings", action="store_false",
                    help="separate encoder/decoder embed_tokens, no model.shared")
    ap.add_argument("--no_tie", dest="tie_word_embeddings", action="store_false",
                    help="tie_word_embeddings false with an independent stored lm_head.weight")
    ap.add_argument("--store_lm_head", action="store_true",
                    help="store lm_head.weight (a copy) even when tied")
    ap.add_argument("--store_embed_aliases", action="store_true",
                    help="also store encoder/decoder embed_tokens copies of model.shared")
    ap.add_argument("--nonzero_decoder_pad_row", action="store_true",
                    help="random <pad> row in the decoder embedding (the start token's input)")
    ap.add_argument("--emb_std", type=float, default=0.3)
    ap.add_argument("--qk_gain", type=float, default=3.0,
                    help="std of q/k projections x sqrt(d_model) (attention sharpness)")
    ap.add_argument("--self_attn_gain", type=float, default=0.5,
                    help="std of v/out projections x sqrt(d_model), self-attention")
    ap.add_argument("--cross_attn_gain", type=float, default=1.0,
                    help="std of v/out projections x sqrt(d_model), cross-attention")
    ap.add_argument("--ffn_gain", type=float, default=8.0,
                    help="std of fc2 x sqrt(ffn); large so that decoder states depend on the "
                         "input token in a non-linear way (small gains give repetitive output)")
    ap.add_argument("--bias_std", type=float, default=0.1)
    ap.add_argument("--eos_bias", type=float, default=5.0,
                    help="added to final_logits_bias[eos] so outputs stop at varied lengths")
    args = ap.parse_args(argv)
    if args.d_model % args.heads:
        ap.error("d_model must be divisible by heads")
    return args


if __name__ == "__main__":
    write_model(parse_args())
