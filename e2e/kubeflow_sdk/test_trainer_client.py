"""Kubeflow Trainer v2's Python SDK (`kubeflow` 0.5.0 TrainerClient, unchanged) against coach.

What a user's notebook does: list the runtimes, train() a CustomTrainer on the torch runtime, follow
the job with get_job / list_jobs / wait_for_job_status, read its events, delete it. The job's pods exit
on kwok as the SDK's own RuntimePatch option tells them to (pod annotations of the node job).
"""

import pytest

from kubeflow.trainer import CustomTrainer
from kubeflow.trainer.options.kubernetes import (JobSpecPatch, JobSetSpecPatch, JobSetTemplatePatch,
                                                 JobTemplatePatch, PodTemplatePatch, ReplicatedJobPatch,
                                                 RuntimePatch, TrainingRuntimeSpecPatch)

from kube_fixtures import wait_until


def train_fn():
    import torch.distributed as dist

    dist.init_process_group("gloo")
    print("rank", dist.get_rank())


def kwok_exit(code, seconds):
    """The SDK's RuntimePatch that makes the node pods exit with `code` after `seconds` on kwok."""
    annotations = {"coach.test/exit-code": str(code), "coach.test/run-seconds": str(seconds)}
    pod = PodTemplatePatch(metadata={"annotations": annotations})
    node = ReplicatedJobPatch(name="node", template=JobTemplatePatch(spec=JobSpecPatch(template=pod)))
    job_set = JobSetTemplatePatch(spec=JobSetSpecPatch(replicated_jobs=[node]))
    return RuntimePatch(training_runtime_spec=TrainingRuntimeSpecPatch(template=job_set))


def test_list_runtimes_shows_upstreams_runtimes(trainer_client, upstream_runtimes):
    runtimes = {r.name: r for r in trainer_client.list_runtimes()}
    for name in upstream_runtimes:
        assert name in runtimes, sorted(runtimes)
    torch = trainer_client.get_runtime("torch-distributed")
    assert torch.trainer.framework == "torch"
    assert torch.trainer.num_nodes == 1


def test_train_custom_trainer_runs_to_complete(trainer_client):
    name = trainer_client.train(runtime="torch-distributed",
                                trainer=CustomTrainer(func=train_fn, num_nodes=2,
                                                      resources_per_node={"cpu": 2, "memory": "1Gi"}),
                                options=[kwok_exit(0, 4)])

    # Running: the SDK says so only while the TrainJob has no condition at all.
    job = trainer_client.wait_for_job_status(name, status={"Running"}, timeout=90, polling_interval=1)
    assert job.name == name
    assert job.num_nodes == 2
    assert job.runtime.name == "torch-distributed"
    steps = sorted(s.name for s in job.steps)
    assert steps == ["node-0", "node-1"], steps
    assert all(s.device == "cpu" and s.device_count == "2" for s in job.steps), job.steps

    done = trainer_client.wait_for_job_status(name, status={"Complete"}, timeout=120, polling_interval=1)
    assert done.status == "Complete"
    assert name in [j.name for j in trainer_client.list_jobs()]
    assert name in [j.name for j in trainer_client.list_jobs(runtime=trainer_client.get_runtime(
        "torch-distributed"))]
    # coach records the pods it creates on the TrainJob itself, where the SDK looks.
    events = trainer_client.get_job_events(name)
    created = [e for e in events if e.involved_object_kind == "TrainJob" and e.reason == "SuccessfulCreatePod"]
    assert len(created) == 2, events

    trainer_client.delete_job(name)
    wait_until(lambda: name not in [j.name for j in trainer_client.list_jobs()], 60, "the deleted TrainJob")


def test_a_failing_job_raises_in_wait_for_job_status(trainer_client):
    name = trainer_client.train(runtime="torch-distributed",
                                trainer=CustomTrainer(func=train_fn, num_nodes=1),
                                options=[kwok_exit(1, 1)])
    # OnFailure pods restart in place on kwok until the Job's backoffLimit (6) is spent.
    with pytest.raises(RuntimeError, match=f"TrainJob {name} is Failed"):
        trainer_client.wait_for_job_status(name, status={"Complete"}, timeout=240, polling_interval=1)
    assert trainer_client.get_job(name).status == "Failed"


def test_get_job_of_a_missing_trainjob_is_an_error(trainer_client):
    with pytest.raises(RuntimeError):
        trainer_client.get_job("no-such-trainjob")
