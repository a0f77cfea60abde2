#!/usr/bin/env python3
"""HTTP against gRPC (issue 18): the same load over each protocol, on the shipped model.

  python3 bench/http_bench.py [--rounds 5] [--duration 10] [--concurrency 16]

One transerve-server (models/en-de-small, --num_threads=1 so that the load generator has a core
of its own) with both ports. Each round runs, in an order that rotates from round to round:
  - saturation: a closed loop at --concurrency calls in flight (full batches), for throughput
    (calls/s: LibreTranslate's answers carry no token counts);
  - p50: an open loop at half the gRPC saturation rate measured in the first round, for latency
    with the queue empty;
over three protocols: gRPC, HTTP's native API (POST /v1/translate) and LibreTranslate's
(POST /translate), all with the model's default decoding (LibreTranslate's API has no options). Ratios are taken per round (each HTTP run against the gRPC run of its own
round: the machine's speed drifts), then their median is reported.
Then the mixed overload: gRPC and HTTP (v1) open loops at the same time, each at 1.5x the
saturation rate (3x in all), with a per-call deadline; every call sent must be answered (OK,
RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED) and the server's counts must equal the clients'.
Prints tables and writes bench/results/http.json. Binaries from build/bin (--bin).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RESULTS = os.path.join(REPO, "bench", "results", "http.json")
PROTOCOLS = {
    "grpc": [],
    "http_v1": ["--protocol=http", "--http_api=v1"],
    "http_libretranslate": ["--protocol=http", "--http_api=libretranslate"],
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, args, work):
        self.port, self.http, self.metrics = free_port(), free_port(), free_port()
        self.log = open(os.path.join(work, "server.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(args.bin, "transerve-server"), f"--model_dir={args.model_dir}",
             "--host=127.0.0.1", f"--port={self.port}", f"--http_port={self.http}",
             f"--metrics_port={self.metrics}", "--num_threads=1",
             f"--max_batch_sequences={args.concurrency}", "--max_queue_wait=1s",
             "--log_level=warn"], stdout=self.log, stderr=self.log)
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/readyz", timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("http_bench: the server did not become ready")

    def requests_by_protocol(self):
        """transerve_requests_total of Translate, summed per protocol and code."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics}/metrics") as r:
            text = r.read().decode()
        counts = {}
        for m in re.finditer(r'^transerve_requests_total\{([^}]*)\} (\S+)$', text, re.M):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if labels.get("method") != "Translate":
                continue
            key = (labels["protocol"], labels["code"])
            counts[key] = counts.get(key, 0) + int(float(m.group(2)))
        return counts

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def loadgen(args, server, protocol, out, *flags):
    cmd = [os.path.join(args.bin, "transerve-loadgen"), f"--target=127.0.0.1:{server.port}",
           f"--http_target=127.0.0.1:{server.http}", f"--input={args.input}", "--order=random",
           f"--json={out}", *PROTOCOLS[protocol], *flags]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"http_bench: {' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    with open(out, encoding="utf-8") as f:
        report = json.load(f)
    return report["runs"][0] if "runs" in report else report


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    p.add_argument("--model_dir", default=os.path.join(REPO, "models", "en-de-small"))
    p.add_argument("--input", default=os.path.join(REPO, "deploy", "loadgen", "sentences.en"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=float, default=10)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--overload_seconds", type=float, default=20)
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="transerve_http_bench_")
    server = Server(args, work)
    try:
        # Unmeasured: the first seconds of a fresh server are slower for every protocol.
        loadgen(args, server, "grpc", os.path.join(work, "warm.json"),
                f"--concurrency={args.concurrency}", "--duration=6", "--warmup=0")
        names = list(PROTOCOLS)
        sat = {n: [] for n in names}
        lat = {n: [] for n in names}
        half_rate = None
        for r in range(args.rounds):
            order = names[r % 3:] + names[:r % 3]
            for n in order:
                sat[n].append(loadgen(args, server, n, os.path.join(work, f"sat_{n}_{r}.json"),
                                      f"--concurrency={args.concurrency}",
                                      f"--duration={args.duration}", "--warmup=2"))
            if half_rate is None:
                half_rate = round(0.5 * sat["grpc"][0]["requests_per_second"], 2)
            for n in order:
                lat[n].append(loadgen(args, server, n, os.path.join(work, f"lat_{n}_{r}.json"),
                                      f"--rate={half_rate}", f"--duration={args.duration}",
                                      "--warmup=1", "--deadline=30"))
        rate = statistics.median(x["requests_per_second"] for x in sat["grpc"])
        # The mixed overload: both protocols at once, 1.5x saturation each.
        before = server.requests_by_protocol()
        each = round(1.5 * rate, 2)
        deadline = 5
        procs = {}
        for n in ("grpc", "http_v1"):
            out = os.path.join(work, f"mixed_{n}.json")
            cmd = [os.path.join(args.bin, "transerve-loadgen"),
                   f"--target=127.0.0.1:{server.port}", f"--http_target=127.0.0.1:{server.http}",
                   f"--input={args.input}", "--order=random", f"--rate={each}", f"--duration={args.overload_seconds}", "--warmup=0",
                   f"--deadline={deadline}", f"--json={out}", *PROTOCOLS[n]]
            procs[n] = (subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, text=True), out)
        mixed = {}
        for n, (proc, out) in procs.items():
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"http_bench: mixed {n} failed: {err[-2000:]}")
            with open(out, encoding="utf-8") as f:
                report = json.load(f)
            mixed[n] = report["runs"][0] if "runs" in report else report
        time.sleep(0.5)
        after = server.requests_by_protocol()
    finally:
        server.stop()

    def med(runs, f):
        return statistics.median(f(x) for x in runs)

    table = {}
    for n in names:
        tput = [x["requests_per_second"] for x in sat[n]]
        p50 = [x["latency_seconds"]["p50"] for x in lat[n]]
        table[n] = {
            "requests_per_second": statistics.median(tput),
            "saturated_p50_seconds": med(sat[n], lambda x: x["latency_seconds"]["p50"]),
            "p50_seconds_at_half_rate": statistics.median(p50),
            "p99_seconds_at_half_rate": med(lat[n], lambda x: x["latency_seconds"]["p99"]),
            "throughput_ratio_to_grpc": statistics.median(
                a["requests_per_second"] / g["requests_per_second"]
                for a, g in zip(sat[n], sat["grpc"])),
            "p50_ratio_to_grpc": statistics.median(
                a["latency_seconds"]["p50"] / g["latency_seconds"]["p50"]
                for a, g in zip(lat[n], lat["grpc"])),
        }
    print(f"models/en-de-small, its default decoding (LibreTranslate's API sends no options), "
          f"1 compute thread; {args.rounds} interleaved "
          f"rounds of {args.duration} s; saturation = {args.concurrency} calls in flight; "
          f"latency = open loop at {half_rate} calls/s (half of gRPC's saturation)")
    print("| protocol | calls/s at saturation | vs gRPC | p50 at half rate | vs gRPC | p99 at half rate |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in names:
        t = table[n]
        print(f"| {n} | {t['requests_per_second']:.1f} | "
              f"{t['throughput_ratio_to_grpc']:.3f} | {1000 * t['p50_seconds_at_half_rate']:.1f} ms"
              f" | {t['p50_ratio_to_grpc']:.3f} | {1000 * t['p99_seconds_at_half_rate']:.1f} ms |")
    lost = {}
    print(f"\nMixed overload: gRPC and HTTP v1 open loops together, {each} calls/s each "
          f"(3x saturation {rate:.1f} calls/s in all), deadline {deadline} s, "
          f"{args.overload_seconds} s")
    print("| protocol | sent | answered | OK | errors | server counted |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, proto in (("grpc", "grpc"), ("http_v1", "http")):
        m = mixed[n]
        answered = m["ok"] + sum(m["errors"].values())
        counted = sum(v - before.get(k, 0) for k, v in after.items() if k[0] == proto)
        lost[n] = {"sent": m["sent"], "answered": answered, "ok": m["ok"], "errors": m["errors"],
                   "server_counted": counted, "skipped": m.get("skipped", 0)}
        print(f"| {n} | {m['sent']} | {answered} | {m['ok']} | {m['errors']} | {counted} |")
    result = {"rounds": args.rounds, "duration_s": args.duration,
              "concurrency": args.concurrency, "half_rate": half_rate, "protocols": table,
              "mixed_overload": {"rate_each": each, "deadline_s": deadline,
                                 "seconds": args.overload_seconds, "by_protocol": lost},
              "per_round": {n: {"requests_per_second":
                                [x["requests_per_second"] for x in sat[n]],
                                "p50_seconds": [x["latency_seconds"]["p50"] for x in lat[n]]}
                            for n in names}}
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"\nwrote {RESULTS}")
    ok = all(v["sent"] == v["answered"] == v["server_counted"] for v in lost.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
