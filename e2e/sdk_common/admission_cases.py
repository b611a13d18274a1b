"""The objects upstream Trainer's admission webhooks refuse, with the webhook and words each refusal
must carry: shared by e2e/kubeflow_sdk/test_admission.py (operator on loopback) and
e2e/realpods/test_admission.py (the chart's operator behind its Service). Plain dicts; only yaml.
"""

import copy
import os

import yaml

GROUP, VERSION = "trainer.kubeflow.org", "v1alpha1"
TRAINJOB_VALIDATOR = "validator.trainjob.trainer.kubeflow.org"
RUNTIME_VALIDATOR = "validator.trainingruntime.trainer.kubeflow.org"
CLUSTER_RUNTIME_VALIDATOR = "validator.clustertrainingruntime.trainer.kubeflow.org"
PATCHES_FORBIDDEN = ("spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the "
                     "TrainJob is suspended before or after the update")


def torch_runtime(kind, name, namespace=None):
    """Upstream's shipped torch runtime ($COACH_SHARED_DIR) as `kind` called `name`."""
    path = os.path.join(os.environ.get("COACH_SHARED_DIR", ""),
                        "reference/kubeflow-v2/runtimes/torch_distributed.yaml")
    with open(path) as f:
        runtime = yaml.safe_load(f)
    runtime["kind"] = kind
    runtime["metadata"] = {"name": name, "labels": dict(runtime["metadata"].get("labels", {}))}
    if namespace:
        runtime["metadata"]["namespace"] = namespace
    return runtime


def node_job(runtime):
    return next(j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node")


def trainjob(namespace, name, runtime_ref):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtimeRef": runtime_ref, "trainer": {"numNodes": 1}}}


def refused_objects(namespace):
    """(case, manifest, webhook, words) for the four objects refused at create."""
    no_node = torch_runtime("TrainingRuntime", "no-node", namespace)
    node_job(no_node)["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    two = torch_runtime("TrainingRuntime", "two-nodes", namespace)
    node_job(two)["replicas"] = 2
    return [
        ("a TrainingRuntime without a node container", no_node, RUNTIME_VALIDATOR,
         ["spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid value:",
          "must contain the required container for the ancestor: trainer"]),
        ("a TrainingRuntime with two trainer replicas", two, RUNTIME_VALIDATOR,
         ["spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1"]),
        ("a TrainJob on a missing ClusterTrainingRuntime",
         trainjob(namespace, "missing", {"name": "no-such-runtime"}), TRAINJOB_VALIDATOR,
         ['spec.RuntimeRef: Invalid value: {"name":"no-such-runtime","apiGroup":"trainer.kubeflow.org",'
          '"kind":"ClusterTrainingRuntime"}: clustertrainingruntimes.trainer.kubeflow.org '
          '"no-such-runtime" not found: specified clusterTrainingRuntime must be created before the '
          "TrainJob is created"]),
        ("a TrainJob with an unknown runtimeRef.kind",
         trainjob(namespace, "unknown-kind", {"name": "torch-distributed", "kind": "MyRuntime"}),
         TRAINJOB_VALIDATOR, ["unsupported runtime: MyRuntime.trainer.kubeflow.org"]),
    ]


def labels_patch(manager, team):
    """A runtime patch by `manager` that labels the node job's pods team=`team`."""
    node = {"name": "node", "template": {"spec": {"template": {"metadata": {"labels": {"team": team}}}}}}
    return {"manager": manager,
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node]}}}}


def patched_trainjob(namespace, name, runtime_name, runtime_kind="ClusterTrainingRuntime"):
    """A TrainJob whose runtimePatches the tests change, and the two merge patches: the change alone
    (refused while it runs) and the change with suspend (allowed)."""
    job = trainjob(namespace, name, {"name": runtime_name, "kind": runtime_kind})
    job["spec"]["runtimePatches"] = [labels_patch("example.com/tuner", "a")]
    changed = [labels_patch("example.com/other", "b")]
    return job, {"spec": {"runtimePatches": changed}}, {"spec": {"suspend": True,
                                                                "runtimePatches": copy.deepcopy(changed)}}


def check_denied(returncode, stderr, webhook, words):
    """kubectl failed with `webhook`'s refusal, holding every one of `words`."""
    assert returncode != 0, "stored, not refused"
    assert f'admission webhook "{webhook}" denied the request: ' in stderr, stderr
    for w in words:
        assert w in stderr, stderr
