"""Cleaning of raw English/German pairs: UI noise removal, segmentation, and pair filters.

`segment_pair(en, de, ui)` turns one raw pair into zero or more (en, de, reason) segments:
reason is None for a segment that passed every filter, otherwise the name of the first filter
that rejected it. The filter names are the keys of the per-source "dropped" counts in the stats.
"""

import collections
import html
import re
import unicodedata

# --------------------------------------------------------------------------------------------
# Normalization

_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff\u200e\u200f\u202a"
                                    "\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), None)
_SPACES = {ord(c): " " for c in "\u00a0\u202f\u2007\u2009\u2002\u2003\u2004\u2005\u2006\u2008"
                                 "\u200a\u3000\t\r\n\v\f"}


def normalize(s):
    """NFC, no invisible characters, plain spaces, single spaces, stripped."""
    s = unicodedata.normalize("NFC", s).translate(_INVISIBLE).translate(_SPACES)
    return " ".join(s.split())


# --------------------------------------------------------------------------------------------
# UI strings: accelerators, context prefixes, markup

_ACCEL_SUFFIX = re.compile(r"\s*\((?:_|&|~)[^\W_]\)")


_MARK_RX = {m: re.compile(re.escape(m) + r"(?=[^\W_])") for m in "_&~"}


def _strip_marker(text, other, mark):
    """Removes a single accelerator `mark` (before a letter/digit) from text, unless the token
    holding it appears unchanged in `other` (then it is an identifier, not an accelerator)."""
    if mark not in text:
        return text
    rx = _MARK_RX[mark]
    doubled = mark + mark
    probe = text.replace(doubled, "")
    hits = [m.start() for m in rx.finditer(probe)]
    if len(hits) != 1:
        return text
    tokens = [t for t in probe.split() if mark in t]
    other_tokens = set(other.split())
    if any(t in other_tokens for t in tokens):
        return text
    if mark == "&" and re.search(r"&(#\d+|#x[0-9a-fA-F]+|[A-Za-z]+);", text):
        return text
    out = rx.sub("", text.replace(doubled, "\x00"), count=1)
    return out.replace("\x00", mark)


def strip_accelerators(en, de):
    """GTK `_File`, Qt/KDE `&File`, LibreOffice `~File`, CJK-style `Datei (_F)`."""
    en, de = _ACCEL_SUFFIX.sub("", en), _ACCEL_SUFFIX.sub("", de)
    for mark in ("_", "&", "~"):
        en2 = _strip_marker(en, de, mark)
        de2 = _strip_marker(de, en, mark)
        en, de = en2, de2
    return en, de


_CTX_PREFIX = re.compile(r"^([A-Za-z][\w .:-]{0,40})\|(?=\S)")
_WESNOTH_CTX = re.compile(r"^(?:female|male|[a-z_ ]{2,30})\^(?=\S)")


def strip_context_prefix(en, de):
    """glib-style "Context|text" msgids and Wesnoth "female^text" msgids."""
    m = _CTX_PREFIX.match(en)
    if m and "|" not in en[m.end():] and not de.startswith(m.group(0)):
        en = en[m.end():]
    elif m and de.startswith(m.group(0)):
        en, de = en[m.end():], de[m.end():]
    en = _WESNOTH_CTX.sub("", en)
    de = _WESNOTH_CTX.sub("", de)
    return en, de


_TAGS = ("a|abbr|b|big|blockquote|body|br|center|cite|code|command|dd|del|dfn|div|dl|dt|em|"
         "emphasis|filename|font|guilabel|guimenu|h[1-6]|head|hr|html|i|img|ins|kbd|label|li|"
         "link|literal|mark|nobr|ol|p|para|pre|q|qt|quote|s|samp|small|span|strike|strong|sub|"
         "sup|table|td|th|title|tr|tt|u|ul|ulink|userinput|var|wbr|markup|systemitem|"
         "application|replaceable|option|keycap|menuchoice|guibutton|guisubmenu|emph|"
         "item|ahelp|switchinline|caseinline|defaultinline|bookmark_value|variable|embedvar|"
         "sup|sub|nobr|html:[a-z]+")
_TAG_RX = re.compile(r"</?(?:%s)(?:\s[^<>]*)?/?>" % _TAGS, re.I)
_BREAK_RX = re.compile(r"<(?:br|/p|/li|/div|/h[1-6]|/tr|/td|hr)\b[^<>]*/?>", re.I)
_ENTITY_RX = re.compile(r"&(amp|lt|gt|quot|apos|nbsp|#\d+|#x[0-9a-fA-F]+);")
# Wesnoth help markup carries attributes as text; such strings are not sentences.
_WESNOTH_MARKUP = re.compile(r"<(header|ref|jump|format|img|italic|bold|menu|span)>", re.I)


def strip_markup(s):
    s = _BREAK_RX.sub(" ", s)
    s = _TAG_RX.sub("", s)
    if _ENTITY_RX.search(s):
        s = html.unescape(s)
    return s


# --------------------------------------------------------------------------------------------
# Placeholders, numbers, URLs

PLACEHOLDER = re.compile(r"""
    %[A-Z][A-Z0-9_]+%?
  | \$\(\w+\)
  | \$\d+
  | %(?:\d+\$)?[-+#0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?
      (?:hh|ll|I64|I32|[hlLqjzt])?[diouxXeEfFgGaAcsSpn@]
  | %\([A-Za-z_]\w*\)[-+#0 ]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa]
  | %\d+
  | \{\$?[A-Za-z_][\w.-]*\}
  | \{\d+(?:[,:][^{}]*)?\}
  | \$\{[A-Za-z_]\w*\}
  | \$[A-Za-z_][\w.]*\|?
  | @[A-Za-z_]\w*@
""", re.X)
URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'»«“”)]+|\bwww\.[^\s<>\"'»«“”)]+|"
                 r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b")


def placeholders(s):
    """Sorted placeholders of s, with positional indices (%1$s -> %s) removed."""
    s = s.replace("%%", "")
    out = []
    for m in PLACEHOLDER.finditer(s):
        t = re.sub(r"^%\d+\$", "%", m.group(0))
        t = t.rstrip("|")
        out.append(t)
    return sorted(out)


_NUMBER = re.compile(r"(?<![^\W\d_])\d+(?![^\W\d_])")  # digits not glued to letters
NUMBER_WORDS_EN = {1: ("one", "a", "an", "single", "first"), 2: ("two", "both", "second", "double"),
                   3: ("three", "third"), 4: ("four", "fourth"), 5: ("five", "fifth"),
                   6: ("six", "sixth"), 7: ("seven",), 8: ("eight",), 9: ("nine",), 10: ("ten",),
                   11: ("eleven",), 12: ("twelve",)}
NUMBER_WORDS_DE = {1: ("ein", "eine", "einen", "einem", "einer", "eines", "eins", "einzige",
                       "einzigen", "einzelne", "einzelnen", "erste", "ersten"),
                   2: ("zwei", "beide", "beiden", "zweite", "zweiten", "doppelt"),
                   3: ("drei", "dritte"), 4: ("vier", "vierte"), 5: ("fünf", "fünfte"),
                   6: ("sechs", "sechste"), 7: ("sieben",), 8: ("acht",), 9: ("neun",),
                   10: ("zehn",), 11: ("elf",), 12: ("zwölf",)}


def numbers(s):
    s = PLACEHOLDER.sub(" ", URL.sub(" ", s.replace("%%", "")))
    return sorted(int(x) for x in _NUMBER.findall(s) if len(x) < 15)


def numbers_agree(en, de):
    """Same standalone numbers on both sides, where a number may also be spelled out."""
    ne, nd = collections.Counter(numbers(en)), collections.Counter(numbers(de))
    if ne == nd:
        return True
    we = {w.lower() for w in _words(en)}
    wd = {w.lower() for w in _words(de)}
    for n in (ne - nd):
        if not any(w in wd for w in NUMBER_WORDS_DE.get(n, ())):
            return False
    for n in (nd - ne):
        if not any(w in we for w in NUMBER_WORDS_EN.get(n, ())):
            return False
    return True


def urls(s):
    return sorted(u.rstrip(".,;:!?") for u in URL.findall(s))


# --------------------------------------------------------------------------------------------
# Language checks

# English function words that German never uses as words (German homographs like "will",
# "was", "die", "an", "in", "also", "so", "hat", "bin", "man" are left out).
EN_FUNCTION = set("""the and of to is are be been being for with this that these those from by
you your it its not can cannot should would could have has had which when where what there their
they them or on at if then than into only some such each other does did may must our we he she
his her how why who whose while because about after before between through during without
within upon any more most very just""".split())
DE_FUNCTION = set("""der die das und nicht ist mit für von zu ein eine einen einem einer den dem
des auf wird werden sie es sich auch oder wenn kann können im zum zur bei nach über aus""".split())
FR_FUNCTION = set("""le la les des et est une un pour dans pas du avec sur que qui ce cette sont
vous nous au aux""".split())
_QUOTED = re.compile(r"„[^“”]*[“”]|“[^”]*”|»[^«]*«|«[^»]*»|\"[^\"]*\"|‚[^‘’]*[‘’]|'[^']*'")
_WORD = re.compile(r"[^\W\d_]+")


_CODE_TOKEN = re.compile(r"(?:^|(?<=\s))(?:-{1,2}[\w-]+\S*|\S*[_/\\@#=]\S*|\S+\.\w\S*|"
                         r"<[^<>\s]+>|\[[^\[\]]*\]|\{[^{}]*\})(?=\s|$)")


def _words(s):
    return _WORD.findall(s)


def _prose(s):
    """s without placeholders, URLs, options, paths and identifiers."""
    return _CODE_TOKEN.sub(" ", PLACEHOLDER.sub(" ", URL.sub(" ", s)))


def untranslated_german(en, de):
    """German side that is (partly) left in English."""
    body = _QUOTED.sub(" ", _prose(de))
    words = _words(body)
    if not words:
        return False
    func = sum(1 for w in words if w in EN_FUNCTION)
    if func >= 2 or (func == 1 and len(words) <= 4):
        return True
    en_lower = {w for w in _words(_prose(en)) if w.islower() and len(w) >= 4}
    copied = [w for w in words if w in en_lower]
    return len(copied) >= 3 and len(copied) >= 0.5 * len(words)


def source_not_english(en):
    words = [w.lower() for w in _words(_prose(en))]
    if len(words) < 6:
        return False
    n_en = sum(1 for w in words if w in EN_FUNCTION)
    n_de = sum(1 for w in words if w in DE_FUNCTION)
    n_fr = sum(1 for w in words if w in FR_FUNCTION)
    return n_en == 0 and (n_de >= 2 or n_fr >= 2)


# --------------------------------------------------------------------------------------------
# Segmentation

_LIST_LINE = re.compile(r"^\s*(?:[-*•·+]\s|\d+[.)]\s|-{1,2}[A-Za-z0-9])")
_OPTION_HEAD = re.compile(r"^\s*(?:-{1,2}[\w-]+(?:[= ]?[<\[]?[\w-]+[>\]]?)?(?:,\s*|\s))+\s+(?=\S)")


def split_structure(en, de):
    """Splits multi-line strings into paragraph (and list line) pairs where both sides have
    the same structure; otherwise keeps the pair whole."""
    if "\n" not in en and "\n" not in de:
        return [(en, de)]
    pe = [p for p in re.split(r"\n\s*\n", en.strip()) if p.strip()]
    pd = [p for p in re.split(r"\n\s*\n", de.strip()) if p.strip()]
    if len(pe) != len(pd):
        return [(en, de)]
    out = []
    for e, d in zip(pe, pd):
        le = [x for x in e.split("\n") if x.strip()]
        ld = [x for x in d.split("\n") if x.strip()]
        if len(le) == len(ld) > 1 and all(_LIST_LINE.match(x) for x in le) \
                and all(_LIST_LINE.match(x) for x in ld):
            for a, b in zip(le, ld):
                ha, hb = _OPTION_HEAD.match(a), _OPTION_HEAD.match(b)
                if ha and hb and ha.group(0).split() == hb.group(0).split():
                    a, b = a[ha.end():], b[hb.end():]
                out.append((a, b))
        else:
            out.append((e, d))
    return out


ABBREV_EN = set("""e.g i.e etc vs mr mrs ms dr st no nr fig approx cf inc ltd jr sr vol
ch sec p pp ed al ca resp""".replace(".", "").split())
ABBREV_DE = set("""z.b d.h u.a o.ä bzw ggf evtl usw etc ca nr vgl inkl max min bspw u.u s.o
s.u abb kap bd hrsg dr prof st str tel i.d.r z.t m.e sog u.ä v.a bzw. ggfs zzgl ebd. o.g
d.i.""".replace(".", "").split()) | set("zb dh ua oä uu so su idr zt me uä va og di".split())
_BOUNDARY = re.compile(r"([.!?…]+)([\"'”“»«’)\]]*)\s+(?=[\"'„“»«‚(\[]?[A-ZÄÖÜ0-9])")


def split_sentences(text, lang):
    abbrev = ABBREV_EN if lang == "en" else ABBREV_DE
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        before = text[start:m.start()]
        last = before.split()[-1] if before.split() else ""
        core = re.sub(r"[^\w.]", "", last).lower().replace(".", "")
        if ".." in m.group(1) or "…" in m.group(1):
            continue  # ellipses in UI text ("Open File... Name") rarely end a sentence
        if m.group(1) == ".":
            if not core or core in abbrev or len(core) == 1 or core.isdigit():
                continue
            # "z. B.", "d. h.": a one-letter token before a one-letter token.
            if re.search(r"(?:^|\s)\w\.\s*\w$", before[-6:]):
                continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


# --------------------------------------------------------------------------------------------
# Filters

MAX_WORDS = 100
MAX_CHARS = 800
RATIO_MIN, RATIO_MAX = 0.45, 2.4
CREDITS = re.compile(r"^(translator[-_ ]credits|name of translators|email of translators|"
                     r"your names?|your emails?|translators?|_: name of translators.*)$", re.I)
_IDENT = re.compile(r"^[\w.:/@#+\\-]+$")
_TIMEZONE = re.compile(r"^(Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|"
                       r"Pacific|Etc|US|Canada|Brazil|Mexico|Chile)/\S+$")


def check(en, de):
    """Name of the first filter that rejects the (normalized) pair, or None."""
    if not en or not de:
        return "empty"
    if CREDITS.match(en):
        return "credits"
    if len(en) > MAX_CHARS or len(de) > MAX_CHARS or len(en.split()) > MAX_WORDS:
        return "too_long"
    le, ld = _words(en), _words(de)
    if sum(map(len, le)) < 2 or sum(map(len, ld)) < 2:
        return "not_text"
    nonspace = len(en.replace(" ", ""))
    if sum(map(len, le)) < 0.5 * nonspace:
        return "not_text"
    core = en.rstrip(".:!?…")
    if " " not in core and _IDENT.match(core) and (re.search(r"[_:@#\\]", core) or
                                                 re.search(r"[a-z][A-Z]", core) or
                                                 re.search(r"\w\.\w", core)):
        return "not_text"
    if _TIMEZONE.match(en):
        return "not_text"
    if "".join(le).casefold() == "".join(ld).casefold():
        return "identical"
    if source_not_english(en):
        return "source_not_english"
    if placeholders(en) != placeholders(de):
        return "placeholder_mismatch"
    if urls(en) != urls(de):
        return "url_mismatch"
    if not numbers_agree(en, de):
        return "number_mismatch"
    r = (len(de) + 15) / (len(en) + 15)
    if r < RATIO_MIN or r > RATIO_MAX:
        return "length_ratio"
    if untranslated_german(en, de):
        return "untranslated"
    return None


def segment_pair(en, de, ui):
    """[(en, de, reason)] for one raw pair; ui=True for software strings (accelerators,
    context prefixes, markup)."""
    if ui:
        if _WESNOTH_MARKUP.search(en) or _WESNOTH_MARKUP.search(de):
            return [(en, de, "markup")]
        en, de = strip_context_prefix(en, de)
        en, de = strip_accelerators(en, de)
    out = []
    for e, d in split_structure(en, de):
        if ui:
            e, d = strip_markup(e), strip_markup(d)
        e, d = normalize(e), normalize(d)
        se, sd = split_sentences(e, "en"), split_sentences(d, "de")
        parts = list(zip(se, sd)) if len(se) == len(sd) > 1 else [(e, d)]
        for a, b in parts:
            out.append((a, b, check(a, b)))
    return out


# --------------------------------------------------------------------------------------------
# Keys used by deduplication, caps and the split

def fuzzy_key(en):
    """English side reduced to lowercase letters and digits: near-identical sentences
    (case, punctuation, spacing, placeholders) share a key and so a split."""
    s = PLACEHOLDER.sub(" ", en).casefold()
    return " ".join(re.findall(r"[^\W_]+", s))


def template_key(en, de):
    """English side with untranslated tokens (names, identifiers: they reappear unchanged in
    the German side), numbers and placeholders masked; repeated boilerplate ("This package
    contains the development files for libfoo.") shares a key. Words the German side
    translates stay, so sentences that differ in translated words stay apart."""
    strip = ".,;:!?()[]{}\"'“”‘’«»„‚"
    de_tokens = {t.strip(strip) for t in de.split()}
    out = []
    for t in en.split():
        core = t.strip(strip)
        if (PLACEHOLDER.search(t) or re.search(r"\d", t) or re.search(r"[_/.@:\\]", core)
                or (core and core in de_tokens and not core.islower())
                or (core and core in de_tokens and len(core) > 3)):
            out.append("#")
        else:
            out.append(t.lower())
    return " ".join(out)


def word_count(s):
    return len(s.split())
