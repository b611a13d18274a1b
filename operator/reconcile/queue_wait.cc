#include "operator/reconcile/queue_wait.h"

#include "absl/strings/str_cat.h"
#include "api/v1/job_conditions.h"
#include "operator/reconcile/conditions.h"

namespace coach::reconcile {

namespace {

constexpr size_t kMaxMessage = 1000;

api::v1::JobCondition* FindQueued(model::JobStatus& status) {
  for (api::v1::JobCondition& c : *status.mutable_conditions()) {
    if (c.type() == api::v1::kJobQueued) return &c;
  }
  return nullptr;
}

}  // namespace

std::string QueueWaitText(const model::ObservedState::Queue& q) {
  if (q.admitted) return "";
  std::string text = !q.active          ? "Deactivated"
                     : q.quota_reserved ? "Waiting for admission checks"
                                        : "Waiting for quota";
  absl::StrAppend(&text, ": LocalQueue ", q.local_queue.empty() ? "(none)" : q.local_queue);
  if (!q.cluster_queue.empty()) absl::StrAppend(&text, " -> ClusterQueue ", q.cluster_queue);
  // A deactivated Workload is evicted for that very reason: the first word says it already.
  if (!q.evicted.empty() && q.active) absl::StrAppend(&text, " (evicted: ", q.evicted, ")");
  if (!q.message.empty()) absl::StrAppend(&text, ": ", q.message);
  if (text.size() > kMaxMessage) text = absl::StrCat(text.substr(0, kMaxMessage - 3), "...");
  return text;
}

std::string UpdateQueued(model::JobStatus& status, std::string_view kind, bool suspended,
                         const std::optional<model::ObservedState::Queue>& queue, absl::Time now) {
  const std::string text = suspended && queue ? QueueWaitText(*queue) : "";
  api::v1::JobCondition* current = FindQueued(status);
  const bool was_waiting = current != nullptr && current->status() == api::v1::kConditionTrue;
  if (!text.empty()) {
    const char* reason = queue->quota_reserved && queue->active
                             ? api::v1::kJobWaitingForAdmissionReason
                             : api::v1::kJobWaitingForQuotaReason;
    if (!was_waiting) {
      UpdateCondition(status, kind, api::v1::kJobQueued, api::v1::kConditionTrue, reason, text,
                      now);
      return text;
    }
    // Still waiting: Kueue's words change as the queue moves ("2 more needed", then "1 more").
    const std::string full_reason = std::string(kind) + reason;
    if (current->message() != text || current->reason() != full_reason) {
      current->set_message(text);
      current->set_reason(full_reason);
      *current->mutable_last_update_time() = ToTimestamp(now);
    }
    return "";
  }
  // Admitted: only a job that runs again ends its wait (Kueue unsuspends it right after it
  // reserves the quota; until then the condition keeps the last words).
  if (was_waiting && !suspended) {
    const std::string where = queue && !queue->cluster_queue.empty()
                                  ? absl::StrCat(" by ClusterQueue ", queue->cluster_queue)
                                  : "";
    UpdateCondition(status, kind, api::v1::kJobQueued, api::v1::kConditionFalse,
                    api::v1::kJobAdmittedReason, absl::StrCat("Admitted", where, "."), now);
  }
  return "";
}

}  // namespace coach::reconcile
