#include "operator/store/job_store.h"

#include "absl/strings/str_cat.h"
#include "api/v1/kinds.h"

namespace coach::store {

JobKey KeyOf(const api::v1::TrainingJob& job) {
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  return JobKey{job.metadata().namespace_(), job.metadata().name(),
                info == nullptr ? "" : std::string(info->name)};
}

JobKey WithoutKind(const JobKey& key) { return JobKey{key.namespace_, key.name, ""}; }

std::string KeyString(const JobKey& key) {
  if (key.kind.empty()) return absl::StrCat(key.namespace_, "/", key.name);
  return absl::StrCat(key.namespace_, "/", key.kind, "/", key.name);
}

absl::Status JobStore::AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) {
  for (const JobEvent& e : events) {
    absl::Status s = AppendEvent(job, e);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace coach::store
