"""Output through coach-launch and torchrun against the same workers writing directly.

W workers (line_writer) each write N lines; the wall time of the whole run gives lines/s. Each
configuration runs every way, interleaved, with stdout to (a) a file and (b) a pipe drained by
`cat > /dev/null`:
  direct:   the W processes started by this script, all writing to the one file/pipe (their
            lines splice into each other: the count of whole lines is printed too);
  coach:    `coach-launch --nproc-per-node=W -- line_writer ...` (every line whole);
  torchrun: `torchrun --standalone --nproc-per-node=W --no-python line_writer ...` (with
            --torchrun), its default: the workers inherit torchrun's stdout;
  tee:      the same with `--tee 3` (each worker's output to a file that torchrun tails, printing
            every line it reads with a `[default<rank>]:` prefix; the prefix is not counted).
Writers: "whole" writes each line with one write() (a line-buffered program), "pieces" in 2-5
write() calls with sched_yield() between (partial writes). Lines/s include each launcher's start.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

LINE = re.compile(rb"^(\[default\d+\]:)?out \d+ line \d{5,} x+ end$")


def run_direct(writer, workers, args, out):
    procs = [subprocess.Popen([writer] + args, stdout=out, env=dict(os.environ, RANK=str(r)))
             for r in range(workers)]
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"direct run failed: {codes}")


def run_coach(launcher, writer, workers, args, out):
    code = subprocess.call([launcher, f"--nproc-per-node={workers}", "--", writer] + args,
                           stdout=out, stderr=subprocess.DEVNULL)
    if code:
        raise SystemExit(f"coach-launch failed: {code}")


def run_torchrun(torchrun, flags, writer, workers, args, out):
    cmd = [torchrun, "--standalone", f"--nproc-per-node={workers}", "--no-python"] + flags
    code = subprocess.call(cmd + [writer] + args, stdout=out, stderr=subprocess.DEVNULL)
    if code:
        raise SystemExit(f"torchrun {' '.join(flags)} failed: {code}")


def timed(fn, sink):
    """Runs fn(out) with stdout to a file or to a pipe read by cat; returns (seconds, file)."""
    if sink == "file":
        f = tempfile.NamedTemporaryFile(delete=False)
        start = time.perf_counter()
        fn(f)
        took = time.perf_counter() - start
        f.close()
        return took, f.name
    cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    start = time.perf_counter()
    fn(cat.stdin)
    cat.stdin.close()
    cat.wait()
    return time.perf_counter() - start, None


def whole_lines(path):
    with open(path, "rb") as f:
        return sum(1 for line in f if LINE.match(line.rstrip(b"\n")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--writer", required=True)
    ap.add_argument("--torchrun", help="a PyTorch 2.x torchrun to run as well")
    ap.add_argument("--lines", type=int, default=200000, help="lines per worker")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    total = a.lines * a.workers
    hows = {
        "direct": lambda args, out: run_direct(a.writer, a.workers, args, out),
        "coach-launch": lambda args, out: run_coach(a.launcher, a.writer, a.workers, args, out),
    }
    if a.torchrun:
        hows["torchrun"] = lambda args, out: run_torchrun(a.torchrun, [], a.writer, a.workers,
                                                          args, out)
        hows["torchrun --tee 3"] = lambda args, out: run_torchrun(
            a.torchrun, ["--tee", "3"], a.writer, a.workers, args, out)
    print(f"{a.workers} workers x {a.lines} lines (~60 bytes each), median of {a.runs} runs;"
          f" whole lines: the fewest of the runs. Load average at the start:"
          f" {open('/proc/loadavg').read().split()[0]}")
    for mode, flag in (("whole", "--whole-lines"), ("pieces", "--lines")):
        args = [flag, str(a.lines)]
        for sink in ("file", "pipe"):
            walls = {how: [] for how in hows}
            whole = {how: [] for how in hows}
            for _ in range(a.runs):
                for how, fn in hows.items():
                    took, path = timed(lambda out: fn(args, out), sink)  # noqa: B023
                    walls[how].append(took)
                    if path is not None:
                        whole[how].append(whole_lines(path))
                        os.unlink(path)
            d = statistics.median(walls["direct"])
            print(f"  {mode} -> {sink}:")
            for how in hows:
                w = statistics.median(walls[how])
                line = (f"    {how:17} {total / w / 1e6:6.2f} M lines/s, wall {w * 1000:8.1f} ms"
                        f" ({w / d:5.2f}x direct)")
                if whole[how]:
                    line += f"; whole lines {min(whole[how])}/{total}"
                print(line)
    print(f"load average at the end: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
