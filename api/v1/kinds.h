#pragma once

// Per-kind facts of kubeflow.org/v1 (upstream v1.9): names, replica types, defaults.
// One table so that the codec, the defaulting, the validation and the reconciler agree.

#include <string>
#include <string_view>
#include <vector>

#include "api/v1/training_job.pb.h"

namespace coach::api::v1 {

struct KindInfo {
  JobKind kind;
  std::string_view name;               // "PyTorchJob"
  std::string_view plural;             // "pytorchjobs"
  std::string_view replica_specs_key;  // "pytorchReplicaSpecs"
  std::string_view framework;          // "pytorch": metrics label, operator-name prefix
  std::vector<std::string_view> replica_types;  // CamelCase, in upstream's order
  std::string_view default_container;  // "pytorch"
  std::string_view default_port_name;  // "pytorchjob-port"
  int default_port;                    // 23456; 0 when upstream does not default one (MPI)
  std::string_view default_restart_policy;  // "OnFailure"
};

inline constexpr std::string_view kApiVersion = "kubeflow.org/v1";
inline constexpr std::string_view kGroup = "kubeflow.org";

// Every supported kind, in a stable order.
const std::vector<KindInfo>& AllKinds();

// The entry for `kind`; JOB_KIND_UNSPECIFIED has none (returns nullptr).
const KindInfo* FindKind(JobKind kind);
// By Kubernetes kind name ("TFJob"), exact match; nullptr when unknown.
const KindInfo* FindKindByName(std::string_view name);

// Upstream normalises replica-type keys to CamelCase ("worker" -> "Worker", "ps" -> "PS").
// Returns the canonical spelling for `kind`, or "" when the type is not one of its types.
std::string CanonicalReplicaType(JobKind kind, std::string_view type);

// "<kind lowercase>-controller", the value of training.kubeflow.org/operator-name.
std::string OperatorName(JobKind kind);

}  // namespace coach::api::v1
