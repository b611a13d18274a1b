#pragma once

// The non-pod objects of local jobs (Service, ConfigMap, ServiceAccount, Role,
// RoleBinding, PodGroup). They have no effect on this host, but the reconciler must
// observe them as existing once created, or it would create them again forever; so the
// backend records them: one small JSON file per job under <dir>/<namespace>/<job>.json,
// replaced atomically on every change (it survives a kill of the operator; a power cut may
// lose the last changes, which the next pass then makes again). The file is the truth; a
// job's set is cached in memory for its next pass, except when the caller says it will not
// be asked again soon (a finished job's pass, List with kDrop): a store of thousands of
// finished jobs would otherwise keep every one's set for the life of the process. Thread-safe.

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
  explicit ObjectTable(std::string dir) : dir_(std::move(dir)) {}

  // Idempotent. Errors: InvalidArgument (unsafe names), Internal (I/O).
  absl::Status Add(const JobKey& job, const std::string& kind, const std::string& name);
  // Add of each (kind, name), with one write of the file for all of them.
  absl::Status AddAll(const JobKey& job,
                      const std::vector<std::pair<std::string, std::string>>& objects);
  absl::Status Remove(const JobKey& job, const std::string& kind, const std::string& name);
  // kCache keeps the job's set in memory after the call; kDrop leaves it out (a finished job,
  // read again only when something changes it: read from its file then).
  enum class Retain { kCache, kDrop };
  // Ordered by (kind, name). Errors: InvalidArgument, Internal (unreadable file).
  absl::StatusOr<std::vector<model::ObservedObject>> List(const JobKey& job,
                                                          Retain retain = Retain::kCache);
  // Drops every object of the job and its file. Idempotent.
  absl::Status Forget(const JobKey& job);
  // How many jobs' sets are held in memory (tests, measurements).
  size_t CachedJobs();

 private:
  using Set = std::set<std::pair<std::string, std::string>>;
  absl::StatusOr<std::string> PathOf(const JobKey& job) const;
  absl::StatusOr<Set*> Load(const JobKey& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Save(const JobKey& job, const Set& set) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  absl::Mutex mu_;
  std::map<JobKey, Set> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::backend::local
