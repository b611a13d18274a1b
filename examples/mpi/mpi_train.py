#!/usr/bin/env python3
"""Data-parallel training over MPI (mpi4py) for coach's MPIJob example and Trainer v2's MPI runtimes.

Started by `mpirun`, which gives every process its rank: an MPIJob's launcher runs it across the
Workers (Open MPI's daemons started through kubectl exec), a TrainJob on an MPI runtime across its
nodes (through ssh). Run without mpirun it trains alone.

Task: least-squares regression y = X w* + 0.5 on 16 features; rank r holds rows r, r+n, ... of one
fixed data set. Each step every rank computes its gradient with numpy, MPI Allreduce sums them, and
every rank applies the same averaged update.

Output, `key=value` fields:
  coach-result rank=<r> world_size=<n> steps=<k> loss=<final full-data loss> checksum=<12 hex digits>
      host=<host name> status=<ok|not_converged|checksum_mismatch>
checksum: the first 48 bits of the SHA-256 of the final parameters (float64 bytes); every rank
gathers everyone's and fails unless they agree. Exit status: 0 ok, 2 not converged (loss >= 1e-6),
3 checksum mismatch, 64 bad usage.
"""

import argparse
import hashlib
import socket
import sys

import numpy as np
from mpi4py import MPI

FEATURES = 16
ROWS = 512
DATA_SEED = 1234


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    if not 0 < args.steps <= 100000:
        print(f"mpi_train: error: --steps {args.steps}: want 1..100000", file=sys.stderr, flush=True)
        sys.exit(64)

    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(DATA_SEED)
    x = rng.normal(size=(ROWS, FEATURES))
    w_true = rng.normal(size=FEATURES)
    y = x @ w_true + 0.5
    xs, ys = x[rank::world], y[rank::world]
    # Each shard's share of the whole data set's mean, so the summed gradient is the full-batch one.
    weight = len(xs) / ROWS

    params = np.zeros(FEATURES + 1)
    grad = np.empty_like(params)
    for _ in range(args.steps):
        err = xs @ params[:-1] + params[-1] - ys
        local = np.concatenate([2 * xs.T @ err / len(xs), [2 * err.mean()]]) * weight
        comm.Allreduce(local, grad, op=MPI.SUM)
        params -= args.lr * grad

    loss = float(np.mean((x @ params[:-1] + params[-1] - y) ** 2))
    mine = hashlib.sha256(params.tobytes()).hexdigest()[:12]
    everyone = comm.allgather(mine)
    status, code = "ok", 0
    if set(everyone) != {mine}:
        status, code = "checksum_mismatch", 3
    elif loss >= 1e-6:
        status, code = "not_converged", 2
    sys.stdout.write(f"coach-result rank={rank} world_size={world} steps={args.steps} loss={loss:.6g} "
                     f"checksum={mine} host={socket.gethostname()} status={status}\n")
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
