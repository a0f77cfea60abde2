#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang, ASan and UBSan (build-fuzz/) and runs each
# for a while from its seed corpus. A crash is copied into fuzz/regressions/<target>/ (which
# ctest replays in the regular build from then on) and fails the run.
#   ./scripts/fuzz.sh                 60 s per target (what CI runs)
#   ./scripts/fuzz.sh --seconds=600   longer
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
case "${1:-}" in
  "") ;;
  --seconds=*) seconds="${1#--seconds=}" ;;
  *) echo "usage: fuzz.sh [--seconds=N]" >&2; exit 2 ;;
esac

./scripts/setup.sh
. scripts/compiler_cache.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRANSERVE_FUZZ=ON -DTRANSERVE_SANITIZE=address,undefined -DTRANSERVE_BUILD_TESTS=OFF \
  -DTRANSERVE_CUDA=OFF >/dev/null
targets=(safetensors pytorch_checkpoint ctranslate2_model_bin spm request html_document http_request
  subtitle_file)
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/%/_fuzzer}"

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for t in "${targets[@]}"; do
  work="build-fuzz/fuzz/work/$t"
  crashes="build-fuzz/fuzz/crashes/$t"
  mkdir -p "$work" "$crashes"
  echo "fuzz: $t for ${seconds}s"
  # New inputs go to the work corpus; the committed seeds are read only.
  if ! "build-fuzz/fuzz/${t}_fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" \
      "$work" "fuzz/corpus/$t" 2>"build-fuzz/fuzz/$t.log"; then
    status=1
    echo "fuzz: $t FOUND A CRASH (log: build-fuzz/fuzz/$t.log); saved into fuzz/regressions/$t/:"
    for f in "$crashes"/*; do
      [ -f "$f" ] && cp "$f" "fuzz/regressions/$t/" && echo "  $(basename "$f")"
    done
    tail -30 "build-fuzz/fuzz/$t.log"
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/fuzz/$t.log" \
    | sed "s/^/fuzz: $t: /"
done
exit "$status"
