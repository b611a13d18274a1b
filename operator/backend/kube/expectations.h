#pragma once

// The kube backend's creation and deletion expectations (see kube_backend.h, "Expectations"):
// per job, what Apply asked the API server for and the watch has not shown yet, so that a
// lagging cache never makes the reconciler create an object twice.
//
// Not thread-safe: KubeBackend holds its own mutex around every call.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/time/time.h"

namespace coach::backend::kube {

struct Expectation {
  bool create = true;
  absl::Time raised;
  nlohmann::json body;  // create: the object as sent (for a synthetic observed entry)
};

class Expectations {
 public:
  // Object key "Kind/name" -> its expectation.
  using ObjectMap = std::map<std::string, Expectation>;
  // The cached object `kind`/`name` of the job's namespace, or null.
  using CacheLookup =
      std::function<const nlohmann::json*(const std::string& kind, const std::string& name)>;

  // Job keys are "ns/name". Raise replaces an expectation of the same object.
  void Raise(const std::string& job_key, const std::string& object_key, Expectation e);
  void Lower(const std::string& job_key, const std::string& object_key);
  // A watch event of `object_key`: a create is met by any event but a deletion; a delete by
  // a deletion or an object carrying a deletionTimestamp (`deleting`).
  void Observed(const std::string& job_key, const std::string& object_key, bool deleted_event,
                bool deleting);
  // Lowers what the cache already satisfies and drops, with a warning, those raised more than
  // `timeout` before `now` (a lost event, or an object without coach's labels, cannot wedge
  // a job).
  void Settle(const std::string& job_key, absl::Time now, absl::Duration timeout,
              const CacheLookup& cached);
  // The job's pending expectations (empty when none).
  const ObjectMap& Of(const std::string& job_key) const;
  void Forget(const std::string& job_key);

 private:
  std::map<std::string, ObjectMap> by_job_;
};

}  // namespace coach::backend::kube
