#!/usr/bin/env bash
# Fails when a C++ file differs from .clang-format (Google style, 100 columns).
# With --fix, rewrites the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked files and new ones git does not ignore, so a fix before `git add` covers them too.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.cu')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
fi
