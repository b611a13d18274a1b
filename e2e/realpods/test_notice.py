"""Checkpoint on notice on real pods: the 3-rank gloo job of
examples/pytorch/pytorch-ddp-recovery-kube.yaml behind coach-launch, printing its optimizer steps
(COACH_STEP_METRICS). While it trains, its node is tainted `karpenter.sh/disrupted` and one Worker
is evicted through the Eviction API (what Karpenter does to a node it removes). The operator asks
every rank for a checkpoint, the evicted pod's coach-launch holds its SIGTERM until its ranks have
answered, the ranks agree on one step and save it, the job restarts without spending its budget,
and once the taint is gone it resumes from that step (mid-epoch) with no step lost and ends with
one set of parameters on every rank. The same job losing rank 0 without notice (its process
SIGKILLed, as when a node dies at once) loses the steps since its last epoch's checkpoint.

Printed, as figures: from the taint to rank 0's saved checkpoint; the steps lost with and without
the notice.
"""
import json
import os
import re
import signal
import shutil
import time

import kube
from test_recovery import (CHECKPOINT_ROOT, coach_status, find_rank_process, launcher_stall_job,
                           timestamped_logs)

TAINT = "karpenter.sh/disrupted"
STEP = re.compile(r"coach-metric name=global_step value=\S+ step=(\d+)")
SAVED = re.compile(r"coach-checkpoint saved_on_notice request=(\d+) step=(\d+) epoch=(\d+) "
                   r"batch=(\d+)")


def notice_job(name, checkpoint_dir):
    """The recovery example behind coach-launch, printing every optimizer step, with a deadline
    long enough that it restarts for the notice or the lost pod, never for a stall."""
    job = launcher_stall_job(name, checkpoint_dir)
    job["metadata"]["annotations"]["coach.dev/progress-deadline"] = "300s"
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        for c in replica["template"]["spec"]["containers"]:
            c.setdefault("env", []).append({"name": "COACH_STEP_METRICS", "value": "1"})
    return job


def evict(pod, ns):
    """The pod's eviction through the Eviction API (policy/v1), as a drain or Karpenter makes it."""
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": pod, "namespace": ns}}
    kube.kubectl("create", "--raw", "/api/v1/namespaces/%s/pods/%s/eviction" % (ns, pod), "-f",
                 "-", stdin=json.dumps(body))


def first_attempt_cost(job):
    """status.coach.attempts[0] once it knows its steps lost, else None."""
    attempts = coach_status(job).get("attempts", [])
    return attempts[0] if attempts and "stepsLost" in attempts[0] else None


def test_node_disruption_taint_and_eviction_make_every_rank_save_at_one_step_and_lose_none(
        ns, capsys):
    checkpoint_dir = "%s/%s" % (CHECKPOINT_ROOT, ns)
    node = None
    try:
        kube.apply(notice_job("notice", checkpoint_dir), ns)

        def trained():
            lines = timestamped_logs("notice-master-0", ns)
            return lines if any(line.startswith("coach-checkpoint saved epoch=1")
                                for _, line in lines) else None

        kube.wait_for(trained, 300, "rank 0 to save epoch 1", interval=0.5)
        node = kube.get_json("pod", "notice-master-0", "-n", ns)["spec"]["nodeName"]
        tainted = time.time()
        kube.kubectl("taint", "node", node, TAINT + ":NoSchedule", "--overwrite")
        # Karpenter evicts the node's pods right after it taints the node: the evicted pod's
        # SIGTERM comes before the operator's request reaches its launcher.
        evict("notice-worker-1", ns)

        def saved():
            for stamp, line in timestamped_logs("notice-master-0", ns):
                m = SAVED.match(line)
                if m:
                    return stamp, m
            return None

        saved_at, m = kube.wait_for(saved, 120, "rank 0 to save on notice", interval=0.5)
        step, epoch, batch = int(m.group(2)), int(m.group(3)), int(m.group(4))

        # The restart: attempt 1, whose pods wait while the node is tainted.
        def restarted():
            j = kube.get_json("pytorchjob", "notice", "-n", ns)
            return j if coach_status(j).get("attempt", 0) == 1 else None

        job_now = kube.wait_for(restarted, 180, "the job's attempt 1", interval=1)
        first = coach_status(job_now)["attempts"][0]
        assert first.get("counted") is not True, first
        assert "every rank saved a checkpoint at step %d" % step in first.get("message", ""), first
        kube.kubectl("taint", "node", node, TAINT + ":NoSchedule-")
        node = None

        done = kube.wait_finished("PyTorchJob", "notice", ns, timeout=420)
        assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
        coach = coach_status(done)
        assert coach.get("restarts", 0) == 0, coach
        pods = kube.pods_of("notice", ns)
        results = kube.results(pods, ns)
        assert {r["rank"] for r in results.values()} == {"0", "1", "2"}, results
        for name, r in results.items():
            assert r["status"] == "ok", (name, r)
            assert r["attempt"] == "1", (name, r)
        assert len({r["params_checksum"] for r in results.values()}) == 1, results
        # No step lost: the interrupted attempt's last reported step is where the next resumed.
        cost = kube.wait_for(lambda: first_attempt_cost(kube.get_json("pytorchjob", "notice",
                                                                      "-n", ns)),
                             30, "attempt 0's steps lost")
        assert cost["stepsLost"] == 0, cost
        assert cost["lastStep"] == step, (cost, step)
        resumed = [line for _, line in timestamped_logs("notice-master-0", ns)
                   if line.startswith("coach-checkpoint resumed_from_epoch=")]
        assert resumed, "no resume line"
        # From the notice's checkpoint (epoch - 1 complete, `batch` batches into `epoch`), or a
        # later one: the ranks train on until their pods go.
        r = re.match(r"coach-checkpoint resumed_from_epoch=(\d+)(?: batch=(\d+))?", resumed[0])
        assert r, resumed[0]
        assert (int(r.group(1)), int(r.group(2) or 0)) >= (epoch - 1, batch), \
            (resumed[0], m.group(0))
        with capsys.disabled():
            print("\n[realpods] checkpoint on notice: taint + eviction -> rank 0's checkpoint "
                  "saved %.1f s (step %d, epoch %d, batch %d); %s; steps lost %d" %
                  (saved_at - tainted, step, epoch, batch, resumed[0], cost["stepsLost"]))
    finally:
        if node is not None:
            kube.kubectl("taint", "node", node, TAINT + ":NoSchedule-", check=False)
        shutil.rmtree(checkpoint_dir, ignore_errors=True)


def test_without_notice_a_killed_rank_loses_the_steps_since_the_last_checkpoint(ns, capsys):
    """The same job, rank 0's process SIGKILLed in its second epoch: no SIGTERM, so no notice
    (a node that dies at once; even a forced delete leaves the kubelet's SIGTERM, which
    coach-launch holds for the request). The job restarts, counted, from the last epoch's
    checkpoint; the steps after it are lost, up to one epoch's."""
    checkpoint_dir = "%s/%s" % (CHECKPOINT_ROOT, ns)
    try:
        kube.apply(notice_job("lost", checkpoint_dir), ns)

        def in_epoch_2():
            lines = [line for _, line in timestamped_logs("lost-master-0", ns)]
            if "coach-checkpoint saved epoch=1" not in lines:
                return None
            saved = lines.index("coach-checkpoint saved epoch=1")
            steps = [int(m.group(1)) for m in map(STEP.match, lines) if m]
            per_epoch = max(int(m.group(1)) for m in map(STEP.match, lines[:saved]) if m)
            return per_epoch if steps and max(steps) > per_epoch else None

        # The steps of one epoch: the checkpoint interval.
        per_epoch = kube.wait_for(in_epoch_2, 300, "rank 0 to step into epoch 2", interval=0.2)
        pid = kube.wait_for(lambda: find_rank_process(0, checkpoint_dir), 30,
                            "rank 0's training process on this host (the node must be this host)")
        os.kill(pid, signal.SIGKILL)

        done = kube.wait_finished("PyTorchJob", "lost", ns, timeout=420)
        assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
        coach = coach_status(done)
        assert coach.get("restarts", 0) == 1, coach
        results = kube.results(kube.pods_of("lost", ns), ns)
        assert len({r["params_checksum"] for r in results.values()}) == 1, results
        cost = kube.wait_for(lambda: first_attempt_cost(kube.get_json("pytorchjob", "lost",
                                                                      "-n", ns)),
                             30, "attempt 0's steps lost")
        # It resumed at an epoch's end: the steps reported after it were done again.
        assert 0 < cost["stepsLost"] <= per_epoch, (cost, per_epoch)
        assert (cost["lastStep"] - cost["stepsLost"]) % per_epoch == 0, (cost, per_epoch)
        with capsys.disabled():
            print("\n[realpods] without notice (rank 0 SIGKILLed): steps lost %d of a %d-step "
                  "checkpoint interval (reached step %d)" %
                  (cost["stepsLost"], per_epoch, cost["lastStep"]))
    finally:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
