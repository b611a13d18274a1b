#include "operator/store/job_store.h"

namespace coach::store {

JobKey KeyOf(const api::v1::TrainingJob& job) {
  return JobKey{job.metadata().namespace_(), job.metadata().name()};
}

absl::Status JobStore::AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) {
  for (const JobEvent& e : events) {
    absl::Status s = AppendEvent(job, e);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace coach::store
