"""Checkpoint on notice on real pods: the 3-rank gloo job of
examples/pytorch/pytorch-ddp-recovery-kube.yaml behind coach-launch; while it trains, its node is
tainted `karpenter.sh/disrupted` (what Karpenter does before it removes a node). The operator asks
every rank for a checkpoint, the ranks agree on one step and save it, the job restarts without
spending its budget, and once the taint is gone it resumes from that step (mid-epoch) and ends with
one set of parameters on every rank.

Printed, as a figure: from the taint to rank 0's saved checkpoint.
"""
import re
import shutil
import time

import kube
from test_recovery import CHECKPOINT_ROOT, coach_status, launcher_stall_job, timestamped_logs

TAINT = "karpenter.sh/disrupted"
SAVED = re.compile(r"coach-checkpoint saved_on_notice request=(\d+) step=(\d+) epoch=(\d+) "
                   r"batch=(\d+)")


def test_node_disruption_taint_makes_every_rank_save_at_one_step_and_resume(ns, capsys):
    checkpoint_dir = "%s/%s" % (CHECKPOINT_ROOT, ns)
    node = None
    try:
        job = launcher_stall_job("notice", checkpoint_dir)
        # A long deadline: the job restarts for the notice, never for a stall.
        job["metadata"]["annotations"]["coach.dev/progress-deadline"] = "300s"
        kube.apply(job, ns)

        def trained():
            lines = timestamped_logs("notice-master-0", ns)
            return lines if any(line.startswith("coach-checkpoint saved epoch=1")
                                for _, line in lines) else None

        kube.wait_for(trained, 300, "rank 0 to save epoch 1", interval=0.5)
        node = kube.get_json("pod", "notice-master-0", "-n", ns)["spec"]["nodeName"]
        tainted = time.time()
        kube.kubectl("taint", "node", node, TAINT + ":NoSchedule", "--overwrite")

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
            print("\n[realpods] checkpoint on notice: taint -> rank 0's checkpoint saved %.1f s "
                  "(step %d, epoch %d, batch %d); %s" % (saved_at - tainted, step, epoch, batch,
                                                         resumed[0]))
    finally:
        if node is not None:
            kube.kubectl("taint", "node", node, TAINT + ":NoSchedule-", check=False)
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
