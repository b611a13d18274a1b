"""Fixtures of the upstream-SDK suite (see README.md); helpers are in sdk_helpers.py.

The tests use kubeflow-training 1.9.4 exactly as a user does: `TrainingClient(config_file=...,
namespace=..., job_kind=...)`, jobs built with the SDK's own model classes (or from a raw manifest),
against the control plane whose kubeconfig is in $KUBECONFIG and on which tools/suites/upstream_sdk.sh
runs coach-operator --backend=kube. Pods run on kwok fake nodes: the annotations of `pod_template`
decide how long they "run" and with which exit code (tools/testenv/README.md, "The pod contract").
"""

import os
import sys

import pytest

from kubeflow.training import TrainingClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk_common"))
from kube_fixtures import *  # noqa: E402,F401,F403  (kubeconfig, core, namespace, the report hook)


@pytest.fixture
def training_client(kubeconfig, namespace):
    """training_client(kind) -> TrainingClient(config_file, namespace, job_kind=kind), as a user makes it."""

    def make(job_kind):
        return TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind=job_kind)

    return make
