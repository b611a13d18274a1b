#!/usr/bin/env python3
"""Writes the trainer.kubeflow.org/v1alpha1 (Kubeflow Trainer v2) CRD compatibility corpus.

  corpus_v2.py REFERENCE_DIR OUT_DIR

REFERENCE_DIR is upstream's kubeflow-v2 reference (crds/, runtimes/, examples/). OUT_DIR gets
<case>.json (the manifest), for update cases <case>.base.json (created first, for real) and
for status cases <case>.status.json (a merge patch of the status subresource, after the base),
and index.tsv: `<case>\t<expect>\t<message>\t<note>` where expect is
- accept: upstream's CRDs accept it; coach's must, and store the same;
- reject: upstream's CRDs refuse it; coach's must too, with `message` in the error when set
  (upstream's CEL message, checked under both);
- accept-coach: a template a Pod accepts that upstream's schema refuses or cuts (fields newer
  than it, a fractional number as a quantity): coach's CRDs keep it as given.
Every other combination (upstream accepts what coach refuses, or refuses what coach accepts)
is a failure of compare_v2.py.

Cases:
- ref-*: each object of upstream's shipped runtimes and example manifests;
- nodefault-ref-*: the same with every field equal to upstream's schema default left out;
- full-*: every field upstream's schema declares, set (walked from it), per ML policy for the
  runtimes; enum-*: each other enum value of a field outside the pod templates;
- sdk-*, name-*, quantity-*: what the Python SDK posts (no apiGroup, JSON numbers), names at
  the length limits;
- neg-*: each CEL rule's failing case (update cases for the immutable fields), list limits,
  enums, duplicate list-map keys; status-*: the status subresource's rules.
"""
import copy
import glob
import json
import os
import shutil
import sys

import yaml

from corpus import path_name, set_path  # the v1 corpus, beside this file

KINDS = {"TrainJob": "trainjobs", "TrainingRuntime": "trainingruntimes",
         "ClusterTrainingRuntime": "clustertrainingruntimes"}
API = "trainer.kubeflow.org/v1alpha1"
NS = "compat"
IMMUTABLE = "field is immutable"
JOBSET_IMMUTABLE = "Value is immutable"


def load_schemas(ref):
    out = {}
    for kind, plural in KINDS.items():
        with open(os.path.join(ref, "crds", "trainer.kubeflow.org_%s.yaml" % plural)) as f:
            crd = yaml.safe_load(f)
        out[kind] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return out


# Values for fields whose schema alone does not say what upstream accepts (CEL rules,
# semantics), by field name; the walker's own choices otherwise.
VALUES = {
    "storageUri": "hf://tatsu-lab/alpaca",
    "manager": "example.com/platform",
    "namespace": "",
    "apiGroup": "trainer.kubeflow.org",
}


def walk(schema, name="", path=()):
    """A value for every property of a structural schema (one item per list)."""
    if name in VALUES and schema.get("type") == "string":
        return VALUES[name]
    if path == ("spec", "managedBy"):
        return "kueue.x-k8s.io/multikueue"
    if schema.get("x-kubernetes-int-or-string"):
        return "4" if "pattern" in schema else 8080
    t = schema.get("type")
    if "properties" in schema:
        return {k: walk(s, k, path + (k,)) for k, s in schema["properties"].items()}
    if t == "object" and isinstance(schema.get("additionalProperties"), dict):
        return {"example.com/key": walk(schema["additionalProperties"], "key", path + ("key",))}
    if t == "object":
        return {"free": "form"} if schema.get("x-kubernetes-preserve-unknown-fields") else {}
    if t == "array":
        return [walk(schema.get("items", {}), name, path + (0,))]
    if "enum" in schema:
        return schema["enum"][0]
    if t == "integer":
        return max(int(schema.get("minimum", 0)), 7) if "maximum" not in schema else schema["maximum"]
    if t == "number":
        return 1.5
    if t == "boolean":
        return True
    if t == "string":
        if schema.get("format") == "date-time":
            return "2024-05-01T12:00:00Z"
        if schema.get("format") == "byte":
            return "Y29hY2g="
        return "v-" + str(name).lower()
    return {"free": "form"}


def enum_leaves(schema, value, path=()):
    """(path, other enum values) for each enum leaf of `value` outside pod templates."""
    if is_pod_path(path):
        return
    if "enum" in schema and isinstance(value, str):
        others = [e for e in schema["enum"] if e != value]
        if others:
            yield path, others
    if isinstance(value, dict):
        for k, v in value.items():
            sub = schema.get("properties", {}).get(k)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                yield from enum_leaves(sub, v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from enum_leaves(schema.get("items", {}), v, path + (i,))


def is_pod_path(path):
    """Inside a pod template's spec (a replicated job's template.spec.template.spec)."""
    p = [x for x in path if isinstance(x, str)]
    return any(p[i:i + 4] == ["template", "spec", "template", "spec"] for i in range(len(p)))


def drop_defaults(schema, value):
    """`value` without the fields equal to their schema default."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = schema.get("properties", {}).get(k)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None and "default" in sub and sub["default"] == v:
                continue
            out[k] = drop_defaults(sub, v) if sub is not None else v
        return out
    if isinstance(value, list):
        return [drop_defaults(schema.get("items", {}), v) for v in value]
    return value


def container(name="node", **extra):
    return dict({"name": name, "image": "coach.local/none:latest"}, **extra)


def runtime(kind="ClusterTrainingRuntime", policy=None, jobs=None, **spec):
    jobs = jobs or [{"name": "node", "template": {
        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
        "spec": {"template": {"spec": {"containers": [container()]}}}}}]
    s = {"mlPolicy": dict({"numNodes": 1}, **(policy if policy is not None else {"torch": {}})),
         "template": {"spec": {"replicatedJobs": jobs}}}
    s.update(spec)
    m = {"apiVersion": API, "kind": kind, "metadata": {"name": "x"}, "spec": s}
    if kind == "TrainingRuntime":
        m["metadata"]["namespace"] = NS
    return m


def trainjob(**spec):
    s = {"runtimeRef": {"name": "torch-distributed"}}
    s.update(spec)
    return {"apiVersion": API, "kind": "TrainJob", "metadata": {"name": "x", "namespace": NS},
            "spec": s}


def patch(manager="example.com/platform", pod=None, job="node"):
    return {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": job, "template": {"spec": {"template": {"spec": pod or {}}}}}]}}}}


def env(n):
    return [{"name": "E%d" % i, "value": str(i)} for i in range(n)]


class Corpus:
    def __init__(self, out):
        self.out = out
        self.index = []
        if os.path.exists(out):
            shutil.rmtree(out)
        os.makedirs(out)

    def emit(self, case, manifest, expect="accept", message="", note="", base=None, status=None,
             keep_name=False):
        manifest = copy.deepcopy(manifest)
        name = manifest["metadata"]["name"] if keep_name else "c%d" % len(self.index)
        manifest["metadata"]["name"] = name
        if manifest["kind"] != "ClusterTrainingRuntime":
            manifest["metadata"]["namespace"] = NS
        else:
            manifest["metadata"].pop("namespace", None)
        self._write(case + ".json", manifest)
        if base is not None:
            base = copy.deepcopy(base)
            base["metadata"] = copy.deepcopy(manifest["metadata"])
            self._write(case + ".base.json", base)
        if status is not None:
            self._write(case + ".status.json", {"status": status})
        self.index.append((case, expect, message, note))

    def _write(self, fname, obj):
        with open(os.path.join(self.out, fname), "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)

    def finish(self):
        with open(os.path.join(self.out, "index.tsv"), "w") as f:
            for row in self.index:
                f.write("\t".join(row) + "\n")
        return len(self.index)


def reference_objects(ref):
    files = sorted(glob.glob(os.path.join(ref, "runtimes", "**", "*.yaml"), recursive=True) +
                   glob.glob(os.path.join(ref, "examples", "**", "*.yaml"), recursive=True))
    for path in files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d and d.get("kind") in KINDS]
        stem = os.path.relpath(path, ref)[:-5].replace("/", "-").replace("_", "-").replace(".", "-")
        for i, d in enumerate(docs):
            yield "%s-%d" % (stem, i), d


def main(argv):
    ref, out = argv[1], argv[2]
    schemas = load_schemas(ref)
    c = Corpus(out)

    # Upstream's own objects, as shipped and with every default left out.
    for stem, d in reference_objects(ref):
        c.emit("ref-" + stem, d, note=stem)
        c.emit("nodefault-ref-" + stem, drop_defaults(schemas[d["kind"]], d), note=stem)

    # Every field upstream declares, set; then each other enum value outside pod templates.
    tj_spec = walk(schemas["TrainJob"]["properties"]["spec"], "spec", ("spec",))
    full = trainjob(**tj_spec)
    c.emit("full-trainjob", full)
    for path, others in enum_leaves(schemas["TrainJob"], full):
        for v in others:
            m = copy.deepcopy(full)
            set_path(m, path, v)
            c.emit("enum-trainjob-%s-%s" % (path_name(path[1:]), v or "empty"), m)
    policies = ["torch", "mpi", "jax", "xgboost", "flux"]
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        spec = walk(schemas[kind]["properties"]["spec"], "spec", ("spec",))
        lk = kind.lower()
        for keep in policies:
            m = runtime(kind)
            m["spec"] = copy.deepcopy(spec)
            for p in policies:
                if p != keep:
                    del m["spec"]["mlPolicy"][p]
            c.emit("full-%s-%s" % (lk, keep), m)
            if keep != "mpi":
                continue
            for path, others in enum_leaves(schemas[kind], m):
                for v in others:
                    e = copy.deepcopy(m)
                    set_path(e, path, v)
                    if v == "InOrder":  # refused with dependsOn (a neg- case below)
                        for job in e["spec"]["template"]["spec"]["replicatedJobs"]:
                            job.pop("dependsOn", None)
                    c.emit("enum-%s-%s-%s" % (lk, path_name(path[1:]), v or "empty"), e)
        # Empty policies must survive pruning: the SDK picks its launcher by their presence.
        for p in policies:
            c.emit("empty-policy-%s-%s" % (lk, p), runtime(kind, policy={p: {}}))
        c.emit("empty-policy-%s-none" % lk, runtime(kind, policy={}))

    # What the Python SDK posts: no apiGroup, JSON numbers for quantities.
    sdk = trainjob(runtimeRef={"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
                   trainer={"numNodes": 2, "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime",
                            "command": ["bash", "-c", "python3 /tmp/train.py"],
                            "env": [{"name": "A", "value": "1"}],
                            "resourcesPerNode": {"requests": {"cpu": 2.0, "memory": "4Gi",
                                                              "nvidia.com/gpu": 1.0},
                                                 "limits": {"cpu": 2.0, "memory": "4Gi",
                                                            "nvidia.com/gpu": 1.0}}},
                   runtimePatches=[{"manager": "trainer.kubeflow.org/kubeflow-sdk",
                                    "trainingRuntimeSpec": {"template": {"metadata": {
                                        "labels": {"team": "ml"}}}}}],
                   activeDeadlineSeconds=3600)
    sdk["metadata"]["labels"] = {"a": "b"}
    c.emit("sdk-trainjob", sdk)
    c.emit("sdk-trainjob-minimal", trainjob(runtimeRef={"name": "torch-distributed"}))
    c.emit("quantity-ints", trainjob(trainer={"resourcesPerNode": {"limits": {"cpu": 4, "memory": 1e9}}}))
    c.emit("quantity-strings", trainjob(trainer={"resourcesPerNode": {
        "requests": {"cpu": "500m", "memory": "1.5Gi", "example.com/dev": "1e3"}}}))
    # Names: a DNS-1035 label of 63 characters for a TrainJob; runtimes take any object name.
    long_tj = trainjob()
    long_tj["metadata"]["name"] = "a" + "b" * 61 + "c"
    c.emit("name-trainjob-63", long_tj, keep_name=True)
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        m = runtime(kind)
        m["metadata"]["name"] = "r" + "x" * 251 + "z"
        c.emit("name-%s-253" % kind.lower(), m, keep_name=True)
        m["metadata"]["name"] = "my.runtime-1"
        c.emit("name-%s-dots" % kind.lower(), m, keep_name=True)
    c.emit("trainjob-runtime-kinds", trainjob(runtimeRef={
        "name": "x", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}))
    c.emit("trainjob-storageuri-empty", trainjob(initializer={"dataset": {"storageUri": ""},
                                                              "model": {"storageUri": "s3://b/k"}}))
    c.emit("trainjob-limits", trainjob(
        trainer={"env": env(128), "command": ["x"] * 128, "args": ["y"] * 128},
        runtimePatches=[patch("example.com/p%d" % i) for i in range(16)]))

    # Refusals: each CEL rule, then limits, enums and duplicate keys.
    bad_name = trainjob()
    bad_name["metadata"]["name"] = "a" * 64
    c.emit("neg-name-trainjob-64", bad_name, "reject",
           "metadata.name must be no more than 63 characters", keep_name=True)
    for n in ("my.job", "1abc"):
        bad_name["metadata"]["name"] = n
        c.emit("neg-name-trainjob-%s" % n.replace(".", "-"), bad_name, "reject",
               "metadata.name must match RFC 1035 DNS label format", keep_name=True)
    c.emit("neg-managedby", trainjob(managedBy="example.com/other"), "reject",
           "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set")
    for x in ("dataset", "model"):
        for i, uri in enumerate(("s3:/bucket", "bucket/key", "://x")):
            c.emit("neg-storageuri-%s-%d" % (x, i), trainjob(initializer={x: {"storageUri": uri}}),
                   "reject", "storageUri may be empty, or it must be a valid URI (scheme://...)")
    c.emit("neg-storageuri-long", trainjob(initializer={"model": {"storageUri": "s3://" + "k" * 2044}}),
           "reject")
    no_ref = trainjob()
    no_ref["spec"] = {"suspend": True}
    c.emit("neg-no-runtimeref", no_ref, "reject")
    c.emit("neg-runtimeref-empty-name", trainjob(runtimeRef={"name": ""}), "reject")
    c.emit("neg-deadline-0", trainjob(activeDeadlineSeconds=0), "reject")
    c.emit("neg-env-129", trainjob(trainer={"env": env(129)}), "reject")
    c.emit("neg-command-129", trainjob(trainer={"command": ["x"] * 129}), "reject")
    c.emit("neg-args-129", trainjob(trainer={"args": ["x"] * 129}), "reject")
    c.emit("neg-patches-17", trainjob(runtimePatches=[patch("example.com/p%d" % i)
                                                      for i in range(17)]), "reject")
    c.emit("neg-env-duplicate", trainjob(trainer={"env": env(2) + env(1)}), "reject")
    c.emit("neg-patches-duplicate", trainjob(runtimePatches=[patch(), patch()]), "reject")
    c.emit("neg-quantity-fraction", trainjob(trainer={"resourcesPerNode": {"requests": {"cpu": 2.5}}}),
           "reject")
    c.emit("neg-image-501", trainjob(trainer={"image": "i" * 501}), "reject")
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        lk = kind.lower()
        c.emit("neg-%s-two-policies" % lk, runtime(kind, policy={"torch": {}, "mpi": {}}),
               "reject", "Only one of the policy can be configured")
        c.emit("neg-%s-envinjection-node" % lk, runtime(kind, policy={"torch": {"envInjection": {
            "targets": [{"jobName": "node", "containerNames": ["sidecar", "node"]}]}}}), "reject",
            "containerNames must not include the main node container because PET_* envs are "
            "always injected into it")
        c.emit("neg-%s-flux-0" % lk, runtime(kind, policy={"flux": {"numProcPerNode": 0}}),
               "reject", "NumProcPerNode in fluxPolicy must be >= 1")
        m = runtime(kind)
        m["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
        m["spec"]["template"]["spec"]["replicatedJobs"][0]["dependsOn"] = [
            {"name": "init", "status": "Complete"}]
        c.emit("neg-%s-inorder-dependson" % lk, m, "reject",
               "StartupPolicy and DependsOn APIs are mutually exclusive")
        m = runtime(kind)
        m["spec"]["template"]["spec"]["volumeClaimPolicies"] = [{"templates": [
            {"metadata": {"name": "initializer", "namespace": "other"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}]
        c.emit("neg-%s-vcp-namespace" % lk, m, "reject",
               "namespace cannot be set for VolumeClaimPolicies templates")
        c.emit("neg-%s-mpi-impl" % lk, runtime(kind, policy={"mpi": {"mpiImplementation": "IntelMPI"}}),
               "reject")
        c.emit("neg-%s-targets-17" % lk, runtime(kind, policy={"torch": {"envInjection": {"targets": [
            {"jobName": "j%d" % i, "containerNames": ["c"]} for i in range(17)]}}}), "reject")
        c.emit("neg-%s-containernames-empty" % lk, runtime(kind, policy={"torch": {"envInjection": {
            "targets": [{"jobName": "node", "containerNames": []}]}}}), "reject")
        c.emit("neg-%s-empty-spec" % lk, dict(runtime(kind), spec={}), "reject")
        two = runtime(kind)
        jobs = two["spec"]["template"]["spec"]["replicatedJobs"]
        jobs.append(copy.deepcopy(jobs[0]))
        c.emit("neg-%s-duplicate-jobs" % lk, two, "reject")
        dup = runtime(kind)
        dup["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
            "spec"]["containers"].append(container())
        c.emit("neg-%s-duplicate-containers" % lk, dup, "reject")
        nocont = runtime(kind)
        nocont["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
            "spec"] = {"restartPolicy": "Never"}
        c.emit("neg-%s-no-containers" % lk, nocont, "reject")
        bad_dep = runtime(kind)
        bad_dep["spec"]["template"]["spec"]["replicatedJobs"][0]["dependsOn"] = [
            {"name": "init", "status": "Running"}]
        c.emit("neg-%s-dependson-status" % lk, bad_dep, "reject")

    # Updates: each immutable field changed after creation (and the mutable ones accepted).
    base = trainjob(runtimeRef={"name": "torch-distributed"}, activeDeadlineSeconds=60,
                    initializer={"dataset": {"storageUri": "hf://a/b"}},
                    trainer={"numNodes": 1, "image": "a"}, suspend=True,
                    runtimePatches=[patch(pod={
                        "serviceAccountName": "sa", "terminationGracePeriodSeconds": 30,
                        "securityContext": {"runAsUser": 1000},
                        "volumes": [{"name": "v", "emptyDir": {}}],
                        "imagePullSecrets": [{"name": "s"}],
                        "containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}],
                        "initContainers": [{"name": "init", "env": [{"name": "A", "value": "1"}]}],
                        "nodeSelector": {"a": "b"}})])
    changes = {
        "runtimeref": (("spec", "runtimeRef", "name"), "other"),
        "deadline": (("spec", "activeDeadlineSeconds"), 120),
        "initializer": (("spec", "initializer", "dataset", "storageUri"), "hf://a/c"),
        "trainer": (("spec", "trainer", "numNodes"), 2),
        "managedby": (("spec", "managedBy"), "kueue.x-k8s.io/multikueue"),
    }
    pod_path = ("spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec",
                "replicatedJobs", 0, "template", "spec", "template", "spec")
    for f, v in (("serviceAccountName", "sa2"), ("terminationGracePeriodSeconds", 5),
                 ("securityContext", {"runAsUser": 1}), ("volumes", [{"name": "w", "emptyDir": {}}]),
                 ("imagePullSecrets", [{"name": "t"}]),
                 ("containers", [{"name": "node", "env": [{"name": "A", "value": "2"}]}]),
                 ("initContainers", [{"name": "init", "env": [{"name": "B", "value": "1"}]}])):
        changes["patch-" + f.lower()] = (pod_path + (f,), v)
    for case, (path, v) in changes.items():
        m = copy.deepcopy(base)
        set_path(m, path, v)
        c.emit("neg-update-%s" % case, m, "reject", IMMUTABLE, base=base)
    for case, (path, v) in {"suspend": (("spec", "suspend"), False),
                            "patch-nodeselector": (pod_path + ("nodeSelector",), {"a": "c"}),
                            "patch-new": (("spec", "runtimePatches"),
                                          base["spec"]["runtimePatches"] + [patch("example.com/b")])
                            }.items():
        m = copy.deepcopy(base)
        set_path(m, path, v)
        c.emit("update-%s" % case, m, base=base)
    for kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        lk = kind.lower()
        rbase = runtime(kind)
        js = rbase["spec"]["template"]["spec"]
        js.update({"network": {"publishNotReadyAddresses": True},
                   "successPolicy": {"operator": "All"},
                   "failurePolicy": {"maxRestarts": 1},
                   "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
                   "volumeClaimPolicies": [{"templates": [{"metadata": {"name": "v"}, "spec": {
                       "accessModes": ["ReadWriteOnce"]}}]}]})
        js["replicatedJobs"].insert(0, {"name": "init", "template": {"spec": {"template": {
            "spec": {"containers": [container("init")]}}}}})
        js["replicatedJobs"][1]["dependsOn"] = [{"name": "init", "status": "Complete"}]
        rjs = ("spec", "template", "spec")
        for case, (path, v) in {
                "network": (rjs + ("network", "publishNotReadyAddresses"), False),
                "successpolicy": (rjs + ("successPolicy", "operator"), "Any"),
                "failurepolicy": (rjs + ("failurePolicy", "maxRestarts"), 2),
                "startuppolicy": (rjs + ("startupPolicy", "startupPolicyOrder"), "InOrder"),
                "vcp": (rjs + ("volumeClaimPolicies", 0, "templates", 0, "metadata", "name"), "w"),
                "dependson": (rjs + ("replicatedJobs", 1, "dependsOn", 0, "status"), "Ready")}.items():
            m = copy.deepcopy(rbase)
            set_path(m, path, v)
            # InOrder with dependsOn is refused on its own; drop dependsOn's change from it.
            message = JOBSET_IMMUTABLE
            if case == "startuppolicy":
                message = ""
            c.emit("neg-update-%s-%s" % (lk, case), m, "reject", message, base=rbase)
        m = copy.deepcopy(rbase)
        m["spec"]["mlPolicy"]["numNodes"] = 4
        m["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"][
            "spec"]["containers"][0]["image"] = "b"
        c.emit("update-%s-mutable" % lk, m, base=rbase)

    # The status subresource.
    sbase = trainjob()
    cond = lambda t: {"type": t, "status": "True", "reason": "R", "message": "",
                      "lastTransitionTime": "2025-01-01T00:00:00Z"}
    job_status = {"name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 1,
                  "suspended": 0}
    good = {"conditions": [cond("Suspended"), cond("Complete")], "jobsStatus": [job_status],
            "trainerStatus": {"lastUpdatedTime": "2025-01-01T00:00:00Z", "progressPercentage": 100,
                              "estimatedRemainingSeconds": 0,
                              "metrics": [{"name": "loss", "value": "0.25"}]}}
    c.emit("status-full", sbase, base=sbase, status=good)
    for case, st, message in (
            ("conditions-9", {"conditions": [cond("T%d" % i) for i in range(9)]}, ""),
            ("condition-no-reason", {"conditions": [dict(cond("A"), reason="")]}, ""),
            ("jobsstatus-partial", {"jobsStatus": [{"name": "node", "ready": 1}]}, ""),
            ("trainerstatus-no-time", {"trainerStatus": {"progressPercentage": 5}},
             "lastUpdatedTime is required when trainerStatus is present"),
            ("progress-101", {"trainerStatus": {"lastUpdatedTime": "2025-01-01T00:00:00Z",
                                                "progressPercentage": 101}}, ""),
            ("metrics-257", {"trainerStatus": {"lastUpdatedTime": "2025-01-01T00:00:00Z",
                                               "metrics": [{"name": "m%d" % i, "value": "1"}
                                                           for i in range(257)]}}, "")):
        c.emit("neg-status-" + case, sbase, "reject", message, base=sbase, status=st)

    # Templates a Pod accepts that upstream's schema refuses or cuts: coach keeps them.
    unknown = runtime()
    unknown["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"] = {"futurePodField": {"x": 1}, "containers": [container(futureKnob=True)]}
    c.emit("unknown-runtime-pod-fields", unknown, "accept-coach")
    flt = runtime()
    flt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]["containers"][0]["resources"] = {"requests": {"cpu": 16.5}}
    c.emit("float-quantity-runtime", flt, "accept-coach")
    c.emit("unknown-patch-fields", trainjob(runtimePatches=[patch(pod={
        "futurePodField": True, "containers": [{"name": "node", "futureKnob": 1}]})]),
        "accept-coach")
    print(c.finish())


if __name__ == "__main__":
    main(sys.argv)
