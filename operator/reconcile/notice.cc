#include "operator/reconcile/notice.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/reconcile/progress_report_env.h"

namespace coach::reconcile {
namespace {

using model::ObservedPod;
using model::PodPhase;

std::string Replica(const ObservedPod& pod) {
  return absl::StrCat(pod.replica_type, " replica ", pod.index);
}

bool SavedFor(const std::optional<model::ObservedCheckpoint>& checkpoint, const ObservedPod& pod) {
  if (!checkpoint.has_value()) return false;
  auto answer = checkpoint->answers.find(pod.name);
  return answer != checkpoint->answers.end() && answer->second.saved;
}

}  // namespace

NoticeDecision DecideOnNotice(const model::Job& job, const std::vector<ObservedPod>& current,
                              bool attempt_running,
                              const std::optional<model::ObservedCheckpoint>& checkpoint,
                              const model::ReconcileConfig& config, absl::Time now) {
  NoticeDecision decision;
  if (!config.checkpoint_on_notice || !attempt_running) return decision;
  // The pods run coach-launch with reports (a replica that prints no progress reports seldom).
  const bool reports = ReportsProgress(job, config);
  const ObservedPod* noticed = nullptr;
  std::vector<const ObservedPod*> running;
  for (const ObservedPod& pod : current) {
    // A pod that saved and then ended (an evicted pod's ranks stop once they have answered) is
    // part of the answer; one that failed otherwise is a failure for the other rules.
    const bool saved_then_ended = pod.phase == PodPhase::kFailed && SavedFor(checkpoint, pod);
    if (pod.phase == PodPhase::kFailed && !saved_then_ended) return decision;
    if (pod.phase != PodPhase::kRunning && !saved_then_ended) continue;
    // Pods without coach-launch's reports would never answer: the notice would only delay.
    if (!reports && !pod.progress.has_value() && !pod.launch.has_value()) return decision;
    running.push_back(&pod);
    if (noticed == nullptr && !pod.notice.empty()) noticed = &pod;
  }
  if (noticed == nullptr) return decision;
  decision.pod = noticed;
  const std::string notice = absl::StrCat(Replica(*noticed), " got notice (", noticed->notice, ")");
  if (!checkpoint.has_value()) {
    decision.kind = NoticeDecision::Kind::kRequest;
    absl::Duration grace = config.checkpoint_grace;
    if (noticed->notice_deadline != absl::InfiniteFuture()) {
      grace = noticed->notice_deadline - now;
    }
    decision.grace = std::clamp(grace, absl::Seconds(1), config.max_checkpoint_grace);
    return decision;
  }
  std::set<int64_t> steps;
  std::vector<std::string> missing, unsaved;
  for (const ObservedPod* pod : running) {
    auto answer = checkpoint->answers.find(pod->name);
    if (answer == checkpoint->answers.end()) {
      missing.push_back(pod->name);
    } else if (!answer->second.saved) {
      unsaved.push_back(absl::StrCat(pod->name, ": ", answer->second.message));
    } else {
      steps.insert(answer->second.step);
    }
  }
  if (!missing.empty() && now < checkpoint->deadline) {
    decision.kind = NoticeDecision::Kind::kWait;
    decision.until = checkpoint->deadline;
    return decision;
  }
  decision.kind = NoticeDecision::Kind::kRestart;
  if (missing.empty() && unsaved.empty() && steps.size() == 1) {
    decision.why = absl::StrCat(notice, "; every rank saved a checkpoint at step ", *steps.begin());
  } else if (!missing.empty()) {
    decision.why = absl::StrCat(notice, "; no checkpoint from ", absl::StrJoin(missing, ", "),
                                " by the deadline");
  } else if (!unsaved.empty()) {
    decision.why = absl::StrCat(notice, "; not saved: ", absl::StrJoin(unsaved, "; "));
  } else {
    decision.why = absl::StrCat(notice, "; the ranks saved at different steps (",
                                absl::StrJoin(steps, ", "), ")");
  }
  return decision;
}

}  // namespace coach::reconcile
