"""PyTorchJob through kubeflow-training 1.9.4's TrainingClient, every call a user makes on a job's life."""

import pytest
import yaml
from kubeflow.training import models
from kubeflow.training.utils import utils as sdk_utils

from sdk_helpers import (condition, make_job, names, update_with_retry, wait_condition, wait_until)

KIND = "PyTorchJob"


def test_model_job_runs_to_success(training_client):
    tc = training_client(KIND)
    job = make_job(KIND, "pt-model", {"Master": 1, "Worker": 2}, run_seconds="5")
    tc.create_job(job)

    got = tc.get_job("pt-model")
    assert isinstance(got, models.KubeflowOrgV1PyTorchJob)
    assert got.kind == KIND and got.metadata.name == "pt-model"
    assert sorted(got.spec.pytorch_replica_specs) == ["Master", "Worker"]
    assert got.spec.pytorch_replica_specs["Worker"].replicas == 2
    assert got.spec.pytorch_replica_specs["Worker"].template.spec.containers[0].name == "pytorch"
    assert got.spec.run_policy.clean_pod_policy == "None"
    assert "pt-model" in names(tc.list_jobs())

    # wait_for_job_conditions polls get_job; the callback sees each state on the way.
    seen_running = []
    done = tc.wait_for_job_conditions(
        "pt-model", wait_timeout=120, polling_interval=1,
        callback=lambda j: seen_running.append(tc.is_job_running(job=j)))
    assert isinstance(done, models.KubeflowOrgV1PyTorchJob)
    assert any(seen_running), "is_job_running was never True while the pods ran 5 s"
    assert tc.is_job_succeeded("pt-model")
    assert not tc.is_job_running("pt-model")
    assert not tc.is_job_failed("pt-model")
    assert tc.is_job_created("pt-model")

    conds = tc.get_job_conditions("pt-model")
    by_type = {c.type: c for c in conds}
    assert by_type["Succeeded"].status == "True"
    assert by_type["Succeeded"].reason == "PyTorchJobSucceeded"
    assert by_type["Created"].status == "True"
    assert by_type["Running"].status == "False"
    assert done.status.start_time is not None and done.status.completion_time is not None
    rs = done.status.replica_statuses
    assert rs["Master"].succeeded == 1 and rs["Worker"].succeeded == 2

    # Pods, with the SDK's label filters (cleanPodPolicy None keeps them).
    assert sorted(tc.get_job_pod_names("pt-model")) == ["pt-model-master-0", "pt-model-worker-0",
                                                        "pt-model-worker-1"]
    assert tc.get_job_pod_names("pt-model", is_master=True) == ["pt-model-master-0"]
    assert tc.get_job_pod_names("pt-model", replica_type="master") == ["pt-model-master-0"]
    assert sorted(tc.get_job_pod_names("pt-model", replica_type="worker")) == ["pt-model-worker-0",
                                                                               "pt-model-worker-1"]
    assert tc.get_job_pod_names("pt-model", replica_type="worker", replica_index=1) == ["pt-model-worker-1"]
    pods = tc.get_job_pods("pt-model", replica_type="worker")
    assert {p.status.phase for p in pods} == {"Succeeded"}
    for p in pods:
        owner = p.metadata.owner_references[0]
        assert (owner.kind, owner.name, owner.controller) == (KIND, "pt-model", True)
        env = {e.name: e.value for e in p.spec.containers[0].env or []}
        assert env["MASTER_ADDR"] == "pt-model-master-0" and env["WORLD_SIZE"] == "3"

    tc.delete_job("pt-model")
    with pytest.raises(RuntimeError):
        tc.get_job("pt-model")
    assert "pt-model" not in names(tc.list_jobs())
    # The garbage collector removes the job's pods (owner references).
    wait_until(lambda: tc.get_job_pod_names("pt-model") == [], 90, "the deleted job's pods to go")


# An upstream example as a user keeps it in a file, with every field a raw manifest may carry.
RAW = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pt-raw
  labels: {team: vision}
spec:
  runPolicy: {cleanPodPolicy: None}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations: {coach.test/exit-code: "0", coach.test/run-seconds: "3"}
        spec:
          containers:
          - name: pytorch
            image: coach.local/none:latest
            command: [python3, -u, mnist.py, --epochs=1]
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations: {coach.test/exit-code: "0", coach.test/run-seconds: "3"}
        spec:
          containers:
          - name: pytorch
            image: coach.local/none:latest
            command: [python3, -u, mnist.py, --epochs=1]
"""


def test_raw_manifest_through_the_sdk_deserializer(training_client):
    # create_job of 1.9.4 type-checks `job` against the model class (and reads `job.kind`), so a
    # raw dict is turned into the model with the SDK's own deserializer first.
    tc = training_client(KIND)
    manifest = yaml.safe_load(RAW)
    job = tc.api_client.deserialize(sdk_utils.FakeResponse(manifest), "KubeflowOrgV1PyTorchJob")
    tc.create_job(job)

    done = tc.wait_for_job_conditions("pt-raw", wait_timeout=120, polling_interval=1)
    assert done.metadata.labels["team"] == "vision"
    assert done.spec.pytorch_replica_specs["Master"].template.spec.containers[0].command[-1] == "--epochs=1"
    assert tc.is_job_succeeded("pt-raw")
    assert sorted(tc.get_job_pod_names("pt-raw")) == ["pt-raw-master-0", "pt-raw-worker-0"]
    tc.delete_job("pt-raw")
    assert "pt-raw" not in names(tc.list_jobs())


def test_raw_dict_is_refused_by_the_sdk_before_any_request(training_client):
    # Upstream's SDK itself (not coach) refuses a dict: it reads `job.kind`. Nothing reaches the
    # server, so nothing is stored. Documented here so the limitation is not mistaken for coach's.
    tc = training_client(KIND)
    with pytest.raises((AttributeError, ValueError)):
        tc.create_job(yaml.safe_load(RAW))
    assert tc.list_jobs() == []


def test_update_job_suspend_and_resume(training_client):
    tc = training_client(KIND)
    # Pods without an exit code run until deleted.
    tc.create_job(make_job(KIND, "pt-suspend", {"Master": 1, "Worker": 1}, exit_code=None))
    tc.wait_for_job_conditions("pt-suspend", expected_conditions={"Running"}, wait_timeout=120,
                               polling_interval=1)
    wait_until(lambda: len(tc.get_job_pod_names("pt-suspend")) == 2, 60, "2 pods")

    def suspend(flag):
        def mutate(job):
            job.spec.run_policy.suspend = flag
        return mutate

    update_with_retry(tc, "pt-suspend", suspend(True))
    assert tc.get_job("pt-suspend").spec.run_policy.suspend is True
    wait_until(lambda: tc.get_job_pod_names("pt-suspend") == [], 60, "pods deleted on suspend")
    job = wait_condition(tc, "pt-suspend", "Suspended")
    assert not tc.is_job_running(job=job)
    assert not tc.is_job_succeeded(job=job) and not tc.is_job_failed(job=job)

    update_with_retry(tc, "pt-suspend", suspend(False))
    wait_until(lambda: tc.is_job_running("pt-suspend"), 60, "Running again after resume")
    wait_until(lambda: sorted(tc.get_job_pod_names("pt-suspend")) == ["pt-suspend-master-0",
                                                                       "pt-suspend-worker-0"],
               60, "pods back after resume")
    s = condition(tc.get_job("pt-suspend"), "Suspended")
    assert s is None or s.status != "True"

    tc.delete_job("pt-suspend")
    with pytest.raises(RuntimeError):
        tc.get_job("pt-suspend")


def test_update_job_with_a_partial_patch(training_client):
    # update_job sends its `job` argument as a JSON merge patch: a user may pass just the change.
    tc = training_client(KIND)
    tc.create_job(make_job(KIND, "pt-patch", {"Master": 1, "Worker": 1}, exit_code=None))
    wait_until(lambda: len(tc.get_job_pod_names("pt-patch")) == 2, 60, "2 pods")
    tc.update_job({"spec": {"runPolicy": {"suspend": True}}}, "pt-patch")
    assert tc.get_job("pt-patch").spec.run_policy.suspend is True
    wait_until(lambda: tc.get_job_pod_names("pt-patch") == [], 60, "pods deleted on suspend")
    tc.delete_job("pt-patch")
