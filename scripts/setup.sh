#!/usr/bin/env bash
# Installs every Debian package transerve needs to build and test; with --bench, also what the
# benchmark suite needs (bench/run.sh: plots).
# Idempotent: installs only what is missing, and runs `apt-get update` only when it must.
set -euo pipefail

# Build: compiler toolchain, gRPC/protobuf/Abseil, metrics, tests, BLAS, JSON, logging.
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libspdlog-dev clang-format
  prometheus openssl curl
)
# Tools: the PyTorch reference, fixture generation, tokenizer oracle (outside the C++ process).
TOOL_PACKAGES=(
  python3 python3-torch python3-numpy python3-sentencepiece sentencepiece
)

# Benchmark suite only: the plots.
BENCH_PACKAGES=(python3-matplotlib)

WANTED=("${BUILD_PACKAGES[@]}" "${TOOL_PACKAGES[@]}")
if [ "${1:-}" = "--bench" ]; then WANTED+=("${BENCH_PACKAGES[@]}"); fi

missing=()
for p in "${WANTED[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#WANTED[@]} packages present"
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
