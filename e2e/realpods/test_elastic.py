"""An elastic PyTorchJob on real pods (Workers 2:3 under the training image's torchrun, c10d
rendezvous from elasticPolicy): while it trains, the node stops taking new pods (a NoSchedule taint
of the suite's own, as when capacity is gone) and one Worker's pod is deleted. The other two
rendezvous again and train on at world size 2 without their pods restarting; the replacement pod
waits Pending; once the taint is gone it runs, joins, and the job grows back to 3 and Succeeds with
one set of parameters on every rank. The job is never Restarting; status.coach.elastic tells 3, 2,
3.

Printed, as figures: the job's cold start (created -> every rank of the first rendezvous training),
from the Worker's loss to the two training again, and from the capacity's return to the three
training again; each against the cold start.
"""
import json
import re
import shutil
import time

import kube
from test_recovery import CHECKPOINT_ROOT, coach_status, parse_timestamp, timestamped_logs

TAINT = "coach.test/no-capacity"
EPOCHS = 14
EPOCH_SECONDS = 2
JOINED = re.compile(r"ddp_train: rank (\d+)/(\d+) ")


def elastic_job(name, checkpoint_dir):
    command = ["torchrun", "--nproc_per_node=1", "examples/pytorch/ddp_train.py",
               "--epochs", str(EPOCHS), "--epoch-seconds", str(EPOCH_SECONDS),
               "--checkpoint-dir", checkpoint_dir]
    mount = [{"name": "checkpoints", "mountPath": checkpoint_dir}]
    template = {"spec": {
        # The kubelet makes a missing hostPath directory root's; the image runs as uid 1000.
        "initContainers": [{"name": "checkpoint-dir-owner", "image": kube.TRAINING_IMAGE,
                            "command": ["chown", "1000:1000", checkpoint_dir],
                            "securityContext": {"runAsUser": 0}, "volumeMounts": mount}],
        "containers": [{"name": "pytorch", "image": kube.TRAINING_IMAGE, "command": command,
                        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                        "volumeMounts": mount}],
        "volumes": [{"name": "checkpoints",
                     "hostPath": {"path": checkpoint_dir, "type": "DirectoryOrCreate"}}]}}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
        "spec": {
            # A Worker that is gone is not waited for longer than 5 s once two are there.
            "elasticPolicy": {"minReplicas": 2, "maxReplicas": 3, "maxRestarts": 3,
                              "rdzvConf": [{"key": "last_call_timeout", "value": "5"}]},
            "runPolicy": {"backoffLimit": 3, "activeDeadlineSeconds": 600},
            "pytorchReplicaSpecs": {"Worker": {"replicas": 3, "restartPolicy": "OnFailure",
                                               "template": template}}}}


def joined(pod, ns, world_size, after=0.0):
    """When one of the pod's ranks joined a world of `world_size` after `after`, else None."""
    for stamp, line in timestamped_logs(pod, ns):
        m = JOINED.match(line)
        if m and int(m.group(2)) == world_size and stamp > after:
            return stamp
    return None


def first_join(pods, ns, world_size, after=0.0):
    """The latest of each pod's first join of `world_size` after `after`: every rank trains."""
    stamps = [joined(p, ns, world_size, after) for p in pods]
    return None if None in stamps else max(stamps)


def test_elastic_job_loses_a_worker_trains_at_two_and_grows_back(ns, capsys):
    checkpoint_dir = "%s/%s" % (CHECKPOINT_ROOT, ns)
    node = None
    name = "elastic"
    pods = ["%s-worker-%d" % (name, i) for i in range(3)]
    try:
        kube.apply(elastic_job(name, checkpoint_dir), ns)
        created = parse_timestamp(kube.get_json("pytorchjob", name, "-n", ns)["metadata"]
                                  ["creationTimestamp"])
        started = kube.wait_for(lambda: first_join(pods, ns, 3), 300, "3 ranks training",
                                interval=0.5)

        def saved_epoch_2():
            return any(line.startswith("coach-checkpoint saved epoch=2")
                       for p in pods for _, line in timestamped_logs(p, ns))
        kube.wait_for(saved_epoch_2, 180, "epoch 2's checkpoint", interval=0.5)

        node = kube.get_json("pod", pods[2], "-n", ns)["spec"]["nodeName"]
        kube.kubectl("taint", "node", node, TAINT + ":NoSchedule", "--overwrite")
        lost = time.time()
        kube.kubectl("delete", "pod", pods[2], "-n", ns, "--wait=false")

        survivors = pods[:2]
        shrunk = kube.wait_for(lambda: first_join(survivors, ns, 2, lost), 180,
                               "the other two training at world size 2", interval=0.5)

        def waiting():
            j = kube.get_json("pytorchjob", name, "-n", ns)
            got = kube.kubectl("get", "pod", pods[2], "-n", ns, "-o", "json", check=False)
            pod = json.loads(got.stdout) if got.returncode == 0 else {}
            return j if (coach_status(j).get("elastic", {}).get("workers") == 2
                         and pod.get("status", {}).get("phase") == "Pending") else None
        job_now = kube.wait_for(waiting, 120, "2 Workers and the replacement Pending", interval=1)
        assert kube.condition(job_now, "Running")["status"] == "True", job_now["status"]
        # Training goes on at 2: a checkpoint saved after the shrink.
        kube.wait_for(lambda: any(line.startswith("coach-checkpoint saved epoch=")
                                  for p in survivors for t, line in timestamped_logs(p, ns)
                                  if t > shrunk), 120, "a checkpoint at world size 2",
                      interval=0.5)

        kube.kubectl("taint", "node", node, TAINT + ":NoSchedule-")
        returned = time.time()
        node = None
        grown = kube.wait_for(lambda: first_join(pods, ns, 3, returned), 300,
                              "3 ranks training again", interval=0.5)

        done = kube.wait_finished("PyTorchJob", name, ns, timeout=420)
        assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
        assert kube.condition(done, "Restarting") is None, done["status"]
        elastic = coach_status(done)["elastic"]
        assert [c["workers"] for c in elastic["changes"]] == [3, 2, 3], elastic
        final = kube.pods_of(name, ns)
        for survivor in survivors:
            assert final[survivor]["status"]["containerStatuses"][0]["restartCount"] == 0, \
                final[survivor]["status"]
        results = kube.results(final, ns)
        assert {r["rank"] for r in results.values()} == {"0", "1", "2"}, results
        for pod, r in results.items():
            assert r["status"] == "ok" and r["world_size"] == "3", (pod, r)
            assert r["resumed_from"] != "-1", (pod, r)
        assert len({r["params_checksum"] for r in results.values()}) == 1, results

        cold = started - created
        with capsys.disabled():
            print("\n[realpods] elastic 2:3: cold start %.1f s; Worker lost -> 2 training %.1f s "
                  "(%.2fx); capacity back -> 3 training %.1f s (%.2fx)"
                  % (cold, shrunk - lost, (shrunk - lost) / cold, grown - returned,
                     (grown - returned) / cold))
    finally:
        if node is not None:
            kube.kubectl("taint", "node", node, TAINT + ":NoSchedule-", check=False)
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
