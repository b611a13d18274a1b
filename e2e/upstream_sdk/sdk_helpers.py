"""Helpers of the upstream-SDK tests: jobs built with the SDK's model classes, waiting, retries."""

import subprocess
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kubeflow.training import models
from kubeflow.training.constants import constants

from kube_fixtures import kubectl_path, wait_until  # noqa: F401  (conftest put it on sys.path)

# An image name that is never pulled: kwok runs no containers.
IMAGE = "coach.local/none:latest"

# The SDK's model class, its spec class and the spec's replica-specs attribute of each kind.
MODEL = {
    "PyTorchJob": (models.KubeflowOrgV1PyTorchJob, models.KubeflowOrgV1PyTorchJobSpec, "pytorch_replica_specs"),
    "TFJob": (models.KubeflowOrgV1TFJob, models.KubeflowOrgV1TFJobSpec, "tf_replica_specs"),
    "XGBoostJob": (models.KubeflowOrgV1XGBoostJob, models.KubeflowOrgV1XGBoostJobSpec, "xgb_replica_specs"),
    "MPIJob": (models.KubeflowOrgV1MPIJob, models.KubeflowOrgV1MPIJobSpec, "mpi_replica_specs"),
    "PaddleJob": (models.KubeflowOrgV1PaddleJob, models.KubeflowOrgV1PaddleJobSpec, "paddle_replica_specs"),
    "JAXJob": (models.KubeflowOrgV1JAXJob, models.KubeflowOrgV1JAXJobSpec, "jax_replica_specs"),
}


# --------------------------------------------------------------------------------- helpers


def pod_template(container, exit_code="0", run_seconds="3", image=IMAGE, annotations=None):
    """A V1PodTemplateSpec whose pods exit with `exit_code` after `run_seconds` on kwok; exit_code=None:
    they run until deleted."""
    ann = dict(annotations or {})
    if exit_code is not None:
        ann["coach.test/exit-code"] = str(exit_code)
        ann["coach.test/run-seconds"] = str(run_seconds)
    return k8s.V1PodTemplateSpec(
        metadata=k8s.V1ObjectMeta(annotations=ann or None),
        spec=k8s.V1PodSpec(containers=[
            k8s.V1Container(name=container, image=image, command=["python3", "-u", "train.py"])
        ]),
    )


def make_job(kind, name, replicas, container=None, exit_code="0", run_seconds="3", run_policy=None,
             restart_policy=None):
    """A job of `kind` built with the SDK's model classes: replicas maps replica type -> count."""
    job_cls, spec_cls, specs_attr = MODEL[kind]
    container = container or constants.JOB_PARAMETERS[kind]["container"]
    specs = {
        rtype: models.KubeflowOrgV1ReplicaSpec(
            replicas=n,
            restart_policy=restart_policy,
            template=pod_template(container, exit_code, run_seconds),
        )
        for rtype, n in replicas.items()
    }
    spec = spec_cls(
        run_policy=run_policy or models.KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
        **{specs_attr: specs},
    )
    return job_cls(
        api_version=constants.API_VERSION,
        kind=kind,
        metadata=k8s.V1ObjectMeta(name=name),
        spec=spec,
    )


def names(jobs):
    return sorted(j.metadata.name for j in jobs)


def condition(job, ctype):
    for c in (job.status.conditions or []) if job.status else []:
        if c.type == ctype:
            return c
    return None


def replica_status(job, rtype):
    """The job's replicaStatuses entry for `rtype`, or None: the operator writes status after its first
    pass, and a spec update between a pass and its status write postpones that write to the next pass."""
    statuses = (job.status.replica_statuses or {}) if job.status else {}
    return statuses.get(rtype)


def wait_condition(client, name, ctype, timeout=60, status="True"):
    """Polls get_job until condition `ctype` has `status`; returns the job."""

    def check():
        job = client.get_job(name)
        c = condition(job, ctype)
        return job if c is not None and c.status == status else None

    return wait_until(check, timeout, f"{name}: condition {ctype}={status}")


def server_error(exc):
    """The kubernetes ApiException behind a TrainingClient RuntimeError (create_job raises `from e`)."""
    cause = exc.__cause__
    return cause if isinstance(cause, ApiException) else None


def update_with_retry(client, name, mutate, attempts=10):
    """get_job, mutate(job), update_job: the read-modify-write a user writes. update_job sends the whole
    object as a merge patch including metadata.resourceVersion, so a status write by the operator in
    between is a 409 Conflict: read again and retry, as a user must with upstream too."""
    for i in range(attempts):
        job = client.get_job(name)
        mutate(job)
        try:
            client.update_job(job, name)
            return
        except RuntimeError as e:
            if "(409)" not in str(e) or i == attempts - 1:
                raise
            time.sleep(0.2)


def kubectl_apply(namespace, manifest_yaml):
    """`kubectl apply -n NS -f -` of a raw YAML manifest, as a user does outside the SDK."""
    kubectl = kubectl_path()
    if not kubectl:
        pytest.fail("no kubectl: set COACH_UPSTREAM_SDK_KUBECTL (tools/suites/upstream_sdk.sh does)")
    out = subprocess.run([kubectl, "apply", "-n", namespace, "-f", "-"], input=manifest_yaml,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"kubectl apply failed: {out.stderr}\n{manifest_yaml}"
