"""A tiny torch.distributed program: gloo all-reduce of (rank + 1) over env:// rendezvous.

Checks that the launcher's env is consistent with what the process group reports, and, when
given a directory, writes "<rank> <world> <local_rank> <sum>" to DIR/result.<rank>.
Exits 0 when the sum is world * (world + 1) / 2, else 1.
"""
import os
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    assert rank == int(os.environ["RANK"]), "RANK disagrees with the process group"
    assert world == int(os.environ["WORLD_SIZE"]), "WORLD_SIZE disagrees"
    assert 0 <= local_rank < int(os.environ["LOCAL_WORLD_SIZE"]), "LOCAL_RANK out of range"
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    total = t.item()
    expected = world * (world + 1) / 2
    dist.destroy_process_group()
    print(f"rank {rank}/{world} local {local_rank}: all_reduce sum {total} (expected {expected})",
          flush=True)
    if len(sys.argv) > 1:
        with open(os.path.join(sys.argv[1], f"result.{rank}"), "w") as f:
            f.write(f"{rank} {world} {local_rank} {total:g}\n")
    return 0 if total == expected else 1


if __name__ == "__main__":
    sys.exit(main())
