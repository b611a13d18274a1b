"""coach's MLflow binding, loaded at Python start-up in the replicas of a tracked job.

coach gives each replica MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME and MLFLOW_RUN_CONTEXT (the
job's identity as tags, the job's run as parent): variables MLflow's own client reads and none of
which can make it raise. What no variable can say safely is "the job's first rank logs into the
job's run": MLflow resumes MLFLOW_RUN_ID whatever the code does next, and raises when the code
names another experiment (set_experiment) or server (set_tracking_uri). So coach never sets
MLFLOW_RUN_ID; this module does the one thing it was for, only where it is safe:

  In the replica coach names (COACH_MLFLOW_RESUME=1: the job's master) and there in the process
  of RANK 0 (or no RANK), the first top-level
  mlflow.start_run() that names no run, no run name, no parent, no other experiment and no other
  server resumes the job's run. Every other call is MLflow's own, unchanged.

Each run the process makes of its own is recorded on the job's run (tag coach.linked_run.<id>), in
the background and bounded in time, so the operator can list it.

It also mends one race of MLflow's own (2.x and 3.x) that every multi-rank job meets: ranks calling
set_experiment("X") together race to create X, and the one whose create fails with
RESOURCE_ALREADY_EXISTS returns X without making it active, so its runs go elsewhere.

Nothing here may fail the program: each step is guarded, and on any error the call goes to MLflow
as if this module were not there. It imports nothing from MLflow until the program does.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_FLUENT = "mlflow.tracking.fluent"
_LINK_TIMEOUT_S = 5.0
_MAX_LINKS = 64


def _chain_next_sitecustomize():
    """Runs the sitecustomize this one shadows (the image's own), if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        try:
            if os.path.abspath(entry or os.getcwd()) == here:
                continue
            spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return
        except Exception:  # the image's own hook failing is not ours to report
            return


def _strip_userinfo(uri):
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    authority, slash, path = rest.partition("/")
    return scheme + "://" + authority.rpartition("@")[2] + slash + path


def _same_server(a, b):
    return _strip_userinfo(a or "").rstrip("/") == _strip_userinfo(b or "").rstrip("/")


class _Binding:
    def __init__(self, fluent):
        self.fluent = fluent
        self.run_id = os.environ.get("COACH_MLFLOW_RUN_ID", "")
        self.experiment_id = os.environ.get("COACH_MLFLOW_EXPERIMENT_ID", "")
        self.server = os.environ.get("COACH_MLFLOW_TRACKING_URI", "")
        self.rank = os.environ.get("RANK", "")
        self.resume = os.environ.get("COACH_MLFLOW_RESUME") == "1"
        self.offered = False
        self.links = []

    def job_run_for(self, arguments):
        """The job's run id when this start_run call may resume it, else None."""
        if self.offered or not (self.resume and self.run_id and self.experiment_id and self.server):
            return None
        if self.rank not in ("", "0") or os.environ.get("MLFLOW_RUN_ID"):
            return None
        for name in ("run_id", "run_name", "parent_run_id", "nested"):
            if arguments.get(name):
                return None
        if self.fluent.active_run() is not None:
            return None
        import mlflow

        if not _same_server(mlflow.get_tracking_uri(), self.server):
            return None
        experiment = arguments.get("experiment_id") or self.fluent._get_experiment_id()
        if str(experiment) != self.experiment_id:
            return None
        self.offered = True
        return self.run_id

    def link(self, active):
        """Records a run the code made of its own on the job's run, in the background."""
        try:
            run_id = active.info.run_id
            if not self.run_id or run_id == self.run_id or len(self.links) >= _MAX_LINKS:
                return
            import json
            import threading

            import mlflow

            value = {"experiment_id": active.info.experiment_id}
            if os.environ.get("COACH_MLFLOW_REPLICA"):
                value["replica"] = os.environ["COACH_MLFLOW_REPLICA"]
            if self.rank:
                value["rank"] = self.rank
            uri = mlflow.get_tracking_uri()
            if not _same_server(uri, self.server):
                value["tracking_uri"] = _strip_userinfo(uri)
            body = {"run_id": self.run_id, "key": "coach.linked_run." + run_id,
                    "value": json.dumps(value, sort_keys=True)}
            thread = threading.Thread(target=_set_tag, args=(self.server, body), daemon=True)
            thread.start()
            self.links.append(thread)
        except Exception:
            pass

    def finish(self):
        """At exit: waits for the links in flight, at most _LINK_TIMEOUT_S in all."""
        import time

        deadline = time.monotonic() + _LINK_TIMEOUT_S
        for thread in self.links:
            thread.join(max(0.0, deadline - time.monotonic()))


def _set_tag(server, body):
    """One POST runs/set-tag with the credentials MLflow's client would use; errors ignored."""
    try:
        import base64
        import json
        import ssl
        import urllib.request

        headers = {"Content-Type": "application/json"}
        user = os.environ.get("MLFLOW_TRACKING_USERNAME")
        password = os.environ.get("MLFLOW_TRACKING_PASSWORD")
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        if user and password:
            basic = base64.b64encode((user + ":" + password).encode()).decode()
            headers["Authorization"] = "Basic " + basic
        elif token:
            headers["Authorization"] = "Bearer " + token
        context = None
        if server.startswith("https://"):
            if os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() == "true":
                context = ssl._create_unverified_context()
            else:
                context = ssl.create_default_context(
                    cafile=os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH") or None)
        request = urllib.request.Request(
            server.rstrip("/") + "/api/2.0/mlflow/runs/set-tag",
            data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=_LINK_TIMEOUT_S, context=context) as reply:
            reply.read()
    except Exception:
        pass


def _bind(fluent):
    import atexit
    import functools
    import inspect

    original = fluent.start_run
    signature = inspect.signature(original)
    binding = _Binding(fluent)
    atexit.register(binding.finish)

    @functools.wraps(original)
    def start_run(*args, **kwargs):
        job_run = None
        try:
            arguments = signature.bind_partial(*args, **kwargs).arguments
            job_run = binding.job_run_for(arguments)
        except Exception:
            job_run = None
        if job_run is not None:
            try:
                resumed = dict(arguments)
                resumed["run_id"] = job_run
                resumed.pop("experiment_id", None)
                return original(**resumed)
            except Exception:
                pass  # the job's run is gone or unreachable: the code gets a run of its own
        active = original(*args, **kwargs)
        binding.link(active)
        return active

    fluent.start_run = start_run

    set_experiment = fluent.set_experiment

    @functools.wraps(set_experiment)
    def set_experiment_active(*args, **kwargs):
        experiment = set_experiment(*args, **kwargs)
        try:
            if (experiment is not None and experiment.lifecycle_stage == "active"
                    and fluent._active_experiment_id != experiment.experiment_id):
                fluent._active_experiment_id = experiment.experiment_id
                os.environ["MLFLOW_EXPERIMENT_ID"] = experiment.experiment_id
        except Exception:
            pass
        return experiment

    fluent.set_experiment = set_experiment_active


class _FluentFinder(importlib.abc.MetaPathFinder):
    """Binds mlflow.tracking.fluent right after it is first imported, before mlflow's
    __init__ copies start_run from it."""

    def find_spec(self, name, path, target=None):
        if name != _FLUENT:
            return None
        try:
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            loader_exec = spec.loader.exec_module

            def exec_module(module):
                loader_exec(module)
                try:
                    _bind(module)
                except Exception:
                    pass

            spec.loader.exec_module = exec_module
            return spec
        except Exception:
            return None


def _tag_rank():
    """Adds this process's RANK to the tags MLflow gives the runs it creates (the operator's
    context names the replica; a replica may run several ranks)."""
    try:
        import json

        rank = os.environ.get("RANK")
        context = json.loads(os.environ.get("MLFLOW_RUN_CONTEXT", ""))
        if rank and isinstance(context, dict) and "coach.rank" not in context:
            context["coach.rank"] = rank
            os.environ["MLFLOW_RUN_CONTEXT"] = json.dumps(context, sort_keys=True)
    except Exception:
        pass


# Once per process, however many copies of this file are on the path.
if os.environ.get("COACH_MLFLOW_RUN_ID") and not getattr(sys, "_coach_mlflow_binding", False):
    sys._coach_mlflow_binding = True
    _tag_rank()
    if _FLUENT not in sys.modules:
        sys.meta_path.insert(0, _FluentFinder())
_chain_next_sitecustomize()
