#include "operator/reconcile/pending.h"

#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

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
  std::set<std::string> report_texts;
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
    report_texts.insert(text);
  }
  if (clauses.empty()) return std::nullopt;
  PendingReport report;
  report.texts = std::move(report_texts);
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

std::set<std::string> PendingTexts(const std::string& message) {
  // Clauses are "<names>: <text>" joined by "; ", names being "Type-index" joined by ", ". A
  // text may itself hold "; " (Karpenter's reasons do): a piece that does not start with names
  // continues the text before it.
  static const std::regex kNames("^([A-Za-z]+-[0-9]+)(, [A-Za-z]+-[0-9]+)*: ");
  std::vector<std::string> texts;
  for (absl::string_view piece : absl::StrSplit(message, "; ")) {
    const std::string p(piece);
    std::smatch m;
    if (std::regex_search(p, m, kNames)) {
      texts.push_back(m.suffix().str());
    } else if (!texts.empty()) {
      absl::StrAppend(&texts.back(), "; ", p);
    }
  }
  return std::set<std::string>(texts.begin(), texts.end());
}

}  // namespace coach::reconcile
