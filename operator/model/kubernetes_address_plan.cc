#include "operator/model/kubernetes_address_plan.h"

#include "absl/strings/str_cat.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {

std::string KubernetesAddressPlan::Host(const api::v1::TrainingJob& job,
                                        std::string_view replica_type, int index) const {
  return ReplicaName(job, replica_type, index);
}

std::string KubernetesAddressPlan::QualifiedHost(const api::v1::TrainingJob& job,
                                                 std::string_view replica_type, int index) const {
  std::string host =
      absl::StrCat(ReplicaName(job, replica_type, index), ".", job.metadata().namespace_(), ".svc");
  if (!cluster_domain_.empty()) absl::StrAppend(&host, ".", cluster_domain_);
  return host;
}

int KubernetesAddressPlan::Port(const api::v1::TrainingJob&, std::string_view, int,
                                std::string_view, int declared_port) const {
  return declared_port;
}

std::shared_ptr<const model::AddressPlan> PlanOf(const model::ReconcileConfig& config) {
  if (config.address_plan != nullptr) return config.address_plan;
  return std::make_shared<KubernetesAddressPlan>(config.cluster_domain);
}

}  // namespace coach::reconcile
