#!/usr/bin/python3
"""Builds the English->German training corpus from Debian packages.

Steps: private apt lists -> download/extract packages (cached) -> raw pairs per source
(cached) -> segmentation and filters (clean.py) -> deduplication and caps -> train/valid/test
split disjoint by English side -> files and stats.json. See README.md.
"""

import argparse
import collections
import gzip
import hashlib
import json
import os
import sys
import time

import clean
import debian_fetch
import source_ddtp
import source_docs
import source_gettext
import source_mozilla
from debian_fetch import log

HERE = os.path.dirname(os.path.abspath(__file__))

# Corpus sources in priority order: a pair found in several sources is counted for the first.
# (name, group, ui) -- ui: software strings (accelerators, markup, context prefixes).
SOURCES = [
    ("lo-help", "libreoffice-help", False),
    ("debian-reference", "manuals", False),
    ("maint-guide", "manuals", False),
    ("kicad-doc", "manuals", False),
    ("gimp-help", "manuals", False),
    ("ddtp", "ddtp", False),
    ("firefox-esr", "mozilla", True),
    ("thunderbird", "mozilla", True),
    ("lo-l10n", "libreoffice-l10n", True),
    ("wesnoth", "wesnoth", True),
    ("gettext", "gettext", True),
]
PRIORITY = {name: i for i, (name, _, _) in enumerate(SOURCES)}

# Code whose changes invalidate the cached raw pairs of a source.
EXTRACTOR_CODE = {
    "lo-help": ["source_docs.py", "html_text.py"],
    "manual": ["source_docs.py", "html_text.py"],
    "mozilla": ["source_mozilla.py"],
    "ddtp": ["source_ddtp.py", "debian_fetch.py"],
    "gettext": ["source_gettext.py", "mo_file.py"],
}


def sha1(*parts):
    h = hashlib.sha1()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def code_hash(kind):
    return sha1(*[open(os.path.join(HERE, f)).read() for f in EXTRACTOR_CODE[kind]])


def cached_raw(cache, name, key, produce):
    """Raw (en, de, origin) triples of one source, recomputed only when `key` changes."""
    path = os.path.join(cache, "raw", name + ".jsonl.gz")
    if os.path.exists(path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            head = json.loads(f.readline())
            if head.get("key") == key:
                rows = [tuple(json.loads(line)) for line in f]
                log(f"{name}: {len(rows)} raw pairs (cached)")
                return rows
    t0 = time.time()
    rows = [(e, d, o) for e, d, o in produce()]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as f:
        f.write(json.dumps({"key": key}) + "\n")
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    log(f"{name}: {len(rows)} raw pairs ({time.time() - t0:.0f} s)")
    return rows


def lo_l10n_pairs(dirs):
    subst = {"%PRODUCTNAME": ("LibreOffice", "LibreOffice"),
             "%PRODUCTVENDOR": ("The Document Foundation", "The Document Foundation"),
             "%MOD1": ("Ctrl", "Strg"), "%MOD2": ("Alt", "Alt")}
    for en, de, origin in source_gettext.pairs_from_dirs(dirs, "lo-l10n"):
        for k, (ve, vd) in subst.items():
            en, de = en.replace(k, ve), de.replace(k, vd)
        yield en, de, origin


# --------------------------------------------------------------------------------------------

def collect_raw(apt, cache, max_deb_mb, only):
    """{source name: [(en, de, origin)]} and {package: version} of everything fetched."""
    pk = apt.packages()
    raw, used = {}, {}

    def fetch(names, patterns, label):
        dirs = debian_fetch.fetch_and_extract(apt, cache, names, patterns, label)
        for n in dirs:
            used[n] = pk[n]["Version"]
        return dirs

    def versions(names):
        return json.dumps([(n, pk[n]["Version"]) for n in sorted(names) if n in pk])

    want = lambda s: not only or s in only  # noqa: E731

    if want("lo-help"):
        names = source_docs.LO_HELP["packages"]
        dirs = {}
        for n in names:
            dirs.update(fetch([n], source_docs.LO_HELP["patterns"][n], "lo-help"))
        raw["lo-help"] = cached_raw(cache, "lo-help", sha1(versions(names), code_hash("lo-help")),
                                    lambda: source_docs.lo_help_pairs(dirs))
    man_names = [m for m in source_docs.MANUALS if want(m)]
    if man_names:
        dirs = fetch(source_docs.manual_packages(), source_docs.MANUAL_PATTERNS, "manuals")
        for m in man_names:
            en_pkg, de_pkg = source_docs.MANUALS[m][:2]
            raw[m] = cached_raw(cache, m, sha1(versions([en_pkg, de_pkg]), code_hash("manual")),
                                lambda m=m: source_docs.manual_pairs(dirs, m))
    if want("ddtp"):
        files = apt.list_files("_Translation-en") + apt.list_files("_Translation-de")
        lists = sorted(os.path.basename(p) + str(os.path.getsize(p)) for p in files)
        raw["ddtp"] = cached_raw(cache, "ddtp", sha1(*lists, code_hash("ddtp")),
                                 lambda: source_ddtp.pairs(apt))
    for product, (en_pkg, de_pkg) in source_mozilla.PRODUCTS.items():
        if not want(product):
            continue
        dirs = fetch([en_pkg], source_mozilla.PATTERNS["en"], product)
        dirs.update(fetch([de_pkg], source_mozilla.PATTERNS["de"], product))
        raw[product] = cached_raw(
            cache, product, sha1(versions([en_pkg, de_pkg]), code_hash("mozilla")),
            lambda product=product, dirs=dirs: source_mozilla.product_pairs(dirs, product))
    if want("lo-l10n"):
        names = ["libreoffice-l10n-de"]
        dirs = fetch(names, source_gettext.MO_PATTERNS, "lo-l10n")
        raw["lo-l10n"] = cached_raw(cache, "lo-l10n", sha1(versions(names), code_hash("gettext")),
                                    lambda: lo_l10n_pairs(dirs))
    if want("wesnoth") or want("gettext"):
        generic, wesnoth, skipped = source_gettext.select_packages(apt, max_deb_mb)
        log(f"gettext: {len(generic)} packages with German catalogs selected "
            f"({sum(pk[n]['Size'] for n in generic) / 1e9:.2f} GB), "
            f"{len(skipped)} skipped, {len(wesnoth)} Wesnoth packages")
        raw_skipped = skipped
        if want("wesnoth"):
            dirs = fetch(wesnoth, source_gettext.MO_PATTERNS, "wesnoth")
            raw["wesnoth"] = cached_raw(
                cache, "wesnoth", sha1(versions(wesnoth), code_hash("gettext")),
                lambda: source_gettext.pairs_from_dirs(dirs, "wesnoth"))
        if want("gettext"):
            dirs = fetch(generic, source_gettext.MO_PATTERNS, "gettext")
            raw["gettext"] = cached_raw(
                cache, "gettext", sha1(versions(generic), code_hash("gettext")),
                lambda: source_gettext.pairs_from_dirs(dirs, "gettext"))
        used["_skipped"] = raw_skipped
    return raw, used


# --------------------------------------------------------------------------------------------

def filter_sources(raw, stats, dump_dir=None):
    """Segments and filters raw pairs; returns [(en, de, source, origin)] that passed.

    With dump_dir, writes samples of what each filter dropped (for inspection)."""
    kept = []
    samples = collections.defaultdict(list)
    ui_of = {name: ui for name, _, ui in SOURCES}
    for name, _, _ in SOURCES:
        if name not in raw:
            continue
        st = stats[name]
        t0 = time.time()
        dropped = collections.Counter()
        n_seg = n_kept = 0
        memo = {}  # the same catalog string recurs across packages
        for i, (en, de, origin) in enumerate(raw[name]):
            segs = memo.get((en, de))
            if segs is None:
                segs = memo[(en, de)] = clean.segment_pair(en, de, ui_of[name])
            for e, d, reason in segs:
                n_seg += 1
                if reason:
                    dropped[reason] += 1
                    if dump_dir:
                        samples[(name, reason)].append((sha1(e, d), e, d, origin))
                else:
                    n_kept += 1
                    kept.append((e, d, name, origin))
            if (i + 1) % 200000 == 0:
                log(f"  {name}: filtered {i + 1}/{len(raw[name])}")
        st["raw"] = len(raw[name])
        st["segments"] = n_seg
        st["dropped_by_filter"] = dict(sorted(dropped.items(), key=lambda x: -x[1]))
        st["passed_filters"] = n_kept
        log(f"{name}: {len(raw[name])} raw -> {n_seg} segments -> {n_kept} passed filters "
            f"({time.time() - t0:.0f} s)")
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
        for (name, reason), rows in sorted(samples.items()):
            with open(os.path.join(dump_dir, f"{name}.{reason}.tsv"), "w") as f:
                for _, e, d, o in sorted(rows)[:200]:
                    f.write(f"{e}\t{d}\t{o}\n")
    return kept


def build(kept, stats, args):
    seed = str(args.seed)

    # ---- exact deduplication ------------------------------------------------------------------
    pairs = {}  # (en, de) -> record
    for en, de, src, origin in kept:
        r = pairs.get((en, de))
        if r is None:
            pairs[(en, de)] = {"en": en, "de": de, "src": src, "n": 1,
                               "namelist": source_gettext.is_name_list(origin) if src == "gettext"
                               else False,
                               "catalog": origin}
        else:
            r["n"] += 1
            if PRIORITY[src] < PRIORITY[r["src"]]:
                r["src"] = src
            if not (src == "gettext" and source_gettext.is_name_list(origin)):
                r["namelist"] = False
    uniq = collections.Counter(r["src"] for r in pairs.values())
    for name in stats:
        stats[name]["unique"] = uniq.get(name, 0)
        stats[name]["dropped_as_duplicate"] = \
            stats[name].get("passed_filters", 0) - uniq.get(name, 0)
    log(f"dedupe: {len(kept)} -> {len(pairs)} unique pairs")
    recs = list(pairs.values())
    for r in recs:
        r["h"] = sha1(seed, r["en"], r["de"])

    def rank(r):
        return (-r["n"], r["h"])

    def drop(records, removed, stage):
        c = collections.Counter(r["src"] for r in removed)
        for name in stats:
            stats[name].setdefault("dropped_by_cap", {})[stage] = c.get(name, 0)
        log(f"{stage}: removed {len(removed)}")
        return records

    # ---- name lists: at most N pairs per catalog ----------------------------------------------
    by_cat = collections.defaultdict(list)
    rest = []
    for r in recs:
        (by_cat[r["catalog"]] if r["namelist"] else rest).append(r)
    removed = []
    for cat in sorted(by_cat):
        group = sorted(by_cat[cat], key=rank)
        rest += group[:args.max_namelist]
        removed += group[args.max_namelist:]
    recs = drop(rest, removed, "name_list")

    # ---- German variants of one English string ------------------------------------------------
    by_en = collections.defaultdict(list)
    for r in recs:
        by_en[r["en"]].append(r)
    rest, removed = [], []
    for en in by_en:
        group = sorted(by_en[en], key=rank)
        rest += group[:args.max_variants]
        removed += group[args.max_variants:]
    recs = drop(rest, removed, "variants")

    # ---- boilerplate templates ----------------------------------------------------------------
    by_tpl = collections.defaultdict(list)
    rest = []
    for r in recs:
        k = clean.template_key(r["en"], r["de"])
        (by_tpl[k] if "#" in k else rest).append(r)
    removed = []
    for k in by_tpl:
        group = sorted(by_tpl[k], key=rank)
        rest += group[:args.max_template]
        removed += group[args.max_template:]
    recs = drop(rest, removed, "template")

    # ---- held-out splits, disjoint by (fuzzy) English side -------------------------------------
    by_key = collections.defaultdict(list)
    for r in recs:
        by_key[clean.fuzzy_key(r["en"])].append(r)
    candidates = sorted(
        (k for k, g in by_key.items()
         if k and any(args.heldout_min_words <= clean.word_count(r["en"]) <= args.heldout_max_words
                      and not r["namelist"] for r in g)),
        key=lambda k: sha1(seed, "split", k))
    need = args.test_size + args.valid_size
    if len(candidates) < need:
        raise SystemExit(f"only {len(candidates)} held-out candidates for {need} lines")

    def pick(k):
        g = [r for r in by_key[k]
             if args.heldout_min_words <= clean.word_count(r["en"]) <= args.heldout_max_words]
        return sorted(g, key=rank)[0]

    test = [pick(k) for k in candidates[:args.test_size]]
    valid = [pick(k) for k in candidates[args.test_size:need]]
    held = set(candidates[:need])
    train, removed = [], []
    for r in recs:
        (removed if clean.fuzzy_key(r["en"]) in held else train).append(r)
    chosen = set(id(r) for r in test + valid)
    removed = [r for r in removed if id(r) not in chosen]
    drop(train, removed, "same_english_as_heldout")

    # ---- short labels --------------------------------------------------------------------------
    short = sorted((r for r in train if clean.word_count(r["en"]) <= 2), key=rank)
    keep_short = set(id(r) for r in short[:args.max_short])
    removed = [r for r in short if id(r) not in keep_short]
    train = [r for r in train if clean.word_count(r["en"]) > 2 or id(r) in keep_short]
    drop(train, removed, "short_labels")

    train.sort(key=lambda r: r["h"])
    return {"train": train, "valid": valid, "test": test}


def write_splits(splits, out):
    os.makedirs(out, exist_ok=True)
    for split, recs in splits.items():
        for field, ext in (("en", "en"), ("de", "de"), ("src", "origin")):
            tmp = os.path.join(out, f"{split}.{ext}.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                for r in recs:
                    s = r[field]
                    assert "\t" not in s and "\n" not in s and s.strip() == s and s
                    f.write(s + "\n")
            os.replace(tmp, os.path.join(out, f"{split}.{ext}"))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/work/data/corpus")
    ap.add_argument("--cache", default="/work/data/corpus-cache")
    ap.add_argument("--update-lists", action="store_true",
                    help="refresh the cached apt lists (package versions may change)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--test-size", type=int, default=1000)
    ap.add_argument("--valid-size", type=int, default=1000)
    ap.add_argument("--heldout-min-words", type=int, default=3)
    ap.add_argument("--heldout-max-words", type=int, default=60)
    ap.add_argument("--max-deb-mb", type=float, default=60,
                    help="skip gettext packages whose .deb is larger (mostly game art)")
    ap.add_argument("--max-short", type=int, default=30000,
                    help="cap on training pairs with 1-2 English words")
    ap.add_argument("--max-variants", type=int, default=2,
                    help="German translations kept per English string")
    ap.add_argument("--max-template", type=int, default=10,
                    help="pairs kept per boilerplate template")
    ap.add_argument("--max-namelist", type=int, default=300,
                    help="pairs kept per name-list catalog (iso-codes, locations, ...)")
    ap.add_argument("--dump-dropped", default=None,
                    help="write samples of dropped pairs per source and filter to this dir")
    ap.add_argument("--only", nargs="*", help="restrict to these sources (for debugging)")
    ap.add_argument("--stats-copy", default=None,
                    help="also write stats.json here (e.g. tools/corpus/stats.json)")
    args = ap.parse_args()
    t_start = time.time()

    apt = debian_fetch.Apt(os.path.join(args.cache, "apt"))
    apt.update(force=args.update_lists)
    raw, used = collect_raw(apt, args.cache, args.max_deb_mb, args.only)
    t_raw = time.time()

    stats = {name: {"group": group} for name, group, _ in SOURCES if name in raw}
    kept = filter_sources(raw, stats, args.dump_dropped)
    splits = build(kept, stats, args)
    for name in stats:
        for split, recs in splits.items():
            stats[name][split] = sum(1 for r in recs if r["src"] == name)
        tr = [r for r in splits["train"] if r["src"] == name]
        stats[name]["train_avg_en_words"] = round(
            sum(clean.word_count(r["en"]) for r in tr) / max(1, len(tr)), 1)
    write_splits(splits, args.out)

    skipped = used.pop("_skipped", {})
    with open(os.path.join(args.out, "packages.tsv"), "w") as f:
        for n in sorted(used):
            f.write(f"{n}\t{used[n]}\n")
    tr = splits["train"]
    totals = {
        "raw": sum(s["raw"] for s in stats.values()),
        "passed_filters": sum(s["passed_filters"] for s in stats.values()),
        "unique": sum(s["unique"] for s in stats.values()),
        "train": len(tr), "valid": len(splits["valid"]), "test": len(splits["test"]),
        "train_en_words": sum(clean.word_count(r["en"]) for r in tr),
        "train_de_words": sum(clean.word_count(r["de"]) for r in tr),
        "train_3_to_60_en_words": sum(1 for r in tr if 3 <= clean.word_count(r["en"]) <= 60),
        "train_1_to_2_en_words": sum(1 for r in tr if clean.word_count(r["en"]) <= 2),
    }
    result = {
        "description": "English->German corpus from Debian bookworm packages; "
                       "see tools/corpus/README.md",
        "config": {k: v for k, v in vars(args).items()
                   if k not in ("out", "cache", "stats_copy", "dump_dropped", "update_lists")},
        "apt_lists_fetched": apt.lists_date(),
        "totals": totals,
        "sources": stats,
        "packages": {
            "fetched": len(used),
            "fetched_list_sha1": sha1(*[f"{n}={v}" for n, v in sorted(used.items())]),
            "versions_of_named_sources": {n: v for n, v in sorted(used.items()) if any(
                n.startswith(p) for p in ("libreoffice", "firefox", "thunderbird",
                                          "debian-reference", "maint-guide", "kicad-doc",
                                          "gimp-help"))},
            "skipped_gettext_packages": skipped,
        },
        "seconds": {"fetch_and_extract": round(t_raw - t_start),
                    "clean_and_split": round(time.time() - t_raw),
                    "total": round(time.time() - t_start)},
    }
    text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
    with open(os.path.join(args.out, "stats.json"), "w") as f:
        f.write(text)
    if args.stats_copy:
        with open(args.stats_copy, "w") as f:
            f.write(text)
    log(f"done in {time.time() - t_start:.0f} s: train {totals['train']}, valid "
        f"{totals['valid']}, test {totals['test']} -> {args.out}")


if __name__ == "__main__":
    sys.exit(main())
