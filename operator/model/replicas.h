#pragma once

// Small pure facts about a job's replicas that the reconciler and the backends share:
// names, labels, ports, roles, restart policies. Nothing here allocates objects.
// The names live in coach::reconcile, where most of their callers name them unqualified.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/kinds.h"
#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

using model::Job;
using model::Json;

inline constexpr char kLabelOperatorName[] = "training.kubeflow.org/operator-name";
inline constexpr char kLabelJobName[] = "training.kubeflow.org/job-name";
inline constexpr char kLabelReplicaType[] = "training.kubeflow.org/replica-type";
inline constexpr char kLabelReplicaIndex[] = "training.kubeflow.org/replica-index";
inline constexpr char kLabelJobRole[] = "training.kubeflow.org/job-role";

// The kind's table entry. InvalidArgument when the job's kind is unspecified.
absl::StatusOr<const api::v1::KindInfo*> KindOf(const Job& job);

// Replica types the job declares, in the kind's order (types unknown to the kind last,
// sorted, so that nothing is silently dropped).
std::vector<std::string> ReplicaTypes(const Job& job);

// spec.replicas of `type`; 0 when the type is absent.
int Replicas(const Job& job, std::string_view type);
int TotalReplicas(const Job& job);
bool HasReplicaType(const Job& job, std::string_view type);

// object[key] as an array, made an empty one first when it is missing or not an array.
Json& EnsureArray(Json& object, const char* key);

// The value of metadata.annotations[key]; null when the job has no such annotation.
const std::string* AnnotationOf(const Job& job, const std::string& key);

std::string Lower(std::string_view s);

// Pod/Service name: "<job>-<type lowercase>-<index>"; MPIJob's launcher is
// "<job>-launcher" as upstream's MPI controller names it.
std::string ReplicaName(const Job& job, std::string_view type, int index);

// The replica's restartPolicy, or the kind's default when empty.
std::string RestartPolicy(const Job& job, std::string_view type);

// The pod template of `type` as JSON ({} when empty). InvalidArgument naming the field
// when template_json does not parse or is not an object.
absl::StatusOr<Json> ParseTemplate(const Job& job, std::string_view type);

// Index into spec.containers of the kind's default container: the one with the default
// name, else 0 (MPI always 0). nullopt when there are no containers.
std::optional<size_t> DefaultContainerIndex(const Json& pod_template,
                                            const api::v1::KindInfo& kind);

// containerPort of the port named `port_name` on the default container of `type`;
// NotFound when absent (upstream: "port not found").
absl::StatusOr<int> DeclaredPort(const Job& job, std::string_view type, std::string_view port_name);

// Upstream's IsMasterRole per kind (see kubeflow-v1.md, "job-role=master").
bool IsMasterRole(const Job& job, std::string_view type, int index);

// {operator-name, job-name}.
std::map<std::string, std::string> JobLabels(const Job& job);
// JobLabels plus replica-type (lowercase) and replica-index.
std::map<std::string, std::string> ReplicaLabels(const Job& job, std::string_view type, int index);
// "k=v,k=v" selector of a replica type's pods, keys sorted (metav1 LabelSelector form).
std::string ReplicaSelector(const Job& job, std::string_view type);

// [{apiVersion: kubeflow.org/v1, kind, name, uid, controller: true, blockOwnerDeletion: true}]
Json OwnerReferences(const Job& job);

// pod_template.spec.containers when it is an array, else nullptr (never creates keys).
Json* MutableContainers(Json& pod_template);

// Appends {name, value} to container.env (creating it). Upstream appends without
// looking for an existing entry; Kubernetes then lets the last one win.
void AppendEnv(Json& container, std::string_view name, std::string_view value);
// Appends {name, valueFrom: {fieldRef: {fieldPath}}}.
void AppendEnvFieldRef(Json& container, std::string_view name, std::string_view field_path);
// True when container.env has an entry named `name`.
bool HasEnv(const Json& container, std::string_view name);

}  // namespace coach::reconcile
