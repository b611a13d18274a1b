#!/usr/bin/python3
"""A real DistributedDataParallel training program for coach's examples and tests (gloo on CPU by
default; NCCL on GPUs with --device cuda).

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
  coach-metric name=global_step value=<s> step=<s>              with --step-metrics, global rank
      0, once before the first step (where the run starts: 0, or the step its checkpoint holds)
      and after every optimizer step; <s> counts optimizer steps from the start of training.
  coach-checkpoint resumed_from_epoch=<epoch> [batch=<k>] dir=<DIR>   global rank 0, once at the
      start, with --checkpoint-dir when DIR/checkpoint.pt was loaded; <epoch> is the last completed
      epoch it holds (numbered as the coach-metric step values), training goes on at the next one
      (after its first <k> batches, for a checkpoint saved on notice in the middle of an epoch).
  coach-checkpoint saved epoch=<epoch>                           global rank 0, with
      --checkpoint-dir, after each epoch's checkpoint is on disk.
  coach-checkpoint saved_on_notice request=<id> step=<s> epoch=<e> batch=<k>   global rank 0, when
      a checkpoint asked for by coach (below) is on disk: after optimizer step <s> (counted from
      the start of training), batch <k> of epoch <e>.
  coach-result rank=<r> world_size=<n> local_rank=<l> epochs=<e> loss=<test loss> accuracy=<test acc>
      params_checksum=<16 hex digits> seconds=<wall> status=<ok|below_target|checksum_mismatch>
      resumed_from=<epoch or -1> attempt=<a> device=<cpu|cuda:N> backend=<gloo|nccl>
      printed by every rank at the end. params_checksum is the first 64 bits of the SHA-256 of all
      parameters' bytes; the program all-gathers it and fails unless every rank has the same value.
      resumed_from is the epoch of the loaded checkpoint (-1: trained from the start); attempt is
      $TORCHELASTIC_RESTART_COUNT (0 when unset): 0 for a job's first run, n for its n-th restart.

Exit status: 0 only when the target accuracy is reached and the parameters agree on every rank;
2 below target, 3 checksum mismatch, 64 bad usage/environment (a checkpoint that cannot be loaded
included), or the --exit-code of --fail-rank.

Checkpoints (--checkpoint-dir DIR): after each epoch global rank 0 writes the model and optimizer
state, the epoch and the RNG state to a temporary file in DIR, fsyncs it and renames it over
DIR/checkpoint.pt (so the file is always a whole checkpoint); every rank then waits at a barrier,
so no rank starts the next epoch before the checkpoint is durable. At the start every rank loads
DIR/checkpoint.pt when it exists (before the model is wrapped in DDP) and training goes on at the
next epoch. The ranks check that they loaded the same epoch, so DIR must be one directory shared
by every replica (a checkpoint missing or older on some rank is exit 64). The data order of an
epoch depends only on --seed and the epoch (DistributedSampler.set_epoch), so a job restarted as a
whole with the same world size ends with the same parameters as one that never stopped. A
checkpoint that fails to load is never skipped: the program says why on stderr and exits 64
(remove DIR to train from the start). A finished run's checkpoint makes the next run with the same
DIR and --epochs only evaluate it.

Checkpoint on notice (docs/recovery.md, "Checkpoint on notice", "The training code's side"): under
coach-launch with progress reports, $COACH_CHECKPOINT_REQUEST_FILE names each process's request
file. The program installs a SIGUSR1 handler and opts in to the signal (FILE.armed: its pid); at
every step boundary (--notice-every) the ranks agree with one all_reduce(MAX) over [the id of a
request each has seen (on SIGUSR1, or reading the file at most every second), the step it is at,
the request's deadline], so every rank acts on the same request at the same step: global rank 0 saves the checkpoint
above (mid-epoch: the batches done in the epoch are saved with it, and a resumed run skips them),
every rank waits at a barrier, then each writes its answer FILE.done, {"id":N,"step":S}; without
--checkpoint-dir, {"id":N,"error":"..."}. A request past its deadline is not acted on. Having
saved, the ranks hold (no step, no collective) until the request's deadline, answering a newer
request with the same step: the pod is going, and a step taken now would be done again after the
restart (printed: coach-checkpoint holding step=<s> until_unix_ms=<d>; and hold_over when the
deadline passes and training goes on). Without the variable, on some rank or all, none of this
happens (one all_reduce at the start says so).

Devices (--device [COACH_DEVICE]): cpu (the default) trains on the CPU over gloo; cuda trains on GPU
LOCAL_RANK (modulo the GPUs this process sees: with CUDA_VISIBLE_DEVICES naming one GPU per process,
that one) over NCCL, and exits 64 where no GPU is visible.

Test knobs (flags, or the environment variables in brackets):
  --epochs N [COACH_EPOCHS]                    default 6
  --checkpoint-dir DIR [COACH_CHECKPOINT_DIR]  save a checkpoint there after each epoch and resume
                                               from it (above); default: none
  --epoch-seconds S [COACH_EPOCH_SECONDS]      each epoch takes at least S seconds (it sleeps the
                                               rest), so a test can kill a rank mid-training;
                                               default 0
  --fail-rank N --exit-code C [COACH_FAIL_RANK, COACH_EXIT_CODE]
                                               global rank N exits with C after the first epoch
                                               (after its checkpoint, with --checkpoint-dir), on
                                               attempt 0 only (TORCHELASTIC_RESTART_COUNT unset,
                                               empty or 0), so a restarted job can finish
  --sleep-seconds S [COACH_SLEEP_SECONDS]      sleep S seconds before joining the group (deadline
                                               and suspend tests)
  --target-accuracy A [COACH_TARGET_ACCURACY]  default 0.95
  --notice-every N                             look for a checkpoint request every N steps
                                               (default 1)
  --step-metrics [COACH_STEP_METRICS=1]        print the global_step metric (above)
"""

import argparse
import contextlib
import datetime
import hashlib
import inspect
import json
import os
import signal
import socket
import sys
import tempfile
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
DEVICES = ("cpu", "cuda")  # --device: gloo on the CPU, NCCL on the process's GPU

CHECKPOINT_NAME = "checkpoint.pt"
CHECKPOINT_TMP_PREFIX = ".checkpoint.pt."  # + random + ".tmp": a save in progress, or a killed one
CHECKPOINT_FORMAT = 1
CHECKPOINT_KEYS = ("format", "epoch", "world_size", "model", "optimizer", "rng")

CHECKPOINT_REQUEST_ENV = "COACH_CHECKPOINT_REQUEST_FILE"
NOTICE_FILE_LIMIT = 4096  # bytes: coach-launch's request is far smaller
NOTICE_LOOK_SECONDS = 1.0  # without a signal, the request file is read this often
HOLD_LOOK_SECONDS = 0.5  # holding after a checkpoint on notice, a newer request is looked for


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


def abort(message, code=EXIT_USAGE):
    """die() once the process group exists: exits at once, without tearing the group down (that
    can block on a peer); the peers see a lost rank."""
    print(f"ddp_train: error: {message}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(code)


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
                   help="collective and rendezvous timeout")
    p.add_argument("--device", choices=DEVICES, default=env_default("COACH_DEVICE", "cpu", str),
                   help="cpu: gloo; cuda: the process's GPU (LOCAL_RANK) over NCCL")
    p.add_argument("--checkpoint-dir", default=env_default("COACH_CHECKPOINT_DIR", "", str),
                   help="save a checkpoint here after each epoch and resume from it at the start")
    p.add_argument("--epoch-seconds", type=float,
                   default=env_default("COACH_EPOCH_SECONDS", 0.0, float),
                   help="each epoch takes at least this long (sleeps the rest)")
    p.add_argument("--notice-every", type=int, default=1,
                   help="look for coach's checkpoint request every N optimizer steps")
    p.add_argument("--step-metrics", action="store_true",
                   default=env_default("COACH_STEP_METRICS", 0, int) == 1,
                   help="rank 0 prints the global_step metric at the start and after every step")
    args = p.parse_args()
    if args.notice_every < 1:
        die("--notice-every must be >= 1")
    if args.device not in DEVICES:  # a default from COACH_DEVICE bypasses choices
        die(f"--device {args.device!r}: want one of {', '.join(DEVICES)}")
    if args.epochs < 1:
        die("--epochs must be >= 1")
    if not args.epoch_seconds >= 0:
        die("--epoch-seconds must be >= 0")
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
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def metric(rank, name, value, step):
    if rank == 0:
        emit(f"coach-metric name={name} value={value:.6g} step={step}")


def evaluate(model, x_test, y_test):
    """(test loss, test accuracy); every rank evaluates the whole (small) test set."""
    model.eval()
    with torch.no_grad():
        logits = model(x_test)
        return (F.cross_entropy(logits, y_test).item(),
                (logits.argmax(dim=1) == y_test).double().mean().item())


def prepare_checkpoint_dir(directory):
    """Global rank 0, before training: creates DIR and removes temporary files of saves that
    were killed midway (no other process writes there while this job runs)."""
    try:
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if name.startswith(CHECKPOINT_TMP_PREFIX) and name.endswith(".tmp"):
                os.unlink(os.path.join(directory, name))
    except OSError as e:
        die(f"--checkpoint-dir {directory}: {e}")
    if not os.access(directory, os.W_OK | os.X_OK):
        die(f"--checkpoint-dir {directory} is not writable")


def load_checkpoint(directory):
    """The checkpoint in DIR as a dict, None when there is none; exits 64 when there is one that
    cannot be read, rather than training from the start without saying so."""
    path = os.path.join(directory, CHECKPOINT_NAME)
    if not os.path.exists(path):
        return None
    try:
        # Full unpickling: the file is this job's own, and torch 1.13's weights_only reader
        # refuses the optimizer's float hyperparameters. Newer torch defaults to weights_only.
        kwargs = {}
        if "weights_only" in inspect.signature(torch.load).parameters:
            kwargs["weights_only"] = False
        ckpt = torch.load(path, map_location="cpu", **kwargs)
        if not isinstance(ckpt, dict):
            raise ValueError(f"a {type(ckpt).__name__}, not a dict")
        missing = [k for k in CHECKPOINT_KEYS if k not in ckpt]
        if missing:
            raise ValueError("no " + ", ".join(missing))
        if ckpt["format"] != CHECKPOINT_FORMAT:
            raise ValueError(f"format {ckpt['format']!r}, this program reads {CHECKPOINT_FORMAT}")
        batches = ckpt.setdefault("batches_done", 0)  # saved on notice, mid-epoch
        if not isinstance(batches, int) or batches < 0:
            raise ValueError(f"batches_done {batches!r}")
        if not isinstance(ckpt["epoch"], int) or ckpt["epoch"] < (0 if batches else 1):
            raise ValueError(f"epoch {ckpt['epoch']!r}")
    except Exception as e:  # unpickling a damaged file raises about anything
        die(f"cannot load the checkpoint {path}: {type(e).__name__}: {e} "
            f"(remove it to train from the start)")
    return ckpt


def save_checkpoint(directory, state):
    """Writes state to DIR/checkpoint.pt atomically and durably: a temporary file in DIR, fsync,
    rename over checkpoint.pt, fsync of DIR. Exits 64 when DIR cannot take it."""
    path = os.path.join(directory, CHECKPOINT_NAME)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=CHECKPOINT_TMP_PREFIX, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp's 0600 would hide it from other users' ranks
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)  # the rename itself
        finally:
            os.close(dir_fd)
    except OSError as e:
        abort(f"cannot save the checkpoint {path}: {e}")
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def check_same_checkpoint(resumed, batches, world, directory, device):
    """Every rank must resume from the same epoch and batch, or their collectives would not pair
    up; exits 64 on every rank when they did not (DIR is not one directory shared by all
    replicas)."""
    mine = torch.tensor([resumed, batches], dtype=torch.int64, device=device)
    everyone = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    by_rank = [f"{int(t[0].item())}" + (f"+{int(t[1].item())}" if t[1].item() else "")
               for t in everyone]
    if len(set(by_rank)) != 1:
        abort(f"the ranks loaded checkpoints of different epochs from {directory} (by rank, -1 "
              f"for none, +batches: {' '.join(by_rank)}): --checkpoint-dir must be one "
              f"directory shared by every replica")


def write_small_file(path, text):
    """text to path atomically: a temporary file beside it, renamed over it."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class CheckpointNotice:
    """This process's side of coach's checkpoint on notice (see the module's docstring): nothing
    at all without $COACH_CHECKPOINT_REQUEST_FILE."""

    def __init__(self):
        self.path = os.environ.get(CHECKPOINT_REQUEST_ENV) or None
        self.answered = 0  # the highest request id acted on
        self.deadline_ms = 0  # the deadline of the request seen() last returned
        self._signalled = False
        self._next_look = 0.0
        if self.path is None:
            return
        # The handler first, then the opt-in: coach-launch signals only a process that wrote its
        # own pid, and SIGUSR1's default action would end this one.
        signal.signal(signal.SIGUSR1, self._on_signal)
        signal.siginterrupt(signal.SIGUSR1, False)  # a read or a collective in progress goes on
        try:
            write_small_file(self.path + ".armed", f"{os.getpid()}\n")
        except OSError as e:
            print(f"ddp_train: no SIGUSR1 for checkpoint requests (the file is still read): {e}",
                  file=sys.stderr, flush=True)

    def _on_signal(self, signum, frame):
        self._signalled = True

    def seen(self):
        """The id of a request above those acted on whose deadline has not passed, else 0. Reads
        the file on SIGUSR1, and otherwise at most every NOTICE_LOOK_SECONDS (signals off, or a
        request written before this process opted in)."""
        if self.path is None:
            return 0
        now = time.monotonic()
        if not self._signalled and now < self._next_look:
            return 0
        self._signalled = False
        self._next_look = now + NOTICE_LOOK_SECONDS
        try:
            with open(self.path, "rb") as f:
                raw = f.read(NOTICE_FILE_LIMIT + 1)
            request = json.loads(raw) if len(raw) <= NOTICE_FILE_LIMIT else None
        except (OSError, ValueError):
            return 0  # none yet
        if not isinstance(request, dict):
            return 0
        rid, deadline = request.get("id"), request.get("deadline_unix_ms")
        if type(rid) is not int or type(deadline) is not int:  # bool is an int too
            return 0
        if rid <= self.answered or deadline <= time.time() * 1000:
            return 0
        self.deadline_ms = deadline
        return rid

    def answer(self, rid, step=None, error=None):
        """Request rid acted on: FILE.done says the step saved at, or why nothing was saved."""
        self.answered = max(self.answered, rid)
        body = {"id": rid, "error": error} if error is not None else {"id": rid, "step": step}
        try:
            write_small_file(self.path + ".done", json.dumps(body) + "\n")
        except OSError as e:
            print(f"ddp_train: cannot answer checkpoint request {rid}: {e}", file=sys.stderr,
                  flush=True)


def notices_on_every_rank(notice, rank, device):
    """Whether every rank has a request file. Acting on requests takes a collective per step
    boundary, so either every rank takes part or none does."""
    t = torch.tensor([1 if notice.path else 0], dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    on = bool(t.item())
    if notice.path and not on:
        print(f"ddp_train: rank {rank}: checkpoint requests are not acted on: some rank has no "
              f"${CHECKPOINT_REQUEST_ENV}", file=sys.stderr, flush=True)
    return on


def agree_on_notice(notice, step, device):
    """(request id, step, deadline) every rank acts on: one all_reduce(MAX) over [the id of the
    request each rank has seen or 0, the step it is at, that request's deadline]. Whichever rank
    saw a request first, all of them save at the same step; DDP keeps them in step, so that step
    is this boundary's. The deadline (Unix ms) reaches the ranks that did not read the request."""
    rid = notice.seen()
    t = torch.tensor([rid, step, notice.deadline_ms if rid else 0], dtype=torch.int64,
                     device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t[0].item()), int(t[1].item()), int(t[2].item())


def hold_after_notice(notice, deadline_ms, step, rank):
    """After a checkpoint on notice, every rank stops stepping until the request's deadline: the
    pod is about to go, and each step taken now would be done again after the restart. No
    collective runs meanwhile (a peer whose pod went first must not end this rank with an error):
    a newer request is answered with this same step, whose checkpoint is on disk and which no rank
    has left. Training goes on when the deadline passes and the pod is still here."""
    if rank == 0:
        emit(f"coach-checkpoint holding step={step} until_unix_ms={deadline_ms}")
    while time.time() * 1000 < deadline_ms:
        time.sleep(HOLD_LOOK_SECONDS)
        later = notice.seen()
        if later > notice.answered:
            notice.answer(later, step=step)
    if rank == 0:
        emit(f"coach-checkpoint hold_over step={step}: training goes on")


def step_at_start(resumed, resumed_batches, batches_per_epoch):
    """The optimizer steps a run resuming from its checkpoint has behind it (0 from the start)."""
    return max(resumed, 0) * batches_per_epoch + resumed_batches


def rebuild_ddp_buckets(model, opt, x):
    """One forward and backward pass whose gradients are thrown away. DDP lays out its gradient
    buckets in parameter order for the first backward pass and in the order the gradients became
    ready from the second on; the all-reduce sums in an order that depends on that layout. A run
    that resumes does this pass first, so its first step uses the same layout as the uninterrupted
    run's and both end with bit-identical parameters."""
    model.train()
    model(x).sum().backward()
    opt.zero_grad()


def training_device(choice, local_rank):
    """(device, process group backend) for --device."""
    if choice == "cpu":
        return torch.device("cpu"), "gloo"
    if not torch.cuda.is_available():
        die("--device cuda: no GPU is visible to this process (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})")
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device, "nccl"


def save_on_notice(args, notice, request, step, epoch, batch, rank, world, model, opt):
    """Every rank, at the step the ranks agreed on (DDP keeps them in step: this one; a program
    whose ranks drift would train on to it first): global rank 0 saves the checkpoint (the epochs
    done and this epoch's batches), all wait until it is on disk, each answers coach-launch."""
    if not args.checkpoint_dir:
        notice.answer(request, error="no --checkpoint-dir: nothing saved")
        return
    if rank == 0:
        save_checkpoint(args.checkpoint_dir, {
            "format": CHECKPOINT_FORMAT, "epoch": epoch - 1, "batches_done": batch,
            "world_size": world, "model": model.module.state_dict(),
            "optimizer": opt.state_dict(), "rng": torch.get_rng_state()})
        emit(f"coach-checkpoint saved_on_notice request={request} step={step} epoch={epoch} "
             f"batch={batch}")
    dist.barrier()  # an answer says the checkpoint is durable
    notice.answer(request, step=step)


def main():
    args = parse_args()
    rank, world, local_rank = distributed_env()
    notice = CheckpointNotice()  # the SIGUSR1 handler before anything that takes time
    device, backend = training_device(args.device, local_rank)
    attempt = env_default("TORCHELASTIC_RESTART_COUNT", 0, int)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start = time.monotonic()

    if args.sleep_seconds > 0:
        print(f"ddp_train: rank {rank} sleeping {args.sleep_seconds:g}s before training", flush=True)
        time.sleep(args.sleep_seconds)

    ckpt = None
    if args.checkpoint_dir:
        if rank == 0:
            prepare_checkpoint_dir(args.checkpoint_dir)
        ckpt = load_checkpoint(args.checkpoint_dir)
    resumed = ckpt["epoch"] if ckpt is not None else -1
    resumed_batches = ckpt["batches_done"] if ckpt is not None else 0

    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout_seconds))
    on = ""
    if device.type == "cuda":
        on = (f" on {device} ({torch.cuda.get_device_name(device)}, CUDA_VISIBLE_DEVICES="
              f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})")
    print(f"ddp_train: rank {rank}/{world} local_rank {local_rank} joined "
          f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} over {backend}{on}", flush=True)

    if args.checkpoint_dir:
        check_same_checkpoint(resumed, resumed_batches, world, args.checkpoint_dir, device)
        if ckpt is not None and rank == 0:
            if ckpt["world_size"] != world:
                print(f"ddp_train: the checkpoint was saved with world size {ckpt['world_size']}, "
                      f"this run has {world}: the data is sharded differently from here on",
                      file=sys.stderr, flush=True)
            at_batch = f" batch={resumed_batches}" if resumed_batches else ""
            emit(f"coach-checkpoint resumed_from_epoch={resumed}{at_batch} "
                 f"dir={args.checkpoint_dir}")

    train_set, x_test, y_test = make_data(args.train_samples, args.test_samples)
    x_test, y_test = x_test.to(device), y_test.to(device)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    module = make_model()
    if ckpt is not None:
        try:
            module.load_state_dict(ckpt["model"])
        except Exception as e:
            abort(f"the checkpoint in {args.checkpoint_dir} does not fit this model: {e}")
    module.to(device)
    # DDP broadcasts rank 0's initial parameters.
    model = DDP(module, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    if ckpt is not None:
        try:
            opt.load_state_dict(ckpt["optimizer"])
            torch.set_rng_state(ckpt["rng"])
        except Exception as e:
            abort(f"the checkpoint in {args.checkpoint_dir} does not fit this optimizer: {e}")
        ckpt = None  # its state lives in the model and the optimizer from here on
        rebuild_ddp_buckets(model, opt, x_test[:args.batch_size])

    notices = notices_on_every_rank(notice, rank, device)
    if args.step_metrics:
        metric(rank, "global_step", step_at_start(resumed, resumed_batches, len(loader)),
               step_at_start(resumed, resumed_batches, len(loader)))
    test_loss = accuracy = float("nan")
    first_epoch = max(resumed, 0) + 1
    step = step_at_start(resumed, resumed_batches, len(loader))  # optimizer steps since the start
    if first_epoch > args.epochs:  # a finished run's checkpoint: nothing left but to evaluate it
        test_loss, accuracy = evaluate(model, x_test, y_test)
    for epoch in range(first_epoch, args.epochs + 1):
        t0 = time.monotonic()
        sampler.set_epoch(epoch)
        model.train()
        loss_sum = torch.zeros(2, dtype=torch.float64, device=device)  # sum of losses, samples
        # A checkpoint saved on notice mid-epoch holds the epoch's first batches: the same order
        # (set_epoch) goes on after them.
        skip = resumed_batches if epoch == first_epoch else 0
        for batch, (xb, yb) in enumerate(loader, start=1):
            if batch <= skip:
                continue
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            loss_sum += torch.tensor([loss.item() * len(yb), len(yb)], dtype=torch.float64,
                                     device=device)
            step += 1
            if args.step_metrics:
                metric(rank, "global_step", step, step)
            if notices and step % args.notice_every == 0:
                request, at, deadline = agree_on_notice(notice, step, device)
                if request > notice.answered:
                    save_on_notice(args, notice, request, at, epoch, batch, rank, world, model,
                                   opt)
                    if args.checkpoint_dir:
                        hold_after_notice(notice, deadline, at, rank)
        dist.all_reduce(loss_sum)
        test_loss, accuracy = evaluate(model, x_test, y_test)
        if args.epoch_seconds > 0:
            time.sleep(max(0.0, args.epoch_seconds - (time.monotonic() - t0)))
        metric(rank, "train_loss", (loss_sum[0] / loss_sum[1]).item(), epoch)
        metric(rank, "test_loss", test_loss, epoch)
        metric(rank, "test_accuracy", accuracy, epoch)
        metric(rank, "epoch_seconds", time.monotonic() - t0, epoch)

        if args.checkpoint_dir:
            if rank == 0:
                save_checkpoint(args.checkpoint_dir, {
                    "format": CHECKPOINT_FORMAT, "epoch": epoch, "world_size": world,
                    "model": model.module.state_dict(), "optimizer": opt.state_dict(),
                    "rng": torch.get_rng_state()})
                emit(f"coach-checkpoint saved epoch={epoch}")
            dist.barrier()  # no rank goes on before the checkpoint is durable

        if epoch == 1 and rank == args.fail_rank and attempt == 0:
            print(f"ddp_train: rank {rank} failing deliberately with exit code {args.exit_code} "
                  f"after epoch 1 (--fail-rank)", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(args.exit_code)  # no clean shutdown: peers see a lost rank, as after a crash

    checksum = params_checksum(model.module)
    mine = torch.tensor([int(checksum, 16) - (1 << 63)], dtype=torch.int64,
                        device=device)  # shifted to fit a signed int64
    everyone = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    agree = all(int(t.item()) == int(mine.item()) for t in everyone)
    dist.barrier()
    # The group goes away here (with DDP's reducer, which holds it too) while every tensor a
    # collective used is still referenced: its destructor joins the gloo threads holding the GIL,
    # and a thread that drops the last reference to a tensor Python created waits for the GIL
    # (torch 1.13), so dropping mine/everyone first could hang the exit.
    dist.destroy_process_group()
    del model

    status, code = "ok", 0
    if not agree:
        status, code = "checksum_mismatch", EXIT_CHECKSUM_MISMATCH
    elif not accuracy >= args.target_accuracy:
        status, code = "below_target", EXIT_BELOW_TARGET
    emit(f"coach-result rank={rank} world_size={world} local_rank={local_rank} epochs={args.epochs} "
         f"loss={test_loss:.6f} accuracy={accuracy:.6f} params_checksum={checksum} "
         f"seconds={time.monotonic() - start:.2f} status={status} resumed_from={resumed} "
         f"attempt={attempt} device={device} backend={backend}")
    if status == "checksum_mismatch":
        others = sorted({format(int(t.item()) + (1 << 63), "016x") for t in everyone})
        print(f"ddp_train: error: parameters differ across ranks (checksums {' '.join(others)})",
              file=sys.stderr, flush=True)
    elif status == "below_target":
        print(f"ddp_train: error: test accuracy {accuracy:.4f} is below the target "
              f"{args.target_accuracy} after {args.epochs} epochs", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    exit_code = main()
    # Everything is written and the process group is gone; the interpreter's own teardown is
    # skipped: PyTorch 2.x's distributed objects left for it can abort the process there
    # (SIGABRT, exit 134) after a run that succeeded, which a job counts as a failed replica.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)
