#!/usr/bin/env python3
"""The server as a user gets it, variant against variant: transerve-server on one model under
transerve-loadgen, closed loop at fixed concurrencies, in interleaved rounds (the variants'
order rotated each round, one server at a time), medians of the rounds. Each variant is a list
of server flags; the first is the baseline that ratios are taken against.

    bench/server_variants_bench.py --model_dir models/en-de-small --input SENTENCES \\
        --variant "float32 1 replica=--dtype=float32 --replicas=1" \\
        --variant "auto=" --rounds 3 --concurrency 32 --out build/bench/variants

Prints a markdown table (requests/s, target tokens/s, p50, p99, errors, peak RSS, the ratio of
requests/s to the baseline) and writes OUT/summary.json with every run.
"""
import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


class Server:
    """One transerve-server on loopback ports, its resident size sampled while it runs."""

    def __init__(self, bin_dir, model_dir, flags, log_path):
        self.port = free_port()
        self.http_port = free_port()
        cmd = [os.path.join(bin_dir, "transerve-server"), f"--model_dir={model_dir}",
               "--host=127.0.0.1", f"--port={self.port}", f"--http_port={self.http_port}",
               "--metrics_port=-1", "--log_level=info"] + flags
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.peak_rss = 0.0
        self._stop = threading.Event()
        client = os.path.join(bin_dir, "transerve-client")
        for _ in range(240):
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: see {log_path}")
            r = subprocess.run([client, f"--target=127.0.0.1:{self.port}", "--list_models"],
                               capture_output=True)
            if r.returncode == 0:
                self.models = r.stdout.decode()
                break
            time.sleep(0.25)
        else:
            raise RuntimeError("server did not come up")
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self):
        while not self._stop.is_set():
            self.peak_rss = max(self.peak_rss, rss_mb(self.proc.pid))
            time.sleep(0.2)

    def stop(self):
        self._stop.set()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def loadgen(bin_dir, server, sentences, load, duration, warmup, out_json, extra=()):
    """One transerve-loadgen run against `server` (`load`: "--concurrency=N" or "--rate=R");
    its JSON report."""
    cmd = [os.path.join(bin_dir, "transerve-loadgen"), f"--target=127.0.0.1:{server.port}",
           f"--input={sentences}", "--order=random", load, f"--duration={duration}",
           f"--warmup={warmup}", "--deadline=120", f"--json={out_json}"] + list(extra)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out_json) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True)
    ap.add_argument("--input", required=True, help="sentences, one per line")
    ap.add_argument("--variant", action="append", required=True,
                    help='"NAME=FLAGS..." (the first is the baseline)')
    ap.add_argument("--concurrency", default="32", help="comma list")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=15)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--loadgen_args", default="", help="more transerve-loadgen flags")
    ap.add_argument("--bin_dir", default="build/bin")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    variants = []
    for v in args.variant:
        name, _, flags = v.partition("=")
        variants.append((name.strip(), shlex.split(flags)))
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    runs = []
    for rnd in range(args.rounds):
        order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
        for name, flags in order:
            tag = f"r{rnd}_{name.replace(' ', '_')}"
            server = Server(args.bin_dir, args.model_dir, flags, os.path.join(args.out, tag + ".log"))
            try:
                for c in concurrencies:
                    report = loadgen(args.bin_dir, server, args.input, f"--concurrency={c}",
                                     args.duration, args.warmup,
                                     os.path.join(args.out, f"{tag}_c{c}.json"),
                                     shlex.split(args.loadgen_args))
                    runs.append({"round": rnd, "variant": name, "flags": flags, "concurrency": c,
                                 "report": report, "models": server.models})
                    lat = report["latency_seconds"]
                    print(f"round {rnd} {name:>24} c{c}: {report['requests_per_second']:.1f} req/s"
                          f" p50 {lat['p50'] * 1e3:.0f} ms p99 {lat['p99'] * 1e3:.0f} ms",
                          flush=True)
            finally:
                server.stop()
            for r in runs:
                if r["variant"] == name and r["round"] == rnd:
                    r["peak_rss_mb"] = server.peak_rss

    def median(name, c, key):
        vals = [key(r) for r in runs if r["variant"] == name and r["concurrency"] == c]
        return statistics.median(vals) if vals else float("nan")

    rows = []
    print()
    print("| variant | callers | req/s | target tok/s | p50 ms | p99 ms | errors | peak RSS MB "
          f"| req/s vs {variants[0][0]} | p99 vs {variants[0][0]} |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for c in concurrencies:
        base_rps = median(variants[0][0], c, lambda r: r["report"]["requests_per_second"])
        base_p99 = median(variants[0][0], c, lambda r: r["report"]["latency_seconds"]["p99"])
        for name, flags in variants:
            rps = median(name, c, lambda r: r["report"]["requests_per_second"])
            tps = median(name, c, lambda r: r["report"].get("target_tokens_per_second", 0))
            p50 = median(name, c, lambda r: r["report"]["latency_seconds"]["p50"])
            p99 = median(name, c, lambda r: r["report"]["latency_seconds"]["p99"])
            errors = sum(sum(r["report"].get("errors", {}).values()) for r in runs
                         if r["variant"] == name and r["concurrency"] == c)
            rss = median(name, c, lambda r: r.get("peak_rss_mb", 0))
            per_round = [f"{r['report']['requests_per_second']:.0f}" for r in runs
                         if r["variant"] == name and r["concurrency"] == c]
            rows.append({"variant": name, "flags": flags, "concurrency": c,
                         "requests_per_second": rps, "target_tokens_per_second": tps,
                         "p50_seconds": p50, "p99_seconds": p99, "errors": errors,
                         "peak_rss_mb": rss, "ratio_requests_per_second": rps / base_rps,
                         "ratio_p99": p99 / base_p99, "rounds": per_round})
            print(f"| {name} | {c} | {rps:.1f} ({'/'.join(per_round)}) | {tps:.0f} | {p50 * 1e3:.0f} "
                  f"| {p99 * 1e3:.0f} | {errors} | {rss:.0f} | {rps / base_rps:.2f}x "
                  f"| {p99 / base_p99:.2f}x |")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"rows": rows, "runs": runs, "args": vars(args)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
