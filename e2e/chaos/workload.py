"""The chaos suites' jobs: a mix of kinds and end states, each job's expected end state computed
from its own spec (never from a control run), and the checks of a finished run.

Every replica of a job carries the same coach.test/* annotations (tools/testenv's kwok stages), so
the end state does not depend on which pod exits first:

| scenario          | restartPolicy  | pods do                               | expected end state  |
|-------------------|----------------|---------------------------------------|---------------------|
| succeed           | Never/ExitCode | exit 0 after 2..10 s                  | Succeeded           |
| fail-never        | Never          | exit 2                                | Failed (a replica)  |
| fail-exitcode     | ExitCode       | exit 1 (permanent)                    | Failed (a replica)  |
| recover           | OnFailure      | exit 1, exit 0 once restartCount >= 2 | Succeeded           |
| backoff           | OnFailure      | exit 1 every second, backoffLimit 2   | Failed (backoff)    |
| recreate-deadline | ExitCode       | exit 137 every 3 s (each re-created), | Failed (deadline)   |
|                   |                | activeDeadlineSeconds 20              |                     |
"""

import random
import time

from cluster import log

# kind -> (plural, replica specs key, container name, leader replica type or None)
KINDS = {
    "PyTorchJob": ("pytorchjobs", "pytorchReplicaSpecs", "pytorch", "Master"),
    "TFJob": ("tfjobs", "tfReplicaSpecs", "tensorflow", None),
    "XGBoostJob": ("xgboostjobs", "xgbReplicaSpecs", "xgboost", "Master"),
    "JAXJob": ("jaxjobs", "jaxReplicaSpecs", "jax", None),
    "PaddleJob": ("paddlejobs", "paddleReplicaSpecs", "paddle", None),
    "MPIJob": ("mpijobs", "mpiReplicaSpecs", "mpi", "Launcher"),
}
ALL_KINDS = list(KINDS)
NO_MPI = [k for k in KINDS if k != "MPIJob"]

# name -> (weight, kinds, expected condition, failure class)
SCENARIOS = {
    "succeed": (45, ALL_KINDS, "Succeeded", None),
    "fail-never": (10, ALL_KINDS, "Failed", "replica"),
    "fail-exitcode": (10, ALL_KINDS, "Failed", "replica"),
    "recover": (15, NO_MPI, "Succeeded", None),
    "backoff": (10, NO_MPI, "Failed", "backoff"),
    "recreate-deadline": (10, NO_MPI, "Failed", "deadline"),
}


class JobPlan:
    def __init__(self, name, kind, scenario, replicas, policy, annotations, run_policy):
        self.name, self.kind, self.scenario = name, kind, scenario
        self.replicas = replicas  # [(type, count)]
        self.policy = policy
        self.annotations = annotations
        self.run_policy = run_policy
        _, _, self.expected, self.failure_class = SCENARIOS[scenario]

    @property
    def plural(self):
        return KINDS[self.kind][0]

    def pod_names(self):
        names = []
        for rtype, count in self.replicas:
            if self.kind == "MPIJob" and rtype == "Launcher":
                names.append(f"{self.name}-launcher")  # upstream v1 names it without an index
            else:
                names += [f"{self.name}-{rtype.lower()}-{i}" for i in range(count)]
        return names

    def recreates(self, inst):
        """Whether the operator may create this pod again after the instance `inst` (the state
        it was last seen in): a Failed pod whose restart policy recreates it (restart_rule.h)."""
        if inst.phase != "Failed":
            return False
        if self.policy in ("OnFailure", "Always"):
            return True
        return self.policy == "ExitCode" and (inst.exit_code or 0) >= 128

    def manifest(self):
        plural, key, container, leader = KINDS[self.kind]
        specs = {}
        for rtype, count in self.replicas:
            specs[rtype] = {
                "replicas": count,
                "restartPolicy": self.policy,
                "template": {
                    "metadata": {"annotations": dict(self.annotations)},
                    "spec": {"containers": [{"name": container, "image": "coach.local/none"}]},
                },
            }
        spec = {key: specs}
        if self.run_policy:
            spec["runPolicy"] = dict(self.run_policy)
        if self.kind == "MPIJob":
            spec["slotsPerWorker"] = 1
        return {"apiVersion": "kubeflow.org/v1", "kind": self.kind,
                "metadata": {"name": self.name, "labels": {"coach.test/scenario": self.scenario}},
                "spec": spec}


def generate(n, seed):
    """n jobs, reproducible from seed; kinds and scenarios drawn by weight."""
    rng = random.Random(seed)
    names, weights = zip(*[(s, w) for s, (w, _, _, _) in SCENARIOS.items()])
    jobs = []
    for i in range(n):
        scenario = rng.choices(names, weights)[0]
        kind = rng.choice(SCENARIOS[scenario][1])
        leader = KINDS[kind][3]
        workers = rng.randint(1, 2)
        replicas = ([(leader, 1)] if leader else []) + [("Worker", workers)]
        run_policy = {}
        if scenario == "succeed":
            policy = rng.choice(["Never", "ExitCode"])
            ann = {"coach.test/exit-code": "0", "coach.test/run-seconds": str(rng.randint(2, 10))}
        elif scenario == "fail-never":
            policy = "Never"
            ann = {"coach.test/exit-code": "2", "coach.test/run-seconds": str(rng.randint(2, 6))}
        elif scenario == "fail-exitcode":
            policy = "ExitCode"
            ann = {"coach.test/exit-code": "1", "coach.test/run-seconds": str(rng.randint(2, 6))}
        elif scenario == "recover":
            policy = "OnFailure"
            ann = {"coach.test/exit-code": "1", "coach.test/run-seconds": "2",
                   "coach.test/succeed-after-restarts": "2"}
        elif scenario == "backoff":
            policy = "OnFailure"
            ann = {"coach.test/exit-code": "1", "coach.test/run-seconds": "1"}
            run_policy["backoffLimit"] = 2
        else:  # recreate-deadline
            policy = "ExitCode"
            ann = {"coach.test/exit-code": "137", "coach.test/run-seconds": "3"}
            run_policy["activeDeadlineSeconds"] = 20
        jobs.append(JobPlan(f"c{i:04d}-{scenario.split('-')[0]}", kind, scenario, replicas,
                            policy, ann, run_policy))
    return jobs


def submit(api, ns, jobs):
    for j in jobs:
        api.must("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/{j.plural}", j.manifest())


def terminal(obj):
    """'Succeeded', 'Failed' or None, with the Failed condition's message."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in ("Succeeded", "Failed"):
            return c["type"], c.get("message", "")
    return None, ""


def list_jobs(api, ns):
    """{(plural, name): object} of every kind."""
    out = {}
    for plural in sorted({k[0] for k in KINDS.values()}):
        body = api.must("GET", f"/apis/kubeflow.org/v1/namespaces/{ns}/{plural}", deadline_s=300)
        for item in body.get("items", []):
            out[(plural, item["metadata"]["name"])] = item
    return out


def wait_finished(api, ns, jobs, timeout_s):
    """Polls until every job has a terminal condition or timeout_s passes; the last listing."""
    end = time.monotonic() + timeout_s
    last_report = 0
    while True:
        objs = list_jobs(api, ns)
        done = sum(1 for j in jobs if terminal(objs.get((j.plural, j.name), {}))[0])
        if done == len(jobs) or time.monotonic() > end:
            return objs
        if time.monotonic() - last_report > 15:
            log(f"{done}/{len(jobs)} jobs finished")
            last_report = time.monotonic()
        time.sleep(2)


def check(jobs, objs, instances, by_name):
    """The counts of a finished run and a line per problem (at most a few per kind)."""
    counts = {"jobs": len(jobs), "succeeded": 0, "failed": 0, "lost": 0, "unfinished": 0,
              "wrong_end_state": 0, "pods_created": len(instances), "recreated_ok": 0,
              "duplicates": 0, "unexpected_pods": 0, "missing_pods": 0,
              "unverified_recreations": 0}
    problems = []
    expected_names = {}
    for j in jobs:
        for n in j.pod_names():
            expected_names[n] = j
    for j in jobs:
        obj = objs.get((j.plural, j.name))
        if obj is None:
            counts["lost"] += 1
            problems.append(f"lost: {j.kind} {j.name} ({j.scenario}) is gone")
            continue
        state, message = terminal(obj)
        if state is None:
            counts["unfinished"] += 1
            problems.append(f"unfinished: {j.kind} {j.name} ({j.scenario}): "
                            f"{(obj.get('status') or {}).get('conditions')}")
            continue
        counts["succeeded" if state == "Succeeded" else "failed"] += 1
        wrong = state != j.expected
        if not wrong and state == "Failed":
            has_backoff, has_deadline = "backoff limit" in message, "deadline" in message
            wrong = {"backoff": not has_backoff, "deadline": not has_deadline,
                     "replica": has_backoff or has_deadline}[j.failure_class]
        if not wrong and j.scenario == "recover":
            # The leader may succeed before a later worker's second restart: one pod is enough.
            restarts = [instances[u].restarts for n in j.pod_names() for u in by_name.get(n, [])]
            if max(restarts, default=0) < 2:
                wrong = True
                message = f"pods restarted {restarts} times, expected 2"
        if wrong:
            counts["wrong_end_state"] += 1
            problems.append(f"wrong end state: {j.kind} {j.name} ({j.scenario}): {state} "
                            f"'{message}', expected {j.expected}"
                            + (f" ({j.failure_class})" if j.failure_class else ""))
        if state == "Succeeded":
            missing = [n for n in j.pod_names() if n not in by_name]
            counts["missing_pods"] += len(missing)
    for name, uids in by_name.items():
        j = expected_names.get(name)
        if j is None:
            counts["unexpected_pods"] += len(uids)
            problems.append(f"unexpected pod {name} ({len(uids)} instances)")
            continue
        for prev in uids[:-1]:
            inst = instances[prev]
            if inst.unseen_end:
                counts["unverified_recreations"] += 1
            elif j.recreates(inst):
                counts["recreated_ok"] += 1
            else:
                counts["duplicates"] += 1
                problems.append(f"duplicate: {name} created again after an instance last seen "
                                f"{inst.phase or 'Pending'} (exit {inst.exit_code}, "
                                f"{j.policy}, {j.scenario})")
    return counts, problems
