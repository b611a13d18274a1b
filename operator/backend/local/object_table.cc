#include "operator/backend/local/object_table.h"

namespace coach::backend::local {

absl::Status ObjectTable::Add(const JobKey& job, const std::string& kind, const std::string& name) {
  return AddAll(job, {{kind, name}});
}

absl::Status ObjectTable::AddAll(const JobKey& job,
                                 const std::vector<std::pair<std::string, std::string>>& objects) {
  if (objects.empty()) return absl::OkStatus();
  return store_->AddObjects(job, objects);
}

absl::Status ObjectTable::Remove(const JobKey& job, const std::string& kind,
                                 const std::string& name) {
  return store_->RemoveObject(job, {kind, name});
}

absl::StatusOr<std::vector<model::ObservedObject>> ObjectTable::List(const JobKey& job) {
  absl::StatusOr<std::vector<ReplicaStore::ObjectName>> listed = store_->ListObjects(job);
  if (!listed.ok()) return listed.status();
  std::vector<model::ObservedObject> out;
  out.reserve(listed->size());
  for (auto& [kind, name] : *listed) out.push_back({std::move(kind), std::move(name)});
  return out;
}

absl::Status ObjectTable::Forget(const JobKey& job) { return store_->RemoveObjects(job); }

}  // namespace coach::backend::local
