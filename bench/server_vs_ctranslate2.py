#!/usr/bin/python3
"""transerve-server against CTranslate2 behind a hand-made HTTP server, on the same model,
the same sentences and the same open-loop rates.

What it measures. Both servers get the same LibreTranslate load: POST /translate, one sentence
per request, Poisson arrivals, from the same transerve-loadgen with the same seed. The loadgen
is run as `--protocol=http --http_api=libretranslate`. The figures are the achieved requests/s,
p50 and p99 latency (counted from each call's due time, so queueing shows), the errors, and
the servers' resident memory (idle after start, and peak VmHWM over the whole run).

The two servers:
- transerve-server, serving models/en-de-small on its LibreTranslate API. The model's own
  generation defaults apply: beam 4, max_length 512.
- bench/ctranslate2_http_server.py. This is CTranslate2 4.8.1 (the anchor kit's Debian build)
  with what a user would write around it: ThreadingHTTPServer, SentencePiece, and a dynamic
  batcher (up to --max_batch_size sentences, gathered within 5 ms). It decodes with the same
  beam 4, max length 512 and length penalty 1.
The model is the same trained checkpoint, converted by the kit's convert.py to float32 and to
int8. The input is one held-out sentence per line, and the loadgen sends one line per
request, so the CT2 server needs no sentence splitter. transerve still runs its own splitter;
it split 16 of 400 handbook lines in two or more.

Variants:
- transerve: `--transerve NAME='FLAGS'`, repeatable. The default is --dtype float32 and int8,
  each with --replicas=1 and --replicas=2 when the binary has that flag (its default, 0, means
  "the server's choice", which on 2 cores is 2 already). Without the flag, one variant of each
  dtype runs, as plain ts-fp32 and ts-int8.
- CTranslate2: `--ct2 TYPE:INTERxINTRA`, repeatable. The default is int8:1x2, int8:2x1,
  float32:1x2 and float32:2x1. 1x2 is one worker on both cores. 2x1 is two workers of one
  thread, CTranslate2's "replicas". Each server gets OMP_NUM_THREADS=INTRA. --ct2_env adds
  more variables, e.g. 'OMP_WAIT_POLICY=PASSIVE'. GNU OpenMP spins by default, and 1x2
  suffers badly when something else wants the cores. The default is left as CTranslate2 ships
  it.

One server runs at a time. Each round starts every variant in turn, waits for it to be ready,
and drives it at the three rates with one loadgen sweep. Then it stops the server. The order
of the variants rotates from round to round.

The rates come from --rates, or from a probe. The probe runs every variant (or those named by
--probe_variants) in a closed loop with 64 calls in flight. The rates are then --fractions
(0.3, 0.6, 0.9) of the slowest variant's throughput.

Usage (from the checkout; CTranslate2 built with the kit:
`nice -n 19 ../shared/anchors/ctranslate2/build.sh /work/ct2`):

  bench/server_vs_ctranslate2.py --ct2_workdir /work/ct2 [--rounds 2] [--duration 15]
      [--warmup 3] [--rates R1,R2,R3] [--input SENTENCES] [--out build/bench/server_vs_ctranslate2]

Time: the probe takes about 15 s a variant. A round takes about 3 x (warmup + duration + 1 s)
+ 2 s a variant. With the defaults (8 variants, 2 rounds, 15 + 3 s) that is about 2 + 2 x 8 =
18 minutes, plus any wait for a quiet machine. `--rounds 1 --duration 10` is an 8-minute smoke
test.

Input: --input, else the corpus test split (/work/data/corpus/test.en), else the held-out
Debian handbook (/work/data/handbook-eval/handbook.en; tools/corpus/extract_handbook.sh makes
it in about a minute). As a last resort it falls back to bench/make_sentences.py. Those are
random words: a trained model translates them, but it does not behave as it does on real
text.

Output: OUT/summary.md (the tables), OUT/summary.json (everything), OUT/runs/ (each loadgen
JSON and each server log). The binaries are copied to OUT/bin first, so a rebuild during the
run changes nothing.

Fairness caveats (quote them with any figure):
- CTranslate2 is Debian's build here: oneDNN 2.6.3 and GNU OpenMP, no Intel MKL. The PyPI
  wheel (MKL, oneDNN 3, Intel OpenMP) may be faster, above all in float32.
- The Python server's own costs are part of what is measured: the GIL, the JSON and
  SentencePiece in Python, and a thread per connection. That is what a user without transerve
  would build. Its batching is static: a batch runs until its longest sentence ends.
  transerve batches continuously.
- The load generator shares the 2 cores with the server.
- The machine must be quiet. Before each server start the script waits (up to --quiet_wait,
  120 s) until other processes use under --quiet_cores (0.3) cores. The summary gives the
  cores the server used and what everything else used during each sweep. On a 2-core VM,
  with compilers running beside it, ct2-float32-1x2 fell from 98 requests/s (quiet, closed
  loop of 64) to 1-5, with latencies of tens of seconds: GNU OpenMP's spinning threads were
  descheduled. The probe's "slowest" is then that variant. Do not trust such a run.
- p99 needs samples. The "answers" column gives how many calls each cell counted. Below about
  200 calls, p99 is close to the maximum.
- transerve's LibreTranslate path does more per request: the document pipeline, sentence
  splitting and an in-process gRPC hop. Its scheduler gets --max_batch_sequences 64; the CT2
  server gets --max_batch_size 32, unless --ct2_args says otherwise.
- The beam search stops differently. transerve follows Hugging Face (early_stopping=False).
  CTranslate2 stops when beam_size hypotheses have finished (patience 1). The outputs, and so
  the work per sentence, can therefore differ a little.
- transerve protects spans: URLs, paths and numbers go through as stand-ins, so it encodes
  fewer source pieces. On 400 handbook lines it encoded 28.7 pieces a line, against 29.8
  for the CT2 server. The source counts differed on 62 of 384 single-sentence lines.
  Outputs were identical, in float32, on 336 of those 384 lines greedy and on 322 with beam
  4. Target lengths were within 1-2% (26.9 against 27.2 pieces).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"  # Debian's: the kit builds CTranslate2's extension for it


def log(msg):
    print("[server_vs_ct2 %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr,
          flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid, key):
    """VmRSS / VmHWM of pid in MB, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def proc_cpu_seconds(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def cpu_busy_seconds():
    """CPU seconds the whole machine has spent busy (every core, every process)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_quiet(cfg):
    """Waits (up to cfg.quiet_wait s) until other processes use under cfg.quiet_cores cores,
    sampled over 1 s; returns the last sample. A busy 2-core machine wrecks some variants
    (GNU OpenMP's spinning threads, above all), so a run should start on a quiet one."""
    t0 = time.monotonic()
    warned = False
    while True:
        b0, w0 = cpu_busy_seconds(), time.monotonic()
        time.sleep(1)
        busy = (cpu_busy_seconds() - b0) / (time.monotonic() - w0)
        if busy < cfg.quiet_cores or time.monotonic() - t0 > cfg.quiet_wait:
            if busy >= cfg.quiet_cores:
                log("WARNING: other processes use %.2f cores; starting anyway" % busy)
            elif warned:
                log("quiet after %.0f s" % (time.monotonic() - t0))
            return busy
        if not warned:
            log("other processes use %.2f cores: waiting up to %g s for them" % (
                busy, cfg.quiet_wait))
            warned = True


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def http_ok(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


class Variant:
    def __init__(self, name, kind, args, env=None):
        self.name, self.kind, self.args, self.env = name, kind, args, env or {}

    def describe(self):
        return {"name": self.name, "kind": self.kind, "args": self.args,
                "env": self.env}


class Running:
    """One server process of a variant, on a free port of 127.0.0.1."""

    def __init__(self, variant, cfg, log_path):
        self.variant = variant
        self.port = free_port()
        env = dict(os.environ)
        env.update(variant.env)
        if variant.kind == "transerve":
            cmd = [cfg.transerve_server, "--model_dir=" + cfg.model_dir, "--host=127.0.0.1",
                   "--http_port=%d" % self.port, "--port=0", "--metrics_port=-1",
                   "--log_level=warn"] + variant.args
            self.ready_path = "/readyz"
        else:
            cmd = [PY, os.path.join(HERE, "ctranslate2_http_server.py"),
                   "--spm_dir", cfg.model_dir, "--host", "127.0.0.1",
                   "--port", str(self.port)] + variant.args
            self.ready_path = "/healthz"
        self.cmd = cmd
        self.log = open(log_path, "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     cwd=ROOT)
        self.ready_s = None

    def wait_ready(self, timeout=180):
        while time.monotonic() - self.t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s at start (log %s)" % (
                    self.variant.name, self.proc.returncode, self.log.name))
            if http_ok(self.port, self.ready_path):
                self.ready_s = time.monotonic() - self.t0
                return
            time.sleep(0.2)
        raise RuntimeError("%s not ready after %d s" % (self.variant.name, timeout))

    def stop(self):
        """Stops the process; returns its peak RSS (VmHWM, MB) read just before."""
        peak = proc_status(self.proc.pid, "VmHWM")
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=45)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return peak


def run_loadgen(cfg, port, extra, json_path, log_path):
    cmd = [cfg.loadgen, "--protocol=http", "--http_api=libretranslate",
           "--http_target=127.0.0.1:%d" % port, "--input=" + cfg.input, "--order=random",
           "--seed=%d" % cfg.seed, "--json=" + json_path] + extra
    with open(log_path, "w") as f:
        f.write(" ".join(shlex.quote(c) for c in cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    if rc != 0:
        raise RuntimeError("loadgen exited with %d (log %s)" % (rc, log_path))
    with open(json_path) as f:
        return json.load(f)


def summarize_run(r):
    return {"requests_per_second": r["requests_per_second"],
            "p50_ms": r["latency_seconds"]["p50"] * 1e3,
            "p90_ms": r["latency_seconds"]["p90"] * 1e3,
            "p99_ms": r["latency_seconds"]["p99"] * 1e3,
            "max_ms": r["latency_seconds"]["max"] * 1e3,
            "ok": r["ok"], "skipped": r.get("skipped", 0),
            "errors": sum(r["errors"].values()), "errors_by_status": r["errors"],
            "sent": r["sent"], "duration_seconds": r["duration_seconds"]}


def one_server_run(cfg, variant, tag, loadgen_args):
    """Starts variant, drives it with loadgen_args, stops it. Returns the record."""
    base = os.path.join(cfg.out, "runs", "%s_%s" % (tag, variant.name))
    other_before = wait_quiet(cfg)
    load_before = loadavg()
    srv = Running(variant, cfg, base + ".server.log")
    try:
        srv.wait_ready()
        idle = proc_status(srv.proc.pid, "VmRSS")
        cpu0, t0 = proc_cpu_seconds(srv.proc.pid), time.monotonic()
        busy0 = cpu_busy_seconds()
        report = run_loadgen(cfg, srv.port, loadgen_args, base + ".json", base + ".loadgen.log")
        cpu1, t1 = proc_cpu_seconds(srv.proc.pid), time.monotonic()
        busy1 = cpu_busy_seconds()
    finally:
        peak = srv.stop()
    batching = None
    with open(base + ".server.log") as f:
        for line in f:
            m = re.search(r"(\d+) sentences in (\d+) batches", line)
            if m:
                batching = {"sentences": int(m.group(1)), "batches": int(m.group(2)),
                            "mean_batch": int(m.group(1)) / int(m.group(2))}
    runs = report["runs"] if "runs" in report else [report]
    return {"variant": variant.name, "tag": tag, "ready_seconds": srv.ready_s,
            "idle_rss_mb": idle, "peak_rss_mb": peak, "loadavg_before": load_before,
            "server_cpu_seconds": cpu1 - cpu0, "wall_seconds": t1 - t0,
            "server_cores": (cpu1 - cpu0) / max(1e-9, t1 - t0),
            # everything else on the machine while it ran, the loadgen included
            "other_cores": max(0.0, (busy1 - busy0) - (cpu1 - cpu0)) / max(1e-9, t1 - t0),
            "other_cores_before_start": other_before,
            "runs": [summarize_run(r) | {"rate": r.get("rate"), "concurrency":
                                         r.get("concurrency")} for r in runs],
            "ct2_batching": batching, "server": srv.cmd, "exit_code": srv.proc.returncode}


def has_flag(binary, flag):
    try:
        out = subprocess.run([binary, "--helpfull"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return ("--%s" % flag) in (out.stdout + out.stderr)


def prepare_models(cfg):
    """Converts the model with the kit's convert.py (float32 and int8), once."""
    out = {}
    env = dict(os.environ, PYTHONPATH=cfg.pylib)
    for q in ("float32", "int8"):
        d = os.path.join(cfg.ct2_models, q)
        if not os.path.isfile(os.path.join(d, "model.bin")):
            log("converting %s to CTranslate2 %s -> %s" % (cfg.model_dir, q, d))
            cmd = [PY, os.path.join(cfg.kit, "convert.py"), "--model_dir",
                   cfg.model_dir, "--out", d]
            if q != "float32":
                cmd += ["--quantization", q]
            subprocess.run(cmd, env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        out[q] = d
    return out


def choose_input(cfg):
    if cfg.input:
        return cfg.input, "given"
    for path, what in (("/work/data/corpus/test.en", "corpus test split (tools/corpus)"),
                       ("/work/data/handbook-eval/handbook.en",
                        "Debian handbook, held out (tools/corpus/extract_handbook.sh)")):
        if os.path.isfile(path):
            return path, what
    path = os.path.join(cfg.out, "sentences.txt")
    log("WARNING: no held-out text found; random-word sentences from bench/make_sentences.py")
    subprocess.run([PY, os.path.join(HERE, "make_sentences.py"), "--out", path],
                   check=True)
    return path, "bench/make_sentences.py (random words; not natural text)"


def parse_variants(cfg, models):
    variants = []
    ts = cfg.transerve
    if not ts:
        if has_flag(cfg.transerve_server, "replicas"):
            # Explicit: --replicas=0 (the default) is the server's choice, which on 2 cores
            # is already 2 replicas.
            ts = ["ts-fp32-r1=--dtype=float32 --replicas=1",
                  "ts-fp32-r2=--dtype=float32 --replicas=2",
                  "ts-int8-r1=--dtype=int8 --replicas=1", "ts-int8-r2=--dtype=int8 --replicas=2"]
        else:
            ts = ["ts-fp32=--dtype=float32", "ts-int8=--dtype=int8"]
            log("transerve-server has no --replicas flag: running without replica variants")
    for spec in ts:
        name, _, flags = spec.partition("=")
        variants.append(Variant(name, "transerve", shlex.split(flags)))
    for spec in cfg.ct2 or ["int8:1x2", "int8:2x1", "float32:1x2", "float32:2x1"]:
        ctype, _, threads = spec.partition(":")
        inter, _, intra = (threads or "1x2").partition("x")
        inter, intra = int(inter), int(intra or 1)
        if ctype not in models:
            sys.exit("--ct2 %s: compute type float32 or int8" % spec)
        args = ["--model", models[ctype], "--compute_type", ctype, "--inter_threads",
                str(inter), "--intra_threads", str(intra), "--beam_size", str(cfg.beam_size),
                "--max_length", str(cfg.max_length)] + shlex.split(cfg.ct2_args)
        env = {"PYTHONPATH": cfg.pylib, "OMP_NUM_THREADS": str(intra)}
        env.update(kv.split("=", 1) for kv in shlex.split(cfg.ct2_env))
        variants.append(Variant("ct2-%s-%dx%d" % (ctype, inter, intra), "ct2", args, env))
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        sys.exit("variant names repeat: %s" % names)
    return variants


def fmt_cell(values, fmt):
    vals = [v for v in values if v is not None]
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt % med
    return (fmt % med) + " (" + "/".join(fmt % v for v in vals) + ")"


def write_summary(cfg, meta, probe, records, variants, rates):
    by = {}
    for rec in records:
        by.setdefault(rec["variant"], []).append(rec)
    summary = {"variants": {}}
    md = ["# transerve-server against CTranslate2 behind a Python HTTP server", "",
          "Model `%s`, input %s (%s), beam %d, max length %d; one sentence per request, "
          "LibreTranslate POST /translate, open loop (Poisson), %g s measured + %g s warm-up "
          "per rate, %d round(s), variant order rotated per round. Figures: median of rounds "
          "(each round in parentheses)." % (
              cfg.model_dir, meta["input"], meta["input_kind"], cfg.beam_size, cfg.max_length,
              cfg.duration, cfg.warmup, cfg.rounds), ""]
    if probe:
        md += ["Saturation probe (closed loop, 64 in flight, %g s): " % cfg.probe_seconds +
               ", ".join("%s %.1f req/s" % (k, v) for k, v in probe.items()) +
               "; rates = %s of the slowest." % cfg.fractions, ""]
    md += ["| variant | offered req/s | achieved req/s | p50 ms | p99 ms | errors | answers |",
           "|---|---|---|---|---|---|---|"]
    for v in variants:
        recs = by.get(v.name, [])
        rows = []
        for i, rate in enumerate(rates):
            cells = [rec["runs"][i] for rec in recs if i < len(rec["runs"])]
            row = {
                "rate": rate,
                "requests_per_second": [c["requests_per_second"] for c in cells],
                "p50_ms": [c["p50_ms"] for c in cells],
                "p99_ms": [c["p99_ms"] for c in cells],
                "errors": [c["errors"] + c["skipped"] for c in cells],
                "ok": [c["ok"] for c in cells],
            }
            row["median"] = {k: statistics.median(row[k]) for k in
                             ("requests_per_second", "p50_ms", "p99_ms") if row[k]}
            rows.append(row)
            md.append("| %s | %.2f | %s | %s | %s | %s | %s |" % (
                v.name, rate, fmt_cell(row["requests_per_second"], "%.2f"),
                fmt_cell(row["p50_ms"], "%.0f"), fmt_cell(row["p99_ms"], "%.0f"),
                "/".join(str(e) for e in row["errors"]) or "-",
                "/".join(str(e) for e in row["ok"]) or "-"))
        summary["variants"][v.name] = {
            "describe": v.describe(), "rates": rows,
            "idle_rss_mb": [r["idle_rss_mb"] for r in recs],
            "peak_rss_mb": [r["peak_rss_mb"] for r in recs],
            "server_cores": [r["server_cores"] for r in recs],
            "other_cores": [r["other_cores"] for r in recs],
            "ready_seconds": [r["ready_seconds"] for r in recs],
            "ct2_mean_batch": [r["ct2_batching"]["mean_batch"] for r in recs
                               if r.get("ct2_batching")]}
    md += ["", "| variant | idle RSS MB | peak RSS MB | server cores over the sweep | "
           "other cores (loadgen included) | ready after s | CT2 mean batch |",
           "|---|---|---|---|---|---|---|"]
    for v in variants:
        s = summary["variants"][v.name]
        md.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            v.name, fmt_cell(s["idle_rss_mb"], "%.0f"), fmt_cell(s["peak_rss_mb"], "%.0f"),
            fmt_cell(s["server_cores"], "%.2f"), fmt_cell(s["other_cores"], "%.2f"),
            fmt_cell(s["ready_seconds"], "%.1f"),
            fmt_cell(s["ct2_mean_batch"], "%.1f")))
    for fail in meta.get("failures", []):
        md.append("")
        md.append("FAILED: %s, round %d: %s" % (fail["variant"], fail["round"], fail["error"]))
    loads = [r["loadavg_before"] for r in records]
    if loads:
        md += ["", "1-min loadavg before each server start: min %.2f, median %.2f, max %.2f." % (
            min(loads), statistics.median(loads), max(loads))]
    others = [r["other_cores_before_start"] for r in records]
    if others:
        md += ["", "Other processes' cores just before each server start: max %.2f." % max(others)]
    md += ["", "Caveats: CTranslate2 is Debian's build (oneDNN 2.6.3, GNU OpenMP, no MKL); the "
           "Python server's overhead (GIL, JSON, tokenization, thread per connection) is "
           "part of what is measured; the load generator shares the machine."]
    text = "\n".join(md) + "\n"
    with open(os.path.join(cfg.out, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(cfg.out, "summary.json"), "w") as f:
        json.dump({"meta": meta, "rates": rates, "probe": probe, "summary": summary,
                   "records": records}, f, indent=1)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--model_dir", default="models/en-de-small")
    ap.add_argument("--kit", default=os.environ.get("CT2_KIT", "../shared/anchors/ctranslate2"))
    ap.add_argument("--ct2_workdir", default=os.environ.get(
        "CT2_WORKDIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "ctranslate2")),
        help="the kit's WORKDIR (build.sh WORKDIR): its pylib-dnnl is used")
    ap.add_argument("--transerve_server", default="build/bin/transerve-server")
    ap.add_argument("--loadgen", default="build/bin/transerve-loadgen")
    ap.add_argument("--transerve", action="append", default=[],
                    help="NAME=FLAGS, a transerve variant (repeatable), e.g. "
                         "ts-int8='--dtype=int8'")
    ap.add_argument("--ct2", action="append", default=[],
                    help="TYPE:INTERxINTRA, a CTranslate2 variant (repeatable), e.g. int8:2x1")
    ap.add_argument("--ct2_args", default="",
                    help="more flags for every CTranslate2 server, e.g. '--max_batch_size 64'")
    ap.add_argument("--ct2_env", default="",
                    help="more environment for every CTranslate2 server, e.g. "
                         "'OMP_WAIT_POLICY=PASSIVE'")
    ap.add_argument("--beam_size", type=int, default=4,
                    help="CT2 server beam (transerve uses the model's: 4)")
    ap.add_argument("--max_length", type=int, default=512,
                    help="CT2 server max length (transerve uses the model's: 512)")
    ap.add_argument("--input", default="")
    ap.add_argument("--rates", default="", help="R1,R2,R3 (requests/s); default: probe")
    ap.add_argument("--fractions", default="0.3,0.6,0.9",
                    help="of the slowest probed variant's throughput")
    ap.add_argument("--probe_seconds", type=float, default=8)
    ap.add_argument("--probe_variants", default="",
                    help="comma list of variant names to probe (default: all)")
    ap.add_argument("--duration", type=float, default=15, help="measured seconds per rate")
    ap.add_argument("--warmup", type=float, default=3, help="unmeasured seconds per rate")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quiet_cores", type=float, default=0.3,
                    help="before each server start, wait until other processes use fewer cores")
    ap.add_argument("--quiet_wait", type=float, default=120,
                    help="most seconds to wait for that (then start anyway, with a warning)")
    ap.add_argument("--out", default="build/bench/server_vs_ctranslate2")
    cfg = ap.parse_args()

    os.chdir(ROOT)
    cfg.out = os.path.abspath(cfg.out)
    cfg.model_dir = os.path.abspath(cfg.model_dir)
    cfg.kit = os.path.abspath(cfg.kit)
    cfg.pylib = os.path.join(os.path.abspath(cfg.ct2_workdir), "pylib-dnnl")
    cfg.ct2_models = os.path.join(cfg.out, "ct2-models")
    if not os.path.isdir(os.path.join(cfg.pylib, "ctranslate2")):
        sys.exit("no CTranslate2 build at %s: run %s/build.sh %s first" % (
            cfg.pylib, cfg.kit, cfg.ct2_workdir))
    for b in (cfg.transerve_server, cfg.loadgen):
        if not os.access(b, os.X_OK):
            sys.exit("%s is not built" % b)
    os.makedirs(os.path.join(cfg.out, "runs"), exist_ok=True)
    os.makedirs(os.path.join(cfg.out, "bin"), exist_ok=True)
    # Frozen copies: a rebuild during the run cannot change what is measured.
    for attr in ("transerve_server", "loadgen"):
        dst = os.path.join(cfg.out, "bin", os.path.basename(getattr(cfg, attr)))
        shutil.copy2(getattr(cfg, attr), dst)
        setattr(cfg, attr, dst)
        # A binary copied while the linker writes it would not run: say so now, not mid-run.
        if subprocess.run([dst, "--helpfull"], capture_output=True, timeout=30).returncode > 1:
            sys.exit("%s does not run (copied during a rebuild?)" % dst)
    cfg.input, input_kind = choose_input(cfg)
    with open(cfg.input, encoding="utf-8") as f:
        n_lines = sum(1 for line in f if line.strip())

    t_start = time.monotonic()
    models = prepare_models(cfg)
    variants = parse_variants(cfg, models)
    meta = {"input": cfg.input, "input_kind": input_kind, "input_lines": n_lines,
            "model_dir": cfg.model_dir, "ct2_models": models, "pylib": cfg.pylib,
            "variants": [v.describe() for v in variants], "duration": cfg.duration,
            "warmup": cfg.warmup, "rounds": cfg.rounds, "seed": cfg.seed,
            "beam_size": cfg.beam_size, "max_length": cfg.max_length,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "nproc": os.cpu_count()}
    if loadavg() > 0.5:
        log("WARNING: loadavg %.2f at start; other work skews these figures" % loadavg())
    log("variants: %s" % ", ".join(v.name for v in variants))

    probe = {}
    if cfg.rates:
        rates = [float(r) for r in cfg.rates.split(",")]
    else:
        wanted = set(filter(None, cfg.probe_variants.split(",")))
        for v in variants:
            if wanted and v.name not in wanted:
                continue
            rec = one_server_run(cfg, v, "probe", [
                "--concurrency=64", "--duration=%g" % cfg.probe_seconds, "--warmup=2"])
            probe[v.name] = rec["runs"][0]["requests_per_second"]
            log("probe %s: %.2f req/s (p50 %.0f ms), peak RSS %.0f MB" % (
                v.name, probe[v.name], rec["runs"][0]["p50_ms"], rec["peak_rss_mb"] or 0))
        if not probe:
            sys.exit("--probe_variants named no variant")
        answered = {k: v for k, v in probe.items() if v > 0}
        for k in sorted(set(probe) - set(answered)):
            log("WARNING: %s answered nothing in the probe; left out of the slowest" % k)
        if not answered:
            sys.exit("no variant answered in the probe")
        slowest = min(answered.values())
        typical = statistics.median(answered.values())
        if len(answered) > 2 and slowest < 0.25 * typical:
            log("WARNING: the slowest probe (%s, %.1f req/s) is under a quarter of the median "
                "(%.1f): a busy machine? The rates follow it; --rates sets them instead" % (
                    min(answered, key=answered.get), slowest, typical))
        rates = [round(slowest * float(f), 2) for f in cfg.fractions.split(",")]
    meta["rates"] = rates
    log("rates: %s requests/s" % ",".join("%g" % r for r in rates))

    records, failures = [], []
    meta["failures"] = failures
    rate_arg = "--rate=" + ",".join("%g" % r for r in rates)
    for rnd in range(cfg.rounds):
        k = rnd % len(variants)
        order = variants[k:] + variants[:k]
        for v in order:
            log("round %d: %s" % (rnd + 1, v.name))
            try:
                rec = one_server_run(cfg, v, "r%d" % (rnd + 1), [
                    rate_arg, "--duration=%g" % cfg.duration, "--warmup=%g" % cfg.warmup])
            except RuntimeError as e:  # one broken run must not lose the others
                log("  FAILED: %s" % e)
                failures.append({"variant": v.name, "round": rnd + 1, "error": str(e)})
                continue
            rec["round"] = rnd + 1
            records.append(rec)
            log("  " + "; ".join("%g/s: %.2f req/s p50 %.0f p99 %.0f ms err %d" % (
                r["rate"], r["requests_per_second"], r["p50_ms"], r["p99_ms"],
                r["errors"] + r["skipped"]) for r in rec["runs"]) +
                "; peak RSS %.0f MB" % (rec["peak_rss_mb"] or 0))
            write_summary(cfg, meta, probe, records, variants, rates)
    meta["elapsed_seconds"] = time.monotonic() - t_start
    print(write_summary(cfg, meta, probe, records, variants, rates))
    log("done in %.0f s; %s/summary.{md,json}" % (meta["elapsed_seconds"], cfg.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
