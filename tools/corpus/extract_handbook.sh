#!/usr/bin/env bash
# EVALUATION ONLY: extracts debian-handbook English/German pairs (handbook.en/.de) into their
# own folder (default /work/data/handbook-eval), outside the training corpus. Never train,
# validate or tune on them; see tools/corpus/README.md.
#   tools/corpus/extract_handbook.sh [--out DIR] [--train-dir CORPUS_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec nice -n 10 /usr/bin/python3 "$here/extract_handbook.py" "$@"
