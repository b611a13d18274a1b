#!/usr/bin/env python3
"""What upstream Kubeflow Trainer v2.3 (+ JobSet + the Job controller) and coach made of the
same TrainJobs, compared field by field: exits 1 naming each object and field that differs.

Usage: trainjob_compare.py UPSTREAM_JSON COACH_JSON [--pending KIND:GLOB]...

Each JSON file is a v1 List (kubectl get pods,services,configmaps,secrets,
persistentvolumeclaims -o json) of one namespace, taken once the TrainJobs' pods all existed.
Objects are paired by kind and key: a pod by (jobset-name, replicatedjob-name,
job-completion-index) labels, anything else by name. Before comparing, `normalize` removes only
what must differ between two runs or between the projects by design; each removal is one of
the deliberate differences operator/trainer/README.md lists (the REMOVALS table below names
it). An object one side has and the other lacks is a difference, except on coach's side an
object matching a --pending KIND:GLOB (printed as PENDING, not a failure).
"""

import fnmatch
import json
import re
import sys

# The keys of every normalisation, with the deliberate difference it stands for
# (operator/trainer/README.md, "Deliberate differences") or why the value is per run.
REMOVALS = {
    "server-fields": "uid, resourceVersion, creationTimestamp, generation, managedFields: per "
                     "object, assigned by the API server",
    "owner-chain": "no JobSet and Job objects: pods, the Service and the ConfigMaps are owned "
                   "by the TrainJob (upstream: Job, JobSet, TrainJob)",
    "uid-labels": "controller-uid and jobset-uid carry the TrainJob's uid (upstream: the Job's "
                  "and the JobSet's): compared as <uid>",
    "coach-labels": "coach's identity labels on its pods (coach.dev/job-name, replica-type, "
                    "replica-index, attempt)",
    "pod-name-suffix": "a pod's 5-character suffix: random upstream, derived here",
    "job-tracking-finalizer": "the Job controller's batch.kubernetes.io/job-tracking finalizer "
                              "(not modelled)",
    "pod-status": "status, spec.nodeName and the node's topology labels the API server copies "
                  "onto a bound pod (Kubernetes 1.35+): written by kube-scheduler, the API "
                  "server and kwok, not by either operator",
    "sa-token-volume": "the API server's kube-api-access-<5 random> volume name",
    "xgboost-env-order": "XGBoost: upstream puts the trainer's env before or after DMLC_* at "
                         "random; compared as a set by name",
    "ssh-key-content": "the MPI SSH key Secret's data (a random key upstream)",
    "snapshot-serialisation": "the runtime snapshot ConfigMap's text: compared as the object "
                              "it holds, without the runtime's server fields and the empty "
                              "objects Go's YAML writes for unset fields (resources: {})",
    "jobset-priority-label": "jobset.sigs.k8s.io/priority, which JobSet's pod webhook copies "
                             "from the priority the API server resolved (for exclusive "
                             "placement)",
}

SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                 "selfLink")
UID_KEYS = ("batch.kubernetes.io/controller-uid", "controller-uid",
            "jobset.sigs.k8s.io/jobset-uid")
COACH_LABELS = ("coach.dev/job-name", "coach.dev/replica-type", "coach.dev/replica-index",
                "coach.dev/attempt")
PRIORITY_LABEL = "jobset.sigs.k8s.io/priority"
POD_NAME = re.compile(r"^(.*)-[bcdfghjklmnpqrstvwxz2456789]{5}$")
# What the API server copies from a pod's node onto the pod when it binds it (the
# PodTopologyLabelsAdmission plugin): where the scheduler put it, not what an operator wrote.
NODE_TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")
SA_VOLUME = re.compile(r"^kube-api-access-[a-z0-9]{5}$")
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
RJOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
INDEX = "batch.kubernetes.io/job-completion-index"
# Objects of the namespace that neither operator makes.
IGNORED = {("ConfigMap", "kube-root-ca.crt")}


def _strip_meta(meta, used):
    for f in SERVER_FIELDS:
        if f in meta:
            meta.pop(f)
            used.add("server-fields")
    if meta.pop("ownerReferences", None) is not None:
        used.add("owner-chain")
    for group in ("labels", "annotations"):
        values = meta.get(group)
        if not values:
            continue
        for k in UID_KEYS:
            if k in values:
                values[k] = "<uid>"
                used.add("uid-labels")
        for k in COACH_LABELS:
            if values.pop(k, None) is not None:
                used.add("coach-labels")
        if not values:
            meta.pop(group)


def _normalize_pod(pod, used):
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    if labels.pop(PRIORITY_LABEL, None) is not None:
        used.add("jobset-priority-label")
    m = POD_NAME.match(meta.get("name", ""))
    if m:
        meta["name"] = m.group(1) + "-<suffix>"
        used.add("pod-name-suffix")
    fins = [f for f in meta.get("finalizers", []) if f != "batch.kubernetes.io/job-tracking"]
    if len(fins) != len(meta.get("finalizers", [])):
        used.add("job-tracking-finalizer")
        if fins:
            meta["finalizers"] = fins
        else:
            meta.pop("finalizers")
    if pod.pop("status", None) is not None:
        used.add("pod-status")
    spec = pod.get("spec", {})
    if spec.pop("nodeName", None) is not None:
        used.add("pod-status")
    for key in NODE_TOPOLOGY_LABELS:
        if labels.pop(key, None) is not None:
            used.add("pod-status")
    renamed = {}
    for v in spec.get("volumes", []):
        if SA_VOLUME.match(v.get("name", "")):
            renamed[v["name"]] = "kube-api-access-<suffix>"
            v["name"] = renamed[v["name"]]
            used.add("sa-token-volume")
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        for vm in c.get("volumeMounts", []):
            if vm.get("name") in renamed:
                vm["name"] = renamed[vm["name"]]
        env = c.get("env")
        if env and any(e.get("name") == "DMLC_TRACKER_URI" for e in env):
            c["env"] = sorted(env, key=lambda e: e.get("name", ""))
            used.add("xgboost-env-order")


def _without_empty_objects(value):
    """`value` without the {} members of its objects, at every depth."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _without_empty_objects(v)
            if v != {}:
                out[k] = v
        return out
    if isinstance(value, list):
        return [_without_empty_objects(v) for v in value]
    return value


def _normalize_configmap(cm, used):
    name = cm["metadata"].get("name", "")
    if name.endswith("-runtime-snapshot") and "runtime" in cm.get("data", {}):
        import yaml  # only for snapshots: the comparer's other paths need the standard library

        runtime = yaml.safe_load(cm["data"]["runtime"])
        if isinstance(runtime, dict) and isinstance(runtime.get("metadata"), dict):
            _strip_meta(runtime["metadata"], set())
            runtime["metadata"].pop("annotations", None)
        cm["data"]["runtime"] = _without_empty_objects(runtime)
        used.add("snapshot-serialisation")


def _normalize_secret(secret, used):
    if secret.get("type") == "kubernetes.io/ssh-auth" and "data" in secret:
        secret["data"] = {k: "<key>" for k in secret["data"]}
        used.add("ssh-key-content")


def normalize(obj):
    """(key, object without what must differ, the REMOVALS keys used). The input is not changed."""
    obj = json.loads(json.dumps(obj))
    used = set()
    kind = obj.get("kind", "")
    meta = obj.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    if kind == "Pod" and JOBSET_NAME in labels:
        key = ("Pod", "%s/%s/%s" % (labels.get(JOBSET_NAME), labels.get(RJOB_NAME, "?"),
                                    labels.get(INDEX, "?")))
    else:
        key = (kind, meta.get("name", ""))
    _strip_meta(meta, used)
    if kind == "Pod":
        _normalize_pod(obj, used)
    elif kind == "ConfigMap":
        _normalize_configmap(obj, used)
    elif kind == "Secret":
        _normalize_secret(obj, used)
    elif kind in ("Service", "PersistentVolumeClaim"):
        obj.pop("status", None)
    return key, obj, used


def diff(a, b, path=""):
    """Field paths (with both values) where a and b differ; lists compared element by element."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            p = "%s.%s" % (path, k) if path else k
            if k not in a:
                out.append((p, "<absent>", b[k]))
            elif k not in b:
                out.append((p, a[k], "<absent>"))
            else:
                out.extend(diff(a[k], b[k], p))
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            p = "%s[%d]" % (path, i)
            if i >= len(a):
                out.append((p, "<absent>", b[i]))
            elif i >= len(b):
                out.append((p, a[i], "<absent>"))
            else:
                out.extend(diff(a[i], b[i], p))
        return out
    return [] if a == b else [(path, a, b)]


def index(items):
    out, used = {}, set()
    for item in items:
        key, obj, u = normalize(item)
        if key in IGNORED:
            continue
        if key in out:
            raise ValueError("two objects with key %s/%s" % key)
        out[key] = obj
        used |= u
    return out, used


def compare(upstream_items, coach_items, pending=()):
    """(failures, pending notes, REMOVALS keys used): lines naming object and field."""
    up, used_up = index(upstream_items)
    co, used_co = index(coach_items)
    failures, notes = [], []

    def is_pending(key):
        return any(key[0] == k and fnmatch.fnmatchcase(key[1], g) for k, g in pending)

    for key in sorted(set(up) | set(co)):
        name = "%s %s" % key
        if key not in co:
            if is_pending(key):
                notes.append("PENDING %s: made by upstream, not yet by coach" % name)
            else:
                failures.append("%s: made by upstream only" % name)
            continue
        if key not in up:
            failures.append("%s: made by coach only" % name)
            continue
        for path, a, b in diff(up[key], co[key]):
            failures.append("%s: %s: upstream %s, coach %s"
                            % (name, path, json.dumps(a, sort_keys=True),
                               json.dumps(b, sort_keys=True)))
    return failures, notes, used_up | used_co


def parse_pending(spec):
    kind, sep, glob = spec.partition(":")
    if not sep or not kind or not glob:
        raise ValueError("--pending: %r is not KIND:GLOB" % spec)
    return kind, glob


def main(argv):
    args, pending = [], []
    it = iter(argv[1:])
    try:
        for a in it:
            if a == "--pending":
                pending.append(parse_pending(next(it, "")))
            else:
                args.append(a)
        if len(args) != 2:
            raise ValueError("want UPSTREAM_JSON and COACH_JSON")
        lists = []
        for path in args:
            with open(path) as f:
                doc = json.load(f)
            if not isinstance(doc.get("items"), list):
                raise ValueError("%s: not a List (no items)" % path)
            lists.append(doc["items"])
        failures, notes, used = compare(lists[0], lists[1], pending)
    except (OSError, ValueError) as e:
        sys.stderr.write("trainjob_compare.py: %s\n\n%s" % (e, __doc__))
        return 2
    print("compared %d upstream and %d coach objects" % (len(lists[0]), len(lists[1])))
    for key in sorted(used):
        print("normalised: %s (%s)" % (key, REMOVALS[key]))
    for line in notes:
        print(line)
    for line in failures:
        print("DIFFERENT " + line)
    if failures:
        print("%d differences" % len(failures))
        return 1
    print("no differences")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
