"""Start-up overhead of coach-launch against PyTorch 2.x's torchrun --standalone.

For one 2-process program, overhead = median wall time under the launcher - median wall time of
the same 2 processes started directly (this script sets RANK, WORLD_SIZE, ... itself). Every run
uses the same Python (--python, the torch venv's; torchrun runs its workers with the Python it
runs on, the venv's). Runs are interleaved (direct, coach, torchrun, direct, ...) so drift hits all
three alike. A second table launches a trivial program (/bin/true) with each launcher: the
launcher alone.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

from rendezvous_env import clear_rendezvous_vars


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


def torchrun(exe, program, nproc, no_python):
    # torchrun runs a script as [sys.executable, "-u", script]: the venv's python, unbuffered.
    cmd = [exe, "--standalone", f"--nproc_per_node={nproc}"]
    if no_python:
        cmd.append("--no-python")
    cmd += program
    check([subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)],
          "torchrun")


def ms(seconds):
    return f"{seconds * 1000:8.1f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True, help="coach-launch")
    ap.add_argument("--python", required=True, help="the torch venv's python")
    ap.add_argument("--torchrun", required=True, help="the torch venv's torchrun")
    ap.add_argument("--program", required=True, help="python script run with 2 processes")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--nproc", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    clear_rendezvous_vars(os.environ)
    version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"],
                             check=True, capture_output=True, text=True).stdout.strip()
    print(f"torch {version} ({args.python}); load average at the start:"
          f" {open('/proc/loadavg').read().split()[0]}")

    prog = [args.python, "-u", args.program]
    # Warm the page cache once so the first measured run is not an outlier.
    direct(prog, args.nproc)
    torchrun(args.torchrun, [args.program], args.nproc, False)

    walls = {"direct": [], "coach": [], "torchrun": []}
    for _ in range(args.runs):
        walls["direct"].append(timed(lambda: direct(prog, args.nproc)))
        walls["coach"].append(timed(lambda: coach(args.launcher, prog, args.nproc)))
        walls["torchrun"].append(
            timed(lambda: torchrun(args.torchrun, [args.program], args.nproc, False)))
    med = {k: statistics.median(v) for k, v in walls.items()}
    coach_over = med["coach"] - med["direct"]
    torch_over = med["torchrun"] - med["direct"]

    def paired(key):  # median of per-round differences: robust to slow drift of the machine
        return statistics.median(a - b for a, b in zip(walls[key], walls["direct"]))

    print(f"program: {args.program}, {args.nproc} processes, median of {args.runs} runs each")
    print(f"  direct (no launcher)   wall {ms(med['direct'])}")
    print(f"  coach-launch           wall {ms(med['coach'])}   overhead {ms(coach_over)}"
          f"   (paired {ms(paired('coach'))})")
    print(f"  torchrun --standalone  wall {ms(med['torchrun'])}   overhead {ms(torch_over)}"
          f"   (paired {ms(paired('torchrun'))})")
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
        trivial["torchrun"].append(
            timed(lambda: torchrun(args.torchrun, ["/bin/true"], args.nproc, True)))
    tc = statistics.median(trivial["coach"])
    tt = statistics.median(trivial["torchrun"])
    print(f"trivial program /bin/true, {args.nproc} processes, median of {args.runs} runs:"
          " the launcher alone")
    print(f"  coach-launch           wall {ms(tc)}")
    print(f"  torchrun --no-python   wall {ms(tt)}")
    print(f"  ratio torchrun / coach-launch = {tt / tc:.0f}x")
    print(f"load average at the end: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
