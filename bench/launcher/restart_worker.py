"""A rank for bench/launcher/restart.py: records when it starts and when its process group works.

Writes DIR/start.<attempt>.<rank> at its first line and DIR/ready.<attempt>.<rank> after
init_process_group("gloo") and one all-reduce, each "<time.monotonic()> <pid>" (the attempt is
TORCHELASTIC_RESTART_COUNT, which torchrun and coach-launch both set), then sleeps until it is
killed or stopped.
"""
import os
import sys
import time

START = time.monotonic()


def mark(directory, what, when):
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    name = os.path.join(directory, f"{what}.{attempt}.{os.environ['RANK']}")
    with open(name + ".tmp", "w") as f:
        f.write(f"{when:.6f} {os.getpid()}\n")
    os.rename(name + ".tmp", name)


def main():
    directory = sys.argv[1]
    mark(directory, "start", START)
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    mark(directory, "ready", time.monotonic())
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
