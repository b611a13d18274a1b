#!/usr/bin/env python3
"""Data-parallel PaddlePaddle training for coach's PaddleJob example, started by
`python -m paddle.distributed.launch` as upstream's PaddleJob examples start it.

The launcher reads the variables a PaddleJob gives every pod (PADDLE_MASTER, PADDLE_NNODES,
PADDLE_JOB_ID), meets the other nodes at the master and starts this program with its rank
(PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM); init_parallel_env() then joins the collective group (gloo
on CPU). Run directly, without the launcher, it trains alone.

Task: least-squares regression y = X w* + 0.5 on 16 features; rank r holds rows r, r+n, ... of one
fixed data set. Each step every rank computes its gradient, all_reduce sums them, and every rank
applies the same averaged update.

Output, `key=value` fields:
  coach-result rank=<r> world_size=<n> steps=<k> loss=<final full-data loss> checksum=<12 hex digits>
      status=<ok|not_converged|checksum_mismatch>
checksum: the first 48 bits of the SHA-256 of the final parameters (float32 bytes); every rank
gathers everyone's and fails unless they agree. Exit status: 0 ok, 2 not converged (loss >= 1e-3),
3 checksum mismatch, 64 bad usage.
"""

import argparse
import hashlib
import sys

import numpy as np
import paddle
import paddle.distributed as dist

FEATURES = 16
ROWS = 512
DATA_SEED = 1234


def die(message):
    print(f"paddle_train: error: {message}", file=sys.stderr, flush=True)
    sys.exit(64)


def checksum(params):
    raw = b"".join(p.numpy().astype(np.float32).tobytes() for p in params)
    return hashlib.sha256(raw).hexdigest()[:12]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    if not 0 < args.steps <= 100000:
        die(f"--steps {args.steps}: want 1..100000")

    paddle.set_device("cpu")
    world = dist.get_world_size()
    if world > 1:
        dist.init_parallel_env()
    rank = dist.get_rank()
    rng = np.random.default_rng(DATA_SEED)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    w_true = rng.normal(size=(FEATURES,)).astype(np.float32)
    y = x @ w_true + 0.5
    xs, ys = paddle.to_tensor(x[rank::world]), paddle.to_tensor(y[rank::world])

    w = paddle.zeros([FEATURES], dtype="float32")
    b = paddle.zeros([1], dtype="float32")
    for p in (w, b):
        p.stop_gradient = False

    def loss_fn(xb, yb):
        return paddle.mean((paddle.matmul(xb, w) + b - yb) ** 2)

    for _ in range(args.steps):
        loss = loss_fn(xs, ys)
        loss.backward()
        with paddle.no_grad():
            for p in (w, b):
                grad = p.grad
                if world > 1:
                    dist.all_reduce(grad)  # SUM
                p.set_value(p - args.lr * grad / world)
                p.clear_gradient()

    with paddle.no_grad():
        loss = float(loss_fn(paddle.to_tensor(x), paddle.to_tensor(y)))
    mine = checksum([w, b])
    sums = {mine}
    if world > 1:
        # Every rank's 48 bits as two 24-bit integers.
        gathered = []
        dist.all_gather(gathered, paddle.to_tensor([int(mine[:6], 16), int(mine[6:], 16)], dtype="int64"))
        sums = {"%06x%06x" % tuple(int(v) for v in t.numpy()) for t in gathered}
        if len(gathered) != world:
            sums.add("missing")
    status, code = "ok", 0
    if sums != {mine}:
        status, code = "checksum_mismatch", 3
    elif loss >= 1e-3:
        status, code = "not_converged", 2
    sys.stdout.write(f"coach-result rank={rank} world_size={world} steps={args.steps} loss={loss:.6g} "
                     f"checksum={mine} status={status}\n")
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
