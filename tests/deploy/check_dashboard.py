#!/usr/bin/python3
"""Checks the Grafana dashboard and its provisioning files against the server's metrics.

Run from anywhere; paths are relative to the repository root. Exits 1 listing every problem,
or prints one summary line. tests/deploy/test_check_dashboard.py proves each check can fail.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy/grafana/dashboards/transerve.json"
DATASOURCES = ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml"
PROVIDER = ROOT / "deploy/grafana/provisioning/dashboards/transerve.yml"
METRICS_CC = ROOT / "server/metrics.cc"
PROMETHEUS_YML = ROOT / "deploy/prometheus/prometheus.yml"
# Where docker-compose mounts deploy/grafana/dashboards inside the Grafana container.
MOUNT = "/var/lib/grafana/dashboards"
COMPOSE_CANDIDATES = ["docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml",
                      "deploy/docker-compose.yml", "deploy/docker-compose.yaml"]

GRID_COLUMNS = 24
PANEL_TYPES = {"timeseries", "stat", "gauge", "bargauge", "table", "heatmap"}
UNITS = {"reqps", "ops", "s", "ms", "bytes", "percentunit", "percent", "short", "none"}
# What the rest of the deployment (and people's bookmarks) rely on.
EXPECTED = {"uid": "transerve", "title": "transerve", "refresh": "5s", "schemaVersion": 39}
TOP_LEVEL_TYPES = {"uid": str, "title": str, "refresh": str, "schemaVersion": int,
                   "time": dict, "templating": dict, "panels": list}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
INSTANCE_FILTER = re.compile(r'instance\s*=~\s*"\$(?:instance|\{instance\})"')
# Grafana's built-in variables that promtool must see as plain durations or numbers.
BUILTIN_VARS = {"__rate_interval": "1m", "__interval": "1m", "__range": "1m",
                "__interval_ms": "60000", "__range_s": "60", "__range_ms": "60000"}
VAR_REF = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def registered_metrics(source):
    """Series names the server can export, from the "transerve_..." literals of metrics.cc.

    A histogram registers one name but exports only its _bucket/_sum/_count series; the kind
    is taken from the builder call in the same statement.
    """
    names = set()
    for m in re.finditer(r'"(transerve_[a-z0-9_]+)"', source):
        statement = source[max(source.rfind(";", 0, m.start()),
                               source.rfind("{", 0, m.start())) + 1:m.start()]
        if "hist(" in statement or "BuildHistogram" in statement:
            names.update(m.group(1) + s for s in HISTOGRAM_SUFFIXES)
        else:
            names.add(m.group(1))
    return names


def provisioned_uid(doc):
    """The uid of the one Prometheus datasource, or raises ValueError."""
    sources = [d for d in (doc or {}).get("datasources") or [] if d.get("type") == "prometheus"]
    if len(sources) != 1:
        raise ValueError(f"{DATASOURCES.relative_to(ROOT)}: expected one prometheus datasource, "
                         f"found {len(sources)}")
    uid = sources[0].get("uid")
    if not isinstance(uid, str) or not uid:
        raise ValueError(f"{DATASOURCES.relative_to(ROOT)}: the prometheus datasource has no uid")
    return uid


def check_provider(doc):
    providers = (doc or {}).get("providers") or []
    paths = [(p.get("options") or {}).get("path") for p in providers if p.get("type") == "file"]
    if MOUNT not in paths:
        return [f"{PROVIDER.relative_to(ROOT)}: no file provider loads {MOUNT} "
                f"(paths found: {paths})"]
    return []


def check_time_interval(datasources_doc, prometheus_doc):
    """Grafana's timeInterval, if set, must be the scrape interval, or rates come out empty."""
    sources = (datasources_doc or {}).get("datasources") or []
    wanted = ((prometheus_doc or {}).get("global") or {}).get("scrape_interval", "1m")
    return [f"{DATASOURCES.relative_to(ROOT)}: {d.get('name')} timeInterval {got!r} differs "
            f"from scrape_interval {wanted!r} in {PROMETHEUS_YML.relative_to(ROOT)}"
            for d in sources
            if (got := (d.get("jsonData") or {}).get("timeInterval")) not in (None, wanted)]


def compose_mounts(doc):
    """The volume specs of a compose file that mount the dashboards directory."""
    found = []
    for service in ((doc or {}).get("services") or {}).values():
        for vol in (service or {}).get("volumes") or []:
            text = vol if isinstance(vol, str) else f"{vol.get('source')}:{vol.get('target')}"
            if "grafana/dashboards" in text:
                found.append(text)
    return found


def check_compose(docs=None):
    """If a compose file mounts the dashboards, it must mount them where the provider looks.

    docs maps a file name to its parsed content; by default, the compose files found.
    """
    if docs is None:
        docs = {n: yaml.safe_load((ROOT / n).read_text())
                for n in COMPOSE_CANDIDATES if (ROOT / n).is_file()}
    errors, seen = [], False
    for name, doc in docs.items():
        for text in compose_mounts(doc):
            seen = True
            if text.split(":")[1:2] != [MOUNT]:
                errors.append(f"{name}: dashboards mounted as '{text}', "
                              f"but the provider reads {MOUNT}")
    return errors, seen


def substitute(expr, variables):
    """The expression with Grafana variables replaced, and the names it did not know."""
    unknown = []

    def repl(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name in BUILTIN_VARS:
            return BUILTIN_VARS[name]
        if name in variables:
            return ".*"
        unknown.append(name)
        return m.group(0)

    return VAR_REF.sub(repl, expr), unknown


def check_expr(where, expr, metrics):
    errors = []
    if not INSTANCE_FILTER.search(expr):
        errors.append(f'{where}: expr does not filter on instance=~"$instance"')
    for m in re.finditer(r"\btranserve_\w+", expr):
        name = m.group(0)
        if name not in metrics:
            errors.append(f"{where}: metric {name} is not a series of any name registered in "
                          f"{METRICS_CC.relative_to(ROOT)} (histograms export only "
                          f"{'/'.join(HISTOGRAM_SUFFIXES)})")
        selector = re.match(r"\s*\{([^}]*)\}", expr[m.end():])
        if not selector or not INSTANCE_FILTER.search(selector.group(1)):
            errors.append(f'{where}: selector of {name} lacks instance=~"$instance"')
    return errors


def check_dashboard(dash, uid, metrics):
    """Every schema problem of the dashboard, and the (where, expr) pairs for promtool."""
    errors, exprs = [], []
    if not isinstance(dash, dict):
        return ["dashboard: top level is not an object"], exprs
    for key, kind in TOP_LEVEL_TYPES.items():
        if not isinstance(dash.get(key), kind) or (kind is int and not is_int(dash.get(key))):
            errors.append(f"dashboard: '{key}' missing or not {kind.__name__}")
    for key, want in EXPECTED.items():
        if key in dash and dash[key] != want:
            errors.append(f"dashboard: '{key}' is {dash[key]!r}, expected {want!r}")
    if dash.get("time") != {"from": "now-15m", "to": "now"} and isinstance(dash.get("time"), dict):
        errors.append(f"dashboard: time range is {dash['time']}, expected now-15m to now")

    variables = {}
    for v in (dash.get("templating") or {}).get("list") or []:
        if isinstance(v, dict) and isinstance(v.get("name"), str):
            variables[v["name"]] = v
    inst = variables.get("instance")
    if inst is None:
        errors.append("templating: no variable 'instance'")
    else:
        query = inst.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if not isinstance(query, str) or not re.fullmatch(
                r"\s*label_values\(\s*transerve_model_info\s*,\s*instance\s*\)\s*", query):
            errors.append(f"templating: instance query is {query!r}, expected "
                          "label_values(transerve_model_info, instance)")
        if not (inst.get("multi") is True and inst.get("includeAll") is True):
            errors.append("templating: instance must be multi-value with 'All'")
        if (inst.get("datasource") or {}).get("uid") != uid:
            errors.append(f"templating: instance datasource uid is not '{uid}'")

    panels = dash.get("panels") if isinstance(dash.get("panels"), list) else []
    if not panels:
        errors.append("dashboard: no panels")
    ids, boxes = set(), []
    for i, p in enumerate(panels):
        if not isinstance(p, dict):
            errors.append(f"panels[{i}]: not an object")
            continue
        where = f"panel {p.get('id')!r} '{p.get('title')}'"
        if not is_int(p.get("id")):
            errors.append(f"{where}: id is not an integer")
        elif p["id"] in ids:
            errors.append(f"{where}: duplicate panel id {p['id']}")
        else:
            ids.add(p["id"])
        if not isinstance(p.get("title"), str) or not p["title"].strip():
            errors.append(f"{where}: empty title")
        if p.get("type") not in PANEL_TYPES:
            errors.append(f"{where}: unknown panel type {p.get('type')!r}")
        unit = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("unit")
        if unit not in UNITS:
            errors.append(f"{where}: unit {unit!r} is not one of {sorted(UNITS)}")

        g = p.get("gridPos")
        if not isinstance(g, dict) or not all(is_int(g.get(k)) for k in "xywh"):
            errors.append(f"{where}: gridPos needs integer x, y, w, h (got {g})")
        elif g["w"] <= 0 or g["h"] <= 0 or g["x"] < 0 or g["y"] < 0:
            errors.append(f"{where}: gridPos {g} has a negative position or an empty size")
        elif g["x"] + g["w"] > GRID_COLUMNS:
            errors.append(f"{where}: gridPos x+w = {g['x'] + g['w']} exceeds {GRID_COLUMNS}")
        else:
            for other, og in boxes:
                if (g["x"] < og["x"] + og["w"] and og["x"] < g["x"] + g["w"]
                        and g["y"] < og["y"] + og["h"] and og["y"] < g["y"] + g["h"]):
                    errors.append(f"{where}: gridPos {g} overlaps {other} {og}")
            boxes.append((where, g))

        ds = p.get("datasource")
        if not isinstance(ds, dict) or ds.get("type") != "prometheus" or ds.get("uid") != uid:
            errors.append(f"{where}: datasource {ds} is not the provisioned "
                          f"{{type: prometheus, uid: {uid}}}")
        targets = p.get("targets")
        if not isinstance(targets, list) or not targets:
            errors.append(f"{where}: no targets")
            continue
        refs = set()
        for t in targets:
            ref = t.get("refId") if isinstance(t, dict) else None
            twhere = f"{where} target {ref!r}"
            if not isinstance(ref, str) or not ref:
                errors.append(f"{twhere}: missing refId")
            elif ref in refs:
                errors.append(f"{twhere}: duplicate refId")
            refs.add(ref)
            tds = t.get("datasource") if isinstance(t, dict) else None
            if tds is not None and (tds.get("uid") != uid or tds.get("type") != "prometheus"):
                errors.append(f"{twhere}: datasource {tds} is not the provisioned one")
            expr = t.get("expr") if isinstance(t, dict) else None
            if not isinstance(expr, str) or not expr.strip():
                errors.append(f"{twhere}: empty expr")
                continue
            errors += check_expr(twhere, expr, metrics)
            plain, unknown = substitute(expr, variables)
            if unknown:
                errors.append(f"{twhere}: unknown Grafana variables {unknown}")
            exprs.append((twhere, plain))
    return errors, exprs


def check_promql(exprs, promtool):
    """Runs promtool over the expressions written as recording rules; its complaints, if any."""
    # Rule names carry the panel and target, so promtool's message says where the error is.
    rules = [{"record": "dashboard:" + re.sub(r"\W+", "_", w).strip("_"), "expr": e}
             for w, e in exprs]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dashboard_rules.yml"
        path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
        r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    if r.returncode == 0:
        return []
    return [f"promtool rejected the PromQL:\n{r.stdout}{r.stderr}".rstrip()]


def find_promtool():
    return shutil.which("promtool") or ("/usr/bin/promtool"
                                        if Path("/usr/bin/promtool").exists() else None)


def run_all(dash, datasources_doc, provider_doc, metrics_source, promtool):
    """All errors for the given inputs (the self-test feeds broken copies here)."""
    try:
        uid = provisioned_uid(datasources_doc)
    except ValueError as e:
        return [str(e)], 0
    metrics = registered_metrics(metrics_source)
    if not metrics:
        return [f"{METRICS_CC.relative_to(ROOT)}: no \"transerve_...\" names found"], 0
    errors, exprs = check_dashboard(dash, uid, metrics)
    errors += check_provider(provider_doc)
    if promtool and exprs:
        errors += check_promql(exprs, promtool)
    return errors, len(exprs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dashboard", type=Path, default=DASHBOARD,
                        help="dashboard JSON to check (default: the repository's)")
    args = parser.parse_args()
    promtool = find_promtool()
    if promtool is None:
        print("WARNING: promtool NOT FOUND - PromQL syntax is NOT checked "
              "(apt-get install prometheus)", file=sys.stderr)
    dash = json.loads(args.dashboard.read_text())
    errors, n_exprs = run_all(dash, yaml.safe_load(DATASOURCES.read_text()),
                              yaml.safe_load(PROVIDER.read_text()), METRICS_CC.read_text(),
                              promtool)
    compose_errors, compose_seen = check_compose()
    errors += compose_errors
    if PROMETHEUS_YML.is_file():
        errors += check_time_interval(yaml.safe_load(DATASOURCES.read_text()),
                                      yaml.safe_load(PROMETHEUS_YML.read_text()))
    if errors:
        print(f"{args.dashboard}: {len(errors)} problem(s):", file=sys.stderr)
        for e in errors:
            print(f"  - {e}", file=sys.stderr)
        return 1
    print(f"OK: {len(dash['panels'])} panels, {n_exprs} expressions "
          f"({'promtool-checked' if promtool else 'PromQL NOT checked'}), "
          f"provider path {MOUNT}"
          f"{', compose mount checked' if compose_seen else ' (no compose mount found to check)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
