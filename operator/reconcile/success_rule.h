#pragma once

// The kind's success rule (api::v1::SuccessRule, data on the kind table) applied to the
// replica counts of one pass: has the job succeeded, is it running.

#include <google/protobuf/map.h>

#include <string>

#include "api/v1/kinds.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

struct JobProgress {
  bool succeeded = false;
  bool running = false;
};

// `statuses`: status.replicaStatuses as counted this pass. `worker0_succeeded`: the pod
// of Worker 0 is Succeeded (TFJob's default rule asks for that pod, not for a count).
JobProgress EvaluateSuccessRule(
    const api::v1::KindInfo& kind, const model::Job& job,
    const google::protobuf::Map<std::string, api::v1::ReplicaStatus>& statuses,
    bool worker0_succeeded);

}  // namespace coach::reconcile
