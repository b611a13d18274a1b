#!/usr/bin/env python3
"""Generates coach's CustomResourceDefinitions for Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1):
TrainJob, TrainingRuntime and ClusterTrainingRuntime.

Output: charts/coach/crds/trainer.kubeflow.org_<plural>.yaml (committed: Helm reads them).

  tools/gen_trainer_crds.py            # (re)write the files
  tools/gen_trainer_crds.py --check    # exit 1 when a committed file differs from what would be generated

Design (as tools/gen_crds.py for kubeflow.org/v1; see charts/coach/README.md):
- Every field of upstream's API outside the pod templates is typed as upstream types it, with
  its defaults (runtimeRef.apiGroup/kind, managedBy, suspend, the MPI and coscheduling
  defaults, JobSet's replicas and groupName), its CEL rules with their messages, and its list
  limits and list-map keys (so a duplicate key is refused as upstream refuses it).
- Pod templates (in a runtime's replicated jobs and in a TrainJob's runtimePatches) and the
  rest of a Job spec keep every field (x-kubernetes-preserve-unknown-fields); what coach reads
  from them (containers by name, image, command, args, env, ports, volume mounts, the Job's
  counts) is typed. Upstream inlines the whole PodSpec: ~900 KB per runtime CRD, too big for
  client-side `kubectl apply`.
- Never stricter than upstream: tools/suites/crd_compat.sh applies a corpus under both.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import gen_crds  # noqa: E402
from gen_crds import (QUANTITY, OUT_DIR, integer, obj, string, strip_empty_descriptions, to_yaml,
                      write_or_check)

GROUP = "trainer.kubeflow.org"
DNS1035 = "^[a-z]([-a-z0-9]*[a-z0-9])?$"
IMMUTABLE = {"message": "field is immutable", "rule": "self == oldSelf"}
# JobSet's own wording for its immutable fields.
JOBSET_IMMUTABLE = {"message": "Value is immutable", "rule": "self == oldSelf"}
PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}


def immutable(schema, rule=IMMUTABLE):
    schema.setdefault("x-kubernetes-validations", []).append(dict(rule))
    return schema


def boolean(desc, default=None):
    s = {"type": "boolean", "description": desc}
    if default is not None:
        s["default"] = default
    return s


def strings(desc, max_items=None, max_length=None, list_type=None):
    item = {"type": "string"}
    if max_length is not None:
        item["maxLength"] = max_length
    s = {"type": "array", "description": desc, "items": item}
    if max_items is not None:
        s["maxItems"] = max_items
    if list_type:
        s["x-kubernetes-list-type"] = list_type
    return s


def list_map(desc, item, keys, max_items=None):
    s = {"type": "array", "description": desc, "items": item,
         "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys}
    if max_items is not None:
        s["maxItems"] = max_items
    return s


def object_meta():
    """The part of ObjectMeta a template carries; upstream prunes everything else."""
    str_map = lambda d: obj(d, additionalProperties={"type": "string"})
    return obj("Labels and annotations for what this template makes.", {
        "annotations": str_map("Annotations."),
        "finalizers": strings("Finalizers."),
        "labels": str_map("Labels."),
        "name": string("Name."),
        "namespace": string("Namespace."),
    })


def key_ref(desc):
    return obj(desc, {"key": string("The key."),
                      "name": dict(string("Name of the object."), default=""),
                      "optional": boolean("Whether it may be missing.")},
               required=["key"], **{"x-kubernetes-map-type": "atomic"})


def env_var(max_items=None):
    """A core/v1 EnvVar list, whole: the merge upserts it by name."""
    item = obj("A core/v1 EnvVar.", {
        "name": string("Variable name."),
        "value": string("Value."),
        "valueFrom": obj("Where the value comes from.", {
            "configMapKeyRef": key_ref("A ConfigMap key."),
            "fieldRef": obj("A field of the pod.", {
                "apiVersion": string("Schema version of fieldPath."),
                "fieldPath": string("The field."),
            }, required=["fieldPath"], **{"x-kubernetes-map-type": "atomic"}),
            "fileKeyRef": obj("A key of an env file in a volume.", {
                "key": string("The key."),
                "optional": boolean("Whether it may be missing.", default=False),
                "path": string("The file, relative to the volume."),
                "volumeName": string("The volume."),
            }, required=["key", "path", "volumeName"], **{"x-kubernetes-map-type": "atomic"}),
            "resourceFieldRef": obj("A resource of a container.", {
                "containerName": string("The container."),
                "divisor": QUANTITY,
                "resource": string("The resource."),
            }, required=["resource"], **{"x-kubernetes-map-type": "atomic"}),
            "secretKeyRef": key_ref("A Secret key."),
        }),
    }, required=["name"])
    return list_map("Environment variables, by name.", item, ["name"], max_items)


def container():
    """A core/v1 Container kept whole; what the merge with a TrainJob reads is typed."""
    return obj("A core/v1 Container.", {
        "args": strings("Arguments.", list_type="atomic"),
        "command": strings("Entrypoint.", list_type="atomic"),
        "env": env_var(),
        "image": string("Container image."),
        "name": string("Container name; `node` is the trainer's."),
        "ports": list_map("Ports, by port and protocol.", obj("A core/v1 ContainerPort.", {
            "containerPort": integer("The port."),
            "name": string("Port name."),
            "protocol": dict(string("TCP (default), UDP or SCTP."), default="TCP"),
        }, required=["containerPort"], **PRESERVE), ["containerPort", "protocol"]),
        "volumeMounts": list_map("Volume mounts, by path.", obj("A core/v1 VolumeMount.", {
            "mountPath": string("Where."), "name": string("The volume."),
        }, required=["mountPath", "name"], **PRESERVE), ["mountPath"]),
    }, required=["name"], **PRESERVE)


def named_list(desc, item_desc, max_items=None):
    return list_map(desc, obj(item_desc, {"name": string("Name.")}, required=["name"], **PRESERVE),
                    ["name"], max_items)


def pod_spec():
    return obj("A core/v1 PodSpec, kept whole.", {
        "containers": list_map("Containers, by name.", container(), ["name"]),
        "imagePullSecrets": list_map("Image pull secrets, by name.", obj(
            "A reference to a Secret.", {"name": dict(string("Secret name."), default="")},
            **{"x-kubernetes-map-type": "atomic"}), ["name"]),
        "initContainers": list_map("Init containers, by name.", container(), ["name"]),
        "resourceClaims": named_list("Resource claims, by name.", "A core/v1 PodResourceClaim."),
        "schedulingGates": named_list("Scheduling gates, by name.", "A core/v1 PodSchedulingGate."),
        "tolerations": {"type": "array", "x-kubernetes-list-type": "atomic",
                        "description": "core/v1 Tolerations.",
                        "items": obj("A core/v1 Toleration.", **PRESERVE)},
        "volumes": named_list("Volumes, by name.", "A core/v1 Volume."),
    }, required=["containers"], **PRESERVE)


def job_spec():
    i32 = lambda d: integer(d)
    return obj("A batch/v1 JobSpec, kept whole.", {
        "activeDeadlineSeconds": integer("Seconds the Job may run.", fmt="int64"),
        "backoffLimit": i32("Pod failures before the Job fails (default 6)."),
        "backoffLimitPerIndex": i32("Failures per index."),
        "completionMode": string("NonIndexed or Indexed (JobSet: Indexed)."),
        "completions": i32("Pods that must succeed; set to the pod count."),
        "managedBy": string("The Job's controller."),
        "manualSelector": boolean("Whether selector is given."),
        "maxFailedIndexes": i32("Failed indexes before the Job fails."),
        "parallelism": i32("Pods at once: the job's pod count (the trainer's: numNodes)."),
        "podFailurePolicy": obj("batch/v1 PodFailurePolicy.", **PRESERVE),
        "podReplacementPolicy": string("When to replace a terminating pod."),
        "selector": obj("Pod selector.", **PRESERVE),
        "successPolicy": obj("batch/v1 SuccessPolicy.", **PRESERVE),
        "suspend": boolean("Whether the Job is suspended."),
        "template": obj("A core/v1 PodTemplateSpec.", {
            "metadata": obj("Labels and annotations of the pods.", **PRESERVE),
            "spec": pod_spec(),
        }, **PRESERVE),
        "ttlSecondsAfterFinished": i32("Seconds to keep the finished Job."),
    }, required=["template"], **PRESERVE)


def jobset_spec():
    """jobset.x-k8s.io/v1alpha2 JobSetSpec: typed down to the Job spec, with JobSet's rules."""
    replicated_job = obj("A group of identical Jobs.", {
        "dependsOn": immutable(list_map("Jobs this one waits for.", obj("A dependency.", {
            "name": string("The replicated job."),
            "status": string("Ready or Complete.", enum=["Ready", "Complete"]),
        }, required=["name", "status"]), ["name"], max_items=5), JOBSET_IMMUTABLE),
        "groupName": dict(string("Group of replicated jobs."), default="default"),
        "name": string("Name; ancestor jobs: node, dataset-initializer, model-initializer, "
                       "launcher."),
        "replicas": dict(integer("Jobs of this template."), default=1),
        "template": obj("A batch/v1 JobTemplateSpec.", {
            "metadata": object_meta(),
            "spec": job_spec(),
        }),
    }, required=["name", "template"])
    pvc = obj("A core/v1 PersistentVolumeClaim template.", {
        "apiVersion": string("apiVersion."),
        "kind": string("kind."),
        "metadata": object_meta(),
        "spec": obj("core/v1 PersistentVolumeClaimSpec.", **PRESERVE),
        "status": obj("core/v1 PersistentVolumeClaimStatus.", **PRESERVE),
    })
    spec = obj("A jobset.x-k8s.io/v1alpha2 JobSetSpec.", {
        "coordinator": obj("The coordinator pod.", {
            "jobIndex": {"type": "integer", "description": "Job index."},
            "podIndex": {"type": "integer", "description": "Pod index."},
            "replicatedJob": string("Replicated job."),
        }, required=["replicatedJob"]),
        "failurePolicy": immutable(obj("Restarts of the whole JobSet.", {
            "maxRestarts": integer("Restarts allowed."),
            "restartStrategy": dict(string("How Jobs are recreated.",
                                           enum=["Recreate", "BlockingRecreate", "InPlaceRestart"]),
                                    default="Recreate"),
            "rules": {"type": "array", "description": "Failure rules, first match wins.",
                      "items": obj("A failure rule.", {
                          "action": string("What to do.", enum=[
                              "FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts",
                              "RestartJob", "RestartJobAndIgnoreMaxRestarts"]),
                          "name": string("Rule name."),
                          "onJobFailureMessagePatterns": strings("Job failure messages."),
                          "onJobFailureReasons": strings("Job failure reasons."),
                          "targetReplicatedJobs": strings("Replicated jobs.", list_type="atomic"),
                      }, required=["action", "name"])},
        }), JOBSET_IMMUTABLE),
        "managedBy": string("The JobSet's controller."),
        "network": immutable(obj("Pod DNS.", {
            "enableDNSHostnames": boolean("Pod hostnames resolve."),
            "publishNotReadyAddresses": boolean("DNS before readiness."),
            "subdomain": string("Headless Service name (default: the job's)."),
        }), JOBSET_IMMUTABLE),
        "replicatedJobs": list_map("The Jobs, by name.", replicated_job, ["name"]),
        "startupPolicy": immutable(obj("Start order.", {
            "startupPolicyOrder": string("AnyOrder or InOrder.", enum=["AnyOrder", "InOrder"]),
        }, required=["startupPolicyOrder"]), JOBSET_IMMUTABLE),
        "successPolicy": immutable(obj("When the JobSet succeeds.", {
            "operator": string("All or Any.", enum=["All", "Any"]),
            "targetReplicatedJobs": strings("Replicated jobs.", list_type="atomic"),
        }, required=["operator"]), JOBSET_IMMUTABLE),
        "suspend": boolean("Whether suspended."),
        "ttlSecondsAfterFinished": integer("Seconds to keep the finished JobSet.", minimum=0),
        "volumeClaimPolicies": immutable({
            "type": "array", "maxItems": 50, "x-kubernetes-list-type": "atomic",
            "description": "PVCs made per JobSet.",
            "items": obj("PVC templates and their retention.", {
                "retentionPolicy": obj("What happens to the PVCs.", {
                    "whenDeleted": dict(string("Delete or Retain.", enum=["Delete", "Retain"]),
                                        default="Delete")}),
                "templates": {"type": "array", "maxItems": 50, "x-kubernetes-list-type": "atomic",
                              "description": "PVC templates.", "items": pvc},
            }, **{"x-kubernetes-validations": [{
                "message": "namespace cannot be set for VolumeClaimPolicies templates",
                # `namespace` is a CEL reserved word: Kubernetes declares the field as
                # `__namespace__`, and takes the bare name in new rules only from 1.32 on (1.28
                # to 1.31 refuse the CRD: "undefined field 'namespace'"). The escaped name works
                # on every version (docs/kubernetes.md#kubernetes-versions).
                "rule": "self.templates.all(t, !has(t.metadata.__namespace__) || "
                        "size(t.metadata.__namespace__) == 0)"}]}),
        }, JOBSET_IMMUTABLE),
    })
    spec["x-kubernetes-validations"] = [{
        "message": "StartupPolicy and DependsOn APIs are mutually exclusive",
        "rule": "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' "
                "&& self.replicatedJobs.exists(x, has(x.dependsOn)))"}]
    return spec


def ml_policy():
    return obj("The framework: at most one of torch, mpi, jax, xgboost, flux; none is plain ML.", {
        "flux": obj("Flux Framework.", {
            "numProcPerNode": dict(integer("Processes per node."), default=1, **{
                "x-kubernetes-validations": [{"message": "NumProcPerNode in fluxPolicy must be >= 1",
                                              "rule": "self >= 1"}]}),
        }),
        "jax": obj("JAX: JAX_* env on the trainer's node container."),
        "mpi": obj("MPI: hostfile, SSH keys, launcher.", {
            "mpiImplementation": dict(string("OpenMPI.", enum=["OpenMPI", ""]), default="OpenMPI"),
            "numProcPerNode": dict(integer("Slots per node."), default=1),
            "runLauncherAsNode": boolean("The launcher is also a node.", default=False),
            "sshAuthMountPath": dict(string("Where the SSH keys are mounted."),
                                     default="/root/.ssh", maxLength=4096),
        }),
        "numNodes": integer("Trainer pods (default 1)."),
        "torch": obj("PyTorch: PET_* env for torchrun.", {
            "envInjection": obj("Other containers that get the PET_* env.", {
                "targets": list_map("Containers by job.", obj("One job's containers.", {
                    "containerNames": {
                        "type": "array", "minItems": 1, "maxItems": 8,
                        "x-kubernetes-list-type": "set", "description": "Container names.",
                        "items": {"type": "string", "maxLength": 63},
                        "x-kubernetes-validations": [{
                            "message": "containerNames must not include the main node container "
                                       "because PET_* envs are always injected into it",
                            "rule": "!self.exists(c, c == 'node')"}]},
                    "jobName": dict(string("Replicated job."), minLength=1, maxLength=253),
                }, required=["containerNames", "jobName"]), ["jobName"], max_items=16),
            }),
        }),
        "xgboost": obj("XGBoost: DMLC_* env."),
    }, **{"x-kubernetes-validations": [{
        "message": "Only one of the policy can be configured",
        "rule": "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),"
                "has(self.flux)].filter(x, x).size() <= 1"}]})


def runtime_spec():
    return obj("TrainingRuntimeSpec: the framework, gang scheduling and the JobSet template.", {
        "mlPolicy": ml_policy(),
        "podGroupPolicy": obj("Gang scheduling.", {
            "coscheduling": obj("scheduler-plugins coscheduling.", {
                "scheduleTimeoutSeconds": dict(integer("Seconds to wait for the gang."),
                                               default=60)}),
            "volcano": obj("Volcano.", {
                "networkTopology": obj("Network topology placement.", {
                    "highestTierAllowed": {"type": "integer", "default": 1,
                                           "description": "Highest tier to span."},
                    "mode": dict(string("hard or soft.", enum=["hard", "soft"]), default="hard"),
                })}),
        }),
        "template": obj("The JobSet template.", {
            "metadata": object_meta(),
            "spec": jobset_spec(),
        }, minProperties=1),
    }, minProperties=1)


def pod_spec_patch():
    """A runtime patch's pod spec: upstream's PodSpecPatch fields typed with its rules; other
    fields kept, so a patch written for a newer upstream is not cut."""
    cpatch = obj("A container patch.", {
        "env": env_var(128),
        "name": dict(string("The runtime's container to patch."), minLength=1, maxLength=253),
        "securityContext": obj("core/v1 SecurityContext.", **PRESERVE),
        "volumeMounts": list_map("Volume mounts, by name.", obj("A core/v1 VolumeMount.", {
            "mountPath": string("Where."), "mountPropagation": string("Propagation."),
            "name": string("The volume."), "readOnly": boolean("Read only."),
            "recursiveReadOnly": string("Recursive read only."), "subPath": string("Sub path."),
            "subPathExpr": string("Sub path expression."),
        }, required=["mountPath", "name"]), ["name"], max_items=128),
    }, required=["name"], **PRESERVE)
    containers = lambda d: immutable(list_map(d, cpatch, ["name"], max_items=64))
    return obj("Pod spec fields to patch.", {
        "affinity": obj("core/v1 Affinity.", **PRESERVE),
        "containers": containers("Containers to patch, by name."),
        "imagePullSecrets": immutable(list_map("Image pull secrets.", obj(
            "A reference to a Secret.", {"name": dict(string("Secret name."), default="")},
            **{"x-kubernetes-map-type": "atomic"}), ["name"], max_items=64)),
        "initContainers": containers("Init containers to patch, by name."),
        "nodeSelector": obj("Node labels.", additionalProperties={"type": "string"}),
        "schedulingGates": list_map("Scheduling gates.", obj("A scheduling gate.", {
            "name": string("Name.")}, required=["name"]), ["name"], max_items=16),
        "securityContext": immutable(obj("core/v1 PodSecurityContext.", **PRESERVE)),
        "serviceAccountName": immutable(dict(string("ServiceAccount."), maxLength=253)),
        "terminationGracePeriodSeconds": immutable(
            integer("Grace period.", minimum=0, fmt="int64")),
        "tolerations": {"type": "array", "maxItems": 128, "x-kubernetes-list-type": "atomic",
                        "description": "core/v1 Tolerations.",
                        "items": obj("A core/v1 Toleration.", **PRESERVE)},
        "volumes": immutable(named_list("Volumes, by name.", "A core/v1 Volume.", 128)),
    }, **PRESERVE)


def runtime_patch():
    template = lambda desc, spec: obj(desc, {"metadata": object_meta(), "spec": spec})
    rjob = obj("A replicated job to patch.", {
        "name": dict(string("The runtime's replicated job."), minLength=1, maxLength=253),
        "template": template("Job template patch.", obj("Job spec patch.", {
            "template": template("Pod template patch.", pod_spec_patch())})),
    }, required=["name"])
    return obj("One manager's patch of the runtime.", {
        "manager": immutable(dict(string("Who owns this patch: a domain-prefixed path "
                                         "(example.com/x)."), minLength=1, maxLength=253)),
        "time": {"type": "string", "format": "date-time",
                 "description": "When the patch was last changed (the webhook sets it)."},
        "trainingRuntimeSpec": obj("Patch of the runtime spec.", {
            "template": template("JobSet template patch.", obj("JobSet spec patch.", {
                "replicatedJobs": list_map("Replicated jobs to patch, by name.", rjob, ["name"],
                                           max_items=100)})),
        }),
    }, required=["manager"])


def initializer_source(what):
    return obj("Where the %s comes from." % what, {
        "env": env_var(128),
        "secretRef": obj("Secret with credentials, as envFrom.", {
            "name": dict(string("Secret name."), default="")},
            **{"x-kubernetes-map-type": "atomic"}),
        "storageUri": dict(string("scheme://... (hf://, s3://, ...)."), maxLength=2048, **{
            "x-kubernetes-validations": [{
                "message": "storageUri may be empty, or it must be a valid URI (scheme://...)",
                "rule": "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')"}]}),
    })


def trainjob_spec():
    ctl = "trainer.kubeflow.org/trainjob-controller"
    return obj("Desired state.", {
        "activeDeadlineSeconds": immutable(integer(
            "Fail the job after this many seconds (not counting suspended time).",
            minimum=1, fmt="int64")),
        "initializer": immutable(obj("Dataset and model initializers.", {
            "dataset": initializer_source("dataset"),
            "model": initializer_source("model"),
        })),
        "managedBy": dict(string("The controller of this TrainJob."), default=ctl, maxLength=253, **{
            "x-kubernetes-validations": [
                {"message": "ManagedBy must be %s or kueue.x-k8s.io/multikueue if set" % ctl,
                 "rule": "self in ['%s', 'kueue.x-k8s.io/multikueue']" % ctl},
                dict(IMMUTABLE)]}),
        "runtimePatches": list_map("Patches of the runtime, by manager, applied in order.",
                                   runtime_patch(), ["manager"], max_items=16),
        "runtimeRef": immutable(obj("The runtime to build from.", {
            "apiGroup": dict(string("API group."), default=GROUP, maxLength=253),
            "kind": dict(string("ClusterTrainingRuntime or TrainingRuntime."),
                         default="ClusterTrainingRuntime", maxLength=253),
            "name": dict(string("Runtime name."), minLength=1, maxLength=253),
        }, required=["name"])),
        "suspend": boolean("true deletes the job's pods and keeps the job.", default=False),
        "trainer": immutable(obj("The trainer's node container.", {
            "args": strings("Arguments.", 128, 1048576, "atomic"),
            "command": strings("Entrypoint.", 128, 1048576, "atomic"),
            "env": env_var(128),
            "image": dict(string("Image."), maxLength=500),
            "numNodes": integer("Trainer pods."),
            "numProcPerNode": integer("Processes per pod."),
            "resourcesPerNode": obj("Merged key by key into the node container's resources.", {
                "claims": list_map("Resource claims.", obj("A claim.", {
                    "name": string("Name."), "request": string("Request.")},
                    required=["name"]), ["name"]),
                "limits": obj("Limits.", additionalProperties=QUANTITY),
                "requests": obj("Requests.", additionalProperties=QUANTITY),
            }),
        })),
    }, required=["runtimeRef"])


def trainjob_coach_status():
    """status.coach of a TrainJob: coach's own status (gen_crds.coach_status) beside the job's
    conditions, replica counts and times in coach's vocabulary, which upstream readers of
    status.conditions must not see (api/v1/codec/train_job_decoder.cc)."""
    v1 = gen_crds.status()
    v1["properties"]["replicaStatuses"]["additionalProperties"]["properties"]["replicas"] = integer(
        "Pods of this replicated job (from the runtime).")
    props = dict(v1["properties"].pop("coach")["properties"])
    props.update(v1["properties"])
    return obj("coach's view of the job: its conditions (Created, Running, Restarting, "
               "Succeeded, Suspended, Failed; the last one is the PHASE column), pod counts per "
               "replicated job, times, attempts and progress. Upstream readers ignore it.", props)


def trainjob_status():
    time = lambda d: {"type": "string", "format": "date-time", "description": d}
    count = lambda d: integer(d, minimum=0)
    return obj("Observed state.", {
        "conditions": list_map("Suspended, Complete, Failed; the last one is the STATE.", obj(
            "A metav1.Condition.", {
                "lastTransitionTime": time("When status last changed."),
                "message": dict(string("Detail."), maxLength=32768),
                "observedGeneration": integer("Generation seen.", minimum=0, fmt="int64"),
                "reason": dict(string("CamelCase reason."), minLength=1, maxLength=1024,
                               pattern="^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
                "status": string("True, False or Unknown.", enum=["True", "False", "Unknown"]),
                "type": dict(string("Condition type."), maxLength=316, pattern=(
                    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")),
            }, required=["lastTransitionTime", "message", "reason", "status", "type"]),
            ["type"], max_items=8),
        "jobsStatus": list_map("Jobs of each replicated job.", obj("One replicated job.", {
            "active": count("Jobs with a running or pending pod."),
            "failed": count("Failed Jobs."),
            "name": dict(string("Replicated job."), minLength=1, maxLength=253),
            "ready": count("Jobs whose ready and succeeded pods reach parallelism."),
            "succeeded": count("Succeeded Jobs."),
            "suspended": count("Suspended Jobs."),
        }, required=["active", "failed", "name", "ready", "succeeded", "suspended"]),
            ["name"], max_items=100),
        "coach": trainjob_coach_status(),
        "trainerStatus": obj("Progress the trainer reported.", {
            "estimatedRemainingSeconds": count("Seconds left."),
            "lastUpdatedTime": time("When reported."),
            "metrics": {"type": "array", "maxItems": 256, "x-kubernetes-list-type": "atomic",
                        "description": "Metrics.", "items": obj("A metric.", {
                            "name": dict(string("Name."), minLength=1, maxLength=64),
                            "value": dict(string("Value."), minLength=1, maxLength=64),
                        }, required=["name", "value"])},
            "progressPercentage": integer("Percent done.", minimum=0, maximum=100),
        }, **{"x-kubernetes-validations": [{
            "message": "lastUpdatedTime is required when trainerStatus is present",
            "rule": "has(self.lastUpdatedTime)"}]}),
    }, minProperties=1)


KINDS = [
    dict(kind="TrainJob", plural="trainjobs", scope="Namespaced"),
    dict(kind="TrainingRuntime", plural="trainingruntimes", scope="Namespaced"),
    dict(kind="ClusterTrainingRuntime", plural="clustertrainingruntimes", scope="Cluster"),
]


def crd(k):
    props = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
             "metadata": {"type": "object"}}
    version = {"name": "v1alpha1", "served": True, "storage": True}
    if k["kind"] == "TrainJob":
        props["spec"] = trainjob_spec()
        props["status"] = trainjob_status()
        schema = obj("TrainJob (trainer.kubeflow.org/v1alpha1), served by coach.", props, **{
            "x-kubernetes-validations": [
                {"message": "metadata.name must match RFC 1035 DNS label format",
                 "rule": "self.metadata.name.matches('%s')" % DNS1035},
                {"message": "metadata.name must be no more than 63 characters",
                 "rule": "size(self.metadata.name) <= 63"}]})
        version["additionalPrinterColumns"] = [
            {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string",
             "description": "The last condition's type: Suspended, Complete or Failed; empty "
                            "while running."},
            {"jsonPath": ".status.coach.conditions[-1:].type", "name": "Phase", "type": "string",
             "description": "coach's view: Created (pending), Queued (held by Kueue), Running, "
                            "Restarting, Succeeded, Suspended or Failed."},
            {"jsonPath": ".status.coach.progress.step", "name": "Step", "type": "integer",
             "description": "The training's latest reported step.", "priority": 1},
            {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        ]
        version["subresources"] = {"status": {}}
    else:
        props["spec"] = runtime_spec()
        schema = obj("%s (trainer.kubeflow.org/v1alpha1): a template TrainJobs refer to."
                     % k["kind"], props)
    version["schema"] = {"openAPIV3Schema": strip_empty_descriptions(schema)}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "%s.%s" % (k["plural"], GROUP),
            "labels": {"app.kubernetes.io/name": "coach", "app.kubernetes.io/part-of": "coach"},
            "annotations": {"coach.kubeflow.org/generated-by": "tools/gen_trainer_crds.py"},
        },
        "spec": {
            "group": GROUP,
            "names": {"kind": k["kind"], "listKind": k["kind"] + "List", "plural": k["plural"],
                      "singular": k["kind"].lower()},
            "scope": k["scope"],
            "versions": [version],
        },
    }


def render(k):
    head = ("# Generated by tools/gen_trainer_crds.py; do not edit. coach's CRD for %s "
            "(trainer.kubeflow.org/v1alpha1).\n" % k["kind"])
    return head + "---\n" + "\n".join(to_yaml(crd(k))) + "\n"


def main(argv):
    texts = {os.path.join(OUT_DIR, "%s_%s.yaml" % (GROUP, k["plural"])): render(k) for k in KINDS}
    return write_or_check(texts, "--check" in argv, "tools/gen_trainer_crds.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
