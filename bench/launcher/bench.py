"""Start-up overhead of coach-launch against torchrun (torch.distributed.run --standalone).

For one 2-process program, overhead = median wall time under the launcher - median wall time of
the same 2 processes started directly (this script sets RANK, WORLD_SIZE, ... itself). Runs are
interleaved (direct, coach, torchrun, direct, ...) so drift hits all three alike.
A second table launches a trivial program (/bin/true) with each launcher: the launcher alone.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

PY = "/usr/bin/python3"
TORCHRUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchrun.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def check(procs, what):
    codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"bench: {what} failed with exit codes {codes}")


def direct(program, nproc):
    port = free_port()
    procs = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen(program, env=env, stdout=subprocess.DEVNULL))
    check(procs, "direct run")


def coach(launcher, program, nproc):
    cmd = [launcher, f"--nproc-per-node={nproc}", f"--master-port={free_port()}", "--"] + program
    check([subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)],
          "coach-launch")


def torchrun(program, nproc, no_python, monitor_interval=None):
    # torchrun.py is `python3 -m torch.distributed.run` with a Python 3.11 fix (see there).
    cmd = [PY, TORCHRUN, "--standalone", f"--nproc_per_node={nproc}"]
    if monitor_interval is not None:
        cmd.append(f"--monitor_interval={monitor_interval}")
    if no_python:
        cmd.append("--no_python")
    cmd += program
    check([subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)],
          "torchrun")


def ms(seconds):
    return f"{seconds * 1000:8.1f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--program", required=True, help="python script run with 2 processes")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--nproc", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    for var in ("PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR",
                "PET_MASTER_PORT", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        os.environ.pop(var, None)

    prog = [PY, "-u", args.program]
    # Warm the page cache once so the first measured run is not an outlier.
    direct(prog, args.nproc)

    walls = {"direct": [], "coach": [], "torchrun": [], "torchrun_fast": []}
    for _ in range(args.runs):
        walls["direct"].append(timed(lambda: direct(prog, args.nproc)))
        walls["coach"].append(timed(lambda: coach(args.launcher, prog, args.nproc)))
        walls["torchrun"].append(timed(lambda: torchrun([args.program], args.nproc, False)))
        walls["torchrun_fast"].append(
            timed(lambda: torchrun([args.program], args.nproc, False, monitor_interval=0.1)))
    med = {k: statistics.median(v) for k, v in walls.items()}
    coach_over = med["coach"] - med["direct"]
    torch_over = med["torchrun"] - med["direct"]
    fast_over = med["torchrun_fast"] - med["direct"]

    def paired(key):  # median of per-round differences: robust to slow drift of the machine
        return statistics.median(a - b for a, b in zip(walls[key], walls["direct"]))

    print(f"program: {args.program}, {args.nproc} processes, median of {args.runs} runs each")
    print(f"  direct (no launcher)   wall {ms(med['direct'])}")
    print(f"  coach-launch           wall {ms(med['coach'])}   overhead {ms(coach_over)}"
          f"   (paired {ms(paired('coach'))})")
    print(f"  torchrun --standalone  wall {ms(med['torchrun'])}   overhead {ms(torch_over)}"
          f"   (paired {ms(paired('torchrun'))})")
    print(f"  torchrun, monitor 0.1s wall {ms(med['torchrun_fast'])}   overhead {ms(fast_over)}"
          f"   (paired {ms(paired('torchrun_fast'))})")
    if coach_over > 0:
        print(f"  torchrun overhead / coach-launch overhead = {torch_over / coach_over:.1f}x")
    else:
        print("  coach-launch overhead is below the run-to-run noise of the program (<= 0 ms);"
              " see the trivial-program table")
    spread = statistics.pstdev(walls["direct"])
    print(f"  (run-to-run spread of the direct program: stdev {ms(spread)})")

    trivial = {"coach": [], "torchrun": []}
    for _ in range(args.runs):
        trivial["coach"].append(timed(lambda: coach(args.launcher, ["/bin/true"], args.nproc)))
        trivial["torchrun"].append(timed(lambda: torchrun(["/bin/true"], args.nproc, True)))
    tc = statistics.median(trivial["coach"])
    tt = statistics.median(trivial["torchrun"])
    print(f"trivial program /bin/true, {args.nproc} processes, median of {args.runs} runs:"
          " the launcher alone")
    print(f"  coach-launch           wall {ms(tc)}")
    print(f"  torchrun --no_python   wall {ms(tt)}")
    print(f"  ratio torchrun / coach-launch = {tt / tc:.0f}x"
          " (torch 1.13's default --monitor_interval is 5 s: its agent polls workers that often)")


if __name__ == "__main__":
    main()
