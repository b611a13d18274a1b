#pragma once

// Admission checks for training jobs: upstream's validating webhooks (kubeflow
// training-operator v1.9.4) plus everything that would crash or mislead coach later.
// Meant for defaulted jobs (SetDefaults first, as upstream's mutating webhook runs before
// its validating one); unset replicas count as their default.

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "api/v1/field_error.h"
#include "api/v1/training_job.pb.h"

namespace coach::api::v1 {

// Every problem of `job`, in a stable order; empty when the job is valid. Paths use the
// manifest's JSON names, e.g. "spec.pytorchReplicaSpecs.Worker.replicas" or
// "spec.tfReplicaSpecs.PS.template.spec.containers[0].image"; messages say what is
// allowed, e.g. "must be >= 0, got -1".
// Rules: metadata.name a DNS-1035 label; namespace a DNS-1123 label; label and annotation
// keys qualified names, label values valid; at least one replica spec, each of a known
// type; replicas >= 0; restartPolicy Always|OnFailure|Never|ExitCode; a pod template that is
// a JSON object whose fields have core/v1's types (pod_template.h), with at least one
// container, each with a DNS-1123 name (unique) and an image, ports in 1..65535; a container with
// the kind's default name (not MPIJob); PyTorch Master replicas = 1; TF at most one Chief/Master;
// XGBoost exactly one Master with 1 replica; MPI a Launcher with 1 replica and slotsPerWorker >= 1;
// runPolicy cleanPodPolicy None|Running|All, ttl/deadline/backoff >= 0, managedBy one of upstream's
// two values, schedulingPolicy minAvailable in 1..total replicas and quantities well formed;
// nprocPerNode auto|cpu|gpu|positive integer; elastic min/max >= 1 and min <= max,
// rdzvBackend c10d|etcd|etcd-v2, rdzvPort in 1..65535, a Worker spec, nProcPerNode not
// together with nprocPerNode, metrics as ValidateElasticMetrics says; successPolicy "" or
// AllWorkers; the whole job (its protobuf encoding) at most kMaxJobBytes (an error with an
// empty path).
std::vector<FieldError> Validate(const TrainingJob& job);

// Bounds of spec.elasticPolicy.metrics: a PyTorchJob's become its HorizontalPodAutoscaler's
// (docs/kubernetes.md), which the operator caches and compares on every pass; real ones hold a
// few MetricSpecs of some hundred bytes each.
inline constexpr size_t kMaxElasticMetrics = 16;
inline constexpr size_t kMaxElasticMetricsBytes = 16 * 1024;

// The problems of spec.elasticPolicy.metrics (ElasticPolicy.metrics_json) of a job of `kind`,
// part of Validate: at most kMaxElasticMetricsBytes of JSON, a JSON array of at most
// kMaxElasticMetrics objects; for a PyTorchJob, whose metrics upstream hands to an autoscaling/v2
// HorizontalPodAutoscaler, each with a `type` of autoscaling/v2 (ContainerResource, External,
// Object, Pods, Resource) and that type's source (`resource` for Resource, ...) as an object, as
// the API server requires of an HPA. A PaddleJob's are kept unused, as upstream keeps them.
// Empty when metrics_json is empty (no metrics) or valid.
std::vector<FieldError> ValidateElasticMetrics(JobKind kind, const ElasticPolicy& policy);

// No job larger than Kubernetes can store: etcd refuses a request over 1.5 MiB (its
// default --max-request-bytes), so such a manifest never works upstream, and the local
// backend holds no larger one either. (gRPC's 4 MiB receive limit is the outer bound.)
inline constexpr size_t kMaxJobBytes = 1536 * 1024;

// FieldErrorsToStatus(Validate(job)): OK or one InvalidArgument listing every problem.
absl::Status ValidateJob(const TrainingJob& job);

}  // namespace coach::api::v1
