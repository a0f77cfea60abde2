#!/usr/bin/env bash
# Sets up dependencies, builds (Release, every core) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
./scripts/check_format.sh
jobs="$(nproc)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 900
