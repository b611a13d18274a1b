#pragma once

// The job condition machine, as upstream's UpdateJobConditions:
//  - setting a condition with the same status and reason as the current one is a no-op
//    (lastUpdateTime does not churn);
//  - lastTransitionTime changes only when the status flips;
//  - Running and Restarting replace each other;
//  - Succeeded or Failed turn Running to False.

#include <string>

#include "absl/time/time.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// `reason` is the short reason ("Running"); the stored reason is "<Kind><reason>".
void UpdateCondition(model::JobStatus& status, const std::string& kind_name,
                     const std::string& type, const std::string& cond_status,
                     const std::string& reason, const std::string& message, absl::Time now);

// True when a condition of `type` has status "True".
bool HasTrueCondition(const model::JobStatus& status, const std::string& type);
bool IsFinished(const model::JobStatus& status);

google::protobuf::Timestamp ToTimestamp(absl::Time t);
absl::Time FromTimestamp(const google::protobuf::Timestamp& ts);

}  // namespace coach::reconcile
