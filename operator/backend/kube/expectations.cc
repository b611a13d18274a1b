#include "operator/backend/kube/expectations.h"

#include <spdlog/spdlog.h>

#include <iterator>
#include <utility>

#include "operator/backend/kube/object_fields.h"

namespace coach::backend::kube {

void Expectations::Raise(const std::string& job_key, const std::string& object_key, Expectation e) {
  by_job_[job_key][object_key] = std::move(e);
}

void Expectations::Lower(const std::string& job_key, const std::string& object_key) {
  auto it = by_job_.find(job_key);
  if (it == by_job_.end()) return;
  it->second.erase(object_key);
  if (it->second.empty()) by_job_.erase(it);
}

void Expectations::Observed(const std::string& job_key, const std::string& object_key,
                            bool deleted_event, bool deleting) {
  auto job_it = by_job_.find(job_key);
  if (job_it == by_job_.end()) return;
  auto e = job_it->second.find(object_key);
  if (e == job_it->second.end()) return;
  const bool gone = deleted_event || deleting;
  if (e->second.create ? !deleted_event : gone) {
    job_it->second.erase(e);
    if (job_it->second.empty()) by_job_.erase(job_it);
  }
}

void Expectations::Settle(const std::string& job_key, absl::Time now, absl::Duration timeout,
                          const CacheLookup& cached) {
  auto it = by_job_.find(job_key);
  if (it == by_job_.end()) return;
  for (auto e = it->second.begin(); e != it->second.end();) {
    const size_t slash = e->first.find('/');
    const nlohmann::json* object = cached(e->first.substr(0, slash), e->first.substr(slash + 1));
    bool met = e->second.create ? object != nullptr : (object == nullptr || Deleting(*object));
    if (!met && now - e->second.raised > timeout) {
      spdlog::warn(
          "kube backend: job {}: the cache has not seen the {} of {} after {}; dropping "
          "the expectation (an object without coach's labels never shows in the cache)",
          job_key, e->second.create ? "creation" : "deletion", e->first,
          absl::FormatDuration(now - e->second.raised));
      met = true;
    }
    e = met ? it->second.erase(e) : std::next(e);
  }
  if (it->second.empty()) by_job_.erase(it);
}

const Expectations::ObjectMap& Expectations::Of(const std::string& job_key) const {
  static const ObjectMap kNone;
  auto it = by_job_.find(job_key);
  return it == by_job_.end() ? kNone : it->second;
}

void Expectations::Forget(const std::string& job_key) { by_job_.erase(job_key); }

}  // namespace coach::backend::kube
