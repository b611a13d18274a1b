"""Fixtures of the upstream-SDK suite (see README.md); helpers are in sdk_helpers.py.

The tests use kubeflow-training 1.9.4 exactly as a user does: `TrainingClient(config_file=...,
namespace=..., job_kind=...)`, jobs built with the SDK's own model classes (or from a raw manifest),
against the control plane whose kubeconfig is in $KUBECONFIG and on which tools/suites/upstream_sdk.sh
runs coach-operator --backend=kube. Pods run on kwok fake nodes: the annotations of `pod_template`
decide how long they "run" and with which exit code (tools/testenv/README.md, "The pod contract").
"""

import os
import re
import subprocess
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from kubeflow.training import TrainingClient

from sdk_helpers import kubectl_path, wait_until


def in_ci():
    return os.environ.get("CI") == "true"


# --------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def kubeconfig():
    path = os.environ.get("KUBECONFIG", "")
    if not path or not os.path.isfile(path):
        msg = ("KUBECONFIG does not name a kubeconfig: run tools/suites/upstream_sdk.sh, which starts "
               "the control plane and coach-operator")
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def core(kubeconfig):
    return k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=kubeconfig))


@pytest.fixture
def namespace(request, core):
    """A fresh namespace per test (deleted afterwards), with its default ServiceAccount (pods need it)."""
    clean = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    ns = f"sdk-{clean}-{uuid.uuid4().hex[:5]}"
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ns)))
    wait_until(lambda: _has_default_sa(core, ns), 60, f"ServiceAccount default in {ns}")
    yield ns
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        _dump_namespace(core, ns)
    try:
        core.delete_namespace(ns)
    except ApiException:
        pass


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def training_client(kubeconfig, namespace):
    """training_client(kind) -> TrainingClient(config_file, namespace, job_kind=kind), as a user makes it."""

    def make(job_kind):
        return TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind=job_kind)

    return make


def _has_default_sa(core, ns):
    try:
        core.read_namespaced_service_account("default", ns)
        return True
    except ApiException:
        return False


def _dump_namespace(core, ns):
    """On failure: the namespace's pods and the operator log's tail, to read the cause."""
    print(f"\n---- pods in {ns}:")
    try:
        for p in core.list_namespaced_pod(ns).items:
            print(f"  {p.metadata.name} {p.status.phase} labels={p.metadata.labels}")
    except ApiException as e:
        print(f"  (cannot list: {e.reason})")
    kubectl = kubectl_path()
    if kubectl:
        out = subprocess.run([kubectl, "get", "kubeflow", "-n", ns, "-o", "yaml"],
                             capture_output=True, text=True, timeout=30)
        print(f"---- jobs in {ns}:\n{out.stdout[-6000:]}{out.stderr[-2000:]}")
    log = os.environ.get("COACH_UPSTREAM_SDK_OPERATOR_LOG")
    if log and os.path.isfile(log):
        with open(log, errors="replace") as f:
            lines = [l for l in f.read().splitlines() if ns in l]
        print(f"---- operator log lines about {ns} (last 40):")
        print("\n".join(lines[-40:]))


