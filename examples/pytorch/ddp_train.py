#!/usr/bin/python3
"""A real DistributedDataParallel training program for coach's examples and tests (gloo, CPU).

Runs either way a PyTorchJob runs user code:
  * one replica per process, started directly: the pod environment's MASTER_ADDR, MASTER_PORT,
    WORLD_SIZE and RANK drive env:// initialisation;
  * under coach-launch or torchrun: LOCAL_RANK is also set, RANK/WORLD_SIZE are the global values.
Without WORLD_SIZE at all it runs as a single process (world size 1) on a free loopback port.

Task: 3-class classification of 16-dimensional Gaussian points labelled by a fixed random linear
teacher, y = argmax(W x + b). The teacher is in the model class, so accuracy 1.0 is attainable;
the default target is test accuracy >= 0.95 (a handful of epochs gets ~0.97-0.99). Data is generated
from a fixed seed, identically on every rank, and sharded with DistributedSampler.

Output (stdout, one line each, `key=value` fields separated by single spaces):
  coach-metric name=<name> value=<float> step=<epoch>          per epoch, global rank 0 only; the
      values are already all-reduced over every rank. Names: train_loss, test_loss, test_accuracy,
      epoch_seconds.
  coach-result rank=<r> world_size=<n> local_rank=<l> epochs=<e> loss=<test loss> accuracy=<test acc>
      params_checksum=<16 hex digits> seconds=<wall> status=<ok|below_target|checksum_mismatch>
      printed by every rank at the end. params_checksum is the first 64 bits of the SHA-256 of all
      parameters' bytes; the program all-gathers it and fails unless every rank has the same value.

Exit status: 0 only when the target accuracy is reached and the parameters agree on every rank;
2 below target, 3 checksum mismatch, 64 bad usage/environment, or the --exit-code of --fail-rank.

Test knobs (flags, or the environment variables in brackets):
  --epochs N [COACH_EPOCHS]                    default 6
  --fail-rank N --exit-code C [COACH_FAIL_RANK, COACH_EXIT_CODE]
                                               global rank N exits with C after the first epoch
  --sleep-seconds S [COACH_SLEEP_SECONDS]      sleep S seconds before joining the group (deadline
                                               and suspend tests)
  --target-accuracy A [COACH_TARGET_ACCURACY]  default 0.95
"""

import argparse
import datetime
import hashlib
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

EXIT_BELOW_TARGET = 2
EXIT_CHECKSUM_MISMATCH = 3
EXIT_USAGE = 64

DIM = 16
CLASSES = 3
DATA_SEED = 1234


def emit(line):
    """Prints one line of this program's output format in a single write, so that ranks
    sharing a log file (several processes under one launcher) never interleave mid-line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def env_default(name, default, conv):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return conv(value)
    except ValueError:
        die(f"environment variable {name}={value!r} is not a valid {conv.__name__}")


def die(message, code=EXIT_USAGE):
    print(f"ddp_train: error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=env_default("COACH_EPOCHS", 6, int))
    p.add_argument("--batch-size", type=int, default=64, help="per-rank batch size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--train-samples", type=int, default=6000)
    p.add_argument("--test-samples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0, help="model init and shuffling seed")
    p.add_argument("--target-accuracy", type=float,
                   default=env_default("COACH_TARGET_ACCURACY", 0.95, float))
    p.add_argument("--fail-rank", type=int, default=env_default("COACH_FAIL_RANK", -1, int),
                   help="global rank that exits with --exit-code after the first epoch (-1: none)")
    p.add_argument("--exit-code", type=int, default=env_default("COACH_EXIT_CODE", 1, int))
    p.add_argument("--sleep-seconds", type=float,
                   default=env_default("COACH_SLEEP_SECONDS", 0.0, float))
    p.add_argument("--timeout-seconds", type=float, default=120.0,
                   help="gloo collective and rendezvous timeout")
    args = p.parse_args()
    if args.epochs < 1:
        die("--epochs must be >= 1")
    if not 0 <= args.exit_code <= 255:
        die("--exit-code must be in 0..255")
    return args


def distributed_env():
    """Returns (rank, world_size, local_rank) after checking the env:// variables."""
    if "WORLD_SIZE" not in os.environ and "RANK" not in os.environ:
        # Standalone: one process, its own loopback rendezvous.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(s.getsockname()[1]))
        s.close()
        os.environ["WORLD_SIZE"], os.environ["RANK"] = "1", "0"
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK") if not os.environ.get(v)]
    if missing:
        die("missing environment variable(s) " + ", ".join(missing) +
            " (a PyTorchJob with a Master replica sets them; coach-launch and torchrun too)")
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError as e:
        die(f"bad rank environment: {e}")
    if world < 1 or not 0 <= rank < world:
        die(f"RANK={rank} is not in [0, WORLD_SIZE={world})")
    return rank, world, local_rank


def make_data(n_train, n_test):
    g = torch.Generator().manual_seed(DATA_SEED)
    w = torch.randn(DIM, CLASSES, generator=g)
    b = 0.1 * torch.randn(CLASSES, generator=g)
    x = torch.randn(n_train + n_test, DIM, generator=g)
    y = (x @ w + b).argmax(dim=1)
    return (TensorDataset(x[:n_train], y[:n_train]), x[n_train:], y[n_train:])


def make_model():
    return nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Linear(32, CLASSES))


def params_checksum(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def metric(rank, name, value, step):
    if rank == 0:
        emit(f"coach-metric name={name} value={value:.6g} step={step}")


def main():
    args = parse_args()
    rank, world, local_rank = distributed_env()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start = time.monotonic()

    if args.sleep_seconds > 0:
        print(f"ddp_train: rank {rank} sleeping {args.sleep_seconds:g}s before training", flush=True)
        time.sleep(args.sleep_seconds)

    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout_seconds))
    print(f"ddp_train: rank {rank}/{world} local_rank {local_rank} joined "
          f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)

    train_set, x_test, y_test = make_data(args.train_samples, args.test_samples)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    model = DDP(make_model())  # DDP broadcasts rank 0's initial parameters
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    test_loss = accuracy = float("nan")
    for epoch in range(1, args.epochs + 1):
        t0 = time.monotonic()
        sampler.set_epoch(epoch)
        model.train()
        loss_sum = torch.zeros(2, dtype=torch.float64)  # sum of losses, number of samples
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            loss_sum += torch.tensor([loss.item() * len(yb), len(yb)], dtype=torch.float64)
        dist.all_reduce(loss_sum)
        model.eval()
        with torch.no_grad():  # every rank evaluates the whole (small) test set
            logits = model(x_test)
            test_loss = F.cross_entropy(logits, y_test).item()
            accuracy = (logits.argmax(dim=1) == y_test).double().mean().item()
        metric(rank, "train_loss", (loss_sum[0] / loss_sum[1]).item(), epoch)
        metric(rank, "test_loss", test_loss, epoch)
        metric(rank, "test_accuracy", accuracy, epoch)
        metric(rank, "epoch_seconds", time.monotonic() - t0, epoch)

        if epoch == 1 and rank == args.fail_rank:
            print(f"ddp_train: rank {rank} failing deliberately with exit code {args.exit_code} "
                  f"after epoch 1 (--fail-rank)", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(args.exit_code)  # no clean shutdown: peers see a lost rank, as after a crash

    checksum = params_checksum(model.module)
    mine = torch.tensor([int(checksum, 16) - (1 << 63)], dtype=torch.int64)  # fits signed int64
    everyone = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    agree = all(int(t.item()) == int(mine.item()) for t in everyone)
    dist.barrier()
    dist.destroy_process_group()

    status, code = "ok", 0
    if not agree:
        status, code = "checksum_mismatch", EXIT_CHECKSUM_MISMATCH
    elif not accuracy >= args.target_accuracy:
        status, code = "below_target", EXIT_BELOW_TARGET
    emit(f"coach-result rank={rank} world_size={world} local_rank={local_rank} epochs={args.epochs} "
         f"loss={test_loss:.6f} accuracy={accuracy:.6f} params_checksum={checksum} "
         f"seconds={time.monotonic() - start:.2f} status={status}")
    if status == "checksum_mismatch":
        others = sorted({format(int(t.item()) + (1 << 63), "016x") for t in everyone})
        print(f"ddp_train: error: parameters differ across ranks (checksums {' '.join(others)})",
              file=sys.stderr, flush=True)
    elif status == "below_target":
        print(f"ddp_train: error: test accuracy {accuracy:.4f} is below the target "
              f"{args.target_accuracy} after {args.epochs} epochs", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
