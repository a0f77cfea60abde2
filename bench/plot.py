#!/usr/bin/env python3
"""Turns bench/results/*.json into plots (PNG) and summary.md, each figure with its machine and
command. Run by bench/run.sh; reads whichever results are present."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(results, name):
    path = os.path.join(results, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def machine_line(m):
    if not m:
        return "machine: unknown"
    return (f"machine: {m['cpu_model']}, {m['cores']} cores, {m['date']}, "
            f"commit {m['commit']}")


def engine(results, md, m):
    e = load(results, "engine.json")
    if not e:
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for search, style in (("greedy", "-"), ("beam4", "--")):
        rows = sorted((r for r in e["rows"] if r["search"] == search), key=lambda r: r["batch"])
        batches = [r["batch"] for r in rows]
        ax.plot(batches, [r["transerve_tokens_per_second"] for r in rows], "o" + style,
                color="tab:blue", label=f"transerve {search}")
        ax.plot(batches, [r["reference_tokens_per_second"] for r in rows], "s" + style,
                color="tab:gray", label=f"PyTorch reference {search}")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 8, 32], ["1", "8", "32"])
    ax.set_xlabel("batch size (sentences)")
    ax.set_ylabel("target tokens / s")
    ax.set_title("Engine throughput, opus-mt-en-de shape, float32, CPU")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, machine_line(m), fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(os.path.join(results, "engine_throughput.png"), dpi=120)
    plt.close(fig)
    md.append("## Engine throughput\n")
    rounds = max(r.get("rounds", 1) for r in e["rows"])
    md.append(f"{machine_line(m)}; command: `bench/engine_bench.sh {rounds}` (medians)\n")
    md.append("| batch | search | transerve tok/s | PyTorch tok/s | ratio |")
    md.append("|---|---|---|---|---|")
    for r in e["rows"]:
        md.append(f"| {r['batch']} | {r['search']} | {r['transerve_tokens_per_second']:.1f} | "
                  f"{r['reference_tokens_per_second']:.1f} | {r['ratio']:.2f}x |")
    md.append("")


SHAPES = {"small": "default-model shape (d_model 256, 3+3 layers)",
          "base": "opus-mt shape (d_model 512, 6+6 layers)"}


def server(results, md, m, shape):
    sweeps = {mode: load(results, f"server_{shape}_{mode}_sweep.json")
              for mode in ("continuous", "static")}
    if not all(sweeps.values()):
        return
    sat = {mode: load(results, f"server_{shape}_{mode}_saturation.json") for mode in sweeps}
    mem = {mode: load(results, f"server_{shape}_{mode}_memory.json") for mode in sweeps}
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    colors = {"continuous": "tab:blue", "static": "tab:orange"}
    for mode, sweep in sweeps.items():
        runs = sweep["runs"]
        x = [r["rate"] for r in runs]
        ax.plot(x, [r["latency_seconds"]["p50"] * 1e3 for r in runs], "o-", color=colors[mode],
                label=f"{mode} p50")
        ax.plot(x, [r["latency_seconds"]["p99"] * 1e3 for r in runs], "^--", color=colors[mode],
                label=f"{mode} p99")
    ax.set_yscale("log")
    ax.set_xlabel("offered load (requests / s, one sentence each; Poisson arrivals)")
    ax.set_ylabel("latency (ms, from scheduled send)")
    ax.set_title(f"Server, {SHAPES[shape]}: Poisson load", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, machine_line(m), fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(os.path.join(results, f"server_{shape}_latency_throughput.png"), dpi=120)
    plt.close(fig)

    md.append(f"## Server, {SHAPES[shape]}: static vs continuous batching\n")
    md.append(f"{machine_line(m)}; command: `bench/server_bench.sh {shape}`\n")
    md.append("Closed loop, 64 calls in flight (saturation):\n")
    md.append("| mode | requests/s | target tok/s | p50 ms | p99 ms |")
    md.append("|---|---|---|---|---|")
    for mode, s in sat.items():
        if s:
            md.append(f"| {mode} | {s['requests_per_second']:.2f} | "
                      f"{s['target_tokens_per_second']:.1f} | "
                      f"{s['latency_seconds']['p50'] * 1e3:.0f} | "
                      f"{s['latency_seconds']['p99'] * 1e3:.0f} |")
    md.append("")
    md.append("Open loop at fractions of continuous batching's saturation rate:\n")
    md.append("| mode | offered req/s | achieved req/s | p50 ms | p90 ms | p99 ms | errors |")
    md.append("|---|---|---|---|---|---|---|")
    for mode, sweep in sweeps.items():
        for r in sweep["runs"]:
            errors = sum(r["errors"].values())
            lat = r["latency_seconds"]
            md.append(f"| {mode} | {r['rate']:.2f} | {r['requests_per_second']:.2f} | "
                      f"{lat['p50'] * 1e3:.0f} | {lat['p90'] * 1e3:.0f} | "
                      f"{lat['p99'] * 1e3:.0f} | {errors} |")
    md.append("")
    md.append("Resident memory of the server process:\n")
    md.append("| mode | idle MB | peak under load MB |")
    md.append("|---|---|---|")
    for mode, x in mem.items():
        if x:
            md.append(f"| {mode} | {x['idle_rss_mb']:.0f} | {x['peak_rss_mb_under_load']:.0f} |")
    md.append("")


def loadgen(results, md, m):
    c = load(results, "loadgen_capacity.json")
    if not c:
        return
    md.append("## Load generator capacity\n")
    md.append(f"{machine_line(m)}; command: `bench/run.sh` (transerve-echo-server, "
              "transerve-loadgen --concurrency=64)\n")
    md.append(f"{c['requests_per_second']:.0f} requests/s against a server that only echoes, "
              f"p50 {c['latency_seconds']['p50'] * 1e3:.2f} ms.\n")


def main() -> int:
    results = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    m = load(results, "machine.json")
    md = ["# Benchmark results (generated by bench/run.sh)\n"]
    engine(results, md, m)
    for shape in SHAPES:
        server(results, md, m, shape)
    loadgen(results, md, m)
    with open(os.path.join(results, "summary.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
