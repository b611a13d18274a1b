#pragma once

// The non-pod objects of local jobs (Service, ConfigMap, ServiceAccount, Role,
// RoleBinding, PodGroup). They have no effect on this host, but the reconciler must
// observe them as existing once created, or it would create them again forever; so the
// backend records them in the ReplicaStore, next to the job (deleted with it; not synced:
// a power cut may lose the last changes, which the next pass then makes again). Nothing is
// kept in memory: a job's set is one indexed read of the store, where it was a file to parse
// (that cache cost ~250 bytes a job and a pass after each finish to drop it).
// Older operators kept a JSON file per job under <legacy_dir>/<namespace>/<job>.json;
// ImportFiles moves those into the store. Thread-safe.

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
  ObjectTable(ReplicaStore* store, std::string legacy_dir)
      : store_(store), legacy_dir_(std::move(legacy_dir)) {}

  // Moves the objects of every file under legacy_dir into the store and removes the files
  // (a file of a job the store no longer holds is only removed). Returns how many files it
  // took. Errors: Internal (a file that cannot be read, parsed or removed; the others are
  // still taken).
  absl::StatusOr<int> ImportFiles();

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
  const std::string legacy_dir_;
};

}  // namespace coach::backend::local
