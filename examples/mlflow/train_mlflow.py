"""Distributed training that logs to MLflow the way most training code does: it names its own server and
experiment and opens a run on every rank. Unchanged, it runs as every replica of a tracked job; coach tags each
rank's run with the job and lists them (docs/mlflow.md).

Data-parallel linear regression on CPU (gloo) over synthetic data from a fixed seed; each rank logs its
world_size and per-epoch loss. Exit 0 when the final loss is below 0.05 and every rank holds the same weights.

  MLFLOW_TRACKING_URI  the server (default http://mlflow.mlflow:5000, as a cluster install names it)
  --experiment NAME    default distributed-training
"""
import argparse
import os
import sys

import mlflow
import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--experiment", default="distributed-training")
    ap.add_argument("--epochs", type=int, default=20)
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    true_w = torch.tensor([2.0, -3.0, 0.5])
    x = torch.randn(256 * world_size, 3)
    y = x @ true_w + 0.01 * torch.randn(x.shape[0])
    x, y = x[rank::world_size], y[rank::world_size]
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1, bias=False))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    mlflow.set_tracking_uri(os.environ.get("MLFLOW_TRACKING_URI", "http://mlflow.mlflow:5000"))
    mlflow.set_experiment(args.experiment)
    with mlflow.start_run():
        mlflow.log_param("world_size", world_size)
        for epoch in range(1, args.epochs + 1):
            loss = ((model(x).squeeze(1) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            mlflow.log_metric("loss", loss.item(), step=epoch)

    weights = model.module.weight.detach().clone()
    low, high = weights.clone(), weights.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    same = bool(torch.equal(low, high))
    ok = loss.item() < 0.05 and same
    print("coach-result rank=%d world_size=%d loss=%.6f same_weights=%s status=%s"
          % (rank, world_size, loss.item(), same, "ok" if ok else "failed"), flush=True)
    dist.destroy_process_group()
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
