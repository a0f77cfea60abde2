#!/usr/bin/env python3
"""Writes the language detection benchmark's input: labelled texts from Debian's translations.

Source: the compiled gettext catalogs installed on this machine,
/usr/share/locale/<locale>/LC_MESSAGES/*.mo; a catalog's msgstr values are texts in the
catalog's language, written by that language's translators. Each string is cleaned of
accelerator markers (_File, &File, ~File), markup, placeholders (%s, {0}, $name) and URLs, and
dropped when it is

  identical    the same as its msgid (left untranslated) once cleaned;
  english      left (partly) in English: two English function words (from a list of words no
               benchmark language also uses: not "to", "is", "on", "at", "for", "he", "her",
               "by", "most", "be", "do"), or one in a text of at most four words, or at least
               three words and half its words copied from the msgid;
  no_letters   fewer than 3 letters once cleaned;
  name_list    from a catalog of names (iso_3166 countries, time zones, keyboard layouts...),
               which are translated names rather than sentences;
  reversed     Hebrew stored in visual order (reversed: some old catalogs do this), told by
               final letter forms (ך ם ן ף ץ) standing at the start of words more often than at
               the end, in the string or in its catalog as a whole (a reversed string without
               final letters is told only by its catalog).

A second, stricter subset, "prose", keeps only strings none of whose words (two letters or
more, ignoring case) also occur in their msgid: no copied command names, options, product names
or technical terms (and, being strict, none sharing a word such as "in" that both languages
have). Long texts of that subset join only such strings. The benchmark reports both
subsets ("all" and "prose").

These rules are fixed before looking at the detector's answers; they remove strings that are
demonstrably not text in the catalog's language. Nothing is dropped for being misdetected.

Length buckets (characters of the cleaned text):
  tiny    < 20 (for information only)
  short   20..49
  medium  50..149
  long    >= 150: consecutive strings of one catalog joined with ". " until 150 characters.

Output: TSV lines `subset<TAB>language<TAB>bucket<TAB>catalog<TAB>text`, sampled with a fixed
seed.
"""
import argparse
import collections
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools", "corpus"))
import clean  # noqa: E402
from mo_file import read_mo  # noqa: E402

# Locale directory -> the code the detector should report.
LOCALES = {
    "de": "de", "fr": "fr", "es": "es", "it": "it", "pt": "pt", "nl": "nl", "pl": "pl",
    "ru": "ru", "uk": "uk", "cs": "cs", "sk": "sk", "hu": "hu", "ro": "ro", "bg": "bg",
    "el": "el", "tr": "tr", "fi": "fi", "sv": "sv", "da": "da", "nb": "nb", "ja": "ja",
    "zh_CN": "zh", "ko": "ko", "vi": "vi", "id": "id", "ca": "ca", "hr": "hr", "sl": "sl",
    "lt": "lt", "lv": "lv", "et": "et", "he": "he", "ar": "ar",
}

NAME_LIST = re.compile(
    r"^(iso_\d+.*|iso-codes|isocodes|.*locations.*|xkeyboard-config|tzdata|.*timezones?|"
    r".*countr(y|ies).*|language-names|.*-languages|geonames|cldr.*|unicode.*|.*-charmap)$")

BUCKETS = (("tiny", 1, 20), ("short", 20, 50), ("medium", 50, 150))
LONG_MIN = 150


EN_ONLY = set("""the and of with this that these those from you your which when where what there
their they them should would could have has been being into only some such each other does did
must our we his how why who whose while because about after before between through during without
within upon any more very just cannot it its can not or she""".split())
WORD = re.compile(r"[^\W\d_]+")


def english_left_in(en, text):
    words = WORD.findall(text)
    if not words:
        return False
    func = sum(1 for w in words if w.lower() in EN_ONLY)
    if func >= 2 or (func == 1 and len(words) <= 4):
        return True
    en_words = {w for w in WORD.findall(en) if w.islower() and len(w) >= 4}
    copied = [w for w in words if w in en_words]
    return len(copied) >= 3 and len(copied) >= 0.5 * len(words)


HEBREW_FINALS = set("ךםןףץ")


def final_letter_positions(text):
    """(words starting with a Hebrew final letter form, words ending with one)."""
    words = [w for w in WORD.findall(text) if len(w) >= 2]
    return (sum(1 for w in words if w[0] in HEBREW_FINALS),
            sum(1 for w in words if w[-1] in HEBREW_FINALS))


def reversed_hebrew(text):
    at_start, at_end = final_letter_positions(text)
    return at_start > at_end


def is_prose(en, text):
    """No word of the translation also occurs in its msgid."""
    en_words = {w.casefold() for w in WORD.findall(en) if len(w) >= 2}
    return not any(w.casefold() in en_words for w in WORD.findall(text) if len(w) >= 2)


def clean_string(msgid, msgstr):
    """((cleaned msgstr, prose?), None) or (None, reason dropped)."""
    msgid, msgstr = clean.strip_accelerators(msgid, msgstr)
    msgid, msgstr = clean.strip_context_prefix(msgid, msgstr)
    out = []
    for s in (msgid, msgstr):
        s = clean.strip_markup(s)
        s = clean.URL.sub(" ", s.replace("%%", "%"))
        s = clean.PLACEHOLDER.sub(" ", s)
        out.append(clean.normalize(s))
    en, text = out
    if sum(c.isalpha() for c in text) < 3:
        return None, "no_letters"
    if text.casefold() == en.casefold():
        return None, "identical"
    if english_left_in(en, text):
        return None, "english"
    if reversed_hebrew(text):
        return None, "reversed"
    return (text, is_prose(en, text)), None


def catalog_texts(path):
    for _ctxt, msgid, msgstr in read_mo(path):
        yield msgid, msgstr


def collect(locale_dir, locale):
    """{catalog: [(cleaned text, prose?) in catalog order]}, Counter of drop reasons."""
    d = os.path.join(locale_dir, locale, "LC_MESSAGES")
    by_catalog, dropped = {}, collections.Counter()
    seen = set()
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not name.endswith(".mo"):
            continue
        domain = name[:-3]
        texts = []
        entries = list(catalog_texts(os.path.join(d, name)))
        at_start = at_end = 0
        for _msgid, msgstr in entries:
            s, e = final_letter_positions(msgstr)
            at_start, at_end = at_start + s, at_end + e
        if at_start > at_end:
            dropped["reversed"] += len(entries)
            continue
        for msgid, msgstr in entries:
            if NAME_LIST.match(domain):
                dropped["name_list"] += 1
                continue
            cleaned, why = clean_string(msgid, msgstr)
            if why:
                dropped[why] += 1
                continue
            if cleaned[0] in seen:
                dropped["duplicate"] += 1
                continue
            seen.add(cleaned[0])
            texts.append(cleaned)
        if texts:
            by_catalog[domain] = texts
    return by_catalog, dropped


def long_texts(by_catalog, prose_only):
    out = []
    for domain, texts in by_catalog.items():
        cur = []
        for t, prose in texts:
            if prose_only and not prose:
                continue
            cur.append(t.rstrip(".。"))
            joined = ". ".join(cur)
            if len(joined) >= LONG_MIN:
                out.append((domain, joined + "."))
                cur = []
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--locale_dir", default="/usr/share/locale")
    ap.add_argument("--per_bucket", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    rows, stats = [], {}
    for locale, code in LOCALES.items():
        by_catalog, dropped = collect(args.locale_dir, locale)
        counts = {}
        for subset in ("all", "prose"):
            pool = collections.defaultdict(list)
            for domain, texts in by_catalog.items():
                for t, prose in texts:
                    if subset == "prose" and not prose:
                        continue
                    for bucket, lo, hi in BUCKETS:
                        if lo <= len(t) < hi:
                            pool[bucket].append((domain, t))
            pool["long"] = long_texts(by_catalog, prose_only=subset == "prose")
            for bucket in ("tiny", "short", "medium", "long"):
                items = sorted(pool[bucket])
                rng.shuffle(items)
                items = items[:args.per_bucket]
                counts[f"{subset}/{bucket}"] = len(items)
                rows += [(subset, code, bucket, d, t) for d, t in items]
        stats[code] = (len(by_catalog), counts, dict(dropped))
    with open(args.out, "w", encoding="utf-8") as f:
        for subset, code, bucket, domain, text in rows:
            f.write(f"{subset}\t{code}\t{bucket}\t{domain}\t{text.replace(chr(9), ' ')}\n")
    for code, (ncat, counts, dropped) in stats.items():
        print(f"{code:3} catalogs={ncat:3} {counts} dropped={dropped}", file=sys.stderr)
    print(f"wrote {len(rows)} texts to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
