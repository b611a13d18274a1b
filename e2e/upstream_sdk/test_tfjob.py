"""TFJob through kubeflow-training 1.9.4's TrainingClient(job_kind="TFJob")."""

import json

import pytest
from kubeflow.training import models

from sdk_helpers import make_job, names, replica_status, update_with_retry, wait_until

KIND = "TFJob"


def test_model_job_runs_to_success(training_client):
    tc = training_client(KIND)
    tc.create_job(make_job(KIND, "tf-model", {"PS": 1, "Worker": 2}, run_seconds="5"))

    got = tc.get_job("tf-model")
    assert isinstance(got, models.KubeflowOrgV1TFJob)
    assert sorted(got.spec.tf_replica_specs) == ["PS", "Worker"]
    assert [j.metadata.name for j in tc.list_jobs()] == ["tf-model"]

    seen_running = []
    done = tc.wait_for_job_conditions(
        "tf-model", wait_timeout=120, polling_interval=1,
        callback=lambda j: seen_running.append(tc.is_job_running(job=j)))
    assert any(seen_running), "is_job_running was never True while the pods ran 5 s"
    assert tc.is_job_succeeded("tf-model") and not tc.is_job_failed("tf-model")
    by_type = {c.type: c for c in tc.get_job_conditions("tf-model")}
    assert by_type["Succeeded"].status == "True" and by_type["Succeeded"].reason == "TFJobSucceeded"
    assert done.status.replica_statuses["Worker"].succeeded == 2

    assert sorted(tc.get_job_pod_names("tf-model")) == ["tf-model-ps-0", "tf-model-worker-0",
                                                        "tf-model-worker-1"]
    assert tc.get_job_pod_names("tf-model", replica_type="ps") == ["tf-model-ps-0"]
    assert sorted(tc.get_job_pod_names("tf-model", replica_type="worker")) == ["tf-model-worker-0",
                                                                               "tf-model-worker-1"]
    # No Chief: worker 0 has the master role.
    assert tc.get_job_pod_names("tf-model", is_master=True) == ["tf-model-worker-0"]
    [w1] = tc.get_job_pods("tf-model", replica_type="worker", replica_index=1)
    env = {e.name: e.value for e in w1.spec.containers[0].env or []}
    tf_config = json.loads(env["TF_CONFIG"])
    assert tf_config["task"] == {"type": "worker", "index": 1}
    assert len(tf_config["cluster"]["worker"]) == 2 and len(tf_config["cluster"]["ps"]) == 1

    tc.delete_job("tf-model")
    with pytest.raises(RuntimeError):
        tc.get_job("tf-model")
    assert tc.list_jobs() == []


def test_update_job_scales_workers(training_client):
    tc = training_client(KIND)
    tc.create_job(make_job(KIND, "tf-scale", {"Worker": 1}, exit_code=None))
    wait_until(lambda: tc.get_job_pod_names("tf-scale") == ["tf-scale-worker-0"], 60, "worker-0")

    def two_workers(job):
        job.spec.tf_replica_specs["Worker"].replicas = 2

    update_with_retry(tc, "tf-scale", two_workers)
    assert tc.get_job("tf-scale").spec.tf_replica_specs["Worker"].replicas == 2
    wait_until(lambda: sorted(tc.get_job_pod_names("tf-scale", replica_type="worker")) ==
               ["tf-scale-worker-0", "tf-scale-worker-1"], 60, "worker-1 after the update")

    def two_active():
        worker = replica_status(tc.get_job("tf-scale"), "Worker")
        return worker is not None and worker.active == 2

    wait_until(two_active, 60, "replicaStatuses.Worker.active == 2")

    tc.delete_job("tf-scale")
    assert "tf-scale" not in names(tc.list_jobs())
