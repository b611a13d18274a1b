#include "operator/backend/local/net/local_address_plan.h"

#include "operator/backend/local/process/pod_process.h"
#include "operator/model/replicas.h"

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

}  // namespace coach::backend::local
