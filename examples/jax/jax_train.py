#!/usr/bin/env python3
"""Data-parallel JAX training for coach's JAXJob example and the JAX TrainJob runtime.

Every process calls jax.distributed.initialize() with what its job gives it: a JAXJob's
COORDINATOR_ADDRESS, COORDINATOR_PORT, NUM_PROCESSES and PROCESS_ID (kubeflow.org/v1), or a
TrainJob's JAX_COORDINATOR_ADDRESS (host:port, which JAX reads itself), JAX_NUM_PROCESSES and
JAX_PROCESS_ID (Trainer v2's jax runtime). Without either it trains alone.

Task: least-squares regression y = X w* + 0.5 on 16 features; process p holds rows p, p+n, ... of one
fixed data set. Each step, every process computes its gradient with jax.grad, the processes average
them (multihost_utils.process_allgather over the coordinator's collectives), and every process
applies the same update, so the parameters stay equal everywhere.

Output, `key=value` fields:
  coach-result rank=<p> world_size=<n> steps=<k> loss=<final full-data loss> checksum=<12 hex digits>
      status=<ok|not_converged|checksum_mismatch>
checksum: the first 48 bits of the SHA-256 of the final parameters (float32 bytes); every process
gathers everyone's and fails unless they agree. Exit status: 0 ok, 2 not converged (loss >= 1e-3),
3 checksum mismatch, 64 bad environment.
"""

import argparse
import hashlib
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

FEATURES = 16
ROWS = 512
DATA_SEED = 1234


def die(message):
    print(f"jax_train: error: {message}", file=sys.stderr, flush=True)
    sys.exit(64)


def env_int(*names):
    for name in names:
        if name in os.environ:
            try:
                return int(os.environ[name])
            except ValueError:
                die(f"{name}={os.environ[name]!r} is not an integer")
    return None


def initialize():
    """(rank, world size) after jax.distributed.initialize(), from the v1 or the v2 variables."""
    n = env_int("NUM_PROCESSES", "JAX_NUM_PROCESSES")
    pid = env_int("PROCESS_ID", "JAX_PROCESS_ID")
    if n is None or n == 1:
        return 0, 1
    if pid is None:
        die("NUM_PROCESSES is set but PROCESS_ID is not")
    address = None  # a TrainJob's JAX_COORDINATOR_ADDRESS is read by JAX itself
    if "COORDINATOR_ADDRESS" in os.environ:
        address = "%s:%s" % (os.environ["COORDINATOR_ADDRESS"], os.environ.get("COORDINATOR_PORT", "6666"))
    jax.distributed.initialize(coordinator_address=address, num_processes=n, process_id=pid)
    if (jax.process_index(), jax.process_count()) != (pid, n):
        die(f"JAX says process {jax.process_index()} of {jax.process_count()}, the job {pid} of {n}")
    return pid, n


def checksum(params):
    raw = b"".join(np.asarray(p, dtype=np.float32).tobytes() for p in params)
    return hashlib.sha256(raw).hexdigest()[:12]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    if not 0 < args.steps <= 100000:
        die(f"--steps {args.steps}: want 1..100000")

    rank, world = initialize()
    rng = np.random.default_rng(DATA_SEED)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    w_true = rng.normal(size=(FEATURES,)).astype(np.float32)
    y = x @ w_true + 0.5
    xs, ys = jnp.asarray(x[rank::world]), jnp.asarray(y[rank::world])

    def loss_fn(params, xb, yb):
        w, b = params
        return jnp.mean((xb @ w + b - yb) ** 2)

    grad_fn = jax.jit(jax.grad(loss_fn))
    params = (jnp.zeros(FEATURES, jnp.float32), jnp.zeros((), jnp.float32))
    for _ in range(args.steps):
        grads = grad_fn(params, xs, ys)
        if world > 1:
            # Every process's gradients, stacked along a new first axis, then averaged.
            grads = tuple(jnp.mean(g, axis=0) for g in multihost_utils.process_allgather(grads))
        params = tuple(p - args.lr * g for p, g in zip(params, grads))

    loss = float(loss_fn(params, jnp.asarray(x), jnp.asarray(y)))
    mine = checksum(params)
    sums = [mine]
    if world > 1:
        # The 48 bits as two 24-bit integers (exact in float32, JAX's default).
        halves = np.array([int(mine[:6], 16), int(mine[6:], 16)], dtype=np.int32)
        gathered = np.asarray(multihost_utils.process_allgather(halves))
        sums = ["%06x%06x" % (int(a), int(b)) for a, b in gathered]
    status, code = "ok", 0
    if len(set(sums)) != 1:
        status, code = "checksum_mismatch", 3
    elif loss >= 1e-3:
        status, code = "not_converged", 2
    sys.stdout.write(f"coach-result rank={rank} world_size={world} steps={args.steps} loss={loss:.6g} "
                     f"checksum={mine} status={status}\n")
    sys.stdout.flush()
    if world > 1:
        jax.distributed.shutdown()
    sys.exit(code)


if __name__ == "__main__":
    main()
