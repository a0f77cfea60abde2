#!/usr/bin/python3
"""Writes the pytorch_model.bin fixtures of tests/fixtures/pytorch/ with torch.save.

  tiny-marian.zip.bin             the tiny-marian model (F32), zip format (torch.save's default),
                                  with the aliases Hugging Face state dicts carry: encoder and
                                  decoder embed_tokens and lm_head share model.shared's storage
  tiny-marian-variant.legacy.bin  tiny-marian-variant (F16 weights, F32 position tables), legacy
                                  format (_use_new_zipfile_serialization=False)
  mixed.zip.bin, mixed.legacy.bin F32/F16/BF16 tensors, a scalar, an empty tensor, views at a
                                  storage offset, two names on one tensor, an nn.Parameter
  mixed.safetensors               the same tensors as safetensors (the twin the test compares to)

Each .bin has a safetensors twin: the fixture model's model.safetensors, or mixed.safetensors.
Usage: /usr/bin/python3 tools/reference/make_pytorch_checkpoints.py   (needs python3-torch)
"""
import collections
import json
import os
import struct

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "pytorch")
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
NAMES = {v: k for k, v in DTYPES.items()}


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    tensors = collections.OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]) if raw else torch.zeros(
            0, dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def save(obj, name, legacy):
    torch.save(obj, os.path.join(OUT, name), _use_new_zipfile_serialization=not legacy)


def marian(model, name, legacy):
    model_dir = os.path.join(ROOT, "tests", "fixtures", model, "model")
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    config = json.load(open(os.path.join(model_dir, "config.json")))
    if "model.shared.weight" in tensors:
        aliases = ["model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"]
        if config.get("tie_word_embeddings", True):
            aliases.append("lm_head.weight")
        for alias in aliases:
            tensors.setdefault(alias, tensors["model.shared.weight"])
    save(tensors, name, legacy)


def mixed():
    g = torch.Generator().manual_seed(19)
    base = torch.randn(10, generator=g)
    rows = torch.randn(4, 3, generator=g)
    tensors = collections.OrderedDict([
        ("f32", torch.randn(3, 4, generator=g)),
        ("f16", torch.randn(5, generator=g).half()),
        ("bf16", torch.randn(2, 3, generator=g).bfloat16()),
        ("scalar", torch.tensor(1.5)),
        ("empty", torch.zeros(0, 3)),
        ("base", base),
        ("base_again", base),
        ("slice", base[2:8]),
        ("row", rows[1]),
        ("param", torch.nn.Parameter(torch.randn(2, 2, generator=g))),
    ])
    save(tensors, "mixed.zip.bin", legacy=False)
    save(tensors, "mixed.legacy.bin", legacy=True)
    write_safetensors(os.path.join(OUT, "mixed.safetensors"),
                      collections.OrderedDict((k, v.detach()) for k, v in tensors.items()))


def main():
    os.makedirs(OUT, exist_ok=True)
    marian("tiny-marian", "tiny-marian.zip.bin", legacy=False)
    marian("tiny-marian-variant", "tiny-marian-variant.legacy.bin", legacy=True)
    mixed()


if __name__ == "__main__":
    main()
