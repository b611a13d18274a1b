#pragma once

// An in-memory JobStore for tests of code above the store. It passes the same contract
// suite as SqliteJobStore and CrJobStore (fake_job_store_test.cc), so it cannot drift.
// Extras for tests: an error can be injected per method name ("Create", "AppendEvent", ...;
// the next call of that method fails once with it), and every call's method name is
// recorded in calls(). Names are unique across kinds, as in the local store: a key's kind
// is not read.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "operator/store/job_store.h"

namespace coach::store::testing {

class FakeJobStore : public JobStore {
 public:
  // `clock` stamps creation times (not owned), as SqliteJobStore's options.clock does.
  explicit FakeJobStore(int max_events_per_job = 100, Clock* clock = Clock::Real())
      : max_events_per_job_(max_events_per_job), clock_(clock) {}

  // The next call of `method` returns `error` (once).
  void InjectError(const std::string& method, absl::Status error);
  std::vector<std::string> calls();

  absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) override;
  absl::StatusOr<ListResult> List(const ListOptions& options) override;
  absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) override;
  absl::Status Delete(const JobKey& key, std::optional<std::string> resource_version) override;
  absl::Status AppendEvent(const JobKey& job, const JobEvent& event) override;
  absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) override;

 private:
  absl::Status Enter(const std::string& method) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<api::v1::TrainingJob> CheckedUpdate(const api::v1::TrainingJob& job,
                                                     bool status_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_events_per_job_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::map<JobKey, api::v1::TrainingJob> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<JobKey, std::vector<JobEvent>> events_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> errors_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  int64_t next_uid_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace coach::store::testing
