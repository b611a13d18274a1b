#include "operator/backend/local/net/local_address_plan.h"

#include <set>

#include "api/v1/kinds.h"
#include "operator/backend/local/process/pod_process.h"
#include "operator/model/replicas.h"
#include "operator/trainer/runtime_lookup.h"

namespace coach::backend::local {

LocalAddressPlan LocalAddressPlan::FromReservations(
    const JobKey& job, const std::vector<PortReservation>& reservations) {
  PortMap ports;
  for (const PortReservation& r : reservations) {
    if (r.job == job) ports[{r.replica, r.port_name}] = r.port;
  }
  return LocalAddressPlan(std::move(ports));
}

std::string LocalAddressPlan::Host(const api::v1::TrainingJob&, std::string_view, int) const {
  return kLocalHost;
}

std::string LocalAddressPlan::QualifiedHost(const api::v1::TrainingJob&, std::string_view,
                                            int) const {
  return kLocalHost;
}

int LocalAddressPlan::Port(const api::v1::TrainingJob& job, std::string_view replica_type,
                           int index, std::string_view port_name, int declared_port) const {
  auto it = ports_.find({reconcile::ReplicaName(job, replica_type, index), std::string(port_name)});
  return it == ports_.end() ? declared_port : it->second;
}

std::map<std::string, std::vector<std::string>> PortNamesFor(const api::v1::TrainingJob& job) {
  std::map<std::string, std::vector<std::string>> out;
  const api::v1::KindInfo* kind = api::v1::FindKind(job.kind());
  if (kind == nullptr) return out;
  if (job.kind() == api::v1::TRAIN_JOB) {
    // The trainer's first pod is the rendezvous (PET_MASTER_ADDR, JAX's coordinator, XGBoost's
    // tracker): one port, reserved under the trainer's replicated job.
    out[reconcile::ReplicaName(job, trainer::kTrainerReplicatedJob, 0)] = {
        trainer::kTrainerPortName};
    return out;
  }
  for (const std::string& type : reconcile::ReplicaTypes(job)) {
    std::set<std::string> names;
    if (!kind->default_port_name.empty()) names.insert(std::string(kind->default_port_name));
    absl::StatusOr<model::Json> tmpl = reconcile::ParseTemplate(job, type);
    if (tmpl.ok()) {
      if (const model::Json* c = DefaultContainer(*tmpl, *kind)) {
        if (c->contains("ports") && (*c)["ports"].is_array()) {
          for (const model::Json& p : (*c)["ports"]) {
            if (p.contains("name") && p["name"].is_string()) {
              names.insert(p["name"].get<std::string>());
            }
          }
        }
      }
    }
    for (int i = 0; i < reconcile::Replicas(job, type); ++i) {
      out[reconcile::ReplicaName(job, type, i)] = {names.begin(), names.end()};
    }
  }
  return out;
}

}  // namespace coach::backend::local
