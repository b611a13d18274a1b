"""Jobs applied as raw YAML without `spec.runPolicy` (kubectl apply, as most upstream examples do).

Every spec model of kubeflow-training 1.9.4 declares run_policy required and its deserializer raises
"Invalid value for `run_policy`, must not be `None`", which get_job turns into a bare
RuntimeError("Failed to get ...") and list_jobs into RuntimeError("Failed to list ..."), for every job
of the namespace. So the server must store a runPolicy for every job: coach's CRDs default it.
"""

import pytest

from sdk_helpers import kubectl_apply, names

# kind -> (replica-specs key, replica types, default container)
KINDS = {
    "PyTorchJob": ("pytorchReplicaSpecs", ["Master", "Worker"], "pytorch"),
    "TFJob": ("tfReplicaSpecs", ["Worker"], "tensorflow"),
    "XGBoostJob": ("xgbReplicaSpecs", ["Master", "Worker"], "xgboost"),
    "MPIJob": ("mpiReplicaSpecs", ["Launcher", "Worker"], "mpi"),
    "PaddleJob": ("paddleReplicaSpecs", ["Worker"], "paddle"),
    "JAXJob": ("jaxReplicaSpecs", ["Worker"], "jax"),
}


def manifest(kind, name):
    key, types, container = KINDS[kind]
    specs = "".join(f"""
    {t}:
      replicas: 1
      template:
        metadata:
          annotations: {{coach.test/exit-code: "0", coach.test/run-seconds: "2"}}
        spec:
          containers:
          - name: {container}
            image: coach.local/none:latest""" for t in types)
    return f"""apiVersion: kubeflow.org/v1
kind: {kind}
metadata:
  name: {name}
spec:
  {key}:{specs}
"""


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_get_and_list_without_run_policy(training_client, namespace, kind):
    name = f"{kind.lower()}-no-rp"
    body = manifest(kind, name)
    assert "runPolicy" not in body
    kubectl_apply(namespace, body)
    tc = training_client(kind)

    job = tc.get_job(name)
    assert job.metadata.name == name
    assert job.spec.run_policy is not None
    assert names(tc.list_jobs()) == [name]
    assert tc.get_job_conditions(name) is not None  # a list (may still be empty)

    tc.delete_job(name)
    assert tc.list_jobs() == []


def test_pytorchjob_without_run_policy_runs_to_success(training_client, namespace):
    kubectl_apply(namespace, manifest("PyTorchJob", "pt-no-rp-run"))
    tc = training_client("PyTorchJob")
    done = tc.wait_for_job_conditions("pt-no-rp-run", wait_timeout=120, polling_interval=1)
    assert tc.is_job_succeeded(job=done)
    assert sorted(tc.get_job_pod_names("pt-no-rp-run")) == ["pt-no-rp-run-master-0",
                                                            "pt-no-rp-run-worker-0"]
    tc.delete_job("pt-no-rp-run")
