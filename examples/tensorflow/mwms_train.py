#!/usr/bin/env python3
"""Synchronous data-parallel TensorFlow training with MultiWorkerMirroredStrategy, for coach's TFJob
example.

The strategy reads TF_CONFIG, which a TFJob gives every replica (cluster: the chief and worker
addresses; task: this replica's type and index); without it the program trains alone. Rank here is
the order TensorFlow gives the tasks: the chief first, then the workers.

Task: least-squares regression y = X w* + 0.5 on 16 features; rank r holds rows r, r+n, ... of one
fixed data set. A custom training step under strategy.run: each replica computes its gradient, the
replica context all-reduces them (MEAN, over the strategy's collective ops between the workers) and
every replica applies the same update. (Keras 3's model.fit does not run under this strategy.)

Output, `key=value` fields:
  coach-result rank=<r> world_size=<n> steps=<k> loss=<final full-data loss> checksum=<12 hex digits>
      status=<ok|not_converged|checksum_mismatch>
checksum: the first 48 bits of the SHA-256 of the final parameters (float32 bytes); every rank
gathers everyone's and fails unless they agree. Exit status: 0 ok, 2 not converged
(loss >= 1e-3), 3 checksum mismatch, 64 bad TF_CONFIG.
"""

import argparse
import hashlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FEATURES = 16
ROWS = 512
DATA_SEED = 1234
TASK_ORDER = ("chief", "worker")


def die(message):
    print(f"mwms_train: error: {message}", file=sys.stderr, flush=True)
    sys.exit(64)


def rank_and_world():
    """This task's rank and the number of training tasks, from TF_CONFIG."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0, 1
    try:
        cfg = json.loads(raw)
        cluster, task = cfg["cluster"], cfg["task"]
        tasks = [(t, i) for t in TASK_ORDER for i in range(len(cluster.get(t, [])))]
        return tasks.index((task["type"], int(task["index"]))), len(tasks)
    except (ValueError, KeyError, TypeError) as e:
        die(f"TF_CONFIG {raw!r}: {e}")


def checksum(variables):
    raw = b"".join(v.numpy().astype(np.float32).tobytes() for v in variables)
    return hashlib.sha256(raw).hexdigest()[:12]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()
    if not 0 < args.steps <= 100000:
        die(f"--steps {args.steps}: want 1..100000")

    rank, world = rank_and_world()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    if strategy.num_replicas_in_sync != world:
        die(f"the strategy has {strategy.num_replicas_in_sync} replicas, TF_CONFIG {world} tasks")
    rng = np.random.default_rng(DATA_SEED)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    w_true = rng.normal(size=(FEATURES,)).astype(np.float32)
    y = x @ w_true + 0.5
    xs, ys = tf.constant(x[rank::world]), tf.constant(y[rank::world])

    with strategy.scope():
        w = tf.Variable(tf.zeros([FEATURES]), name="w")
        b = tf.Variable(0.0, name="b")

    def loss_fn(xb, yb):
        return tf.reduce_mean((tf.linalg.matvec(xb, w) + b - yb) ** 2)

    def replica_step():
        with tf.GradientTape() as tape:
            loss = loss_fn(xs, ys)
        grads = tape.gradient(loss, [w, b])
        grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        w.assign_sub(args.lr * grads[0])
        b.assign_sub(args.lr * grads[1])

    @tf.function
    def step():
        strategy.run(replica_step)

    for _ in range(args.steps):
        step()

    loss = float(loss_fn(tf.constant(x), tf.constant(y)))
    mine = checksum([w, b])
    # Every rank's 48 bits, as two 24-bit integers (exact in float32), gathered on every rank.
    halves = tf.constant([[int(mine[:6], 16), int(mine[6:], 16)]], dtype=tf.float32)

    @tf.function
    def gather():
        return tf.distribute.get_replica_context().all_gather(halves, axis=0)

    gathered = strategy.experimental_local_results(strategy.run(gather))[0].numpy()
    sums = {"%06x%06x" % (int(a), int(b)) for a, b in gathered}
    status, code = "ok", 0
    if len(gathered) != world or sums != {mine}:
        status, code = "checksum_mismatch", 3
    elif loss >= 1e-3:
        status, code = "not_converged", 2
    sys.stdout.write(f"coach-result rank={rank} world_size={world} steps={args.steps} loss={loss:.6g} "
                     f"checksum={mine} status={status}\n")
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
