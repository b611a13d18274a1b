#include "operator/backend/kube/progress_book.h"

#include <utility>

namespace coach::backend::kube {

ProgressBook::Recorded ProgressBook::Record(const std::string& pod_key, const std::string& uid,
                                            const std::string& job_key,
                                            const ProgressReport& report, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_key);
  if (it != pods_.end() && (it->second.uid != uid || it->second.job_key != job_key)) {
    EraseLocked(it);
    it = pods_.end();
  }
  if (it == pods_.end()) {
    if (pods_.size() >= options_.max_pods) return {Outcome::kFull, false, false};
    Entry entry;
    entry.uid = uid;
    entry.job_key = job_key;
    it = pods_.emplace(pod_key, std::move(entry)).first;
    ++jobs_[job_key].pods;
  }
  Entry& e = it->second;
  // A launcher's new state (its ranks failed, stopped, or started) is what a restart in place
  // waits for: it is kept sooner, and its job is told at once.
  const bool launch_changed =
      report.launch &&
      (!e.launch || e.launch->attempt != report.launch->attempt ||
       e.launch->phase != report.launch->phase || e.launch->exit_code != report.launch->exit_code);
  const absl::Duration min_interval =
      launch_changed ? options_.launch_min_interval : options_.min_interval;
  // Within the interval either way: a clock set back does not let a burst through.
  if (absl::AbsDuration(now - e.last_accepted) < min_interval) {
    return {Outcome::kTooSoon, false, e.stopping};
  }
  e.last_accepted = now;
  if (report.launch) e.launch = report.launch;
  const bool changed = !report.heartbeat && (!e.progress || e.progress->step != report.step ||
                                             e.progress->metrics != report.metrics);
  if (!changed) {
    // The rate is the reporter's latest estimate even when nothing advanced (it decays to 0).
    if (e.progress) e.progress->steps_per_second = report.steps_per_second;
    if (launch_changed) jobs_[job_key].last_notified = now;
    return {Outcome::kAccepted, launch_changed, e.stopping};
  }
  e.progress = model::ObservedPod::Progress{report.step, report.metrics, report.steps_per_second,
                                            now, report.first_step};
  JobEntry& job = jobs_[job_key];
  if (launch_changed || absl::AbsDuration(now - job.last_notified) >= options_.notify_interval) {
    job.last_notified = now;
    return {Outcome::kAccepted, true, e.stopping};
  }
  return {Outcome::kAccepted, false, e.stopping};
}

std::optional<model::ObservedPod::Progress> ProgressBook::Get(const std::string& pod_key,
                                                              const std::string& uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_key);
  if (it == pods_.end() || it->second.uid != uid) return std::nullopt;
  return it->second.progress;
}

std::optional<model::ObservedPod::Launch> ProgressBook::Launch(const std::string& pod_key,
                                                               const std::string& uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_key);
  if (it == pods_.end() || it->second.uid != uid) return std::nullopt;
  return it->second.launch;
}

std::optional<absl::Time> ProgressBook::LastSeen(const std::string& pod_key,
                                                 const std::string& uid) const {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_key);
  if (it == pods_.end() || it->second.uid != uid) return std::nullopt;
  return it->second.last_accepted;
}

void ProgressBook::EraseLocked(std::unordered_map<std::string, Entry>::iterator it) {
  auto job = jobs_.find(it->second.job_key);
  if (job != jobs_.end() && --job->second.pods == 0) jobs_.erase(job);
  pods_.erase(it);
}

void ProgressBook::MarkStopping(const std::string& pod_key, const std::string& uid) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_key);
  if (it != pods_.end() && it->second.uid == uid) it->second.stopping = true;
}

void ProgressBook::Forget(const std::string& pod_key) {
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(pod_key);
  if (it != pods_.end()) EraseLocked(it);
}

void ProgressBook::Retain(
    const std::function<bool(const std::string& pod_key, const std::string& uid)>& keep) {
  absl::MutexLock lock(&mu_);
  for (auto it = pods_.begin(); it != pods_.end();) {
    auto next = std::next(it);
    if (!keep(it->first, it->second.uid)) EraseLocked(it);
    it = next;
  }
}

size_t ProgressBook::size() const {
  absl::MutexLock lock(&mu_);
  return pods_.size();
}

size_t ProgressBook::jobs() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

}  // namespace coach::backend::kube
