"""Whole-job recovery on real pods: the 3-rank gloo job of examples/pytorch/pytorch-ddp-recovery-kube.yaml
(coach.dev/restart-scope: Job, a checkpoint after every epoch on a hostPath volume) loses rank 2's
training process to a kill -9 from the host; the job restarts every replica once, resumes from the
checkpoint and succeeds with one set of parameters on every rank.

The kill comes from the host, not from inside the container: the program is the container's PID 1,
which ignores SIGKILL sent from its own PID namespace. So the node's processes must be visible from
here (the testenv's real node is this host; kind's nodes are containers of this host): the test
finds the process by RANK=2 in its environment and the job's own checkpoint directory in its
command line.

Printed, as figures: the cold start (apply -> the first coach-metric line of rank 0) and the
recovery (kill -> the first coach-metric line of rank 0 in attempt 1), both from the container
runtime's log timestamps (kubectl logs --timestamps).
"""
import datetime
import os
import shutil
import signal
import time

import yaml

import kube

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = "examples/pytorch/pytorch-ddp-recovery-kube.yaml"
EPOCHS = 8
EPOCH_SECONDS = 2
KILL_AFTER_EPOCH = 2
# The host directory of the checkpoints: one per test (the namespace's name), removed afterwards.
CHECKPOINT_ROOT = "/var/lib/coach-ddp-recovery"


def recovery_job(name, checkpoint_dir):
    """The example, short, with its checkpoints in `checkpoint_dir`, mounted at the same path.

    The same path inside the containers puts the job's own directory into every rank's command
    line, which tells this job's processes from any other's on the host.
    """
    with open(os.path.join(ROOT, EXAMPLE)) as f:
        job = yaml.safe_load(f)
    job["metadata"] = {"name": name, "annotations": job["metadata"]["annotations"]}
    # The example's deadline fits a machine of its own; here the node shares 2 CPUs with the
    # control plane and three ranks importing torch at once.
    job["metadata"]["annotations"]["coach.dev/progress-deadline"] = "180s"
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        for volume in spec["volumes"]:
            volume["hostPath"]["path"] = checkpoint_dir
        for c in spec.get("initContainers", []) + spec["containers"]:
            c["image"] = kube.TRAINING_IMAGE
            c.setdefault("resources", {})["requests"] = {"cpu": "100m", "memory": "256Mi"}
            for mount in c["volumeMounts"]:
                mount["mountPath"] = checkpoint_dir
            if c["command"][0] == "chown":
                c["command"][-1] = checkpoint_dir
                continue
            command = c["command"]
            command[command.index("--epochs") + 1] = str(EPOCHS)
            command[command.index("--epoch-seconds") + 1] = str(EPOCH_SECONDS)
            command[command.index("--checkpoint-dir") + 1] = checkpoint_dir
    return job


def find_rank_process(rank, checkpoint_dir):
    """The pid of the training process of global rank `rank` of the job that checkpoints in
    `checkpoint_dir`, from /proc; None when there is none."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
            if not any(a.endswith(b"ddp_train.py") for a in argv) or \
                    checkpoint_dir.encode() not in argv:
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        if ("RANK=%d" % rank).encode() in environ:
            return int(entry)
    return None


def parse_timestamp(text):
    """An RFC 3339 time with up to nanoseconds (the CRI log's), as seconds since the epoch."""
    text = text.rstrip("Z")
    whole, _, fraction = text.partition(".")
    t = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() + (float("0." + fraction) if fraction else 0.0)


def timestamped_logs(pod, namespace):
    """(time, line) of a pod's log lines, from the container runtime's timestamps."""
    out = []
    text = kube.kubectl("logs", pod, "-n", namespace, "--timestamps", check=False).stdout
    for line in text.splitlines():
        stamp, _, rest = line.partition(" ")
        try:
            out.append((parse_timestamp(stamp), rest))
        except ValueError:
            continue
    return out


def first_metric(lines):
    for t, line in lines:
        if line.startswith("coach-metric "):
            return t
    return None


def container_started(pod, namespace):
    """When the pod's training container started (whole seconds), as seconds since the epoch."""
    status = kube.get_json("pod", pod, "-n", namespace)["status"]["containerStatuses"][0]["state"]
    for state in ("running", "terminated"):
        if "startedAt" in status.get(state, {}):
            return parse_timestamp(status[state]["startedAt"])
    return None


def coach_status(job):
    return job.get("status", {}).get("coach", {})


def test_kill_nine_of_a_rank_restarts_the_whole_job_once_and_resumes(ns, capsys):
    checkpoint_dir = "%s/%s" % (CHECKPOINT_ROOT, ns)
    try:
        job = recovery_job("recover", checkpoint_dir)
        submitted = time.time()
        kube.apply(job, ns)

        # Attempt 0, until rank 0 saved the checkpoint of epoch KILL_AFTER_EPOCH.
        saved = "coach-checkpoint saved epoch=%d" % KILL_AFTER_EPOCH

        def saved_lines():
            lines = timestamped_logs("recover-master-0", ns)
            return lines if any(line.startswith(saved) for _, line in lines) else None

        first_run = kube.wait_for(saved_lines, 300, "rank 0 to log '%s'" % saved, interval=0.5)
        cold_metric = first_metric(first_run)
        assert cold_metric is not None, first_run
        cold_container = container_started("recover-master-0", ns)
        pid = kube.wait_for(lambda: find_rank_process(2, checkpoint_dir), 30,
                            "rank 2's training process on this host (the node must be this host)")
        killed = time.time()
        os.kill(pid, signal.SIGKILL)

        done = kube.wait_finished("PyTorchJob", "recover", ns, timeout=420)
        assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
        coach = coach_status(done)
        assert coach.get("restarts", 0) == 1, coach
        assert coach.get("attempt", 0) == 1, coach
        assert coach.get("disruptions", 0) == 0, coach

        pods = kube.pods_of("recover", ns)
        assert set(pods) == {"recover-master-0", "recover-worker-0", "recover-worker-1"}
        for name, pod in pods.items():
            assert pod["metadata"]["labels"].get("coach.dev/attempt") == "1", (name, pod["metadata"])
        results = kube.results(pods, ns)
        assert set(results) == set(pods), results
        assert {r["rank"] for r in results.values()} == {"0", "1", "2"}, results
        for name, r in results.items():
            assert r["status"] == "ok", (name, r)
            assert r["attempt"] == "1", (name, r)
            assert int(r["resumed_from"]) >= 1, (name, r)
        assert len({r["params_checksum"] for r in results.values()}) == 1, results

        # The figures: the recovery against the cold start of the same job.
        second_run = timestamped_logs("recover-master-0", ns)
        recovered_metric = first_metric(second_run)
        assert recovered_metric is not None, second_run
        recovered_container = container_started("recover-master-0", ns)
        resumed = [line for _, line in second_run if line.startswith("coach-checkpoint resumed")]
        with capsys.disabled():  # in the suite's log without pytest -s
            print("\n[realpods] recovery: cold start (apply -> first coach-metric of rank 0) %.1f s "
                  "(rank 0's container started after %.0f s); kill -9 of rank 2 -> first "
                  "coach-metric of rank 0 in attempt 1 %.1f s (its container started after %.0f s); "
                  "%s" % (cold_metric - submitted, cold_container - submitted,
                          recovered_metric - killed, recovered_container - killed,
                          resumed[0] if resumed else "no resume line"))
    finally:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
        try:
            os.rmdir(CHECKPOINT_ROOT)  # the kubelet made it for the hostPath; kept if not empty
        except OSError:
            pass
