#!/usr/bin/env python3
"""Glossaries on real text, through DeepL's API of a real server: terminology, quality, cost.

    bench/glossary_eval.py --model_dir models/en-de-small \\
        --test /work/data/handbook-eval/handbook --sentences 300 --out build/bench/glossary

1. Terminology. A glossary of common software terms with their usual German renderings
   (GLOSSARY below, plural forms as entries of their own: glossaries do not inflect) is
   created through POST /v2/glossaries. Test sentences holding at least one of its terms (the
   handbook's English side: evaluation only, never trained on) are translated through
   /v2/translate with and without it. Each occurrence of a source term, found here by an
   independent matcher with the server's rules (whole words, longest first, a lower-case term
   also capitalised or in capitals, none inside a path, file name, URL or e-mail address), must give its
   target term in the output (alone, or inside a word the model built on it: "Tastaturlayout").
2. Quality of the rest. chrF against the references of both outputs with every target term the
   sentence expects taken out of outputs and reference alike: what applying the terms costs the
   words around them.
3. Cost. /v2/translate latency for the same sentences without a glossary, with this one and
   with a 1,000-entry one (this one plus made-up terms), interleaved sentence by sentence.
4. Against LibreTranslate's API: /v2/translate and /translate under the same closed-loop load,
   phases interleaved (DeepL, LT, DeepL, LT): requests/s and p50/p99 of each.

Prints the tables and writes OUT/summary.json (and each output, for reading).
"""
import argparse
import json
import os
import random
import re
import statistics
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
from server_variants_bench import Server  # noqa: E402
from metrics import corpus_chrf  # noqa: E402

# English software terms and the German renderings German documentation commonly uses.
GLOSSARY = [
    ("package", "Paket"), ("packages", "Pakete"), ("file", "Datei"), ("files", "Dateien"),
    ("directory", "Verzeichnis"), ("directories", "Verzeichnisse"), ("user", "Benutzer"),
    ("users", "Benutzer"), ("command", "Befehl"), ("commands", "Befehle"),
    ("network", "Netzwerk"), ("configuration file", "Konfigurationsdatei"),
    ("configuration", "Konfiguration"), ("administrator", "Administrator"),
    ("password", "Passwort"), ("computer", "Rechner"), ("computers", "Rechner"),
    ("hard disk", "Festplatte"), ("partition", "Partition"), ("partitions", "Partitionen"),
    ("service", "Dienst"), ("services", "Dienste"), ("program", "Programm"),
    ("programs", "Programme"), ("machine", "Rechner"), ("machines", "Rechner"),
    ("backup", "Sicherung"), ("source code", "Quellcode"), ("mailing list", "Mailingliste"),
    ("bug report", "Fehlerbericht"), ("bug", "Fehler"), ("bugs", "Fehler"),
    ("device", "Gerät"), ("devices", "Geräte"), ("printer", "Drucker"),
    ("keyboard", "Tastatur"), ("web server", "Webserver"), ("database", "Datenbank"),
    ("account", "Konto"), ("accounts", "Konten"), ("group", "Gruppe"), ("groups", "Gruppen"),
    ("tool", "Werkzeug"), ("tools", "Werkzeuge"), ("developer", "Entwickler"),
    ("developers", "Entwickler"), ("community", "Gemeinschaft"), ("mirror", "Spiegelserver"),
    ("security update", "Sicherheitsaktualisierung"), ("software", "Software"),
    ("installation", "Installation"), ("distribution", "Distribution"), ("option", "Option"),
    ("options", "Optionen"), ("version", "Version"), ("versions", "Versionen"),
]


def forms(source, target):
    """The spellings the server matches, each with what it writes (term_table.h)."""
    out = [(source, target)]
    if source[:1].islower():
        cap = target[:1].upper() + target[1:] if target[:1].islower() else target
        out.append((source[:1].upper() + source[1:], cap))
    out.append((source.upper(), target.upper()))
    return out


def expected_targets(sentence, glossary):
    """The targets the sentence's terms must give, left to right (longest match first). Words
    of a path, file name, URL or e-mail address are not terms: the server keeps those spans
    whole (a token holding "/", "@" or a dot between letters stands for them here)."""
    sentence = re.sub(r"\S*(?:[/@]|\w\.\w)\S*", lambda m: " " * len(m.group(0)), sentence)
    spellings = sorted({f for s, t in glossary for f in forms(s, t)}, key=lambda f: -len(f[0]))
    out, i = [], 0
    while i < len(sentence):
        if i > 0 and (sentence[i - 1].isalnum() or sentence[i - 1] == "_"):
            i += 1
            continue
        for pattern, target in spellings:
            end = i + len(pattern)
            if sentence.startswith(pattern, i) and not (
                    end < len(sentence) and (sentence[end].isalnum() or sentence[end] == "_")):
                out.append(target)
                i = end
                break
        else:
            i += 1
    return out


def remove_terms(text, terms):
    """`text` without the target terms (as substrings: a term inside a compound goes too)."""
    for w in sorted(set(terms), key=len, reverse=True):
        text = text.replace(w, " ")
    return re.sub(r"\s+", " ", text).strip()


def post(port, path, fields, timeout=300):
    body = urllib.parse.urlencode(fields, doseq=True).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST")
    req.add_header("Content-Type", "application/x-www-form-urlencoded")
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        data = json.loads(r.read())
    return data, time.perf_counter() - start


def deepl(port, text, glossary_id=None):
    fields = {"text": text, "source_lang": "EN", "target_lang": "DE"}
    if glossary_id:
        fields["glossary_id"] = glossary_id
    data, seconds = post(port, "/v2/translate", fields)
    return data["translations"][0]["text"], seconds


def make_glossary(port, name, entries):
    tsv = "\n".join(f"{s}\t{t}" for s, t in entries)
    data, _ = post(port, "/v2/glossaries", {"name": name, "source_lang": "en",
                                             "target_lang": "de", "entries": tsv,
                                             "entries_format": "tsv"})
    return data["glossary_id"]


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] * 1000


def closed_loop(port, path, make_fields, sentences, callers, seconds, rng):
    """`callers` threads sending for `seconds`; (requests/s, latencies)."""
    latencies, lock = [], threading.Lock()
    stop = time.perf_counter() + seconds

    def run(seed):
        r = random.Random(seed)
        while time.perf_counter() < stop:
            _, dt = post(port, path, make_fields(r.choice(sentences)))
            with lock:
                latencies.append(dt)

    threads = [threading.Thread(target=run, args=(rng.random(),)) for _ in range(callers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(latencies) / (time.perf_counter() - start), latencies


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--test", required=True, help="PREFIX of PREFIX.en and PREFIX.de")
    ap.add_argument("--sentences", type=int, default=300)
    ap.add_argument("--bin_dir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--flags", default="", help="extra server flags, space separated")
    ap.add_argument("--callers", type=int, default=4)
    ap.add_argument("--load_seconds", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)

    with open(args.test + ".en", encoding="utf-8") as f:
        english = [line.rstrip("\n") for line in f]
    with open(args.test + ".de", encoding="utf-8") as f:
        german = [line.rstrip("\n") for line in f]
    pairs = [(e, d) for e, d in zip(english, german)
             if 3 <= len(e.split()) <= 40 and expected_targets(e, GLOSSARY)]
    rng.shuffle(pairs)
    pairs = pairs[:args.sentences]

    server = Server(args.bin_dir, args.model_dir, args.flags.split() if args.flags else [],
                    os.path.join(args.out, "server.log"))
    try:
        port = server.http_port
        small = make_glossary(port, "software terms", GLOSSARY)
        made_up = set()
        while len(made_up) < 1000 - len(GLOSSARY):
            made_up.add("".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(9)))
        large = make_glossary(port, "1,000 entries",
                              GLOSSARY + [(w, "Zq" + w) for w in sorted(made_up)])

        # 1-3: every sentence without, with the glossary, with the large one, in random order.
        plain, glossed, cost = [], [], {"none": [], "glossary": [], "1,000 entries": []}
        for e, _ in pairs:
            kinds = [("none", None), ("glossary", small), ("1,000 entries", large)]
            rng.shuffle(kinds)
            texts = {}
            for kind, gid in kinds:
                texts[kind], dt = deepl(port, e, gid)
                cost[kind].append(dt)
            plain.append(texts["none"])
            glossed.append(texts["glossary"])
            if texts["1,000 entries"] != texts["glossary"]:
                print(f"note: the 1,000-entry glossary gave another text for: {e}")

        occurrences, present, misses = 0, 0, []
        hyp_rest, plain_rest, ref_rest = [], [], []
        for (e, d), p, g in zip(pairs, plain, glossed):
            want = expected_targets(e, GLOSSARY)
            for t in set(want):
                occurrences += want.count(t)
                # Alone or inside a word the model made of it (a compound, an inflection).
                got = g.count(t)
                present += min(got, want.count(t))
                if got < want.count(t):
                    misses.append({"source": e, "output": g, "target": t})
            hyp_rest.append(remove_terms(g, want))
            plain_rest.append(remove_terms(p, want))
            ref_rest.append(remove_terms(d, want))
        refs = [d for _, d in pairs]
        summary = {
            "sentences": len(pairs),
            "term_occurrences": occurrences,
            "targets_present": present,
            "misses": misses,
            "chrf_full": {"without": corpus_chrf(plain, refs), "with": corpus_chrf(glossed, refs)},
            "chrf_rest": {"without": corpus_chrf(plain_rest, ref_rest),
                          "with": corpus_chrf(hyp_rest, ref_rest)},
            "latency_ms": {k: {"p50": pct(v, 50), "p90": pct(v, 90), "mean": statistics.mean(v) * 1000}
                           for k, v in cost.items()},
        }

        # 4: DeepL's API against LibreTranslate's, same load, phases interleaved.
        sentences = [e for e, _ in pairs]
        apis = {
            "/v2/translate": ("/v2/translate",
                              lambda s: {"text": s, "source_lang": "EN", "target_lang": "DE"}),
            "/translate (LT)": ("/translate", lambda s: {"q": s, "source": "en", "target": "de"}),
        }
        load = {name: {"rps": [], "latencies": []} for name in apis}
        for _ in range(2):
            for name, (path, fields) in apis.items():
                rps, lat = closed_loop(port, path, fields, sentences, args.callers,
                                       args.load_seconds, rng)
                load[name]["rps"].append(rps)
                load[name]["latencies"].extend(lat)
        summary["load"] = {name: {"callers": args.callers,
                                  "requests_per_s": statistics.mean(v["rps"]),
                                  "p50_ms": pct(v["latencies"], 50),
                                  "p99_ms": pct(v["latencies"], 99)}
                           for name, v in load.items()}
    finally:
        server.stop()

    with open(os.path.join(args.out, "outputs.jsonl"), "w", encoding="utf-8") as f:
        for (e, d), p, g in zip(pairs, plain, glossed):
            f.write(json.dumps({"source": e, "reference": d, "without": p, "with": g},
                               ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)

    print(f"\nTerminology: {summary['sentences']} sentences, {occurrences} term occurrences, "
          f"{present} target terms present ({100.0 * present / max(occurrences, 1):.1f}%)")
    print("| chrF | without glossary | with glossary | difference |\n|---|---|---|---|")
    for k in ("chrf_rest", "chrf_full"):
        a, b = summary[k]["without"], summary[k]["with"]
        print(f"| {'rest of the sentence' if k == 'chrf_rest' else 'whole sentence'} "
              f"| {a:.2f} | {b:.2f} | {b - a:+.2f} |")
    print("\n| /v2/translate, 1 caller | p50 ms | p90 ms | mean ms |\n|---|---|---|---|")
    for k, v in summary["latency_ms"].items():
        print(f"| {k} | {v['p50']:.1f} | {v['p90']:.1f} | {v['mean']:.1f} |")
    print(f"\n| API, {args.callers} callers | requests/s | p50 ms | p99 ms |\n|---|---|---|---|")
    for k, v in summary["load"].items():
        print(f"| {k} | {v['requests_per_s']:.1f} | {v['p50_ms']:.1f} | {v['p99_ms']:.1f} |")


if __name__ == "__main__":
    main()
