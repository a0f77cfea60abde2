#!/usr/bin/env python3
"""Checks which folder includes which (docs/architecture.md section 7).

Reads every #include of the C++ and CUDA sources under model/, text/, files/, pipeline/, server/, client/
and cli/ (bench/, tests/ and fuzz/ are exempt) and prints each one a rule forbids as

    path:line: rule: included header

then exits 1; exits 0, silent, when the tree keeps every rule. Only direct includes are checked.

  scripts/check_includes.py [--root DIR]   check the tree at DIR (default: this repository)
  scripts/check_includes.py --list-rules   print each rule's name and what it forbids
"""

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inc")
CHECKED_FOLDERS = ("model", "text", "files", "pipeline", "server", "client", "cli")

# The offline translator, until it moves to cli/: checked as cli/ is.
OFFLINE_TRANSLATOR = "client/translate_main.cc"
# The tokenizer's own generated message (SentencePiece's ModelProto), not the service's API.
TOKENIZER_PROTO = "model/tokenizer/sentencepiece_model.pb.h"
# What the server and the offline translator may use of the engine.
ENGINE_API = ("model/translator/", "model/decoding/", "model/core/", "model/tokenizer/")
# Folders of this repository; a client may include none of them but its own.
PROJECT_FOLDERS = ("model/", "text/", "files/", "pipeline/", "server/", "cli/", "bench/", "tests/",
                   "fuzz/", "tools/", "proto/")
# Device code: the CUDA toolkit's headers and the backend behind model/ops.
CUDA_HEADER = re.compile(r"^(cuda|cublas|curand|cusparse|cufft|cusolver|nvrtc|nccl|cudnn)\w*\.h")
DEVICE_HEADERS = ("model/ops/cpu/", "model/ops/cuda/")


def is_grpc(header):
    return header.startswith(("grpc/", "grpcpp/", "grpc++/"))


def is_service_proto(header):
    """Headers generated from proto/: the service's API and the server's internal messages."""
    if header == TOKENIZER_PROTO:
        return False
    return header.startswith("transerve/") or header.endswith((".pb.h", ".grpc.pb.h"))


def is_cuda(header):
    base = header.rsplit("/", 1)[-1]
    return bool(CUDA_HEADER.match(base)) or header.startswith(("thrust/", "cub/"))


def is_device_code(header):
    return (header.startswith(DEVICE_HEADERS) or header == "model/ops/cuda_plugin.h"
            or is_cuda(header))


def outside_engine_api(header):
    return header.startswith("model/") and not header.startswith(ENGINE_API)


def in_folder(path, folder):
    return path.startswith(folder + "/")


def is_offline_translator(path):
    return in_folder(path, "cli") or path == OFFLINE_TRANSLATOR


# name, what it forbids, which files it applies to, which headers break it
RULES = (
    ("model-no-service",
     "model/ includes no gRPC, no proto-generated header but the tokenizer's own "
     f"({TOKENIZER_PROTO}), nothing from server/, client/ or cli/",
     lambda p: in_folder(p, "model"),
     lambda h: (is_grpc(h) or is_service_proto(h)
                or h.startswith(("server/", "client/", "cli/", "text/", "pipeline/")))),
    ("text-pure",
     "text/ (documents <-> segments) includes nothing else of this repository: no model/, "
     "pipeline/, server/, client/ or cli/, no gRPC, no proto-generated and no CUDA header",
     lambda p: in_folder(p, "text"),
     lambda h: (h.startswith(("model/", "pipeline/", "server/", "client/", "cli/")) or is_grpc(h)
                or is_service_proto(h) or is_cuda(h))),
    ("files-over-text",
     "files/ (file formats <-> the text layer's units) uses text/ only: no model/, pipeline/, "
     "server/, client/ or cli/, no gRPC, no proto-generated and no CUDA header",
     lambda p: in_folder(p, "files"),
     lambda h: (h.startswith(("model/", "pipeline/", "server/", "client/", "cli/")) or is_grpc(h)
                or is_service_proto(h) or is_cuda(h))),
    ("pipeline-between",
     "pipeline/ (text layer <-> engine) uses text/ and the engine's API (model/translator/, "
     "model/decoding/, model/core/, model/tokenizer/) only: no server/, client/ or cli/, no gRPC, "
     "no proto-generated and no CUDA header",
     lambda p: in_folder(p, "pipeline"),
     lambda h: (outside_engine_api(h) or h.startswith(("server/", "client/", "cli/"))
                or is_grpc(h) or is_service_proto(h) or is_cuda(h))),
    ("model-device-code-in-ops",
     "model/ outside model/ops/ (layers, decoding, translator, loader, tokenizer, core) includes "
     "no model/ops/cpu/, model/ops/cuda/, model/ops/cuda_plugin.h or CUDA header",
     lambda p: in_folder(p, "model") and not in_folder(p, "model/ops"),
     is_device_code),
    ("model-core-lowest",
     "model/core/ includes nothing from the other model/ folders",
     lambda p: in_folder(p, "model/core"),
     lambda h: h.startswith("model/") and not h.startswith("model/core/")),
    ("server-engine-api",
     "server/ uses the engine only through model/translator/, model/decoding/, model/core/ and "
     "model/tokenizer/ (never model/ops/, model/layers/, model/loader/), includes nothing from "
     "client/ or cli/ and no CUDA header",
     lambda p: in_folder(p, "server"),
     lambda h: outside_engine_api(h) or h.startswith(("client/", "cli/")) or is_cuda(h)),
    ("http-front-end",
     "server/http/ (the HTTP front end) reaches translation only through the Translator "
     "service: of this repository it includes server/http/, text/, model/core/, "
     "server/grpc_status.h and server/latency_buckets.h, and no CUDA header",
     lambda p: in_folder(p, "server/http"),
     lambda h: ((h.startswith(PROJECT_FOLDERS) or h.startswith("client/"))
                and not h.startswith(("server/http/", "text/", "model/core/"))
                and h not in ("server/grpc_status.h", "server/latency_buckets.h"))
               or is_cuda(h)),
    ("cli-engine-api",
     "cli/ (and client/translate_main.cc until it moves) uses the engine only through "
     "model/translator/, model/decoding/, model/core/ and model/tokenizer/, and includes nothing "
     "from server/ or client/, no gRPC, no proto-generated and no CUDA header",
     is_offline_translator,
     lambda h: (outside_engine_api(h) or h.startswith(("server/", "client/")) or is_grpc(h)
                or is_service_proto(h) or is_cuda(h))),
    ("client-public-api",
     "client/ includes, of this repository, only client/ itself and the public API generated from "
     "proto (transerve/v1/, grpc/health/v1/); gRPC, Abseil and the standard library are fine",
     lambda p: in_folder(p, "client") and p != OFFLINE_TRANSLATOR,
     lambda h: (h.startswith(PROJECT_FOLDERS)
                or (h.startswith("transerve/") and not h.startswith("transerve/v1/")))),
)


def sources(root):
    for folder in CHECKED_FOLDERS:
        top = os.path.join(root, folder)
        for directory, subdirs, files in os.walk(top):
            subdirs.sort()
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    full = os.path.join(directory, name)
                    yield os.path.relpath(full, root).replace(os.sep, "/"), full


def violations(root):
    """(path, line number, rule name, header) for every include a rule forbids."""
    found = []
    for path, full in sources(root):
        rules = [(name, breaks) for name, _, applies, breaks in RULES if applies(path)]
        if not rules:
            continue
        with open(full, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                header = match.group(1).strip()
                for name, breaks in rules:
                    if breaks(header):
                        found.append((path, number, name, header))
    return found


def main():
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=default_root, help="the tree to check")
    parser.add_argument("--list-rules", action="store_true", help="print the rules and exit")
    args = parser.parse_args()
    if args.list_rules:
        for name, text, _, _ in RULES:
            print(f"{name}: {text}")
        return 0
    if not os.path.isdir(args.root):
        print(f"check_includes: {args.root} is not a directory", file=sys.stderr)
        return 2
    found = violations(args.root)
    for path, number, name, header in found:
        print(f"{path}:{number}: {name}: {header}")
    if found:
        print(f"check_includes: {len(found)} include(s) break the rules of docs/architecture.md "
              "section 7 (--list-rules says what each forbids)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
