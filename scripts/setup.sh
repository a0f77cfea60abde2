#!/usr/bin/env bash
# Installs every Debian package transerve needs to build and test; with --bench, also what the
# benchmark suite needs (bench/run.sh: plots); with --build-only, only what the C++ build needs
# (the Dockerfile's build stage).
# Idempotent: installs only what is missing, and runs `apt-get update` only when it must.
set -euo pipefail

# Build: compiler toolchain, gRPC/protobuf/Abseil, metrics, tests, BLAS, JSON, logging.
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libspdlog-dev clang-format
  libicu-dev libgumbo-dev libcld2-dev libcpp-httplib-dev libzip-dev
  prometheus openssl curl
)
# Tools: the PyTorch reference, fixture generation, tokenizer oracle (outside the C++ process).
TOOL_PACKAGES=(
  python3 python3-torch python3-numpy python3-sentencepiece sentencepiece
)
# Independent readers of the files the file layer writes (tests/files): SubRip and WebVTT.
FILE_TEST_PACKAGES=(python3-srt python3-webvtt)

# The deployment tests (tests/deploy): nginx as the gRPC load balancer, the compose file's
# validator (docker-compose v1 reads it; no Docker engine needed), YAML for the k8s checks.
DEPLOY_TEST_PACKAGES=(nginx docker-compose python3-yaml gettext-base)
# The web page's test (tests/server/http_page_test.py): headless Chromium driven by Selenium.
BROWSER_TEST_PACKAGES=(chromium chromium-driver python3-selenium)
# Fuzzing (scripts/fuzz.sh): clang with libFuzzer and its sanitizer runtimes.
FUZZ_PACKAGES=(clang libclang-rt-14-dev)
# The test scripts' compiler cache: test.sh and fuzz.sh build three or four configurations, and a
# second run on the same machine (CI after a session) recompiles only what changed.
CACHE_PACKAGES=(ccache)
# Benchmark suite only: the plots.
BENCH_PACKAGES=(python3-matplotlib)

case "${1:-}" in
  --build-only) WANTED=("${BUILD_PACKAGES[@]}") ;;
  --bench) WANTED=("${BUILD_PACKAGES[@]}" "${TOOL_PACKAGES[@]}" "${FILE_TEST_PACKAGES[@]}"
                   "${DEPLOY_TEST_PACKAGES[@]}"
                   "${BROWSER_TEST_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}" "${CACHE_PACKAGES[@]}"
                   "${BENCH_PACKAGES[@]}") ;;
  "") WANTED=("${BUILD_PACKAGES[@]}" "${TOOL_PACKAGES[@]}" "${FILE_TEST_PACKAGES[@]}"
            "${DEPLOY_TEST_PACKAGES[@]}"
            "${BROWSER_TEST_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}" "${CACHE_PACKAGES[@]}") ;;
  *) echo "usage: setup.sh [--build-only | --bench]" >&2; exit 2 ;;
esac

missing=()
for p in "${WANTED[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# DeepL's official client library for its test (tests/server/deepl_client_test.sh): Node.js
# from Debian where the machine has none, then the locked deepl-node from the npm registry.
install_deepl_client() {
  if [ "${1:-}" = "--build-only" ]; then return 0; fi
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/deepl_client"
  # The lock file copied in once installed: a changed lock installs again.
  if [ -d "$dir/node_modules/deepl-node" ] && \
     cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json" 2>/dev/null; then
    return 0
  fi
  echo "setup: installing deepl-node into $dir"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.installed-lock.json)
}
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "${1:-}" != "--build-only" ]; then missing+=(nodejs npm); fi
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#WANTED[@]} packages present"
  install_deepl_client "${1:-}"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Update the package lists only when they are missing or a first install attempt fails.
if ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1 || \
   ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
install_deepl_client "${1:-}"
