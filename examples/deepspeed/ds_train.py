#!/usr/bin/env python3
"""Data-parallel training with DeepSpeed (ZeRO stage 1) started by `mpirun`, for coach's DeepSpeed
MPIJob example and Trainer v2's deepspeed-distributed runtime.

`deepspeed.init_distributed(auto_mpi_discovery=True)` reads each process's rank and size from Open
MPI's environment and rank 0's address through mpi4py, so the job needs nothing but mpirun: an
MPIJob's launcher runs it across the Workers, a TrainJob on an MPI runtime across its nodes. Run
without mpirun it trains alone. On CUDA it trains on the process's GPU over NCCL, otherwise on CPU
over gloo.

Task: least-squares regression y = X w* + 0.5 on 16 features; rank r holds rows r, r+n, ... of one
fixed data set. The DeepSpeed engine averages the ranks' gradients and ZeRO stage 1 splits the
optimizer's work among them, then gathers the updated parameters back to every rank.

Output, `key=value` fields:
  coach-result rank=<r> world_size=<n> steps=<k> loss=<final full-data loss> checksum=<12 hex digits>
      host=<host name> device=<cpu|cuda> status=<ok|not_converged|checksum_mismatch>
checksum: the first 48 bits of the SHA-256 of the final parameters (float32 bytes); every rank
gathers everyone's and fails unless they agree. Exit status: 0 ok, 2 not converged (loss >= 1e-4),
3 checksum mismatch, 64 bad usage.
"""

import argparse
import hashlib
import logging
import os
import socket
import sys

FEATURES = 16
ROWS = 512
DATA_SEED = 1234


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    if not 0 < args.steps <= 100000:
        print(f"ds_train: error: --steps {args.steps}: want 1..100000", file=sys.stderr, flush=True)
        sys.exit(64)

    import deepspeed  # picks its accelerator: CUDA where a GPU is, otherwise the CPU
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    deepspeed.init_distributed(dist_backend="nccl" if cuda else "gloo", auto_mpi_discovery=True,
                               verbose=False)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    gen = torch.Generator().manual_seed(DATA_SEED)
    x = torch.randn(ROWS, FEATURES, generator=gen)
    w_true = torch.randn(FEATURES, 1, generator=gen)
    y = x @ w_true + 0.5
    xs, ys = x[rank::world].to(device), y[rank::world].to(device)

    torch.manual_seed(0)  # the same initial parameters on every rank
    model = torch.nn.Linear(FEATURES, 1)
    config = {
        "train_micro_batch_size_per_gpu": len(xs),
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": 1},
        # The client's plain SGD: DeepSpeed's own optimizers need compiled ops this example avoids.
        "zero_allow_untested_optimizer": True,
        "steps_per_print": args.steps + 1,
    }
    logging.getLogger("DeepSpeed").setLevel(logging.WARNING)
    engine, _, _, _ = deepspeed.initialize(model=model, config=config,
                                           optimizer=torch.optim.SGD(model.parameters(), lr=args.lr))
    for _ in range(args.steps):
        loss = torch.nn.functional.mse_loss(engine(xs), ys)
        engine.backward(loss)
        engine.step()

    with torch.no_grad():
        params = torch.cat([p.detach().float().cpu().reshape(-1) for p in engine.module.parameters()])
        full = float(torch.nn.functional.mse_loss(engine.module.cpu()(x), y))
    mine = hashlib.sha256(params.numpy().tobytes()).hexdigest()[:12]
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    status, code = "ok", 0
    if set(everyone) != {mine}:
        status, code = "checksum_mismatch", 3
    elif full >= 1e-4:
        status, code = "not_converged", 2
    sys.stdout.write(f"coach-result rank={rank} world_size={world} steps={args.steps} loss={full:.6g} "
                     f"checksum={mine} host={socket.gethostname()} device={device.type} status={status}\n")
    sys.stdout.flush()
    dist.destroy_process_group()
    sys.exit(code)


if __name__ == "__main__":
    main()
