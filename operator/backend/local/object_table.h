#pragma once

// The non-pod objects of local jobs (Service, ConfigMap, ServiceAccount, Role,
// RoleBinding, PodGroup). They have no effect on this host, but the reconciler must
// observe them as existing once created, or it would create them again forever; so the
// backend records them in the ReplicaStore, next to the job (deleted with it; not synced:
// a power cut may lose the last changes, which the next pass then makes again). Nothing is
// kept in memory: a job's set is one indexed read of the store (a cache would cost ~250 bytes
// a job, and a pass after each finish to drop it). Thread-safe.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/backend/local/store/replica_store.h"
#include "operator/model/observed_state.h"

namespace coach::backend::local {

class ObjectTable {
 public:
  // `store` is not owned and must outlive the table.
  explicit ObjectTable(ReplicaStore* store) : store_(store) {}

  // Idempotent. Errors: NotFound (no such job), Internal (storage).
  absl::Status Add(const JobKey& job, const std::string& kind, const std::string& name);
  // Add of each (kind, name), in one transaction.
  absl::Status AddAll(const JobKey& job,
                      const std::vector<std::pair<std::string, std::string>>& objects);
  // Idempotent.
  absl::Status Remove(const JobKey& job, const std::string& kind, const std::string& name);
  // Ordered by (kind, name). Errors: Internal (storage).
  absl::StatusOr<std::vector<model::ObservedObject>> List(const JobKey& job);
  // Drops every object of the job. Idempotent.
  absl::Status Forget(const JobKey& job);

 private:
  ReplicaStore* const store_;
};

}  // namespace coach::backend::local
