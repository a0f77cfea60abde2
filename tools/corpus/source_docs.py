"""Documentation sources: LibreOffice help (by paragraph id) and bilingual manuals (by block).

lo-help   libreoffice-help-en-us vs libreoffice-help-de: same page names, same paragraph ids.
manuals   debian-reference, maint-guide, kicad-doc, gimp-help: same page names in both
          languages; blocks aligned in order, with difflib over block signatures where the
          sequences differ. gimp-help's index and glossary pages are sorted per language and
          cannot be aligned, so they are skipped.
"""

import difflib
import os

from debian_fetch import log
from html_text import lo_help_paragraphs, manual_blocks

LO_HELP = {
    "packages": ["libreoffice-help-en-us", "libreoffice-help-de"],
    "patterns": {"libreoffice-help-en-us": ["*/help/en-US/text/*.html"],
                 "libreoffice-help-de": ["*/help/de/text/*.html"]},
}

# name: (en package, de package, en page dir, de page dir, en suffix, de suffix, skipped pages)
MANUALS = {
    "debian-reference": ("debian-reference-en", "debian-reference-de",
                         "usr/share/debian-reference", "usr/share/debian-reference",
                         ".en.html", ".de.html", ()),
    "maint-guide": ("maint-guide", "maint-guide-de",
                    "usr/share/doc/maint-guide/html", "usr/share/doc/maint-guide-de/html",
                    ".en.html", ".de.html", ()),
    "kicad-doc": ("kicad-doc-en", "kicad-doc-de",
                  "usr/share/doc/kicad/help/en", "usr/share/doc/kicad/help/de",
                  ".html", ".html", ()),
    "gimp-help": ("gimp-help-en", "gimp-help-de",
                  "usr/share/gimp/2.0/help/en", "usr/share/gimp/2.0/help/de",
                  ".html", ".html", ("glossary", "gimp-help-index", "index", "bibliography")),
}
MANUAL_PATTERNS = ["*.html"]


def manual_packages():
    out = []
    for en, de, *_ in MANUALS.values():
        out += [en, de]
    return out


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def lo_help_pairs(dirs):
    """Yields (en, de, origin) from the LibreOffice help pages."""
    en_root = os.path.join(dirs["libreoffice-help-en-us"], "usr/share/libreoffice/help/en-US")
    de_root = os.path.join(dirs["libreoffice-help-de"], "usr/share/libreoffice/help/de")
    pages = []
    for d, _, files in os.walk(en_root):
        for f in files:
            if f.endswith(".html"):
                pages.append(os.path.relpath(os.path.join(d, f), en_root))
    pages.sort()
    n_pages = 0
    for rel in pages:
        de_path = os.path.join(de_root, rel)
        if not os.path.exists(de_path):
            continue
        n_pages += 1
        en = lo_help_paragraphs(_read(os.path.join(en_root, rel)))
        de = lo_help_paragraphs(_read(de_path))
        for pid, text in en.items():
            if pid in de:
                yield text, de[pid], f"lo-help:{rel}#{pid}"
    log(f"  lo-help: {n_pages} pages aligned")


def align_blocks(en_blocks, de_blocks):
    """Pairs block texts of two versions of a page: equal runs, and 1:1 replacements of the
    same element kind."""
    if [s for s, _ in en_blocks] == [s for s, _ in de_blocks]:
        return [(e[1], d[1]) for e, d in zip(en_blocks, de_blocks)]
    sm = difflib.SequenceMatcher(None, [s for s, _ in en_blocks], [s for s, _ in de_blocks],
                                 autojunk=False)
    out = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            for k in range(i2 - i1):
                e, d = en_blocks[i1 + k], de_blocks[j1 + k]
                if op == "equal" or e[0][0] == d[0][0]:
                    out.append((e[1], d[1]))
    return out


def manual_pairs(dirs, name):
    """Yields (en, de, origin) for one manual."""
    en_pkg, de_pkg, en_dir, de_dir, en_suf, de_suf, skip = MANUALS[name]
    en_root = os.path.join(dirs[en_pkg], en_dir)
    de_root = os.path.join(dirs[de_pkg], de_dir)
    if not os.path.isdir(en_root) or not os.path.isdir(de_root):
        log(f"  warning: {name}: page directories missing")
        return
    n_pages = n_blocks = 0
    for f in sorted(os.listdir(en_root)):
        if not f.endswith(en_suf):
            continue
        stem = f[:-len(en_suf)]
        if stem in skip:
            continue
        de_path = os.path.join(de_root, stem + de_suf)
        if not os.path.exists(de_path):
            continue
        n_pages += 1
        eb = manual_blocks(_read(os.path.join(en_root, f)))
        db = manual_blocks(_read(de_path))
        n_blocks += len(eb)
        for e, d in align_blocks(eb, db):
            yield e, d, f"{name}:{stem}"
    log(f"  {name}: {n_pages} pages, {n_blocks} English blocks")
