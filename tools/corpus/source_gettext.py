"""Gettext sources: German .mo catalogs of Debian packages (msgid -> msgstr).

Three corpus sources come from here:
  gettext      every package in bookworm main whose Contents list a */de/LC_MESSAGES/*.mo
               (except the two below), one binary package per (source package, catalog)
  lo-l10n      libreoffice-l10n-de (LibreOffice UI)
  wesnoth      Battle for Wesnoth 1.16 catalogs (campaign dialogue, help, units)
"""

import collections
import os
import re

import debian_fetch
from debian_fetch import log
from mo_file import read_mo

MO_RX = r"/de/LC_MESSAGES/[^/\s]+\.mo\s"
MO_PATTERNS = ["*/de/LC_MESSAGES/*.mo"]

# Catalogs that are lists of names (countries, languages, currencies, scripts, time zones,
# keyboard layouts, places): translated names rather than language. Capped per catalog.
NAME_LIST_DOMAINS = re.compile(
    r"^(iso_\d+([-_]\d+)?|iso-codes|isocodes|libgweather.*locations.*|.*-locations|"
    r"xkeyboard-config|tzdata|.*timezones?|.*countr(y|ies).*|language-names|.*-languages|"
    r"geonames|kgeography|.*-cities|cldr.*)$")


def select_packages(apt, max_deb_mb):
    """Finds packages shipping German catalogs in the Contents indexes.

    Returns (generic, wesnoth, skipped) where generic/wesnoth are sorted package names and
    skipped maps package -> reason.
    """
    pk = apt.packages()
    hits = apt.contents_grep(MO_RX)
    by_key = collections.defaultdict(set)  # (source package, catalog file) -> binary packages
    wesnoth, skipped = set(), {}
    for path, pkgs in hits:
        for p in pkgs:
            if p not in pk:
                continue
            src = pk[p]["Source"]
            if any(p.startswith(r) for r in debian_fetch.RESERVED_PACKAGES):
                skipped[p] = "reserved"
                continue
            if src.startswith("wesnoth-1.16") or "/games/wesnoth/" in path:
                wesnoth.add(p)
                continue
            if src == "libreoffice":
                continue  # libreoffice-l10n-de is its own source; other l10n are not German
            by_key[(src, os.path.basename(path))].add(p)
    chosen = set()
    for key in sorted(by_key):
        cands = sorted(by_key[key], key=lambda p: (pk[p]["Size"], p))
        chosen.add(cands[0])
    # A package is fetched when it is the smallest carrier of at least one catalog.
    generic = []
    for p in sorted(chosen):
        if pk[p]["Size"] > max_deb_mb * 1e6:
            skipped[p] = f"deb larger than {max_deb_mb} MB"
            continue
        generic.append(p)
    return generic, sorted(wesnoth), skipped


def mo_files(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".mo") and os.sep + "de" + os.sep + "LC_MESSAGES" in d + os.sep:
                out.append(os.path.join(d, f))
    return sorted(out)


def catalog_pairs(path):
    """Yields (msgid, msgstr, catalog name) from one .mo (context dropped)."""
    domain = os.path.basename(path)[:-3]
    for _ctxt, en, de in read_mo(path):
        yield en, de, domain


def pairs_from_dirs(dirs, label):
    """Yields (en, de, origin) for all German catalogs under the extracted package dirs.

    origin is "package:catalog"; the same catalog shipped by several packages is read once.
    """
    seen_files = set()
    n_files = 0
    for pkg in sorted(dirs):
        for path in mo_files(dirs[pkg]):
            domain = os.path.basename(path)[:-3]
            try:
                size = os.path.getsize(path)
            except OSError:
                continue
            key = (domain, size)
            if key in seen_files:
                continue
            seen_files.add(key)
            n_files += 1
            for en, de, dom in catalog_pairs(path):
                yield en, de, f"{pkg}:{dom}"
    log(f"  {label}: read {n_files} catalogs from {len(dirs)} packages")


def is_name_list(origin):
    domain = origin.split(":", 1)[-1]
    pkg = origin.split(":", 1)[0]
    return bool(NAME_LIST_DOMAINS.match(domain)) or pkg in ("iso-codes", "tzdata")
