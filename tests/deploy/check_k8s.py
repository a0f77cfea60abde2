#!/usr/bin/python3
"""Checks the Kubernetes manifests under deploy/k8s: required fields and cross-references.

Exits 1 listing every problem, or prints one summary line. tests/deploy/test_check_k8s.py
proves each check can fail.
"""
import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy/k8s"
SERVER_MAIN = ROOT / "server/server_main.cc"
GPU_FILE = "deployment-gpu.yaml"
SHUTDOWN_MARGIN_S = 5  # the server's final Shutdown (1s) plus process exit, rounded up
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "P": 1e15, "E": 1e18}
DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def quantity(value):
    """A Kubernetes resource quantity ("500m", "1Gi", 2, "1e9") as a float."""
    m = re.fullmatch(r"([0-9.]+(?:[eE][-+]?[0-9]+)?)([a-zA-Z]*)", str(value).strip())
    if not m or m.group(2) not in {**BINARY, **DECIMAL}:
        raise ValueError(f"bad quantity {value!r}")
    return float(m.group(1)) * {**BINARY, **DECIMAL}[m.group(2)]


def duration_s(text):
    """An absl duration ("30s", "1m30s", "500ms") in seconds."""
    parts = re.findall(r"([0-9.]+)(ns|us|ms|s|m|h)", text)
    if not parts or "".join(a + b for a, b in parts) != text.strip():
        raise ValueError(f"bad duration {text!r}")
    return sum(float(a) * DURATION_UNITS[b] for a, b in parts)


def server_flags(source):
    """Flag name -> default expression, from the ABSL_FLAG definitions."""
    return {m.group(1): m.group(2).strip() for m in
            re.finditer(r"ABSL_FLAG\(\s*[\w:<>, ]+?,\s*(\w+)\s*,\s*([^,]+(?:\([^)]*\))?)",
                        source)}


def load(directory=K8S):
    """(relative path, document) for every YAML document under the directory."""
    docs = []
    for path in sorted(directory.rglob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((str(path.relative_to(directory)), doc))
    return docs


def name_of(doc):
    return ((doc.get("metadata") or {}).get("name")) if isinstance(doc, dict) else None


def matches(selector, labels):
    return bool(selector) and all((labels or {}).get(k) == v for k, v in selector.items())


class Checker:
    def __init__(self, docs, flags, files):
        self.docs, self.flags, self.files, self.errors = docs, flags, files, []

    def err(self, where, message):
        self.errors.append(f"{where}: {message}")

    def of_kind(self, kind):
        return [(f, d) for f, d in self.docs if isinstance(d, dict) and d.get("kind") == kind]

    def run(self):
        for f, d in self.docs:
            self.check_object(f, d)
        for f, d in self.of_kind("Deployment"):
            self.check_deployment(f"{f} Deployment/{name_of(d)}", d, gpu=GPU_FILE in f)
        for f, d in self.of_kind("Service"):
            self.check_service(f"{f} Service/{name_of(d)}", d)
        for f, d in self.of_kind("Ingress"):
            self.check_ingress(f"{f} Ingress/{name_of(d)}", d)
        for f, d in self.of_kind("HorizontalPodAutoscaler"):
            self.check_hpa(f"{f} HPA/{name_of(d)}", d)
        for f, d in self.of_kind("ServiceMonitor"):
            self.check_service_monitor(f"{f} ServiceMonitor/{name_of(d)}", d)
        self.check_kustomization()
        if not any(GPU_FILE in f for f, _ in self.of_kind("Deployment")):
            self.err(GPU_FILE, "no GPU Deployment variant found")
        if not any((d.get("spec") or {}).get("clusterIP") == "None"
                   for _, d in self.of_kind("Service")):
            self.err("deploy/k8s", "no headless Service (clusterIP: None) for client balancing")
        return self.errors

    def check_object(self, f, d):
        if not isinstance(d, dict):
            return self.err(f, "document is not a mapping")
        for key in ("apiVersion", "kind"):
            if not isinstance(d.get(key), str) or not d[key]:
                self.err(f, f"object without {key}")
        if d.get("kind") != "Kustomization" and not name_of(d):
            self.err(f, f"{d.get('kind')} without metadata.name")

    # Deployments -----------------------------------------------------------------------------

    def container(self, d):
        containers = (((d.get("spec") or {}).get("template") or {}).get("spec") or {}) \
            .get("containers") or []
        return containers[0] if containers else {}

    def pod_labels(self, d):
        return (((d.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")

    def check_deployment(self, w, d, gpu):
        spec = d.get("spec") or {}
        pod = (spec.get("template") or {}).get("spec") or {}
        selector = (spec.get("selector") or {}).get("matchLabels")
        if not matches(selector, self.pod_labels(d)):
            self.err(w, f"selector {selector} does not match template labels {self.pod_labels(d)}")
        c = self.container(d)
        if not c:
            return self.err(w, "no container")
        env = {}
        for e in c.get("env") or []:
            env[e.get("name")] = e.get("value")
            if "value" in e and not isinstance(e["value"], str):
                self.err(w, f"env {e.get('name')} value {e['value']!r} must be a string")
            name = e.get("name") or ""
            # The server reads TRANSERVE_ + the flag name in capitals, nothing looser.
            if name.startswith("TRANSERVE_") and name not in {
                    "TRANSERVE_" + f.upper() for f in self.flags}:
                self.err(w, f"env {name} names no flag of {SERVER_MAIN.relative_to(ROOT)}")
        ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
        for port_name, flag in (("grpc", "port"), ("metrics", "metrics_port"),
                                ("http", "http_port")):
            want = env.get(f"TRANSERVE_{flag.upper()}") or self.flags.get(flag, "")
            want = int(want) if want.isdigit() else want
            if ports.get(port_name) != want:
                self.err(w, f"container port '{port_name}' is {ports.get(port_name)}, "
                            f"but the server listens on {want} (--{flag})")

        for probe in PROBES:
            p = c.get(probe)
            if not isinstance(p, dict):
                self.err(w, f"no {probe}")
            elif probe == "readinessProbe":
                # GET /readyz on the HTTP port: gRPC health's SERVING, seen through HTTP.
                get = p.get("httpGet") or {}
                if get.get("path") != "/readyz" or get.get("port") not in ("http", ports.get("http")):
                    self.err(w, f"{probe} is not GET /readyz on the http port {ports.get('http')}")
            elif (p.get("grpc") or {}).get("port") != ports.get("grpc"):
                self.err(w, f"{probe} is not a grpc probe on the grpc port {ports.get('grpc')}")

        command = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}) \
            .get("command") or []
        if (len(command) != 2 or command[0] not in ("sleep", "/bin/sleep")
                or not re.fullmatch(r"\d+(\.\d+)?", str(command[1]))):
            self.err(w, f"preStop is not an exec sleep of some seconds (got {command})")
            sleep_s = 0.0
        else:
            sleep_s = float(command[1])
        try:
            drain_s = duration_s(env.get("TRANSERVE_DRAIN_TIMEOUT") or
                                 re.sub(r"absl::Seconds\((\d+)\)", r"\1s",
                                        self.flags.get("drain_timeout", "")))
        except ValueError as e:
            self.err(w, f"TRANSERVE_DRAIN_TIMEOUT: {e}")
            drain_s = 0.0
        grace = pod.get("terminationGracePeriodSeconds")
        need = sleep_s + drain_s + SHUTDOWN_MARGIN_S
        if not isinstance(grace, int) or grace < need:
            self.err(w, f"terminationGracePeriodSeconds {grace} < preStop {sleep_s:g}s + drain "
                        f"{drain_s:g}s + margin {SHUTDOWN_MARGIN_S}s = {need:g}s")

        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        for r in ("cpu", "memory"):
            if r not in requests or r not in limits:
                self.err(w, f"resources need both a request and a limit for {r}")
                continue
            try:
                if quantity(requests[r]) > quantity(limits[r]):
                    self.err(w, f"{r} request {requests[r]} exceeds its limit {limits[r]}")
            except ValueError as e:
                self.err(w, f"{r}: {e}")
        threads = env.get("TRANSERVE_NUM_THREADS")
        try:
            if threads is not None and "cpu" in limits and int(threads) != quantity(limits["cpu"]):
                self.err(w, f"TRANSERVE_NUM_THREADS={threads} differs from the cpu limit "
                            f"{limits['cpu']}")
        except ValueError as e:
            self.err(w, f"TRANSERVE_NUM_THREADS / cpu limit: {e}")

        ann = ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        if ann.get("prometheus.io/scrape") != "true":
            self.err(w, 'pod annotation prometheus.io/scrape is not "true"')
        if str(ann.get("prometheus.io/port")) != str(ports.get("metrics")):
            self.err(w, f"prometheus.io/port {ann.get('prometheus.io/port')!r} is not the metrics "
                        f"container port {ports.get('metrics')}")
        if ann.get("prometheus.io/path") != "/metrics":
            self.err(w, "prometheus.io/path is not /metrics")

        psc, csc = pod.get("securityContext") or {}, c.get("securityContext") or {}
        if not (psc.get("runAsNonRoot") or csc.get("runAsNonRoot")):
            self.err(w, "runAsNonRoot is not set")
        if csc.get("runAsUser", psc.get("runAsUser")) != 10001:
            self.err(w, "runAsUser is not 10001 (the image's user)")
        if csc.get("readOnlyRootFilesystem") is not True:
            self.err(w, "readOnlyRootFilesystem is not true")
        if csc.get("allowPrivilegeEscalation") is not False:
            self.err(w, "allowPrivilegeEscalation is not false")
        if "ALL" not in ((csc.get("capabilities") or {}).get("drop") or []):
            self.err(w, "capabilities do not drop ALL")

        if gpu:
            if str(limits.get("nvidia.com/gpu", 0)) not in {str(n) for n in range(1, 9)}:
                self.err(w, "GPU variant does not request nvidia.com/gpu in its limits")
            if env.get("TRANSERVE_DEVICE") != "cuda":
                self.err(w, "GPU variant does not set TRANSERVE_DEVICE=cuda")
            if not any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations") or []):
                self.err(w, "GPU variant does not tolerate the nvidia.com/gpu taint")
        elif "nvidia.com/gpu" in limits or env.get("TRANSERVE_DEVICE") == "cuda":
            self.err(w, f"asks for a GPU outside {GPU_FILE}")

    # Services and their users ----------------------------------------------------------------

    def check_service(self, w, d):
        spec = d.get("spec") or {}
        selector = spec.get("selector")
        targets = [x for _, x in self.of_kind("Deployment")
                   if matches(selector, self.pod_labels(x))]
        if not targets:
            return self.err(w, f"selector {selector} matches no Deployment's pod labels")
        for p in spec.get("ports") or []:
            t = p.get("targetPort", p.get("port"))
            for x in targets:
                cports = self.container(x).get("ports") or []
                if not any(t in (cp.get("name"), cp.get("containerPort")) for cp in cports):
                    self.err(w, f"port {p.get('name')}: targetPort {t!r} is no container port of "
                                f"Deployment/{name_of(x)}")
            if p.get("name") == "grpc" and p.get("appProtocol") != "grpc":
                self.err(w, "port grpc lacks appProtocol: grpc")

    def service_port(self, w, name, port):
        services = [d for _, d in self.of_kind("Service") if name_of(d) == name]
        if not services:
            return self.err(w, f"refers to Service {name!r}, which does not exist")
        ports = (services[0].get("spec") or {}).get("ports") or []
        if not any(v in (p.get("name"), p.get("port")) for p in ports for v in port.values()):
            self.err(w, f"port {port} is not a port of Service {name!r}")

    def check_ingress(self, w, d):
        # The backend protocol follows the Service port: GRPC to grpc, HTTP to http.
        ann = (d.get("metadata") or {}).get("annotations") or {}
        protocol = ann.get("nginx.ingress.kubernetes.io/backend-protocol", "HTTP")
        for rule in (d.get("spec") or {}).get("rules") or []:
            for path in ((rule.get("http") or {}).get("paths")) or []:
                svc = (path.get("backend") or {}).get("service") or {}
                port = svc.get("port") or {}
                self.service_port(w, svc.get("name"), port)
                want = {"grpc": "GRPC", 50051: "GRPC", "http": "HTTP", 5000: "HTTP"}.get(
                    port.get("name", port.get("number")))
                if want and protocol != want:
                    self.err(w, f"annotation nginx.ingress.kubernetes.io/backend-protocol is "
                                f"{protocol!r}, not \"{want}\" for port {port}")
                if want == "HTTP" and ann.get("nginx.ingress.kubernetes.io/proxy-buffering") != "off":
                    self.err(w, "HTTP ingress buffers answers: server-sent events would stall "
                                "(proxy-buffering: \"off\")")

    def check_hpa(self, w, d):
        if d.get("apiVersion") != "autoscaling/v2":
            self.err(w, f"apiVersion {d.get('apiVersion')} is not autoscaling/v2")
        spec = d.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        if not any(name_of(x) == ref.get("name") for _, x in self.of_kind(ref.get("kind"))):
            self.err(w, f"scaleTargetRef {ref.get('kind')}/{ref.get('name')} does not exist")
        lo, hi = spec.get("minReplicas", 1), spec.get("maxReplicas")
        if not (isinstance(hi, int) and isinstance(lo, int) and 1 <= lo <= hi):
            self.err(w, f"replica bounds min {lo} / max {hi} are inconsistent")
        served = self.adapter_metrics()
        for m in spec.get("metrics") or []:
            if m.get("type") == "Pods":
                name = ((m.get("pods") or {}).get("metric") or {}).get("name")
                if name not in served:
                    self.err(w, f"Pods metric {name!r} is served by no prometheus-adapter rule "
                                f"(rules serve {sorted(served)})")

    def adapter_metrics(self):
        """Metric names the prometheus-adapter rules ConfigMap(s) expose."""
        names = set()
        for _, d in self.of_kind("ConfigMap"):
            text = (d.get("data") or {}).get("config.yaml")
            for rule in ((yaml.safe_load(text) or {}).get("rules") or []) if text else []:
                series = re.match(r"\s*(\w+)", rule.get("seriesQuery", ""))
                naming = rule.get("name") or {}
                if series:
                    names.add(re.sub(naming.get("matches", "^(.*)$"),
                                     naming.get("as", "").replace("${", "\\g<").replace("}", ">")
                                     or series.group(1), series.group(1)))
        return names

    def check_service_monitor(self, w, d):
        spec = d.get("spec") or {}
        selector = (spec.get("selector") or {}).get("matchLabels")
        services = [x for _, x in self.of_kind("Service")
                    if matches(selector, (x.get("metadata") or {}).get("labels"))]
        for e in spec.get("endpoints") or []:
            if not any(p.get("name") == e.get("port") for s in services
                       for p in (s.get("spec") or {}).get("ports") or []):
                self.err(w, f"endpoint port {e.get('port')!r} is on no Service it selects "
                            f"({selector})")

    def check_kustomization(self):
        ks = [(f, d) for f, d in self.of_kind("Kustomization") if f == "kustomization.yaml"]
        if not ks:
            return self.err("kustomization.yaml", "missing")
        listed = set()
        for r in ks[0][1].get("resources") or []:
            if r not in self.files:
                self.err("kustomization.yaml", f"resource {r} does not exist")
            listed.add(r)
        seen = {}
        for f, d in self.docs:
            if f not in listed:
                continue
            if "monitoring.coreos.com" in str(d.get("apiVersion")):
                self.err("kustomization.yaml", f"lists {f}, which needs the Prometheus Operator")
            key = (d.get("kind"), name_of(d))
            if key in seen:
                self.err("kustomization.yaml", f"{key[0]}/{key[1]} is in both {seen[key]} and {f}")
            seen[key] = f
        if GPU_FILE in listed:
            self.err("kustomization.yaml", f"lists {GPU_FILE}, which is the GPU variant")


def check(docs, flags, files):
    return Checker(docs, flags, files).run()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=K8S,
                        help="manifest directory to check (default: the repository's)")
    args = parser.parse_args()
    docs = load(args.dir)
    files = {str(p.relative_to(args.dir)) for p in args.dir.rglob("*") if p.is_file()}
    flags = server_flags(SERVER_MAIN.read_text())
    if not flags:
        print(f"{SERVER_MAIN.relative_to(ROOT)}: no ABSL_FLAG found", file=sys.stderr)
        return 1
    errors = check(docs, flags, files)
    if errors:
        print(f"{args.dir}: {len(errors)} problem(s):", file=sys.stderr)
        for e in errors:
            print(f"  - {e}", file=sys.stderr)
        return 1
    kinds = sorted({d["kind"] for _, d in docs})
    print(f"OK: {len(docs)} objects in {len({f for f, _ in docs})} files "
          f"({', '.join(kinds)}), {len(flags)} server flags known")
    return 0


if __name__ == "__main__":
    sys.exit(main())
