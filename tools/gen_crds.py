#!/usr/bin/env python3
"""Generates coach's CustomResourceDefinitions for the six kubeflow.org/v1 kinds.

One compact description per kind (below) plus shared schema fragments, so the six CRDs stay
consistent. Output: charts/coach/crds/kubeflow.org_<plural>.yaml (committed: Helm reads them).

  tools/gen_crds.py            # (re)write the files
  tools/gen_crds.py --check    # exit 1 when a committed file differs from what would be generated

Design (see charts/coach/README.md):
- Fields coach interprets are typed; the pod template is an object that keeps every field
  (x-kubernetes-preserve-unknown-fields), so the CRD stays small enough for client-side
  `kubectl apply` (upstream inlines the full PodSpec: ~600 KB per CRD).
- Enums and minimums only where the value cannot run (coach's validator, api/v1/validation.cc,
  rejects the same values with the same field path); never stricter than that.
No third-party Python modules: the YAML writer is a small one at the bottom.
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "charts", "coach", "crds")

# kind, default container (None: MPIJob, whose launcher uses its first container), plural,
# replica-specs key, replica types, kind-specific spec fields, scale subresource.
KINDS = [
    dict(kind="PyTorchJob", container="pytorch", plural="pytorchjobs", key="pytorchReplicaSpecs",
         types=["Master", "Worker"], extra=["elasticPolicy", "nprocPerNode"], scale=True),
    dict(kind="TFJob", container="tensorflow", plural="tfjobs", key="tfReplicaSpecs",
         types=["PS", "Worker", "Chief", "Master", "Evaluator"],
         extra=["successPolicy", "enableDynamicWorker"], scale=False),
    dict(kind="XGBoostJob", container="xgboost", plural="xgboostjobs", key="xgbReplicaSpecs",
         types=["Master", "Worker"], extra=[], scale=False),
    dict(kind="MPIJob", container=None, plural="mpijobs", key="mpiReplicaSpecs",
         types=["Launcher", "Worker"], extra=["slotsPerWorker", "cleanPodPolicy", "mainContainer"],
         scale=False),
    dict(kind="PaddleJob", container="paddle", plural="paddlejobs", key="paddleReplicaSpecs",
         types=["Master", "Worker"], extra=["elasticPolicy"], scale=True),
    dict(kind="JAXJob", container="jax", plural="jaxjobs", key="jaxReplicaSpecs",
         types=["Worker"], extra=[], scale=True),
]

CATEGORIES = ["kubeflow", "kubeflow-training"]

# CEL rules on the replica-specs map: what upstream's validating webhook refuses (after its
# defaulting, which normalises keys: hence lowerAscii) and coach's validator refuses too.
def _replicas_at_most(role, n, exact=False):
    op = "==" if exact else "<="
    return ("self.all(k, k.lowerAscii() != '%s' || !has(self[k].replicas) || self[k].replicas %s %d)"
            % (role.lower(), op, n), "%s replicas must be %s%d" % (role, "" if exact else "at most ", n))


def _workers_decide(deciders):
    """Without one of `deciders`, the Workers decide success: at least one must exist."""
    some_worker = ("self.exists(k, k.lowerAscii() == 'worker' && "
                   "(!has(self[k].replicas) || self[k].replicas >= 1))")
    if not deciders:
        return (some_worker, "Worker replicas must be >= 1: the Workers decide when the job "
                             "succeeds")
    has_decider = " || ".join("self.exists(k, k.lowerAscii() == '%s')" % d.lower()
                              for d in deciders)
    return ("%s || %s" % (has_decider, some_worker),
            "Worker replicas must be >= 1 when there is no %s: the Workers decide when the job "
            "succeeds" % " or ".join(deciders))


def _known_types(k):
    allowed = "[%s]" % ", ".join("'%s'" % t.lower() for t in k["types"])
    return {
        "rule": "self.all(k, k.lowerAscii() in %s)" % allowed,
        "messageExpression": ("'unknown replica type \"' + self.filter(k, !(k.lowerAscii() in %s))[0]"
                              " + '\" for %s; allowed: %s'" % (allowed, k["kind"], ", ".join(k["types"]))),
    }


RULES = {
    "PyTorchJob": [_replicas_at_most("Master", 1, exact=True), _workers_decide(["Master"])],
    "PaddleJob": [_workers_decide(["Master"])],
    "JAXJob": [_workers_decide([])],
    "XGBoostJob": [("self.exists(k, k.lowerAscii() == 'master')", "an XGBoostJob needs a Master"),
                   _replicas_at_most("Master", 1, exact=True)],
    "TFJob": [("self.filter(k, k.lowerAscii() == 'chief' || k.lowerAscii() == 'master').size() <= 1",
               "a TFJob has at most one of Chief and Master"),
              _replicas_at_most("Chief", 1), _replicas_at_most("Master", 1),
              _workers_decide(["Chief", "Master"])],
}

# The DNS-1035 label a job's name must be: its pods' Services are named after it.
DNS1035 = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"

# Bounds that keep the CEL rules' estimated cost inside the API server's budget; far above
# what a pod uses.
CONTAINERS_MAX = 128
# Above every kind's count of replica types, so that an unknown type is reported by name (the
# CEL rule) rather than as "too many" (CEL rules are skipped once the schema failed).
REPLICA_TYPES_MAX = 16

# status.coach's bounds: api/v1/coach_status.h.
MAX_PROGRESS_METRICS = 64
MAX_METRIC_NAME_LENGTH = 250
MAX_RESTARTS_BY_TYPE = 16
MAX_ATTEMPTS = 20
MAX_ATTEMPT_NODES = 64
MAX_ATTEMPT_MESSAGE_LENGTH = 1024
MAX_ATTEMPT_NAME_LENGTH = 253
MAX_WORKER_COUNT_CHANGES = 20
MAX_WORKER_COUNT_WHY_LENGTH = 512

QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
               r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    "x-kubernetes-int-or-string": True,
}


def integer(desc, minimum=None, maximum=None, fmt="int32"):
    s = {"type": "integer", "format": fmt, "description": desc}
    if minimum is not None:
        s["minimum"] = minimum
    if maximum is not None:
        s["maximum"] = maximum
    return s


def string(desc, enum=None, pattern=None):
    s = {"type": "string", "description": desc}
    if enum is not None:
        s["enum"] = enum
    if pattern is not None:
        s["pattern"] = pattern
    return s


def obj(desc, props=None, required=None, **extra):
    s = {"type": "object", "description": desc}
    if props is not None:
        s["properties"] = props
    if required:
        s["required"] = required
    s.update(extra)
    return s


def free_object(desc):
    return obj(desc, **{"x-kubernetes-preserve-unknown-fields": True})


CLEAN_POD_POLICY = string("Which pods to delete when the job finishes: None (default), Running "
                          "(Running and Pending pods) or All.", enum=["None", "Running", "All"])


def pod_spec(k):
    """A core/v1 PodSpec, kept whole; the containers' name and image are typed so that the rules
    every pod needs (an image per container, the kind's default container) hold at admission."""
    container = obj("A core/v1 Container.", {
        "name": dict(string("Container name (a DNS-1123 label, as the Pod API requires)."),
                     maxLength=63),
        "image": string("Container image."),
    }, required=["name"], **{"x-kubernetes-preserve-unknown-fields": True})
    rules = [{
        "rule": "self.containers.all(c, has(c.image) && size(c.image) > 0)",
        # A message naming the container would exceed the messageExpression cost budget.
        "message": "every container needs an image: containers[].image is required",
        "fieldPath": ".containers",
    }]
    if k["container"]:
        rules.append({
            "rule": "self.containers.exists(c, c.name == '%s')" % k["container"],
            "message": "must have a container named \"%s\"" % k["container"],
            "fieldPath": ".containers",
        })
    return obj("A core/v1 PodSpec.", {
        "containers": {"type": "array", "minItems": 1, "maxItems": CONTAINERS_MAX,
                       "description": "The pod's containers.", "items": container},
    }, required=["containers"], **{"x-kubernetes-preserve-unknown-fields": True,
                                   "x-kubernetes-validations": rules})


def replica_spec(k):
    return obj(
        "One replica type: how many pods, their restart policy and their pod template.",
        {
            "replicas": integer("Number of pods of this type (default 1; MPIJob Worker: 0).",
                                minimum=0),
            "restartPolicy": string(
                "Always, OnFailure, Never or ExitCode (recreate the pod when the main container "
                "exits with 128 or more, fail the job on 1-127). Overrides the template's. "
                "Empty: the kind's default.",
                enum=["", "Always", "OnFailure", "Never", "ExitCode"]),
            "template": obj(
                "A core/v1 PodTemplateSpec. Kept as given: every field the API server's Pod "
                "type knows (and any newer one) is stored and passed to the pods.",
                {"metadata": free_object("Labels and annotations for the pods."),
                 "spec": pod_spec(k)},
                **{"x-kubernetes-preserve-unknown-fields": True}),
        })


def run_policy():
    # default {}: a job applied without runPolicy reads back with one, which the upstream
    # Python SDK's models require (its get_job and list_jobs raise on a job without it).
    return obj("Policies shared by all kinds: cleanup, deadlines, restarts, gang scheduling, suspend.", {
        "activeDeadlineSeconds": integer(
            "Fail the job when it has been running this many seconds.", minimum=0, fmt="int64"),
        "backoffLimit": integer("Restarts allowed before the job is marked Failed.", minimum=0),
        "cleanPodPolicy": CLEAN_POD_POLICY,
        "managedBy": string(
            "The controller that reconciles this job; any other value than coach's own "
            "(kubeflow.org/training-operator) leaves the job to that controller (Kueue MultiKueue).",
            enum=["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"]),
        "schedulingPolicy": obj("Gang scheduling (PodGroup) settings.", {
            "minAvailable": integer("Pods that must be schedulable together (default: all).",
                                    minimum=1),
            "minResources": obj("Resources the PodGroup needs before any pod starts.",
                                additionalProperties=QUANTITY),
            "priorityClass": string("PriorityClass of the PodGroup."),
            "queue": string("Scheduler queue (Volcano).", **{}) | {
                "x-kubernetes-validations": [{
                    "message": "spec.runPolicy.schedulingPolicy.queue is immutable",
                    "rule": "self == oldSelf"}]},
            "scheduleTimeoutSeconds": integer("Seconds the gang may wait to be scheduled.",
                                              minimum=0),
        }),
        "suspend": {"type": "boolean", "default": False,
                    "description": "true deletes the job's pods and keeps the job; false resumes it."},
        "ttlSecondsAfterFinished": integer(
            "Delete the job this many seconds after it finished.", minimum=0),
    }, default={})


def elastic_policy(kind):
    props = {
        "maxReplicas": integer("Upper bound of Worker replicas.", minimum=1),
        "maxRestarts": integer("torchrun --max-restarts.", minimum=0),
        "metrics": {
            "type": "array",
            "description": "autoscaling/v2 MetricSpecs for a HorizontalPodAutoscaler.",
            "items": obj("An autoscaling/v2 MetricSpec.", {"type": string("Metric source type.")},
                         required=["type"], **{"x-kubernetes-preserve-unknown-fields": True}),
        },
        "minReplicas": integer("Lower bound of Worker replicas.", minimum=1),
    }
    # Upstream's PaddleElasticPolicy has only these four; the rendezvous fields are torchrun's.
    if kind == "PaddleJob":
        return obj("Elastic training (Paddle elastic).", props)
    return obj("Elastic training (torchrun rendezvous).", dict(props, **{
        "nProcPerNode": integer("Deprecated: use spec.nprocPerNode.", minimum=1),
        "rdzvBackend": string("Rendezvous backend: c10d (default), etcd or etcd-v2."),
        "rdzvConf": {
            "type": "array", "description": "Extra rendezvous settings (PET_RDZV_CONF).",
            "items": obj("key=value", {"key": string("Setting name."),
                                       "value": string("Setting value.")}),
        },
        "rdzvHost": string("Rendezvous host (default <job>-worker-0)."),
        "rdzvId": string("Rendezvous id."),
        "rdzvPort": integer("Rendezvous port (default the Worker's pytorchjob-port).",
                            minimum=1, maximum=65535),
        "standalone": {"type": "boolean", "description": "torchrun --standalone."},
    }))


EXTRA_FIELDS = {
    "elasticPolicy": elastic_policy,
    "nprocPerNode": lambda _kind: string(
        "Processes per pod: auto (default), cpu, gpu or a positive integer.",
        pattern=r"^(auto|cpu|gpu|0*[1-9][0-9]*)$"),
    "successPolicy": lambda _kind: string(
        "Empty (default: the Chief, or Worker 0) or AllWorkers.", enum=["", "AllWorkers"]),
    "enableDynamicWorker": lambda _kind: {
        "type": "boolean", "description": "Sparse TF_CONFIG cluster for elastic workers."},
    "slotsPerWorker": lambda _kind: integer("MPI slots per worker in the hostfile (default 1).",
                                            minimum=1),
    "cleanPodPolicy": lambda _kind: dict(CLEAN_POD_POLICY, description=(
        "Deprecated MPIJob-level cleanPodPolicy; use spec.runPolicy.cleanPodPolicy.")),
    "mainContainer": lambda _kind: string(
        "Name of the launcher's MPI container (default: the first)."),
}


def status():
    time = lambda d: {"type": "string", "format": "date-time", "description": d}
    return obj("Observed state, written by the operator.", {
        "coach": coach_status(time),
        "completionTime": time("When the job finished."),
        "conditions": {
            "type": "array",
            "description": "Created, Running, Restarting, Succeeded, Suspended, Failed; the "
                           "last one is the job's state.",
            "items": obj("A job condition.", {
                "lastTransitionTime": time("When status last changed."),
                "lastUpdateTime": time("When the condition was last written."),
                "message": string("Human-readable detail."),
                "reason": string("<Kind><Reason>, e.g. PyTorchJobRunning."),
                "status": string("True, False or Unknown."),
                "type": string("Condition type."),
            }, required=["status", "type"]),
        },
        "lastReconcileTime": time("When the operator last reconciled the job."),
        "replicaStatuses": obj("Pod counts per replica type.", additionalProperties=obj(
            "Pods of one replica type.", {
                "active": integer("Running pods."),
                "failed": integer("Failed pods."),
                "labelSelector": obj("Selector of this type's pods.", {
                    "matchExpressions": {"type": "array", "items": obj("", {
                        "key": string(""), "operator": string(""),
                        "values": {"type": "array", "items": {"type": "string"}}},
                        required=["key", "operator"])},
                    "matchLabels": obj("", additionalProperties={"type": "string"}),
                }),
                "selector": string("Selector of this type's pods, as a string (scale subresource)."),
                "succeeded": integer("Succeeded pods."),
            })),
        "startTime": time("When the operator first saw the job (reset on resume)."),
    })


def coach_status(time):
    """status.coach: coach's own part (api/v1/training_job.proto CoachJobStatus), which upstream
    readers ignore. Bounds as coach's decoder holds them (api/v1/coach_status.h)."""
    count = lambda d: integer(d, minimum=0)
    return obj("coach's own status: the job's attempts (coach.dev/restart-scope: Job), its "
               "progress and an elastic job's Workers. Absent until any applies.", {
        "attempt": count("The attempt running now; 0 is the first."),
        "attemptRunningTime": time("When every replica of the current attempt was first seen "
                                   "running."),
        "inPlaceRestarts": count("Whole-job restarts in which coach-launch restarted the ranks "
                                 "inside their pods (coach.dev/restart-mode: InPlace)."),
        "restartTime": time("When the current attempt was asked for (the latest whole-job "
                            "restart)."),
        "disruptions": count("Whole-job restarts after a disruption the program did not cause "
                             "(eviction, preemption, a lost node); not counted against the "
                             "budget."),
        "progress": obj("The training's progress, as its replicas last reported it.", {
            "lastProgressTime": time("When the latest progress report was made."),
            "metrics": obj("The latest value of each reported metric.",
                           additionalProperties={"type": "number"},
                           maxProperties=MAX_PROGRESS_METRICS,
                           **{"x-kubernetes-validations": [{
                               "rule": "self.all(k, size(k) >= 1 && size(k) <= %d)"
                                       % MAX_METRIC_NAME_LENGTH,
                               "message": "a metric name must have 1 to %d characters"
                                          % MAX_METRIC_NAME_LENGTH}]}),
            "step": integer("The highest step of the latest report.", minimum=0, fmt="int64"),
            "stepsPerSecond": {"type": "number", "minimum": 0,
                               "description": "Steps per second recently; absent when unknown."},
        }),
        "restarts": count("Whole-job restarts that spent the budget (coach.dev/max-restarts)."),
        "restartsByType": obj("Counted restarts by the replica type that caused them.",
                              additionalProperties=count(""),
                              maxProperties=MAX_RESTARTS_BY_TYPE),
        "attempts": {
            "type": "array",
            "maxItems": MAX_ATTEMPTS,
            "description": "The job's attempts, oldest first: the first and the latest ones. The "
                           "last one runs while it has no endTime.",
            "items": attempt_status(time, count),
        },
        "elastic": elastic_status(time, count),
    })


def elastic_status(time, count):
    """status.coach.elastic (api/v1/training_job.proto ElasticStatus)."""
    return obj("An elastic job's Workers (elasticPolicy): how many train, and when that changed.", {
        "minWorkers": count("elasticPolicy's least number of Workers (minReplicas)."),
        "maxWorkers": count("elasticPolicy's greatest number of Workers (maxReplicas)."),
        "workers": count("Workers running now."),
        "changes": {
            "type": "array",
            "maxItems": MAX_WORKER_COUNT_CHANGES,
            "description": "Each change of workers since the job first ran at its full size, "
                           "oldest first: the first and the latest ones.",
            "items": obj("One change of the number of Workers running.", {
                "time": time("When it changed."),
                "workers": count("Workers running after it."),
                "step": integer("The highest step reported when it changed.", minimum=0,
                                fmt="int64"),
                "why": dict(string("What changed it, in words."),
                            maxLength=MAX_WORKER_COUNT_WHY_LENGTH),
            }, required=["workers"]),
        },
    }, required=["workers"])


def attempt_status(time, count):
    """One entry of status.coach.attempts (api/v1/training_job.proto JobAttempt)."""
    name = lambda d: dict(string(d), maxLength=MAX_ATTEMPT_NAME_LENGTH)
    return obj("One attempt: when it ran, where, and what ended it.", {
        "attempt": count("0 is the first."),
        "startTime": time("When it was asked for: the job's start, or the restart that began it."),
        "runningTime": time("When every replica of it was first seen running."),
        "endTime": time("When it ended; absent while it runs."),
        "reason": name("What ended it: Succeeded, Failed, OOMKilled, Evicted, Preempted, "
                       "Disrupted, NodeLost, Deleted, Stalled, DeadlineExceeded, "
                       "BackoffLimitExceeded, Invalid."),
        "message": dict(string("The same in words."), maxLength=MAX_ATTEMPT_MESSAGE_LENGTH),
        "replica": name("The replica that ended it, as `coach logs --replica` names it."),
        "exitCode": integer("That replica's exit code."),
        "signal": name("The signal that ended it (exit code 128 + its number), e.g. SIGKILL."),
        "nodes": obj("Where its replicas ran: replica -> node.",
                     additionalProperties=dict(string(""), maxLength=MAX_ATTEMPT_NAME_LENGTH),
                     maxProperties=MAX_ATTEMPT_NODES),
        "lastStep": integer("The highest step its replicas reported.", minimum=0, fmt="int64"),
        "counted": {"type": "boolean",
                    "description": "The restart after it spent the job's budget."},
        "stepsLost": integer("The steps the next attempt did again: lastStep less the first "
                             "step the next attempt reported.", minimum=0, fmt="int64"),
    }, required=["attempt"])


def strip_empty_descriptions(s):
    if isinstance(s, dict):
        return {k: strip_empty_descriptions(v) for k, v in s.items()
                if not (k == "description" and v == "")}
    if isinstance(s, list):
        return [strip_empty_descriptions(v) for v in s]
    return s


def crd(k):
    specs = obj("Replica type (" + ", ".join(k["types"]) + ") to its replica spec.",
                additionalProperties=replica_spec(k), minProperties=1,
                maxProperties=REPLICA_TYPES_MAX)
    specs["x-kubernetes-validations"] = [_known_types(k)] + [
        {"rule": r, "message": m} for r, m in RULES.get(k["kind"], [])]
    spec_props = {k["key"]: specs}
    spec_props["runPolicy"] = run_policy()
    for f in k["extra"]:
        spec_props[f] = EXTRA_FIELDS[f](k["kind"])
    spec_props = dict(sorted(spec_props.items()))
    schema = obj(k["kind"] + " (kubeflow.org/v1), served by coach.", {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {"name": {
            "type": "string", "maxLength": 63, "pattern": DNS1035,
            "description": "A DNS-1035 label: the job's Services are named after it."}}},
        "spec": obj("Desired state.", spec_props, required=[k["key"]]),
        "status": status(),
    })
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "additionalPrinterColumns": [
            {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string",
             "description": "The last condition: Created, Running, Restarting, Succeeded, "
                            "Suspended or Failed."},
            {"jsonPath": ".status.coach.progress.step", "name": "Step", "type": "integer",
             "description": "The training step of the last progress report."},
            {"jsonPath": ".status.coach.progress.lastProgressTime", "name": "Progress",
             "type": "date", "description": "time of the last progress report"},
            {"jsonPath": ".status.coach.attempt", "name": "Attempt", "type": "integer",
             "priority": 1, "description": "The attempt running now (0 is the first)."},
            {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        ],
        "schema": {"openAPIV3Schema": strip_empty_descriptions(schema)},
        "subresources": {"status": {}},
    }
    if k["scale"]:
        version["subresources"]["scale"] = {
            "specReplicasPath": ".spec.%s.Worker.replicas" % k["key"],
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        }
    singular = k["kind"].lower()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "%s.kubeflow.org" % k["plural"],
            "labels": {"app.kubernetes.io/name": "coach", "app.kubernetes.io/part-of": "coach"},
            "annotations": {"coach.kubeflow.org/generated-by": "tools/gen_crds.py"},
        },
        "spec": {
            "group": "kubeflow.org",
            "names": {"kind": k["kind"], "listKind": k["kind"] + "List", "plural": k["plural"],
                      "singular": singular, "categories": CATEGORIES},
            "scope": "Namespaced",
            "versions": [version],
        },
    }


# ---- a small YAML writer (block style; strings quoted with JSON rules when needed) ----
_PLAIN = re.compile(r"^[A-Za-z_./][A-Za-z0-9_./ -]*$")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if v is None:
        return "null"
    s = str(v)
    if (s and _PLAIN.match(s) and s.lower() not in _RESERVED and not s.endswith(" ")
            and ": " not in s and " #" not in s):
        return s
    return json.dumps(s)


def to_yaml(v, indent=0):
    pad = " " * indent
    lines = []
    if isinstance(v, dict):
        if not v:
            return [pad + "{}"]
        for key, val in v.items():
            if isinstance(val, (dict, list)) and val:
                lines.append("%s%s:" % (pad, _scalar(key)))
                lines.extend(to_yaml(val, indent + (0 if isinstance(val, list) else 2)))
            else:
                empty = "{}" if isinstance(val, dict) else "[]" if isinstance(val, list) else None
                lines.append("%s%s: %s" % (pad, _scalar(key), empty or _scalar(val)))
    elif isinstance(v, list):
        for item in v:
            if isinstance(item, (dict, list)) and item:
                sub = to_yaml(item, indent + 2)
                lines.append(pad + "- " + sub[0].lstrip())
                lines.extend(sub[1:])
            else:
                lines.append(pad + "- " + ("{}" if item == {} else "[]" if item == [] else _scalar(item)))
    else:
        lines.append(pad + _scalar(v))
    return lines


def render(k):
    head = ("# Generated by tools/gen_crds.py; do not edit. coach's CRD for %s (kubeflow.org/v1).\n"
            % k["kind"])
    return head + "---\n" + "\n".join(to_yaml(crd(k))) + "\n"


def write_or_check(texts, check, tool):
    """Writes each path's text; with `check`, writes nothing and says which files differ.
    Returns the exit code (1: a file is stale)."""
    stale = []
    os.makedirs(OUT_DIR, exist_ok=True)
    for path, text in texts.items():
        if check:
            try:
                with open(path) as f:
                    if f.read() != text:
                        stale.append(path)
            except FileNotFoundError:
                stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("stale (run %s): %s" % (tool, " ".join(stale)), file=sys.stderr)
        return 1
    return 0


def main(argv):
    texts = {os.path.join(OUT_DIR, "kubeflow.org_%s.yaml" % k["plural"]): render(k) for k in KINDS}
    return write_or_check(texts, "--check" in argv, "tools/gen_crds.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
