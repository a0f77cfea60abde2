#!/usr/bin/env bash
# Gathers what a transerve image ships into one prefix (the Dockerfile's build stages call it):
#   PREFIX/bin      transerve-server, transerve-client, transerve-loadgen
#   PREFIX/lib      libtranserve_cuda.so when the CUDA backend was built (found via ../lib)
#   PREFIX/models   the default model (models/en-de-small)
#   PREFIX/share    the loadgen's input (deploy/loadgen/sentences.en)
#   PREFIX/runtime-packages.txt   the packages holding the shared libraries they load
# Usage: deploy/docker/stage.sh BUILD_DIR PREFIX   (from the repository root)
set -euo pipefail
build="$1"
prefix="$2"
here="$(dirname "$0")"

mkdir -p "$prefix/bin" "$prefix/lib" "$prefix/models" "$prefix/share"
for b in transerve-server transerve-client transerve-loadgen; do
  install -m 755 "$build/bin/$b" "$prefix/bin/$b"
done
if [ -f "$build/lib/libtranserve_cuda.so" ]; then
  install -m 644 "$build/lib/libtranserve_cuda.so" "$prefix/lib/"
fi
if [ ! -f models/en-de-small/config.json ]; then
  echo "stage: models/en-de-small is missing (run from the repository root)" >&2
  exit 1
fi
cp -r models/en-de-small "$prefix/models/"
install -m 644 deploy/loadgen/sentences.en "$prefix/share/sentences.en"
# shellcheck disable=SC2046  # one argument per file
"$here/runtime-packages.sh" $(find "$prefix/bin" "$prefix/lib" -type f) \
  > "$prefix/runtime-packages.txt"
echo "stage: $prefix: $(wc -l < "$prefix/runtime-packages.txt") runtime packages:" \
  "$(tr '\n' ' ' < "$prefix/runtime-packages.txt")"
