#!/usr/bin/env python3
"""coach-operator --backend=kube at scale on kwok nodes (figures, not a test; bench/README.md).

One operator at its default settings owns --jobs PyTorchJobs of --replicas pods each, scheduled onto
the testenv's kwok nodes, which run them. Measured:

  1. owned-pod cost: the operator's CPU (utime+stime) from the first job POST until every pod is
     Running, and its RSS before the first job and once every pod is Running (5 s later), per 1,000
     owned pods;
  2. reconcile latency while every job changes state: each job's Master pod is annotated
     coach.test/exit-code "0" (one PATCH each, --threads at once); kwok then finishes it
     (phase Succeeded). Per job: the time from the harness's pod watch seeing the Master Succeeded to
     its job watch seeing the job's condition Succeeded=True, i.e. what a user watching the job waits
     after the pod finished. Percentiles p50/p90/p99/max over all jobs. Both watches run in this
     process, so its own delay in reading them is on both sides of the difference.

The jobs have cleanPodPolicy None: the Workers keep running after the Master succeeded, so the
measured pass is the status change, not 14,000 deletions.

The last line is machine-readable: `SCALE-SUMMARY key=value ...` (bench/report.sh reads it).

Usage: scale.py --env DIR/env --operator PATH [--jobs 2000] [--replicas 8] [--threads 32]
"""

import argparse
import http.client
import json
import os
import queue
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_lib  # noqa: E402

MASTER_LABEL = "training.kubeflow.org/replica-type=master"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"


class Api:
    """A connection per thread to the testenv's API server with its admin client certificate."""

    def __init__(self, env):
        url = urllib.parse.urlparse(env["COACH_TESTENV_SERVER"])
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=env["COACH_TESTENV_CA"])
        self.ctx.load_cert_chain(env["COACH_TESTENV_CLIENT_CERT"], env["COACH_TESTENV_CLIENT_KEY"])
        self.local = threading.local()

    def connect(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, content_type="application/json"):
        """Returns (status, parsed body); retries once on a dropped keep-alive connection."""
        for attempt in range(2):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = self.connect()
            try:
                data = json.dumps(body).encode() if body is not None else None
                conn.request(method, path, body=data, headers={"Content-Type": content_type})
                resp = conn.getresponse()
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else {})
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")


class Watch(threading.Thread):
    """Lists then watches `path` (a collection) with `params`, calling on_event(type, obj, t)."""

    def __init__(self, api, path, params, on_event):
        super().__init__(daemon=True)
        self.api, self.path, self.params, self.on_event = api, path, params, on_event
        self.started = threading.Event()
        self.error = None

    def run(self):
        rv = None
        while True:
            try:
                conn = self.api.connect(timeout=None)
                if rv is None:
                    q = urllib.parse.urlencode(self.params)
                    conn.request("GET", "%s?%s" % (self.path, q))
                    resp = conn.getresponse()
                    listed = json.loads(resp.read())
                    rv = listed["metadata"]["resourceVersion"]
                    for obj in listed.get("items", []):
                        self.on_event("ADDED", obj, time.monotonic())
                q = urllib.parse.urlencode(dict(self.params, watch="1", resourceVersion=rv,
                                                allowWatchBookmarks="true"))
                conn.request("GET", "%s?%s" % (self.path, q))
                resp = conn.getresponse()
                self.started.set()
                while True:
                    line = resp.readline()
                    if not line:
                        break
                    t = time.monotonic()
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    if ev.get("type") == "ERROR":
                        rv = None  # 410 Gone: list again
                        break
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if ev.get("type") != "BOOKMARK":
                        self.on_event(ev["type"], obj, t)
                conn.close()
            except (http.client.HTTPException, OSError, ValueError) as e:
                self.error = e
                time.sleep(0.2)


class State:
    """What the watches have seen, under one lock."""

    def __init__(self, jobs):
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.jobs = jobs
        self.running_pods = set()
        self.master_succeeded = {}  # job name -> first time its Master was seen Succeeded
        self.job_succeeded = {}  # job name -> first time the job's Succeeded=True was seen

    def on_pod(self, kind, pod, t):
        meta, status = pod.get("metadata", {}), pod.get("status", {})
        name, phase = meta.get("name", ""), status.get("phase", "")
        labels = meta.get("labels", {})
        with self.cond:
            if kind == "DELETED":
                self.running_pods.discard(name)
            elif phase == "Running":
                self.running_pods.add(name)
            elif phase == "Succeeded":
                self.running_pods.discard(name)
                if labels.get("training.kubeflow.org/replica-type") == "master":
                    job = labels.get("training.kubeflow.org/job-name", "")
                    self.master_succeeded.setdefault(job, t)
            self.cond.notify_all()

    def on_job(self, kind, job, t):
        if kind == "DELETED":
            return
        name = job.get("metadata", {}).get("name", "")
        if scale_lib.has_condition(job, "Succeeded"):
            with self.cond:
                self.job_succeeded.setdefault(name, t)
                self.cond.notify_all()

    def wait(self, pred, timeout):
        end = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 1.0))
            return True


def proc_usage(pid):
    """(cpu seconds utime+stime, VmRSS MiB, VmHWM MiB) of a process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = hwm = 0.0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return cpu, rss, hwm


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_operator(binary, kubeconfig, log_dir):
    state = tempfile.mkdtemp(prefix="coach-bench-scale-state.")
    grpc_port, http_port = free_port(), free_port()
    log_path = os.path.join(log_dir, "coach-bench-scale.operator.log")
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [binary, "--backend=kube", "--kubeconfig=" + kubeconfig, "--state-dir=" + state,
         "--log-level=warn", "--listen=127.0.0.1:%d" % grpc_port,
         "--http-listen=127.0.0.1:%d" % http_port], stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit("scale: the operator exited (%s); log %s" % (proc.returncode, log_path))
        try:
            c = http.client.HTTPConnection("127.0.0.1", http_port, timeout=2)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc, log_path
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("scale: the operator was not ready in 120 s; log %s" % log_path)


def parallel(threads, items, fn):
    """Runs fn(item) on `threads` threads; returns the number of failures."""
    work = queue.Queue()
    for it in items:
        work.put(it)
    failures = [0]
    lock = threading.Lock()

    def loop():
        while True:
            try:
                it = work.get_nowait()
            except queue.Empty:
                return
            if not fn(it):
                with lock:
                    failures[0] += 1

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return failures[0]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    # A SIGTERM (run.sh stopped) still stops the operator: `finally` below runs on SystemExit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", required=True, help="the testenv's DIR/env")
    p.add_argument("--operator", required=True, help="coach-operator binary")
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--replicas", type=int, default=8)
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--timeout", type=float, default=1200, help="seconds for each phase")
    p.add_argument("--log-dir", default="/tmp")
    p.add_argument("--namespace", default="coach-scale-%d" % os.getpid(),
                   help="created by the bench; left for the caller to delete")
    a = p.parse_args()
    if a.jobs < 1 or a.replicas < 1 or a.threads < 1:
        raise SystemExit("scale: --jobs, --replicas and --threads must be at least 1")
    env = {}
    with open(a.env) as f:
        for line in f:
            key, sep, value = line.strip().partition("=")
            if sep:
                env[key] = value
    api = Api(env)
    ns = a.namespace
    pods_total = a.jobs * a.replicas

    op, op_log = start_operator(a.operator, env["KUBECONFIG"], a.log_dir)
    try:
        time.sleep(2)
        cpu0, rss0, _ = proc_usage(op.pid)
        code, body = api.call("POST", "/api/v1/namespaces",
                              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        if code != 201:
            raise SystemExit("scale: create namespace: HTTP %d %s" % (code, body))
        state = State(a.jobs)
        pods = Watch(api, "/api/v1/namespaces/%s/pods" % ns, {"labelSelector": OPERATOR_LABEL},
                     state.on_pod)
        jobs = Watch(api, "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs" % ns, {},
                     state.on_job)
        pods.start()
        jobs.start()
        pods.started.wait(30)
        jobs.started.wait(30)

        # 1. Every job submitted at once; every pod Running on a kwok node.
        names = ["scale-%d" % i for i in range(a.jobs)]

        def create(name):
            code, body = api.call("POST", "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs" % ns,
                                  scale_lib.pytorch_job(ns, name, a.replicas))
            if code != 201:
                print("scale: create %s: HTTP %d %s" % (name, code, body.get("message")),
                      file=sys.stderr)
            return code == 201

        load_start = loadavg()
        t0 = time.monotonic()
        failed = parallel(a.threads, names, create)
        t_submitted = time.monotonic()
        ok = state.wait(lambda: len(state.running_pods) >= pods_total, a.timeout)
        t_running = time.monotonic()
        cpu1, rss1, hwm1 = proc_usage(op.pid)
        time.sleep(5)
        _, rss_settled, _ = proc_usage(op.pid)
        if not ok or failed:
            raise SystemExit("scale: %d create(s) failed; %d of %d pods Running after %.0f s" %
                             (failed, len(state.running_pods), pods_total, a.timeout))
        load_running = loadavg()
        per_k = 1000.0 / pods_total
        print("== %d jobs x %d replicas = %d pods on kwok nodes, namespace %s" %
              (a.jobs, a.replicas, pods_total, ns))
        print("submitted (%d threads)            %8.2f s" % (a.threads, t_submitted - t0))
        print("every pod Running                 %8.2f s  [load %s -> %s]" %
              (t_running - t0, load_start, load_running))
        print("operator CPU until then           %8.2f s  (%.2f s per 1,000 owned pods)" %
              (cpu1 - cpu0, (cpu1 - cpu0) * per_k))
        print("operator RSS empty                %8.1f MiB" % rss0)
        print("operator RSS owning every pod     %8.1f MiB  (5 s later %.1f MiB, peak %.1f MiB;"
              " %.2f MiB per 1,000 owned pods over empty)" %
              (rss1, rss_settled, hwm1, (rss_settled - rss0) * per_k))

        # 2. Every job's Master finishes; how long until the job says Succeeded.
        def finish(name):
            code, body = api.call(
                "PATCH", "/api/v1/namespaces/%s/pods/%s-master-0" % (ns, name),
                {"metadata": {"annotations": {"coach.test/exit-code": "0"}}},
                content_type="application/merge-patch+json")
            if code != 200:
                print("scale: patch %s-master-0: HTTP %d %s" % (name, code, body.get("message")),
                      file=sys.stderr)
            return code == 200

        cpu2, _, _ = proc_usage(op.pid)
        t1 = time.monotonic()
        failed = parallel(a.threads, names, finish)
        t_patched = time.monotonic()
        ok = state.wait(lambda: len(state.job_succeeded) >= a.jobs, a.timeout)
        t_done = time.monotonic()
        cpu3, rss3, hwm3 = proc_usage(op.pid)
        load_done = loadavg()
        lat = scale_lib.latencies(state.master_succeeded, state.job_succeeded)
        s = scale_lib.summarize(lat)
        print("Master pods annotated to exit 0   %8.2f s  (%d failed)" % (t_patched - t1, failed))
        print("every job Succeeded (watch)       %8.2f s after the first PATCH  [load %s]" %
              (t_done - t1, load_done))
        print("operator CPU meanwhile            %8.2f s  RSS %.1f MiB, peak %.1f MiB" %
              (cpu3 - cpu2, rss3, hwm3))
        print("ms from the Master seen Succeeded to the job seen Succeeded (watches):")
        print("  n %d  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f" %
              (s["n"], s["p50"], s["p90"], s["p99"], s["max"]))
        if not ok:
            print("scale: only %d of %d jobs Succeeded in %.0f s" %
                  (len(state.job_succeeded), a.jobs, a.timeout), file=sys.stderr)
        summary = {
            "jobs": a.jobs, "replicas": a.replicas, "pods": pods_total,
            "running_s": t_running - t0, "cpu_s": cpu1 - cpu0,
            "cpu_s_per_1k_pods": (cpu1 - cpu0) * per_k, "rss_empty_mib": rss0,
            "rss_mib": rss_settled, "peak_rss_mib": max(hwm1, hwm3),
            "rss_mib_per_1k_pods": (rss_settled - rss0) * per_k,
            "succeeded_s": t_done - t1, "lat_n": s["n"], "lat_p50_ms": s["p50"],
            "lat_p90_ms": s["p90"], "lat_p99_ms": s["p99"], "lat_max_ms": s["max"],
            "load": load_done.split()[0],
        }
        print(scale_lib.summary_line("SCALE-SUMMARY", summary))
        return 0 if ok else 1
    finally:
        op.terminate()
        try:
            op.wait(15)
        except subprocess.TimeoutExpired:
            op.kill()
        print("operator log: %s" % op_log)


if __name__ == "__main__":
    sys.exit(main())
