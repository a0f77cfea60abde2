#!/usr/bin/python3
"""Checks deploy/docker-compose.yml and the Dockerfile without a Docker engine.

Debian's docker-compose (v1.29) parses and resolves the compose file (`config`, every profile);
then the resolved services are cross-checked against the files they mount, the nginx template,
the Prometheus targets, the server's flags and the Dockerfile's stages. The Dockerfile is read
as text: stages, COPY sources, the scripts it runs, the user, ports and health check.
Exits 1 listing every problem, or prints one summary line. `--self-test` breaks copies in
memory and asserts each is caught.
"""
import argparse
import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_k8s import duration_s, server_flags  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"
REPLICAS = ("transerve-a", "transerve-b")
GRPC_PORT, METRICS_PORT, HTTP_PORT = "50051", "9464", "5000"
SHUTDOWN_MARGIN_S = 5


def resolve_compose():
    """The compose file as docker-compose resolves it, every profile enabled."""
    exe = shutil.which("docker-compose")
    if exe is None:
        sys.exit("check_compose: docker-compose is not installed (scripts/setup.sh installs it)")
    out = subprocess.run([exe, "-f", str(COMPOSE), "--profile", "loadgen", "--profile", "gpu",
                          "config"], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        sys.exit(f"check_compose: docker-compose config failed:\n{out.stderr}")
    return yaml.safe_load(out.stdout)


def dockerfile_stages(text):
    return re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", text, flags=re.M | re.I)


def dockerignored(text):
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def check_compose(config, files, flags):
    """Problems in the resolved compose config. `files`: repository-relative paths that exist."""
    problems = []
    services = config.get("services", {})
    for name in (*REPLICAS, "nginx", "prometheus", "grafana", "loadgen", "transerve-gpu"):
        if name not in services:
            problems.append(f"service {name} is missing")
    if problems:
        return problems

    # Every mounted host path exists in the repository; every named volume is declared.
    declared = config.get("volumes") or {}
    for name, svc in services.items():
        for volume in svc.get("volumes", []):
            source = str(volume).split(":")[0] if isinstance(volume, str) else volume["source"]
            named = (volume.get("type") == "volume" if isinstance(volume, dict)
                     else "/" not in source and not source.startswith("."))
            if named:
                if source not in declared:
                    problems.append(f"{name}: mounts volume {source}, which is not declared")
                continue
            rel = Path(source).resolve().relative_to(ROOT) if source.startswith("/") else source
            if str(rel) not in files:
                problems.append(f"{name}: mounts {source}, which is not in the repository")

    # Replicas: server flags, drain time within the stop grace period, the image's ports.
    for name in (*REPLICAS, "transerve-gpu"):
        svc = services[name]
        env = svc.get("environment", {})
        for var in env:
            if var.startswith("TRANSERVE_") and var[len("TRANSERVE_"):].lower() not in flags:
                problems.append(f"{name}: {var} names no transerve-server flag")
        drain = duration_s(env.get("TRANSERVE_DRAIN_TIMEOUT", "30s"))
        grace = duration_s(str(svc.get("stop_grace_period", "10s")))
        if drain + SHUTDOWN_MARGIN_S > grace:
            problems.append(f"{name}: stop_grace_period {grace:g}s < drain {drain:g}s + "
                            f"{SHUTDOWN_MARGIN_S}s: Docker would kill it mid-drain")
        exposed = {str(p) for p in svc.get("expose", [])}
        if not {GRPC_PORT, METRICS_PORT, HTTP_PORT} <= exposed:
            problems.append(f"{name}: exposes {sorted(exposed)}, not {GRPC_PORT}, "
                            f"{METRICS_PORT} and {HTTP_PORT}")
        if str(env.get("TRANSERVE_HTTP_PORT", HTTP_PORT)) != HTTP_PORT:
            problems.append(f"{name}: TRANSERVE_HTTP_PORT is {env['TRANSERVE_HTTP_PORT']}, "
                            f"not the exposed {HTTP_PORT}")
        if svc.get("build", {}).get("target") not in ("runtime", "runtime-cuda"):
            problems.append(f"{name}: builds no runtime stage of the Dockerfile")
    gpu = services["transerve-gpu"]
    devices = gpu.get("deploy", {}).get("resources", {}).get("reservations", {}).get(
        "devices", [])
    if not any("gpu" in d.get("capabilities", []) for d in devices):
        problems.append("transerve-gpu: reserves no GPU device")
    if gpu.get("environment", {}).get("TRANSERVE_DEVICE") != "cuda":
        problems.append("transerve-gpu: TRANSERVE_DEVICE is not cuda")
    if "gpu" not in gpu.get("profiles", []):
        problems.append("transerve-gpu: not under the gpu profile")
    if "loadgen" not in services["loadgen"].get("profiles", []):
        problems.append("loadgen: not under the loadgen profile")

    # nginx: every template variable is set, and the upstreams are the replicas' gRPC ports.
    nginx = services["nginx"]
    env = nginx.get("environment", {})
    template = (DEPLOY / "nginx/templates/transerve.conf.template").read_text()
    for var in sorted(set(re.findall(r"\$\{(\w+)\}", template))):
        if var not in env:
            problems.append(f"nginx: the template uses ${{{var}}}, which is not set")
    for prefix, port in (("TRANSERVE_UPSTREAM_", GRPC_PORT), ("TRANSERVE_HTTP_UPSTREAM_", HTTP_PORT)):
        upstreams = sorted(v for k, v in env.items() if k.startswith(prefix))
        want = sorted(f"{r}:{port}" for r in REPLICAS)
        if upstreams != want:
            problems.append(f"nginx: {prefix}* upstreams {upstreams}, want {want}")
    published = [str(p.get("target")) for p in nginx.get("ports", [])]
    for listen in ("NGINX_LISTEN", "NGINX_HTTP_LISTEN"):
        if str(env.get(listen)) not in published:
            problems.append(f"nginx: {listen} is {env.get(listen)}, it publishes {published}")
    # The image renders only the variables its filter names.
    pattern = str(env.get("NGINX_ENVSUBST_FILTER", "")).replace("$$", "$")
    for var in sorted(set(re.findall(r"\$\{(\w+)\}", template))):
        if not pattern or not re.search(pattern, var):
            problems.append(f"nginx: NGINX_ENVSUBST_FILTER leaves ${{{var}}} unrendered")
    depends = nginx.get("depends_on") or {}
    if not isinstance(depends, dict):  # the short form waits for nothing
        depends = {}
    for r in REPLICAS:
        if (depends.get(r) or {}).get("condition") != "service_healthy":
            problems.append(f"nginx: does not wait for {r} to be healthy")

    # Prometheus scrapes exactly the replicas' metrics ports.
    targets = yaml.safe_load((DEPLOY / "prometheus/targets/compose.yml").read_text())
    scraped = sorted(t for group in targets for t in group["targets"])
    want = sorted(f"{r}:{METRICS_PORT}" for r in REPLICAS)
    if scraped != want:
        problems.append(f"prometheus: targets {scraped}, want {want}")
    return problems


def check_dockerfile(text, ignore, files):
    problems = []
    stages = dockerfile_stages(text)
    for stage in ("build", "build-cuda", "runtime-cuda", "runtime"):
        if stage not in stages:
            problems.append(f"Dockerfile: no stage {stage}")
    if stages and stages[-1] != "runtime":
        problems.append("Dockerfile: the CPU runtime stage is not last (the default target)")
    for src in re.findall(r"^COPY\s+(?!--from)(\S+)\s", text, flags=re.M):
        if src != "." and src not in files:
            problems.append(f"Dockerfile: COPY {src}: not in the repository")
        if any(src == pattern or src.startswith(pattern + "/") for pattern in ignore):
            problems.append(f"Dockerfile: COPY {src}: excluded by .dockerignore")
    for script in sorted(set(re.findall(r"(?:\./)?((?:scripts|deploy/docker)/[\w.-]+\.sh)",
                                        text))):
        path = ROOT / script
        if not path.is_file() or not path.stat().st_mode & 0o111:
            problems.append(f"Dockerfile: runs {script}, which is missing or not executable")
    if "setup.sh --build-only" not in text:
        problems.append("Dockerfile: the build stages do not run scripts/setup.sh")
    for stage_text in re.split(r"^FROM ", text, flags=re.M)[1:]:
        name = stage_text.split("\n", 1)[0].split()[-1]
        if not name.startswith("runtime"):
            continue
        if not re.search(r"^USER\s+[1-9]\d*", stage_text, flags=re.M):
            problems.append(f"Dockerfile: {name} does not run as a non-root user id")
        if not re.search(r"^HEALTHCHECK .*\n?.*--health", stage_text, flags=re.M):
            problems.append(f"Dockerfile: {name} has no HEALTHCHECK through --health")
        exposed = set(" ".join(re.findall(r"^EXPOSE\s+(.*)$", stage_text, flags=re.M)).split())
        if not {GRPC_PORT, METRICS_PORT, HTTP_PORT} <= exposed:
            problems.append(f"Dockerfile: {name} does not expose {GRPC_PORT}, {METRICS_PORT} "
                            f"and {HTTP_PORT}")
    for pattern in ("models", "deploy", "scripts", "server", "model", "client", "proto"):
        if pattern in ignore:
            problems.append(f".dockerignore excludes {pattern}/, which the build needs")
    return problems


def repository_files():
    files = set()
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if rel.parts and rel.parts[0] in (".git", "build") or rel.parts[0].startswith("build-"):
            continue
        files.add(str(rel))
    return files


def self_test(config, dockerfile, ignore, files, flags):
    """Each mutation must be reported; returns the number that were not."""
    def broken_compose(mutate):
        c = copy.deepcopy(config)
        mutate(c["services"])
        return check_compose(c, files, flags)

    def broken_dockerfile(old, new):
        assert old in dockerfile, old
        return check_dockerfile(dockerfile.replace(old, new, 1), ignore, files)

    cases = {
        "misspelt flag": broken_compose(
            lambda s: s["transerve-a"]["environment"].update(TRANSERVE_NUM_THREAD="2")),
        "grace < drain": broken_compose(
            lambda s: s["transerve-b"].update(stop_grace_period="10s")),
        "upstream port": broken_compose(
            lambda s: s["nginx"]["environment"].update(TRANSERVE_UPSTREAM_2="transerve-b:9464")),
        "http upstream port": broken_compose(
            lambda s: s["nginx"]["environment"].update(TRANSERVE_HTTP_UPSTREAM_1="transerve-a:50051")),
        "http port not exposed": broken_compose(
            lambda s: s["transerve-a"].update(expose=[GRPC_PORT, METRICS_PORT])),
        "http listen unpublished": broken_compose(
            lambda s: s["nginx"]["environment"].update(NGINX_HTTP_LISTEN="9999")),
        "envsubst filter": broken_compose(
            lambda s: s["nginx"]["environment"].update(NGINX_ENVSUBST_FILTER="^(NGINX_LISTEN)$")),
        "template var unset": broken_compose(
            lambda s: s["nginx"]["environment"].pop("NGINX_LISTEN")),
        "missing mount": broken_compose(
            lambda s: s["grafana"]["volumes"].append(f"{DEPLOY}/nope:/x:ro")),
        "undeclared volume": broken_compose(
            lambda s: s["grafana"]["volumes"].append("nowhere:/x")),
        "gpu without device": broken_compose(lambda s: s["transerve-gpu"].pop("deploy")),
        "no health wait": broken_compose(lambda s: s["nginx"].update(depends_on={})),
        "root user": broken_dockerfile("USER 10001:10001", "USER root"),
        "http not exposed": broken_dockerfile("EXPOSE 50051 9464 5000", "EXPOSE 50051 9464"),
        "no healthcheck": broken_dockerfile("--health --timeout", "--list_models --timeout"),
        "missing COPY": broken_dockerfile("COPY deploy/docker/install-runtime.sh",
                                          "COPY deploy/docker/nope.sh"),
        "runtime not last": check_dockerfile(
            dockerfile.replace("AS runtime\n", "AS runtime-cpu\n"), ignore, files),
        "ignored models": check_dockerfile(dockerfile, ignore + ["models"], files),
    }
    missed = [name for name, problems in cases.items() if not problems]
    for name, problems in cases.items():
        print(f"self-test {name}: {'caught: ' + problems[0] if problems else 'NOT CAUGHT'}")
    return len(missed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    config = resolve_compose()
    files = repository_files()
    flags = server_flags((ROOT / "server/server_main.cc").read_text())
    dockerfile = (ROOT / "Dockerfile").read_text()
    ignore = dockerignored((ROOT / ".dockerignore").read_text())
    if args.self_test:
        missed = self_test(config, dockerfile, ignore, files, flags)
        if missed:
            print(f"check_compose self-test: {missed} broken copies passed", file=sys.stderr)
            return 1
        print("check_compose self-test: every broken copy was rejected")
        return 0
    problems = check_compose(config, files, flags) + check_dockerfile(dockerfile, ignore, files)
    if problems:
        print("\n".join(f"check_compose: {p}" for p in problems), file=sys.stderr)
        return 1
    print(f"check_compose: OK: {len(config['services'])} services (docker-compose config, "
          f"every profile), Dockerfile stages {', '.join(dockerfile_stages(dockerfile))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
