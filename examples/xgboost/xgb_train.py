#!/usr/bin/python3
"""Distributed XGBoost (Rabit) training for coach's XGBoostJob example and tests.

Reads the environment an XGBoostJob replica gets: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
(Master is rank 0, Workers 1..n-1). As upstream's xgboost-operator examples do, rank 0 starts the
Rabit tracker (xgboost.tracker.RabitTracker) listening on MASTER_ADDR:MASTER_PORT; every rank, rank 0
included, then joins it through xgboost.collective with DMLC_TRACKER_URI/DMLC_TRACKER_PORT and
DMLC_TASK_ID=<rank> (the tracker sorts by task id, so xgboost's rank equals RANK). On Trainer v2's
xgboost runtime, DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID and DMLC_NUM_WORKER stand for
MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE. Without WORLD_SIZE it runs as one process on a free
loopback port.

Task: binary classification of 8-dimensional uniform points, y = [x0*x1 + sin(3*x2) + x3^2 > 1/3]
(noise-free, so accuracy 1.0 is the optimum). Data comes from a fixed seed; rank r trains on rows
r, r+n, r+2n, ... and every rank evaluates the same held-out set. Default target: accuracy >= 0.93.

Output (stdout, `key=value` fields separated by single spaces):
  coach-metric name=<name> value=<float> step=<round>     per boosting round, rank 0 only; names
      train_logloss, test_logloss, test_error (xgboost all-reduces them over the workers).
  coach-result rank=<r> world_size=<n> rounds=<k> loss=<test logloss> accuracy=<test acc>
      model_checksum=<12 hex digits> seconds=<wall> status=<ok|below_target|checksum_mismatch>
      every rank at the end. model_checksum is the first 48 bits of the SHA-256 of the saved
      model; the program all-reduces min and max of it and fails unless all ranks agree.

Exit status: 0 only when the target is reached and the models agree; 2 below target, 3 checksum
mismatch, 64 bad usage/environment, or the --exit-code of --fail-rank.
Knobs: --rounds [COACH_ROUNDS], --fail-rank N --exit-code C [COACH_FAIL_RANK, COACH_EXIT_CODE]
(rank N exits with C after the first round), --sleep-seconds S [COACH_SLEEP_SECONDS],
--target-accuracy A [COACH_TARGET_ACCURACY].
"""

import argparse
import hashlib
import os
import socket
import sys
import time

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker

EXIT_BELOW_TARGET = 2
EXIT_CHECKSUM_MISMATCH = 3
EXIT_USAGE = 64
DATA_SEED = 4321


def emit(line):
    """Prints one line of this program's output format in a single write, so that ranks
    sharing a log file (several processes under one launcher) never interleave mid-line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def die(message, code=EXIT_USAGE):
    print(f"xgb_train: error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def env_default(name, default, conv):
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return conv(value)
    except ValueError:
        die(f"environment variable {name}={value!r} is not a valid {conv.__name__}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=env_default("COACH_ROUNDS", 60, int))
    p.add_argument("--train-samples", type=int, default=12000)
    p.add_argument("--test-samples", type=int, default=3000)
    p.add_argument("--target-accuracy", type=float,
                   default=env_default("COACH_TARGET_ACCURACY", 0.93, float))
    p.add_argument("--fail-rank", type=int, default=env_default("COACH_FAIL_RANK", -1, int))
    p.add_argument("--exit-code", type=int, default=env_default("COACH_EXIT_CODE", 1, int))
    p.add_argument("--sleep-seconds", type=float,
                   default=env_default("COACH_SLEEP_SECONDS", 0.0, float))
    p.add_argument("--timeout-seconds", type=float, default=120.0,
                   help="how long rank 0 waits for the other workers to finish")
    args = p.parse_args()
    if args.rounds < 1:
        die("--rounds must be >= 1")
    if not 0 <= args.exit_code <= 255:
        die("--exit-code must be in 0..255")
    return args


def distributed_env():
    # A TrainJob on Trainer v2's xgboost runtime names the tracker (node 0) and the task instead.
    if "DMLC_TRACKER_URI" in os.environ and "MASTER_ADDR" not in os.environ:
        for ours, theirs in (("MASTER_ADDR", "DMLC_TRACKER_URI"), ("MASTER_PORT", "DMLC_TRACKER_PORT"),
                             ("RANK", "DMLC_TASK_ID"), ("WORLD_SIZE", "DMLC_NUM_WORKER")):
            os.environ[ours] = os.environ.get(theirs, "")
    if "WORLD_SIZE" not in os.environ and "RANK" not in os.environ:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(s.getsockname()[1]))
        s.close()
        os.environ["WORLD_SIZE"], os.environ["RANK"] = "1", "0"
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK") if not os.environ.get(v)]
    if missing:
        die("missing environment variable(s) " + ", ".join(missing) +
            " (an XGBoostJob sets them on every replica)")
    try:
        rank, world, port = (int(os.environ[v]) for v in ("RANK", "WORLD_SIZE", "MASTER_PORT"))
    except ValueError as e:
        die(f"bad environment: {e}")
    if world < 1 or not 0 <= rank < world:
        die(f"RANK={rank} is not in [0, WORLD_SIZE={world})")
    return rank, world, os.environ["MASTER_ADDR"], port


def make_data(n_train, n_test):
    rng = np.random.default_rng(DATA_SEED)
    x = rng.uniform(-1.0, 1.0, size=(n_train + n_test, 8)).astype(np.float32)
    y = (x[:, 0] * x[:, 1] + np.sin(3 * x[:, 2]) + x[:, 3] ** 2 > 1.0 / 3).astype(np.float32)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


class Report(xgb.callback.TrainingCallback):
    """Prints coach-metric lines (rank 0) and implements --fail-rank."""

    def __init__(self, rank, fail_rank, exit_code):
        super().__init__()
        self.rank, self.fail_rank, self.exit_code = rank, fail_rank, exit_code

    def after_iteration(self, model, epoch, evals_log):
        step = epoch + 1
        if self.rank == 0:
            for data, metrics in evals_log.items():
                for name, values in metrics.items():
                    emit(f"coach-metric name={data}_{name} value={values[-1]:.6g} step={step}")
        if step == 1 and self.rank == self.fail_rank:
            print(f"xgb_train: rank {self.rank} failing deliberately with exit code "
                  f"{self.exit_code} after round 1 (--fail-rank)", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(self.exit_code)
        return False


# XGBoost 2.0 replaced the Python tracker and the communicator's argument names. Both lines run this
# program: Debian bookworm's 1.7 (the coach-training image) and PyPI's 3.x (coach-training-xgboost).
XGBOOST_2 = int(xgb.__version__.split(".")[0]) >= 2


def start_tracker(addr, world, port):
    """Rank 0's Rabit tracker on addr:port, ranks assigned by task id."""
    tracker = RabitTracker(host_ip=addr, n_workers=world, port=port, sortby="task")
    if XGBOOST_2:
        tracker.start()
    else:
        tracker.start(world)
    return tracker


def communicator_args(addr, port, rank):
    args = {
        "tracker_uri": addr,
        "tracker_port": port,
        "task_id": f"{rank:08d}",  # zero-padded: the tracker sorts task ids as strings
    }
    if XGBOOST_2:
        args = {"dmlc_" + k: v for k, v in args.items()}
        args["dmlc_retry"] = 30  # workers may start before the Master's tracker listens
        return args
    args = {"DMLC_" + k.upper(): v for k, v in args.items()}
    args["DMLC_WORKER_CONNECT_RETRY"] = 30
    return args


def wait_tracker(tracker, timeout):
    """Waits for the tracker to see every worker shut down."""
    if XGBOOST_2:
        try:
            tracker.wait_for(int(timeout))
        except Exception as e:  # the tracker's timeout error is a plain XGBoostError or ValueError
            print(f"xgb_train: warning: tracker: {e}", file=sys.stderr, flush=True)
        return
    tracker.thread.join(timeout)
    if tracker.alive():
        print("xgb_train: warning: tracker still waiting for workers to shut down",
              file=sys.stderr, flush=True)


def main():
    args = parse_args()
    rank, world, addr, port = distributed_env()
    start = time.monotonic()
    if args.sleep_seconds > 0:
        print(f"xgb_train: rank {rank} sleeping {args.sleep_seconds:g}s before training", flush=True)
        time.sleep(args.sleep_seconds)

    tracker = None
    if rank == 0:
        tracker = start_tracker(addr, world, port)
    comm_args = communicator_args(addr, port, rank)

    x_train, y_train, x_test, y_test = make_data(args.train_samples, args.test_samples)
    with collective.CommunicatorContext(**comm_args):
        if collective.get_rank() != rank or collective.get_world_size() != world:
            die(f"tracker assigned rank {collective.get_rank()}/{collective.get_world_size()}, "
                f"expected {rank}/{world}")
        print(f"xgb_train: rank {rank}/{world} joined tracker {addr}:{port} (xgboost={xgb.__version__})", flush=True)
        dtrain = xgb.DMatrix(x_train[rank::world], label=y_train[rank::world])
        dtest = xgb.DMatrix(x_test, label=y_test)
        params = {"objective": "binary:logistic", "tree_method": "hist", "max_depth": 6,
                  "eta": 0.3, "eval_metric": ["logloss", "error"], "nthread": 1, "seed": 0}
        booster = xgb.train(params, dtrain, num_boost_round=args.rounds,
                            evals=[(dtrain, "train"), (dtest, "test")], verbose_eval=False,
                            callbacks=[Report(rank, args.fail_rank, args.exit_code)])
        prob = booster.predict(dtest)
        eps = 1e-7
        loss = float(-np.mean(y_test * np.log(prob + eps) + (1 - y_test) * np.log(1 - prob + eps)))
        accuracy = float(np.mean((prob > 0.5) == (y_test > 0.5)))
        checksum = hashlib.sha256(bytes(booster.save_raw("json"))).hexdigest()[:12]
        value = np.array([float(int(checksum, 16))], dtype=np.float64)  # 48 bits: exact in a double
        lo = collective.allreduce(value.copy(), collective.Op.MIN)[0]
        hi = collective.allreduce(value.copy(), collective.Op.MAX)[0]
    if tracker is not None:
        wait_tracker(tracker, args.timeout_seconds)

    status, code = "ok", 0
    if lo != hi:
        status, code = "checksum_mismatch", EXIT_CHECKSUM_MISMATCH
    elif not accuracy >= args.target_accuracy:
        status, code = "below_target", EXIT_BELOW_TARGET
    emit(f"coach-result rank={rank} world_size={world} rounds={args.rounds} loss={loss:.6f} "
         f"accuracy={accuracy:.6f} model_checksum={checksum} seconds={time.monotonic() - start:.2f} "
         f"status={status}")
    if status == "checksum_mismatch":
        print(f"xgb_train: error: models differ across ranks (checksums {int(lo):012x} .. "
              f"{int(hi):012x})", file=sys.stderr, flush=True)
    elif status == "below_target":
        print(f"xgb_train: error: test accuracy {accuracy:.4f} is below the target "
              f"{args.target_accuracy} after {args.rounds} rounds", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
