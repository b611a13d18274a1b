"""Every framework trains for real, started the way its users start it: TensorFlow's
MultiWorkerMirroredStrategy from TF_CONFIG, JAX's jax.distributed.initialize(), PaddlePaddle's
paddle.distributed.launch, XGBoost's collective tracker (Debian's 1.7 and PyPI's current 3.x). Each
job ends Succeeded and every rank reports the same parameters."""
import json

import kube
from test_pytorch import assert_trained_in_sync, example


def framework_example(path, name, image):
    job = example(path, name)
    for replica in job["spec"][kube.SPECS_KEY[job["kind"]]].values():
        for c in replica["template"]["spec"]["containers"]:
            c["image"] = image
            # The frameworks' imports take more than the PyTorch examples' requests.
            c["resources"]["requests"] = {"cpu": "100m", "memory": "512Mi"}
    return job


def env_of(pod, name):
    for e in pod["spec"]["containers"][0].get("env", []):
        if e["name"] == name:
            return e
    raise AssertionError("%s has no %s" % (pod["metadata"]["name"], name))


def run_and_check(kind, job, ns, expect_pods, timeout=420):
    """Applies the job, waits for Succeeded; returns its pods and their coach-result lines."""
    name = job["metadata"]["name"]
    kube.apply(job, ns)
    done = kube.wait_finished(kind, name, ns, timeout=timeout)
    pods = kube.pods_of(name, ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", (
        done["status"], {p: kube.logs(p, ns)[-2000:] for p in pods})
    assert set(pods) == set(expect_pods), pods
    return pods, kube.results(pods, ns)


def test_tfjob_trains_with_multi_worker_mirrored_strategy(ns):
    job = framework_example("examples/tensorflow/tfjob-mwms.yaml", "tf",
                            kube.FRAMEWORK_IMAGES["tensorflow"])
    pods, results = run_and_check("TFJob", job, ns, ["tf-chief-0", "tf-worker-0", "tf-worker-1"])
    assert_trained_in_sync(list(results.values()), 3, "checksum")
    # The ranks are TensorFlow's (chief first), each read from the TF_CONFIG the operator wrote.
    assert {p: int(r["rank"]) for p, r in results.items()} == {
        "tf-chief-0": 0, "tf-worker-0": 1, "tf-worker-1": 2}, results
    cfg = json.loads(env_of(pods["tf-worker-1"], "TF_CONFIG")["value"])
    assert cfg["task"] == {"type": "worker", "index": 1}
    assert cfg["cluster"]["chief"] == ["tf-chief-0.%s.svc:2222" % ns]


def test_jaxjob_trains_with_jax_distributed(ns):
    job = framework_example("examples/jax/jaxjob.yaml", "jax", kube.FRAMEWORK_IMAGES["jax"])
    job["spec"]["jaxReplicaSpecs"]["Worker"]["replicas"] = 3
    pods, results = run_and_check("JAXJob", job, ns, ["jax-worker-0", "jax-worker-1", "jax-worker-2"])
    assert_trained_in_sync(list(results.values()), 3, "checksum")
    # JAX's process index is the operator's PROCESS_ID, the pod's index.
    assert {p: int(r["rank"]) for p, r in results.items()} == {
        "jax-worker-%d" % i: i for i in range(3)}, results


def test_paddlejob_trains_under_paddle_distributed_launch(ns):
    job = framework_example("examples/paddle/paddlejob.yaml", "paddle", kube.FRAMEWORK_IMAGES["paddle"])
    pods, results = run_and_check("PaddleJob", job, ns, ["paddle-worker-0", "paddle-worker-1"])
    assert_trained_in_sync(list(results.values()), 2, "checksum")
    # The first worker's launcher is the master, on its own pod IP (downward API).
    assert env_of(pods["paddle-worker-0"], "PADDLE_MASTER")["value"] == "$(POD_IP_DUMMY):36543"
    assert env_of(pods["paddle-worker-1"], "PADDLE_MASTER")["value"] == "paddle-worker-0:36543"
    for name in pods:  # paddle's launcher started each rank
        assert "LAUNCH INFO" in kube.logs(name, ns), name


def check_xgboost(ns, name, image):
    job = framework_example("examples/xgboost/xgboost-dist.yaml", name, image)
    for replica in job["spec"]["xgbReplicaSpecs"].values():
        for c in replica["template"]["spec"]["containers"]:
            # The image's python3 (a framework image's venv), not Debian's, which the manifest names
            # for the local backend.
            c["command"][0] = "python3"
    pods, results = run_and_check(
        "XGBoostJob", job, ns, [name + "-master-0", name + "-worker-0", name + "-worker-1"])
    assert_trained_in_sync(list(results.values()), 3, "model_checksum")
    # Workers waited for the Master's name (the tracker connection fails at once when it does not resolve).
    for worker in (name + "-worker-0", name + "-worker-1"):
        inits = pods[worker]["status"]["initContainerStatuses"]
        assert [s["name"] for s in inits] == ["init-xgboost"], inits
    return pods


def test_xgboost_trains_distributed(ns):
    check_xgboost(ns, "xgb", kube.TRAINING_IMAGE)


def test_current_xgboost_trains_with_its_collective_tracker(ns):
    pods = check_xgboost(ns, "xgb3", kube.FRAMEWORK_IMAGES["xgboost"])
    # The program ran on XGBoost 3 (its tracker API), not Debian's 1.7.
    for pod in pods:
        log = kube.logs(pod, ns)
        assert "(xgboost=3." in log, log[-2000:]
