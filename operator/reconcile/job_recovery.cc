#include "operator/reconcile/job_recovery.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/coach_status.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/restart_rule.h"

namespace coach::reconcile {
namespace {

using model::ObservedPod;
using model::PodPhase;

// Upstream's "no exit code seen" marker (0xbeef): >= 128, so retryable under ExitCode.
constexpr int kUnknownExitCode = 0xbeef;

std::string Replica(const ObservedPod& pod) {
  return absl::StrCat(pod.replica_type, " replica ", pod.index);
}

// The job's pods in its type order, then by index: the first one named is the same on every
// pass whatever order a backend lists them in.
std::vector<const ObservedPod*> Ordered(const model::Job& job,
                                        const std::vector<ObservedPod>& pods) {
  std::map<std::string, int> rank;
  int n = 0;
  for (const std::string& type : ReplicaTypes(job)) rank[type] = n++;
  std::vector<const ObservedPod*> out;
  for (const ObservedPod& p : pods) {
    if (rank.count(p.replica_type) && p.index >= 0 && p.index < Replicas(job, p.replica_type)) {
      out.push_back(&p);
    }
  }
  std::sort(out.begin(), out.end(), [&](const ObservedPod* a, const ObservedPod* b) {
    return std::make_pair(rank[a->replica_type], a->index) <
           std::make_pair(rank[b->replica_type], b->index);
  });
  return out;
}

}  // namespace

RestartTrigger FindRestartTrigger(const model::Job& job, const std::vector<ObservedPod>& pods,
                                  bool attempt_running) {
  RestartTrigger disruption, permanent, retryable;
  auto first = [](RestartTrigger& t, RestartTrigger::Kind kind, const ObservedPod& pod,
                  std::string why) {
    if (t.kind != RestartTrigger::Kind::kNone) return;
    t.kind = kind;
    t.replica_type = pod.replica_type;
    t.why = std::move(why);
    t.pod = &pod;
  };
  std::map<std::string, int> failed_by_type;
  std::set<std::pair<std::string, int>> present;
  for (const ObservedPod* pod : Ordered(job, pods)) {
    present.insert({pod->replica_type, pod->index});
    if (pod->phase == PodPhase::kSucceeded) continue;
    if (!pod->disruption.empty()) {
      first(disruption, RestartTrigger::Kind::kDisruption, *pod,
            absl::StrCat(Replica(*pod), " was disrupted (", pod->disruption, ")"));
      continue;
    }
    if (pod->node_lost) {
      first(disruption, RestartTrigger::Kind::kDisruption, *pod,
            absl::StrCat(Replica(*pod), " lost its node"));
      continue;
    }
    if (pod->phase != PodPhase::kFailed) continue;
    ++failed_by_type[pod->replica_type];
    const int code = pod->exit_code.value_or(kUnknownExitCode);
    const std::string how =
        pod->exit_code ? absl::StrCat("exited with code ", code) : std::string("failed");
    const std::string why = absl::StrCat(Replica(*pod), " ", how,
                                         pod->message.empty() ? "" : " (" + pod->message + ")");
    if (RecreatesFailedPod(RestartPolicy(job, pod->replica_type), code)) {
      first(retryable, RestartTrigger::Kind::kRetryable, *pod, why);
    } else {
      first(permanent, RestartTrigger::Kind::kPermanent, *pod, why);
    }
  }
  if (attempt_running) {
    for (const std::string& type : ReplicaTypes(job)) {
      for (int i = 0; i < Replicas(job, type); ++i) {
        if (present.count({type, i})) continue;
        ObservedPod gone;
        gone.replica_type = type;
        gone.index = i;
        first(disruption, RestartTrigger::Kind::kDisruption, gone,
              absl::StrCat(Replica(gone), " was deleted"));
        if (disruption.pod == &gone) {
          disruption.pod = nullptr;
          disruption.deleted_pod = ReplicaName(job, type, i);
        }
      }
    }
  }
  RestartTrigger out = disruption.kind != RestartTrigger::Kind::kNone  ? disruption
                       : permanent.kind != RestartTrigger::Kind::kNone ? permanent
                                                                       : retryable;
  for (const std::string& type : ReplicaTypes(job)) {
    auto it = failed_by_type.find(type);
    if (it == failed_by_type.end()) continue;
    out.failed_type = type;
    out.failed_count = it->second;
    break;
  }
  return out;
}

StallCheck CheckStall(const model::Job& job, const std::vector<ObservedPod>& pods,
                      absl::Time running_since, absl::Duration deadline, absl::Time now) {
  StallCheck out;
  absl::Time last = running_since;
  const std::vector<const ObservedPod*> ordered = Ordered(job, pods);
  for (const ObservedPod* pod : ordered) {
    if (pod->progress) last = std::max(last, pod->progress->time);
  }
  if (now < last + deadline) {
    out.due = last + deadline;
    return out;
  }
  out.stalled = true;
  std::vector<std::string> stopped;
  for (const ObservedPod* pod : ordered) {
    if (!pod->stopped) continue;
    if (out.replica_type.empty()) out.replica_type = pod->replica_type;
    stopped.push_back(Replica(*pod));
  }
  if (!stopped.empty()) {
    out.who = absl::StrCat(absl::StrJoin(stopped, ", "), " stopped (a process in state T)");
  } else {
    // Whole seconds: deadlines are 10 s and more, and the operator's clock has nanoseconds.
    out.who = absl::StrCat("no replica reported progress for ",
                           absl::FormatDuration(absl::Trunc(now - last, absl::Seconds(1))));
  }
  return out;
}

std::optional<absl::Time> UpdateProgressStatus(const std::vector<ObservedPod>& pods,
                                               absl::Duration interval, bool final,
                                               model::JobStatus& status) {
  const ObservedPod::Progress* newest = nullptr;
  int64_t step = 0;
  for (const ObservedPod& pod : pods) {
    if (!pod.progress) continue;
    step = std::max(step, pod.progress->step);
    if (newest == nullptr || pod.progress->time > newest->time) newest = &*pod.progress;
  }
  if (newest == nullptr) return std::nullopt;
  const bool has = status.has_coach() && status.coach().has_progress();
  const absl::Time shown =
      has ? FromTimestamp(status.coach().progress().last_progress_time()) : absl::InfinitePast();
  if (newest->time <= shown) return std::nullopt;
  if (has && !final && newest->time < shown + interval) return shown + interval;
  api::v1::JobProgress& progress = *status.mutable_coach()->mutable_progress();
  progress.set_step(step);
  progress.clear_metrics();
  // Within what the status may hold (api/v1/coach_status.h), whoever reported: a NaN loss or an
  // odd name is left out, never a status the API server refuses.
  for (const auto& [name, value] : newest->metrics) {
    if (progress.metrics_size() >= api::v1::kMaxProgressMetrics) break;
    if (!std::isfinite(value) || name.empty() || name.size() > api::v1::kMaxMetricNameLength) {
      continue;
    }
    (*progress.mutable_metrics())[name] = value;
  }
  progress.set_steps_per_second(std::isfinite(newest->steps_per_second) &&
                                        newest->steps_per_second > 0
                                    ? newest->steps_per_second
                                    : 0);
  *progress.mutable_last_progress_time() = ToTimestamp(newest->time);
  return std::nullopt;
}

}  // namespace coach::reconcile
