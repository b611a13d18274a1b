#!/usr/bin/python3
"""Tests of webhook_loopback: bazel test //tools/testenv:webhook_loopback_test"""
import base64
import contextlib
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webhook_loopback  # noqa: E402


def config():
    return {"kind": "ValidatingWebhookConfiguration", "webhooks": [
        {"name": "a.example", "failurePolicy": "Fail",
         "clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "/validate-a"}}},
        {"name": "b.example",
         "clientConfig": {"service": {"name": "svc", "namespace": "ns", "path": "/validate-b"}}},
    ]}


class PointAtLoopbackTest(unittest.TestCase):
    def test_every_webhook_called_on_loopback_with_the_ca(self):
        out = webhook_loopback.point_at_loopback(config(), b"PEM", "9443")
        ca = base64.b64encode(b"PEM").decode()
        self.assertEqual([h["clientConfig"] for h in out["webhooks"]], [
            {"url": "https://127.0.0.1:9443/validate-a", "caBundle": ca},
            {"url": "https://127.0.0.1:9443/validate-b", "caBundle": ca}])
        self.assertEqual(out["webhooks"][0]["failurePolicy"], "Fail")

    def test_a_host_and_no_ca_for_a_manager_that_writes_its_own(self):
        out = webhook_loopback.point_at_loopback(config(), None, 9443, host="localhost")
        self.assertEqual(out["webhooks"][1]["clientConfig"],
                         {"url": "https://localhost:9443/validate-b"})

    def test_refusals_name_the_field(self):
        bad = config()
        bad["webhooks"][1]["clientConfig"]["service"]["path"] = "validate-b"
        with self.assertRaisesRegex(ValueError,
                                    r"^vwc: webhooks\[1\]\.clientConfig\.service\.path: 'validate-b'"):
            webhook_loopback.point_at_loopback(bad, b"PEM", 9443, label="vwc")
        with self.assertRaisesRegex(ValueError, "^ValidatingWebhookConfiguration: webhooks is empty"):
            webhook_loopback.point_at_loopback(dict(config(), webhooks=[]), b"PEM", 9443)
        for port, why in ((0, "not a TCP port"), (65536, "not a TCP port"), ("x", "not a number"),
                          (None, "not a number")):
            with self.assertRaisesRegex(ValueError, "^port: .*" + why):
                webhook_loopback.point_at_loopback(config(), b"PEM", port)


class PrintOrRefuseTest(unittest.TestCase):
    def run_cli(self, build):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = webhook_loopback.print_or_refuse("prog", build)
        return code, out.getvalue(), err.getvalue()

    def test_prints_the_configuration(self):
        code, out, err = self.run_cli(lambda: {"kind": "List", "items": []})
        self.assertEqual((code, json.loads(out), err), (0, {"kind": "List", "items": []}, ""))

    def test_bad_input_is_exit_2_naming_it(self):
        code, out, err = self.run_cli(lambda: webhook_loopback.read_bytes("/nonexistent/ca.crt"))
        self.assertEqual((code, out), (2, ""))
        self.assertIn("prog: ", err)
        self.assertIn("/nonexistent/ca.crt", err)
        path = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "webhook_loopback_bad.yaml")
        with open(path, "w") as f:
            f.write("a: [\n")
        code, _, err = self.run_cli(lambda: webhook_loopback.load_yaml_all(path))
        self.assertEqual(code, 2)
        self.assertIn(path, err)


if __name__ == "__main__":
    unittest.main()
