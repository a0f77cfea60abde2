#!/usr/bin/env bash
# Prints, one per line, the installed packages that own the shared libraries the given ELF files
# load (ldd, then dpkg -S on the path or its resolved target), so a slim runtime image installs
# exactly those whatever the distribution release. Fails when a library belongs to no package
# (the runtime image could not get it from apt), except under the path prefix
# $RUNTIME_PACKAGES_PROVIDED: libraries the runtime base image already has (the CUDA images'
# /usr/local/cuda).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: runtime-packages.sh ELF..." >&2; exit 2; }
provided="${RUNTIME_PACKAGES_PROVIDED:-}"
packages=()
unowned=()
for lib in $(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
  owner="$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true)"
  if [ -n "$owner" ]; then
    packages+=("${owner%%:*}")
  elif [ -z "$provided" ] || [[ "$lib" != "$provided"* ]]; then
    unowned+=("$lib")
  fi
done
if [ ${#unowned[@]} -gt 0 ]; then
  echo "runtime-packages: owned by no package: ${unowned[*]}" >&2
  exit 1
fi
printf '%s\n' "${packages[@]}" | sort -u
