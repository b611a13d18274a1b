#pragma once

// The AddressPlan of a Kubernetes cluster: every replica is reached at its headless
// Service's name and the port its pod template declares, exactly as upstream wires it.

#include <memory>
#include <string>
#include <string_view>

#include "operator/model/address_plan.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

class KubernetesAddressPlan : public model::AddressPlan {
 public:
  // `cluster_domain`, when non-empty, is appended to qualified hosts
  // ("<host>.<ns>.svc.<cluster_domain>").
  explicit KubernetesAddressPlan(std::string cluster_domain = "")
      : cluster_domain_(std::move(cluster_domain)) {}

  std::string Host(const api::v1::TrainingJob& job, std::string_view replica_type,
                   int index) const override;
  std::string QualifiedHost(const api::v1::TrainingJob& job, std::string_view replica_type,
                            int index) const override;
  int Port(const api::v1::TrainingJob& job, std::string_view replica_type, int index,
           std::string_view port_name, int declared_port) const override;

 private:
  std::string cluster_domain_;
};

// The address plan to use: config's, or the Kubernetes plan for config.cluster_domain.
std::shared_ptr<const model::AddressPlan> PlanOf(const model::ReconcileConfig& config);

}  // namespace coach::reconcile
