"""Whole-job recovery on real pods, with the 3-rank gloo job of
examples/pytorch/pytorch-ddp-recovery-kube.yaml (coach.dev/restart-scope: Job, a checkpoint after
every epoch on a hostPath volume):

- rank 2's training process dies of a kill -9; the job restarts every replica once, resumes from
  the checkpoint and succeeds with one set of parameters on every rank;
- behind coach-launch (coach.dev/launcher: "true"), which reports rank 0's coach-metric steps to
  the operator, rank 1's training process is stopped (SIGSTOP): its peers wait in a collective,
  nothing reports progress, and the job restarts as a whole once the progress deadline passed.

The signals come from the host, not from inside the containers: a program that is the container's
PID 1 ignores SIGKILL sent from its own PID namespace. So the node's processes must be visible from
here (the testenv's real node is this host; kind's nodes are containers of this host): the test
finds the training process by RANK=<rank> in its environment and the job's own checkpoint directory
in its command line.

Printed, as figures: the cold start (apply -> the first coach-metric line of rank 0) and the
recovery (kill or stop -> the first coach-metric line of rank 0 in attempt 1), from the container
runtime's log timestamps (kubectl logs --timestamps); for the stop, the detection (stop -> the job's
status says attempt 1), measured here.
"""
import datetime
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import yaml

import kube

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = "examples/pytorch/pytorch-ddp-recovery-kube.yaml"
EPOCHS = 8
EPOCH_SECONDS = 2
KILL_AFTER_EPOCH = 2
# The host directory of the checkpoints: one per test (the namespace's name), removed afterwards.
CHECKPOINT_ROOT = "/var/lib/coach-ddp-recovery"
STOP_AFTER_EPOCH = 2
# Short, yet far above what the node needs between two reports: the stall clock starts when every
# replica runs, and rank 0's first coach-metric comes after torch is imported by three ranks on 2
# shared CPUs (about 10 s, see the cold start printed); then one every EPOCH_SECONDS.
PROGRESS_DEADLINE_SECONDS = 40
# The stop is seen as a restart by deadline + this (the operator's clock, one reconcile, the
# polling here, on a loaded node).
DETECTION_SLACK_SECONDS = 15


def recovery_job(name, checkpoint_dir):
    """The example, short, with its checkpoints in `checkpoint_dir`, mounted at the same path.

    The same path inside the containers puts the job's own directory into every rank's command
    line, which tells this job's processes from any other's on the host.
    """
    with open(os.path.join(ROOT, EXAMPLE)) as f:
        job = yaml.safe_load(f)
    job["metadata"] = {"name": name, "annotations": job["metadata"]["annotations"]}
    # The example's deadline fits a machine of its own; here the node shares 2 CPUs with the
    # control plane and three ranks importing torch at once.
    job["metadata"]["annotations"]["coach.dev/progress-deadline"] = "180s"
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        spec = replica["template"]["spec"]
        for volume in spec["volumes"]:
            volume["hostPath"]["path"] = checkpoint_dir
        for c in spec.get("initContainers", []) + spec["containers"]:
            c["image"] = kube.TRAINING_IMAGE
            c.setdefault("resources", {})["requests"] = {"cpu": "100m", "memory": "256Mi"}
            for mount in c["volumeMounts"]:
                mount["mountPath"] = checkpoint_dir
            if c["command"][0] == "chown":
                c["command"][-1] = checkpoint_dir
                continue
            command = c["command"]
            command[command.index("--epochs") + 1] = str(EPOCHS)
            command[command.index("--epoch-seconds") + 1] = str(EPOCH_SECONDS)
            command[command.index("--checkpoint-dir") + 1] = checkpoint_dir
    return job


def find_rank_process(rank, checkpoint_dir):
    """The pid of the training process of global rank `rank` of the job that checkpoints in
    `checkpoint_dir`, from /proc; None when there is none.

    The training process is python3 running ddp_train.py. Behind coach-launch its parent, the
    launcher, has the same program in its command line (after `--`) and RANK in its environment
    too: argv[0] tells them apart."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
            if not argv[0].endswith(b"python3") or \
                    not any(a.endswith(b"ddp_train.py") for a in argv) or \
                    checkpoint_dir.encode() not in argv:
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        if ("RANK=%d" % rank).encode() in environ:
            return int(entry)
    return None


def process_stat(pid):
    """(state, start time in clock ticks after boot) of a process, from /proc/<pid>/stat; None
    when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after "pid (comm)"
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[19])


def alive(process):
    """True while the process (pid, start time) exists and is no zombie (a pid reused later is
    another process)."""
    pid, started = process
    stat = process_stat(pid)
    return stat is not None and stat[1] == started and stat[0] != "Z"


def parse_timestamp(text):
    """An RFC 3339 time with up to nanoseconds (the CRI log's), as seconds since the epoch."""
    text = text.rstrip("Z")
    whole, _, fraction = text.partition(".")
    t = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() + (float("0." + fraction) if fraction else 0.0)


def timestamped_logs(pod, namespace):
    """(time, line) of a pod's log lines, from the container runtime's timestamps."""
    out = []
    text = kube.kubectl("logs", pod, "-n", namespace, "--timestamps", check=False).stdout
    for line in text.splitlines():
        stamp, _, rest = line.partition(" ")
        try:
            out.append((parse_timestamp(stamp), rest))
        except ValueError:
            continue
    return out


def first_metric(lines):
    for t, line in lines:
        if line.startswith("coach-metric "):
            return t
    return None


def container_started(pod, namespace):
    """When the pod's training container started (whole seconds), as seconds since the epoch."""
    status = kube.get_json("pod", pod, "-n", namespace)["status"]["containerStatuses"][0]["state"]
    for state in ("running", "terminated"):
        if "startedAt" in status.get(state, {}):
            return parse_timestamp(status[state]["startedAt"])
    return None


def coach_status(job):
    return job.get("status", {}).get("coach", {})


def assert_one_restart_resumed(done, pods, ns, context=""):
    """The job Succeeded after one counted whole-job restart, and every rank of `pods` ended
    attempt 1 resumed from a checkpoint with one set of parameters."""
    assert kube.condition(done, "Succeeded")["status"] == "True", (context, done["status"])
    coach = coach_status(done)
    assert coach.get("restarts", 0) == 1, (context, coach)
    assert coach.get("attempt", 0) == 1, (context, coach)
    assert coach.get("disruptions", 0) == 0, (context, coach)
    results = kube.results(pods, ns)
    assert set(results) == set(pods), (context, results)
    assert {r["rank"] for r in results.values()} == {"0", "1", "2"}, (context, results)
    for name, r in results.items():
        assert r["status"] == "ok", (context, name, r)
        assert r["attempt"] == "1", (context, name, r)
        assert int(r["resumed_from"]) >= 1, (context, name, r)
    assert len({r["params_checksum"] for r in results.values()}) == 1, (context, results)


def test_kill_nine_of_a_rank_restarts_the_whole_job_once_and_resumes(ns, capsys):
    checkpoint_dir = "%s/%s" % (CHECKPOINT_ROOT, ns)
    try:
        job = recovery_job("recover", checkpoint_dir)
        submitted = time.time()
        kube.apply(job, ns)

        # Attempt 0, until rank 0 saved the checkpoint of epoch KILL_AFTER_EPOCH.
        saved = "coach-checkpoint saved epoch=%d" % KILL_AFTER_EPOCH

        def saved_lines():
            lines = timestamped_logs("recover-master-0", ns)
            return lines if any(line.startswith(saved) for _, line in lines) else None

        first_run = kube.wait_for(saved_lines, 300, "rank 0 to log '%s'" % saved, interval=0.5)
        cold_metric = first_metric(first_run)
        assert cold_metric is not None, first_run
        cold_container = container_started("recover-master-0", ns)
        pid = kube.wait_for(lambda: find_rank_process(2, checkpoint_dir), 30,
                            "rank 2's training process on this host (the node must be this host)")
        killed = time.time()
        os.kill(pid, signal.SIGKILL)

        done = kube.wait_finished("PyTorchJob", "recover", ns, timeout=420)
        pods = kube.pods_of("recover", ns)
        assert set(pods) == {"recover-master-0", "recover-worker-0", "recover-worker-1"}
        for name, pod in pods.items():
            assert pod["metadata"]["labels"].get("coach.dev/attempt") == "1", (name, pod["metadata"])
        assert_one_restart_resumed(done, pods, ns)

        # The figures: the recovery against the cold start of the same job.
        second_run = timestamped_logs("recover-master-0", ns)
        recovered_metric = first_metric(second_run)
        assert recovered_metric is not None, second_run
        recovered_container = container_started("recover-master-0", ns)
        resumed = [line for _, line in second_run if line.startswith("coach-checkpoint resumed")]
        with capsys.disabled():  # in the suite's log without pytest -s
            print("\n[realpods] recovery: cold start (apply -> first coach-metric of rank 0) %.1f s "
                  "(rank 0's container started after %.0f s); kill -9 of rank 2 -> first "
                  "coach-metric of rank 0 in attempt 1 %.1f s (its container started after %.0f s); "
                  "%s" % (cold_metric - submitted, cold_container - submitted,
                          recovered_metric - killed, recovered_container - killed,
                          resumed[0] if resumed else "no resume line"))
    finally:
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
        try:
            os.rmdir(CHECKPOINT_ROOT)  # the kubelet made it for the hostPath; kept if not empty
        except OSError:
            pass


def launcher_stall_job(name, checkpoint_dir):
    """recovery_job behind coach-launch, with a deadline short enough to time a stall."""
    job = recovery_job(name, checkpoint_dir)
    annotations = job["metadata"]["annotations"]
    annotations["coach.dev/launcher"] = "true"
    annotations["coach.dev/progress-deadline"] = "%ds" % PROGRESS_DEADLINE_SECONDS
    return job


def since(timestamp, then):
    """"<then - timestamp> s" for an RFC 3339 time of the job's status; what it got otherwise."""
    try:
        return "%.1f s" % (then - parse_timestamp(timestamp))
    except (AttributeError, TypeError, ValueError):
        return "no time (%r)" % (timestamp,)


class ProgressWatcher(threading.Thread):
    """Reads the job's status.coach.progress.step once a second, as kubectl's jsonpath gives it,
    until stopped. The first time the job runs (Running, not finished) with a step above 0, keeps
    what `kubectl get pytorchjob` and `coach get` print for it, until both show that step's
    column above 0."""

    FIELDS = ('jsonpath={.status.coach.progress.step}{"|"}'
              '{.status.conditions[?(@.status=="True")].type}')

    def __init__(self, name, namespace, coach_get):
        super().__init__(daemon=True)
        self.name, self.namespace, self.coach_get = name, namespace, coach_get
        self.samples = []  # (time, step or None, True conditions)
        self.tables = None  # {"kubectl": text, "coach": text} once taken
        self.table_steps = None  # {"kubectl": cell, "coach": cell}
        self.errors = []
        self._stop_event = threading.Event()

    def stop(self):
        self._stop_event.set()
        if self.is_alive():
            self.join(10)

    def running_steps(self):
        """The steps above 0 read while the job ran."""
        return [step for _, step, types in self.samples
                if step and "Running" in types and not types & {"Succeeded", "Failed"}]

    def run(self):
        while not self._stop_event.wait(1.0):
            try:
                self._sample()
            except Exception as e:  # kept for the test to show; the watch goes on
                self.errors.append(repr(e))

    def _sample(self):
        r = kube.kubectl("get", "pytorchjob", self.name, "-n", self.namespace, "-o", self.FIELDS,
                         check=False)
        if r.returncode != 0:
            return
        step_text, _, types = r.stdout.partition("|")
        step = int(step_text) if step_text.strip() else None
        types = set(types.split())
        self.samples.append((time.time(), step, types))
        if not step or "Running" not in types or types & {"Succeeded", "Failed"}:
            return
        if self.table_steps and all(c and c.isdigit() and int(c) > 0
                                    for c in self.table_steps.values()):
            return
        tables = {"kubectl": kube.kubectl("get", "pytorchjob", self.name, "-n", self.namespace,
                                          check=False).stdout,
                  "coach": self.coach_get()}
        self.tables = tables
        self.table_steps = {"kubectl": kube.table_cell(tables["kubectl"], self.name, "STEP"),
                            "coach": kube.table_cell(tables["coach"], self.name, "STEP")}


REPORTS_LINE = re.compile(r"coach-launch: progress: (\d+) report\(s\) to the operator, (\d+) kept")


def launcher_reports(lines):
    """(reports, kept) from the line coach-launch ends with about its progress reports; None
    without one."""
    found = None
    for line in lines:
        m = REPORTS_LINE.match(line)
        if m:
            found = (int(m.group(1)), int(m.group(2)))
    return found


def test_stopped_rank_behind_coach_launch_stalls_and_the_whole_job_restarts(ns, capsys, tmp_path):
    """SIGSTOP of rank 1's training process: nothing reports progress any more; at the deadline
    the job restarts as a whole (counted), the stopped process goes with its pod, and attempt 1
    resumes from the checkpoint and succeeds."""
    checkpoint_dir = "%s/%s" % (CHECKPOINT_ROOT, ns)
    cli = kube.coach_cli()
    token = kube.reader_token(ns, str(tmp_path), "job-reader", "pytorchjobs.kubeflow.org")
    stopped = None
    watcher = None
    try:
        with kube.operator_api() as server:
            def coach_get():
                r = subprocess.run([cli, "--server", server, "--token-file", token, "get",
                                    "stall", "-n", ns], capture_output=True, text=True, timeout=60)
                return r.stdout + r.stderr

            job = launcher_stall_job("stall", checkpoint_dir)
            submitted = time.time()
            kube.apply(job, ns)
            watcher = ProgressWatcher("stall", ns, coach_get)
            watcher.start()

            # Attempt 0, until rank 0 saved the checkpoint of epoch STOP_AFTER_EPOCH.
            saved = "coach-checkpoint saved epoch=%d" % STOP_AFTER_EPOCH

            def saved_lines():
                lines = timestamped_logs("stall-master-0", ns)
                return lines if any(line.startswith(saved) for _, line in lines) else None

            first_run = kube.wait_for(saved_lines, 300, "rank 0 to log '%s'" % saved,
                                      interval=0.5)
            cold_metric = first_metric(first_run)
            assert cold_metric is not None, first_run
            pid = kube.wait_for(lambda: find_rank_process(1, checkpoint_dir), 30,
                                "rank 1's training process on this host (the node must be this "
                                "host)")
            stat = process_stat(pid)
            assert stat is not None, pid
            stopped = (pid, stat[1])
            stopped_at = time.time()
            os.kill(pid, signal.SIGSTOP)
            kube.wait_for(lambda: (process_stat(pid) or ("gone",))[0] == "T", 10,
                          "rank 1's training process stopped (state T)", interval=0.1)

            # The stall: attempt 1 in the job's status.
            def restarted():
                j = kube.get_json("pytorchjob", "stall", "-n", ns)
                return j if coach_status(j).get("attempt", 0) >= 1 else None

            restarting = kube.wait_for(restarted, PROGRESS_DEADLINE_SECONDS + 120,
                                       "status.coach.attempt 1", interval=0.5)
            detected = time.time()
            message = (kube.condition(restarting, "Restarting") or {}).get("message", "")
            last_report = coach_status(restarting).get("progress", {}).get("lastProgressTime")
            # The stopped process goes with its pod: a SIGKILL at the end of the grace period
            # reaches a stopped process too.
            kube.wait_for(lambda: not alive(stopped), 120,
                          "the stopped process to end with its pod", interval=0.5)
            stopped_gone = time.time()

            done = kube.wait_finished("PyTorchJob", "stall", ns, timeout=420)
            watcher.stop()

        with capsys.disabled():  # in the suite's log without pytest -s
            print("\n[realpods] stall behind coach-launch: SIGSTOP of rank 1 -> status.coach."
                  "attempt 1 after %.1f s (coach.dev/progress-deadline: %ds; the last progress "
                  "report -> that: %s); the stopped process ended %.1f s after that; "
                  "Restarting: %s"
                  % (detected - stopped_at, PROGRESS_DEADLINE_SECONDS,
                     since(last_report, detected), stopped_gone - detected, message))
            print("[realpods] progress steps read while the job ran (kubectl jsonpath, 1/s): %s; "
                  "rank 0's coach-launch in attempt 0 before the stop: %s"
                  % (sorted(set(watcher.running_steps())),
                     [line for _, line in first_run if line.startswith("coach-launch: progress")]
                     or "no line about its reports"))
            for what, table in sorted((watcher.tables or {}).items()):
                print("[realpods] %s get while training:\n%s" % (what, table.rstrip()))

        assert "it stalled: no replica reported progress for " in message, message
        assert "coach.dev/progress-deadline: %ds" % PROGRESS_DEADLINE_SECONDS in message, message
        assert coach_status(restarting).get("restarts", 0) == 1, restarting["status"]
        assert detected - stopped_at < PROGRESS_DEADLINE_SECONDS + DETECTION_SLACK_SECONDS, \
            (detected - stopped_at, message)

        # Progress reports reached the job's status on real pods, and both tables show the step.
        assert not watcher.errors, watcher.errors
        assert watcher.running_steps(), watcher.samples
        assert watcher.table_steps is not None, watcher.samples
        for what, cell in watcher.table_steps.items():
            assert cell and cell.isdigit() and int(cell) > 0, (what, watcher.tables)

        pods = kube.pods_of("stall", ns)
        assert set(pods) == {"stall-master-0", "stall-worker-0", "stall-worker-1"}
        for name, pod in pods.items():
            assert pod["metadata"]["labels"].get("coach.dev/attempt") == "1", (name, pod["metadata"])
            inits = [c["name"] for c in pod["spec"]["initContainers"]]
            assert "coach-launch-install" in inits, (name, inits)
        assert_one_restart_resumed(done, pods, ns)

        second_run = timestamped_logs("stall-master-0", ns)
        recovered_metric = first_metric(second_run)
        assert recovered_metric is not None, second_run
        # Rank 0's launcher reported (what the operator kept is printed: a replica that does not
        # lead answers UNAVAILABLE, and the Service sends a connection to either).
        reports = launcher_reports(line for _, line in second_run)
        assert reports is not None, [line for _, line in second_run]
        resumed = [line for _, line in second_run if line.startswith("coach-checkpoint resumed")]
        with capsys.disabled():
            print("[realpods] stall behind coach-launch: cold start (apply -> first coach-metric "
                  "of rank 0) %.1f s; SIGSTOP -> first coach-metric of rank 0 in attempt 1 %.1f s "
                  "(restart seen -> that metric %.1f s); rank 0's coach-launch in attempt 1: %d "
                  "report(s), %d kept; %s"
                  % (cold_metric - submitted, recovered_metric - stopped_at,
                     recovered_metric - detected, reports[0], reports[1],
                     resumed[0] if resumed else "no resume line"))
    finally:
        if watcher is not None:
            watcher.stop()
        if stopped is not None and alive(stopped):  # never leave a stopped process behind
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(stopped[0], sig)
                except ProcessLookupError:
                    pass
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
        try:
            os.rmdir(CHECKPOINT_ROOT)
        except OSError:
            pass


def first_metric_after_resume(lines):
    """The time of the first coach-metric line after rank 0's `coach-checkpoint resumed` line: the
    first step of the attempt that resumed (in place, one container's log holds both attempts)."""
    resumed = False
    for t, line in lines:
        if line.startswith("coach-checkpoint resumed"):
            resumed = True
        elif resumed and line.startswith("coach-metric "):
            return t
    return None


def kill_round_behind_coach_launch(name, ns, checkpoint_dir, restart_mode):
    """Runs recovery_job behind coach-launch with `coach.dev/restart-mode: <restart_mode>`, kills
    rank 2's training process once rank 0 saved epoch KILL_AFTER_EPOCH, and waits for the end.
    Returns the figures and what the assertions read."""
    job = recovery_job(name, checkpoint_dir)
    job["metadata"]["annotations"]["coach.dev/launcher"] = "true"
    job["metadata"]["annotations"]["coach.dev/restart-mode"] = restart_mode
    submitted = time.time()
    kube.apply(job, ns)
    saved = "coach-checkpoint saved epoch=%d" % KILL_AFTER_EPOCH
    master = "%s-master-0" % name

    def saved_lines():
        lines = timestamped_logs(master, ns)
        return lines if any(line.startswith(saved) for _, line in lines) else None

    first_run = kube.wait_for(saved_lines, 300, "rank 0 to log '%s'" % saved, interval=0.5)
    cold_metric = first_metric(first_run)
    assert cold_metric is not None, first_run
    uids = {n: p["metadata"]["uid"] for n, p in kube.pods_of(name, ns).items()}
    pid = kube.wait_for(lambda: find_rank_process(2, checkpoint_dir), 30,
                        "rank 2's training process on this host (the node must be this host)")
    killed = time.time()
    os.kill(pid, signal.SIGKILL)
    done = kube.wait_finished("PyTorchJob", name, ns, timeout=420)
    lines = timestamped_logs(master, ns)
    recovered = first_metric_after_resume(lines)
    assert recovered is not None, lines
    return {"done": done, "uids_before": uids, "pods": kube.pods_of(name, ns), "lines": lines,
            "cold": cold_metric - submitted, "recovery": recovered - killed}


def test_kill_nine_behind_coach_launch_restarts_in_place_and_against_recreating(ns, capsys):
    """The same job behind coach-launch, rank 2 killed at the same point: restarted by recreating
    its pods, then (coach.dev/restart-mode: InPlace) by restarting the ranks inside the pods it
    has. Both resume and succeed; in place, the pods are the ones that ran attempt 0. Printed: the
    recovery time of each, and their ratio."""
    figures = {}
    for mode in ("Recreate", "InPlace"):
        name = "kill-" + mode.lower()
        checkpoint_dir = "%s/%s-%s" % (CHECKPOINT_ROOT, ns, mode.lower())
        try:
            r = kill_round_behind_coach_launch(name, ns, checkpoint_dir, mode)
        finally:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)
        done = r["done"]
        coach = coach_status(done)
        pods = r["pods"]
        assert set(pods) == {name + "-master-0", name + "-worker-0", name + "-worker-1"}, pods
        uids_after = {n: p["metadata"]["uid"] for n, p in pods.items()}
        if mode == "InPlace":
            assert coach.get("inPlaceRestarts", 0) == 1, (coach, kube.condition(done, "Restarting"))
            # The very pods of attempt 0: nothing was rescheduled.
            assert uids_after == r["uids_before"], (uids_after, r["uids_before"])
            for n, pod in pods.items():
                assert pod["metadata"]["labels"].get("coach.dev/attempt") == "0", (n, pod["metadata"])
        else:
            assert coach.get("inPlaceRestarts", 0) == 0, coach
            assert not set(uids_after.values()) & set(r["uids_before"].values()), uids_after
        assert_one_restart_resumed(done, pods, ns, mode)
        figures[mode] = r
    try:
        os.rmdir(CHECKPOINT_ROOT)
    except OSError:
        pass
    with capsys.disabled():  # in the suite's log without pytest -s
        print("\n[realpods] kill -9 of rank 2 behind coach-launch -> first coach-metric of rank 0 "
              "after the resume: recreating the pods %.1f s (cold start %.1f s), in place %.1f s "
              "(cold start %.1f s): in place / recreate x%.2f"
              % (figures["Recreate"]["recovery"], figures["Recreate"]["cold"],
                 figures["InPlace"]["recovery"], figures["InPlace"]["cold"],
                 figures["InPlace"]["recovery"] / figures["Recreate"]["recovery"]))
