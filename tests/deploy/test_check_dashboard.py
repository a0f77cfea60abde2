#!/usr/bin/python3
"""Proves check_dashboard.py rejects broken dashboards: each test breaks one thing in a copy."""
import copy
import json
import sys
import unittest
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_dashboard as cd  # noqa: E402

DASH = json.loads(cd.DASHBOARD.read_text())
DATASOURCES = yaml.safe_load(cd.DATASOURCES.read_text())
PROVIDER = yaml.safe_load(cd.PROVIDER.read_text())
METRICS = cd.METRICS_CC.read_text()
PROMTOOL = cd.find_promtool()


class CheckDashboardTest(unittest.TestCase):
    def errors(self, dash=None, datasources=None, provider=None, promtool=None):
        errs, _ = cd.run_all(dash or DASH, datasources or DATASOURCES, provider or PROVIDER,
                             METRICS, promtool)
        return errs

    def assert_rejected(self, errs, needle):
        self.assertTrue(any(needle in e for e in errs),
                        f"expected an error containing {needle!r}, got {errs}")

    def broken(self):
        return copy.deepcopy(DASH)

    def expr_of(self, dash, panel_index=0):
        return dash["panels"][panel_index]["targets"][0]

    def test_real_dashboard_passes(self):
        self.assertEqual(self.errors(promtool=PROMTOOL), [])

    def test_overlapping_panels(self):
        d = self.broken()
        first = d["panels"][0]["gridPos"]
        d["panels"][1]["gridPos"] = dict(first, x=first["x"] + 1)
        self.assert_rejected(self.errors(d), "overlaps")

    def test_panel_wider_than_grid(self):
        d = self.broken()
        d["panels"][0]["gridPos"]["x"] = 20
        d["panels"][0]["gridPos"]["w"] = 6
        self.assert_rejected(self.errors(d), "exceeds 24")

    def test_non_integer_grid(self):
        d = self.broken()
        d["panels"][0]["gridPos"]["h"] = "4"
        self.assert_rejected(self.errors(d), "integer x, y, w, h")

    def test_unknown_metric(self):
        d = self.broken()
        t = self.expr_of(d, 4)
        t["expr"] = t["expr"].replace("transerve_requests_total", "transerve_requests_count")
        self.assert_rejected(self.errors(d), "transerve_requests_count")

    def test_histogram_base_name_is_not_a_series(self):
        d = self.broken()
        t = self.expr_of(d, 5)
        t["expr"] = t["expr"].replace("_seconds_bucket", "_seconds")
        self.assert_rejected(self.errors(d), "transerve_request_duration_seconds is not a series")

    @unittest.skipIf(PROMTOOL is None, "promtool NOT installed: PromQL rejection NOT tested")
    def test_bad_promql(self):
        d = self.broken()
        t = self.expr_of(d, 4)
        t["expr"] = t["expr"].replace("sum by (instance, code) (", "sum by (instance, code) ((")
        self.assert_rejected(self.errors(d, promtool=PROMTOOL), "promtool rejected")

    @unittest.skipIf(PROMTOOL is None, "promtool NOT installed: PromQL rejection NOT tested")
    def test_bad_range_duration(self):
        d = self.broken()
        t = self.expr_of(d, 4)
        t["expr"] = t["expr"].replace("[$__rate_interval]", "[$__rate_interval:]x")
        self.assert_rejected(self.errors(d, promtool=PROMTOOL), "promtool rejected")

    def test_wrong_datasource_uid(self):
        d = self.broken()
        d["panels"][2]["datasource"] = {"type": "prometheus", "uid": "some-other"}
        self.assert_rejected(self.errors(d), "is not the provisioned")

    def test_uid_comes_from_provisioning(self):
        ds = copy.deepcopy(DATASOURCES)
        ds["datasources"][0]["uid"] = "renamed"
        self.assert_rejected(self.errors(datasources=ds), "is not the provisioned")

    def test_duplicate_panel_id(self):
        d = self.broken()
        d["panels"][1]["id"] = d["panels"][0]["id"]
        self.assert_rejected(self.errors(d), "duplicate panel id")

    def test_unknown_panel_type(self):
        d = self.broken()
        d["panels"][0]["type"] = "graph-old"
        self.assert_rejected(self.errors(d), "unknown panel type")

    def test_duplicate_ref_id(self):
        d = self.broken()
        p = next(p for p in d["panels"] if len(p["targets"]) > 1)
        p["targets"][1]["refId"] = p["targets"][0]["refId"]
        self.assert_rejected(self.errors(d), "duplicate refId")

    def test_empty_expr(self):
        d = self.broken()
        self.expr_of(d, 3)["expr"] = "  "
        self.assert_rejected(self.errors(d), "empty expr")

    def test_no_targets(self):
        d = self.broken()
        d["panels"][3]["targets"] = []
        self.assert_rejected(self.errors(d), "no targets")

    def test_missing_instance_filter(self):
        d = self.broken()
        t = self.expr_of(d, 6)
        t["expr"] = t["expr"].replace('{instance=~"$instance"}', "")
        self.assert_rejected(self.errors(d), "instance")

    def test_one_selector_without_filter(self):
        d = self.broken()
        t = self.expr_of(d, 2)  # the error ratio has two selectors; unfilter only the second
        head, sep, tail = t["expr"].rpartition('instance=~"$instance"')
        t["expr"] = head + 'job="transerve"' + tail
        self.assert_rejected(self.errors(d), "selector of transerve_requests_total lacks")

    def test_missing_instance_variable(self):
        d = self.broken()
        d["templating"]["list"] = []
        self.assert_rejected(self.errors(d), "no variable 'instance'")

    def test_unknown_grafana_variable(self):
        d = self.broken()
        t = self.expr_of(d, 4)
        t["expr"] = t["expr"].replace("$__rate_interval", "$rate_window")
        self.assert_rejected(self.errors(d), "unknown Grafana variables")

    def test_top_level_types(self):
        d = self.broken()
        d["schemaVersion"] = "39"
        del d["panels"]
        errs = self.errors(d)
        self.assert_rejected(errs, "'schemaVersion' missing or not int")
        self.assert_rejected(errs, "'panels' missing or not list")

    def test_wrong_refresh(self):
        d = self.broken()
        d["refresh"] = "1m"
        self.assert_rejected(self.errors(d), "'refresh' is '1m'")

    def test_provider_path(self):
        p = copy.deepcopy(PROVIDER)
        p["providers"][0]["options"]["path"] = "/etc/grafana/dashboards"
        self.assert_rejected(self.errors(provider=p), "no file provider loads")

    def test_time_interval_matches_scrape_interval(self):
        prom = {"global": {"scrape_interval": "5s"}}
        self.assertEqual(cd.check_time_interval(DATASOURCES, prom), [])
        ds = copy.deepcopy(DATASOURCES)
        ds["datasources"][0].setdefault("jsonData", {})["timeInterval"] = "1s"
        self.assert_rejected(cd.check_time_interval(ds, prom), "differs from scrape_interval")

    def test_compose_mount_parsing(self):
        doc = {"services": {"grafana": {"volumes": [
            "./grafana/dashboards:/etc/dashboards:ro",
            {"type": "bind", "source": "./grafana/dashboards", "target": cd.MOUNT}]}}}
        self.assertEqual(cd.compose_mounts(doc), ["./grafana/dashboards:/etc/dashboards:ro",
                                                  f"./grafana/dashboards:{cd.MOUNT}"])
        errors, seen = cd.check_compose({"compose.yml": doc})
        self.assertTrue(seen)
        self.assert_rejected(errors, "mounted as './grafana/dashboards:/etc/dashboards:ro'")
        self.assertEqual(len(errors), 1, errors)

    def test_unregistered_metric_source(self):
        errs, _ = cd.run_all(DASH, DATASOURCES, PROVIDER,
                             METRICS.replace('"transerve_queue_depth"', '"transerve_queued"'), None)
        self.assert_rejected(errs, "transerve_queue_depth")


if __name__ == "__main__":
    unittest.main(verbosity=1)
