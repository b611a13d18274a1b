"""Fixtures both SDK suites share (e2e/upstream_sdk: kubeflow-training 1.9.4; e2e/kubeflow_sdk: kubeflow
0.5.0): the control plane's kubeconfig, a CoreV1Api, a fresh namespace per test and, on failure, a dump of
what the namespace holds. Only the `kubernetes` client is imported here, which both venvs have.

A conftest uses them with `from kube_fixtures import *` after putting this folder on sys.path.
"""

import os
import re
import shutil
import subprocess
import time
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

__all__ = ["in_ci", "kubeconfig", "core", "namespace", "pytest_runtest_makereport", "kubectl_path",
           "wait_until"]


def in_ci():
    return os.environ.get("CI") == "true"


def kubectl_path():
    return os.environ.get("COACH_UPSTREAM_SDK_KUBECTL") or shutil.which("kubectl")


def wait_until(pred, timeout, what, interval=0.25):
    """Polls pred() until it is truthy; returns its value, or fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


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


def _has_default_sa(core, ns):
    try:
        core.read_namespaced_service_account("default", ns)
        return True
    except ApiException:
        return False


def _dump_namespace(core, ns):
    """On failure: the namespace's pods, jobs and the operator log's tail, to read the cause."""
    print(f"\n---- pods in {ns}:")
    try:
        for p in core.list_namespaced_pod(ns).items:
            print(f"  {p.metadata.name} {p.status.phase} labels={p.metadata.labels}")
    except ApiException as e:
        print(f"  (cannot list: {e.reason})")
    kubectl = kubectl_path()
    if kubectl:
        out = subprocess.run([kubectl, "get", "kubeflow,trainjobs", "-n", ns, "-o", "yaml"],
                             capture_output=True, text=True, timeout=30)
        print(f"---- jobs in {ns}:\n{out.stdout[-6000:]}{out.stderr[-2000:]}")
    log = os.environ.get("COACH_UPSTREAM_SDK_OPERATOR_LOG")
    if log and os.path.isfile(log):
        with open(log, errors="replace") as f:
            lines = [l for l in f.read().splitlines() if ns in l]
        print(f"---- operator log lines about {ns} (last 40):")
        print("\n".join(lines[-40:]))
