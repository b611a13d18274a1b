#!/usr/bin/env python3
"""Tests of webhook_config.render: python3 bench/upstream/webhook_config_test.py"""

import base64
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webhook_config  # noqa: E402


def manifest():
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validating-webhook-configuration"},
        "webhooks": [{
            "name": "validator.pytorchjob.training-operator.kubeflow.org",
            "failurePolicy": "Fail",
            "clientConfig": {"service": {"name": "webhook-service", "namespace": "system",
                                         "path": "/validate-kubeflow-org-v1-pytorchjob"}},
            "rules": [{"resources": ["pytorchjobs"], "operations": ["CREATE", "UPDATE"]}],
        }],
    }


PATCH = [{"op": "replace", "path": "/webhooks/0/clientConfig/service/name",
          "value": "training-operator"},
         {"op": "replace", "path": "/metadata/name",
          "value": "validator.training-operator.kubeflow.org"}]


class RenderTest(unittest.TestCase):
    def test_points_every_webhook_at_loopback_with_the_ca(self):
        out = webhook_config.render(manifest(), PATCH, b"PEM", 9443)
        self.assertEqual(out["metadata"]["name"], "validator.training-operator.kubeflow.org")
        hook = out["webhooks"][0]
        self.assertEqual(hook["clientConfig"], {
            "url": "https://127.0.0.1:9443/validate-kubeflow-org-v1-pytorchjob",
            "caBundle": base64.b64encode(b"PEM").decode()})
        # The module's rules and failure policy are kept.
        self.assertEqual(hook["failurePolicy"], "Fail")
        self.assertEqual(hook["rules"], manifest()["webhooks"][0]["rules"])

    def test_input_is_not_modified(self):
        m = manifest()
        webhook_config.render(m, PATCH, b"PEM", 9443)
        self.assertEqual(m, manifest())

    def test_refuses_bad_input_naming_the_field(self):
        with self.assertRaisesRegex(ValueError, "kind"):
            webhook_config.render(dict(manifest(), kind="MutatingWebhookConfiguration"), PATCH,
                                  b"PEM", 9443)
        with self.assertRaisesRegex(ValueError, "port"):
            webhook_config.render(manifest(), PATCH, b"PEM", 70000)
        no_path = manifest()
        del no_path["webhooks"][0]["clientConfig"]["service"]["path"]
        with self.assertRaisesRegex(ValueError, r"webhooks\[0\].clientConfig.service.path"):
            webhook_config.render(no_path, PATCH, b"PEM", 9443)
        with self.assertRaisesRegex(ValueError, "webhooks"):
            webhook_config.render(dict(manifest(), webhooks=[]), PATCH, b"PEM", 9443)


if __name__ == "__main__":
    unittest.main()
