#include "operator/backend/kube/cr_watch_cache.h"

#include <iterator>

#include "operator/backend/kube/client/kube_client.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

store::JobKey KeyOfObject(const json& object) {
  return {k8s::NamespaceOf(object), k8s::NameOf(object)};
}

}  // namespace

bool CrWatchCache::Begin(size_t feeds) {
  absl::MutexLock lock(&mu_);
  if (watching_) return false;
  watching_ = true;
  feeds_total_ = feeds;
  return true;
}

void CrWatchCache::End() {
  absl::MutexLock lock(&mu_);
  watching_ = false;
  synced_.clear();
}

bool CrWatchCache::WaitForSync(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto synced = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return SyncedLocked(); };
  return mu_.AwaitWithTimeout(absl::Condition(&synced), timeout);
}

void CrWatchCache::Remember(const JobKey& key, int kind, const std::string& uid) {
  absl::MutexLock lock(&mu_);
  index_[key][kind] = uid;
}

void CrWatchCache::Forget(const JobKey& key, int kind) {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return;
  it->second.erase(kind);
  if (it->second.empty()) index_.erase(it);
}

std::map<int, std::string> CrWatchCache::KnownKinds(const JobKey& key) const {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  return it == index_.end() ? std::map<int, std::string>() : it->second;
}

std::optional<int> CrWatchCache::OnlyKind(const JobKey& key) const {
  absl::MutexLock lock(&mu_);
  if (!SyncedLocked()) return std::nullopt;
  auto it = index_.find(key);
  if (it != index_.end() && it->second.size() == 1) return it->second.begin()->first;
  return std::nullopt;
}

std::optional<std::pair<int, std::string>> CrWatchCache::KnownKindAndUid(
    const JobKey& key, const NamedKind& named) const {
  absl::MutexLock lock(&mu_);
  if (named.has_value()) {
    // The key's kind, whatever else has that name (the controller's keys name it).
    auto it = index_.find({key.namespace_, named->second});
    if (named->first >= 0 && it != index_.end()) {
      auto kind = it->second.find(named->first);
      if (kind != it->second.end() && !kind->second.empty()) return *kind;
    }
  } else {
    auto it = index_.find(key);
    if (it != index_.end() && it->second.size() == 1 && !it->second.begin()->second.empty()) {
      return *it->second.begin();
    }
  }
  return std::nullopt;
}

std::optional<json> CrWatchCache::Cached(const JobKey& key, const NamedKind& named) const {
  absl::MutexLock lock(&mu_);
  if (!SyncedLocked()) return std::nullopt;
  // The kind: the key's own, else the only one the index knows for the name.
  std::optional<std::pair<JobKey, int>> at;
  if (named.has_value()) {
    if (named->first >= 0) at = std::make_pair(JobKey{key.namespace_, named->second}, named->first);
  } else if (auto known = index_.find(key); known != index_.end() && known->second.size() == 1) {
    at = std::make_pair(key, known->second.begin()->first);
  }
  if (!at.has_value()) return std::nullopt;
  auto it = objects_.find(*at);
  // Not while the watch has yet to show this store's own last write.
  if (it == objects_.end() || awaiting_.count(it->first) > 0) return std::nullopt;
  return it->second;
}

void CrWatchCache::AwaitWatch(const JobKey& key, int kind, const std::string& resource_version) {
  absl::MutexLock lock(&mu_);
  awaiting_[{key, kind}] = resource_version;
}

std::vector<store::JobKey> CrWatchCache::Replace(int kind, const std::string& ns,
                                                 const std::vector<json>& items) {
  std::vector<JobKey> gone;
  absl::MutexLock lock(&mu_);
  std::set<JobKey> now;
  for (const json& item : items) now.insert(KeyOfObject(item));
  for (auto it = index_.begin(); it != index_.end();) {
    const bool in_scope = ns.empty() || it->first.namespace_ == ns;
    if (in_scope && it->second.count(kind) > 0 && now.count(it->first) == 0) {
      gone.push_back(it->first);
      it->second.erase(kind);
      if (it->second.empty()) {
        it = index_.erase(it);
        continue;
      }
    }
    ++it;
  }
  for (const json& item : items) index_[KeyOfObject(item)][kind] = k8s::UidOf(item);
  for (auto it = objects_.begin(); it != objects_.end();) {
    const bool in_scope =
        it->first.second == kind && (ns.empty() || it->first.first.namespace_ == ns);
    it = in_scope && now.count(it->first.first) == 0 ? objects_.erase(it) : std::next(it);
  }
  // A listing is the current state: a version written before it may never be delivered.
  for (auto it = awaiting_.begin(); it != awaiting_.end();) {
    const bool in_scope =
        it->first.second == kind && (ns.empty() || it->first.first.namespace_ == ns);
    it = in_scope ? awaiting_.erase(it) : std::next(it);
  }
  for (const json& item : items) CacheLocked(KeyOfObject(item), kind, item);
  return gone;
}

void CrWatchCache::MarkSynced(int kind, const std::string& ns) {
  absl::MutexLock lock(&mu_);
  synced_.insert({kind, ns});
}

void CrWatchCache::Put(const JobKey& key, int kind, const json& object) {
  absl::MutexLock lock(&mu_);
  CacheLocked(key, kind, object);
}

void CrWatchCache::Drop(const JobKey& key, int kind) {
  absl::MutexLock lock(&mu_);
  objects_.erase({key, kind});
  awaiting_.erase({key, kind});
}

void CrWatchCache::CacheLocked(const JobKey& key, int kind, const json& object) {
  const std::pair<JobKey, int> at{key, kind};
  // The watch caught up with this store's write (or, after a conflict, moved at all).
  auto wait = awaiting_.find(at);
  if (wait != awaiting_.end() &&
      (wait->second.empty() || wait->second == k8s::ResourceVersionOf(object))) {
    awaiting_.erase(wait);
  }
  objects_[at] = object;
}

}  // namespace coach::backend::kube
