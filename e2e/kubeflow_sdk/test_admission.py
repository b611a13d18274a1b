"""Admission as a Trainer v2 user meets it: the objects upstream's webhooks refuse are refused at
`kubectl apply` and by the SDK's train(), with upstream's words, by coach-operator's webhooks
(registered as the chart registers them, called on loopback: tools/suites/upstream_sdk.sh); the
defaulter stamps the SDK's runtime patches; a malformed or oversized AdmissionReview is refused and
the next one still answered.
"""

import base64
import copy
import dataclasses
import http.client
import json
import os
import ssl
import subprocess
import urllib.parse

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kubeflow.trainer.options.kubernetes import (JobSpecPatch, JobSetSpecPatch, JobSetTemplatePatch,
                                                 JobTemplatePatch, PodTemplatePatch, ReplicatedJobPatch,
                                                 RuntimePatch, TrainingRuntimeSpecPatch)

from admission_cases import (CLUSTER_RUNTIME_VALIDATOR, GROUP, PATCHES_FORBIDDEN, TRAINJOB_VALIDATOR,
                             VERSION, check_denied, node_job, patched_trainjob, refused_objects,
                             torch_runtime, trainjob)
from kube_fixtures import in_ci, kubectl_path


# As the API server hands it to the webhook: the CRD's defaults applied.
MISSING_RUNTIME_REF = {"name": "no-such-runtime", "apiGroup": GROUP, "kind": "ClusterTrainingRuntime"}

def kubectl(kubeconfig, *args, manifest=None):
    return subprocess.run([kubectl_path(), "--kubeconfig", kubeconfig, *args],
                          input=None if manifest is None else yaml.safe_dump(manifest),
                          capture_output=True, text=True, timeout=60)


def denied(out, webhook, *words):
    check_denied(out.returncode, out.stderr, webhook, words)


@pytest.mark.parametrize("case", range(4), ids=["no-node-container", "two-trainer-replicas",
                                                "missing-runtime", "unknown-runtime-kind"])
def test_kubectl_apply_of_what_upstream_refuses_is_refused(kubeconfig, namespace, case):
    _, manifest, webhook, words = refused_objects(namespace)[case]
    denied(kubectl(kubeconfig, "apply", "-f", "-", manifest=manifest), webhook, *words)


def test_cluster_runtime_update_is_validated_and_the_disabled_label_skips_it(kubeconfig, namespace):
    name = f"{namespace}-cluster"
    runtime = torch_runtime("ClusterTrainingRuntime", name)
    out = kubectl(kubeconfig, "apply", "-f", "-", manifest=runtime)
    assert out.returncode == 0, out.stderr
    try:
        bad = copy.deepcopy(runtime)
        node_job(bad)["replicas"] = 3
        denied(kubectl(kubeconfig, "apply", "-f", "-", manifest=bad), CLUSTER_RUNTIME_VALIDATOR,
               "always must be 1")
        skipped = torch_runtime("TrainingRuntime", "unchecked", namespace)
        skipped["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"] = "disabled"
        node_job(skipped)["replicas"] = 2
        out = kubectl(kubeconfig, "apply", "-f", "-", manifest=skipped)
        assert out.returncode == 0, out.stderr
    finally:
        kubectl(kubeconfig, "delete", "clustertrainingruntime", name, "--ignore-not-found")


def test_the_sdks_train_on_a_missing_runtime_is_refused(namespace, trainer_client):
    # The SDK given a runtime that is not (or no longer) there: train() raises with the refusal.
    gone = dataclasses.replace(trainer_client.get_runtime("torch-distributed"), name="no-such-runtime")
    with pytest.raises(RuntimeError, match="Failed to create TrainJob") as raised:
        trainer_client.train(runtime=gone)
    body = getattr(raised.value.__cause__, "body", "") or ""
    assert "specified clusterTrainingRuntime must be created before the TrainJob is created" in body, body
    assert trainer_client.list_jobs() == []


def test_runtime_patches_change_only_while_suspended(kubeconfig, namespace, upstream_runtimes):
    job, change, suspend_and_change = patched_trainjob(namespace, "patched", "torch-distributed")
    out = kubectl(kubeconfig, "apply", "-f", "-", manifest=job)
    assert out.returncode == 0, out.stderr
    denied(kubectl(kubeconfig, "-n", namespace, "patch", "trainjob", "patched", "--type=merge", "-p",
                   json.dumps(change)), TRAINJOB_VALIDATOR, PATCHES_FORBIDDEN)
    out = kubectl(kubeconfig, "-n", namespace, "patch", "trainjob", "patched", "--type=merge", "-p",
                  json.dumps(suspend_and_change))
    assert out.returncode == 0, out.stderr


def test_the_sdks_runtime_patch_gets_its_time(kubeconfig, namespace, trainer_client):
    pod = PodTemplatePatch(metadata={"annotations": {"coach.test/run-seconds": "600"}})
    node = ReplicatedJobPatch(name="node", template=JobTemplatePatch(spec=JobSpecPatch(template=pod)))
    patch = RuntimePatch(training_runtime_spec=TrainingRuntimeSpecPatch(
        template=JobSetTemplatePatch(spec=JobSetSpecPatch(replicated_jobs=[node]))))
    name = trainer_client.train(runtime="torch-distributed", options=[patch])
    api = k8s.CustomObjectsApi(k8s_config.new_client_from_config(config_file=kubeconfig))
    stored = api.get_namespaced_custom_object(GROUP, VERSION, namespace, "trainjobs", name)
    patches = stored["spec"]["runtimePatches"]
    assert len(patches) == 1 and patches[0].get("time", "").endswith("Z"), patches


def webhook_connection(core):
    url = os.environ.get("COACH_UPSTREAM_SDK_WEBHOOK", "")
    if not url:
        if in_ci():
            pytest.fail("COACH_UPSTREAM_SDK_WEBHOOK is not set (tools/suites/upstream_sdk.sh sets it)")
        pytest.skip("COACH_UPSTREAM_SDK_WEBHOOK is not set")
    secret = core.read_namespaced_secret("coach-webhook-cert", "coach-system")
    ca = base64.b64decode(secret.data["ca.crt"]).decode()
    parsed = urllib.parse.urlparse(url)
    return lambda: http.client.HTTPSConnection(parsed.hostname, parsed.port,
                                               context=ssl.create_default_context(cadata=ca), timeout=30)


def post(connect, body):
    conn = connect()
    try:
        conn.request("POST", "/validate-trainer-kubeflow-org-v1alpha1-trainjob", body=body,
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as e:  # ssl.SSLEOFError among them
        return None, repr(e).encode()
    finally:
        conn.close()


def test_malformed_and_oversized_reviews_are_refused_without_harm(core):
    connect = webhook_connection(core)
    status, _ = post(connect, b"{not json")
    assert status == 400
    status, _ = post(connect, b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}')
    assert status == 400
    status, body = post(connect, b"[" * 100000 + b"]" * 100000)
    assert status == 400, body
    status, body = post(connect, b" " * (8 << 20))
    # Refused before the body is read: a 413, or the connection closed under the upload.
    assert status in (413, None), (status, body[:200])
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "u1", "operation": "CREATE", "namespace": "default",
                          "kind": {"group": GROUP, "version": VERSION, "kind": "TrainJob"},
                          "object": trainjob("default", "x", MISSING_RUNTIME_REF)}}
    status, body = post(connect, json.dumps(review).encode())
    assert status == 200, body
    answer = json.loads(body)["response"]
    assert answer["uid"] == "u1" and answer["allowed"] is False, answer
    assert "must be created before the TrainJob is created" in answer["status"]["message"], answer
