#!/usr/bin/env bash
# Sets up dependencies, builds (Release, every core) and runs every test.
#   ./scripts/test.sh                   the README's test command (what CI runs first)
#   ./scripts/test.sh --sanitize=asan   AddressSanitizer + UBSan build (build-asan/), then the C++
#   ./scripts/test.sh --sanitize=tsan   ThreadSanitizer build (build-tsan/)      unit and
#                                       integration tests under it (CI runs both after the first)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
case "${1:-}" in
  "") ;;
  --sanitize=asan | --sanitize=tsan) sanitize="${1#--sanitize=}" ;;
  *) echo "usage: test.sh [--sanitize=asan|tsan]" >&2; exit 2 ;;
esac

./scripts/setup.sh
. scripts/compiler_cache.sh
jobs="$(nproc)"
if [ -z "$sanitize" ]; then
  ./scripts/check_format.sh
  ./scripts/check_includes_test.py
  ./scripts/check_includes.py
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build build -j"$jobs"
  ctest --test-dir build --output-on-failure -j"$jobs" --timeout 900
  exit 0
fi

# Sanitized: every C++ test (engine, tokenizer, loader, scheduler, gRPC server, clients) and the
# end-to-end scripts over the sanitized binaries. Not the Python tooling's own tests nor the
# deployment checks (no C++ of ours runs there that the server tests do not already cover), nor
# the overload and soak tests and the model repository's 60 s load test, which measure speed and
# memory (the sanitizers change both), nor the large-document test (100,000 characters beside a
# steady load: minutes under the sanitizers; its scheduling rules run under them in
# scheduler_test and turn_queue_test), nor the CTranslate2 directories' end-to-end test (the
# shipped model converted, loaded and quality-checked a dozen times; its loader, tokenizer and
# pre-norm paths run under them in ctranslate2_transformer_test, translator_test's Ct2ParityTest
# and the model.bin fuzz corpus).
# The presets compile at -O1 with line tables only (-g1): reports keep file and line, and the
# sanitized builds take half the time they took at RelWithDebInfo's -O2 -g.
cmake --preset "$sanitize" >/dev/null
cmake --build "build-$sanitize" -j"$jobs"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp"
ctest --test-dir "build-$sanitize" --output-on-failure -j"$jobs" --timeout 1800 \
  -E '^(tools\.|deploy\.|server_overload|server_soak|server_large_document|server_ctranslate2_model|ModelRepositoryLoadTest\.)'
