"""Output throughput through coach-launch against the same workers writing directly.

W workers (line_writer) each write N lines; the wall time of the whole run gives lines/s. Each
configuration runs both ways, interleaved, with stdout to (a) a file and (b) a pipe drained by
`cat > /dev/null`:
  direct: the W processes started by this script, all writing to the one file/pipe (their
          lines splice into each other: the count of whole lines is printed too);
  coach:  `coach-launch --nproc-per-node=W -- line_writer ...` (every line whole).
Writers: "whole" writes each line with one write() (a line-buffered program), "pieces" in 2-5
write() calls with sched_yield() between (partial writes).
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

LINE = re.compile(rb"^out \d+ line \d{5,} x+ end$")


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
    ap.add_argument("--lines", type=int, default=200000, help="lines per worker")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    total = a.lines * a.workers
    print(f"{a.workers} workers x {a.lines} lines (~60 bytes each), median of {a.runs} runs")
    for mode, flag in (("whole", "--whole-lines"), ("pieces", "--lines")):
        args = [flag, str(a.lines)]
        for sink in ("file", "pipe"):
            walls = {"direct": [], "coach": []}
            whole = {"direct": [], "coach": []}
            for _ in range(a.runs):
                for how in ("direct", "coach"):
                    if how == "direct":
                        fn = lambda out: run_direct(a.writer, a.workers, args, out)  # noqa: E731
                    else:
                        fn = lambda out: run_coach(a.launcher, a.writer, a.workers, args,  # noqa
                                                   out)
                    took, path = timed(fn, sink)
                    walls[how].append(took)
                    if path is not None:
                        whole[how].append(whole_lines(path))
                        os.unlink(path)
            d, c = statistics.median(walls["direct"]), statistics.median(walls["coach"])
            line = (f"  {mode:6} -> {sink:4}: direct {total / d / 1e6:6.2f} M lines/s,"
                    f" coach-launch {total / c / 1e6:6.2f} M lines/s ({c / d:4.2f}x the time)")
            if whole["direct"]:
                line += (f"; whole lines: direct {min(whole['direct'])}/{total},"
                         f" coach-launch {min(whole['coach'])}/{total}")
            print(line)


if __name__ == "__main__":
    main()
