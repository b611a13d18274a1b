#pragma once

// CrJobStore's view of the jobs its change feed has shown (see cr_job_store.h): the kind index
// the kind rule reads ((namespace, name) -> kind -> uid), the watch's copy of each job that
// GetCached serves, which feeds (kind, namespace) have listed once, and the jobs whose copy is
// behind the store's own last write. Kinds are indexes into api::v1::AllKinds().
//
// Thread-safe.

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/store/job_store.h"

namespace coach::backend::kube {

class CrWatchCache {
 public:
  using JobKey = store::JobKey;  // namespace and name only: the kind is an index here
  // A key's kind and plain name as the kind rule parsed it (the kind -1: no such kind).
  using NamedKind = std::optional<std::pair<int, std::string>>;

  // The feed starts with `feeds` (kind, namespace) reflectors. False when already watching.
  bool Begin(size_t feeds);
  // The feed stopped: nothing counts as synced any more (the index and copies stay).
  void End();
  // True once every feed has listed (MarkSynced) while watching; waits up to `timeout`.
  bool WaitForSync(absl::Duration timeout);

  // The kind index, also fed by the store's own requests.
  void Remember(const JobKey& key, int kind, const std::string& uid);
  void Forget(const JobKey& key, int kind);
  std::map<int, std::string> KnownKinds(const JobKey& key) const;
  // While synced: the one kind the index knows for a plain (namespace, name); else nullopt.
  std::optional<int> OnlyKind(const JobKey& key) const;
  // The kind and uid for events without a request: the key's own kind (`named`) when the
  // index knows its uid, else the only kind it knows for a plain name (with a uid).
  std::optional<std::pair<int, std::string>> KnownKindAndUid(const JobKey& key,
                                                             const NamedKind& named) const;

  // GetCached's copy, while synced: of the key's own kind, else of the only kind the index
  // knows; nullopt when there is none or it is behind the store's own write.
  std::optional<nlohmann::json> Cached(const JobKey& key, const NamedKind& named) const;
  // After the store's Update/UpdateStatus: the copy is behind until the watch delivers
  // `resource_version`, or, when "" (the write conflicted), anything.
  void AwaitWatch(const JobKey& key, int kind, const std::string& resource_version);

  // A listing of `kind` in `ns` ("" = every namespace) replaces what the cache held there.
  // Returns the jobs of that kind the index knew and the listing no longer has.
  std::vector<JobKey> Replace(int kind, const std::string& ns,
                              const std::vector<nlohmann::json>& items);
  // The feed (kind, ns) has listed and its listing was reported.
  void MarkSynced(int kind, const std::string& ns);
  // A watch event's object: kept (added/modified) or dropped (deleted).
  void Put(const JobKey& key, int kind, const nlohmann::json& object);
  void Drop(const JobKey& key, int kind);

 private:
  bool SyncedLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return watching_ && synced_.size() == feeds_total_;
  }
  void CacheLocked(const JobKey& key, int kind, const nlohmann::json& object)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // (namespace, name) -> kind index -> uid.
  std::map<JobKey, std::map<int, std::string>> index_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<int, std::string>> synced_ ABSL_GUARDED_BY(mu_);  // (kind, ns) listed once
  // The watch's objects by (job, kind index).
  std::map<std::pair<JobKey, int>, nlohmann::json> objects_ ABSL_GUARDED_BY(mu_);
  // Jobs whose copy is behind the store's own write (see AwaitWatch).
  std::map<std::pair<JobKey, int>, std::string> awaiting_ ABSL_GUARDED_BY(mu_);
  size_t feeds_total_ ABSL_GUARDED_BY(mu_) = 0;
  bool watching_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace coach::backend::kube
