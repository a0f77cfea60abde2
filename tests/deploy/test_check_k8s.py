#!/usr/bin/python3
"""Proves check_k8s.py rejects broken manifests: each test breaks one thing in a copy."""
import copy
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_k8s as ck  # noqa: E402

DOCS = ck.load()
FILES = {str(p.relative_to(ck.K8S)) for p in ck.K8S.rglob("*") if p.is_file()}
FLAGS = ck.server_flags(ck.SERVER_MAIN.read_text())


class CheckK8sTest(unittest.TestCase):
    def setUp(self):
        self.docs = copy.deepcopy(DOCS)

    def doc(self, file, kind=None):
        return next(d for f, d in self.docs if f == file and (kind is None or d["kind"] == kind))

    def pod(self, file="deployment.yaml"):
        return self.doc(file)["spec"]["template"]["spec"]

    def container(self, file="deployment.yaml"):
        return self.pod(file)["containers"][0]

    def env(self, name, file="deployment.yaml"):
        return next(e for e in self.container(file)["env"] if e["name"] == name)

    def assert_rejected(self, needle, files=FILES):
        errors = ck.check(self.docs, FLAGS, files)
        self.assertTrue(any(needle in e for e in errors),
                        f"expected an error containing {needle!r}, got {errors}")

    def test_real_manifests_pass(self):
        self.assertEqual(ck.check(self.docs, FLAGS, FILES), [])

    def test_parsers(self):
        self.assertEqual(ck.quantity("500m"), 0.5)
        self.assertEqual(ck.quantity("1Gi"), 2**30)
        self.assertEqual(ck.quantity("1G"), 1e9)
        self.assertEqual(ck.quantity(2), 2)
        self.assertEqual(ck.duration_s("1m30s"), 90)
        self.assertEqual(ck.duration_s("500ms"), 0.5)
        with self.assertRaises(ValueError):
            ck.quantity("1GB")
        with self.assertRaises(ValueError):
            ck.duration_s("30")
        self.assertIn("drain_timeout", FLAGS)
        self.assertIn("num_threads", FLAGS)

    def test_missing_name(self):
        del self.doc("service.yaml")["metadata"]["name"]
        self.assert_rejected("Service without metadata.name")

    def test_missing_api_version(self):
        del self.doc("hpa.yaml")["apiVersion"]
        self.assert_rejected("object without apiVersion")

    def test_deployment_selector(self):
        self.doc("deployment.yaml")["spec"]["selector"]["matchLabels"] = {"app": "other"}
        self.assert_rejected("does not match template labels")

    def test_service_selector(self):
        self.doc("service.yaml")["spec"]["selector"] = {"app.kubernetes.io/name": "transerv"}
        self.assert_rejected("matches no Deployment's pod labels")

    def test_service_target_port(self):
        self.doc("service-headless.yaml")["spec"]["ports"][0]["targetPort"] = "grcp"
        self.assert_rejected("targetPort 'grcp' is no container port")

    def test_no_headless_service(self):
        del self.doc("service-headless.yaml")["spec"]["clusterIP"]
        self.assert_rejected("no headless Service")

    def test_grpc_app_protocol(self):
        del self.doc("service.yaml")["spec"]["ports"][0]["appProtocol"]
        self.assert_rejected("lacks appProtocol: grpc")

    def test_grace_period_dropped(self):
        del self.pod()["terminationGracePeriodSeconds"]
        self.assert_rejected("terminationGracePeriodSeconds None <")

    def test_drain_longer_than_grace(self):
        self.env("TRANSERVE_DRAIN_TIMEOUT")["value"] = "1m"
        self.assert_rejected("drain 60s")

    def test_bad_drain_duration(self):
        self.env("TRANSERVE_DRAIN_TIMEOUT")["value"] = "30 seconds"
        self.assert_rejected("bad duration")

    def test_prestop_missing(self):
        del self.container()["lifecycle"]
        self.assert_rejected("preStop is not an exec sleep")

    def test_misspelt_env(self):
        self.env("TRANSERVE_DRAIN_TIMEOUT")["name"] = "TRANSERVE_DRAIN_TIMOUT"
        self.assert_rejected("TRANSERVE_DRAIN_TIMOUT names no flag")

    def test_env_name_case(self):
        self.env("TRANSERVE_DEVICE")["name"] = "TRANSERVE_Device"
        self.assert_rejected("TRANSERVE_Device names no flag")

    def test_env_value_not_string(self):
        self.env("TRANSERVE_NUM_THREADS")["value"] = 2
        self.assert_rejected("must be a string")

    def test_threads_differ_from_cpu_limit(self):
        self.env("TRANSERVE_NUM_THREADS")["value"] = "8"
        self.assert_rejected("differs from the cpu limit")

    def test_memory_request_above_limit(self):
        self.container()["resources"]["requests"]["memory"] = "3Gi"
        self.assert_rejected("memory request 3Gi exceeds")

    def test_cpu_request_in_millicores_above_limit(self):
        self.container()["resources"]["requests"]["cpu"] = "2500m"
        self.assert_rejected("cpu request 2500m exceeds")

    def test_missing_limit(self):
        del self.container()["resources"]["limits"]["memory"]
        self.assert_rejected("request and a limit for memory")

    def test_probe_wrong_port(self):
        self.container()["livenessProbe"]["grpc"]["port"] = 9464
        self.assert_rejected("livenessProbe is not a grpc probe")

    def test_readiness_not_readyz_on_http(self):
        self.container()["readinessProbe"]["httpGet"]["port"] = "metrics"
        self.assert_rejected("readinessProbe is not GET /readyz on the http port")
        self.container("deployment-gpu.yaml")["readinessProbe"] = {"grpc": {"port": 50051}}
        self.assert_rejected("deployment-gpu.yaml Deployment/transerve: readinessProbe is not")

    def test_http_container_port_differs_from_flag(self):
        self.env("TRANSERVE_HTTP_PORT")["value"] = "5001"
        self.assert_rejected("but the server listens on 5001 (--http_port)")

    def test_http_ingress_speaks_http_unbuffered(self):
        ann = self.doc("ingress-http.yaml")["metadata"]["annotations"]
        ann["nginx.ingress.kubernetes.io/backend-protocol"] = "GRPC"
        del ann["nginx.ingress.kubernetes.io/proxy-buffering"]
        self.assert_rejected("is 'GRPC', not \"HTTP\"")
        self.assert_rejected("HTTP ingress buffers answers")

    def test_probe_not_grpc(self):
        self.container()["livenessProbe"] = {"httpGet": {"port": 9464, "path": "/metrics"}}
        self.assert_rejected("livenessProbe is not a grpc probe")

    def test_startup_probe_missing(self):
        del self.container()["startupProbe"]
        self.assert_rejected("no startupProbe")

    def test_container_port_differs_from_flag(self):
        self.container()["env"].append({"name": "TRANSERVE_PORT", "value": "50052"})
        self.assert_rejected("but the server listens on 50052")

    def test_scrape_port_annotation(self):
        self.doc("deployment.yaml")["spec"]["template"]["metadata"]["annotations"][
            "prometheus.io/port"] = "9090"
        self.assert_rejected("prometheus.io/port '9090'")

    def test_security_context(self):
        self.container()["securityContext"]["readOnlyRootFilesystem"] = False
        del self.container()["securityContext"]["capabilities"]
        self.assert_rejected("readOnlyRootFilesystem is not true")
        self.assert_rejected("do not drop ALL")

    def test_ingress_backend_port(self):
        backend = self.doc("ingress.yaml")["spec"]["rules"][0]["http"]["paths"][0]["backend"]
        backend["service"]["port"] = {"name": "gprc"}
        self.assert_rejected("is not a port of Service 'transerve'")

    def test_ingress_protocol(self):
        del self.doc("ingress.yaml")["metadata"]["annotations"][
            "nginx.ingress.kubernetes.io/backend-protocol"]
        self.assert_rejected("backend-protocol")

    def test_hpa_target(self):
        self.doc("hpa.yaml")["spec"]["scaleTargetRef"]["name"] = "translate"
        self.assert_rejected("scaleTargetRef Deployment/translate does not exist")

    def test_hpa_bounds(self):
        self.doc("hpa.yaml")["spec"]["minReplicas"] = 20
        self.assert_rejected("replica bounds")

    def test_queue_hpa_metric_not_served(self):
        hpa = self.doc("hpa-queue-depth.yaml")
        hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] = "transerve_queue_length"
        self.assert_rejected("'transerve_queue_length' is served by no prometheus-adapter rule")

    def test_gpu_without_gpu(self):
        del self.container(ck.GPU_FILE)["resources"]["limits"]["nvidia.com/gpu"]
        self.env("TRANSERVE_DEVICE", ck.GPU_FILE)["value"] = "auto"
        self.assert_rejected("does not request nvidia.com/gpu")
        self.assert_rejected("does not set TRANSERVE_DEVICE=cuda")

    def test_gpu_toleration(self):
        del self.pod(ck.GPU_FILE)["tolerations"]
        self.assert_rejected("does not tolerate the nvidia.com/gpu taint")

    def test_gpu_variant_missing(self):
        self.docs = [(f, d) for f, d in self.docs if f != ck.GPU_FILE]
        self.assert_rejected("no GPU Deployment variant")

    def test_service_monitor_port(self):
        self.doc("servicemonitor.yaml")["spec"]["endpoints"][0]["port"] = "http-metrics"
        self.assert_rejected("endpoint port 'http-metrics' is on no Service")

    def test_kustomization_missing_file(self):
        self.doc("kustomization.yaml")["resources"].append("pdb.yaml")
        self.assert_rejected("resource pdb.yaml does not exist")

    def test_kustomization_lists_operator_crd(self):
        self.doc("kustomization.yaml")["resources"].append("servicemonitor.yaml")
        self.assert_rejected("needs the Prometheus Operator")

    def test_kustomization_lists_variant(self):
        self.doc("kustomization.yaml")["resources"].append("hpa-queue-depth.yaml")
        self.assert_rejected("HorizontalPodAutoscaler/transerve is in both")


if __name__ == "__main__":
    unittest.main(verbosity=1)
