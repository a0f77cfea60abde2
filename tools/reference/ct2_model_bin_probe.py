#!/usr/bin/python3
"""Cross-checks transerve's model.bin reader (model/loader/ctranslate2_model_bin.cc) against files
written by CTranslate2 itself.

Needs the anchor kit's CTranslate2 build (PYTHONPATH=WORKDIR/pylib-dnnl, the Python module with
its _ext library) and numpy; it is a one-off check, never a build or test dependency.

For each quantization (float32 and int8 unless --quantizations says otherwise) it builds a small random TransformerSpec the way the
converters do (spec.validate(), spec.optimize(quantization), spec.save(dir)): 2 + 2 layers, a
shared vocabulary so the encoder embeddings and the output projection become aliases of the
decoder embeddings. It writes DIR/<quantization>/ (model.bin, config.json, vocabularies) and
DIR/<quantization>/expected.tsv, the variables and aliases the spec serialized:

  var<TAB>name<TAB>dtype<TAB>d0,d1,...<TAB>fnv1a   (empty shape for a scalar; fnv1a: the
                                                   64-bit FNV-1a hash of the bytes, in hex)
  alias<TAB>alias<TAB>target

Then, unless --no_lister, it compiles a small lister (below: Ct2ModelBin::Open, one line per
variable and alias in the same format) with g++ against this checkout's sources, runs it on each
model.bin and compares. --load also loads each directory with ctranslate2.Translator and
translates one sentence, showing CTranslate2 accepts the files.

  PYTHONPATH=/work/ct2/pylib-dnnl /usr/bin/python3 tools/reference/ct2_model_bin_probe.py \\
      --out /tmp/ct2-probe [--load]
"""
import argparse
import os
import subprocess
import sys

import numpy as np

import ctranslate2
from ctranslate2.specs import common_spec, model_spec, transformer_spec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

LISTER = r"""
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include "model/loader/ctranslate2_model_bin.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto model = transerve::Ct2ModelBin::Open(argv[1]);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", std::string(model.status().message()).c_str());
    return 1;
  }
  std::fprintf(stderr, "version %u spec %s revision %u: %zu variables, %zu aliases\n",
               model->binary_version(), model->spec_name().c_str(), model->spec_revision(),
               model->variables().size(), model->aliases().size());
  for (const auto& v : model->variables()) {
    std::string shape;
    for (size_t i = 0; i < v.shape.size(); ++i) {
      shape += (i ? "," : "") + std::to_string(v.shape[i]);
    }
    uint64_t hash = 0xcbf29ce484222325u;
    for (std::byte b : v.data) hash = (hash ^ static_cast<uint8_t>(b)) * 0x100000001b3u;
    std::printf("var\t%s\t%s\t%s\t%016llx\n", v.name.c_str(),
                transerve::Ct2DtypeName(v.dtype), shape.c_str(),
                static_cast<unsigned long long>(hash));
  }
  for (const auto& [alias, target] : model->aliases()) {
    std::printf("alias\t%s\t%s\n", alias.c_str(), target.c_str());
    // The implied companion of a quantized target must resolve too.
    if (model->Find(target + "_scale") != nullptr &&
        model->Find(alias + "_scale") != model->Find(target + "_scale")) {
      return 3;
    }
  }
  return 0;
}
"""

D, FFN, HEADS = 16, 32, 4


def shape_for(name, vocab):
    """The shape a converter would give the variable `name` of a d_model D Transformer."""
    parts = name.split("/")
    attr, layer = parts[-1], "/".join(parts[-3:-1])
    if "embeddings" in name or name.endswith("projection/weight"):
        return (vocab, D)
    if attr in ("gamma", "beta"):
        return (D,)
    weights = {
        "self_attention/linear_0": (3 * D, D), "self_attention/linear_1": (D, D),
        "attention/linear_0": (D, D), "attention/linear_1": (2 * D, D),
        "attention/linear_2": (D, D), "ffn/linear_0": (FFN, D), "ffn/linear_1": (D, FFN),
    }
    if attr == "weight" and layer in weights:
        return weights[layer]
    raise ValueError("no shape rule for " + name)


def build_spec(rng, tokens):
    spec = transformer_spec.TransformerSpec.from_config((2, 2), HEADS)

    def fill(layer, name, value):
        if value is not None:
            return
        shape = shape_for(name, len(tokens))
        setattr(layer, name.split("/")[-1], rng.standard_normal(shape).astype(np.float32))
        # Linear layers get a bias too, as most converted models have.
        if isinstance(layer, common_spec.LinearSpec):
            layer.bias = rng.standard_normal(shape[0]).astype(np.float32)

    model_spec.visit_spec(spec, fill)
    # A shared vocabulary: the converters then alias what is equal.
    shared = spec.decoder.embeddings.weight
    spec.encoder.embeddings[0].weight = shared.copy()
    spec.decoder.projection.weight = shared.copy()
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    return spec


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def expected_listing(spec):
    lines = []
    for name, value in spec.variables(ordered=True):
        if isinstance(value, str):
            lines.append("alias\t%s\t%s" % (name, value))
        else:
            lines.append("var\t%s\t%s\t%s\t%s" % (name, value.dtype, ",".join(map(str, value.shape)),
                                                fnv1a(value.to_bytes())))
    return sorted(lines)


def build_lister(out):
    src = os.path.join(out, "lister.cc")
    exe = os.path.join(out, "lister")
    with open(src, "w") as f:
        f.write(LISTER)
    libs = subprocess.run(["pkg-config", "--libs", "absl_status", "absl_statusor", "absl_strings"],
                          check=True, capture_output=True, text=True).stdout.split()
    subprocess.run(["nice", "-n", "19", "g++", "-std=c++20", "-O1", "-I", ROOT, src,
                    os.path.join(ROOT, "model/loader/ctranslate2_model_bin.cc"),
                    os.path.join(ROOT, "model/loader/mapped_file.cc"), "-o", exe] + libs,
                   check=True)
    return exe


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no_lister", action="store_true")
    parser.add_argument("--load", action="store_true")
    parser.add_argument("--quantizations", default="float32,int8",
                        help="comma-separated: any of spec.optimize's types (int16, float16, "
                             "bfloat16, int8_float16, ...)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print("ctranslate2", ctranslate2.__version__, "writes binary version",
          model_spec.CURRENT_BINARY_VERSION)
    tokens = ["<unk>", "<s>", "</s>"] + ["tok%d" % i for i in range(29)]
    lister = None if args.no_lister else build_lister(args.out)
    failed = False
    for quantization in args.quantizations.split(","):
        spec = build_spec(np.random.default_rng(args.seed), tokens)
        spec.validate()
        spec.optimize(quantization=quantization)
        model_dir = os.path.join(args.out, quantization)
        os.makedirs(model_dir, exist_ok=True)
        expected = expected_listing(spec)
        spec.save(model_dir)
        with open(os.path.join(model_dir, "expected.tsv"), "w") as f:
            f.write("\n".join(expected) + "\n")
        dtypes = sorted({line.split("\t")[2] for line in expected if line.startswith("var")})
        print("%s: %d bytes, %d variables (%s), %d aliases" % (
            quantization, os.path.getsize(os.path.join(model_dir, "model.bin")),
            sum(line.startswith("var") for line in expected), ", ".join(dtypes),
            sum(line.startswith("alias") for line in expected)))
        if lister is not None:
            run = subprocess.run([lister, os.path.join(model_dir, "model.bin")],
                                 capture_output=True, text=True)
            sys.stdout.write("  reader: " + run.stderr)
            got = sorted(run.stdout.splitlines())
            if run.returncode != 0 or got != expected:
                failed = True
                print("  MISMATCH (exit %d)" % run.returncode)
                for line in sorted(set(expected) ^ set(got)):
                    print("   ", "expected" if line in expected else "got     ", line)
            else:
                print("  reader agrees on every variable and alias")
        if args.load:
            translator = ctranslate2.Translator(model_dir, device="cpu", compute_type="auto",
                                                intra_threads=1)
            result = translator.translate_batch([["tok1", "tok2"]], max_decoding_length=4)
            print("  CTranslate2 loads it and translates:", result[0].hypotheses[0])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
