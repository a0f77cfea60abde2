#!/usr/bin/env python3
"""A document at the character limit, as a user sends it: how long it takes on an idle server
over every API (gRPC unary and streaming, LibreTranslate's POST /translate, POST
/v1/translate), what a text one character over the limit gets, and what the document does to
other callers: their latency under a fixed open-loop rate alone, then while documents are
translated back to back, in interleaved rounds.

    bench/large_document_bench.py --model_dir models/en-de-small \\
        --text /work/data/handbook-eval/handbook.en --rate 20 --rounds 3 \\
        --variant "default=" --out build/bench/large_document

The document is the text's lines, three to a paragraph, paragraphs separated by a blank line,
up to --chars characters. The callers send single lines of the same text (--input, else the
text itself). Prints a table and writes OUT/summary.json.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from server_variants_bench import Server, loadgen  # noqa: E402


def make_document(text_path, chars):
    lines = [l.strip() for l in open(text_path, encoding="utf-8") if l.strip()]
    paragraphs, size, i = [], 0, 0
    while i < len(lines):
        para = " ".join(lines[i:i + 3])
        i += 3
        if size + len(para) + 2 > chars:
            break
        paragraphs.append(para)
        size += len(para) + 2
    doc = "\n\n".join(paragraphs)
    # Up to the limit exactly: the next lines' words, then dots, fill what is left.
    doc += "\n\n"
    for word in " ".join(lines[i:i + 50]).split():
        if len(doc) + len(word) + 1 > chars:
            break
        doc += word + " "
    return doc + "." * (chars - len(doc))


def grpc_document(bin_dir, server, doc, stream=False):
    """Seconds to the answer (and to the first output byte), the exit code and the output."""
    cmd = [os.path.join(bin_dir, "transerve-client"), f"--target=127.0.0.1:{server.port}",
           "--document", "--timeout=600"] + (["--stream"] if stream else [])
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(doc.encode())
    p.stdin.close()
    first = p.stdout.read(1)
    first_at = time.monotonic() - start
    out = first + p.stdout.read()
    err = p.stderr.read().decode()
    rc = p.wait()
    return {"seconds": time.monotonic() - start, "first_byte_seconds": first_at if first else None,
            "rc": rc, "error": err.strip()[-300:], "output": out.decode(errors="replace")}


def http_post(server, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{server.http_port}{path}",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            status, answer = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, answer = e.code, e.read()
    return {"seconds": time.monotonic() - start, "status": status,
            "body": answer.decode(errors="replace")}


def callers(args, server, out_json):
    """The other callers' loadgen report, with every call kept (--calls) for the timeline."""
    return loadgen(args.bin_dir, server, args.input or args.text, f"--rate={args.rate}",
                   args.duration, args.warmup, out_json, extra=["--calls"])


def p99(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(0.99 * len(values)))] if values else float("nan")


def near_document_ends(calls, docs, window_start, margin):
    """The callers' latencies split by when they were due: within `margin` seconds after a
    document was sent or before its answer (when the server splits it into sentences and
    tokenizes it, or builds its answer), or while a document was in its middle."""
    near, middle = [], []
    for due, latency, status in calls:
        if status != "OK":
            continue
        t = window_start + due
        edge = any(d["start"] <= t <= d["start"] + margin or d["end"] - margin <= t <= d["end"]
                   for d in docs)
        (near if edge else middle).append(latency)
    return near, middle


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--text", required=True, help="held-out text, one sentence per line")
    ap.add_argument("--input", default="", help="the callers' sentences (default: --text)")
    ap.add_argument("--chars", type=int, default=100000)
    ap.add_argument("--rate", type=float, default=20, help="the other callers' requests/s")
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variant", action="append", required=True, help='"NAME=FLAGS..."')
    ap.add_argument("--edge_seconds", type=float, default=0.5,
                    help="the callers' p99 is also split by calls due this close to a "
                         "document's start or end, and the others")
    ap.add_argument("--bin_dir", default="build/bin")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    doc = make_document(args.text, args.chars)
    over = doc + "x"
    print(f"document: {len(doc)} characters, {doc.count(chr(10) * 2) + 1} paragraphs", flush=True)
    variants = [(n.strip(), shlex.split(f)) for n, _, f in (v.partition("=") for v in args.variant)]
    results = []
    for rnd in range(args.rounds):
        for name, flags in variants[rnd % len(variants):] + variants[:rnd % len(variants)]:
            tag = f"r{rnd}_{name.replace(' ', '_')}"
            server = Server(args.bin_dir, args.model_dir,
                            flags + [f"--max_text_chars={args.chars}"],
                            os.path.join(args.out, tag + ".log"))
            r = {"round": rnd, "variant": name, "flags": flags}
            try:
                # Idle: each API in turn.
                unary = grpc_document(args.bin_dir, server, doc)
                stream = grpc_document(args.bin_dir, server, doc, stream=True)
                lt = http_post(server, "/translate", {"q": doc, "source": "en", "target": "de"})
                v1 = http_post(server, "/v1/translate", {"texts": [doc]})
                r["idle"] = {
                    "grpc_unary": {k: unary[k] for k in ("seconds", "rc", "error")},
                    "grpc_stream": {k: stream[k] for k in ("seconds", "first_byte_seconds", "rc")},
                    "libretranslate": {k: lt[k] for k in ("seconds", "status")},
                    "v1": {k: v1[k] for k in ("seconds", "status")},
                    "stream_equals_unary": stream["output"].rstrip("\n") == unary["output"].rstrip("\n"),
                    "libretranslate_equals_unary":
                        lt["status"] == 200 and
                        json.loads(lt["body"])["translatedText"] == unary["output"].rstrip("\n"),
                }
                o_grpc = grpc_document(args.bin_dir, server, over)
                o_lt = http_post(server, "/translate", {"q": over, "source": "en", "target": "de"})
                o_v1 = http_post(server, "/v1/translate", {"texts": [over]})
                r["over_limit"] = {"grpc": {"seconds": o_grpc["seconds"], "rc": o_grpc["rc"],
                                            "error": o_grpc["error"]},
                                   "libretranslate": {k: o_lt[k] for k in ("seconds", "status")},
                                   "v1": {k: o_v1[k] for k in ("seconds", "status")}}
                # Other callers alone, then beside documents sent back to back.
                r["alone"] = callers(args, server, os.path.join(args.out, tag + "_alone.json"))
                docs = []
                stop = threading.Event()
                began = time.monotonic()

                def send_documents():
                    time.sleep(max(0.0, args.warmup - 0.5))
                    while not stop.is_set():
                        start = time.monotonic() - began
                        d = grpc_document(args.bin_dir, server, doc)
                        docs.append({"seconds": d["seconds"], "rc": d["rc"], "start": start,
                                     "end": start + d["seconds"]})

                sender = threading.Thread(target=send_documents)
                sender.start()
                r["with_document"] = callers(args, server, os.path.join(args.out, tag + "_with.json"))
                stop.set()
                sender.join()
                r["documents_during"] = docs
                # The loadgen's window starts after its warm-up (its own start-up is a few ms).
                near, middle = near_document_ends(r["with_document"].get("calls", []), docs,
                                                  args.warmup, args.edge_seconds)
                r["with_document_split"] = {"near_edges": len(near), "near_edges_p99": p99(near),
                                            "middle": len(middle), "middle_p99": p99(middle)}
            finally:
                server.stop()
            a, w = r["alone"]["latency_seconds"], r["with_document"]["latency_seconds"]
            print(f"round {rnd} {name}: idle doc {r['idle']['grpc_unary']['seconds']:.1f} s "
                  f"(stream first byte {r['idle']['grpc_stream']['first_byte_seconds']:.2f} s, "
                  f"LT {r['idle']['libretranslate']['seconds']:.1f} s {r['idle']['libretranslate']['status']}); "
                  f"callers p99 {a['p99'] * 1e3:.0f} -> {w['p99'] * 1e3:.0f} ms "
                  f"({len(docs)} documents beside them; p99 of the {len(near)} calls due within "
                  f"{args.edge_seconds:g} s of a document's start or end "
                  f"{p99(near) * 1e3:.0f} ms, of the {len(middle)} others {p99(middle) * 1e3:.0f} ms)",
                  flush=True)
            results.append(r)

    def med(name, f):
        vals = [f(r) for r in results if r["variant"] == name]
        return statistics.median(vals)

    print()
    print("| variant | idle doc gRPC s | stream first byte s | LT s | v1 s | over limit gRPC / LT / v1 "
          "| callers p50 alone / with ms | p99 alone / with ms | p99 ratio | errors alone / with "
          "| doc s beside callers |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for name, _ in variants:
        mine = [r for r in results if r["variant"] == name]
        row = {
            "variant": name,
            "idle_grpc_s": med(name, lambda r: r["idle"]["grpc_unary"]["seconds"]),
            "idle_stream_first_byte_s": med(name, lambda r: r["idle"]["grpc_stream"]["first_byte_seconds"]),
            "idle_lt_s": med(name, lambda r: r["idle"]["libretranslate"]["seconds"]),
            "idle_v1_s": med(name, lambda r: r["idle"]["v1"]["seconds"]),
            "p50_alone": med(name, lambda r: r["alone"]["latency_seconds"]["p50"]),
            "p50_with": med(name, lambda r: r["with_document"]["latency_seconds"]["p50"]),
            "p99_alone": med(name, lambda r: r["alone"]["latency_seconds"]["p99"]),
            "p99_with": med(name, lambda r: r["with_document"]["latency_seconds"]["p99"]),
            "p99_ratios": [r["with_document"]["latency_seconds"]["p99"] /
                           r["alone"]["latency_seconds"]["p99"] for r in mine],
            "errors_alone": sum(sum(r["alone"].get("errors", {}).values()) for r in mine),
            "errors_with": sum(sum(r["with_document"].get("errors", {}).values()) for r in mine),
            "doc_beside_s": statistics.median([d["seconds"] for r in mine
                                               for d in r["documents_during"]] or [float("nan")]),
            "over_limit": [(r["over_limit"]["grpc"]["error"][:60], r["over_limit"]["libretranslate"]["status"],
                            r["over_limit"]["v1"]["status"]) for r in mine][0],
            "all_ok": all(r["idle"]["grpc_unary"]["rc"] == 0 and r["idle"]["grpc_stream"]["rc"] == 0 and
                          r["idle"]["libretranslate"]["status"] == 200 and r["idle"]["v1"]["status"] == 200
                          and all(d["rc"] == 0 for d in r["documents_during"]) for r in mine),
        }
        rows.append(row)
        ratios = "/".join(f"{x:.2f}" for x in row["p99_ratios"])
        print(f"| {name} | {row['idle_grpc_s']:.1f} | {row['idle_stream_first_byte_s']:.2f} "
              f"| {row['idle_lt_s']:.1f} | {row['idle_v1_s']:.1f} "
              f"| {'INVALID_ARGUMENT' if 'INVALID_ARGUMENT' in row['over_limit'][0] else row['over_limit'][0]}"
              f" / {row['over_limit'][1]} / {row['over_limit'][2]} "
              f"| {row['p50_alone'] * 1e3:.0f} / {row['p50_with'] * 1e3:.0f} "
              f"| {row['p99_alone'] * 1e3:.0f} / {row['p99_with'] * 1e3:.0f} "
              f"| {statistics.median(row['p99_ratios']):.2f}x ({ratios}) "
              f"| {row['errors_alone']} / {row['errors_with']} | {row['doc_beside_s']:.1f} |")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"rows": rows, "results": results, "args": vars(args),
                   "document_chars": len(doc)}, f, indent=1)
    return 0 if all(r["all_ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
