#include "operator/reconcile/attempt_history.h"

#include <algorithm>
#include <csignal>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/v1/coach_status.h"
#include "api/v1/job_conditions.h"
#include "operator/reconcile/conditions.h"

namespace coach::reconcile {
namespace {

using api::v1::JobAttempt;
using model::ObservedPod;

JobAttempt* Find(model::JobStatus& status, int attempt) {
  return const_cast<JobAttempt*>(FindAttempt(status, attempt));
}

// Once the attempt after a restart reports, the one before learns what the restart cost: the
// steps between its last report and where the new one resumed (the lowest step its launchers
// saw, else the lowest step first reported).
void NoteStepsLost(const std::vector<ObservedPod>& pods, int attempt, model::JobStatus& status) {
  if (attempt == 0) return;
  JobAttempt* before = Find(status, attempt - 1);
  if (before == nullptr || !before->has_end_time() || before->has_steps_lost() ||
      before->last_step() == 0) {
    return;
  }
  std::optional<int64_t> resumed;
  for (const ObservedPod& pod : pods) {
    if (!pod.progress || pod.attempt != attempt) continue;
    // The launcher's lowest step when it says it: its first report may come steps after the
    // resume.
    const int64_t first = pod.progress->first_step.value_or(pod.progress->step);
    resumed = std::min(resumed.value_or(first), first);
  }
  if (resumed) before->set_steps_lost(std::max<int64_t>(0, before->last_step() - *resumed));
}

}  // namespace

std::string BoundedText(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

const JobAttempt* FindAttempt(const model::JobStatus& status, int attempt) {
  const auto& attempts = status.coach().attempts();
  for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
    if (it->attempt() == attempt) return &*it;
  }
  return nullptr;
}

std::string LogReplicaName(const model::Job& job, const std::string& pod_name) {
  const std::string prefix = job.metadata().name() + "-";
  if (absl::StartsWith(pod_name, prefix) && pod_name.size() > prefix.size()) {
    return pod_name.substr(prefix.size());
  }
  return pod_name;
}

std::string SignalName(int exit_code) {
  struct Named {
    int number;
    const char* name;
  };
  static constexpr Named kSignals[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
      {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
  };
  for (const Named& s : kSignals) {
    if (exit_code == 128 + s.number) return s.name;
  }
  return "";
}

std::string PodEndReason(const ObservedPod& pod) {
  if (absl::StartsWith(pod.disruption, "evicted")) return "Evicted";
  if (absl::StartsWith(pod.disruption, "preempted")) return "Preempted";
  if (pod.node_lost || absl::StartsWith(pod.disruption, "node ")) return "NodeLost";
  if (!pod.disruption.empty()) return "Disrupted";
  if (absl::StrContains(pod.message, "OOMKilled")) return "OOMKilled";
  return "Failed";
}

absl::Time AttemptStart(const model::JobStatus& status, int attempt, absl::Time now) {
  if (attempt > 0 && status.coach().has_restart_time()) {
    return FromTimestamp(status.coach().restart_time());
  }
  return status.has_start_time() ? FromTimestamp(status.start_time()) : now;
}

std::optional<absl::Time> AttemptRunningTime(const model::JobStatus& status, absl::Time now) {
  if (status.coach().has_attempt_running_time()) {
    return FromTimestamp(status.coach().attempt_running_time());
  }
  if (HasTrueCondition(status, api::v1::kJobRunning)) return now;
  return std::nullopt;
}

AttemptEnd FailureEnd(const std::string& reason, const std::string& upstream_reason,
                      const std::string& failed_type, const std::vector<ObservedPod>& pods) {
  AttemptEnd end;
  if (reason == api::v1::kJobFailedValidationReason) {
    end.reason = "Invalid";
  } else if (reason == api::v1::kJobStalledReason) {
    end.reason = "Stalled";
  } else if (upstream_reason == api::v1::kTrainJobDeadlineReason) {
    end.reason = "DeadlineExceeded";
  } else {
    end.reason = "Failed";
    for (const ObservedPod& pod : pods) {
      if (pod.phase != model::PodPhase::kFailed) continue;
      if (!failed_type.empty() && pod.replica_type != failed_type) continue;
      end.pod = &pod;
      end.reason = PodEndReason(pod);
      break;
    }
  }
  return end;
}

JobAttempt& OpenAttempt(model::JobStatus& status, int attempt, absl::Time start) {
  if (JobAttempt* found = Find(status, attempt)) return *found;
  auto& attempts = *status.mutable_coach()->mutable_attempts();
  JobAttempt* added = attempts.Add();
  added->set_attempt(attempt);
  *added->mutable_start_time() = ToTimestamp(start);
  // The first attempt stays: it says how the job began; the ones after it are the latest.
  while (attempts.size() > api::v1::kMaxAttempts) attempts.erase(attempts.begin() + 1);
  return *Find(status, attempt);
}

void NoteAttemptPods(const model::Job& job, const std::vector<ObservedPod>& pods, int attempt,
                     absl::Time start, std::optional<absl::Time> running,
                     model::JobStatus& status) {
  JobAttempt& entry = OpenAttempt(status, attempt, start);
  if (entry.has_end_time()) return;
  if (running && !entry.has_running_time()) *entry.mutable_running_time() = ToTimestamp(*running);
  auto& nodes = *entry.mutable_nodes();
  for (const ObservedPod& pod : pods) {
    if (pod.node.empty()) continue;
    const std::string replica =
        BoundedText(LogReplicaName(job, pod.name), api::v1::kMaxAttemptNameLength);
    const std::string node = BoundedText(pod.node, api::v1::kMaxAttemptNameLength);
    auto it = nodes.find(replica);
    if (it != nodes.end()) {
      // A replica recreated in the same attempt (its own restart) ran last where it runs now.
      if (it->second != node) it->second = node;
      continue;
    }
    if (static_cast<int>(nodes.size()) < api::v1::kMaxAttemptNodes) nodes[replica] = node;
  }
  NoteStepsLost(pods, attempt, status);
}

void CloseAttempt(const model::Job& job, const std::vector<ObservedPod>& pods, int attempt,
                  absl::Time start, const AttemptEnd& end, absl::Time now,
                  model::JobStatus& status) {
  NoteAttemptPods(job, pods, attempt, start, std::nullopt, status);
  JobAttempt& entry = *Find(status, attempt);
  if (entry.has_end_time()) return;
  *entry.mutable_end_time() = ToTimestamp(now);
  entry.set_reason(BoundedText(end.reason, api::v1::kMaxAttemptNameLength));
  entry.set_message(BoundedText(end.message, api::v1::kMaxAttemptMessageLength));
  entry.set_counted(end.counted);
  std::string replica = end.replica;
  if (end.pod != nullptr) {
    replica = LogReplicaName(job, end.pod->name);
    if (end.pod->exit_code) {
      entry.set_exit_code(*end.pod->exit_code);
      entry.set_signal(SignalName(*end.pod->exit_code));
    }
  }
  entry.set_replica(BoundedText(replica, api::v1::kMaxAttemptNameLength));
  int64_t step = 0;
  bool reported = false;
  for (const ObservedPod& pod : pods) {
    if (!pod.progress) continue;
    reported = true;
    step = std::max(step, pod.progress->step);
  }
  // The kube backend keeps reports in memory: after an operator restart the pods have none, and
  // the status's progress, when it is this attempt's, is the best left.
  const api::v1::CoachJobStatus& coach = status.coach();
  if (!reported && coach.has_progress() &&
      FromTimestamp(coach.progress().last_progress_time()) >= FromTimestamp(entry.start_time())) {
    step = coach.progress().step();
  }
  entry.set_last_step(step);
}

}  // namespace coach::reconcile
