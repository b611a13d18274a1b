#include "operator/reconcile/conditions.h"

#include <google/protobuf/util/time_util.h>

#include <vector>

namespace coach::reconcile {

using api::v1::JobCondition;

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

absl::Time FromTimestamp(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

void UpdateCondition(model::JobStatus& status, const std::string& kind_name,
                     const std::string& type, const std::string& cond_status,
                     const std::string& reason, const std::string& message, absl::Time now) {
  JobCondition cond;
  cond.set_type(type);
  cond.set_status(cond_status);
  cond.set_reason(kind_name + reason);
  cond.set_message(message);
  *cond.mutable_last_update_time() = ToTimestamp(now);
  *cond.mutable_last_transition_time() = ToTimestamp(now);

  const JobCondition* current = nullptr;
  for (const JobCondition& c : status.conditions()) {
    if (c.type() == type) current = &c;
  }
  if (current != nullptr && current->status() == cond_status &&
      current->reason() == cond.reason()) {
    return;
  }
  if (current != nullptr && current->status() == cond_status) {
    *cond.mutable_last_transition_time() = current->last_transition_time();
  }
  std::vector<JobCondition> kept;
  for (const JobCondition& c : status.conditions()) {
    if (type == "Restarting" && c.type() == "Running") continue;
    if (type == "Running" && c.type() == "Restarting") continue;
    if (c.type() == type) continue;
    JobCondition copy = c;
    if ((type == "Failed" || type == "Succeeded") && c.type() == "Running" &&
        c.status() != "False") {
      copy.set_status("False");
      *copy.mutable_last_transition_time() = ToTimestamp(now);
      *copy.mutable_last_update_time() = ToTimestamp(now);
    }
    kept.push_back(std::move(copy));
  }
  kept.push_back(std::move(cond));
  status.clear_conditions();
  for (JobCondition& c : kept) *status.add_conditions() = std::move(c);
}

bool HasTrueCondition(const model::JobStatus& status, const std::string& type) {
  for (const JobCondition& c : status.conditions()) {
    if (c.type() == type && c.status() == "True") return true;
  }
  return false;
}

bool IsFinished(const model::JobStatus& status) {
  return HasTrueCondition(status, "Succeeded") || HasTrueCondition(status, "Failed");
}

}  // namespace coach::reconcile
