#pragma once

// The AddressPlan of the local backend: every replica is this host (127.0.0.1) and
// every (replica, port name) is the TCP port the backend reserved for it at Admit
// (port_allocator.h), so that concurrent jobs, and replicas of one job, never collide.
// An immutable snapshot: build it from the job's port reservations.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "operator/backend/local/store/replica_store.h"
#include "operator/model/address_plan.h"

namespace coach::backend::local {

inline constexpr char kLocalHost[] = "127.0.0.1";

class LocalAddressPlan : public model::AddressPlan {
 public:
  // (pod name, port name) -> port.
  using PortMap = std::map<std::pair<std::string, std::string>, int>;

  explicit LocalAddressPlan(PortMap ports) : ports_(std::move(ports)) {}
  // The reservations of one job (others are ignored).
  static LocalAddressPlan FromReservations(const JobKey& job,
                                           const std::vector<PortReservation>& reservations);

  // "127.0.0.1" for every replica.
  std::string Host(const api::v1::TrainingJob& job, std::string_view replica_type,
                   int index) const override;
  std::string QualifiedHost(const api::v1::TrainingJob& job, std::string_view replica_type,
                            int index) const override;
  // The reserved port; `declared_port` when the backend reserved none for that name
  // (a port the job's wiring does not use and its container does not declare).
  int Port(const api::v1::TrainingJob& job, std::string_view replica_type, int index,
           std::string_view port_name, int declared_port) const override;
  // False: every replica, Paddle's rank 0 included, is given Host()/Port().
  bool PodIPAvailable() const override { return false; }
  // True: every replica is 127.0.0.1.
  bool SharedHost() const override { return true; }

  const PortMap& ports() const { return ports_; }

 private:
  PortMap ports_;
};

}  // namespace coach::backend::local
