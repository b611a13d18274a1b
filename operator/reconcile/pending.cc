#include "operator/reconcile/pending.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace coach::reconcile {

namespace {

constexpr size_t kMaxMessage = 1000;

std::string PoolSuffix(const std::string& nodepool) {
  return nodepool.empty() ? "" : absl::StrCat(" (NodePool ", nodepool, ")");
}

}  // namespace

std::string WaitingText(const model::ObservedPod::Waiting& w) {
  if (w.state == "provisioning") {
    if (w.nodeclaim.empty()) return absl::StrCat("Karpenter: ", w.message, PoolSuffix(w.nodepool));
    return absl::StrCat("NodeClaim ", w.nodeclaim, " ", w.message, PoolSuffix(w.nodepool));
  }
  if (w.state == "unschedulable") {
    if (w.source == "karpenter") {
      return absl::StrCat("Karpenter: ", w.message, PoolSuffix(w.nodepool));
    }
    return absl::StrCat("Unschedulable: ", w.message);
  }
  return "";
}

std::optional<PendingReport> ReportPending(const std::vector<model::ObservedPod>& pods,
                                           bool karpenter) {
  // text -> replica names, in the order each text first appears.
  std::vector<std::pair<std::string, std::vector<std::string>>> clauses;
  bool cannot_place = false;
  for (const model::ObservedPod& pod : pods) {
    if (pod.phase != model::PodPhase::kPending || pod.deleting) continue;
    const std::string text = WaitingText(pod.waiting);
    if (text.empty()) continue;
    if (pod.waiting.state == "unschedulable" && (pod.waiting.source == "karpenter" || !karpenter)) {
      cannot_place = true;
    }
    const std::string replica = absl::StrCat(pod.replica_type, "-", pod.index);
    bool found = false;
    for (auto& [t, names] : clauses) {
      if (t == text) {
        names.push_back(replica);
        found = true;
        break;
      }
    }
    if (!found) clauses.push_back({text, {replica}});
  }
  if (clauses.empty()) return std::nullopt;
  PendingReport report;
  report.type = cannot_place ? "Warning" : "Normal";
  report.reason = cannot_place ? "Unschedulable" : "WaitingForCapacity";
  std::vector<std::string> parts;
  for (const auto& [text, names] : clauses) {
    parts.push_back(absl::StrCat(absl::StrJoin(names, ", "), ": ", text));
  }
  report.message = absl::StrJoin(parts, "; ");
  if (report.message.size() > kMaxMessage) {
    report.message = absl::StrCat(report.message.substr(0, kMaxMessage - 3), "...");
  }
  return report;
}

}  // namespace coach::reconcile
