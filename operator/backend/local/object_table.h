#pragma once

// The non-pod objects of local jobs (Service, ConfigMap, ServiceAccount, Role,
// RoleBinding, PodGroup). They have no effect on this host, but the reconciler must
// observe them as existing once created, or it would create them again forever; so the
// backend records them in the ReplicaStore, next to the job (deleted with it; not synced:
// a power cut may lose the last changes, which the next pass then makes again). The store
// is the truth; a job's set is cached in memory for its next pass, except when the caller
// says it will not be asked again soon (a finished job's pass, List with kDrop): a store of
// thousands of finished jobs would otherwise keep every one's set for the life of the
// process. Older operators kept a JSON file per job under <legacy_dir>/<namespace>/<job>.json;
// ImportFiles moves those into the store. Thread-safe.

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
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
  absl::Status Remove(const JobKey& job, const std::string& kind, const std::string& name);
  // kCache keeps the job's set in memory after the call; kDrop leaves it out (a finished job,
  // read again only when something changes it: read from the store then).
  enum class Retain { kCache, kDrop };
  // Ordered by (kind, name). Errors: Internal (storage).
  absl::StatusOr<std::vector<model::ObservedObject>> List(const JobKey& job,
                                                          Retain retain = Retain::kCache);
  // Drops every object of the job. Idempotent.
  absl::Status Forget(const JobKey& job);
  // How many jobs' sets are held in memory (tests, measurements).
  size_t CachedJobs();

 private:
  using Set = std::set<std::pair<std::string, std::string>>;
  absl::StatusOr<Set*> Load(const JobKey& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ReplicaStore* const store_;
  const std::string legacy_dir_;
  absl::Mutex mu_;
  std::map<JobKey, Set> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::backend::local
