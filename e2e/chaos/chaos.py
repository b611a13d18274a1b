#!/usr/bin/env python3
"""Chaos suites of coach-operator --backend=kube on a real control plane (tools/testenv).

  chaos.py kills      SIGKILL the operator COACH_CHAOS_KILLS times while COACH_CHAOS_JOBS run
  chaos.py apiserver  kill -9 + restart kube-apiserver with etcd compacted while it is down
  chaos.py proxy      COACH_CHAOS_FAULT_RATE of the operator's API calls answered 409/429/500/
                      503 or stalled by e2e/chaos/fault_proxy.py
  chaos.py all        the three, one control plane each

Each run prints a summary table and exits 1 when a count is wrong (a duplicate pod, a lost or
unfinished job, a job whose end state is not the one its spec implies). See README.md.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster  # noqa: E402
import workload  # noqa: E402
from cluster import log  # noqa: E402


def env_int(name, default):
    return int(os.environ.get(name, default))


def env_float(name, default):
    return float(os.environ.get(name, default))


def wait_established(kubectl, kubeconfig, timeout):
    """Waits until every CRD is Established. `kubectl wait --for=condition=Established` fails at
    once, rather than waiting, on a CRD so new that its status has no conditions yet."""
    base = [kubectl, "--kubeconfig", kubeconfig]
    names = subprocess.run(base + ["get", "crd", "-o", "name"], check=True, capture_output=True,
                           text=True).stdout.split()
    deadline = time.time() + timeout
    jsonpath = 'jsonpath={.status.conditions[?(@.type=="Established")].status}'
    for name in names:
        while subprocess.run(base + ["get", name, "-o", jsonpath], capture_output=True,
                             text=True).stdout.strip() != "True":
            if time.time() > deadline:
                raise RuntimeError("%s not Established in %d s" % (name, timeout))
            time.sleep(0.2)


class Run:
    """One suite: its control plane, namespace, watch and operator, and its summary."""

    def __init__(self, args, suite):
        self.args, self.suite = args, suite
        self.root = args.root
        self.work = tempfile.mkdtemp(prefix=f"coach-chaos-{suite}-")
        self.tenv = cluster.Testenv(self.root, os.path.join(self.work, "kube"))
        self.ns = f"chaos-{suite}"
        self.summary = {}
        self.extra_rows = []

    def setup(self, kubeconfig=None):
        self.tenv.up()
        self.api = self.tenv.api()
        crds = os.path.join(self.root, "charts/coach/crds")
        kubectl = os.path.join(self.tenv.env["COACH_TESTENV_BIN"], "kubectl")
        subprocess.run([kubectl, "--kubeconfig", self.tenv.kubeconfig, "apply", "-f", crds],
                       check=True, stdout=subprocess.DEVNULL)
        wait_established(kubectl, self.tenv.kubeconfig, 60)
        self.api.create_namespace(self.ns)
        self.watch = cluster.PodWatch(self.api, self.ns, os.path.join(self.work, "pods.trace"))
        self.watch.start()
        self.op = cluster.Operator(self.args.operator, kubeconfig or self.tenv.kubeconfig,
                                   self.work)

    def teardown(self, ok):
        if getattr(self, "op", None):
            self.op.stop()
        if getattr(self, "watch", None):
            self.watch.stop()
        if ok or not os.environ.get("COACH_CHAOS_KEEP"):
            self.tenv.down()
        if not ok:
            log(f"operator log: {self.op.log_path}" if getattr(self, "op", None) else "")
        if ok and not os.environ.get("COACH_CHAOS_KEEP"):
            subprocess.run(["rm", "-rf", self.work], check=False)

    def submit_spread(self, jobs, over_s, waves):
        """Submits the jobs in `waves` equal waves spread over `over_s` seconds (a thread)."""
        def go():
            per = max(1, -(-len(jobs) // waves))
            for w in range(0, len(jobs), per):
                workload.submit(self.api, self.ns, jobs[w:w + per])
                time.sleep(over_s / waves)
            self.submitted_at = time.monotonic()
        self.submitted_at = None
        t = threading.Thread(target=go, daemon=True)
        t.start()
        return t

    def finish(self, jobs, started, timeout_s):
        objs = workload.wait_finished(self.api, self.ns, jobs, timeout_s)
        # A late duplicate would show up now: give the operator a few passes after the end.
        time.sleep(self.args.settle)
        objs = workload.list_jobs(self.api, self.ns)
        instances, by_name = self.watch.snapshot()
        counts, problems = workload.check(jobs, objs, instances, by_name)
        counts["duration_s"] = round(time.monotonic() - started, 1)
        counts["watch_relists"] = self.watch.relists
        self.summary.update(counts)
        return problems

    def report(self, problems, required):
        """Prints the table; returns whether every required count is right."""
        s = self.summary
        rows = [("suite", self.suite)] + self.extra_rows + [
            ("jobs", s["jobs"]),
            ("succeeded / failed (as expected per spec)",
             f"{s['succeeded']} / {s['failed']}"),
            ("pods created (UIDs seen)", s["pods_created"]),
            ("pods re-created by restart policy", s["recreated_ok"]),
            ("duplicate pods", s["duplicates"]),
            ("unexpected pods", s["unexpected_pods"]),
            ("pods never created (job ended first)", s["missing_pods"]),
            ("lost jobs", s["lost"]),
            ("unfinished jobs", s["unfinished"]),
            ("wrong end states", s["wrong_end_state"]),
            ("re-creations not verifiable (watch gap)", s["unverified_recreations"]),
            ("duration", f"{s['duration_s']} s"),
            ("load average at the end", " ".join(f"{x:.2f}" for x in os.getloadavg())),
        ]
        width = max(len(r[0]) for r in rows)
        print(f"\n| {'what'.ljust(width)} | value |")
        print(f"|{'-' * (width + 2)}|-------|")
        for k, v in rows:
            print(f"| {k.ljust(width)} | {v} |")
        print()
        ok = True
        for key, want in required.items():
            got = s.get(key)
            if got != want:
                ok = False
                print(f"FAIL: {key} = {got}, want {want}")
        for p in problems[:40]:
            print("  " + p)
        if len(problems) > 40:
            print(f"  ... {len(problems) - 40} more")
        print(json.dumps({"suite": self.suite, **s}, sort_keys=True))
        return ok


# missing_pods is reported, not required: under kwok a leader (Master, Launcher, Worker 0) exits
# on its own clock, so a job whose other pod's create was failed by the proxy can succeed before
# the retry creates it, exactly as its success rule says; a real launcher would wait for them.
ZERO = {"duplicates": 0, "unexpected_pods": 0, "lost": 0, "unfinished": 0, "wrong_end_state": 0}


def suite_kills(args):
    n, kills = env_int("COACH_CHAOS_JOBS", 200), env_int("COACH_CHAOS_KILLS", 20)
    run = Run(args, "kills")
    ok = False
    try:
        run.setup()
        jobs = workload.generate(n, args.seed)
        run.op.start()
        started = time.monotonic()
        rng = random.Random(args.seed)
        # Kills every 1.5..4.5 s (from the restarted operator's readiness); the jobs arrive in
        # waves over the first two thirds of that, so kills land on creation, running, restarts
        # and finishing alike.
        span = max(kills * 3.0, 30.0)
        submitter = run.submit_spread(jobs, over_s=span * 2 / 3, waves=max(1, min(10, n // 10)))
        down = []
        for i in range(kills):
            time.sleep(rng.uniform(1.5, 4.5))
            run.op.kill9()
            t0 = time.monotonic()
            time.sleep(rng.uniform(0, 1.0))  # down for a moment, as a crash-looping pod would be
            run.op.start()
            down.append(time.monotonic() - t0)
        log(f"{kills} kills done; restarts took {min(down, default=0):.2f}.."
            f"{max(down, default=0):.2f} s down-to-ready")
        submitter.join()
        run.extra_rows = [("operator SIGKILLs (each restarted)", kills)]
        problems = run.finish(jobs, started, args.timeout)
        run.summary["kills"] = kills
        ok = run.report(problems, ZERO)
        return ok
    finally:
        run.teardown(ok)


def suite_apiserver(args):
    n = env_int("COACH_CHAOS_JOBS", 200)
    restarts = env_int("COACH_CHAOS_APISERVER_RESTARTS", 2)
    run = Run(args, "apiserver")
    ok = False
    try:
        run.setup()
        jobs = workload.generate(n, args.seed + 1)
        run.op.start()
        started = time.monotonic()
        submitter = run.submit_spread(jobs, over_s=10.0 * restarts, waves=max(1, restarts * 4))
        revisions = []
        for i in range(restarts):
            time.sleep(8)
            t0 = time.monotonic()
            revisions.append(run.tenv.restart_apiserver(down_for=2, compact=True))
            log(f"kube-apiserver restart {i + 1}: etcd compacted to revision {revisions[-1]} "
                f"while down, ready again after {time.monotonic() - t0:.1f} s")
        submitter.join()
        # One compaction while the API server runs as well (what its own 5-minute compactor
        # does), then jobs keep finishing through it.
        revisions.append(cluster.etcd_compact(run.tenv.etcd_url()))
        problems = run.finish(jobs, started, args.timeout)
        relists = run.op.log_text().count("is gone; re-listing")
        alive = run.op.alive()
        run.summary.update({"apiserver_restarts": restarts, "operator_relists_410": relists,
                            "operator_alive": alive})
        run.extra_rows = [("kube-apiserver kill -9 + restart", restarts),
                          ("etcd compactions (revisions)", " ".join(map(str, revisions))),
                          ("operator re-lists after 410 Gone (its log)", relists),
                          ("operator survived", alive),
                          ("kube-scheduler / controller-manager restarted by testenv",
                           f"{run.tenv.component_restarts('kube-scheduler')} / "
                           f"{run.tenv.component_restarts('kube-controller-manager')}")]
        ok = run.report(problems, dict(ZERO, operator_alive=True))
        if relists == 0:
            print("FAIL: the operator never re-listed after 410 Gone: the fault did not bite")
            ok = False
        return ok
    finally:
        run.teardown(ok)


def suite_proxy(args):
    # Smaller than the others by default: every stalled call holds one of the operator's two
    # reconcile workers for its 30 s request timeout, so 200 jobs take about 15 min here (README).
    n = env_int("COACH_CHAOS_PROXY_JOBS", 30)
    rate = env_float("COACH_CHAOS_FAULT_RATE", 0.10)
    stall = env_float("COACH_CHAOS_STALL_SECONDS", 35)
    run = Run(args, "proxy")
    ok = False
    proxy = None
    try:
        port = cluster.free_port()
        kubeconfig = os.path.join(run.work, "proxy.kubeconfig")
        with open(kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "proxy",
                       "clusters": [{"name": "proxy",
                                     "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                       "users": [{"name": "proxy", "user": {}}],
                       "contexts": [{"name": "proxy",
                                     "context": {"cluster": "proxy", "user": "proxy"}}]}, f)
        run.setup(kubeconfig)
        e = run.tenv.env
        proxy_log = open(os.path.join(run.work, "proxy.log"), "ab")
        proxy = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "fault_proxy.py"), f"--listen-port={port}",
             f"--upstream={e['COACH_TESTENV_SERVER']}", f"--ca={e['COACH_TESTENV_CA']}",
             f"--cert={e['COACH_TESTENV_CLIENT_CERT']}", f"--key={e['COACH_TESTENV_CLIENT_KEY']}",
             f"--rate={rate}", f"--stall={stall}", f"--seed={args.seed}"],
            stdout=proxy_log, stderr=proxy_log)

        def control(path):
            for _ in range(50):
                try:
                    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST")
                    with urllib.request.urlopen(req, timeout=5) as r:
                        return json.loads(r.read())
                except OSError:
                    time.sleep(0.2)
            raise RuntimeError("the fault proxy does not answer")

        control("/__chaos/stats")
        jobs = workload.generate(n, args.seed + 2)
        run.op.start()
        before = run.op.metrics()
        # Faults from the operator's readiness on: a start-up that gives up on a faulty API
        # server is a crash loop for its Deployment to restart, not what this suite measures.
        control("/__chaos/faults?on=1")
        started = time.monotonic()
        submitter = run.submit_spread(jobs, over_s=40, waves=10)
        submitter.join()
        problems = run.finish(jobs, started, args.timeout)
        stats = control("/__chaos/faults?on=0")
        after = run.op.metrics()

        def delta(prefix):
            return {k[len(prefix):] or "total": int(v - before.get(k, 0))
                    for k, v in after.items() if k.startswith(prefix) and v != before.get(k, 0)}

        reconcile = delta("coach_reconcile_total")
        actions = delta("coach_backend_actions_total")
        faults = stats["faults"]
        total_faults = sum(faults.values())
        total_requests = sum(stats["requests"].values())
        run.summary.update({"fault_rate": rate, "requests": total_requests,
                            "faults": faults, "proxy_retries": stats["retries"],
                            "operator_alive": run.op.alive(),
                            "operator_reconcile": reconcile, "operator_actions": actions})
        run.extra_rows = [
            ("fault rate", rate),
            ("operator API requests (at the proxy)",
             f"{total_requests} {json.dumps(stats['requests'], sort_keys=True)}"),
            ("faults injected",
             f"{total_faults} ({100.0 * total_faults / max(1, total_requests):.1f}%)"),
        ] + [(f"  faults {k}", v) for k, v in faults.items()] + [
            ("  faults by kind and verb", json.dumps(stats["faults_by_verb"], sort_keys=True)),
            ("retries seen at the proxy (same call again after a fault)", stats["retries"]),
            ("operator reconcile passes by result (/metrics delta)",
             json.dumps(reconcile, sort_keys=True)),
            ("operator actions by type/result (/metrics delta)",
             json.dumps(actions, sort_keys=True)),
            ("operator survived", run.op.alive()),
        ]
        requeues = run.op.log_text().count("(retry in ")
        run.summary["operator_requeues_logged"] = requeues
        run.extra_rows.insert(-1, ("operator passes requeued after an error (its log)", requeues))
        ok = run.report(problems, dict(ZERO, operator_alive=True))
        if total_faults == 0 or stats["retries"] == 0:
            print("FAIL: no fault injected or no retry seen: the fault did not bite")
            ok = False
        return ok
    finally:
        if proxy is not None:
            proxy.kill()
            proxy.wait()
        run.teardown(ok)


SUITES = {"kills": suite_kills, "apiserver": suite_apiserver, "proxy": suite_proxy}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("suite", choices=list(SUITES) + ["all"])
    p.add_argument("--operator", required=True, help="the coach-operator binary")
    p.add_argument("--root", default=os.path.abspath(os.path.join(HERE, "../..")),
                   help="the workspace (tools/testenv, charts/coach/crds)")
    p.add_argument("--seed", type=int, default=env_int("COACH_CHAOS_SEED", 13))
    p.add_argument("--timeout", type=float, default=env_float("COACH_CHAOS_TIMEOUT", 300),
                   help="seconds to wait for every job to finish after the faults")
    p.add_argument("--settle", type=float, default=3.0)
    args = p.parse_args()
    names = list(SUITES) if args.suite == "all" else [args.suite]
    results = {}
    for name in names:
        t0 = time.monotonic()
        try:
            results[name] = SUITES[name](args)
        except Exception as e:  # a suite that cannot run is a failed suite
            log(f"{name}: {type(e).__name__}: {e}")
            results[name] = False
        log(f"suite {name}: {'PASS' if results[name] else 'FAIL'} in "
            f"{time.monotonic() - t0:.0f} s")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
