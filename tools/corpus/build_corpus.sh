#!/usr/bin/env bash
# Builds the English->German training corpus from Debian packages; see tools/corpus/README.md.
#   tools/corpus/build_corpus.sh [--out DIR] [--cache DIR] [other build_corpus.py options]
# Needs: Debian's /usr/bin/python3, apt, dpkg, tar; network access to deb.debian.org.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for tool in /usr/bin/python3 apt-get dpkg-deb tar /usr/lib/apt/apt-helper; do
  command -v "$tool" >/dev/null || { echo "build_corpus: missing $tool" >&2; exit 1; }
done
# Low priority: the machine is shared with compile jobs.
exec nice -n 10 /usr/bin/python3 "$here/build_corpus.py" "$@"
