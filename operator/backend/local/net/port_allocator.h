#pragma once

// TCP ports on 127.0.0.1 for local replicas (master port, rendezvous port, ...). A port
// handed out is (1) bindable at the time of allocation and (2) reserved in the ReplicaStore,
// whose unique constraint makes reservations exclusive across all jobs and across
// operator processes sharing the store. Reservations live until Release (job deletion;
// deleting the job also drops them).

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/backend/local/store/replica_store.h"

namespace coach::backend::local {

// True when a TCP socket can bind 127.0.0.1:port right now (no SO_REUSEADDR).
bool IsPortBindable(int port);

class PortAllocator {
 public:
  struct Options {
    // Proposes a candidate port; by default the kernel's choice for a bind to port 0.
    // Tests inject a sequence. Candidates are still checked for bindability.
    std::function<absl::StatusOr<int>()> candidate;
    int max_attempts = 64;  // candidates tried for each port
  };

  // `store` must outlive the allocator.
  PortAllocator(ReplicaStore* store, Options options);
  explicit PortAllocator(ReplicaStore* store) : PortAllocator(store, Options()) {}

  // One port per name, distinct, all reserved for (job, replica) in one transaction.
  // Errors: NotFound (no such job), ResourceExhausted (no free port found for one of them in
  // max_attempts), Internal (socket errors), Unavailable (store busy).
  absl::StatusOr<std::map<std::string, int>> Allocate(const JobKey& job, const std::string& replica,
                                                      const std::vector<std::string>& names);

  // The same for several replicas at once (replica -> port names), in one transaction.
  absl::StatusOr<std::map<std::string, std::map<std::string, int>>> AllocateAll(
      const JobKey& job, const std::map<std::string, std::vector<std::string>>& names);

  // Releases every port of the job. Errors: storage only.
  absl::Status Release(const JobKey& job);

 private:
  ReplicaStore* store_;
  Options options_;
};

}  // namespace coach::backend::local
