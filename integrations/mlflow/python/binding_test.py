"""Where each point lands, for each way training code uses MLflow, with the environment coach gives a
tracked job's replicas (mlflow_env.cc) and the binding (sitecustomize.py) on and off: one test per row of
docs/mlflow.md's table, against a real MLflow server and client of each release line installed
(tools/mlflow_env.sh; under CI=true both lines must be there).

Each test makes the job's run as the operator does, runs the code as rank 0 (the job's master) and rank
1 in their own processes, and asserts that every process exited 0 and where every point landed."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import urllib.parse
import urllib.request
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MLFLOW_ENV = os.path.join(HERE, "..", "testdata", "mlflow_env.sh")
IN_CI = os.environ.get("CI") == "true"

# The snippet most MLflow users write, verbatim but for the server's address.
SNIPPET = """
import mlflow
world_size = 3
loss = 0.25
mlflow.set_tracking_uri("{uri}")
mlflow.set_experiment("distributed-training")
with mlflow.start_run():
    mlflow.log_param("world_size", world_size)
    mlflow.log_metric("loss", loss)
"""


def _line_python(line):
    out = subprocess.run(["bash", MLFLOW_ENV, "python"], env=dict(os.environ, COACH_MLFLOW_LINE=line),
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


@pytest.fixture(scope="module", params=["2", "3"])
def server(request):
    line = request.param
    python = _line_python(line)
    if python is None:
        if IN_CI:
            pytest.fail("MLflow line %s is not installed (tools/mlflow_env.sh install)" % line)
        pytest.skip("MLflow line %s is not installed" % line)
    directory = tempfile.mkdtemp(prefix="mlflow-%s-" % line)
    env = dict(os.environ, COACH_MLFLOW_LINE=line, COACH_MLFLOW_WORKERS="1")
    uri = subprocess.run(["bash", MLFLOW_ENV, "start", directory], env=env, check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    yield {"uri": uri, "python": python, "line": line}
    subprocess.run(["bash", MLFLOW_ENV, "stop", directory], env=env)


def api(uri, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(uri + "/api/2.0/mlflow/" + path, data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read() or b"{}")


def experiment_id(uri, name):
    try:
        got = api(uri, "experiments/get-by-name?experiment_name=" + urllib.parse.quote(name))
        return got["experiment"]["experiment_id"]
    except urllib.error.HTTPError:
        return api(uri, "experiments/create", {"name": name})["experiment_id"]


def run_of(uri, run_id):
    run = api(uri, "runs/get?run_id=" + run_id)["run"]
    tags = {t["key"]: t["value"] for t in run["data"].get("tags", [])}
    metrics = {m["key"]: m["value"] for m in run["data"].get("metrics", [])}
    params = {p["key"]: p["value"] for p in run["data"].get("params", [])}
    return {"id": run_id, "experiment_id": run["info"]["experiment_id"], "tags": tags,
            "metrics": metrics, "params": params}


def runs_of_job(uri, experiment_ids, uid):
    runs = api(uri, "runs/search", {"experiment_ids": experiment_ids, "max_results": 100,
                                    "filter": "tags.`coach.job_uid` = '%s'" % uid})
    return [run_of(uri, r["info"]["run_id"]) for r in runs.get("runs", [])]


class Job:
    """A job's run made as the operator makes it, and the environment each replica gets."""

    def __init__(self, server, experiment="coach", container_env=None):
        self.uri = server["uri"]
        self.python = server["python"]
        self.uid = str(uuid.uuid4())
        self.name = "job-" + self.uid[:8]
        self.experiment_id = experiment_id(self.uri, experiment)
        self.experiment = experiment
        self.run_id = api(self.uri, "runs/create", {
            "experiment_id": self.experiment_id, "run_name": "default/" + self.name,
            "tags": [{"key": "coach.job_uid", "value": self.uid},
                     {"key": "mlflow.runName", "value": "default/" + self.name}]})["run"]["info"]["run_id"]
        self.container_env = container_env or {}

    def env(self, rank, binding=True):
        replica = "master-0" if rank == 0 else "worker-%d" % (rank - 1)
        context = {"coach.job_uid": self.uid, "coach.namespace": "default", "coach.job_name": self.name,
                   "coach.kind": "PyTorchJob", "coach.replica": replica,
                   "coach.replica_type": replica.split("-")[0].capitalize(),
                   "coach.replica_index": replica.split("-")[1], "mlflow.parentRunId": self.run_id}
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        env.update({"MLFLOW_TRACKING_URI": self.uri, "MLFLOW_RUN_CONTEXT": json.dumps(context),
                    "COACH_MLFLOW_RUN_ID": self.run_id, "COACH_MLFLOW_EXPERIMENT_ID": self.experiment_id,
                    "COACH_MLFLOW_TRACKING_URI": self.uri, "COACH_MLFLOW_REPLICA": replica,
                    "RANK": str(rank), "PYTHONPATH": HERE if binding else ""})
        if "MLFLOW_EXPERIMENT_NAME" not in self.container_env and \
                "MLFLOW_EXPERIMENT_ID" not in self.container_env:
            env["MLFLOW_EXPERIMENT_NAME"] = self.experiment
        if rank == 0:
            env["COACH_MLFLOW_RESUME"] = "1"
        env.update(self.container_env)
        return env

    def run(self, code, ranks=(0, 1), binding=True):
        """Runs `code` as each rank; every process must exit 0."""
        for rank in ranks:
            out = subprocess.run([self.python, "-c", textwrap.dedent(code)], env=self.env(rank, binding),
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, "rank %d failed:\n%s" % (rank, out.stderr[-3000:])

    def job_run(self):
        return run_of(self.uri, self.run_id)

    def own_runs(self, experiment_ids=None):
        """The runs the code made (tagged with the job), by rank (the replica's, as run here)."""
        found = runs_of_job(self.uri, experiment_ids or [self.experiment_id], self.uid)
        ranks = {"master-0": "0", "worker-0": "1", "worker-1": "2", "worker-2": "3"}
        return {ranks[r["tags"]["coach.replica"]]: r for r in found if r["id"] != self.run_id}

    def linked(self):
        return {k[len("coach.linked_run."):]: json.loads(v) for k, v in self.job_run()["tags"].items()
                if k.startswith("coach.linked_run.")}


def test_code_naming_no_experiment_logs_rank0_into_the_jobs_run(server):
    job = Job(server)
    job.run("""
        import mlflow, os
        with mlflow.start_run():
            mlflow.log_metric("loss", 1.0 + int(os.environ["RANK"]))
    """)
    assert job.job_run()["metrics"] == {"loss": 1.0}
    own = job.own_runs()
    assert list(own) == ["1"]
    assert own["1"]["metrics"] == {"loss": 2.0}
    assert own["1"]["tags"]["mlflow.parentRunId"] == job.run_id
    assert own["1"]["tags"]["coach.replica"] == "worker-0"
    assert own["1"]["tags"]["coach.rank"] == "1"  # the binding adds the process's RANK
    assert list(job.linked()) == [own["1"]["id"]]


def test_logging_without_start_run(server):
    job = Job(server)
    job.run("""
        import mlflow, os
        mlflow.log_metric("acc", 0.5 + int(os.environ["RANK"]))
        mlflow.log_param("rank", os.environ["RANK"])
    """)
    assert job.job_run()["metrics"] == {"acc": 0.5}
    assert job.job_run()["params"] == {"rank": "0"}
    assert job.own_runs()["1"]["metrics"] == {"acc": 1.5}


def test_the_snippet_verbatim(server):
    job = Job(server)
    job.run(SNIPPET.format(uri=job.uri))
    theirs = experiment_id(job.uri, "distributed-training")
    own = job.own_runs([theirs])
    assert sorted(own) == ["0", "1"]
    for rank, run in own.items():
        assert run["experiment_id"] == theirs
        assert run["metrics"] == {"loss": 0.25}
        assert run["params"] == {"world_size": "3"}
        assert run["tags"]["coach.job_name"] == job.name
    assert job.job_run()["metrics"] == {}
    assert sorted(job.linked()) == sorted(r["id"] for r in own.values())
    assert all(v["experiment_id"] == theirs for v in job.linked().values())


def test_ranks_racing_to_create_the_experiment_all_use_it(server):
    job = Job(server)
    name = "race-" + job.uid[:8]
    code = textwrap.dedent("""
        import mlflow
        mlflow.set_experiment("%s")
        with mlflow.start_run():
            mlflow.log_metric("loss", 1.0)
    """ % name)
    ranks = range(4)
    procs = [subprocess.Popen([job.python, "-c", code], env=job.env(rank), stderr=subprocess.PIPE,
                              text=True) for rank in ranks]
    for rank, proc in zip(ranks, procs):
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, "rank %d failed:\n%s" % (rank, err[-3000:])
    theirs = experiment_id(job.uri, name)
    found = runs_of_job(job.uri, [theirs], job.uid)
    assert sorted(r["tags"]["coach.rank"] for r in found) == ["0", "1", "2", "3"]


def test_the_snippet_without_the_binding(server):
    job = Job(server)
    job.run(SNIPPET.format(uri=job.uri), binding=False)
    own = job.own_runs([experiment_id(job.uri, "distributed-training")])
    assert sorted(own) == ["0", "1"]
    assert all(r["metrics"] == {"loss": 0.25} for r in own.values())
    assert all("coach.rank" not in r["tags"] for r in own.values())


def test_no_experiment_without_the_binding_makes_child_runs(server):
    job = Job(server)
    job.run("""
        import mlflow
        with mlflow.start_run():
            mlflow.log_metric("loss", 1.0)
    """, binding=False)
    own = job.own_runs()
    assert sorted(own) == ["0", "1"]
    assert all(r["tags"]["mlflow.parentRunId"] == job.run_id for r in own.values())
    assert job.job_run()["metrics"] == {}


def test_experiment_in_the_containers_env(server):
    # The operator makes the job's run in the experiment the container names.
    job = Job(server, experiment="team-exp", container_env={"MLFLOW_EXPERIMENT_NAME": "team-exp"})
    job.run("""
        import mlflow
        with mlflow.start_run():
            mlflow.log_metric("loss", 3.0)
    """)
    assert job.job_run()["metrics"] == {"loss": 3.0}
    assert job.own_runs()["1"]["experiment_id"] == job.experiment_id


def test_experiment_id_in_the_containers_env(server):
    theirs = experiment_id(server["uri"], "by-id-" + uuid.uuid4().hex[:6])
    job = Job(server, container_env={"MLFLOW_EXPERIMENT_ID": theirs})
    job.run("""
        import mlflow
        with mlflow.start_run():
            mlflow.log_metric("loss", 4.0)
    """)
    own = job.own_runs([theirs])
    assert sorted(own) == ["0", "1"]
    assert all(r["metrics"] == {"loss": 4.0} for r in own.values())


def test_start_run_with_another_experiment_id(server):
    job = Job(server)
    theirs = experiment_id(job.uri, "explicit-" + job.uid[:6])
    job.run("""
        import mlflow
        with mlflow.start_run(experiment_id="%s"):
            mlflow.log_metric("loss", 5.0)
    """ % theirs)
    own = job.own_runs([theirs])
    assert sorted(own) == ["0", "1"]
    assert job.job_run()["metrics"] == {}


def test_run_name_and_nested_runs(server):
    job = Job(server)
    job.run("""
        import mlflow
        with mlflow.start_run(run_name="named"):
            mlflow.log_metric("named", 1.0)
        with mlflow.start_run():
            mlflow.log_metric("outer", 1.0)
            with mlflow.start_run(nested=True):
                mlflow.log_metric("inner", 1.0)
    """, ranks=(0,))
    assert job.job_run()["metrics"] == {"outer": 1.0}
    runs = runs_of_job(job.uri, [job.experiment_id], job.uid)
    by_metric = {tuple(r["metrics"]): r for r in runs if r["id"] != job.run_id}
    assert by_metric[("named",)]["tags"]["mlflow.runName"] == "named"
    assert by_metric[("inner",)]["tags"]["mlflow.parentRunId"] == job.run_id
    assert len(job.linked()) == 2


def test_ranks_logging_different_params(server):
    job = Job(server)
    job.run("""
        import mlflow, os
        with mlflow.start_run():
            mlflow.log_param("rank", os.environ["RANK"])
    """, ranks=(0, 1, 2))
    assert job.job_run()["params"] == {"rank": "0"}
    assert {r: run["params"]["rank"] for r, run in job.own_runs().items()} == {"1": "1", "2": "2"}


def test_another_tracking_server(server, tmp_path):
    env = dict(os.environ, COACH_MLFLOW_LINE=server["line"], COACH_MLFLOW_WORKERS="1")
    other = subprocess.run(["bash", MLFLOW_ENV, "start", str(tmp_path)], env=env, check=True,
                           capture_output=True, text=True).stdout.strip().splitlines()[-1]
    try:
        job = Job(server)
        job.run("""
            import mlflow
            mlflow.set_tracking_uri("%s")
            with mlflow.start_run():
                mlflow.log_metric("loss", 6.0)
        """ % other)
        default = experiment_id(other, "coach")
        found = runs_of_job(other, [default], job.uid)
        assert sorted(r["tags"]["coach.replica"] for r in found) == ["master-0", "worker-0"]
        assert all(v["tracking_uri"] == other for v in job.linked().values())
        assert len(job.linked()) == 2
    finally:
        subprocess.run(["bash", MLFLOW_ENV, "stop", str(tmp_path)], env=env)


def test_deleted_job_run(server):
    job = Job(server)
    api(job.uri, "runs/delete", {"run_id": job.run_id})
    job.run("""
        import mlflow
        with mlflow.start_run():
            mlflow.log_metric("loss", 7.0)
    """, ranks=(0,))
    assert job.own_runs()["0"]["metrics"] == {"loss": 7.0}


def test_the_images_own_sitecustomize_still_runs(server, tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['IMAGE_HOOK'] = 'ran'\n")
    job = Job(server)
    env = job.env(0)
    env["PYTHONPATH"] = HERE + os.pathsep + str(tmp_path)
    out = subprocess.run([job.python, "-c", "import os; print(os.environ.get('IMAGE_HOOK'))"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ran", out.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
