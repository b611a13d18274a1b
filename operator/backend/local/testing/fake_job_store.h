#pragma once

// An in-memory JobStore for tests of code above the store. It passes the same contract
// suite as SqliteJobStore (fake_job_store_test.cc), so it cannot drift. Extras for
// tests: an error can be injected per method name ("Create", "PutReplica", ...; the
// next call of that method fails once with it), and every call's method name is
// recorded in calls().

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "operator/backend/local/job_store.h"

namespace coach::backend::local::testing {

class FakeJobStore : public JobStore {
 public:
  explicit FakeJobStore(int max_events_per_job = 100)
      : max_events_per_job_(max_events_per_job) {}

  // The next call of `method` returns `error` (once).
  void InjectError(const std::string& method, absl::Status error);
  std::vector<std::string> calls();

  absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) override;
  absl::StatusOr<ListResult> List(const ListOptions& options) override;
  absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) override;
  absl::Status Delete(const JobKey& key, std::optional<std::string> resource_version) override;
  absl::Status PutReplica(const ReplicaRecord& replica) override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListReplicas(const JobKey& job) override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListAllReplicas() override;
  absl::Status DeleteReplica(const JobKey& job, const std::string& name) override;
  absl::Status AppendEvent(const JobKey& job, const JobEvent& event) override;
  absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) override;
  absl::Status ReservePorts(const std::vector<PortReservation>& ports) override;
  absl::StatusOr<std::vector<PortReservation>> ListPortReservations() override;
  absl::Status ReleasePorts(const JobKey& job) override;

 private:
  absl::Status Enter(const std::string& method) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<api::v1::TrainingJob> CheckedUpdate(const api::v1::TrainingJob& job,
                                                     bool status_only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_events_per_job_;
  absl::Mutex mu_;
  std::map<JobKey, api::v1::TrainingJob> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<JobKey, std::map<std::string, ReplicaRecord>> replicas_ ABSL_GUARDED_BY(mu_);
  std::map<JobKey, std::vector<JobEvent>> events_ ABSL_GUARDED_BY(mu_);
  std::map<int, PortReservation> ports_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> errors_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  int64_t next_uid_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace coach::backend::local::testing
