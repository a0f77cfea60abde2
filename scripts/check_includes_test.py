#!/usr/bin/env python3
"""Self-test of scripts/check_includes.py on small made-up trees: one file breaking each rule
is reported with its path, line, rule and header, and the exit code is 1; a tree that uses
every permitted include passes silently with exit code 0."""

import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_includes.py")

# Includes every rule permits, one file per checked folder (and the exempt ones).
CLEAN_TREE = {
    "model/core/tensor.h": ['<vector>', '"absl/status/status.h"', '"model/core/half.h"'],
    "model/ops/ops.cc": ['"model/ops/cpu/cpu_ops.h"', '"model/ops/cuda_plugin.h"',
                         '"model/core/tensor.h"'],
    "model/ops/cuda/linear.cu": ['<cuda_runtime.h>', '<cublas_v2.h>',
                                 '"model/ops/cuda/plugin_abi.h"'],
    "model/layers/decoder.h": ['"model/ops/ops.h"', '"model/layers/workspace.h"'],
    "model/decoding/greedy_search.cc": ['"model/decoding/logits_processing.h"',
                                        '"model/layers/decoder.h"'],
    "model/tokenizer/normalizer.cc": ['"model/tokenizer/sentencepiece_model.pb.h"',
                                      '<google/protobuf/message.h>'],
    "model/translator/translator.cc": ['"model/ops/ops.h"', '"model/layers/encoder.h"',
                                       '"model/loader/marian_loader.h"'],
    "server/server.cc": ['<grpcpp/grpcpp.h>', '"transerve/v1/translator.grpc.pb.h"',
                         '"transerve/internal/lenient_request.pb.h"',
                         '"model/translator/translator.h"', '"model/core/logging.h"',
                         '"model/decoding/decoding_options.h"', '"model/tokenizer/utf8.h"',
                         '"server/metrics.h"'],
    "server/http/http_server.cc": ['<httplib.h>', '"server/http/native_api.h"',
                                   '"server/grpc_status.h"', '"model/core/logging.h"',
                                   '"text/language_code.h"', '"transerve/v1/translator.pb.h"'],
    "client/client_main.cc": ['<grpcpp/grpcpp.h>', '<nlohmann/json.hpp>', '"absl/flags/flag.h"',
                              '"transerve/v1/translator.grpc.pb.h"',
                              '"grpc/health/v1/health.grpc.pb.h"', '"client/channel.h"'],
    "cli/translate_main.cc": ['"model/translator/translator.h"', '"model/core/logging.h"',
                              '<nlohmann/json.hpp>', '"pipeline/document_segments.h"'],
    "text/document.cc": ['"text/document.h"', '<unicode/brkiter.h>', '<gumbo.h>',
                         '"absl/strings/str_cat.h"'],
    "pipeline/document_segments.cc": ['"pipeline/document_segments.h"', '"text/document.h"',
                                      '"model/translator/translator.h"'],
    "tests/server/server_test.cc": ['"model/ops/kv_cache.h"', '"server/server.h"',
                                    '"model/ops/cpu/vector_math.h"'],
    "bench/engine_bench.cc": ['"model/ops/cuda_plugin.h"', '"model/layers/encoder.h"'],
    "fuzz/safetensors_fuzz.cc": ['"model/loader/safetensors.h"'],
}

# (file, header it includes, the rule that must report it)
VIOLATIONS = [
    ("model/translator/translator.h", "grpcpp/grpcpp.h", "model-no-service"),
    ("model/decoding/beam_search.cc", "transerve/v1/translator.pb.h", "model-no-service"),
    ("model/loader/marian_loader.cc", "other/thing.pb.h", "model-no-service"),
    ("model/core/logging.cc", "server/metrics.h", "model-no-service"),
    ("model/layers/encoder.cc", "model/ops/cpu/vector_math.h", "model-device-code-in-ops"),
    ("model/layers/decoder.cc", "cuda_runtime.h", "model-device-code-in-ops"),
    ("model/decoding/logits_processing.cc", "model/ops/cuda/launch.h",
     "model-device-code-in-ops"),
    ("model/decoding/top_k.cc", "cublas_v2.h", "model-device-code-in-ops"),
    ("model/layers/attention.cc", "cuda.h", "model-device-code-in-ops"),
    ("model/translator/translator.cc", "model/ops/cuda_plugin.h", "model-device-code-in-ops"),
    ("model/core/thread_pool.cc", "model/ops/ops.h", "model-core-lowest"),
    ("server/scheduler.cc", "model/ops/kv_cache.h", "server-engine-api"),
    ("server/server_main.cc", "model/ops/blas_kernel.h", "server-engine-api"),
    ("server/server.cc", "model/layers/decoder.h", "server-engine-api"),
    ("server/metrics.cc", "model/loader/safetensors.h", "server-engine-api"),
    ("server/auth.cc", "client/channel.h", "server-engine-api"),
    ("cli/translate_main.cc", "model/ops/blas_kernel.h", "cli-engine-api"),
    ("cli/translate_main.cc", "server/server.h", "cli-engine-api"),
    ("cli/translate_main.cc", "grpcpp/grpcpp.h", "cli-engine-api"),
    ("client/translate_main.cc", "model/ops/ops.h", "cli-engine-api"),
    ("client/client_main.cc", "model/translator/translator.h", "client-public-api"),
    ("client/loadgen/load_run.cc", "server/request_validation.h", "client-public-api"),
    ("client/channel.cc", "transerve/internal/lenient_request.pb.h", "client-public-api"),
    ("model/translator/translator.cc", "text/document.h", "model-no-service"),
    ("model/decoding/beam_search.cc", "pipeline/document_segments.h", "model-no-service"),
    ("text/document.cc", "model/translator/translator.h", "text-pure"),
    ("text/html_document.cc", "server/admission.h", "text-pure"),
    ("text/sentence_splitter.cc", "grpcpp/grpcpp.h", "text-pure"),
    ("text/language_detector.cc", "transerve/v1/translator.pb.h", "text-pure"),
    ("files/subtitle_file.cc", "pipeline/document_segments.h", "files-over-text"),
    ("files/subtitle_file.cc", "server/http/http_server.h", "files-over-text"),
    ("pipeline/document_segments.cc", "model/ops/ops.h", "pipeline-between"),
    ("pipeline/document_segments.cc", "server/request_validation.h", "pipeline-between"),
    ("pipeline/document_segments.cc", "grpcpp/grpcpp.h", "pipeline-between"),
    ("client/client_main.cc", "text/document.h", "client-public-api"),
    ("server/http/native_api.cc", "server/scheduler.h", "http-front-end"),
    ("server/http/grpc_bridge.cc", "model/translator/translator.h", "http-front-end"),
]


def write_tree(root, files):
    for path, headers in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write("// made up by check_includes_test.py\n")
            for header in headers:
                f.write(f"#include {header}\n")
            f.write("int x;\n")


def run_checker(root):
    return subprocess.run([sys.executable, CHECKER, "--root", root], capture_output=True,
                          text=True, check=False)


class CheckIncludesTest(unittest.TestCase):
    def test_clean_tree_passes(self):
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, CLEAN_TREE)
            result = run_checker(root)
            self.assertEqual(result.stdout, "")
            self.assertEqual(result.returncode, 0, result.stderr)

    def test_each_violation_is_reported_alone(self):
        for path, header, rule in VIOLATIONS:
            with self.subTest(path=path, header=header), tempfile.TemporaryDirectory() as root:
                # The violating include on line 3, after the comment and a permitted include.
                write_tree(root, {path: ['<vector>', f'"{header}"']})
                result = run_checker(root)
                self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
                self.assertEqual(result.stdout.splitlines(), [f"{path}:3: {rule}: {header}"])

    def test_all_violations_in_one_tree(self):
        files = {k: list(v) for k, v in CLEAN_TREE.items()}
        for path, header, _ in VIOLATIONS:
            files.setdefault(path, []).append(f'"{header}"')
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, files)
            result = run_checker(root)
            self.assertEqual(result.returncode, 1)
            reported = {(line.split(":")[0], line.rsplit(": ", 1)[1], line.split(": ")[1])
                        for line in result.stdout.splitlines()}
            self.assertEqual(reported, set(VIOLATIONS))
            self.assertIn("docs/architecture.md section 7", result.stderr)

    def test_angle_brackets_and_spacing_count(self):
        with tempfile.TemporaryDirectory() as root:
            full = os.path.join(root, "model/layers/encoder.cc")
            os.makedirs(os.path.dirname(full))
            with open(full, "w", encoding="utf-8") as f:
                f.write("  #  include <model/ops/cuda/stream.h>\n// #include \"cuda.h\"\n")
            result = run_checker(root)
            self.assertEqual(result.stdout.splitlines(), [
                "model/layers/encoder.cc:1: model-device-code-in-ops: model/ops/cuda/stream.h"])

    def test_missing_root_is_an_error(self):
        with tempfile.TemporaryDirectory() as root:
            result = run_checker(os.path.join(root, "absent"))
            self.assertEqual(result.returncode, 2)
            self.assertIn("not a directory", result.stderr)


if __name__ == "__main__":
    unittest.main()
