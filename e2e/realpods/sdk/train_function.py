"""Run by the kubeflow SDK's python (COACH_E2E_KUBEFLOW_SDK_PYTHON), as a user would run it:
TrainerClient().train(trainer=CustomTrainer(func=train_ddp, ...)) on upstream's torch-distributed
runtime, the image the SDK's `image` argument gives, the pods placed by a RuntimePatch. Prints
"JOB <name>", "STATUS <status>" once it finished, then the lines get_job_logs returns.

  python train_function.py NAMESPACE IMAGE NODE_SELECTOR(key=value or "") TOLERATE(key or "")
"""
import sys

from kubeflow.trainer import CustomTrainer, KubernetesBackendConfig, TrainerClient
from kubeflow.trainer.options import (JobSetSpecPatch, JobSetTemplatePatch, JobSpecPatch,
                                      JobTemplatePatch, PodSpecPatch, PodTemplatePatch,
                                      ReplicatedJobPatch, RuntimePatch, TrainingRuntimeSpecPatch)


def train_ddp():
    # The SDK ships this function's source to the pods, where torchrun runs it on every rank.
    import hashlib

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(rank)
    for _ in range(30):
        x = torch.randn(32, 8, generator=data)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    checksum = hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]
    dist.destroy_process_group()
    print(f"sdk-result rank={rank} world_size={world} loss={loss.item():.6f} "
          f"params_checksum={checksum} status=ok", flush=True)


def main():
    namespace, image, selector, tolerate = sys.argv[1:5]
    pod = PodSpecPatch()
    if selector:
        key, _, value = selector.partition("=")
        pod.node_selector = {key: value}
    if tolerate:
        pod.tolerations = [{"key": tolerate, "operator": "Exists", "effect": "NoSchedule"}]
    place = RuntimePatch(training_runtime_spec=TrainingRuntimeSpecPatch(
        template=JobSetTemplatePatch(spec=JobSetSpecPatch(replicated_jobs=[ReplicatedJobPatch(
            name="node", template=JobTemplatePatch(spec=JobSpecPatch(
                template=PodTemplatePatch(spec=pod))))]))))
    client = TrainerClient(KubernetesBackendConfig(namespace=namespace))
    name = client.train(
        runtime=client.get_runtime("torch-distributed"),
        trainer=CustomTrainer(func=train_ddp, image=image, num_nodes=2,
                              resources_per_node={"cpu": "500m", "memory": "1Gi"}),
        options=[place] if selector or tolerate else None)
    print("JOB", name, flush=True)
    job = client.wait_for_job_status(name, status={"Complete", "Failed"}, timeout=420)
    print("STATUS", job.status, flush=True)
    for line in client.get_job_logs(name):
        print(line)


if __name__ == "__main__":
    main()
