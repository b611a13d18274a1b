"""A rank killed with SIGKILL behind torchrun --max-restarts=1 and behind coach-launch's in-place
restart (COACH_RESTART_MODE=InPlace, answered by bench/launcher/in_place_operator, which decides
at once as torchrun's agent does: one restart, then the end).

Each run: 2 ranks (restart_worker.py, the torch venv's python) start; once both have an
all-reducing process group, rank 1 is killed (SIGKILL). Measured from the kill: every rank of
the next attempt started (its first Python line), and every rank's process group working again
(after import torch, init_process_group and one all-reduce). Then rank 1 of that attempt is
killed too: the launcher must give up, and its exit code is compared with the rank's real one
(137 = 128 + SIGKILL). Runs are interleaved (coach-launch, torchrun, ...).
"""
import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from rendezvous_env import clear_rendezvous_vars

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "restart_worker.py")
NPROC = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_mark(directory, what, attempt, rank):
    try:
        with open(os.path.join(directory, f"{what}.{attempt}.{rank}")) as f:
            when, pid = f.read().split()
            return float(when), int(pid)
    except FileNotFoundError:
        return None


class LauncherEnded(RuntimeError):
    pass


def wait_marks(directory, what, attempt, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        marks = [read_mark(directory, what, attempt, r) for r in range(NPROC)]
        if all(marks):
            return marks
        if proc.poll() is not None:
            raise LauncherEnded(f"launcher exited ({proc.returncode}) before {what}.{attempt}")
        time.sleep(0.005)
    raise RuntimeError(f"no {what}.{attempt} from every rank within {timeout} s")


def one_run(name, cmd, env, directory, log):
    """Returns (started, ready, exit code, kill -> exit) for one launcher run, in seconds; started
    and ready are None when the launcher ended without its restarted ranks all-reducing."""
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    started1 = None
    try:
        ready0 = wait_marks(directory, "ready", 0, proc, 120)
        killed = time.monotonic()
        os.kill(ready0[1][1], signal.SIGKILL)
        started1 = wait_marks(directory, "start", 1, proc, 120)
        ready1 = wait_marks(directory, "ready", 1, proc, 120)
        killed2 = time.monotonic()
        os.kill(ready1[1][1], signal.SIGKILL)
        code = proc.wait(timeout=120)
        ended = time.monotonic()
    except LauncherEnded:
        # The restarted attempt failed by itself (its output says why): counted, not timed.
        started = None if started1 is None else max(m[0] for m in started1) - killed
        return started, None, proc.returncode, None
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        sys.exit(f"restart bench: {name}: {e}; its output: {log.name}")
    return (max(m[0] for m in started1) - killed, max(m[0] for m in ready1) - killed, code,
            ended - killed2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True, help="coach-launch")
    ap.add_argument("--operator", required=True, help="bench/launcher:in_place_operator")
    ap.add_argument("--python", required=True, help="the torch venv's python")
    ap.add_argument("--torchrun", required=True, help="the torch venv's torchrun")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    base = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    clear_rendezvous_vars(base)
    work = tempfile.mkdtemp(prefix="coach-bench-restart-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write("bench\n")
    print(f"{NPROC} ranks, rank 1 killed (SIGKILL) in attempt 0, then in attempt 1;"
          f" {a.runs} runs each, interleaved; logs in {work}. Load average at the start:"
          f" {open('/proc/loadavg').read().split()[0]}")
    results = {"coach-launch": [], "torchrun": []}
    reports = {"coach-launch": set(), "torchrun": set()}
    for run in range(a.runs):
        for name in results:
            directory = os.path.join(work, f"{name}.{run}")
            os.mkdir(directory)
            log = open(directory + ".log", "w")
            if name == "coach-launch":
                op = subprocess.Popen([a.operator, "--max-restarts", "1"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
                port = op.stdout.readline().split()[1]
                env = dict(base, COACH_PROGRESS_ADDRESS=f"127.0.0.1:{port}",
                           COACH_PROGRESS_TOKEN_FILE=token, COACH_POD_NAMESPACE="bench",
                           COACH_POD_NAME="bench-worker-0", COACH_RESTART_MODE="InPlace")
                cmd = [a.launcher, f"--nproc-per-node={NPROC}", f"--master-port={free_port()}",
                       "--", a.python, "-u", WORKER, directory]
                results[name].append(one_run(name, cmd, env, directory, log))
                op.stdin.close()
                op.wait()
            else:
                cmd = [a.torchrun, "--standalone", f"--nproc-per-node={NPROC}",
                       "--max-restarts=1", WORKER, directory]
                results[name].append(one_run(name, cmd, base, directory, log))
            log.close()
            with open(directory + ".log") as f:
                text = f.read()
            # What each says about the failure it ends with.
            for pattern in (r"exitcode\s*:\s*-?\d+", r"exiting with code \d+",
                            r"failed with code \d+"):
                reports[name].update(m.group(0) for m in re.finditer(pattern, text))
    def figures(values):
        kept = [v * 1000 for v in values if v is not None]
        if not kept:
            return "-"
        return (f"median {statistics.median(kept):7.1f} ms"
                f" [{' '.join(f'{x:.1f}' for x in kept)}]")

    for name, rows in results.items():
        failed = [r for r in rows if r[1] is None]
        print(f"  {name}:")
        print(f"    kill -> every rank started again: {figures(r[0] for r in rows)}")
        print(f"    kill -> every rank all-reducing again: {figures(r[1] for r in rows)}")
        print(f"    second kill -> launcher exit: {figures(r[3] for r in rows)};"
              f" exit codes {[r[2] for r in rows if r[1] is not None]} (the rank's: 137)")
        if failed:
            print(f"    the restarted attempt failed by itself in {len(failed)} of {len(rows)}"
                  f" runs (launcher exit codes {[r[2] for r in failed]}; see the logs)")
        print(f"    its output on the failure: {sorted(reports[name])}")
    print(f"load average at the end: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
