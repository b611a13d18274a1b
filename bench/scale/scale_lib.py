"""Pure helpers of bench/scale/scale.py: the job it submits, its percentiles and summary line."""


def pytorch_job(ns, name, replicas):
    """A PyTorchJob of 1 Master + replicas-1 Workers whose pods run on the testenv's kwok nodes.

    cleanPodPolicy None: the Workers stay when the Master succeeds (the bench measures the
    status change, not the deletions)."""
    template = {"spec": {"containers": [{
        "name": "pytorch", "image": "docker.io/pytorch/pytorch:2.3.0",
        "command": ["sleep", "infinity"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
    specs = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
    if replicas > 1:
        specs["Worker"] = {"replicas": replicas - 1, "restartPolicy": "OnFailure",
                           "template": template}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "pytorchReplicaSpecs": specs}}


def has_condition(job, kind):
    """Whether the job's status has condition `kind` with status "True"."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return True
    return False


def latencies(pod_times, job_times):
    """Milliseconds from each job's pod event to its job event, for jobs that have both.

    A job event seen before its pod event (both watches are read by one process) counts as 0."""
    return [max(0.0, (job_times[j] - t) * 1000.0) for j, t in pod_times.items() if j in job_times]


def percentile(sorted_values, q):
    """Nearest-rank percentile (q in 0..100) of an ascending list; 0 for an empty one."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * q // 100))  # ceil(n * q / 100), at least 1
    return sorted_values[int(rank) - 1]


def summarize(values):
    v = sorted(values)
    return {"n": len(v), "p50": percentile(v, 50), "p90": percentile(v, 90),
            "p99": percentile(v, 99), "max": v[-1] if v else 0.0}


def summary_line(tag, fields):
    """`TAG k=v k=v ...` with floats to 3 decimals: one line a script can split."""
    parts = [tag]
    for k, v in fields.items():
        if isinstance(v, float):
            v = "%.3f" % v
        parts.append("%s=%s" % (k, str(v).replace(" ", "_")))
    return " ".join(parts)
