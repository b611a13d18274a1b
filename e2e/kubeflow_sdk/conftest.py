"""Fixtures of the Kubeflow SDK suite (see README.md).

The tests use `kubeflow` 0.5.0 (Kubeflow Trainer v2's Python SDK) exactly as a user does:
`TrainerClient(KubernetesBackendConfig(config_file=..., namespace=...))` and its methods, against the
control plane whose kubeconfig is in $KUBECONFIG and on which tools/suites/upstream_sdk.sh runs
coach-operator --backend=kube, with upstream's shipped runtimes applied unchanged. Pods run on kwok fake
nodes: pod annotations (set through the SDK's own RuntimePatch option) decide how long they "run" and
with which exit code (tools/testenv/README.md, "The pod contract").
"""

import os
import subprocess
import sys

import pytest

from kubeflow.trainer import KubernetesBackendConfig, TrainerClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk_common"))
from kube_fixtures import *  # noqa: E402,F401,F403  (kubeconfig, core, namespace, the report hook)
from kube_fixtures import in_ci, kubectl_path  # noqa: E402

RUNTIMES = "reference/kubeflow-v2/runtimes"


@pytest.fixture(scope="session")
def upstream_runtimes(kubeconfig):
    """Upstream's shipped ClusterTrainingRuntimes, applied unchanged with kubectl."""
    shared = os.environ.get("COACH_SHARED_DIR", "")
    if not shared or not os.path.isdir(os.path.join(shared, RUNTIMES)):
        msg = "COACH_SHARED_DIR does not hold reference/kubeflow-v2/runtimes"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    names = []
    for f in ("torch_distributed.yaml", "jax_distributed.yaml", "xgboost_distributed.yaml",
              "deepspeed_distributed.yaml"):
        out = subprocess.run([kubectl_path(), "--kubeconfig", kubeconfig, "apply", "--server-side", "-f",
                              os.path.join(shared, RUNTIMES, f)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        names.append(f.replace("_", "-").removesuffix(".yaml"))
    return names


@pytest.fixture
def trainer_client(kubeconfig, namespace, upstream_runtimes):
    """TrainerClient(KubernetesBackendConfig(config_file, namespace)), as a user makes it."""
    return TrainerClient(KubernetesBackendConfig(config_file=kubeconfig, namespace=namespace))
