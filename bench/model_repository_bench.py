#!/usr/bin/env python3
"""The model repository (issue 19, docs/model-repository.md): cold loads, many models under a
loaded-model limit, reloads under load, cold loads side by side.

  python3 bench/model_repository_bench.py [--runs 5] [--duration 60] [--callers 16]
      [--model_load_threads 2] [--parts cold,zipf,reload,burst] [--results FILE]

(i) Cold load: the first Translate's latency on a fresh server (--model_repository holding the
    one model, no --preload), median of --runs servers, for the shipped models/en-de-small and
    for an opus-mt-en-de-shaped random model (d_model 512, 6+6 layers, 8 heads, FFN 2048, float32,
    from tools/reference/make_random_model.py) with opus-mt's vocabulary size (58101): it takes
    the shipped model's SentencePiece files, and its vocab.json padded to 58101 with pieces no
    text produces (a random checkpoint has no tokenizer of its own, and text is what a first
    request sends). The load time the server measured (transerve_model_load_seconds) and a second, warm
    request are reported beside it; both are greedy with max_length 8, so that decoding adds
    little to the load. Cold is the process's: each run copies the model into its
    repository just before, so its files are in the page cache (not a first read from disk).
(ii) Twenty models (copies of the shipped model, m00..m19) with --max_loaded_models=4: --callers
    closed-loop callers for --duration seconds, each call to a model drawn from a Zipf law
    (s = --zipf_s, seeded; m00 the most popular). Calls/s, p50/p99 latency, and the hit rate:
    the share of calls that did not make the server load a model (1 - loads / calls, the loads
    counted by transerve_model_loads_total over the same window).
    Loader busy: the loads' seconds (transerve_model_load_seconds_sum) over the window's, so up
    to --model_load_threads (100% = one loader busy all the time); the mean load beside it.
(iii) Ten Admin reloads (transerve-client --admin=reload) of one model while --callers callers
    load it; every call must answer OK.
(iv) Cold burst: a fresh server over --burst_models copies of the shipped model, one first
    request to each sent together (greedy, max_length 8, as in (i)); each one's latency and the
    time until the last answered, median of --runs servers. With one loader thread the loads
    queue; with more they run side by side.

Every server gets --model_load_threads (docs/model-repository.md).

Calls go through the HTTP front end (POST /v1/translate, the native API: one JSON body names the
model per call, which a Zipf mix needs and transerve-loadgen's one --model cannot do; Debian has
no Python gRPC here). The model's default decoding; texts from deploy/loadgen/sentences.en.
Prints tables and writes bench/results/model_repository.json (or --results): the parts run.
Binaries from build/bin (--bin). Part (i) needs the full setup (scripts/setup.sh: python3-torch
for the random model).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RESULTS = os.path.join(REPO, "bench", "results", "model_repository.json")
SHIPPED = os.path.join(REPO, "models", "en-de-small")
ADMIN_TOKEN = "bench-admin-token"
# The cold request decodes little, so that its time is the load's: a random model rarely stops
# before max_length (512, beam 4 by default: seconds of decoding for the opus-mt-shaped one).
COLD_OPTIONS = {"beamSize": 1, "maxLength": 8}
TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json",
                   "special_tokens_map.json")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """transerve-server over a repository, with its gRPC, HTTP and metrics ports."""

    def __init__(self, args, repository, work, name, *flags):
        self.args = args
        self.port, self.http, self.metrics = free_port(), free_port(), free_port()
        self.log = open(os.path.join(work, f"{name}.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(args.bin, "transerve-server"), f"--model_repository={repository}",
             "--host=127.0.0.1", f"--port={self.port}", f"--http_port={self.http}",
             f"--metrics_port={self.metrics}", f"--admin_token={ADMIN_TOKEN}",
             "--max_queue_wait=120s", "--log_level=warn",
             f"--model_load_threads={args.model_load_threads}", *flags],
            stdout=self.log, stderr=self.log)
        # Up (/healthz), then ready (/readyz: preloads done, the repository scanned); a server
        # that stays unready with nothing loaded is measured from then on anyway.
        for path, tries in (("/healthz", 600), ("/readyz", 300)):
            for _ in range(tries):
                if self.proc.poll() is not None:
                    raise SystemExit(f"model_repository_bench: the server exited; see "
                                     f"{self.log.name}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.http}{path}", timeout=1):
                        break
                except OSError:
                    time.sleep(0.1)
            else:
                if path == "/healthz":
                    raise SystemExit("model_repository_bench: the server did not come up")

    def metric_values(self, name, **labels):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics}/metrics") as r:
            text = r.read().decode()
        values = []
        for m in re.finditer(rf"^{name}(?:\{{([^}}]*)\}})? (\S+)$", text, re.M):
            have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
            if all(have.get(k) == v for k, v in labels.items()):
                values.append(float(m.group(2)))
        return values

    def metric_sum(self, name, **labels):
        return sum(self.metric_values(name, **labels))

    def metric_max(self, name, **labels):
        return max(self.metric_values(name, **labels), default=0.0)

    def admin(self, command, model=""):
        """transerve-client --admin=COMMAND: (exit status, seconds, output)."""
        cmd = [os.path.join(self.args.bin, "transerve-client"), f"--target=127.0.0.1:{self.port}",
               f"--admin={command}", f"--admin_token={ADMIN_TOKEN}", "--timeout=300"]
        if model:
            cmd.append(f"--admin_model={model}")
        started = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True)
        return done.returncode, time.monotonic() - started, done.stdout + done.stderr

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Caller:
    """One keep-alive HTTP connection sending POST /v1/translate."""

    def __init__(self, server):
        self.conn = http.client.HTTPConnection("127.0.0.1", server.http, timeout=300)

    def translate(self, model, text, options=None):
        """(HTTP status, seconds)."""
        request = {"model": model, "texts": [text]}
        if options:
            request["options"] = options
        body = json.dumps(request)
        started = time.monotonic()
        try:
            self.conn.request("POST", "/v1/translate", body,
                              {"Content-Type": "application/json",
                               "X-Request-Timeout-Ms": "120000"})
            r = self.conn.getresponse()
            r.read()
            status = r.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            status = 0
        return status, time.monotonic() - started


def percentile(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def closed_loop(server, callers, seconds, pick_model, texts, seed, during=None):
    """Runs `callers` closed loops for `seconds`; `during` runs beside them. Returns the calls
    [(model, status, seconds)] and what `during` returned."""
    calls, lock = [], threading.Lock()
    until = time.monotonic() + seconds

    def run(c):
        rng = random.Random(seed * 1000 + c)
        caller = Caller(server)
        mine = []
        while time.monotonic() < until:
            model = pick_model(rng)
            status, took = caller.translate(model, rng.choice(texts))
            mine.append((model, status, took))
        with lock:
            calls.extend(mine)

    threads = [threading.Thread(target=run, args=(c,)) for c in range(callers)]
    for t in threads:
        t.start()
    result = during() if during else None
    for t in threads:
        t.join()
    return calls, result


OPUS_MT_VOCAB = 58101  # opus-mt-en-de's vocabulary size


def make_opus_shaped_model(work):
    out = os.path.join(work, "opus-mt-en-de-shape")
    if not os.path.exists(os.path.join(out, "model.safetensors")):
        subprocess.run(
            ["/usr/bin/python3", os.path.join(REPO, "tools", "reference", "make_random_model.py"),
             "--out", out, "--d_model", "512", "--encoder_layers", "6", "--decoder_layers", "6",
             "--heads", "8", "--ffn", "2048", "--vocab", str(OPUS_MT_VOCAB),
             "--max_position_embeddings", "512", "--dtype", "f32", "--seed", "1"],
            check=True, stdout=subprocess.DEVNULL)
        for f in TOKENIZER_FILES:
            shutil.copy(os.path.join(SHIPPED, f), os.path.join(out, f))
        # The shipped SentencePiece pieces keep their ids; the vocabulary is padded with pieces
        # no text produces to opus-mt's size, <pad> last (eos 0, unk 1, pad = V - 1 as the random
        # model's config says), so the embedding and output tables are opus-mt-en-de's size.
        with open(os.path.join(SHIPPED, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        pad = vocab.pop("<pad>")
        for i in range(pad, OPUS_MT_VOCAB - 1):
            vocab[f"<unused{i}>"] = i
        vocab["<pad>"] = OPUS_MT_VOCAB - 1
        with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
    return out


def cold_load(args, work, name, model_dir, texts):
    firsts, warms, loads = [], [], []
    for run in range(args.runs):
        repository = os.path.join(work, f"cold_{name}_{run}")
        os.makedirs(repository)
        shutil.copytree(model_dir, os.path.join(repository, "m"))
        server = Server(args, repository, work, f"cold_{name}_{run}")
        try:
            caller = Caller(server)
            status, first = caller.translate("m", texts[0], COLD_OPTIONS)
            if status != 200:
                raise SystemExit(f"model_repository_bench: cold request answered {status}")
            _, warm = caller.translate("m", texts[0], COLD_OPTIONS)
            firsts.append(first)
            warms.append(warm)
            loads.append(server.metric_sum("transerve_model_load_seconds_sum", model="m"))
        finally:
            server.stop()
            shutil.rmtree(repository)
    size = sum(os.path.getsize(os.path.join(model_dir, f)) for f in os.listdir(model_dir))
    return {"files_mb": size / 2**20, "first_request_seconds": statistics.median(firsts),
            "server_load_seconds": statistics.median(loads),
            "warm_request_seconds": statistics.median(warms), "runs": args.runs,
            "first_request_seconds_all": firsts}


def resident_set_bytes(pid):
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def zipf_mix(args, work, texts):
    repository = os.path.join(work, "zipf")
    names = [f"m{i:02d}" for i in range(args.models)]
    for n in names:
        shutil.copytree(SHIPPED, os.path.join(repository, n))
    weights = [1.0 / (rank + 1) ** args.zipf_s for rank in range(len(names))]
    server = Server(args, repository, work, "zipf", f"--max_loaded_models={args.max_loaded}")
    try:
        # Unmeasured warm-up, then the window between two counter readings.
        closed_loop(server, args.callers, 5, lambda r: r.choices(names, weights)[0], texts, 1)
        loads_before = server.metric_sum("transerve_model_loads_total")
        load_seconds_before = server.metric_sum("transerve_model_load_seconds_sum")
        rss = []
        stop_sampling = threading.Event()

        def sample_rss():
            while not stop_sampling.wait(0.2):
                rss.append(resident_set_bytes(server.proc.pid))

        sampler = threading.Thread(target=sample_rss)
        sampler.start()
        started = time.monotonic()
        calls, _ = closed_loop(server, args.callers, args.duration,
                               lambda r: r.choices(names, weights)[0], texts, 2)
        elapsed = time.monotonic() - started
        stop_sampling.set()
        sampler.join()
        loads = server.metric_sum("transerve_model_loads_total") - loads_before
        load_seconds = server.metric_sum("transerve_model_load_seconds_sum") - load_seconds_before
        one_model = server.metric_max("transerve_model_resident_bytes")
    finally:
        server.stop()
        shutil.rmtree(repository)
    ok = [took for _, status, took in calls if status == 200]
    per_model = {n: sum(1 for m, _, _ in calls if m == n) for n in names}
    return {"models": len(names), "max_loaded_models": args.max_loaded, "zipf_s": args.zipf_s,
            "callers": args.callers, "seconds": elapsed, "calls": len(calls), "ok": len(ok),
            "failed": len(calls) - len(ok), "calls_per_second": len(ok) / elapsed,
            "loads": loads, "hit_rate": 1 - loads / max(1, len(calls)),
            "p50_seconds": percentile(ok, 0.5), "p99_seconds": percentile(ok, 0.99),
            "load_seconds": load_seconds, "loader_busy_share": load_seconds / elapsed,
            "model_load_threads": args.model_load_threads,
            "mean_load_seconds": load_seconds / max(1, loads),
            "process_rss_max_bytes": max(rss, default=0), "model_resident_bytes": one_model,
            "calls_per_model": per_model}


def reloads_under_load(args, work, texts):
    repository = os.path.join(work, "reload")
    shutil.copytree(SHIPPED, os.path.join(repository, "m"))
    server = Server(args, repository, work, "reload", "--preload=m")
    reloads = []

    def reload_ten():
        time.sleep(2)
        for _ in range(args.reloads):
            rc, took, out = server.admin("reload", "m")
            reloads.append({"ok": rc == 0, "seconds": took, "answer": out.strip()[-300:]})
            time.sleep(1)
        time.sleep(2)
        return reloads

    try:
        # The callers stop on their own clock; it must outlast the reloads.
        seconds = 5 + args.reloads * 4
        calls, _ = closed_loop(server, args.callers, seconds, lambda r: "m", texts, 3,
                               during=reload_ten)
        version = server.admin("list")[2]
    finally:
        server.stop()
        shutil.rmtree(repository)
    failed = [status for _, status, _ in calls if status != 200]
    return {"reloads": len(reloads), "reloads_failed": sum(not r["ok"] for r in reloads),
            "reload_seconds_median": statistics.median(r["seconds"] for r in reloads),
            "calls": len(calls), "failed_calls": len(failed),
            "failed_statuses": sorted(set(failed)), "admin_list_after": version,
            "p99_seconds": percentile([t for _, s, t in calls if s == 200], 0.99)}


def cold_burst(args, work, texts):
    """(iv): first requests to --burst_models cold models at once, on --runs fresh servers."""
    names = [f"b{i:02d}" for i in range(args.burst_models)]
    latencies, lasts, overlapped = [], [], []
    for run in range(args.runs):
        repository = os.path.join(work, f"burst_{run}")
        for n in names:
            shutil.copytree(SHIPPED, os.path.join(repository, n))
        server = Server(args, repository, work, f"burst_{run}")
        try:
            callers = [Caller(server) for _ in names]
            answers = [None] * len(names)
            barrier = threading.Barrier(len(names))

            def first(i):
                barrier.wait()
                answers[i] = callers[i].translate(names[i], texts[i % len(texts)], COLD_OPTIONS)

            started = time.monotonic()
            threads = [threading.Thread(target=first, args=(i,)) for i in range(len(names))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            lasts.append(time.monotonic() - started)
            if any(status != 200 for status, _ in answers):
                raise SystemExit(f"model_repository_bench: a cold burst request answered "
                                 f"{[status for status, _ in answers]}")
            latencies.extend(took for _, took in answers)
            # Loads' seconds beyond the burst's wall time: they ran side by side.
            overlapped.append(server.metric_sum("transerve_model_load_seconds_sum") / lasts[-1])
        finally:
            server.stop()
            shutil.rmtree(repository)
    return {"models": len(names), "runs": args.runs, "model_load_threads": args.model_load_threads,
            "first_request_p50_seconds": statistics.median(latencies),
            "first_request_max_seconds": max(latencies),
            "all_answered_seconds": statistics.median(lasts),
            "load_seconds_per_wall_second": statistics.median(overlapped)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    p.add_argument("--input", default=os.path.join(REPO, "deploy", "loadgen", "sentences.en"))
    p.add_argument("--runs", type=int, default=5, help="cold-load servers per model")
    p.add_argument("--duration", type=float, default=60, help="seconds of the Zipf mix")
    p.add_argument("--callers", type=int, default=16)
    p.add_argument("--models", type=int, default=20)
    p.add_argument("--max_loaded", type=int, default=4)
    p.add_argument("--zipf_s", type=float, default=1.1)
    p.add_argument("--reloads", type=int, default=10)
    p.add_argument("--model_load_threads", type=int, default=2,
                   help="the servers' --model_load_threads (1: one load at a time)")
    p.add_argument("--burst_models", type=int, default=4, help="cold models of the burst (iv)")
    p.add_argument("--parts", default="cold,zipf,reload,burst",
                   help="comma list of the parts to run: cold (i), zipf (ii), reload (iii), "
                        "burst (iv)")
    p.add_argument("--results", default=RESULTS, help="where the JSON goes")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = p.parse_args(argv)
    parts = set(args.parts.split(","))
    if not parts <= {"cold", "zipf", "reload", "burst"}:
        p.error(f"--parts: unknown part in {args.parts}")
    with open(args.input, encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()]
    work = tempfile.mkdtemp(prefix="transerve_model_repository_bench_")
    cold = mix = reload = burst = None
    try:
        if "cold" in parts:
            opus = make_opus_shaped_model(work)
            cold = {"en-de-small": cold_load(args, work, "shipped", SHIPPED, texts),
                    "opus-mt-en-de shape (random, vocab 58101)": cold_load(args, work, "opus",
                                                                           opus, texts)}
        if "zipf" in parts:
            mix = zipf_mix(args, work, texts)
        if "reload" in parts:
            reload = reloads_under_load(args, work, texts)
        if "burst" in parts:
            burst = cold_burst(args, work, texts)
    finally:
        if args.keep:
            print(f"work directory: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(f"--model_load_threads={args.model_load_threads}")
    if cold:
        print(f"\n(i) Cold load: the first Translate on a fresh server, median of {args.runs}")
        print("| model | files | first request | server's load | warm request |")
        print("| --- | --- | --- | --- | --- |")
        for name, c in cold.items():
            print(f"| {name} | {c['files_mb']:.1f} MB | {1000 * c['first_request_seconds']:.0f} ms "
                  f"| {1000 * c['server_load_seconds']:.0f} ms | "
                  f"{1000 * c['warm_request_seconds']:.1f} ms |")
    if mix:
        print(f"\n(ii) {mix['models']} models, --max_loaded_models={mix['max_loaded_models']}, "
              f"Zipf s={mix['zipf_s']}, {mix['callers']} closed-loop callers, "
              f"{mix['seconds']:.0f} s")
        print("| calls/s | hit rate | loads | loader busy | mean load | p50 | p99 | failed "
              "| process RSS at most | one model |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        print(f"| {mix['calls_per_second']:.1f} | {100 * mix['hit_rate']:.1f}% | "
              f"{mix['loads']:.0f} | {100 * mix['loader_busy_share']:.0f}% | "
              f"{1000 * mix['mean_load_seconds']:.0f} ms | "
              f"{1000 * mix['p50_seconds']:.1f} ms | {1000 * mix['p99_seconds']:.1f} ms | "
              f"{mix['failed']} | {mix['process_rss_max_bytes'] / 2**20:.0f} MB | "
              f"{mix['model_resident_bytes'] / 2**20:.0f} MB |")
    if reload:
        print(f"\n(iii) {reload['reloads']} Admin reloads under {args.callers} callers")
        print("| reloads failed | median reload | calls | failed calls | p99 |")
        print("| --- | --- | --- | --- | --- |")
        print(f"| {reload['reloads_failed']} | {reload['reload_seconds_median']:.2f} s | "
              f"{reload['calls']} | {reload['failed_calls']} | "
              f"{1000 * reload['p99_seconds']:.1f} ms |")
    if burst:
        print(f"\n(iv) {burst['models']} cold models asked at once, median of {burst['runs']}")
        print("| first request p50 | first request max | all answered | load s per wall s |")
        print("| --- | --- | --- | --- |")
        print(f"| {1000 * burst['first_request_p50_seconds']:.0f} ms | "
              f"{1000 * burst['first_request_max_seconds']:.0f} ms | "
              f"{1000 * burst['all_answered_seconds']:.0f} ms | "
              f"{burst['load_seconds_per_wall_second']:.2f} |")

    results = {"model_load_threads": args.model_load_threads}
    for key, part in (("cold_load", cold), ("zipf_mix", mix), ("reloads_under_load", reload),
                      ("cold_burst", burst)):
        if part is not None:
            results[key] = part
    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    with open(args.results, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(f"\nwrote {os.path.relpath(args.results, REPO)}")
    failed = (reload and (reload["failed_calls"] or reload["reloads_failed"])) or (
        mix and mix["failed"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
