"""Mozilla sources: firefox-esr / thunderbird en-US strings (omni.ja) vs the German langpacks.

Files are matched by their path below the locale directory, strings by key, in the three
formats Mozilla uses: Fluent (.ftl), .properties and .dtd. Access keys, shortcut keys and
style values are not text and are skipped; Fluent select expressions (plural variants) are
skipped; brand terms/entities are replaced by their values.
"""

import os
import re
import zipfile

from debian_fetch import log

PRODUCTS = {
    "firefox-esr": ("firefox-esr", "firefox-esr-l10n-de"),
    "thunderbird": ("thunderbird", "thunderbird-l10n-de"),
}
PATTERNS = {"en": ["*/omni.ja"], "de": ["*.xpi"]}

NON_TEXT_KEY = re.compile(
    r"(accesskey|accessKey|AccessKey|\.key\d*$|[.-]key$|commandkey|commandKey|\.style$|"
    r"[.-]width$|[.-]height$|\.size$|shortcut|Shortcut|modifiers$|keycode$|\.keycode)")


def packages():
    return [p for pair in PRODUCTS.values() for p in pair]


def _locale_key(name):
    """('ftl'|'properties'|'dtd', path below the locale dir) or None."""
    m = re.search(r"(?:^|/)localization/(?:en-US|de)/(.+\.ftl)$", name)
    if m:
        return "ftl", m.group(1)
    m = re.search(r"/locale/(.+\.(properties|dtd))$", name)
    if m and "/chrome/" in "/" + name:
        rest = re.sub(r"^(en-US|de)/", "", m.group(1))
        return m.group(2), rest
    return None


def _archive_files(paths):
    files = {}
    for path in paths:
        try:
            z = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
            log(f"  warning: cannot read {path} as zip")
            continue
        for name in z.namelist():
            k = _locale_key(name)
            if k and k not in files:
                files[k] = z.read(name).decode("utf-8", "replace")
    return files


def parse_ftl(text):
    """{key: raw value} for messages, terms ("-name") and attributes ("id.attr")."""
    out = {}
    cur_id = cur_key = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            cur_id = cur_key = None
            continue
        m = re.match(r"^(-?[A-Za-z][\w-]*)\s*=\s?(.*)$", line)
        if m:
            cur_id = cur_key = m.group(1)
            out[cur_key] = m.group(2).strip()
            continue
        m = re.match(r"^\s+\.([A-Za-z][\w-]*)\s*=\s?(.*)$", line)
        if m and cur_id:
            cur_key = cur_id + "." + m.group(1)
            out[cur_key] = m.group(2).strip()
            continue
        if line[0].isspace() and cur_key:
            out[cur_key] = (out[cur_key] + "\n" + line.strip()).strip()
    return out


def resolve_ftl(value, terms):
    """Plain text of a Fluent value, or None when it holds a select expression or a
    reference that cannot be resolved."""
    if "->" in value:
        return None

    def sub(m):
        inner = m.group(1).strip()
        if inner.startswith("-"):
            name = inner.split(".")[0].split("(")[0].strip()
            t = terms.get(name)
            if t is None or "{" in t or "->" in t:
                raise KeyError(name)
            return t
        if inner.startswith("$"):
            return "{$" + inner[1:].strip() + "}"
        if inner.startswith('"') and inner.endswith('"'):
            return inner[1:-1]
        raise KeyError(inner)

    try:
        return re.sub(r"\{([^{}]*)\}", sub, value).replace("\n", " ")
    except KeyError:
        return None


def parse_properties(text):
    out = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and not line.endswith("\\\\") and i < len(lines):
            line = line[:-1] + lines[i].strip()
            i += 1
        m = re.match(r"^([^=:\s]+)\s*[=:]\s*(.*)$", line)
        if not m:
            continue
        val = m.group(2)
        val = re.sub(r"\\u([0-9a-fA-F]{4})", lambda x: chr(int(x.group(1), 16)), val)
        val = val.replace("\\n", " ").replace("\\t", " ").replace("\\'", "'").replace(
            '\\"', '"').replace("\\\\", "\\")
        out[m.group(1)] = val
    return out


def parse_dtd(text):
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return {m.group(1): m.group(3) for m in
            re.finditer(r"<!ENTITY\s+([\w.\-]+)\s+([\"'])(.*?)\2\s*>", text, re.S)}


def _plural_first(en, de):
    """Mozilla .properties plurals are ';'-separated forms; keep the first of each."""
    if ";" in en and ";" in de and ("#1" in en or "#1" in de):
        return en.split(";")[0], de.split(";")[0]
    return en, de


def product_pairs(dirs, product):
    """Yields (en, de, origin) for one product."""
    en_pkg, de_pkg = PRODUCTS[product]

    def archives(d, ext):
        out = []
        for root, _, files in os.walk(d):
            for f in files:
                if f.endswith(ext):
                    out.append(os.path.join(root, f))
        return sorted(out)

    en_files = _archive_files(archives(dirs[en_pkg], ".ja"))
    de_files = _archive_files(archives(dirs[de_pkg], ".xpi"))
    # Brand terms/entities, for resolving references.
    maps = {}
    for lang, files in (("en", en_files), ("de", de_files)):
        terms, ents = {}, {}
        for (kind, _), text in sorted(files.items()):
            if kind == "ftl":
                terms.update({k: v for k, v in parse_ftl(text).items()
                              if k.startswith("-") and "." not in k})
            elif kind == "dtd":
                ents.update(parse_dtd(text))
        maps[lang] = (terms, ents)
    n_files = 0
    for key in sorted(set(en_files) & set(de_files)):
        kind, rel = key
        n_files += 1
        if kind == "ftl":
            e, d = parse_ftl(en_files[key]), parse_ftl(de_files[key])
        elif kind == "properties":
            e, d = parse_properties(en_files[key]), parse_properties(de_files[key])
        else:
            e, d = parse_dtd(en_files[key]), parse_dtd(de_files[key])
        for k in e:
            if k not in d or k.startswith("-") or NON_TEXT_KEY.search(k):
                continue
            ev, dv = e[k], d[k]
            if kind == "ftl":
                ev = resolve_ftl(ev, maps["en"][0])
                dv = resolve_ftl(dv, maps["de"][0])
                if ev is None or dv is None:
                    continue
            elif kind == "dtd":
                ev = _resolve_entities(ev, maps["en"][1])
                dv = _resolve_entities(dv, maps["de"][1])
            else:
                ev, dv = _plural_first(ev, dv)
            yield ev, dv, f"{product}:{rel}#{k}"
    log(f"  {product}: {n_files} string files matched")


def _resolve_entities(value, ents):
    def sub(m):
        v = ents.get(m.group(1))
        if v is None or "&" in v:
            return m.group(0)
        return v
    return re.sub(r"&([A-Za-z][\w.\-]*);", sub, value)
