"""Job history on real pods (docs/history.md): every attempt's timeline, each attempt's replica logs
kept before a whole-job restart deletes its pods (in the operator's S3 history store, and in the
job's MLflow run when it is tracked), and a job deleted by its TTL still listed with its logs.

The store is the suite's SeaweedFS (tools/suites/realpods.sh: its S3 gateway on the bridge address,
the chart's history.s3 values); COACH_E2E_HISTORY_S3=1 says the operator has one."""
import json
import os
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import pytest

import kube

# Attempts 0 and 1: rank 1 (the Worker) dies of a SIGKILL while the Master waits to be taken by
# the restart. Attempt 2: the ranks meet over TCP (the Master at MASTER_ADDR:MASTER_PORT), so
# that the Master, whose success is the job's, ends only after the Worker printed its lines.
# The inner shell is killed, not PID 1 (which ignores signals sent from inside its container);
# PID 1 exits with its status (137), and on SIGTERM (a restart deleting the pod) at once.
# Kubernetes expands $(VAR) and turns $$ into $ in a container's command: the shell gets $$ from
# $$$$.
OUTER = 'trap "exit 143" TERM; /bin/sh -c "$0" & wait $!; exit $?'
SCRIPT = """
echo "hello from $RANK attempt $COACH_ATTEMPT"
if [ "$COACH_ATTEMPT" -lt 2 ]; then
  [ "$RANK" = 0 ] && exec sleep 300
  kill -9 $$$$
fi
exec /usr/bin/python3 -c "$MEET"
"""
MEET = """
import os, socket, time
port = int(os.environ["MASTER_PORT"])
if os.environ["RANK"] == "0":
    server = socket.create_server(("", port))
    server.settimeout(120)
    peer, _ = server.accept()
    print("master heard: %s" % peer.recv(100).decode(), flush=True)
    peer.sendall(b"ok")
else:
    deadline = time.monotonic() + 120
    while True:
        try:
            peer = socket.create_connection((os.environ["MASTER_ADDR"], port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    peer.sendall(b"worker 1 met the master")
    peer.recv(100)
print("bye from %s" % os.environ["RANK"], flush=True)
"""


def needs_store():
    if os.environ.get("COACH_E2E_HISTORY_S3") != "1":
        pytest.skip("the operator has no history store (COACH_E2E_HISTORY_S3=1 says it has)")


def replica(command, env=None):
    container = {"name": "pytorch", "image": kube.TRAINING_IMAGE, "command": command,
                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {"replicas": 1, "restartPolicy": "ExitCode",
            "template": {"spec": {"terminationGracePeriodSeconds": 2, "containers": [container]}}}


def twice_killed_job(name, annotations=None):
    """Master + 1 Worker restarted as a whole twice (the Worker killed), Succeeding on attempt 2."""
    command = ["/bin/sh", "-c", OUTER, SCRIPT]
    meta = {"coach.dev/restart-scope": "Job", "coach.dev/max-restarts": "3"}
    meta.update(annotations or {})
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "annotations": meta},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     "pytorchReplicaSpecs": {"Master": replica(command, {"MEET": MEET}),
                                             "Worker": replica(command, {"MEET": MEET})}}}


def succeeded(job):
    c = kube.condition(job, "Succeeded")
    return c is not None and c.get("status") == "True"


def history_reader(ns, directory):
    """A token of a ServiceAccount that may read the namespace's PyTorchJobs (get, list), their
    pods' logs and events: what coach logs, describe and history (--deleted) ask of the caller."""
    name = "history-reader"
    kube.kubectl("create", "serviceaccount", name, "-n", ns)
    kube.kubectl("create", "role", name, "-n", ns, "--verb=get,list",
                 "--resource=pytorchjobs.kubeflow.org,pods/log,events")
    kube.kubectl("create", "rolebinding", name, "-n", ns, "--role=" + name,
                 "--serviceaccount=%s:%s" % (ns, name))
    path = os.path.join(directory, name + ".token")
    with open(path, "w") as f:
        f.write(kube.kubectl("create", "token", name, "-n", ns).stdout.strip())
    return path


def coach(server, token, *args):
    """Runs the coach CLI against the port-forwarded API: (exit code, stdout, stderr)."""
    r = subprocess.run([kube.coach_cli(), "--server", server, "--token-file", token, *args],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def kept_log(server, token, ns, job, replica_name, attempt, want):
    """`coach logs JOB --replica R --attempt N` once its stdout holds `want` (the store is written
    off the reconcile path); returns (stdout, stderr)."""
    def read():
        rc, out, err = coach(server, token, "logs", job, "-n", ns, "--replica", replica_name,
                             "--attempt", str(attempt))
        return rc == 0 and want in out and (out, err)
    return kube.wait_for(read, 60, "%s's kept log of attempt %d saying %r" % (replica_name, attempt, want), 2)


def check_timeline(attempts):
    """Three attempts: worker-0 killed twice (counted), then Succeeded."""
    assert [a.get("attempt", 0) for a in attempts] == [0, 1, 2], attempts
    for a in attempts[:2]:
        assert a.get("reason") == "Failed", attempts
        assert a.get("replica") == "worker-0", attempts
        assert a.get("exitCode") == 137, attempts
        assert a.get("signal") == "SIGKILL", attempts
        assert a.get("endTime"), attempts
    assert attempts[2].get("reason") == "Succeeded", attempts


def attempts_table(describe):
    """The "Attempts:" block of `coach describe`, unindented."""
    lines, inside = [], False
    for line in describe.splitlines():
        if line == "Attempts:":
            inside = True
        elif inside and line.startswith("  "):
            lines.append(line[2:])
        elif inside:
            break
    return "\n".join(lines)


def run_twice_killed(ns, name, annotations=None):
    kube.apply(twice_killed_job(name, annotations), ns)
    done = kube.wait_finished("PyTorchJob", name, ns, timeout=300)
    assert succeeded(done), done["status"]
    coach_status = done["status"].get("coach", {})
    assert coach_status.get("attempt") == 2, coach_status
    return done


def test_every_attempts_logs_and_timeline_outlive_its_pods(ns, tmp_path):
    """A whole-job restart deletes the attempt's pods: their logs stay readable, and describe and
    history say why each attempt ended."""
    needs_store()
    token = history_reader(ns, str(tmp_path))
    run_twice_killed(ns, "flaky")
    # Only attempt 2's pods are left (cleanPodPolicy None keeps them).
    pods = kube.pods_of("flaky", ns)
    assert sorted(pods) == ["flaky-master-0", "flaky-worker-0"], sorted(pods)
    for pod in pods.values():
        assert pod["metadata"]["labels"].get("coach.dev/attempt") == "2", pod["metadata"]
    with kube.operator_api() as server:
        for attempt in (0, 1):
            for replica_name, rank in (("worker-0", 1), ("master-0", 0)):
                want = "hello from %d attempt %d" % (rank, attempt)
                out, err = kept_log(server, token, ns, "flaky", replica_name, attempt, want)
                # That attempt's lines alone (its stderr's "Killed" may come before them).
                assert [l for l in out.splitlines() if l.startswith("hello")] == [want], out
                assert "# %s, attempt %d: kept log (store)" % (replica_name, attempt) in err, err
        rc, out, err = coach(server, token, "history", "flaky", "-n", ns, "-o", "json")
        assert rc == 0, err
        history = json.loads(out)
        assert history["name"] == "flaky" and history["namespace"] == ns, history
        check_timeline(history["attempts"])
        rc, out, err = coach(server, token, "describe", "flaky", "-n", ns)
        assert rc == 0, err
    table = attempts_table(out)
    assert table, out
    for row in ("0", "1"):
        assert kube.table_cell(table, row, "REASON") == "Failed", table
        assert kube.table_cell(table, row, "REPLICA") == "worker-0", table
        assert kube.table_cell(table, row, "EXIT") == "137 SIGKILL", table
    assert kube.table_cell(table, "2", "REASON") == "Succeeded", table


def mlflow_api(uri, path):
    with urllib.request.urlopen(uri.rstrip("/") + path, timeout=30) as r:
        return r.read()


def run_artifact(uri, run_id, path):
    """An artifact's bytes through the server's artifact proxy (the run's mlflow-artifacts: root),
    None when it is not there."""
    run = json.loads(mlflow_api(uri, "/api/2.0/mlflow/runs/get?run_id=" + run_id))["run"]
    root = run["info"]["artifact_uri"]
    assert root.startswith("mlflow-artifacts:"), root
    root = root[len("mlflow-artifacts:"):]
    if root.startswith("//"):
        root = root[2:].partition("/")[2]
    try:
        return mlflow_api(uri, "/api/2.0/mlflow-artifacts/artifacts/%s/%s" % (
            urllib.parse.quote(root.strip("/")), urllib.parse.quote(path))).decode()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def test_a_tracked_jobs_attempts_keep_their_logs_in_its_mlflow_run(ns):
    uri = os.environ.get("COACH_E2E_MLFLOW_URI", "")
    assert uri, "COACH_E2E_MLFLOW_URI must name an MLflow server the pods reach"
    done = run_twice_killed(ns, "tracked", {"coach.dev/mlflow-tracking-uri": uri,
                                            "coach.dev/mlflow-experiment": "realpods-history-" + ns})
    run_id = done["metadata"]["annotations"]["coach.dev/mlflow-run-id"]
    want = {"logs/attempt-%d/%s.log" % (attempt, r): "hello from %d attempt %d" % (rank, attempt)
            for attempt in (0, 1, 2) for r, rank in (("master-0", 0), ("worker-0", 1))}
    got = {}

    def kept():
        for path in want:
            if path not in got:
                text = run_artifact(uri, run_id, path)
                if text is not None:
                    got[path] = text
        return len(got) == len(want)
    kube.wait_for(kept, 60, "the run's logs/attempt-*/ artifacts (%s)" % sorted(want), 2)
    for path, line in want.items():
        assert [l for l in got[path].splitlines() if l.startswith("hello")] == [line], (path, got[path])
    # Attempt 2 ran to its end: the ranks met.
    assert "bye from 1" in got["logs/attempt-2/worker-0.log"], got["logs/attempt-2/worker-0.log"]
    assert "master heard: worker 1 met the master" in got["logs/attempt-2/master-0.log"], \
        got["logs/attempt-2/master-0.log"]


def test_a_job_deleted_by_its_ttl_keeps_its_history_and_logs(ns, tmp_path):
    needs_store()
    token = history_reader(ns, str(tmp_path))
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "brief"},
           "spec": {"runPolicy": {"ttlSecondsAfterFinished": 5},
                    "pytorchReplicaSpecs": {"Master": replica(
                        ["/bin/sh", "-c", 'echo "hello from $RANK, kept after the job"'])}}}
    kube.apply(job, ns)
    uid = kube.get_json("pytorchjob", "brief", "-n", ns)["metadata"]["uid"]

    def gone():
        r = kube.kubectl("get", "pytorchjob", "brief", "-n", ns, check=False)
        return r.returncode != 0 and "NotFound" in r.stderr
    kube.wait_for(gone, 180, "the job deleted by its TTL", 2)
    with kube.operator_api() as server:
        def listed():
            rc, out, _ = coach(server, token, "history", "--deleted", "brief", "-n", ns, "-o", "json")
            return rc == 0 and json.loads(out)
        records = kube.wait_for(listed, 60, "coach history --deleted listing the job", 2)
        assert len(records) == 1, records
        record = records[0]
        assert record["uid"] == uid and record["name"] == "brief" and record["namespace"] == ns, record
        assert record["deletedBy"] == "ttl", record
        assert record["result"] == "Succeeded", record
        attempts = record["attempts"]
        assert len(attempts) == 1 and attempts[0].get("attempt", 0) == 0, attempts
        assert attempts[0].get("reason") == "Succeeded", attempts
        rc, out, err = coach(server, token, "logs", "brief", "-n", ns, "--uid", uid)
        assert rc == 0, err
        assert "hello from 0, kept after the job" in out, (out, err)
        assert "# master-0, attempt 0: kept log (store)" in err, err
