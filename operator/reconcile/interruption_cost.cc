#include "operator/reconcile/interruption_cost.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/reconcile/attempt_history.h"
#include "operator/reconcile/conditions.h"

namespace coach::reconcile {
namespace {

using api::v1::JobAttempt;

// "a, b, c" of the distinct nodes, at most three named.
std::string Nodes(const JobAttempt& attempt) {
  std::set<std::string> nodes;
  for (const auto& [replica, node] : attempt.nodes()) nodes.insert(node);
  std::vector<std::string> named;
  for (const std::string& node : nodes) {
    if (named.size() == 3) break;
    named.push_back(node);
  }
  std::string out = absl::StrJoin(named, ", ");
  if (nodes.size() > named.size())
    absl::StrAppend(&out, " and ", nodes.size() - named.size(), " more");
  return out;
}

}  // namespace

bool StepsLostKnown(const model::JobStatus& status, int attempt) {
  const JobAttempt* before = FindAttempt(status, attempt - 1);
  return before != nullptr && before->has_steps_lost();
}

std::optional<std::string> InterruptionCost(const model::JobStatus& status, int attempt) {
  const JobAttempt* before = FindAttempt(status, attempt - 1);
  const JobAttempt* next = FindAttempt(status, attempt);
  if (before == nullptr || next == nullptr || !before->has_end_time() || before->counted() ||
      !before->has_steps_lost()) {
    return std::nullopt;
  }
  std::string out = absl::StrCat("attempt ", before->attempt(), " ended (", before->reason(),
                                 "): ", before->steps_lost(), " step(s) lost (it reached step ",
                                 before->last_step(), ", attempt ", attempt, " resumed at ",
                                 before->last_step() - before->steps_lost(), ")");
  if (next->has_running_time()) {
    const absl::Duration back =
        FromTimestamp(next->running_time()) - FromTimestamp(before->end_time());
    absl::StrAppend(&out, "; every replica running again ",
                    absl::FormatDuration(absl::Seconds(absl::ToInt64Seconds(back))),
                    " after it ended");
  }
  if (const std::string nodes = Nodes(*next); !nodes.empty()) {
    absl::StrAppend(&out, "; now on ", nodes);
  }
  return out;
}

}  // namespace coach::reconcile
