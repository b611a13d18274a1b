#!/usr/bin/env python3
"""Tests of webhook_config.render: python3 tools/testenv/kueue.d/webhook_config_test.py
(tools/suites:kueue runs them)."""

import base64
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webhook_config  # noqa: E402


def hook(name, group, resource, path):
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"],
                   "resources": [resource]}],
    }


def docs():
    return [
        None,  # the "---" before the first document
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "mutating-webhook-configuration"},
         "webhooks": [hook("mpod.kb.io", "", "pods", "/mutate--v1-pod"),
                      hook("mtrainjob.kb.io", "trainer.kubeflow.org", "trainjobs",
                           "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"),
                      hook("mworkload.kb.io", "kueue.x-k8s.io", "workloads",
                           "/mutate-kueue-x-k8s-io-v1beta2-workload")]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "validating-webhook-configuration"},
         "webhooks": [hook("vjob.kb.io", "batch", "jobs", "/validate-batch-v1-job"),
                      hook("vpytorchjob.kb.io", "kubeflow.org", "pytorchjobs",
                           "/validate-kubeflow-org-v1-pytorchjob")]},
    ]


class RenderTest(unittest.TestCase):
    def test_keeps_kueues_kinds_and_the_frameworks_given_pointed_at_loopback(self):
        out = webhook_config.render(docs(), b"PEM", 9443, {"trainjobs", "pytorchjobs"})
        self.assertEqual(out["kind"], "List")
        mutating, validating = out["items"]
        self.assertEqual(mutating["metadata"]["name"], "coach-testenv-kueue-mutating")
        self.assertEqual(validating["metadata"]["name"], "coach-testenv-kueue-validating")
        self.assertEqual([h["name"] for h in mutating["webhooks"]], ["mtrainjob.kb.io", "mworkload.kb.io"])
        self.assertEqual([h["name"] for h in validating["webhooks"]], ["vpytorchjob.kb.io"])
        self.assertEqual(mutating["webhooks"][0]["clientConfig"], {
            "url": "https://127.0.0.1:9443/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
            "caBundle": base64.b64encode(b"PEM").decode()})
        # Kueue's own fields stay.
        self.assertEqual(mutating["webhooks"][0]["failurePolicy"], "Fail")
        self.assertEqual(mutating["webhooks"][0]["rules"][0]["resources"], ["trainjobs"])

    def test_refuses_what_it_cannot_render(self):
        with self.assertRaisesRegex(ValueError, "port"):
            webhook_config.render(docs(), b"PEM", 0, {"trainjobs"})
        bad = docs()
        bad[1]["webhooks"][1]["clientConfig"]["service"]["path"] = "no-slash"
        with self.assertRaisesRegex(ValueError, r"webhooks\[1\].clientConfig.service.path"):
            webhook_config.render(bad, b"PEM", 9443, {"trainjobs"})
        with self.assertRaisesRegex(ValueError, "kind 'Secret'"):
            webhook_config.render([{"kind": "Secret"}], b"PEM", 9443, {"trainjobs"})
        with self.assertRaisesRegex(ValueError, "no webhook left"):
            webhook_config.render([docs()[2]], b"PEM", 9443, {"tfjobs"})


if __name__ == "__main__":
    unittest.main()
