#!/usr/bin/env python3
"""Unit tests of bench/upstream's Trainer v2 helpers: the comparer's normalisation and pairing
(trainjob_compare.py), the loopback configurations (trainer_config.py) and webhook
registrations (trainer_webhooks.py)."""

import copy
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import trainer_config  # noqa: E402
import trainer_webhooks  # noqa: E402
import trainjob_compare as tc  # noqa: E402


def upstream_pod(index=0, suffix="x7k2p"):
    """A node pod as the Job controller makes it (abridged)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "abc-node-0-%d-%s" % (index, suffix),
            "generateName": "abc-node-0-%d-" % index,
            "namespace": "compat",
            "uid": "u-%d" % index,
            "resourceVersion": "17",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "ownerReferences": [{"kind": "Job", "name": "abc-node-0", "uid": "j"}],
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "abc",
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "jobset.sigs.k8s.io/jobset-uid": "js-uid",
                "batch.kubernetes.io/job-completion-index": str(index),
                "batch.kubernetes.io/controller-uid": "job-uid",
                "controller-uid": "job-uid",
            },
            "annotations": {"jobset.sigs.k8s.io/jobset-uid": "js-uid"},
        },
        "spec": {
            "nodeName": "kwok-node-1",
            "hostname": "abc-node-0-%d" % index,
            "containers": [{
                "name": "node",
                "env": [{"name": "A", "value": "1"}],
                "volumeMounts": [{"name": "kube-api-access-9zq4m", "mountPath": "/var/run"}],
            }],
            "volumes": [{"name": "kube-api-access-9zq4m", "projected": {}}],
        },
        "status": {"phase": "Running"},
    }


def coach_pod(index=0, suffix="b4d2f"):
    """The same pod as coach makes it: its own suffix, owner, uids and labels."""
    pod = upstream_pod(index, suffix)
    meta = pod["metadata"]
    meta["uid"] = "c-%d" % index
    meta.pop("finalizers")
    meta["ownerReferences"] = [{"kind": "TrainJob", "name": "abc", "uid": "t"}]
    for group in ("labels", "annotations"):
        for k in tc.UID_KEYS:
            if k in meta[group]:
                meta[group][k] = "trainjob-uid"
    meta["labels"]["coach.dev/job-name"] = "abc"
    meta["labels"]["coach.dev/replica-type"] = "node"
    meta["labels"]["coach.dev/replica-index"] = str(index)
    meta["labels"]["coach.dev/attempt"] = "0"
    pod["spec"]["volumes"][0]["name"] = "kube-api-access-h8s2w"
    pod["spec"]["containers"][0]["volumeMounts"][0]["name"] = "kube-api-access-h8s2w"
    pod["spec"]["nodeName"] = "kwok-node-3"
    meta["labels"]["topology.kubernetes.io/zone"] = "coach-zone-1"
    pod["status"] = {"phase": "Pending"}
    return pod


class CompareTest(unittest.TestCase):
    def test_same_rendering_passes_after_normalisation(self):
        failures, notes, used = tc.compare([upstream_pod(0), upstream_pod(1, "qwrt5")],
                                           [coach_pod(1), coach_pod(0)])
        self.assertEqual(failures, [])
        self.assertEqual(notes, [])
        self.assertEqual(used, {"server-fields", "owner-chain", "uid-labels", "coach-labels",
                                "pod-name-suffix", "job-tracking-finalizer", "pod-status",
                                "sa-token-volume"})

    def test_every_removal_is_explained(self):
        for key, why in tc.REMOVALS.items():
            self.assertTrue(why, key)

    def test_a_different_env_value_fails_naming_pod_and_field(self):
        pod = coach_pod()
        pod["spec"]["containers"][0]["env"][0]["value"] = "2"
        failures, _, _ = tc.compare([upstream_pod()], [pod])
        self.assertEqual(failures, [
            'Pod abc/node/0: spec.containers[0].env[0].value: upstream "1", coach "2"'])

    def test_env_order_matters_outside_xgboost(self):
        up, co = upstream_pod(), coach_pod()
        up["spec"]["containers"][0]["env"] = [{"name": "A"}, {"name": "B"}]
        co["spec"]["containers"][0]["env"] = [{"name": "B"}, {"name": "A"}]
        failures, _, _ = tc.compare([up], [co])
        self.assertEqual(len(failures), 2)

    def test_xgboost_env_compared_as_a_set(self):
        up, co = upstream_pod(), coach_pod()
        up["spec"]["containers"][0]["env"] = [{"name": "DMLC_TRACKER_URI"}, {"name": "X"}]
        co["spec"]["containers"][0]["env"] = [{"name": "X"}, {"name": "DMLC_TRACKER_URI"}]
        failures, _, used = tc.compare([up], [co])
        self.assertEqual(failures, [])
        self.assertIn("xgboost-env-order", used)

    def test_extra_label_and_missing_field_fail(self):
        co = coach_pod()
        co["metadata"]["labels"]["extra"] = "1"
        del co["spec"]["hostname"]
        failures, _, _ = tc.compare([upstream_pod()], [co])
        self.assertIn('Pod abc/node/0: metadata.labels.extra: upstream "<absent>", coach "1"',
                      failures)
        self.assertIn('Pod abc/node/0: spec.hostname: upstream "abc-node-0-0", coach "<absent>"',
                      failures)

    def test_a_missing_pod_fails(self):
        failures, _, _ = tc.compare([upstream_pod(0), upstream_pod(1)], [coach_pod(0)])
        self.assertEqual(failures, ["Pod abc/node/1: made by upstream only"])
        failures, _, _ = tc.compare([upstream_pod(0)], [coach_pod(0), coach_pod(1)])
        self.assertEqual(failures, ["Pod abc/node/1: made by coach only"])

    def test_pending_objects_are_notes_on_coachs_side_only(self):
        secret = {"kind": "Secret", "type": "kubernetes.io/ssh-auth",
                  "metadata": {"name": "mpi-mpi-ssh-auth"}, "data": {"ssh-privatekey": "k1"}}
        pending = [tc.parse_pending("Secret:*-mpi-ssh-auth")]
        failures, notes, _ = tc.compare([secret], [], pending)
        self.assertEqual(failures, [])
        self.assertEqual(notes, ["PENDING Secret mpi-mpi-ssh-auth: made by upstream, not yet by coach"])
        failures, _, _ = tc.compare([], [secret], pending)
        self.assertEqual(failures, ["Secret mpi-mpi-ssh-auth: made by coach only"])
        other = copy.deepcopy(secret)
        other["data"] = {"ssh-privatekey": "k2"}
        self.assertEqual(tc.compare([secret], [other], pending)[0], [])
        other["data"] = {"id_rsa": "k2"}
        self.assertEqual(len(tc.compare([secret], [other], pending)[0]), 2)
        with self.assertRaises(ValueError):
            tc.parse_pending("Secret")

    def test_ignored_and_snapshot(self):
        root = {"kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt"}, "data": {"a": "1"}}
        snap_up = {"kind": "ConfigMap", "metadata": {"name": "abc-runtime-snapshot"},
                   "data": {"runtime": "kind: ClusterTrainingRuntime\nmetadata:\n  name: t\n"
                                       "  uid: u1\n  resourceVersion: '5'\n"
                                       "spec: {a: 1, b: {c: {}}, d: [{}]}\n"}}
        snap_co = {"kind": "ConfigMap", "metadata": {"name": "abc-runtime-snapshot"},
                   "data": {"runtime": '{"kind":"ClusterTrainingRuntime","metadata":'
                                       '{"name":"t","uid":"u2"},"spec":{"a":1,"d":[{}]}}'}}
        failures, _, used = tc.compare([root, snap_up], [snap_co])
        self.assertEqual(failures, [])
        self.assertIn("snapshot-serialisation", used)
        snap_co["data"]["runtime"] = '{"kind":"ClusterTrainingRuntime","metadata":{"name":"t"},' \
                                     '"spec":{"a":2,"d":[{}]}}'
        failures, _, _ = tc.compare([snap_up], [snap_co])
        self.assertEqual(failures, [
            "ConfigMap abc-runtime-snapshot: data.runtime.spec.a: upstream 1, coach 2"])

    def test_jobset_priority_label_is_jobsets_webhooks(self):
        up = upstream_pod()
        up["metadata"]["labels"]["jobset.sigs.k8s.io/priority"] = "0"
        failures, _, used = tc.compare([up], [coach_pod()])
        self.assertEqual(failures, [])
        self.assertIn("jobset-priority-label", used)

    def test_normalize_leaves_its_input_alone(self):
        pod = upstream_pod()
        before = copy.deepcopy(pod)
        tc.normalize(pod)
        self.assertEqual(pod, before)

    def test_list_lengths(self):
        self.assertEqual(tc.diff([1, 2], [1]), [("[1]", 2, "<absent>")])


class ConfigTest(unittest.TestCase):
    TRAINER = {"apiVersion": "config.trainer.kubeflow.org/v1alpha1", "kind": "Configuration",
               "leaderElection": {"leaderElect": True, "resourceName": "trainer.kubeflow.org"},
               "webhook": {"port": 9443, "host": ""}, "metrics": {"bindAddress": ":8443"},
               "certManagement": {"enable": True, "webhookSecretName": "s"},
               "clientConnection": {"qps": 50, "burst": 100},
               "controller": {"groupKindConcurrency": {"TrainJob.trainer.kubeflow.org": 5}}}

    def test_trainer_keeps_limits_and_concurrency(self):
        out = trainer_config.render("trainer", self.TRAINER, 1001, 1002, 1003)
        self.assertFalse(out["leaderElection"]["leaderElect"])
        self.assertEqual(out["leaderElection"]["resourceName"], "trainer.kubeflow.org")
        self.assertEqual(out["webhook"], {"port": 1001, "host": "127.0.0.1"})
        self.assertEqual(out["metrics"]["bindAddress"], "127.0.0.1:1002")
        self.assertEqual(out["health"]["healthProbeBindAddress"], "127.0.0.1:1003")
        self.assertEqual(out["certManagement"], {"enable": False, "webhookSecretName": "s"})
        self.assertEqual(out["clientConnection"], {"qps": 50, "burst": 100})
        self.assertEqual(out["controller"], self.TRAINER["controller"])
        self.assertTrue(self.TRAINER["leaderElection"]["leaderElect"])  # input unchanged

    def test_jobset_serves_the_given_certificate(self):
        shipped = {"apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
                   "leaderElection": {"leaderElect": True},
                   "internalCertManagement": {"enable": True}}
        out = trainer_config.render("jobset", shipped, 1, 2, 3, "/certs")
        self.assertEqual(out["internalCertManagement"], {"enable": False})
        self.assertEqual(out["webhook"], {"host": "127.0.0.1", "port": 1, "certDir": "/certs"})
        self.assertEqual(out["metrics"], {"bindAddress": "127.0.0.1:2", "certDir": "/certs"})
        self.assertNotIn("clientConnection", out)  # the binary's default (500/500) applies
        with self.assertRaisesRegex(ValueError, "certificate folder"):
            trainer_config.render("jobset", shipped, 1, 2, 3)

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "apiVersion"):
            trainer_config.render("jobset", self.TRAINER, 1, 2, 3, "/c")
        with self.assertRaisesRegex(ValueError, "neither"):
            trainer_config.render("kueue", self.TRAINER, 1, 2, 3)
        with self.assertRaisesRegex(ValueError, "not a TCP port"):
            trainer_config.port_of("70000", "webhook port")


class WebhooksTest(unittest.TestCase):
    DOCS = [
        {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
         "webhooks": [{"name": "a", "clientConfig": {"service": {"name": "s", "path": "/m"}}},
                      {"name": "b", "clientConfig": {"service": {"name": "s", "path": "/p"}}}]},
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"},
         "webhooks": [{"name": "c", "clientConfig": {"service": {"name": "s", "path": "/v"}}}]},
    ]

    def test_patches_then_loopback(self):
        patches = {
            "MutatingWebhookConfiguration": [
                {"op": "replace", "path": "/metadata/name", "value": "defaulter"},
                {"op": "replace", "path": "/webhooks/1",
                 "value": {"name": "b2", "objectSelector": {"x": 1},
                           "clientConfig": {"service": {"path": "/p2"}}}}],
            "ValidatingWebhookConfiguration": [
                {"op": "add", "path": "/webhooks/0/objectSelector", "value": {"y": 2}}],
        }
        out = trainer_webhooks.render(self.DOCS, patches, b"CA", 9443)
        self.assertEqual(out[0]["metadata"]["name"], "defaulter")
        self.assertEqual(out[0]["webhooks"][1]["name"], "b2")
        self.assertEqual(out[0]["webhooks"][1]["objectSelector"], {"x": 1})
        self.assertEqual(out[0]["webhooks"][1]["clientConfig"],
                         {"url": "https://127.0.0.1:9443/p2", "caBundle": "Q0E="})
        self.assertEqual(out[1]["webhooks"][0]["objectSelector"], {"y": 2})
        self.assertEqual(self.DOCS[0]["metadata"]["name"], "m")  # input unchanged

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "not add or replace"):
            trainer_webhooks.apply_patch({}, [{"op": "remove", "path": "/a"}])
        with self.assertRaisesRegex(ValueError, "does not exist"):
            trainer_webhooks.apply_patch({}, [{"op": "replace", "path": "/a", "value": 1}])
        with self.assertRaisesRegex(ValueError, "one of each"):
            trainer_webhooks.render(self.DOCS[:1], {}, b"CA", 1)
        with self.assertRaisesRegex(ValueError, "not a TCP port"):
            trainer_webhooks.render(self.DOCS, {}, b"CA", 0)


if __name__ == "__main__":
    unittest.main()
