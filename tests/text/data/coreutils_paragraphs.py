#!/usr/bin/env python3
"""Writes a second sentence-boundary set for sentence_split_eval, from real prose: 45
paragraphs of the GNU coreutils manual installed at /usr/share/info/coreutils.info.gz, in the
format of sentences_en.txt (one sentence a line, a blank line between paragraphs). The text
is not kept in the repository (it is not ours); this script rebuilds the same set.

The boundaries: after . ! or ? (and closing quotes or brackets) followed by whitespace,
unless the mark is quoted on its own (‘.’). For
the 45 paragraphs this draws (seed 7) that rule was checked by reading every paragraph: it
gives exactly the sentences a reader sees (the manual's abbreviations, "i.e.," and "e.g.,",
are never followed by a space, and no sentence there ends without one).

  python3 tests/text/data/coreutils_paragraphs.py > /tmp/coreutils_set.txt
  build/bin/sentence_split_eval /tmp/coreutils_set.txt
"""
import gzip
import random
import re
import sys

SOURCE = "/usr/share/info/coreutils.info.gz"
BOUNDARY = re.compile(r"(?<=[.!?])(?<!\u2018[.!?])([\"'\u2019\u201d)\]]*)\s+")


def prose_paragraphs(text):
    """Paragraphs of running text: no indented examples, menus, headings or cross-references."""
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        if any(l.startswith((" ", "*", "\x1f", "File:", "=", "-")) for l in lines):
            continue
        paragraph = re.sub(r"\s+", " ", " ".join(l.strip() for l in lines))
        if not 150 <= len(paragraph) <= 700 or "*Note" in paragraph or "*note" in paragraph:
            continue
        if len(re.findall(r"[.!?] ", paragraph)) < 2:
            continue
        yield paragraph


def main():
    with gzip.open(SOURCE, "rt", errors="replace") as f:
        paragraphs = list(prose_paragraphs(f.read()))
    random.seed(7)
    for paragraph in random.sample(paragraphs, 45):
        sentences = BOUNDARY.sub(lambda m: m.group(1) + "\n", paragraph).strip().split("\n")
        print("\n".join(s.strip() for s in sentences))
        print()


if __name__ == "__main__":
    sys.exit(main())
