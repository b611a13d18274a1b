"""Admission through the chart-installed operator, as in a cluster: the API server calls the
webhooks through their Service (kube-proxy picks a replica), every replica answers, the objects
upstream's webhooks refuse are refused at kubectl apply with upstream's words, the defaulter stamps
runtime patches, and deleting every operator pod keeps admission working with the same certificate.
"""
import base64
import http.client
import json
import os
import socket
import ssl
import sys

import pytest
import yaml

import kube

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk_common"))
from admission_cases import (GROUP, PATCHES_FORBIDDEN, TRAINJOB_VALIDATOR, VERSION,  # noqa: E402
                             check_denied, patched_trainjob, refused_objects, torch_runtime, trainjob)

RELEASE = os.environ.get("COACH_E2E_RELEASE", "coach")
WEBHOOK_SERVICE = f"{RELEASE}-webhook"
SECRET = f"{RELEASE}-webhook-cert"
SELECTOR = "app.kubernetes.io/name=coach"


# As the API server hands it to the webhook: the CRD's defaults applied.
MISSING_RUNTIME_REF = {"name": "no-such-runtime", "apiGroup": GROUP, "kind": "ClusterTrainingRuntime"}

def apply(manifest, *args):
    return kube.kubectl("apply", *args, "-f", "-", stdin=yaml.safe_dump(manifest), check=False)


@pytest.mark.parametrize("case", range(4), ids=["no-node-container", "two-trainer-replicas",
                                                "missing-runtime", "unknown-runtime-kind"])
def test_what_upstream_refuses_is_refused_at_kubectl_apply(ns, case):
    _, manifest, webhook, words = refused_objects(ns)[case]
    out = apply(manifest)
    check_denied(out.returncode, out.stderr, webhook, words)


def test_runtime_patches_change_only_while_suspended(ns):
    runtime = torch_runtime("TrainingRuntime", "sleeper", ns)
    assert apply(runtime).returncode == 0
    job, change, suspend_and_change = patched_trainjob(ns, "patched", "sleeper", "TrainingRuntime")
    out = apply(job)
    assert out.returncode == 0, out.stderr
    stored = kube.get_json("trainjob", "-n", ns, "patched")
    assert stored["spec"]["runtimePatches"][0].get("time", "").endswith("Z"), stored["spec"]
    out = kube.kubectl("patch", "trainjob", "patched", "-n", ns, "--type=merge", "-p", json.dumps(change),
                       check=False)
    check_denied(out.returncode, out.stderr, TRAINJOB_VALIDATOR, [PATCHES_FORBIDDEN])
    out = kube.kubectl("patch", "trainjob", "patched", "-n", ns, "--type=merge", "-p",
                       json.dumps(suspend_and_change), check=False)
    assert out.returncode == 0, out.stderr


def ready_operator_pods():
    pods = kube.get_json("pods", "-n", kube.OPERATOR_NS, "-l", SELECTOR)["items"]
    return {p["metadata"]["name"]: p["status"].get("podIP", "") for p in pods
            if p["metadata"].get("deletionTimestamp") is None and
            any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))}


def webhook_ca():
    secret = kube.get_json("secret", "-n", kube.OPERATOR_NS, SECRET)
    return base64.b64decode(secret["data"]["ca.crt"]).decode(), secret["metadata"]["resourceVersion"]


def review_at(pod_ip, ca):
    """The TrainJob validator of the replica at pod_ip, called as the API server calls the Service's."""
    context = ssl.create_default_context(cadata=ca)
    raw = socket.create_connection((pod_ip, 9443), timeout=30)
    tls = context.wrap_socket(raw, server_hostname=f"{WEBHOOK_SERVICE}.{kube.OPERATOR_NS}.svc")
    conn = http.client.HTTPSConnection(pod_ip, 9443, timeout=30)
    conn.sock = tls
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "direct", "operation": "CREATE", "namespace": "default",
                        "kind": {"group": GROUP, "version": VERSION, "kind": "TrainJob"},
                        "object": trainjob("default", "x", MISSING_RUNTIME_REF)}}
    conn.request("POST", "/validate-trainer-kubeflow-org-v1alpha1-trainjob", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    return response.status, answer["response"]


def test_every_operator_replica_serves_admission():
    pods = ready_operator_pods()
    assert len(pods) == 2, pods
    ca, _ = webhook_ca()
    for name, ip in pods.items():
        status, answer = review_at(ip, ca)
        assert status == 200, (name, answer)
        assert answer["allowed"] is False, (name, answer)
        assert "must be created before the TrainJob is created" in answer["status"]["message"], answer


def test_admission_survives_every_operator_pod_deleted(ns):
    before = ready_operator_pods()
    _, version = webhook_ca()
    kube.kubectl("delete", "pods", "-n", kube.OPERATOR_NS, "-l", SELECTOR, "--wait=false")
    kube.wait_for(lambda: len(ready_operator_pods()) == 2 and not set(ready_operator_pods()) & set(before),
                  180, "two new operator pods Ready")
    _, manifest, webhook, words = refused_objects(ns)[2]

    def refused_by_the_webhook():
        out = apply(manifest)
        # The Service's endpoints may still name a pod that went: the API server's call fails then.
        return out if "failed calling webhook" not in out.stderr else None

    out = kube.wait_for(refused_by_the_webhook, 60, "admission answered by the new pods")
    check_denied(out.returncode, out.stderr, webhook, words)
    ca, after = webhook_ca()
    assert after == version, "the new pods rewrote the webhook certificate's Secret"
    for ip in ready_operator_pods().values():
        assert review_at(ip, ca)[0] == 200
    # The other suites' tests expect a leader among the pods that run.
    lease = os.environ.get("COACH_E2E_LEASE", "coach-operator")
    kube.wait_for(lambda: kube.get_json("lease", "-n", kube.OPERATOR_NS, lease)["spec"].get(
        "holderIdentity", "").split("_")[0] in ready_operator_pods(), 60, "a new pod to lead")
