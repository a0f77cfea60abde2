"""DDTP source: Debian package descriptions, apt's Translation-en vs Translation-de.

A German description translates the English one with the same Description-md5. Both are
cut the same way (short description; paragraphs split on " ." lines; list items) and paired
unit by unit where the two cuts agree.
"""

import re

from debian_fetch import log, parse_deb822

BULLET = re.compile(r"^\s*([*+o•-]|\d+[.)])\s+")


def _descriptions(apt, lang):
    """{md5: (package, text)} from every Translation-<lang> list."""
    out = {}
    field = "Description-" + lang
    for path in apt.list_files("_Translation-" + lang):
        for rec in parse_deb822(apt.cat(path)):
            md5, text = rec.get("Description-md5"), rec.get(field)
            if md5 and text and md5 not in out:
                out[md5] = (rec.get("Package", ""), text)
    return out


def units(text):
    """Cuts a description into [short, unit, unit, ...]; list items are units of their own.

    Returns a list of (kind, text) where kind tells which cut produced it, so that two
    descriptions only pair where they were cut alike.
    """
    lines = text.split("\n")
    out = [("short", lines[0].strip())]
    paras, cur = [], []
    for line in lines[1:]:
        if line.strip() == ".":
            paras.append(cur)
            cur = []
        else:
            cur.append(line[1:] if line.startswith(" ") else line)
    paras.append(cur)
    for p in paras:
        if not p:
            continue
        items, intro = [], []
        for line in p:
            if BULLET.match(line):
                items.append(BULLET.sub("", line).strip())
            elif items:
                items[-1] += " " + line.strip()
            else:
                intro.append(line.strip())
        if intro:
            out.append(("para", " ".join(intro)))
        for it in items:
            out.append(("item", it))
    return out


def pairs(apt):
    """Yields (en, de, origin) from package descriptions."""
    en = _descriptions(apt, "en")
    de = _descriptions(apt, "de")
    n_desc = n_aligned = 0
    for md5 in sorted(set(en) & set(de)):
        n_desc += 1
        pkg = en[md5][0]
        ue, ud = units(en[md5][1]), units(de[md5][1])
        if [k for k, _ in ue] == [k for k, _ in ud]:
            n_aligned += 1
            for (_, e), (_, d) in zip(ue, ud):
                yield e, d, f"ddtp:{pkg}"
        else:
            # Cuts differ: the short descriptions still pair.
            yield ue[0][1], ud[0][1], f"ddtp:{pkg}"
    log(f"  ddtp: {n_desc} translated descriptions, {n_aligned} aligned unit by unit")
