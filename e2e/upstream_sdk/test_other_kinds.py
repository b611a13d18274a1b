"""XGBoostJob, PaddleJob, JAXJob and MPIJob: create, get, list, conditions, wait, pods, delete."""

import pytest
from kubeflow.training.constants import constants

from sdk_helpers import MODEL, make_job, names, wait_until

# kind -> (replicas, pods by replica_type filter, the master-role pod)
CASES = {
    "XGBoostJob": ({"Master": 1, "Worker": 2},
                   {"master": ["master-0"], "worker": ["worker-0", "worker-1"]}, "master-0"),
    "PaddleJob": ({"Worker": 2}, {"worker": ["worker-0", "worker-1"]}, None),
    "JAXJob": ({"Worker": 2}, {"worker": ["worker-0", "worker-1"]}, "worker-0"),
    # Upstream v1 names the MPI launcher pod without an index; success follows the Launcher.
    "MPIJob": ({"Launcher": 1, "Worker": 2},
               {"launcher": ["launcher"], "worker": ["worker-0", "worker-1"]}, "launcher"),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_model_job_runs_to_success(training_client, kind):
    replicas, by_type, master = CASES[kind]
    name = f"{kind.lower()}-model"
    tc = training_client(kind)
    tc.create_job(make_job(kind, name, replicas, run_seconds="4"))

    got = tc.get_job(name)
    assert isinstance(got, MODEL[kind][0])
    assert sorted(getattr(got.spec, MODEL[kind][2])) == sorted(replicas)
    assert names(tc.list_jobs()) == [name]

    done = tc.wait_for_job_conditions(name, wait_timeout=120, polling_interval=1)
    assert tc.is_job_succeeded(job=done) and not tc.is_job_running(job=done)
    by_type_cond = {c.type: c for c in tc.get_job_conditions(name)}
    assert by_type_cond["Succeeded"].status == "True"
    assert by_type_cond["Succeeded"].reason == f"{kind}Succeeded"
    assert by_type_cond["Created"].status == "True"

    all_pods = sorted(f"{name}-{p}" for ps in by_type.values() for p in ps)
    assert sorted(tc.get_job_pod_names(name)) == all_pods
    for rtype, pods in by_type.items():
        assert sorted(tc.get_job_pod_names(name, replica_type=rtype)) == [f"{name}-{p}" for p in pods]
    if master is not None:
        assert tc.get_job_pod_names(name, is_master=True) == [f"{name}-{master}"]
    assert tc.get_job_pod_names(name, replica_type="worker", replica_index=1) == [f"{name}-worker-1"]

    tc.delete_job(name)
    with pytest.raises(RuntimeError):
        tc.get_job(name)
    assert tc.list_jobs() == []
    wait_until(lambda: tc.get_job_pod_names(name) == [], 90, "the deleted job's pods to go")


def test_job_kind_override_per_call(training_client):
    # One client, several kinds: job_kind= on each call, as the SDK allows.
    tc = training_client(constants.PYTORCHJOB_KIND)
    tc.create_job(make_job("XGBoostJob", "xgb-override", {"Master": 1}, run_seconds="2"))
    assert names(tc.list_jobs(job_kind="XGBoostJob")) == ["xgb-override"]
    assert tc.list_jobs() == []  # the client's own kind, PyTorchJob, has none
    tc.wait_for_job_conditions("xgb-override", job_kind="XGBoostJob", wait_timeout=120,
                               polling_interval=1)
    assert tc.is_job_succeeded("xgb-override", job_kind="XGBoostJob")
    tc.delete_job("xgb-override", job_kind="XGBoostJob")
    assert tc.list_jobs(job_kind="XGBoostJob") == []
