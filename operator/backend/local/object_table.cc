#include "operator/backend/local/object_table.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {

absl::StatusOr<std::string> ObjectTable::PathOf(const JobKey& job) const {
  if (!IsSafePathComponent(job.namespace_) || !IsSafePathComponent(job.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", job.namespace_, "/", job.name, ": not a safe name"));
  }
  return absl::StrCat(dir_, "/", job.namespace_, "/", job.name, ".json");
}

absl::StatusOr<ObjectTable::Set*> ObjectTable::Load(const JobKey& job) {
  auto it = cache_.find(job);
  if (it != cache_.end()) return &it->second;
  absl::StatusOr<std::string> path = PathOf(job);
  if (!path.ok()) return path.status();
  Set set;
  absl::StatusOr<std::string> text = ReadFile(*path);
  if (text.ok()) {
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_array()) return absl::InternalError(absl::StrCat(*path, ": corrupt"));
    for (const auto& o : j) {
      if (o.is_array() && o.size() == 2 && o[0].is_string() && o[1].is_string()) {
        set.emplace(o[0].get<std::string>(), o[1].get<std::string>());
      }
    }
  } else if (!absl::IsNotFound(text.status())) {
    return text.status();
  }
  return &cache_.emplace(job, std::move(set)).first->second;
}

absl::Status ObjectTable::Save(const JobKey& job, const Set& set) {
  absl::StatusOr<std::string> path = PathOf(job);
  if (!path.ok()) return path.status();
  if (absl::Status s = MakeDirs(DirName(*path)); !s.ok()) return s;
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [kind, name] : set) j.push_back({kind, name});
  // Not synced: a Service or ConfigMap record lost in a power cut is only a name the next
  // reconcile pass finds missing and records again (the local backend's objects are
  // bookkeeping; no process depends on them). Syncing it cost two fsyncs per Service.
  return WriteFileAtomic(*path, j.dump(), Durability::kCrashSafe);
}

absl::Status ObjectTable::Add(const JobKey& job, const std::string& kind, const std::string& name) {
  return AddAll(job, {{kind, name}});
}

absl::Status ObjectTable::AddAll(const JobKey& job,
                                 const std::vector<std::pair<std::string, std::string>>& objects) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Set*> set = Load(job);
  if (!set.ok()) return set.status();
  std::vector<std::pair<std::string, std::string>> added;
  for (const auto& object : objects) {
    if ((*set)->insert(object).second) added.push_back(object);
  }
  if (added.empty()) return absl::OkStatus();
  absl::Status s = Save(job, **set);
  if (!s.ok()) {
    for (const auto& object : added) (*set)->erase(object);
  }
  return s;
}

absl::Status ObjectTable::Remove(const JobKey& job, const std::string& kind,
                                 const std::string& name) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Set*> set = Load(job);
  if (!set.ok()) return set.status();
  if ((*set)->erase({kind, name}) == 0) return absl::OkStatus();
  absl::Status s = Save(job, **set);
  if (!s.ok()) (*set)->emplace(kind, name);
  return s;
}

absl::StatusOr<std::vector<model::ObservedObject>> ObjectTable::List(const JobKey& job,
                                                                     Retain retain) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Set*> set = Load(job);
  if (!set.ok()) return set.status();
  std::vector<model::ObservedObject> out;
  for (const auto& [kind, name] : **set) out.push_back({kind, name});
  // Every change was saved before it reached the cache, so dropping the entry loses nothing.
  if (retain == Retain::kDrop) cache_.erase(job);
  return out;
}

size_t ObjectTable::CachedJobs() {
  absl::MutexLock lock(&mu_);
  return cache_.size();
}

absl::Status ObjectTable::Forget(const JobKey& job) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::string> path = PathOf(job);
  if (!path.ok()) return path.status();
  cache_.erase(job);
  if (std::remove(path->c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("remove ", *path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace coach::backend::local
