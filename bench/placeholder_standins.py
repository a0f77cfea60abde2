#!/usr/bin/env python3
"""Measures which stand-in the en-de model copies best in place of a protected span.

For English lines that carry spans (format specifiers, placeholders, URLs, e-mails, paths), each
strategy replaces every span by a stand-in, translates the lines with transerve-translate, and
reports:
  - intact: share of lines where every stand-in comes back exactly once (for `keep`, every span's
    own text exactly once);
    reported for all lines, for lines whose spans are all format specifiers / placeholders,
    and for lines with a URL, e-mail or path;
  - dup / lost: share of lines with some stand-in twice or more / missing;
  - chrF: corpus chrF (char 6-grams, beta 2) of the translation with the stand-ins removed
    against the reference with its spans removed (lines with a reference only);
  - len: mean length ratio of that remainder to the source remainder (all lines).

The span detector here is a regex approximation of text/protected_spans.cc, good enough to pick
lines and spans for the measurement; the C++ scanner is the one the service uses.

Lines: the corpus test split (--corpus_en/--corpus_de, when present), German gettext catalogs
(msgid -> msgstr; note these may overlap the model's training data), and a few hand-written
lines without a reference. Catalog lines with a single %s on both sides also come with the %s
filled by a URL, e-mail or path, since those are rare in catalogs and the model alters them.

A second table runs the C++ code end to end (transerve-protect-spans, a bench target:
Protect, the model, Unprotect without an alignment) against translating the raw line: share of
lines where every span the C++ scanner finds comes back byte for byte as often as in the source,
and chrF of the whole output against the whole reference.

  cmake --build build -j2 --target transerve-protect-spans
  python3 bench/placeholder_standins.py \
      --translate=/work/main/build/bin/transerve-translate \
      --model_dir=/work/main/models/en-de-small --protect_tool=build/bin/transerve-protect-spans \
      [--max_lines=800] [--num_threads=1]
"""
import argparse
import collections
import glob
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools", "corpus"))
from mo_file import read_mo  # noqa: E402

_PRINTF = (r"%%|%\(\w+\)[-+#0]*\d*(?:\.\d+)?[diouxXeEfFgGcrs]"
           r"|%(?:\d+\$)?[-+#0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcCsSpnm@]"
           r"|%\d+")
_BRACE = r"\{\{\s*[\w.]+\s*\}\}|\{\w*(?::[^{}\s]*)?\}"
_SHELL = r"\$\{[^}\s]+\}|\$\([^)\s]+\)|\$[A-Za-z_]\w*|\$\d"
_URL = r"(?:(?:https?|ftp|file)://|mailto:|www\.)[^\s<>\"']+"
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_PATH = (r"(?<![\w/.])(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]*)*|[A-Za-z]:\\[\w.\\-]+"
         r"|\b[\w-]+\.(?:conf|cfg|ini|txt|md|json|xml|ya?ml|sh|py|log|desktop|service|so|deb)\b")
_SPAN = re.compile("|".join(f"(?:{p})" for p in (_URL, _EMAIL, _PRINTF, _BRACE, _SHELL, _PATH)))


def find_spans(text):
    spans = []
    for m in _SPAN.finditer(text):
        b, e = m.span()
        while e > b + 1 and text[e - 1] in ".,;:!?)'\"" and not _balanced(text[b:e]):
            e -= 1
        if e <= b:
            continue
        if spans and spans[-1][1] == b:  # touching spans travel as one (as in the C++ scanner)
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((b, e))
    return spans


def is_specifier(s):
    return re.fullmatch(f"(?:{_PRINTF}|{_BRACE}|{_SHELL})+", s) is not None


def _balanced(s):
    return s[-1] == ")" and s.count("(") >= s.count(")")


# Each strategy: i (0-based) and span text -> stand-in.
_WORDS = ["Zorvex", "Quimba", "Trelzo", "Vaxilo", "Gruntz", "Plimko", "Yorbel", "Snaftu", "Kezwin"]
STRATEGIES = collections.OrderedDict([
    ("keep", lambda i, s: s),
    ("%N (Qt)", lambda i, s: f"%{i + 1}"),
    ("keep specifiers, %N others", lambda i, s: s if is_specifier(s) else f"%{i + 1}"),
    ("keep specifiers, {N} others", lambda i, s: s if is_specifier(s) else f"{{{i}}}"),
    ("{N}", lambda i, s: f"{{{i}}}"),
    ("%s (same)", lambda i, s: "%s"),
    ("X1", lambda i, s: f"X{i + 1}"),
    ("__1__", lambda i, s: f"__{i + 1}__"),
    ("digits 9001", lambda i, s: f"{9001 + i}"),
    ("nonsense word", lambda i, s: _WORDS[i % len(_WORDS)]),
])


def chrf_stats(hyp, ref, n=6):
    stats = []
    h, r = hyp.replace(" ", ""), ref.replace(" ", "")
    for k in range(1, n + 1):
        hc = collections.Counter(h[i:i + k] for i in range(len(h) - k + 1))
        rc = collections.Counter(r[i:i + k] for i in range(len(r) - k + 1))
        stats.append((sum((hc & rc).values()), sum(hc.values()), sum(rc.values())))
    return stats


def chrf(all_stats, beta=2.0):
    n = len(all_stats[0])
    f = 0.0
    for k in range(n):
        m = sum(s[k][0] for s in all_stats)
        hy = sum(s[k][1] for s in all_stats)
        re_ = sum(s[k][2] for s in all_stats)
        p = m / hy if hy else 0.0
        r = m / re_ if re_ else 0.0
        f += (1 + beta**2) * p * r / (beta**2 * p + r) if p + r > 0 else 0.0
    return 100 * f / n


def strip_spans(text):
    out, last = [], 0
    for b, e in find_spans(text):
        out.append(text[last:b])
        last = e
    out.append(text[last:])
    return re.sub(r"\s+", " ", "".join(out)).strip()


_FILLERS = [
    "bugs@example.org", "jane.doe@debian.org", "info@transerve.io", "root@localhost.localdomain",
    "https://example.com/docs/install.html", "http://www.debian.org/security/",
    "https://github.com/transerve/transerve/issues", "www.example.org", "ftp://ftp.gnu.org/gnu/",
    "/etc/apt/sources.list", "/var/log/syslog", "~/.config/transerve/server.conf",
    "./run.sh", "/usr/share/doc/apt/README.md", "C:\\Users\\admin\\report.txt",
    "/home/user/Documents/letter.odt", "server.conf", "README.md", "/dev/sda1", "/tmp/build",
]

_HANDWRITTEN = [
    "Send bugs to bugs@example.org.",
    "See https://example.com/docs/install.html for details.",
    "Edit /etc/transerve/server.conf and restart the service.",
    "Copied %d files to %s.",
    "Hello {name}, you have {0} new messages.",
    "Run ./configure --prefix=$HOME/.local before make.",
    "The file ~/.config/app/settings.json could not be read.",
    "Open C:\\Users\\admin\\Documents\\report.txt in the editor.",
    "Visit www.example.org or write to info@example.org.",
    "Error %1 occurred while reading %2.",
    "%s of %s bytes downloaded (%d%%).",
    "Set ${HOME} and $PATH before running {{ command }}.",
    "Read README.md first, then edit config.yaml.",
    "The value %5.2f is out of range.",
    "Welcome, %(user)s! You have %(count)d messages.",
    "Could not open %@ for writing.",
    "Download ftp://ftp.example.net/pub/file.tar.gz and unpack it.",
    "The log is written to /var/log/syslog every hour.",
    "Press {0} to continue or {1} to cancel.",
    "Mail the maintainer at jane.doe+deb@lists.debian.org about it.",
]


def load_lines(args):
    lines = []  # (source, reference or None)
    if args.corpus_en and os.path.exists(args.corpus_en) and os.path.exists(args.corpus_de):
        with open(args.corpus_en, encoding="utf-8") as fe, open(args.corpus_de,
                                                                 encoding="utf-8") as fd:
            for en, de in zip(fe, fd):
                en, de = en.strip(), de.strip()
                if find_spans(en):
                    lines.append((en, de))
    corpus = len(lines)
    pairs = []
    for path in sorted(glob.glob(os.path.join(args.mo_dir, "*.mo"))):
        for _ctx, msgid, msgstr in read_mo(path):
            if "\n" in msgid or "\t" in msgid or not 8 <= len(msgid) <= 200 or not find_spans(msgid):
                continue
            pairs.append((msgid, msgstr.replace("&", "").replace("_", "")))
    rng = random.Random(args.seed)
    rng.shuffle(pairs)
    lines += pairs[:max(0, args.max_lines - corpus)]
    # Catalog lines with one %s on each side, the %s filled with a URL, e-mail or path: those
    # are the spans the model alters, and the catalog rarely has them.
    one = [(en, de) for en, de in pairs[args.max_lines:]
           if en.count("%s") == 1 and de.count("%s") == 1 and len(find_spans(en)) == 1]
    for en, de in one[:args.filled_lines]:
        v = rng.choice(_FILLERS)
        lines.append((en.replace("%s", v), de.replace("%s", v)))
    lines += [(s, None) for s in _HANDWRITTEN]
    return lines, corpus


def translate(args, texts):
    cmd = [args.translate, f"--model_dir={args.model_dir}", f"--num_threads={args.num_threads}"]
    out = subprocess.run(cmd, input="\n".join(texts) + "\n", capture_output=True, text=True,
                         check=False)
    result = out.stdout.split("\n")[:len(texts)]
    if len(result) != len(texts):
        sys.exit(f"transerve-translate returned {len(result)} lines for {len(texts)}: "
                 f"{out.stderr[-500:]}")
    return result


def run_tool(tool, records):
    out = subprocess.run([tool], input="".join(json.dumps(r) + "\n" for r in records),
                         capture_output=True, text=True, check=True)
    return [json.loads(x) for x in out.stdout.splitlines()]


def end_to_end(args, lines, corpus, raw_outputs):
    """The C++ Protect -> model -> Unprotect against the raw translation."""
    protected = run_tool(args.protect_tool, [{"text": src} for src, _ in lines])
    translations = translate(args, [p["model_text"] for p in protected])
    restored = run_tool(args.protect_tool, [{"text": src, "translation": x}
                                            for (src, _), x in zip(lines, translations)])
    print()
    print(f"C++ Protect/Unprotect end to end ({args.protect_tool}, no alignment):")
    print("| pipeline | every span back byte for byte | chrF (whole line) | chrF, corpus test only |")
    print("|---|---|---|---|")
    for name, outputs in (("raw line", raw_outputs), ("Protect, %N, Unprotect",
                                                       [r["text"] for r in restored])):
        intact, stats, held_out = 0, [], []
        for k, ((src, ref), p, out) in enumerate(zip(lines, protected, outputs)):
            raw = src.encode("utf-8")
            spans = [raw[b:e].decode("utf-8", "replace") for b, e, _ in p["spans"]]
            intact += all(out.count(sp) == src.count(sp) for sp in set(spans))
            if ref is not None:
                stats.append(chrf_stats(out, ref))
                if k < corpus:
                    held_out.append(stats[-1])
        print(f"| {name} | {100 * intact / len(lines):.1f}% | {chrf(stats):.1f} | "
              f"{chrf(held_out) if held_out else 0:.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--translate", default="/work/main/build/bin/transerve-translate")
    ap.add_argument("--model_dir", default="/work/main/models/en-de-small")
    ap.add_argument("--corpus_en", default="/work/data/corpus/test.en")
    ap.add_argument("--corpus_de", default="/work/data/corpus/test.de")
    ap.add_argument("--mo_dir", default="/usr/share/locale/de/LC_MESSAGES")
    ap.add_argument("--max_lines", type=int, default=800)
    ap.add_argument("--filled_lines", type=int, default=400)
    ap.add_argument("--num_threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--protect_tool", default="build/bin/transerve-protect-spans",
                    help="the end-to-end table runs when this exists")
    ap.add_argument("--examples", type=int, default=0, help="print this many failures each")
    args = ap.parse_args()
    lines, corpus = load_lines(args)
    with_ref = sum(1 for _, r in lines if r is not None)
    print(f"{len(lines)} lines ({corpus} corpus test, {with_ref - corpus} gettext, "
          f"{len(lines) - with_ref} hand-written), "
          f"{sum(len(find_spans(s)) for s, _ in lines)} spans; "
          f"{sum(1 for s, _ in lines if not all(is_specifier(s[b:e]) for b, e in find_spans(s)))}"
          " lines with a URL, e-mail or path")
    print("| stand-in | intact | intact, specifiers only | intact, URL/e-mail/path | dup | lost "
          "| chrF remainder | chrF remainder, corpus test only | len ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    raw_outputs = []
    for name, make in STRATEGIES.items():
        model_texts, stand_ins = [], []
        for src, _ in lines:
            spans = find_spans(src)
            s_ins = [make(i, src[b:e]) for i, (b, e) in enumerate(spans)]
            out, last = [], 0
            for (b, e), s in zip(spans, s_ins):
                out += [src[last:b], s]
                last = e
            out.append(src[last:])
            model_texts.append("".join(out))
            stand_ins.append(s_ins)
        outputs = translate(args, model_texts)
        if name == "keep":
            raw_outputs = outputs
        intact = dup = lost = 0
        by_class = collections.Counter()
        stats, held_out, ratios, fails = [], [], [], []
        for k, ((src, ref), mt, out, s_ins) in enumerate(zip(lines, model_texts, outputs,
                                                             stand_ins)):
            need = collections.Counter(s_ins)
            # "%1" inside "%10" does not count.
            got = {s: len(re.findall(r"(?<!\d){}(?!\d)".format(re.escape(s)), out)) for s in need}
            ok = all(got[s] == c for s, c in need.items())
            intact += ok
            cls = "spec" if all(is_specifier(src[b:e]) for b, e in find_spans(src)) else "other"
            by_class[cls, ok] += 1
            dup += any(got[s] > c for s, c in need.items())
            lost += any(got[s] < c for s, c in need.items())
            if not ok and len(fails) < args.examples:
                fails.append((mt, out))
            rest = out
            for s in sorted(need, key=len, reverse=True):
                rest = rest.replace(s, " ")
            rest = re.sub(r"\s+", " ", rest).strip()
            src_rest = strip_spans(src)
            ratios.append(len(rest) / max(1, len(src_rest)))
            if ref is not None:
                stats.append(chrf_stats(rest, strip_spans(ref)))
                if k < corpus:
                    held_out.append(stats[-1])
        n = len(lines)
        def share(c):
            return 100 * by_class[c, True] / max(1, by_class[c, True] + by_class[c, False])

        print(f"| {name} | {100 * intact / n:.1f}% | {share('spec'):.1f}% | {share('other'):.1f}% | "
              f"{100 * dup / n:.1f}% | "
              f"{100 * lost / n:.1f}% | {chrf(stats):.1f} | {chrf(held_out) if held_out else 0:.1f} | "
              f"{sum(ratios) / n:.2f} |")
        for mt, out in fails:
            print(f"    {mt!r} -> {out!r}")
        sys.stdout.flush()
    if os.path.exists(args.protect_tool):
        end_to_end(args, lines, corpus, raw_outputs)


if __name__ == "__main__":
    main()
