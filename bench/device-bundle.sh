#!/usr/bin/env bash
# Packs what bench/device-check.sh runs into build/device-bundle.tar.xz, to carry to a lent GPU
# machine. That machine has CUDA and Python but none of our Debian packages (gRPC, protobuf,
# Abseil, OpenBLAS, GoogleTest) and cannot fetch them, so the
# project cannot be configured there. The bundle holds the binaries built here (the CUDA plugin
# next to them in lib/, where the engine looks for it) and every shared library they need
# except the C and C++ runtimes (glibc 2.34 and libstdc++ with GLIBCXX_3.4.30 at least: Debian
# 12's own libraries need them, so older ones could not be carried), the CUDA driver and cuBLAS,
# which the GPU machine has.
# Usage: bench/device-bundle.sh   (then run: carry build/device-bundle.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BUNDLE=$BUILD/device-bundle
binaries=(bin/transerve-engine-bench bin/transerve-server bin/transerve-client
          bin/transerve-loadgen tests/cuda_plugin_test)
cmake --build "$BUILD" --target transerve_cuda cuda_plugin_test transerve-engine-bench \
  transerve-server transerve-client transerve-loadgen
rm -rf "$BUNDLE" "$BUNDLE.tar.xz"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
for b in "${binaries[@]}"; do cp "$BUILD/$b" "$BUNDLE/bin/"; done
cp "$BUILD/lib/libtranserve_cuda.so" "$BUNDLE/lib/"
# The machine's own: the C and C++ runtimes, the loader, the driver, cuBLAS.
system='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt)\.so'
for lib in $(ldd "$BUNDLE"/bin/* "$BUNDLE/lib/libtranserve_cuda.so" | awk '/=> \//{print $3}' |
             sort -u); do
  name=$(basename "$lib")
  [[ $name =~ $system ]] || cp -L "$lib" "$BUNDLE/lib/$name"
done
# The tests find their fixtures under the source directory compiled into them (this one).
echo "$PWD" > "$BUNDLE/SOURCE_DIR"
# The newest libstdc++ version the binaries need, for device-check to say so if it is missing.
objdump -T "$BUNDLE"/bin/* "$BUNDLE"/lib/*.so* | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1 \
  > "$BUNDLE/GLIBCXX"
tar -C "$BUILD" -cJf "$BUNDLE.tar.xz" device-bundle
echo "$(du -h "$BUNDLE.tar.xz" | cut -f1) $BUNDLE.tar.xz ($(ls "$BUNDLE/lib" | wc -l) libraries)"
