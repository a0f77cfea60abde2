#!/usr/bin/env python3
"""Documents (issue 17): what sentence splitting, layout and protected spans change, measured.

  /usr/bin/python3 bench/document_bench.py quality       # chrF: paragraphs vs sentence by sentence
  /usr/bin/python3 bench/document_bench.py placeholders  # lines whose placeholders all survive
  /usr/bin/python3 bench/document_bench.py throughput    # a document request vs its sentences sent
                                                         # as separate texts, through the server
  /usr/bin/python3 bench/document_bench.py all

Data: the corpus's held-out test split (tools/corpus/build_corpus.sh; --corpus DIR, default
/work/data/corpus): test.en / test.de. Model: models/en-de-small (--model_dir). Binaries from
build/bin. Each subcommand prints a table and merges its results into
bench/results/documents.json.

quality: paragraphs are runs of consecutive test lines that are sentences (a capital first,
sentence punctuation last), 3 to 8 each (seeded), joined by a space (and, for the layout check,
by a line break). The same is also reported over all test lines ("all lines"): most of them are
UI labels without final punctuation, which joined by spaces run into each other with no
boundary any splitter could find. Three ways to translate the same sentences:
each line alone (`sentence`), each paragraph as one sequence as before documents
(`--split_sentences=false`, `paragraph_whole`), and each paragraph as a document (`document`,
the default). All are scored per paragraph (the outputs of a paragraph's lines joined by a space)
against the joined references, corpus chrF (tools/train/metrics.py).

placeholders: the test lines holding a format specifier, brace or shell variable, URL, e-mail
address or file path, found by this script's own patterns (not the server's scanner). A line is
preserved when each of them appears in the output at least as often as in the source.
`--protect_spans=false` (before) against the default (after).

throughput: transerve-server on the model, transerve-loadgen closed loop: paragraphs of exactly
4 test lines that are sentences as one text per request (`document`), against the same lines 4
texts per request (`sentences`), CONCURRENCY calls in flight, interleaved rounds; target
tokens/s, medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "train"))
from metrics import corpus_chrf  # noqa: E402

RESULTS = os.path.join(REPO, "bench", "results", "documents.json")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def translate(args, texts, *flags, document=False):
    """transerve-translate over `texts` (one per line), or one --document run per text."""
    cmd = [os.path.join(args.bin, "transerve-translate"), f"--model_dir={args.model_dir}",
           f"--beam_size={args.beam}", f"--num_threads={args.threads}", *flags]
    if not document:
        p = subprocess.run(cmd, input="\n".join(texts) + "\n", capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr[-2000:]}")
        out = p.stdout.split("\n")[:-1]
        assert len(out) == len(texts), (len(out), len(texts))
        return out
    outs = []
    for t in texts:
        p = subprocess.run(cmd + ["--document"], input=t, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} --document failed: {p.stderr[-2000:]}")
        outs.append(p.stdout)
    return outs


def paragraphs(lines, seed, lo=3, hi=8):
    rng = random.Random(seed)
    out, i = [], 0
    while i + lo <= len(lines):
        n = rng.randint(lo, hi)
        out.append(list(range(i, min(i + n, len(lines)))))
        i += n
    return out


def merge_results(key, value):
    data = {}
    if os.path.exists(RESULTS):
        with open(RESULTS, encoding="utf-8") as f:
            data = json.load(f)
    data[key] = value
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")


def is_sentence(line):
    return len(line) > 1 and line[0].isupper() and line.rstrip()[-1] in ".!?"


def quality_of(args, src, ref, indices):
    """chrF of the three ways over paragraphs of the lines `indices` (consecutive runs)."""
    paras = [[indices[i] for i in p] for p in paragraphs(indices, args.seed)]
    if args.limit:
        paras = paras[: args.limit]
    used = [i for p in paras for i in p]
    joined_src = [" ".join(src[i] for i in p) for p in paras]
    joined_ref = [" ".join(ref[i] for i in p) for p in paras]
    alone = dict(zip(used, translate(args, [src[i] for i in used], "--split_sentences=false")))
    sentence = [" ".join(alone[i] for i in p) for p in paras]
    whole = translate(args, joined_src, "--split_sentences=false", "--truncate")
    document = translate(args, joined_src)
    # Layout: the same paragraphs with a line break between sentences, as documents.
    newline_docs = ["\n".join(src[i] for i in p) for p in paras]
    newline_out = translate(args, newline_docs, document=True)
    layout_kept = sum(o.count("\n") == d.count("\n") for o, d in zip(newline_out, newline_docs))
    rows = {
        "sentence": corpus_chrf(sentence, joined_ref),
        "paragraph_whole": corpus_chrf(whole, joined_ref),
        "document": corpus_chrf(document, joined_ref),
    }
    return {
        "paragraphs": len(paras), "lines": len(used), "chrf": rows,
        "gap_before": rows["paragraph_whole"] - rows["sentence"],
        "gap_after": rows["document"] - rows["sentence"],
        "line_break_paragraphs_with_layout_kept": layout_kept,
    }


def cmd_quality(args):
    src = read_lines(os.path.join(args.corpus, "test.en"))
    ref = read_lines(os.path.join(args.corpus, "test.de"))
    t0 = time.time()
    sets = {
        "sentences": quality_of(args, src, ref, [i for i, s in enumerate(src) if is_sentence(s)]),
        "all_lines": quality_of(args, src, ref, list(range(len(src)))),
    }
    result = {"beam": args.beam, "seed": args.seed, "sets": sets,
              "seconds": round(time.time() - t0, 1)}
    print(f"paragraphs of 3-8 consecutive test lines, beam {args.beam}; chrF per paragraph")
    print("| lines | paragraphs | sentence by sentence | paragraph whole (before) | document (after) "
          "| gap before | gap after | line breaks kept |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in sets.items():
        c = r["chrf"]
        print(f"| {name} ({r['lines']}) | {r['paragraphs']} | {c['sentence']:.2f} | "
              f"{c['paragraph_whole']:.2f} | {c['document']:.2f} | {r['gap_before']:+.2f} | "
              f"{r['gap_after']:+.2f} | {r['line_break_paragraphs_with_layout_kept']}/"
              f"{r['paragraphs']} |")
    merge_results("quality", result)


# The script's own idea of a placeholder (independent of text/protected_spans.cc).
PLACEHOLDER = re.compile(
    r"%\d+\$[-+ 0#]*\d*(?:\.\d+)?[a-zA-Z]"            # %1$s
    r"|%\([A-Za-z_]\w*\)[-+ 0#]*\d*(?:\.\d+)?[a-zA-Z]"  # %(name)s
    r"|%[-+ 0#]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGcspn@]"  # %s %5.2f %lu
    r"|%%"
    r"|\{\{[^{}]*\}\}|\$\{[^{}\s]+\}|\{[A-Za-z0-9_.:]*\}"  # {{x}} ${var} {0} {name}
    r"|\$[A-Za-z_][A-Za-z0-9_]*|\$\d"                   # $VAR $1
    r"|(?:https?|ftp|file)://[^\s<>\"]*[^\s<>\".,;:!?)\]']"  # URLs
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"                      # e-mail
    r"|(?<![\w/-])(?:~|\.{1,2})?/(?:[\w.+-]+/)*[\w.+-]+"   # /abs/path ~/x ./x
)


def placeholders_of(line):
    found = PLACEHOLDER.findall(line)
    # "%" followed by a space-flag and a letter is often prose ("50% of"): keep those with no space.
    return [f for f in found if " " not in f and f not in ("/", "%")]


def preserved(source, output):
    spans = placeholders_of(source)
    return all(output.count(s) >= spans.count(s) for s in set(spans))


def cmd_placeholders(args):
    src = read_lines(os.path.join(args.corpus, "test.en"))
    lines = [s for s in src if placeholders_of(s)]
    before = translate(args, lines, "--protect_spans=false")
    after = translate(args, lines)
    kept_before = sum(preserved(s, o) for s, o in zip(lines, before))
    kept_after = sum(preserved(s, o) for s, o in zip(lines, after))
    failures = [{"source": s, "output": o} for s, o in zip(lines, after) if not preserved(s, o)]
    result = {"lines": len(lines), "beam": args.beam,
              "preserved_before": kept_before, "preserved_after": kept_after,
              "share_before": kept_before / len(lines), "share_after": kept_after / len(lines),
              "failures_after": failures[:20]}
    print(f"{len(lines)} test lines with placeholders, beam {args.beam}")
    print("| | lines with every placeholder kept | share |")
    print("| --- | --- | --- |")
    print(f"| before (--protect_spans=false) | {kept_before} | {100 * kept_before / len(lines):.1f}% |")
    print(f"| after (default) | {kept_after} | {100 * kept_after / len(lines):.1f}% |")
    for f in failures[:5]:
        print("  lost:", f["source"], "->", f["output"])
    merge_results("placeholders", result)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cmd_throughput(args):
    # Sentences only (as in quality): joined labels would be one segment, other work.
    src = [s for s in read_lines(os.path.join(args.corpus, "test.en")) if is_sentence(s)]
    groups = [src[i:i + 4] for i in range(0, len(src) - 3, 4)]
    work = tempfile.mkdtemp(prefix="transerve_doc_bench_")
    docs_file = os.path.join(work, "documents.txt")
    sent_file = os.path.join(work, "sentences.txt")
    with open(docs_file, "w", encoding="utf-8") as f:
        f.writelines(" ".join(g) + "\n" for g in groups)
    with open(sent_file, "w", encoding="utf-8") as f:
        f.writelines(s + "\n" for g in groups for s in g)
    port, metrics = free_port(), free_port()
    server = subprocess.Popen(
        [os.path.join(args.bin, "transerve-server"), f"--model_dir={args.model_dir}",
         "--host=127.0.0.1", f"--port={port}", f"--metrics_port={metrics}", "--http_port=-1",
         f"--num_threads={args.threads}", "--log_level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        health = [os.path.join(args.bin, "transerve-client"), f"--target=127.0.0.1:{port}",
                  "--health"]
        for _ in range(600):
            if subprocess.run(health, capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        runs = {"document": [], "sentences": []}
        configs = {"document": (docs_file, 1), "sentences": (sent_file, 4)}
        # Unmeasured load first: the first seconds of a fresh server are slower for either.
        subprocess.run([os.path.join(args.bin, "transerve-loadgen"), f"--target=127.0.0.1:{port}",
                        f"--input={sent_file}", "--sentences_per_request=4",
                        f"--concurrency={args.concurrency}", "--duration=8", "--warmup=0",
                        f"--beam_size={args.beam}"], check=True, capture_output=True)
        for r in range(args.rounds):
            for name in (["document", "sentences"] if r % 2 == 0 else ["sentences", "document"]):
                path, per_request = configs[name]
                out = os.path.join(work, f"{name}_{r}.json")
                cmd = [os.path.join(args.bin, "transerve-loadgen"), f"--target=127.0.0.1:{port}",
                       f"--input={path}", f"--sentences_per_request={per_request}",
                       f"--concurrency={args.concurrency}", f"--duration={args.duration}",
                       "--warmup=2", f"--beam_size={args.beam}", f"--json={out}"]
                subprocess.run(cmd, check=True, capture_output=True)
                with open(out, encoding="utf-8") as f:
                    report = json.load(f)
                report = report["runs"][0] if "runs" in report else report
                runs[name].append(report)
    finally:
        server.terminate()
        server.wait()
    med = {k: statistics.median(x["target_tokens_per_second"] for x in v) for k, v in runs.items()}
    # Paired: each round's own ratio (the machine's speed drifts between rounds).
    ratios = [d["target_tokens_per_second"] / s["target_tokens_per_second"]
              for d, s in zip(runs["document"], runs["sentences"])]
    p99 = {k: statistics.median(x["latency_seconds"]["p99"] for x in v) for k, v in runs.items()}
    result = {"rounds": args.rounds, "duration_s": args.duration, "concurrency": args.concurrency,
              "beam": args.beam, "target_tokens_per_second": med, "p99_seconds": p99,
              "ratio_document_to_sentences": med["document"] / med["sentences"],
              "per_round_ratios": ratios,
              "median_per_round_ratio": statistics.median(ratios),
              "per_round": {k: [x["target_tokens_per_second"] for x in v] for k, v in runs.items()}}
    print(f"4 test lines per call, {args.concurrency} calls in flight, beam {args.beam}, "
          f"{args.rounds} interleaved rounds of {args.duration} s (medians)")
    print("| request | target tokens/s | p99 latency |")
    print("| --- | --- | --- |")
    for k in ("document", "sentences"):
        print(f"| {k} | {med[k]:,.0f} | {1000 * p99[k]:.0f} ms |")
    print(f"document / sentences: {result['ratio_document_to_sentences']:.3f} (of the medians); "
          f"per round {', '.join(f'{r:.3f}' for r in ratios)}, median "
          f"{result['median_per_round_ratio']:.3f}")
    merge_results("throughput", result)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["quality", "placeholders", "throughput", "all"])
    ap.add_argument("--corpus", default="/work/data/corpus")
    ap.add_argument("--model_dir", default=os.path.join(REPO, "models", "en-de-small"))
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--limit", type=int, default=0, help="quality: at most this many paragraphs")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=15)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.corpus, "test.en")):
        raise SystemExit(f"no {args.corpus}/test.en: build the corpus (tools/corpus/build_corpus.sh)")
    for name, fn in (("quality", cmd_quality), ("placeholders", cmd_placeholders),
                     ("throughput", cmd_throughput)):
        if args.command in (name, "all"):
            fn(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
