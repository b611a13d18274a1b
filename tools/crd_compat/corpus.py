#!/usr/bin/env python3
"""Writes the CRD compatibility corpus: manifests every upstream kubeflow.org/v1 deployment accepts.

  corpus.py UPSTREAM_CRD_JSON_DIR TESTDATA_DIR OUT_DIR

UPSTREAM_CRD_JSON_DIR holds the upstream CRDs as JSON (`kubectl get crd X -o json`, so no YAML
library is needed). OUT_DIR/<case>.json are the manifests; OUT_DIR/index.tsv lists
`<case>\t<expect>\t<note>` with expect = accept (upstream runs it: coach's CRDs must accept it)
or reject (a value upstream's API server stores but that can never run, e.g. replicas: -1;
coach's CRDs refuse it up front, as coach's validator does).

Cases:
- testdata: api/v1/testdata/valid/*.yaml (copied as YAML).
- full-<kind>: every spec field outside the pod template, each set (walked from upstream's schema).
- field-<kind>-<path>-<i>: one leaf of that full spec set to each value upstream accepts
  (boundaries: 0, minimums, int32 max, every enum-like value), everything else as in full.
- empty-<kind>-<field>: each optional object field present but empty ({}).
- types-<kind>-<type>: every replica type alone, also lower-case (upstream normalises keys).
- podfull-<kind>: a pod template with every field upstream's PodTemplateSpec schema declares.
- pod-<kind>-<name>: hand-written templates with unusual fields (volumes, affinity, init and
  sidecar containers, securityContext, tolerations, probes, topology spread, quantities).
- unknown-<kind>, float-quantity-<kind> (expect accept-coach): pod templates a Pod accepts but
  upstream's schema refuses (fields newer than it; a fractional number as a quantity).
- neg-*: the reject cases.
"""
import copy
import glob
import json
import os
import shutil
import sys

KINDS = {
    # kind: (replica key, minimal replica types, default container)
    "PyTorchJob": ("pytorchReplicaSpecs", ["Master", "Worker"], "pytorch"),
    "TFJob": ("tfReplicaSpecs", ["Chief", "Worker"], "tensorflow"),
    "XGBoostJob": ("xgbReplicaSpecs", ["Master", "Worker"], "xgboost"),
    "MPIJob": ("mpiReplicaSpecs", ["Launcher", "Worker"], "mpi"),
    "PaddleJob": ("paddleReplicaSpecs", ["Master", "Worker"], "paddle"),
    "JAXJob": ("jaxReplicaSpecs", ["Worker"], "jax"),
}
ALL_TYPES = {
    "PyTorchJob": ["Master", "Worker"], "TFJob": ["PS", "Worker", "Chief", "Master", "Evaluator"],
    "XGBoostJob": ["Master", "Worker"], "MPIJob": ["Launcher", "Worker"],
    "PaddleJob": ["Master", "Worker"], "JAXJob": ["Worker"],
}

# Values upstream accepts and runs, by field name (first one goes into the full spec).
VALUES = {
    "restartPolicy": ["OnFailure", "Always", "Never", "ExitCode", ""],
    "cleanPodPolicy": ["Running", "None", "All"],
    "managedBy": ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"],
    "successPolicy": ["AllWorkers", ""],
    "nprocPerNode": ["auto", "cpu", "gpu", "1", "8"],
    "rdzvBackend": ["c10d", "etcd", "etcd-v2"],
    "replicas": [1, 0, 2147483647],
    "minAvailable": [1, 3],
    "slotsPerWorker": [1, 8],
    "minReplicas": [1, 2],
    "maxReplicas": [4, 1],
    "nProcPerNode": [1, 8],
    "maxRestarts": [3, 0],
    "rdzvPort": [29400, 1, 65535],
    "scheduleTimeoutSeconds": [600, 0],
    "activeDeadlineSeconds": [3600, 0, 4294967296],
    "backoffLimit": [3, 0, 2147483647],
    "ttlSecondsAfterFinished": [600, 0],
    "averageUtilization": [80, 0],
    "queue": ["default", ""],
    "type": ["Resource"],
    "status": ["True"],
    "operator": ["In"],
}
QUANTITIES = ["4", "500m", "16Gi", 4, "1.5", "1e3"]

# Values upstream's API server stores but that can never run; coach's CRDs reject them.
NEGATIVE = [
    ("replicas", -1), ("restartPolicy", "Sometimes"), ("cleanPodPolicy", "Sometimes"),
    ("backoffLimit", -1), ("activeDeadlineSeconds", -5), ("ttlSecondsAfterFinished", -1),
    ("managedBy", "someone-else"), ("minAvailable", 0), ("scheduleTimeoutSeconds", -1),
    ("nprocPerNode", "0"), ("nprocPerNode", "many"), ("rdzvPort", 0), ("rdzvPort", 70000),
    ("minReplicas", 0), ("maxReplicas", 0), ("nProcPerNode", 0), ("maxRestarts", -1),
    ("slotsPerWorker", 0), ("successPolicy", "AnyWorker"),
]


# Replica maps upstream's validating webhook refuses, and some it accepts near them.
WEBHOOK_NEGATIVE = {
    "PyTorchJob": [("master-2", {"Master": 2, "Worker": 1}, "Master replicas must be 1"),
                   ("workers-0", {"Worker": 0}, "no Master and no Worker to decide success"),
                   ("master-0", {"Master": 0, "Worker": 1}, "Master replicas must be 1"),
                   ("lower-master-2", {"master": 2}, "Master replicas must be 1")],
    "XGBoostJob": [("master-2", {"Master": 2, "Worker": 1}, "Master replicas must be 1")],
    "TFJob": [("chief-and-master", {"Chief": 1, "Master": 1, "Worker": 1}, "one of Chief, Master"),
              ("chief-2", {"Chief": 2, "Worker": 1}, "Chief replicas at most 1"),
              ("master-2", {"Master": 2}, "Master replicas at most 1")],
}
WEBHOOK_POSITIVE = {
    "PyTorchJob": [("workers-only", {"Worker": 4}), ("lower-master", {"master": 1, "worker": 3})],
    "XGBoostJob": [("lower-master", {"master": 1, "Worker": 2})],
    "TFJob": [("chief-0", {"Chief": 0, "Worker": 2}), ("ps-worker", {"PS": 2, "Worker": 4}),
              ("master-evaluator", {"Master": 1, "Evaluator": 1, "worker": 2})],
}


def webhook_rejects(kind, leaf, value):
    """Why upstream's webhook refuses replica count `value` at `leaf`, or None."""
    if leaf[-1] != "replicas" or len(leaf) < 2:
        return None
    role = leaf[-2]
    if kind in ("PyTorchJob", "XGBoostJob") and role == "Master" and value != 1:
        return "Master replicas must be 1"
    if kind == "TFJob" and role in ("Chief", "Master") and value > 1:
        return role + " replicas at most 1"
    # Upstream stores these and then waits forever: nothing decides when the job succeeds.
    if kind == "JAXJob" and role == "Worker" and value == 0:
        return "no Worker to decide success"
    return None


def default_template(container):
    return {"spec": {"containers": [{"name": container, "image": "coach.local/none:latest"}]}}


def minimal(kind, name):
    key, types, container = KINDS[kind]
    specs = {}
    for t in types:
        specs[t] = {"replicas": 1, "template": default_template(container)}
    return {"apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "compat"}, "spec": {key: specs}}


class Walker:
    """Type-correct values for a structural schema; records each leaf's path."""

    def __init__(self):
        self.leaves = []  # (path tuple, [alternative values])

    def value(self, schema, path, name):
        if schema.get("x-kubernetes-int-or-string"):
            if "pattern" in schema:
                self.leaves.append((path, QUANTITIES))
                return QUANTITIES[0]
            self.leaves.append((path, [8080, "http"]))
            return 8080
        t = schema.get("type")
        if "properties" in schema:
            out = {}
            for k, sub in schema["properties"].items():
                out[k] = self.value(sub, path + (k,), k)
            return out
        if t == "object" and "additionalProperties" in schema:
            ap = schema["additionalProperties"]
            key = "example.com/key" if ap.get("type") == "string" else "key1"
            return {key: self.value(ap, path + (key,), key)}
        if t == "object":
            return {"free": "form"}
        if t == "array":
            return [self.value(schema.get("items", {}), path + (0,), name)]
        if "enum" in schema:
            self.leaves.append((path, list(schema["enum"])))
            return schema["enum"][0]
        if t == "integer":
            vals = VALUES.get(name)
            if vals is None:
                lo = max(int(schema.get("minimum", 0)), 0)
                top = 2147483647 if schema.get("format") == "int32" else 4294967296
                vals = [max(lo, 7), lo, top]
                if "maximum" in schema:
                    vals = [v for v in vals if v <= schema["maximum"]] or [lo]
            self.leaves.append((path, vals))
            return vals[0]
        if t == "number":
            self.leaves.append((path, [1.5, 0]))
            return 1.5
        if t == "boolean":
            self.leaves.append((path, [True, False]))
            return True
        if t == "string":
            if schema.get("format") == "date-time":
                vals = ["2024-05-01T12:00:00Z"]
            elif name in VALUES:
                vals = VALUES[name]
            elif schema.get("format") == "byte":
                vals = ["Y29hY2g="]
            else:
                vals = ["v-" + str(name).lower(), ""]
            self.leaves.append((path, vals))
            return vals[0]
        # anything else (x-kubernetes-preserve-unknown-fields without a type)
        return {"free": "form"}


def set_path(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def path_name(path):
    return ".".join(str(p) for p in path).replace("/", "_")


HAND_TEMPLATES = {
    "volumes": {"spec": {"volumes": [
        {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a.yaml"}],
                                      "defaultMode": 420, "optional": True}},
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
        {"name": "host", "hostPath": {"path": "/mnt/data", "type": "DirectoryOrCreate"}},
        {"name": "proj", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600, "audience": "x"}},
            {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}},
        {"name": "csi", "csi": {"driver": "csi.example.com", "volumeAttributes": {"k": "v"}}},
        {"name": "shm", "emptyDir": {"medium": "Memory"}},
        {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}}}],
        "containers": [{"name": "@", "image": "img", "volumeMounts": [
            {"name": "scratch", "mountPath": "/scratch"}, {"name": "shm", "mountPath": "/dev/shm"},
            {"name": "data", "mountPath": "/data", "readOnly": True, "subPath": "x",
             "mountPropagation": "HostToContainer"}]}]}},
    "affinity": {"spec": {"affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "h100"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchFields": [
                    {"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}]}}]},
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone",
                                               "labelSelector": {"matchLabels": {"job": "x"}}}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            "namespaceSelector": {}}]}},
        "containers": [{"name": "@", "image": "img"}]}},
    "init-and-sidecar": {"spec": {
        "initContainers": [
            {"name": "fetch", "image": "busybox", "command": ["sh", "-c", "echo hi"]},
            {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
             "startupProbe": {"tcpSocket": {"port": 15000}, "periodSeconds": 1}}],
        "containers": [{"name": "@", "image": "img"}]}},
    "security": {"spec": {
        "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
                            "runAsNonRoot": True, "supplementalGroups": [4000],
                            "fsGroupChangePolicy": "OnRootMismatch",
                            "seccompProfile": {"type": "RuntimeDefault"},
                            "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
        "containers": [{"name": "@", "image": "img", "securityContext": {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "privileged": False,
            "capabilities": {"add": ["IPC_LOCK", "SYS_RESOURCE"], "drop": ["ALL"]},
            "seLinuxOptions": {"level": "s0:c123,c456"}}}]}},
    "tolerations": {"spec": {
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"operator": "Exists"}],
        "nodeSelector": {"node.kubernetes.io/instance-type": "p4d.24xlarge"},
        "priorityClassName": "high", "schedulerName": "volcano", "runtimeClassName": "nvidia",
        "containers": [{"name": "@", "image": "img"}]}},
    "resources-and-probes": {"metadata": {
        "labels": {"team": "ml"}, "annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {
        "hostIPC": True, "shareProcessNamespace": True, "dnsPolicy": "ClusterFirstWithHostNet",
        "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["store"]}],
        "terminationGracePeriodSeconds": 120,
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {"a": "b"}}}],
        "containers": [{
            "name": "@", "image": "img", "imagePullPolicy": "Always", "workingDir": "/w",
            "command": ["torchrun"], "args": ["--nnodes", "2", "train.py"],
            "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "LIM", "valueFrom": {"resourceFieldRef": {
                        "resource": "limits.memory", "divisor": "1Mi"}}},
                    {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
            "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "32", "memory": "256Gi",
                                     "rdma/ib": 1},
                          "requests": {"cpu": "16.5", "memory": "200G", "ephemeral-storage": "1Ti"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"},
                              "initialDelaySeconds": 30, "failureThreshold": 5},
            "readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]}},
            "startupProbe": {"grpc": {"port": 9091}},
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
            "terminationMessagePolicy": "FallbackToLogsOnError", "tty": True, "stdin": True}]}},
}

# Templates a Pod accepts but upstream's CRD schema does not; coach's CRDs must store them as
# given: fields newer than the schema (forward compatibility) and a fractional number as a
# quantity (the Pod API parses it; upstream's int-or-string schema refuses it).
COACH_ONLY_TEMPLATES = {
    "unknown": {"spec": {"futurePodField": {"x": 1}, "containers": [
        {"name": "@", "image": "img", "futureContainerKnob": True}]}},
    "float-quantity": {"spec": {"containers": [
        {"name": "@", "image": "img", "resources": {"requests": {"cpu": 16.5}}}]}},
}


def with_container(tmpl, container):
    text = json.dumps(tmpl).replace('"name": "@"', '"name": "%s"' % container)
    return json.loads(text)


def main(argv):
    up_dir, testdata, out = argv[1], argv[2], argv[3]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    index = []

    def emit(case, manifest, expect="accept", note=""):
        manifest = copy.deepcopy(manifest)
        if isinstance(manifest, dict):
            manifest["metadata"]["name"] = "c%d" % len(index)
        with open(os.path.join(out, case + ".json"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        index.append((case, expect, note))

    for path in sorted(glob.glob(os.path.join(testdata, "*.yaml"))):
        case = "testdata-" + os.path.basename(path)[:-5]
        shutil.copy(path, os.path.join(out, case + ".yaml"))
        index.append((case, "accept", path))

    for path in sorted(glob.glob(os.path.join(up_dir, "*.json"))):
        with open(path) as f:
            crd = json.load(f)
        kind = crd["spec"]["names"]["kind"]
        key, types, container = KINDS[kind]
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        spec_schema = schema["properties"]["spec"]
        lk = kind.lower()

        # Full spec outside the pod template; then each leaf at each value.
        w = Walker()
        full = minimal(kind, "x")
        for field, sub in spec_schema["properties"].items():
            if field == key:
                continue
            full["spec"][field] = w.value(sub, ("spec", field), field)
        rs = spec_schema["properties"][key]["additionalProperties"]["properties"]
        for t in types:
            for field in ("replicas", "restartPolicy"):
                full["spec"][key][t][field] = w.value(rs[field], ("spec", key, t, field), field)
        if kind == "PyTorchJob":
            full["spec"][key]["Master"]["replicas"] = 1
        emit("full-" + lk, full)
        for leaf, vals in w.leaves:
            for i, v in enumerate(vals[1:] if len(vals) > 1 else vals):
                m = copy.deepcopy(full)
                set_path(m, leaf, v)
                why = webhook_rejects(kind, leaf, v)
                if why:
                    emit("neg-field-%s-%s-%d" % (lk, path_name(leaf[1:]), i), m, "reject", why)
                else:
                    emit("field-%s-%s-%d" % (lk, path_name(leaf[1:]), i), m)
        for field, sub in spec_schema["properties"].items():
            if sub.get("type") == "object" and field != key:
                m = minimal(kind, "x")
                m["spec"][field] = {}
                emit("empty-%s-%s" % (lk, field), m)
        for name, v in NEGATIVE:
            hits = [leaf for leaf, _ in w.leaves if leaf[-1] == name]
            for leaf in hits[:1]:
                m = copy.deepcopy(full)
                set_path(m, leaf, v)
                emit("neg-%s-%s-%s" % (lk, path_name(leaf[1:]), str(v).lower()), m, "reject",
                     "%s=%r cannot run" % (name, v))

        # Replica types, alone and lower-case (an XGBoostJob without a Master is refused by
        # upstream's webhook).
        for t in ALL_TYPES[kind]:
            for variant in (t, t.lower()):
                m = minimal(kind, "x")
                m["spec"][key] = {variant: {"replicas": 1, "template": default_template(container)}}
                if kind == "XGBoostJob" and t != "Master":
                    emit("neg-types-%s-%s" % (lk, variant), m, "reject", "no Master")
                elif kind == "TFJob" and t in ("PS", "Evaluator"):
                    emit("neg-types-%s-%s" % (lk, variant), m, "reject",
                         "no Chief, Master or Worker to decide success")
                else:
                    emit("types-%s-%s" % (lk, variant), m)
        # The rest of upstream's webhook that coach's CRDs check (CEL rules).
        for case, roles, note in WEBHOOK_NEGATIVE.get(kind, []):
            m = minimal(kind, "x")
            m["spec"][key] = {r: {"replicas": n, "template": default_template(container)}
                              for r, n in roles.items()}
            emit("neg-%s-%s" % (lk, case), m, "reject", note)
        for case, roles in WEBHOOK_POSITIVE.get(kind, []):
            m = minimal(kind, "x")
            m["spec"][key] = {r: {"replicas": n, "template": default_template(container)}
                              for r, n in roles.items()}
            emit("webhook-%s-%s" % (lk, case), m)

        # Pod templates: every field upstream's schema knows, then hand-written ones.
        tw = Walker()
        tmpl_schema = rs["template"]
        tmpl = tw.value(tmpl_schema, ("template",), "template")
        tmpl["spec"]["containers"][0]["name"] = container
        m = minimal(kind, "x")
        only = types[-1]
        m["spec"][key][only]["template"] = tmpl
        emit("podfull-" + lk, m)
        for name, t in HAND_TEMPLATES.items():
            m = minimal(kind, "x")
            for ty in types:
                m["spec"][key][ty]["template"] = with_container(t, container)
            emit("pod-%s-%s" % (lk, name), m)
        for name, t in COACH_ONLY_TEMPLATES.items():
            m = minimal(kind, "x")
            m["spec"][key][types[-1]]["template"] = with_container(t, container)
            emit("%s-%s" % (name, lk), m, "accept-coach", "a template upstream's schema refuses")

    with open(os.path.join(out, "index.tsv"), "w") as f:
        for row in index:
            f.write("\t".join(row) + "\n")
    print(len(index))


if __name__ == "__main__":
    main(sys.argv)
